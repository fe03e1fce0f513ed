//! Seats: the `Seat` trait and the engines that answer requests.
//!
//! A seat is one model behind one engine. This crate owns how a request
//! reaches a model and how its answer comes back: the script engine,
//! the agent CLIs (spawned through `gavel-process`, the only way
//! gavel spawns anything), and the HTTP APIs.
//!
//! It must not know about stages, rounds or routing: a seat gets a request
//! kind, a prompt and a workspace, and returns text, usage and a duration.

pub mod cli;
pub mod http;
pub mod price;
pub mod script;
pub mod secret;
pub mod written;

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::time::Duration;

use gavel_domain::{Access, Engine, Family, Located, RequestKind, SeatSpec, Usage, infer_family};

pub use script::ScriptSeat;

/// A boxed future, so seats can live behind `dyn Seat`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One request to a seat.
#[derive(Debug, Clone)]
pub struct Request {
    /// What is asked.
    pub kind: RequestKind,
    /// The prompt text.
    pub prompt: String,
    /// The workspace the seat works in.
    pub workspace: PathBuf,
    /// Whether the seat may change files.
    pub access: Access,
    /// Which request of this kind this is for the seat in this run, from 0,
    /// counting requests answered from the record on resume.
    pub turn: u32,
    /// The files the stage writes (an API builder may write only these).
    pub writes: Vec<String>,
    /// How long the seat may take.
    pub timeout: Duration,
}

/// A seat's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// The reply text.
    pub text: String,
    /// Tokens and cost.
    pub usage: Usage,
    /// How long the request took.
    pub duration: Duration,
    /// The engine's session or thread id, when it reports one.
    pub session: Option<String>,
}

impl Reply {
    /// The reply, or an engine error when its usage cannot be recorded: a
    /// cost that is not finite or below zero (see [`Usage::problem`]). Every
    /// caller of [`Seat::answer`] passes the reply through here, so no
    /// engine's figures reach the record or a budget unchecked.
    pub fn checked(self) -> Result<Reply, SeatError> {
        match self.usage.problem() {
            Some(problem) => Err(SeatError::Engine(format!("{problem}; the reply was not used"))),
            None => Ok(self),
        }
    }
}

/// Why a seat gave no answer: an engine error, never a decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SeatError {
    /// The engine failed (process died, API error, scripted `error`).
    #[error("{0}")]
    Engine(String),
    /// The seat took longer than its timeout and was stopped.
    #[error("no answer within {0:?}; the seat was stopped")]
    Timeout(Duration),
    /// The seat tried something its request does not allow.
    #[error("refused: {0}")]
    Refused(String),
}

/// One model behind one engine.
pub trait Seat: Send + Sync + fmt::Debug {
    /// The seat's name in the workflow.
    fn name(&self) -> &str;
    /// Its model family.
    fn family(&self) -> &Family;
    /// Its engine.
    fn engine(&self) -> Engine;
    /// Answers one request.
    fn answer<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Reply, SeatError>>;
}

/// Why a seat could not be built from its spec.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A user file is wrong (the script file, a missing key).
    #[error(transparent)]
    File(#[from] Box<Located>),
    /// The engine is not available in this build yet.
    #[error("seat `{seat}`: the `{engine}` engine is not available yet; use `engine = \"script\"` for now")]
    Unsupported {
        /// The seat's name.
        seat: String,
        /// Its engine.
        engine: Engine,
    },
    /// A seat key has a value the engine cannot use.
    #[error("seat `{seat}`: {message}")]
    Invalid {
        /// The seat's name.
        seat: String,
        /// What is wrong and what to write instead.
        message: String,
        /// The seat key at fault (`base_url`, `model`, ...), for locating it.
        key: &'static str,
    },
}

/// The family a seat belongs to: its `family` key, else inferred from the
/// model, else `None` (the caller asks the user to name it).
pub fn seat_family(spec: &SeatSpec) -> Option<Family> {
    if let Some(family) = &spec.family {
        return Some(Family::new(family));
    }
    spec.model.as_deref().and_then(infer_family)
}

/// Builds a seat from its spec. `base` is the directory relative paths in the
/// spec (such as `script`) are resolved against: the workflow file's directory.
///
/// Building a seat remembers the secrets it will be handed (see
/// [`secret`]): the values of its secret-looking `env` entries, and the key
/// in its `api_key_env` variable (or its engine's default one) when set, so
/// they are scrubbed from everything gavel records or shows, whatever the
/// engine.
pub fn build_seat(name: &str, spec: &SeatSpec, base: &Path) -> Result<Box<dyn Seat>, BuildError> {
    remember_secrets(spec);
    match spec.engine {
        Engine::Script => Ok(Box::new(ScriptSeat::from_spec(name, spec, base)?)),
        Engine::Anthropic | Engine::Openai => Ok(Box::new(http::HttpSeat::from_spec(name, spec, base)?)),
        Engine::Claude | Engine::Codex | Engine::Opencode | Engine::Gemini => {
            Ok(Box::new(cli::CliSeat::from_spec(name, spec, base)?))
        }
    }
}

/// Remembers the secrets a seat is handed: its secret-looking `env` values,
/// and the value of its key variable when that is set.
fn remember_secrets(spec: &SeatSpec) {
    for (name, value) in &spec.env {
        secret::remember_env(name, value);
    }
    let var = match spec.api_key_env.as_deref().map(str::trim) {
        Some("") => return,
        Some(var) => var.to_owned(),
        // A script seat is handed no key.
        None if spec.engine == Engine::Script => return,
        None => cli::default_key_env(spec.engine, spec.model.as_deref(), spec.base_url.as_deref()),
    };
    // Only a name can be read; a pasted key is refused by the engine itself.
    if var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        let _ = secret::read_key(&var);
    }
}
