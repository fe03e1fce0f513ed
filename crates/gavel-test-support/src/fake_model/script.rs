//! The script a [`FakeModel`](super::FakeModel) answers from: an ordered list
//! of rules, each a condition on the request and a canned reply.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A fake model's whole script: the rules, tried in order for every
/// generation request.
///
/// In JSON: `{"rules": [...]}` (a bare array of rules is accepted too when
/// loading with [`FakeScript::from_json`] or [`FakeScript::from_file`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FakeScript {
    /// The rules, in the order they are tried.
    pub rules: Vec<Rule>,
}

impl FakeScript {
    /// A script with these rules.
    pub fn new(rules: impl IntoIterator<Item = Rule>) -> Self {
        Self { rules: rules.into_iter().collect() }
    }

    /// Appends a rule (builder style).
    #[must_use]
    pub fn with(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Parses a script from JSON text: `{"rules":[...]}` or a bare `[...]`.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        let value: Value = serde_json::from_str(text)?;
        if value.is_array() {
            Ok(Self { rules: serde_json::from_value(value)? })
        } else {
            serde_json::from_value(value)
        }
    }

    /// Reads and parses a JSON script file (see [`FakeScript::from_json`]).
    /// A malformed script is an [`io::ErrorKind::InvalidData`] error naming
    /// the file.
    pub fn from_file(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)?;
        Self::from_json(&text).map_err(|err| {
            io::Error::new(io::ErrorKind::InvalidData, format!("fake model script {}: {err}", path.display()))
        })
    }

    /// The script as pretty JSON (for writing a script file for the binary).
    pub fn to_json(&self) -> String {
        // Serializing plain data with string keys cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// One rule: when a request matches [`Rule::when`] (and the rule has uses
/// left), answer with [`Rule::reply`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Conditions the request must meet; all given ones must hold. Empty
    /// matches any generation request.
    #[serde(default)]
    pub when: Match,
    /// How many requests this rule answers; `None` = unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
    /// What to answer.
    pub reply: FakeReply,
    /// Token counts to report; `None` = [`FakeUsage::default`]
    /// (input 100, output 20, cached 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<FakeUsage>,
}

impl Rule {
    /// A rule answering any request with `reply`, without limit.
    pub fn new(reply: FakeReply) -> Self {
        Self { when: Match::default(), times: None, reply, usage: None }
    }

    /// A rule answering with the text `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new(FakeReply::Text(text.into()))
    }

    /// A rule answering with `pieces` joined, streamed one delta per piece.
    pub fn pieces<S: Into<String>>(pieces: impl IntoIterator<Item = S>) -> Self {
        Self::new(FakeReply::Pieces(pieces.into_iter().map(Into::into).collect()))
    }

    /// A rule answering with one call of tool `name` (see
    /// [`FakeReply::ToolCall`] for what `input` means).
    pub fn tool_call(name: impl Into<String>, input: Value) -> Self {
        Self::new(FakeReply::ToolCall { name: name.into(), input })
    }

    /// A rule answering with HTTP `status` and the API's usual error body.
    pub fn error(status: u16) -> Self {
        Self::new(FakeReply::Error { status, body: None, retry_after: None })
    }

    /// A rule that sends the response head and then hangs.
    pub fn stall() -> Self {
        Self::new(FakeReply::Stall { after_text: None })
    }

    /// Sets the conditions.
    #[must_use]
    pub fn when(mut self, when: Match) -> Self {
        self.when = when;
        self
    }

    /// Limits the rule to `n` requests.
    #[must_use]
    pub fn times(mut self, n: u32) -> Self {
        self.times = Some(n);
        self
    }

    /// Limits the rule to one request.
    #[must_use]
    pub fn once(self) -> Self {
        self.times(1)
    }

    /// Sets the token counts reported.
    #[must_use]
    pub fn usage(mut self, usage: FakeUsage) -> Self {
        self.usage = Some(usage);
        self
    }
}

/// Which model API a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// OpenAI Responses (`/v1/responses`).
    Responses,
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    Chat,
    /// Gemini `generateContent` / `streamGenerateContent`.
    Gemini,
}

/// Conditions on a request; every condition given must hold, `None` ones
/// are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Match {
    /// The API the request speaks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
    /// The exact model named in the request: the body's `model`, or for
    /// Gemini the model segment of the path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// A substring of the request body: of its JSON text, or of any string
    /// in it (so text with newlines or quotes matches as written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_contains: Option<String>,
    /// `true`: the conversation's last message carries a tool result
    /// (Anthropic `tool_result` block, Responses `function_call_output` /
    /// `custom_tool_call_output`, Chat role `tool`, Gemini
    /// `functionResponse`); `false`: it does not. System and developer
    /// messages after it are skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_tool_result: Option<bool>,
    /// Whether the request offers any tools (`false` picks out side requests
    /// such as opencode's title request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools_offered: Option<bool>,
}

impl Match {
    /// Matches every request.
    pub fn any() -> Self {
        Self::default()
    }

    /// Requires the API.
    #[must_use]
    pub fn api(mut self, api: Api) -> Self {
        self.api = Some(api);
        self
    }

    /// Requires the model.
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Requires a substring of the request body.
    #[must_use]
    pub fn prompt_contains(mut self, needle: impl Into<String>) -> Self {
        self.prompt_contains = Some(needle.into());
        self
    }

    /// Requires (or forbids) a tool result as the last message.
    #[must_use]
    pub fn after_tool_result(mut self, yes: bool) -> Self {
        self.after_tool_result = Some(yes);
        self
    }

    /// Requires (or forbids) tools in the request.
    #[must_use]
    pub fn tools_offered(mut self, yes: bool) -> Self {
        self.tools_offered = Some(yes);
        self
    }
}

/// What a rule answers.
///
/// In JSON (externally tagged, snake_case): `{"text":"..."}`,
/// `{"tool_call":{"name":"Write","input":{...}}}`,
/// `{"error":{"status":500,"body":"boom","retry_after":"1"}}`,
/// `{"stall":{"after_text":"partial"}}`, `{"pieces":["sk-ant-","rest"]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FakeReply {
    /// A final text answer (stop reason end of turn).
    Text(String),
    /// A final text answer streamed as one delta per piece (a key split
    /// across two stream chunks); a reply that is not streamed joins them.
    /// Gemini gets the joined text.
    Pieces(Vec<String>),
    /// One tool call (stop reason tool use). `input` a JSON object: a
    /// function call with those arguments (JSON-encoded where the API wants
    /// a string). `input` a JSON string: for Responses a `custom_tool_call`
    /// with that raw input (codex `apply_patch`); other APIs get the value
    /// as it is.
    ToolCall {
        /// The tool's name as offered by the client.
        name: String,
        /// The call's arguments.
        #[serde(default = "empty_object")]
        input: Value,
    },
    /// An HTTP error.
    Error {
        /// The HTTP status.
        status: u16,
        /// The raw body; `None` = a realistic JSON error body for the API.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<String>,
        /// Value of the `Retry-After` header, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<String>,
    },
    /// Sends the response head (for streams also the first events, and this
    /// partial text) and then never finishes — for timeout tests. The
    /// stream is cut when the server shuts down.
    Stall {
        /// Partial text streamed before hanging (streams only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        after_text: Option<String>,
    },
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Token counts a reply reports.
///
/// `input` counts input tokens not served from cache and `cached` those read
/// from cache. Anthropic reports them apart (`input_tokens`,
/// `cache_read_input_tokens`); OpenAI and Gemini count cached tokens inside
/// the prompt, so they report `input + cached` as the prompt total and
/// `cached` as its cached part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FakeUsage {
    /// Uncached input tokens (default 100).
    pub input: u64,
    /// Output tokens (default 20).
    pub output: u64,
    /// Cached input tokens (default 0).
    pub cached: u64,
}

impl FakeUsage {
    /// Explicit counts.
    pub fn new(input: u64, output: u64, cached: u64) -> Self {
        Self { input, output, cached }
    }

    /// The prompt total for APIs that include cached tokens in it.
    pub fn prompt_total(&self) -> u64 {
        self.input + self.cached
    }

    /// Everything: input, cached and output.
    pub fn total(&self) -> u64 {
        self.input + self.cached + self.output
    }
}

impl Default for FakeUsage {
    fn default() -> Self {
        Self { input: 100, output: 20, cached: 0 }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_the_documented_json_forms() {
        let script = FakeScript::from_json(
            r#"{"rules":[
                {"when":{"api":"anthropic","after_tool_result":false},"times":1,
                 "reply":{"tool_call":{"name":"Write","input":{"file_path":"/x","content":"hi"}}}},
                {"reply":{"text":"done"},"usage":{"input":5}},
                {"reply":{"error":{"status":429,"retry_after":"2"}}},
                {"reply":{"stall":{}}}
            ]}"#,
        )
        .unwrap();
        assert_eq!(script.rules.len(), 4);
        assert_eq!(script.rules[0].when.api, Some(Api::Anthropic));
        assert_eq!(script.rules[0].times, Some(1));
        assert_eq!(
            script.rules[0].reply,
            FakeReply::ToolCall { name: "Write".into(), input: json!({"file_path":"/x","content":"hi"}) }
        );
        assert_eq!(script.rules[1].usage, Some(FakeUsage { input: 5, output: 20, cached: 0 }));
        assert_eq!(
            script.rules[2].reply,
            FakeReply::Error { status: 429, body: None, retry_after: Some("2".into()) }
        );
        assert_eq!(script.rules[3].reply, FakeReply::Stall { after_text: None });
    }

    #[test]
    fn bare_array_and_round_trip() {
        let script = FakeScript::from_json(r#"[{"reply":{"text":"x"}}]"#).unwrap();
        assert_eq!(script, FakeScript::new([Rule::text("x")]));
        let built = FakeScript::default()
            .with(Rule::tool_call("apply_patch", json!("*** Begin Patch")).once())
            .with(Rule::text("ok").when(Match::any().api(Api::Chat).tools_offered(false)));
        assert_eq!(FakeScript::from_json(&built.to_json()).unwrap(), built);
    }

    #[test]
    fn typos_are_rejected() {
        assert!(FakeScript::from_json(r#"[{"reply":{"txt":"x"}}]"#).is_err());
        assert!(FakeScript::from_json(r#"[{"when":{"modle":"x"},"reply":{"text":"x"}}]"#).is_err());
    }
}
