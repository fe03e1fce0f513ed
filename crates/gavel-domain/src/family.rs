//! Model families: which lab's weights answer a seat.
//!
//! The diversity rule compares families, so a family must be
//! inferred the same way every time from a model name. When a name says
//! nothing we recognise, [`infer_family`] returns `None` and the caller asks
//! the user for an explicit `family`: guessing wrong would let two seats of
//! one lab review each other.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The model family of a seat: a lowercase name such as `anthropic`.
///
/// Any name a user gives is a family; the known ones have constants. Two
/// families are the same when their lowercase names are equal, so
/// `Family::new("Anthropic") == Family::ANTHROPIC`. Serialised as a plain
/// string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Family(Cow<'static, str>);

impl Family {
    /// Anthropic (Claude).
    pub const ANTHROPIC: Family = Family(Cow::Borrowed("anthropic"));
    /// OpenAI (GPT, o-series, Codex).
    pub const OPENAI: Family = Family(Cow::Borrowed("openai"));
    /// Google (Gemini, Gemma).
    pub const GOOGLE: Family = Family(Cow::Borrowed("google"));
    /// Meta (Llama).
    pub const META: Family = Family(Cow::Borrowed("meta"));
    /// Alibaba's Qwen.
    pub const QWEN: Family = Family(Cow::Borrowed("qwen"));
    /// Mistral AI (Mistral, Mixtral, Codestral, Devstral, Magistral, ...).
    pub const MISTRAL: Family = Family(Cow::Borrowed("mistral"));
    /// DeepSeek.
    pub const DEEPSEEK: Family = Family(Cow::Borrowed("deepseek"));
    /// xAI (Grok).
    pub const XAI: Family = Family(Cow::Borrowed("xai"));
    /// Cohere (Command).
    pub const COHERE: Family = Family(Cow::Borrowed("cohere"));
    /// Microsoft (Phi).
    pub const MICROSOFT: Family = Family(Cow::Borrowed("microsoft"));
    /// Moonshot AI (Kimi).
    pub const MOONSHOT: Family = Family(Cow::Borrowed("moonshot"));
    /// Zhipu AI (GLM).
    pub const ZHIPU: Family = Family(Cow::Borrowed("zhipu"));
    /// The default family of a script seat that names none.
    pub const SCRIPT: Family = Family(Cow::Borrowed("script"));

    /// Every family [`infer_family`] can return.
    pub const KNOWN: &'static [Family] = &[
        Family::ANTHROPIC,
        Family::OPENAI,
        Family::GOOGLE,
        Family::META,
        Family::QWEN,
        Family::MISTRAL,
        Family::DEEPSEEK,
        Family::XAI,
        Family::COHERE,
        Family::MICROSOFT,
        Family::MOONSHOT,
        Family::ZHIPU,
    ];

    /// A family with the given name, trimmed and lowercased.
    ///
    /// This does not reject an empty name; names read from user files go
    /// through [`str::parse`] or serde, which do.
    pub fn new(name: impl AsRef<str>) -> Family {
        Family(Cow::Owned(name.as_ref().trim().to_lowercase()))
    }

    /// The family's lowercase name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Family {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// The error for a family name that is empty or only whitespace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a model family must be a non-empty name such as \"anthropic\"")]
pub struct EmptyFamily;

impl FromStr for Family {
    type Err = EmptyFamily;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().is_empty() { Err(EmptyFamily) } else { Ok(Family::new(s)) }
    }
}

impl Serialize for Family {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Family {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = Cow::<'de, str>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Infers the family of a model from its name, case-insensitively.
///
/// A name may carry provider prefixes (`provider/model`, as OpenCode,
/// OpenRouter, Ollama and Hugging Face write them). The first prefix that is
/// a known provider decides (`anthropic/...`, `meta-llama/...`,
/// `mistralai/...`); prefixes that are not (`openrouter/`, `ollama/`) are
/// skipped, and then the model part decides by its words (`claude`, `gpt`,
/// `o3`, `gemini`, `llama`, `qwen`, `mixtral`, ...), the first word that
/// names a family winning.
///
/// Returns `None` when nothing is recognised (`opencode/big-pickle`): the
/// caller must then require an explicit `family`.
pub fn infer_family(model: &str) -> Option<Family> {
    let lower = model.trim().to_lowercase();
    let mut segments: Vec<&str> = lower.split('/').map(str::trim).collect();
    let name = segments.pop()?;
    if let Some(family) = segments.iter().find_map(|prefix| provider_family(prefix)) {
        return Some(family);
    }
    name.split(|c: char| !c.is_alphanumeric()).find_map(word_family)
}

/// The family of a provider prefix, when the provider makes its own models.
/// Hosts that serve many labs' models (OpenRouter, Ollama, Bedrock, ...) are
/// deliberately absent: their model part decides.
fn provider_family(prefix: &str) -> Option<Family> {
    let family = match prefix {
        "anthropic" => Family::ANTHROPIC,
        "openai" => Family::OPENAI,
        "google" | "gemini" => Family::GOOGLE,
        "meta" | "meta-llama" | "facebook" => Family::META,
        "qwen" => Family::QWEN,
        "mistral" | "mistralai" => Family::MISTRAL,
        "deepseek" | "deepseek-ai" => Family::DEEPSEEK,
        "xai" | "x-ai" => Family::XAI,
        "cohere" | "cohereforai" => Family::COHERE,
        "microsoft" => Family::MICROSOFT,
        "moonshotai" | "moonshot" => Family::MOONSHOT,
        "zai-org" | "z-ai" | "zhipuai" | "thudm" => Family::ZHIPU,
        _ => return None,
    };
    Some(family)
}

/// The family one lowercase word of a model name points to.
fn word_family(word: &str) -> Option<Family> {
    const MISTRAL_WORDS: [&str; 8] =
        ["mistral", "mixtral", "codestral", "devstral", "magistral", "ministral", "pixtral", "voxtral"];
    let starts = |prefix: &str| word.starts_with(prefix);
    let family = if starts("claude") {
        Family::ANTHROPIC
    } else if starts("gpt") || starts("chatgpt") || starts("codex") || is_o_series(word) {
        Family::OPENAI
    } else if starts("gemini") || starts("gemma") {
        Family::GOOGLE
    } else if starts("llama") {
        Family::META
    } else if starts("qwen") || starts("qwq") {
        Family::QWEN
    } else if MISTRAL_WORDS.iter().any(|w| starts(w)) {
        Family::MISTRAL
    } else if starts("deepseek") {
        Family::DEEPSEEK
    } else if starts("grok") {
        Family::XAI
    } else if starts("command") {
        Family::COHERE
    } else if word == "phi" || word.strip_prefix("phi").is_some_and(starts_with_digit) {
        Family::MICROSOFT
    } else if starts("kimi") {
        Family::MOONSHOT
    } else if starts("glm") || starts("chatglm") {
        Family::ZHIPU
    } else if let Some(rest) = word.strip_prefix("code").filter(|rest| !rest.is_empty()) {
        // codellama, codegemma, codeqwen: a lab's coding variant.
        return word_family(rest);
    } else {
        return None;
    };
    Some(family)
}

/// OpenAI's reasoning models: `o1`, `o3`, `o4` (`o4-mini` splits into `o4`).
fn is_o_series(word: &str) -> bool {
    word.strip_prefix('o').is_some_and(starts_with_digit)
}

fn starts_with_digit(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn infers_families_from_model_names() {
        let cases: &[(&str, Option<Family>)] = &[
            // Bare model names.
            ("claude-sonnet-4-5", Some(Family::ANTHROPIC)),
            ("Claude-3-Opus-20240229", Some(Family::ANTHROPIC)),
            ("gpt-5.6-luna", Some(Family::OPENAI)),
            ("GPT-4o", Some(Family::OPENAI)),
            ("gpt4o-mini", Some(Family::OPENAI)),
            ("o1", Some(Family::OPENAI)),
            ("o3-mini", Some(Family::OPENAI)),
            ("o4-mini-high", Some(Family::OPENAI)),
            ("codex-mini-latest", Some(Family::OPENAI)),
            ("chatgpt-4o-latest", Some(Family::OPENAI)),
            ("gemini-2.5-pro", Some(Family::GOOGLE)),
            ("gemma-3-27b-it", Some(Family::GOOGLE)),
            ("codegemma:7b", Some(Family::GOOGLE)),
            ("Llama-3.3-70B-Instruct", Some(Family::META)),
            ("codellama:13b", Some(Family::META)),
            ("qwen2.5-coder:32b", Some(Family::QWEN)),
            ("QwQ-32B", Some(Family::QWEN)),
            ("mistral-large-latest", Some(Family::MISTRAL)),
            ("open-mixtral-8x22b", Some(Family::MISTRAL)),
            ("codestral-2501", Some(Family::MISTRAL)),
            ("devstral-small-2505", Some(Family::MISTRAL)),
            ("magistral-medium", Some(Family::MISTRAL)),
            ("ministral-8b", Some(Family::MISTRAL)),
            ("deepseek-chat", Some(Family::DEEPSEEK)),
            ("DeepSeek-R1-Distill-Qwen-32B", Some(Family::DEEPSEEK)),
            ("grok-4", Some(Family::XAI)),
            ("command-r-plus", Some(Family::COHERE)),
            ("c4ai-command-a-03-2025", Some(Family::COHERE)),
            ("phi-4", Some(Family::MICROSOFT)),
            ("phi3:mini", Some(Family::MICROSOFT)),
            ("kimi-k2-instruct", Some(Family::MOONSHOT)),
            ("glm-4.6", Some(Family::ZHIPU)),
            // Provider prefixes: a known provider decides.
            ("anthropic/claude-x", Some(Family::ANTHROPIC)),
            ("openai/gpt-5", Some(Family::OPENAI)),
            ("openai/gpt-oss-120b", Some(Family::OPENAI)),
            ("google/gemini-2.5-pro", Some(Family::GOOGLE)),
            ("meta-llama/Llama-3", Some(Family::META)),
            ("qwen/qwen3-coder", Some(Family::QWEN)),
            ("Qwen/Qwen3-Coder-480B-A35B-Instruct", Some(Family::QWEN)),
            ("mistralai/Mistral-7B-Instruct-v0.3", Some(Family::MISTRAL)),
            ("deepseek/deepseek-r1", Some(Family::DEEPSEEK)),
            ("deepseek-ai/DeepSeek-V3", Some(Family::DEEPSEEK)),
            ("x-ai/grok-code-fast-1", Some(Family::XAI)),
            ("moonshotai/kimi-k2", Some(Family::MOONSHOT)),
            ("microsoft/some-new-model", Some(Family::MICROSOFT)),
            // Hosts: the part after the slash decides.
            ("openrouter/anthropic/claude-3", Some(Family::ANTHROPIC)),
            ("openrouter/meta-llama/llama-3.1-405b", Some(Family::META)),
            ("ollama/llama3.1", Some(Family::META)),
            ("ollama/qwen2.5-coder:7b", Some(Family::QWEN)),
            ("bedrock/anthropic.claude-3-sonnet-20240229-v1:0", Some(Family::ANTHROPIC)),
            ("us.anthropic.claude-sonnet-4-20250514-v1:0", Some(Family::ANTHROPIC)),
            ("models/gemini-1.5-flash", Some(Family::GOOGLE)),
            ("TheBloke/Llama-2-7B-GGUF", Some(Family::META)),
            ("  OpenAI/GPT-5  ", Some(Family::OPENAI)),
            // Unknown: the caller must ask for an explicit family.
            ("opencode/big-pickle", None),
            ("big-pickle", None),
            ("phind-codellama-34b", Some(Family::META)),
            ("phind-v2", None),
            ("ollama", None),
            ("yolo-v8", None),
            ("", None),
            ("   ", None),
            ("/", None),
            ("openrouter/", None),
        ];
        let failures: Vec<String> = cases
            .iter()
            .filter(|(model, want)| infer_family(model) != *want)
            .map(|(model, want)| format!("{model:?}: got {:?}, want {want:?}", infer_family(model)))
            .collect();
        assert_eq!(failures, Vec::<String>::new());
        assert!(cases.len() >= 25);
    }

    #[test]
    fn families_compare_by_lowercase_name() {
        assert_eq!(Family::new("Anthropic"), Family::ANTHROPIC);
        assert_eq!(Family::new("  OpenCode "), Family::new("opencode"));
        assert_eq!(Family::new("opencode").as_str(), "opencode");
        assert_eq!(Family::GOOGLE.to_string(), "google");
        assert_eq!("".parse::<Family>(), Err(EmptyFamily));
        assert_eq!(" META ".parse::<Family>(), Ok(Family::META));
    }

    #[test]
    fn families_serialise_as_plain_strings() {
        assert_eq!(serde_json::to_string(&Family::QWEN).unwrap(), "\"qwen\"");
        let read: Family = serde_json::from_str("\"DeepSeek\"").unwrap();
        assert_eq!(read, Family::DEEPSEEK);
        assert!(serde_json::from_str::<Family>("\"  \"").is_err());
        assert!(serde_json::from_str::<Family>("3").is_err());
    }

    #[test]
    fn every_known_family_is_lowercase_and_distinct() {
        let mut names: Vec<&str> = Family::KNOWN.iter().map(Family::as_str).collect();
        assert!(names.iter().all(|n| *n == n.to_lowercase()));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Family::KNOWN.len());
    }
}
