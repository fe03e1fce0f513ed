//! What the fake server reads from a request: which rule applies, and the
//! per-reply context (model, usage, ids).

use serde_json::Value;

use super::script::{Api, FakeUsage, Match};

/// What a reply shows: text or one tool call.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Content<'a> {
    Text(&'a str),
    Tool { name: &'a str, input: &'a Value },
}

/// Per-reply facts the renderers need.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// The model to echo back.
    pub model: String,
    pub usage: FakeUsage,
    /// A number unique within the server, for ids.
    pub seq: u64,
    /// Unix seconds.
    pub created: u64,
    /// Chat Completions: `stream_options.include_usage`.
    pub include_usage: bool,
    /// Where a streamed text is cut into deltas (byte offsets; none: one delta).
    pub cuts: Vec<usize>,
}

impl Ctx {
    /// An id such as `msg_fake_0003`.
    pub fn id(&self, prefix: &str) -> String {
        format!("{prefix}_fake_{:04}", self.seq)
    }

    /// `text` as the deltas a stream sends: cut at [`Ctx::cuts`].
    pub fn deltas<'t>(&self, text: &'t str) -> Vec<&'t str> {
        let mut out = Vec::new();
        let mut start = 0;
        for &cut in &self.cuts {
            if cut > start && cut < text.len() && text.is_char_boundary(cut) {
                out.push(&text[start..cut]);
                start = cut;
            }
        }
        out.push(&text[start..]);
        out
    }
}

/// Whether `rule` applies to a request of `api` for `model` with `body`.
pub(crate) fn matches(rule: &Match, api: Api, model: &str, body: &Value) -> bool {
    if rule.api.is_some_and(|want| want != api) {
        return false;
    }
    if rule.model.as_deref().is_some_and(|want| want != model) {
        return false;
    }
    if let Some(needle) = &rule.prompt_contains
        && !body_contains(body, needle)
    {
        return false;
    }
    if rule.after_tool_result.is_some_and(|want| want != after_tool_result(api, body)) {
        return false;
    }
    if rule.tools_offered.is_some_and(|want| want != tools_offered(body)) {
        return false;
    }
    true
}

/// Whether `needle` occurs in the body's JSON text or in any string inside it.
pub(crate) fn body_contains(body: &Value, needle: &str) -> bool {
    body.to_string().contains(needle) || any_string_contains(body, needle)
}

fn any_string_contains(value: &Value, needle: &str) -> bool {
    match value {
        Value::String(text) => text.contains(needle),
        Value::Array(items) => items.iter().any(|item| any_string_contains(item, needle)),
        Value::Object(map) => map.values().any(|item| any_string_contains(item, needle)),
        _ => false,
    }
}

/// Whether the request offers any tools.
pub(crate) fn tools_offered(body: &Value) -> bool {
    let non_empty = |key: &str| body.get(key).and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    non_empty("tools") || non_empty("functions")
}

fn role(item: &Value) -> Option<&str> {
    item.get("role").and_then(Value::as_str)
}

/// The last conversation item that is not a system or developer message.
fn last_turn(items: Option<&Value>) -> Option<&Value> {
    items?.as_array()?.iter().rev().find(|item| !matches!(role(item), Some("system" | "developer")))
}

/// Whether the conversation's last message carries a tool result.
pub(crate) fn after_tool_result(api: Api, body: &Value) -> bool {
    match api {
        Api::Anthropic => last_turn(body.get("messages"))
            .and_then(|msg| msg.get("content"))
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            }),
        Api::Responses => last_turn(body.get("input"))
            .and_then(|item| item.get("type"))
            .and_then(Value::as_str)
            .is_some_and(|kind| kind.ends_with("_call_output")),
        Api::Chat => {
            last_turn(body.get("messages")).is_some_and(|msg| matches!(role(msg), Some("tool" | "function")))
        }
        Api::Gemini => last_turn(body.get("contents"))
            .and_then(|content| content.get("parts"))
            .and_then(Value::as_array)
            .is_some_and(|parts| parts.iter().any(|p| p.get("functionResponse").is_some())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tool_results_per_api() {
        let anthropic = json!({"messages":[
            {"role":"user","content":"hi"},
            {"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Write","input":{}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]},
            {"role":"system","content":"reminder"}
        ]});
        assert!(after_tool_result(Api::Anthropic, &anthropic));
        assert!(!after_tool_result(Api::Anthropic, &json!({"messages":[{"role":"user","content":"hi"}]})));

        let responses = json!({"input":[
            {"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},
            {"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":"x"},
            {"type":"custom_tool_call_output","call_id":"c","output":"ok"}
        ]});
        assert!(after_tool_result(Api::Responses, &responses));
        let function = json!({"input":[{"type":"function_call_output","call_id":"c","output":"ok"}]});
        assert!(after_tool_result(Api::Responses, &function));
        assert!(!after_tool_result(Api::Responses, &json!({"input":"hi"})));

        let chat = json!({"messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c","content":"ok"}]});
        assert!(after_tool_result(Api::Chat, &chat));
        assert!(!after_tool_result(Api::Chat, &json!({"messages":[{"role":"user","content":"hi"}]})));

        let gemini = json!({"contents":[
            {"role":"user","parts":[{"text":"hi"}]},
            {"role":"model","parts":[{"functionCall":{"name":"write_file","args":{}}}]},
            {"role":"user","parts":[{"functionResponse":{"name":"write_file","response":{"output":"ok"}}}]}
        ]});
        assert!(after_tool_result(Api::Gemini, &gemini));
        assert!(!after_tool_result(
            Api::Gemini,
            &json!({"contents":[{"role":"user","parts":[{"text":"hi"}]}]})
        ));
    }

    #[test]
    fn conditions_combine() {
        let body = json!({"model":"m","messages":[{"role":"user","content":"say \"hi\"\nplease"}],"tools":[{"name":"x"}]});
        assert!(matches(&Match::any(), Api::Chat, "m", &body));
        assert!(matches(&Match::any().api(Api::Chat).model("m"), Api::Chat, "m", &body));
        assert!(!matches(&Match::any().api(Api::Anthropic), Api::Chat, "m", &body));
        assert!(!matches(&Match::any().model("n"), Api::Chat, "m", &body));
        assert!(matches(&Match::any().prompt_contains("say \"hi\"\nplease"), Api::Chat, "m", &body));
        assert!(matches(&Match::any().prompt_contains("\"role\":\"user\""), Api::Chat, "m", &body));
        assert!(!matches(&Match::any().prompt_contains("absent"), Api::Chat, "m", &body));
        assert!(matches(&Match::any().tools_offered(true), Api::Chat, "m", &body));
        assert!(!matches(&Match::any().tools_offered(false), Api::Chat, "m", &body));
        assert!(matches(&Match::any().after_tool_result(false), Api::Chat, "m", &body));
        assert!(!tools_offered(&json!({"tools":[]})));
    }
}
