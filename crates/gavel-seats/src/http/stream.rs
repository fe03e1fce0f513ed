//! What every wire API's reply adds up to, and the pieces of reading it that
//! the APIs share: numbers and strings out of JSON, the API's error message
//! out of an error body.

use serde_json::Value;

/// A reply as read from an API's stream (or from a whole JSON body).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Collected {
    /// The reply text, deltas joined.
    pub text: String,
    /// Prompt tokens, as the API counted them.
    pub input_tokens: u64,
    /// Completion tokens, as the API counted them.
    pub output_tokens: u64,
    /// The message or response id.
    pub id: Option<String>,
    /// Why the model stopped, when the API says.
    pub stop_reason: Option<String>,
    /// The reply is whole: the stream may end here without losing anything.
    pub complete: bool,
    /// The API sent its last event: stop reading.
    pub done: bool,
}

/// An error the API reported inside a reply (an `error` event, a failed
/// response), or a reply gavel cannot read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamFailure {
    /// What went wrong, in the API's words where it gave some.
    pub message: String,
    /// Whether trying the whole request again may help (overload, server
    /// error, a stream cut short).
    pub retryable: bool,
}

impl StreamFailure {
    /// A failure not worth retrying.
    pub fn fatal(message: impl Into<String>) -> Self {
        Self { message: message.into(), retryable: false }
    }
}

/// The string at a JSON pointer, if it is one.
pub fn string_at<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// The unsigned number at a JSON pointer, zero when absent.
pub fn count_at(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// The longest an API's own words are quoted in an error.
const QUOTE_LIMIT: usize = 400;

/// The API's error message from an error body: `error.message` (both APIs'
/// shape, with `error.type`/`error.code` when given), a bare `error` or
/// `message` string, else the start of the body itself.
pub fn api_error_message(body: &str) -> String {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        if let Some(message) = error_object_message(&value) {
            return clip(&message);
        }
        if let Some(message) = string_at(&value, "/message") {
            return clip(message);
        }
    }
    let trimmed = body.trim();
    if trimmed.is_empty() { "(empty body)".to_owned() } else { clip(trimmed) }
}

/// `error.message` with its type or code, or `error` when it is a string.
pub fn error_object_message(value: &Value) -> Option<String> {
    let error = value.get("error")?;
    if let Some(text) = error.as_str() {
        return Some(text.to_owned());
    }
    let message = string_at(error, "/message").unwrap_or("no message");
    let kind = string_at(error, "/type").or_else(|| string_at(error, "/code"));
    Some(match kind {
        Some(kind) => format!("{kind}: {message}"),
        None => message.to_owned(),
    })
}

/// `text` cut to [`QUOTE_LIMIT`] characters.
pub fn clip(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_are_read_from_both_apis_shapes() {
        let anthropic =
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;
        assert_eq!(api_error_message(anthropic), "authentication_error: invalid x-api-key");
        let openai = r#"{"error":{"message":"Incorrect API key","type":null,"code":"invalid_api_key"}}"#;
        assert_eq!(api_error_message(openai), "invalid_api_key: Incorrect API key");
        assert_eq!(api_error_message(r#"{"error":"model not found"}"#), "model not found");
        assert_eq!(api_error_message(r#"{"message":"nope"}"#), "nope");
        assert_eq!(api_error_message("Bad Gateway\n"), "Bad Gateway");
        assert_eq!(api_error_message(""), "(empty body)");
    }

    #[test]
    fn long_bodies_are_clipped() {
        let long = "x".repeat(1000);
        let clipped = api_error_message(&long);
        assert_eq!(clipped.chars().count(), QUOTE_LIMIT + 1);
        assert!(clipped.ends_with('…'));
    }
}
