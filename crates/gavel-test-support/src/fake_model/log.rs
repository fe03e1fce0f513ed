//! The request log.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::script::Api;

/// One request the fake server received, with what it answered.
///
/// The binary writes these as JSON lines (`--log`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The raw query string without `?` (empty when none).
    pub query: String,
    /// All headers in arrival order; names are lower case.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` when empty or not JSON.
    pub body: Value,
    /// Index of the script rule that answered; `None` when no rule was
    /// consulted (`HEAD /`, token counting, model lists) or none matched.
    pub rule: Option<usize>,
    /// The HTTP status answered.
    pub status: u16,
    /// The model API of a generation request (`None` for other endpoints).
    #[serde(default)]
    pub api: Option<Api>,
}

impl LoggedRequest {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
    }

    /// The `model` the request named (body `model`, or the Gemini path
    /// segment), if any.
    pub fn model(&self) -> Option<&str> {
        if let Some(model) = self.body.get("model").and_then(Value::as_str) {
            return Some(model);
        }
        gemini_model(&self.path)
    }
}

/// The model segment of a Gemini path such as
/// `/v1beta/models/gemini-2.5-flash:streamGenerateContent`.
pub(crate) fn gemini_model(path: &str) -> Option<&str> {
    let (_, rest) = path.split_once("/models/")?;
    let (model, _) = rest.rsplit_once(':')?;
    Some(model)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn header_lookup_ignores_case_and_model_comes_from_body_or_path() {
        let mut req = LoggedRequest {
            method: "POST".into(),
            path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent".into(),
            query: "alt=sse".into(),
            headers: vec![("x-goog-api-key".into(), "k".into())],
            body: Value::Null,
            rule: Some(0),
            status: 200,
            api: Some(Api::Gemini),
        };
        assert_eq!(req.header("X-Goog-Api-Key"), Some("k"));
        assert_eq!(req.header("authorization"), None);
        assert_eq!(req.model(), Some("gemini-2.5-flash"));
        req.body = json!({"model": "m"});
        assert_eq!(req.model(), Some("m"));
        let line = serde_json::to_string(&req).unwrap();
        assert_eq!(serde_json::from_str::<LoggedRequest>(&line).unwrap(), req);
    }
}
