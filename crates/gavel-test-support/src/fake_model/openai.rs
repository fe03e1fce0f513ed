//! OpenAI replies: Responses (`/v1/responses`) and Chat Completions
//! (`/v1/chat/completions`).

use serde_json::{Value, json};

use super::request::{Content, Ctx};
use super::sse::{frame, json_frame};

// ---------------------------------------------------------------- Responses

fn responses_usage(ctx: &Ctx) -> Value {
    json!({
        "input_tokens": ctx.usage.prompt_total(),
        "input_tokens_details": {"cached_tokens": ctx.usage.cached},
        "output_tokens": ctx.usage.output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": ctx.usage.total(),
    })
}

fn response_object(ctx: &Ctx, status: &str, output: &[Value], usage: Option<&Value>) -> Value {
    json!({
        "id": ctx.id("resp"),
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": true,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    })
}

/// The shape of the one output item of a Responses reply.
enum Item<'a> {
    Message(&'a str),
    Function { name: &'a str, arguments: String },
    Custom { name: &'a str, input: &'a str },
}

impl<'a> Item<'a> {
    fn of(content: Content<'a>) -> Self {
        match content {
            Content::Text(text) => Item::Message(text),
            Content::Tool { name, input: Value::String(input) } => Item::Custom { name, input },
            Content::Tool { name, input } => Item::Function { name, arguments: input.to_string() },
        }
    }

    fn id(&self, ctx: &Ctx) -> String {
        ctx.id(match self {
            Item::Message(_) => "msg",
            Item::Function { .. } => "fc",
            Item::Custom { .. } => "ctc",
        })
    }

    /// The item, finished (`done`) or as first announced.
    fn value(&self, ctx: &Ctx, done: bool) -> Value {
        let status = if done { "completed" } else { "in_progress" };
        let id = self.id(ctx);
        match self {
            Item::Message(text) => {
                let content = if done { vec![output_text(text)] } else { Vec::new() };
                json!({"id": id, "type": "message", "role": "assistant", "status": status, "content": content})
            }
            Item::Function { name, arguments } => json!({
                "id": id, "type": "function_call", "status": status, "call_id": ctx.id("call"),
                "name": name, "arguments": if done { arguments.as_str() } else { "" },
            }),
            Item::Custom { name, input } => json!({
                "id": id, "type": "custom_tool_call", "status": status, "call_id": ctx.id("call"),
                "name": name, "input": if done { input } else { "" },
            }),
        }
    }
}

fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": []})
}

/// The non-streaming Responses reply.
pub(crate) fn responses_json(content: Content<'_>, ctx: &Ctx) -> Value {
    let item = Item::of(content).value(ctx, true);
    response_object(ctx, "completed", &[item], Some(&responses_usage(ctx)))
}

/// Responses events, each framed with `event:` = its type and a running
/// `sequence_number`.
struct Events {
    out: String,
    seq: u64,
}

impl Events {
    fn new() -> Self {
        Self { out: String::new(), seq: 0 }
    }

    fn push(&mut self, kind: &str, mut data: Value) {
        if let Value::Object(map) = &mut data {
            map.insert("type".into(), kind.into());
            map.insert("sequence_number".into(), self.seq.into());
        }
        self.seq += 1;
        self.out.push_str(&json_frame(Some(kind), &data));
    }

    /// `response.created`, `response.in_progress`, `response.output_item.added`
    /// and, for a message, `response.content_part.added`.
    fn head(&mut self, ctx: &Ctx, item: &Item<'_>) {
        let response = response_object(ctx, "in_progress", &[], None);
        self.push("response.created", json!({"response": response}));
        self.push("response.in_progress", json!({"response": response}));
        self.push("response.output_item.added", json!({"output_index": 0, "item": item.value(ctx, false)}));
        if let Item::Message(_) = item {
            self.push(
                "response.content_part.added",
                json!({"item_id": item.id(ctx), "output_index": 0, "content_index": 0, "part": output_text("")}),
            );
        }
    }

    fn text_delta(&mut self, ctx: &Ctx, item: &Item<'_>, delta: &str) {
        self.push(
            "response.output_text.delta",
            json!({"item_id": item.id(ctx), "output_index": 0, "content_index": 0, "delta": delta, "logprobs": []}),
        );
    }
}

/// The streaming Responses reply.
pub(crate) fn responses_sse(content: Content<'_>, ctx: &Ctx) -> String {
    let item = Item::of(content);
    let item_id = item.id(ctx);
    let mut events = Events::new();
    events.head(ctx, &item);
    match &item {
        Item::Message(text) => {
            for delta in ctx.deltas(text) {
                events.text_delta(ctx, &item, delta);
            }
            let place = json!({"item_id": item_id, "output_index": 0, "content_index": 0});
            let mut done = place.clone();
            done["text"] = json!(text);
            done["logprobs"] = json!([]);
            events.push("response.output_text.done", done);
            let mut part_done = place;
            part_done["part"] = output_text(text);
            events.push("response.content_part.done", part_done);
        }
        Item::Function { arguments, .. } => {
            let place = json!({"item_id": item_id, "output_index": 0});
            let mut delta = place.clone();
            delta["delta"] = json!(arguments);
            events.push("response.function_call_arguments.delta", delta);
            let mut done = place;
            done["arguments"] = json!(arguments);
            events.push("response.function_call_arguments.done", done);
        }
        Item::Custom { input, .. } => {
            let place = json!({"item_id": item_id, "output_index": 0});
            let mut delta = place.clone();
            delta["delta"] = json!(input);
            events.push("response.custom_tool_call_input.delta", delta);
            let mut done = place;
            done["input"] = json!(input);
            events.push("response.custom_tool_call_input.done", done);
        }
    }
    let finished = item.value(ctx, true);
    events.push("response.output_item.done", json!({"output_index": 0, "item": finished}));
    let response = response_object(ctx, "completed", &[finished], Some(&responses_usage(ctx)));
    events.push("response.completed", json!({"response": response}));
    events.out
}

/// The events sent before a stalled Responses stream hangs.
pub(crate) fn responses_stall_prefix(after_text: Option<&str>, ctx: &Ctx) -> String {
    let item = Item::Message(after_text.unwrap_or(""));
    let mut events = Events::new();
    events.head(ctx, &item);
    if let Some(text) = after_text {
        events.text_delta(ctx, &item, text);
    }
    events.out
}

// ---------------------------------------------------------- Chat Completions

fn chat_usage(ctx: &Ctx) -> Value {
    json!({
        "prompt_tokens": ctx.usage.prompt_total(),
        "completion_tokens": ctx.usage.output,
        "total_tokens": ctx.usage.total(),
        "prompt_tokens_details": {"cached_tokens": ctx.usage.cached},
        "completion_tokens_details": {"reasoning_tokens": 0},
    })
}

fn finish_reason(content: Content<'_>) -> &'static str {
    match content {
        Content::Text(_) => "stop",
        Content::Tool { .. } => "tool_calls",
    }
}

/// Chat tool arguments: a JSON string; a string input is sent as it is.
fn arguments(input: &Value) -> String {
    match input {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

/// The non-streaming Chat Completions reply.
pub(crate) fn chat_json(content: Content<'_>, ctx: &Ctx) -> Value {
    let message = match content {
        Content::Text(text) => json!({"role": "assistant", "content": text, "refusal": null}),
        Content::Tool { name, input } => json!({
            "role": "assistant",
            "content": null,
            "refusal": null,
            "tool_calls": [{
                "id": ctx.id("call"),
                "type": "function",
                "function": {"name": name, "arguments": arguments(input)},
            }],
        }),
    };
    json!({
        "id": ctx.id("chatcmpl"),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(content)}],
        "usage": chat_usage(ctx),
    })
}

fn chunk(ctx: &Ctx, delta: &Value, finish_reason: Option<&str>) -> String {
    json_frame(
        None,
        &json!({
            "id": ctx.id("chatcmpl"),
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        }),
    )
}

/// The streaming Chat Completions reply: role chunk, content or tool call
/// chunk, finish chunk, a usage chunk when asked for, `[DONE]`.
pub(crate) fn chat_sse(content: Content<'_>, ctx: &Ctx) -> String {
    let mut out = chunk(ctx, &json!({"role": "assistant", "content": ""}), None);
    let delta = match content {
        Content::Text(text) => {
            let deltas = ctx.deltas(text);
            let (last, first) = deltas.split_last().unwrap_or((&"", &[]));
            for delta in first {
                out.push_str(&chunk(ctx, &json!({"content": delta}), None));
            }
            json!({"content": last})
        }
        Content::Tool { name, input } => json!({"tool_calls": [{
            "index": 0,
            "id": ctx.id("call"),
            "type": "function",
            "function": {"name": name, "arguments": arguments(input)},
        }]}),
    };
    out.push_str(&chunk(ctx, &delta, None));
    out.push_str(&chunk(ctx, &json!({}), Some(finish_reason(content))));
    if ctx.include_usage {
        out.push_str(&json_frame(
            None,
            &json!({
                "id": ctx.id("chatcmpl"),
                "object": "chat.completion.chunk",
                "created": ctx.created,
                "model": ctx.model,
                "choices": [],
                "usage": chat_usage(ctx),
            }),
        ));
    }
    out.push_str(&frame(None, "[DONE]"));
    out
}

/// The chunks sent before a stalled Chat stream hangs.
pub(crate) fn chat_stall_prefix(after_text: Option<&str>, ctx: &Ctx) -> String {
    let mut out = chunk(ctx, &json!({"role": "assistant", "content": ""}), None);
    if let Some(text) = after_text {
        out.push_str(&chunk(ctx, &json!({"content": text}), None));
    }
    out
}

// ------------------------------------------------------------------- shared

/// A realistic OpenAI error body for `status`.
pub(crate) fn error_body(status: u16) -> Value {
    let (kind, code, message): (&str, Option<&str>, &str) = match status {
        400 => ("invalid_request_error", None, "Invalid request."),
        401 => ("invalid_request_error", Some("invalid_api_key"), "Incorrect API key provided."),
        403 => ("invalid_request_error", Some("unsupported_country_region_territory"), "Forbidden."),
        404 => ("invalid_request_error", Some("model_not_found"), "The model does not exist."),
        429 => ("requests", Some("rate_limit_exceeded"), "Rate limit reached for requests."),
        503 => ("server_error", None, "The engine is currently overloaded, please try again later."),
        _ => ("server_error", None, "The server had an error while processing your request."),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}
