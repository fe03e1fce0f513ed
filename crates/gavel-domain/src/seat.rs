//! A seat as a workflow declares it (its pinned seat keys).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// How a seat is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// Claude Code, headless.
    Claude,
    /// OpenAI Codex CLI, headless.
    Codex,
    /// OpenCode, headless.
    Opencode,
    /// Gemini CLI, headless.
    Gemini,
    /// The Anthropic Messages API.
    Anthropic,
    /// The OpenAI APIs, or any OpenAI-compatible server.
    Openai,
    /// A scripted stand-in.
    Script,
}

impl Engine {
    /// Every engine, for messages.
    pub const ALL: [Engine; 7] = [
        Engine::Claude,
        Engine::Codex,
        Engine::Opencode,
        Engine::Gemini,
        Engine::Anthropic,
        Engine::Openai,
        Engine::Script,
    ];

    /// The engine's name as written in files.
    pub const fn as_str(self) -> &'static str {
        match self {
            Engine::Claude => "claude",
            Engine::Codex => "codex",
            Engine::Opencode => "opencode",
            Engine::Gemini => "gemini",
            Engine::Anthropic => "anthropic",
            Engine::Openai => "openai",
            Engine::Script => "script",
        }
    }

    /// Whether the engine is an agent CLI gavel spawns.
    pub const fn is_cli(self) -> bool {
        matches!(self, Engine::Claude | Engine::Codex | Engine::Opencode | Engine::Gemini)
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One `[seats]` entry: the pinned seat keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeatSpec {
    /// How the seat is reached.
    pub engine: Engine,
    /// The model it runs (not needed for `script`).
    #[serde(default)]
    pub model: Option<String>,
    /// The model family; inferred from `model` when absent.
    #[serde(default)]
    pub family: Option<String>,
    /// The CLI binary (absolute path or a name on `PATH`).
    #[serde(default)]
    pub executable: Option<String>,
    /// Where the model API lives.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The name of the environment variable that holds the API key.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Extra environment for the seat's process.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Per-request timeout (humantime string), overriding `seat_timeout`.
    #[serde(default)]
    pub timeout: Option<String>,
    /// The script file, for the `script` engine (relative to the workflow file).
    #[serde(default)]
    pub script: Option<String>,
    /// Per-seat prompt template overrides: request kind → template file.
    #[serde(default)]
    pub prompts: BTreeMap<String, String>,
    /// What the model costs, overriding gavel's price table (USD per million tokens).
    #[serde(default)]
    pub price: Option<Price>,
}

impl SeatSpec {
    /// A seat on `engine` with every other key unset, for specs built in
    /// code: set the keys you need with struct update syntax,
    /// `SeatSpec { model: Some(..), ..SeatSpec::new(engine) }`.
    pub fn new(engine: Engine) -> Self {
        Self {
            engine,
            model: None,
            family: None,
            executable: None,
            base_url: None,
            api_key_env: None,
            env: BTreeMap::new(),
            timeout: None,
            script: None,
            prompts: BTreeMap::new(),
            price: None,
        }
    }
}

/// A model's price in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// USD per million input (prompt) tokens.
    pub input: f64,
    /// USD per million output (completion) tokens.
    pub output: f64,
}
