//! The OpenAI wire APIs, streamed: Responses (`POST {base}/responses`) and
//! Chat Completions (`POST {base}/chat/completions`, which most
//! OpenAI-compatible servers speak).
//!
//! Responses streams typed events: `response.created` (id),
//! `response.output_text.delta`, then `response.completed` (usage) or
//! `response.incomplete`, `response.failed`, `error`. Chat Completions
//! streams `chat.completion.chunk` objects with `choices[0].delta.content`
//! and `finish_reason`, a last chunk with `usage` when
//! `stream_options.include_usage` is set, and `[DONE]`.

use serde_json::{Map, Value, json};

use super::stream::{Collected, StreamFailure, count_at, error_object_message, string_at};

/// Error codes worth trying the whole request again for.
fn transient_code(code: &str) -> bool {
    matches!(code, "server_error" | "rate_limit_exceeded" | "internal_error" | "overloaded" | "timeout")
}

/// Whether an error object (`{"code"|"type", "message"}`) is transient.
fn transient_error(error: &Value) -> bool {
    string_at(error, "/code").or_else(|| string_at(error, "/type")).is_some_and(transient_code)
}

/// The Responses request body. `max_output_tokens` only when the seat sets it.
pub fn responses_body(model: &str, system: &str, prompt: &str, max_tokens: Option<u32>) -> Value {
    let mut body = json!({
        "model": model,
        "instructions": system,
        "input": prompt,
        "stream": true,
        "store": false,
    });
    if let (Some(max), Some(map)) = (max_tokens, body.as_object_mut()) {
        map.insert("max_output_tokens".to_owned(), max.into());
    }
    body
}

/// The Chat Completions request body. A token limit, when the seat sets one,
/// goes in `max_completion_tokens` for OpenAI itself and in the older
/// `max_tokens` that compatible servers know.
pub fn chat_body(model: &str, system: &str, prompt: &str, max_tokens: Option<u32>, official: bool) -> Value {
    let mut body = json!({
        "model": model,
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": prompt},
        ],
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if let (Some(max), Some(map)) = (max_tokens, body.as_object_mut()) {
        let key = if official { "max_completion_tokens" } else { "max_tokens" };
        map.insert(key.to_owned(), max.into());
    }
    body
}

/// Reads one Responses stream event into `into`.
pub fn fold_responses(into: &mut Collected, event: Option<&str>, data: &str) -> Result<(), StreamFailure> {
    let Ok(value) = serde_json::from_str::<Value>(data) else {
        return Ok(());
    };
    let kind = string_at(&value, "/type").or(event).unwrap_or_default();
    match kind {
        "response.created" | "response.in_progress" => {
            if let Some(id) = string_at(&value, "/response/id") {
                into.id = Some(id.to_owned());
            }
        }
        "response.output_text.delta" | "response.refusal.delta" => {
            if let Some(delta) = string_at(&value, "/delta") {
                into.text.push_str(delta);
            }
        }
        "response.completed" | "response.incomplete" => {
            let response = &value["response"];
            read_response(into, response);
            if kind == "response.incomplete" {
                let reason = string_at(response, "/incomplete_details/reason").unwrap_or("incomplete");
                into.stop_reason = Some(reason.to_owned());
            }
            into.complete = true;
            into.done = true;
        }
        "response.failed" => {
            let error = &value["response"]["error"];
            let message = string_at(error, "/message").unwrap_or("the response failed");
            let message = match string_at(error, "/code") {
                Some(code) => format!("{code}: {message}"),
                None => message.to_owned(),
            };
            return Err(StreamFailure { message, retryable: transient_error(error) });
        }
        "error" => {
            let (message, retryable) = match value.get("error") {
                Some(error) if error.is_object() => {
                    (error_object_message(&value).unwrap_or_default(), transient_error(error))
                }
                _ => {
                    let message = string_at(&value, "/message").unwrap_or("the API reported an error");
                    let message = match string_at(&value, "/code") {
                        Some(code) => format!("{code}: {message}"),
                        None => message.to_owned(),
                    };
                    (message, transient_error(&value))
                }
            };
            return Err(StreamFailure { message, retryable });
        }
        _ => {}
    }
    Ok(())
}

/// Id, usage, status, and the text when no deltas brought it, from a
/// Responses `response` object.
fn read_response(into: &mut Collected, response: &Value) {
    if let Some(id) = string_at(response, "/id") {
        into.id = Some(id.to_owned());
    }
    into.input_tokens = count_at(response, "/usage/input_tokens");
    into.output_tokens = count_at(response, "/usage/output_tokens");
    if let Some(status) = string_at(response, "/status") {
        into.stop_reason = Some(status.to_owned());
    }
    if into.text.is_empty() {
        into.text = response_text(response);
    }
}

/// The output text of a Responses `response` object.
fn response_text(response: &Value) -> String {
    response
        .get("output")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| string_at(item, "/type") == Some("message"))
        .filter_map(|item| item.get("content").and_then(Value::as_array))
        .flatten()
        .filter(|part| matches!(string_at(part, "/type"), Some("output_text" | "refusal")))
        .filter_map(|part| string_at(part, "/text").or_else(|| string_at(part, "/refusal")))
        .collect()
}

/// Reads one Chat Completions stream chunk into `into`.
pub fn fold_chat(into: &mut Collected, _event: Option<&str>, data: &str) -> Result<(), StreamFailure> {
    if data.trim() == "[DONE]" {
        into.complete = true;
        into.done = true;
        return Ok(());
    }
    let Ok(value) = serde_json::from_str::<Value>(data) else {
        return Ok(());
    };
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        let message = error_object_message(&value).unwrap_or_default();
        return Err(StreamFailure { message, retryable: transient_error(error) });
    }
    if into.id.is_none()
        && let Some(id) = string_at(&value, "/id")
    {
        into.id = Some(id.to_owned());
    }
    if let Some(choice) = value.pointer("/choices/0") {
        if let Some(text) = string_at(choice, "/delta/content") {
            into.text.push_str(text);
        }
        if let Some(reason) = string_at(choice, "/finish_reason") {
            into.stop_reason = Some(reason.to_owned());
            into.complete = true;
        }
    }
    if let Some(usage) = value.get("usage").and_then(Value::as_object) {
        read_chat_usage(into, usage);
    }
    Ok(())
}

fn read_chat_usage(into: &mut Collected, usage: &Map<String, Value>) {
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    into.input_tokens = count("prompt_tokens");
    into.output_tokens = count("completion_tokens");
}

/// Reads a whole (non-streamed) Responses reply.
pub fn whole_responses(value: &Value) -> Result<Collected, StreamFailure> {
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        let message = error_object_message(value).unwrap_or_default();
        return Err(StreamFailure { message, retryable: transient_error(error) });
    }
    if value.get("output").is_none() {
        return Err(StreamFailure::fatal("the Responses API reply has no `output`"));
    }
    let mut collected = Collected { complete: true, done: true, ..Collected::default() };
    read_response(&mut collected, value);
    Ok(collected)
}

/// Reads a whole (non-streamed) Chat Completions reply.
pub fn whole_chat(value: &Value) -> Result<Collected, StreamFailure> {
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        let message = error_object_message(value).unwrap_or_default();
        return Err(StreamFailure { message, retryable: transient_error(error) });
    }
    let Some(choice) = value.pointer("/choices/0") else {
        return Err(StreamFailure::fatal("the Chat Completions reply has no `choices`"));
    };
    let mut collected = Collected {
        text: string_at(choice, "/message/content").unwrap_or_default().to_owned(),
        id: string_at(value, "/id").map(str::to_owned),
        stop_reason: string_at(choice, "/finish_reason").map(str::to_owned),
        complete: true,
        done: true,
        ..Collected::default()
    };
    if let Some(usage) = value.get("usage").and_then(Value::as_object) {
        read_chat_usage(&mut collected, usage);
    }
    Ok(collected)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    type Fold = fn(&mut Collected, Option<&str>, &str) -> Result<(), StreamFailure>;

    fn run(fold: Fold, events: &[(Option<&str>, &str)]) -> Result<Collected, StreamFailure> {
        let mut collected = Collected::default();
        for (event, data) in events {
            fold(&mut collected, *event, data)?;
        }
        Ok(collected)
    }

    #[test]
    fn a_responses_stream_adds_up() {
        let collected = run(
            fold_responses,
            &[
                (
                    Some("response.created"),
                    r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[],"usage":null}}"#,
                ),
                (
                    Some("response.output_item.added"),
                    r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}"#,
                ),
                (
                    Some("response.output_text.delta"),
                    r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"hel"}"#,
                ),
                (
                    Some("response.output_text.delta"),
                    r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"lo"}"#,
                ),
                (
                    Some("response.output_text.done"),
                    r#"{"type":"response.output_text.done","item_id":"msg_1","text":"hello"}"#,
                ),
                (
                    Some("response.completed"),
                    r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"hello"}]}],"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":0},"output_tokens":3,"total_tokens":15}}}"#,
                ),
            ],
        )
        .unwrap();
        assert_eq!(collected.text, "hello", "deltas are not doubled by the final output");
        assert_eq!((collected.input_tokens, collected.output_tokens), (12, 3));
        assert_eq!(collected.id.as_deref(), Some("resp_1"));
        assert!(collected.complete && collected.done);
    }

    #[test]
    fn a_responses_stream_without_deltas_takes_the_final_output() {
        let collected = run(
            fold_responses,
            &[(
                None,
                r#"{"type":"response.completed","response":{"id":"r","status":"completed","output":[{"type":"reasoning","summary":[]},{"type":"message","content":[{"type":"output_text","text":"{\"a\":1}"}]}],"usage":{"input_tokens":1,"output_tokens":2}}}"#,
            )],
        )
        .unwrap();
        assert_eq!(collected.text, r#"{"a":1}"#);
    }

    #[test]
    fn responses_failures_and_errors() {
        let failed = run(
            fold_responses,
            &[(
                Some("response.failed"),
                r#"{"type":"response.failed","response":{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"}}}"#,
            )],
        )
        .unwrap_err();
        assert_eq!(failed.message, "server_error: boom");
        assert!(failed.retryable);
        let error = run(
            fold_responses,
            &[(
                Some("error"),
                r#"{"type":"error","code":"invalid_prompt","message":"bad prompt","param":null}"#,
            )],
        )
        .unwrap_err();
        assert_eq!(error.message, "invalid_prompt: bad prompt");
        assert!(!error.retryable);
        let nested = run(
            fold_responses,
            &[(Some("error"), r#"{"type":"error","error":{"type":"rate_limit_exceeded","message":"slow"}}"#)],
        )
        .unwrap_err();
        assert!(nested.retryable);
    }

    #[test]
    fn an_incomplete_response_is_whole_but_says_why() {
        let collected = run(
            fold_responses,
            &[
                (None, r#"{"type":"response.output_text.delta","delta":"{\"files\":["}"#),
                (
                    None,
                    r#"{"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":5,"output_tokens":9}}}"#,
                ),
            ],
        )
        .unwrap();
        assert_eq!(collected.stop_reason.as_deref(), Some("max_output_tokens"));
        assert!(collected.done);
    }

    #[test]
    fn a_chat_stream_adds_up() {
        let collected = run(
            fold_chat,
            &[
                (
                    None,
                    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
                ),
                (
                    None,
                    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi "},"finish_reason":null}]}"#,
                ),
                (
                    None,
                    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"there"},"finish_reason":null}]}"#,
                ),
                (
                    None,
                    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                ),
                (
                    None,
                    r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":2,"total_tokens":22}}"#,
                ),
            ],
        )
        .unwrap();
        assert_eq!(collected.text, "hi there");
        assert_eq!((collected.input_tokens, collected.output_tokens), (20, 2));
        assert_eq!(collected.id.as_deref(), Some("chatcmpl-1"));
        assert!(collected.complete, "a finish reason makes the reply whole");
        assert!(!collected.done, "the usage chunk may still come");
        let mut done = collected.clone();
        fold_chat(&mut done, None, "[DONE]").unwrap();
        assert!(done.done);
    }

    #[test]
    fn chat_errors_in_the_stream_fail() {
        let error =
            run(fold_chat, &[(None, r#"{"error":{"message":"model overloaded","code":"server_error"}}"#)])
                .unwrap_err();
        assert_eq!(error.message, "server_error: model overloaded");
        assert!(error.retryable);
    }

    #[test]
    fn whole_replies_are_read_too() {
        let chat: Value = serde_json::from_str(
            r#"{"id":"c","choices":[{"message":{"role":"assistant","content":"yo"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":1}}"#,
        )
        .unwrap();
        let collected = whole_chat(&chat).unwrap();
        assert_eq!((collected.text.as_str(), collected.input_tokens, collected.output_tokens), ("yo", 4, 1));
        let responses: Value = serde_json::from_str(
            r#"{"id":"r","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":"ok"}]}],"usage":{"input_tokens":2,"output_tokens":1}}"#,
        )
        .unwrap();
        assert_eq!(whole_responses(&responses).unwrap().text, "ok");
    }

    #[test]
    fn bodies_ask_for_a_stream_with_usage() {
        let chat = chat_body("m", "sys", "hi", None, false);
        assert_eq!(chat["stream_options"]["include_usage"], true);
        assert_eq!(chat["messages"][0]["role"], "system");
        assert!(chat.get("max_tokens").is_none());
        assert_eq!(chat_body("m", "s", "p", Some(9), false)["max_tokens"], 9);
        assert_eq!(chat_body("m", "s", "p", Some(9), true)["max_completion_tokens"], 9);
        let responses = responses_body("m", "sys", "hi", Some(5));
        assert_eq!(responses["instructions"], "sys");
        assert_eq!(responses["max_output_tokens"], 5);
        assert_eq!(responses["stream"], true);
    }
}
