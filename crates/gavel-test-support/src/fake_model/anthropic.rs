//! Anthropic Messages API replies (`/v1/messages`).

use serde_json::{Value, json};

use super::request::{Content, Ctx};
use super::sse::json_frame;

fn usage(ctx: &Ctx, output_tokens: u64) -> Value {
    json!({
        "input_tokens": ctx.usage.input,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": ctx.usage.cached,
        "output_tokens": output_tokens,
    })
}

fn stop_reason(content: Content<'_>) -> &'static str {
    match content {
        Content::Text(_) => "end_turn",
        Content::Tool { .. } => "tool_use",
    }
}

fn message(ctx: &Ctx, content: &[Value], stop_reason: Option<&str>, output_tokens: u64) -> Value {
    json!({
        "id": ctx.id("msg"),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": usage(ctx, output_tokens),
    })
}

/// The non-streaming reply.
pub(crate) fn json(content: Content<'_>, ctx: &Ctx) -> Value {
    let block = match content {
        Content::Text(text) => json!({"type": "text", "text": text}),
        Content::Tool { name, input } => {
            json!({"type": "tool_use", "id": ctx.id("toolu"), "name": name, "input": input})
        }
    };
    message(ctx, &[block], Some(stop_reason(content)), ctx.usage.output)
}

fn event(data: &Value) -> String {
    let kind = data.get("type").and_then(Value::as_str);
    json_frame(kind, data)
}

fn head(ctx: &Ctx, block: &Value) -> String {
    let mut out = event(&json!({"type": "message_start", "message": message(ctx, &[], None, 1)}));
    out.push_str(&event(&json!({"type": "content_block_start", "index": 0, "content_block": block})));
    out
}

fn text_delta(text: &str) -> String {
    event(&json!({
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": text},
    }))
}

/// The streaming reply: `message_start`, one content block with one delta,
/// `message_delta` with the stop reason, `message_stop`.
pub(crate) fn sse(content: Content<'_>, ctx: &Ctx) -> String {
    let mut out = match content {
        Content::Text(text) => {
            let mut out = head(ctx, &json!({"type": "text", "text": ""}));
            for delta in ctx.deltas(text) {
                out.push_str(&text_delta(delta));
            }
            out
        }
        Content::Tool { name, input } => {
            let block = json!({"type": "tool_use", "id": ctx.id("toolu"), "name": name, "input": {}});
            let mut out = head(ctx, &block);
            out.push_str(&event(&json!({
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": input.to_string()},
            })));
            out
        }
    };
    out.push_str(&event(&json!({"type": "content_block_stop", "index": 0})));
    out.push_str(&event(&json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(content), "stop_sequence": null},
        "usage": {"output_tokens": ctx.usage.output},
    })));
    out.push_str(&event(&json!({"type": "message_stop"})));
    out
}

/// The events sent before a stalled stream hangs.
pub(crate) fn stall_prefix(after_text: Option<&str>, ctx: &Ctx) -> String {
    let mut out = head(ctx, &json!({"type": "text", "text": ""}));
    if let Some(text) = after_text {
        out.push_str(&text_delta(text));
    }
    out
}

/// A realistic error body for `status`.
pub(crate) fn error_body(status: u16) -> Value {
    let (kind, message) = match status {
        400 => ("invalid_request_error", "invalid request"),
        401 => ("authentication_error", "invalid x-api-key"),
        403 => ("permission_error", "your API key does not have permission to use the specified resource"),
        404 => ("not_found_error", "not found"),
        413 => ("request_too_large", "request exceeds the maximum allowed number of bytes"),
        429 => ("rate_limit_error", "rate limited by the fake model server"),
        529 => ("overloaded_error", "Overloaded"),
        _ => ("api_error", "Internal server error"),
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// `/v1/messages/count_tokens`.
pub(crate) fn count_tokens(tokens: u64) -> Value {
    json!({"input_tokens": tokens})
}
