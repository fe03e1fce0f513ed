//! The Anthropic Messages API: `POST {base}/v1/messages`, streamed.
//!
//! The stream is `message_start` (id, input tokens) → per content block
//! `content_block_start` / `content_block_delta` (`text_delta`) /
//! `content_block_stop` → `message_delta` (stop reason, output tokens) →
//! `message_stop`, with `ping` and `error` events anywhere.

use serde_json::{Value, json};

use super::stream::{Collected, StreamFailure, count_at, error_object_message, string_at};

/// The `anthropic-version` header gavel speaks.
pub const VERSION: &str = "2023-06-01";

/// Output tokens to allow when the seat does not say: enough for a builder
/// writing several files, within what current models accept.
pub fn default_max_tokens(model: &str) -> u32 {
    let model = model.to_ascii_lowercase();
    if ["claude-3-haiku", "claude-3-opus", "claude-3-sonnet"].iter().any(|m| model.contains(m)) {
        4096
    } else if model.contains("claude-3-5") {
        8192
    } else {
        16_000
    }
}

/// The request body.
pub fn body(model: &str, system: &str, prompt: &str, max_tokens: u32) -> Value {
    json!({
        "model": model,
        "max_tokens": max_tokens,
        "system": system,
        "messages": [{"role": "user", "content": prompt}],
        "stream": true,
    })
}

/// Error types worth trying the whole request again for.
fn transient_error(kind: &str) -> bool {
    matches!(kind, "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error")
}

/// Reads one stream event into `into`.
pub fn fold(into: &mut Collected, event: Option<&str>, data: &str) -> Result<(), StreamFailure> {
    let Ok(value) = serde_json::from_str::<Value>(data) else {
        // Not JSON: nothing the Messages API sends; skip rather than fail.
        return Ok(());
    };
    let kind = string_at(&value, "/type").or(event).unwrap_or_default();
    match kind {
        "message_start" => {
            if let Some(id) = string_at(&value, "/message/id") {
                into.id = Some(id.to_owned());
            }
            into.input_tokens = input_tokens(&value["message"]["usage"]);
            into.output_tokens = count_at(&value, "/message/usage/output_tokens");
        }
        "content_block_start" => {
            if let Some(text) = string_at(&value, "/content_block/text") {
                into.text.push_str(text);
            }
        }
        "content_block_delta" => {
            if string_at(&value, "/delta/type") == Some("text_delta")
                && let Some(text) = string_at(&value, "/delta/text")
            {
                into.text.push_str(text);
            }
        }
        "message_delta" => {
            if let Some(reason) = string_at(&value, "/delta/stop_reason") {
                into.stop_reason = Some(reason.to_owned());
                into.complete = true;
            }
            let usage = &value["usage"];
            let input = input_tokens(usage);
            if input > 0 {
                into.input_tokens = input;
            }
            into.output_tokens = into.output_tokens.max(count_at(usage, "/output_tokens"));
        }
        "message_stop" => {
            into.complete = true;
            into.done = true;
        }
        "error" => {
            let message = error_object_message(&value).unwrap_or_else(|| data.to_owned());
            let retryable = string_at(&value, "/error/type").is_some_and(transient_error);
            return Err(StreamFailure { message, retryable });
        }
        _ => {}
    }
    Ok(())
}

/// Prompt tokens: uncached, cache writes and cache reads together.
fn input_tokens(usage: &Value) -> u64 {
    ["/input_tokens", "/cache_creation_input_tokens", "/cache_read_input_tokens"]
        .iter()
        .map(|p| count_at(usage, p))
        .fold(0, u64::saturating_add)
}

/// Reads a whole (non-streamed) Messages response.
pub fn whole(value: &Value) -> Result<Collected, StreamFailure> {
    if value.get("error").is_some() {
        let message = error_object_message(value).unwrap_or_default();
        let retryable = string_at(value, "/error/type").is_some_and(transient_error);
        return Err(StreamFailure { message, retryable });
    }
    let Some(blocks) = value.get("content").and_then(Value::as_array) else {
        return Err(StreamFailure::fatal("the Messages API reply has no `content`"));
    };
    let text = blocks
        .iter()
        .filter(|b| string_at(b, "/type") == Some("text"))
        .filter_map(|b| string_at(b, "/text"))
        .collect::<String>();
    Ok(Collected {
        text,
        input_tokens: input_tokens(&value["usage"]),
        output_tokens: count_at(value, "/usage/output_tokens"),
        id: string_at(value, "/id").map(str::to_owned),
        stop_reason: string_at(value, "/stop_reason").map(str::to_owned),
        complete: true,
        done: true,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn run(events: &[(&str, &str)]) -> Result<Collected, StreamFailure> {
        let mut collected = Collected::default();
        for (event, data) in events {
            fold(&mut collected, Some(event), data)?;
        }
        Ok(collected)
    }

    #[test]
    fn a_streamed_message_adds_up() {
        let collected = run(&[
            (
                "message_start",
                r#"{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":25,"cache_read_input_tokens":5,"output_tokens":1}}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            ),
            ("ping", r#"{"type": "ping"}"#),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"{\"decision\":"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"\"pass\"}"}}"#,
            ),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ])
        .unwrap();
        assert_eq!(collected.text, r#"{"decision":"pass"}"#);
        assert_eq!(collected.input_tokens, 30);
        assert_eq!(collected.output_tokens, 15);
        assert_eq!(collected.id.as_deref(), Some("msg_01"));
        assert_eq!(collected.stop_reason.as_deref(), Some("end_turn"));
        assert!(collected.complete && collected.done);
    }

    #[test]
    fn thinking_and_tool_input_deltas_are_not_text() {
        let collected = run(&[
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"ok"}}"#,
            ),
        ])
        .unwrap();
        assert_eq!(collected.text, "ok");
        assert!(!collected.complete, "no stop reason yet");
    }

    #[test]
    fn error_events_fail_and_say_whether_to_retry() {
        let overloaded = run(&[(
            "error",
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )])
        .unwrap_err();
        assert_eq!(overloaded.message, "overloaded_error: Overloaded");
        assert!(overloaded.retryable);
        let invalid =
            run(&[("error", r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#)])
                .unwrap_err();
        assert!(!invalid.retryable);
    }

    #[test]
    fn the_event_name_is_used_when_data_has_no_type() {
        let collected = run(&[("message_stop", "{}")]).unwrap();
        assert!(collected.done);
    }

    #[test]
    fn a_whole_response_is_read_too() {
        let value: Value = serde_json::from_str(
            r#"{"id":"msg_2","type":"message","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"x","input":{}},{"type":"text","text":"b"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":4}}"#,
        )
        .unwrap();
        let collected = whole(&value).unwrap();
        assert_eq!(collected.text, "ab");
        assert_eq!((collected.input_tokens, collected.output_tokens), (3, 4));
        assert_eq!(collected.id.as_deref(), Some("msg_2"));
    }

    #[test]
    fn max_tokens_fit_the_model() {
        assert_eq!(default_max_tokens("claude-3-haiku-20240307"), 4096);
        assert_eq!(default_max_tokens("claude-3-5-haiku-latest"), 8192);
        assert_eq!(default_max_tokens("claude-sonnet-4-5"), 16_000);
        let body = body("m", "sys", "hi", 100);
        assert_eq!(body["stream"], true);
        assert_eq!(body["messages"][0]["content"], "hi");
        assert_eq!(body["system"], "sys");
    }
}
