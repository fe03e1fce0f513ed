//! Gemini replies (`/v1beta/models/{model}:generateContent`,
//! `:streamGenerateContent`, `:countTokens`).

use serde_json::{Value, json};

use super::request::{Content, Ctx};
use super::sse::json_frame;

fn usage(ctx: &Ctx) -> Value {
    json!({
        "promptTokenCount": ctx.usage.prompt_total(),
        "candidatesTokenCount": ctx.usage.output,
        "totalTokenCount": ctx.usage.total(),
        "cachedContentTokenCount": ctx.usage.cached,
    })
}

fn part(content: Content<'_>) -> Value {
    match content {
        Content::Text(text) => json!({"text": text}),
        Content::Tool { name, input } => json!({"functionCall": {"name": name, "args": input}}),
    }
}

fn response(ctx: &Ctx, part: &Value, finished: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": [part]}, "index": 0});
    if finished {
        candidate["finishReason"] = json!("STOP");
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": usage(ctx),
        "modelVersion": ctx.model,
        "responseId": ctx.id("resp"),
    })
}

/// The `generateContent` reply (one finished response).
pub(crate) fn json(content: Content<'_>, ctx: &Ctx) -> Value {
    response(ctx, &part(content), true)
}

/// `streamGenerateContent` without `alt=sse`: a JSON array of responses.
pub(crate) fn json_array(content: Content<'_>, ctx: &Ctx) -> Value {
    Value::Array(vec![json(content, ctx)])
}

/// `streamGenerateContent?alt=sse`: one event with the whole reply.
pub(crate) fn sse(content: Content<'_>, ctx: &Ctx) -> String {
    json_frame(None, &json(content, ctx))
}

/// What a stalled stream sends before hanging: the partial text, unfinished.
pub(crate) fn stall_prefix(after_text: Option<&str>, ctx: &Ctx) -> String {
    after_text
        .map_or_else(String::new, |text| json_frame(None, &response(ctx, &json!({"text": text}), false)))
}

/// A realistic Google API error body for `status`.
pub(crate) fn error_body(status: u16) -> Value {
    let (kind, message) = match status {
        400 => ("INVALID_ARGUMENT", "Request contains an invalid argument."),
        401 => ("UNAUTHENTICATED", "API key not valid. Please pass a valid API key."),
        403 => ("PERMISSION_DENIED", "The caller does not have permission."),
        404 => ("NOT_FOUND", "Requested entity was not found."),
        429 => ("RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."),
        503 => ("UNAVAILABLE", "The model is overloaded. Please try again later."),
        _ => ("INTERNAL", "An internal error has occurred."),
    };
    json!({"error": {"code": status, "message": message, "status": kind}})
}

/// `:countTokens`.
pub(crate) fn count_tokens(tokens: u64) -> Value {
    json!({"totalTokens": tokens})
}
