//! The HTTP API engines: `anthropic` and `openai`.
//!
//! An [`HttpSeat`] sends each request as one streamed API call:
//!
//! - `anthropic`: the Messages API, `POST {base_url}/v1/messages` (a
//!   `base_url` already ending in `/v1` gets `/messages`), headers `x-api-key`
//!   and `anthropic-version: 2023-06-01`. Defaults: `https://api.anthropic.com`,
//!   key in `ANTHROPIC_API_KEY`.
//! - `openai`: the Responses API (`POST {base_url}/responses`) or Chat
//!   Completions (`POST {base_url}/chat/completions`), key sent as
//!   `Authorization: Bearer`. Defaults: `https://api.openai.com/v1`, key in
//!   `OPENAI_API_KEY`. Responses is used for api.openai.com, Chat Completions
//!   for any other `base_url` (OpenAI-compatible servers mostly speak only
//!   that); the seat's `env` overrides it with
//!   `GAVEL_OPENAI_API = "responses"` or `"chat"`.
//!
//! The seat's `env` may also set `GAVEL_MAX_TOKENS` (a positive whole number):
//! the most output tokens to allow (default: 16000 for current Claude models,
//! less for older ones; no limit sent to OpenAI APIs).
//!
//! The key is read from the variable `api_key_env` names when a request is
//! sent, goes only into that request's header, and is scrubbed from every
//! error. A `base_url` on loopback (a local server) may be used without a key.
//!
//! Failures: connect errors, 429 and 5xx (and transient errors reported
//! inside a stream) are retried with exponential backoff and full jitter,
//! honouring `retry-after`/`retry-after-ms` ([`RetryPolicy`]); any other
//! status is an engine error at once. The whole request, retries and
//! streaming included, is bounded by [`Request::timeout`]
//! (→ [`SeatError::Timeout`]), so a stalled stream times out.
//!
//! A builder (a request that may write) cannot edit files itself: it is told
//! to reply with `{"files":[{"path","content"}]}`, shown the current content
//! of the files it may write, and gavel writes the files, only those in the
//! request's `writes` and inside the workspace; any other path refuses the
//! whole reply and nothing is written.

mod anthropic;
mod files;
mod openai;
mod retry;
mod stream;

use std::fmt;
use std::path::Path;
use std::sync::Once;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use gavel_domain::{Access, Engine, Family, Price, SeatSpec, Usage};
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use sse_stream::SseByteStream;

pub use retry::RetryPolicy;
use stream::{Collected, StreamFailure};

use crate::secret::{Redactor, Secret, read_key};
use crate::{BoxFuture, BuildError, Reply, Request, Seat, SeatError, price, seat_family};

/// The system text of a request that may not write.
pub const READ_ONLY_SYSTEM: &str = "You answer one request from gavel, a tool that runs coding agents and has their work checked. \
You cannot run tools, read files or change anything: everything you need is in the request. \
Reply with the JSON object the request asks for. Gavel reads the first JSON object in your reply, \
so put no other JSON object before it.";

/// The system text of a builder request (one that may write files).
pub const BUILDER_SYSTEM: &str = "You are the builder in gavel, a tool that runs coding agents and has their work checked. \
You cannot run tools or edit files yourself: gavel writes the files for you from your reply. \
Reply with one JSON object of this form: \
{\"files\":[{\"path\":\"<relative path>\",\"content\":\"<the complete new content of the file>\"}],\"summary\":\"<what you changed>\"}. \
List only files the request lets you write, with their paths exactly as it gives them (relative to the workspace); \
give each file's whole content, not a diff; files you leave out stay as they are. \
Put any other fields the request asks for in the same object. Gavel reads the first JSON object in your reply, \
so put no other JSON object before it.";

/// Which wire API a seat speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// The Anthropic Messages API.
    Anthropic,
    /// The OpenAI Responses API.
    Responses,
    /// (OpenAI) Chat Completions.
    Chat,
}

impl Wire {
    /// The API's name, for messages.
    pub const fn api_name(self) -> &'static str {
        match self {
            Wire::Anthropic => "Anthropic Messages API",
            Wire::Responses => "OpenAI Responses API",
            Wire::Chat => "Chat Completions API",
        }
    }

    fn fold(self, into: &mut Collected, event: Option<&str>, data: &str) -> Result<(), StreamFailure> {
        match self {
            Wire::Anthropic => anthropic::fold(into, event, data),
            Wire::Responses => openai::fold_responses(into, event, data),
            Wire::Chat => openai::fold_chat(into, event, data),
        }
    }

    fn whole(self, value: &Value) -> Result<Collected, StreamFailure> {
        match self {
            Wire::Anthropic => anthropic::whole(value),
            Wire::Responses => openai::whole_responses(value),
            Wire::Chat => openai::whole_chat(value),
        }
    }
}

impl fmt::Display for Wire {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Wire::Anthropic => "messages",
            Wire::Responses => "responses",
            Wire::Chat => "chat",
        })
    }
}

/// Where a seat's key comes from.
#[derive(Debug, Clone)]
enum KeySource {
    /// Read from this environment variable at request time.
    Env(String),
    /// Given by the embedding program (tests).
    Given(Secret),
}

/// A seat behind the Anthropic or OpenAI HTTP API (or an OpenAI-compatible
/// server). `Debug` never shows the key.
#[derive(Debug)]
pub struct HttpSeat {
    name: String,
    family: Family,
    engine: Engine,
    wire: Wire,
    model: String,
    endpoint: Url,
    /// On loopback: a missing key is not an error, and no proxy is used.
    loopback: bool,
    /// The endpoint is OpenAI's own.
    official: bool,
    key: KeySource,
    max_tokens: Option<u32>,
    price: Option<Price>,
    retry: RetryPolicy,
    client: reqwest::Client,
}

/// Why one attempt failed.
#[derive(Debug)]
struct Failure {
    message: String,
    retryable: bool,
    /// How long the server asked to wait before trying again.
    wait: Option<Duration>,
}

impl From<StreamFailure> for Failure {
    fn from(failure: StreamFailure) -> Self {
        Self { message: failure.message, retryable: failure.retryable, wait: None }
    }
}

/// Installs rustls' crypto provider once per process (ignoring one that is
/// already installed).
fn install_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// `base_url` as an http(s) URL without credentials, query or fragment.
fn parse_base(text: &str, example: &str) -> Result<Url, String> {
    let write_instead = format!("write e.g. base_url = \"{example}\"");
    let url = Url::parse(text.trim())
        .map_err(|e| format!("`base_url = \"{text}\"` is not a URL ({e}); {write_instead}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(format!("`base_url = \"{text}\"` is not an http(s) URL; {write_instead}"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "`base_url` must not carry credentials; put the key in an environment variable and name it in `api_key_env`, and {write_instead}"
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!("`base_url = \"{text}\"` must not have a query or fragment; {write_instead}"));
    }
    Ok(url)
}

/// Whether `url` points at this machine.
fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => host == "localhost" || host.ends_with(".localhost"),
    }
}

/// Whether `name` can be an environment variable's name.
fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An error and the errors it came from, as one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

impl HttpSeat {
    /// Builds the seat from its workflow spec (`anthropic` or `openai`
    /// engine), checking `model`, `base_url`, `api_key_env` and the
    /// `GAVEL_OPENAI_API` / `GAVEL_MAX_TOKENS` entries of `env`. The key is
    /// not read here but at each request.
    pub fn from_spec(name: &str, spec: &SeatSpec, _base: &Path) -> Result<HttpSeat, BuildError> {
        let invalid =
            |key: &'static str, message: String| BuildError::Invalid { seat: name.to_owned(), message, key };
        let (default_base, default_key, example_model) = match spec.engine {
            Engine::Anthropic => ("https://api.anthropic.com", "ANTHROPIC_API_KEY", "claude-sonnet-4-5"),
            Engine::Openai => ("https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-5"),
            other => {
                return Err(invalid(
                    "engine",
                    format!(
                        "the `{other}` engine is not an HTTP API; HTTP seats use `anthropic` or `openai`"
                    ),
                ));
            }
        };
        let engine = spec.engine;
        let model = spec.model.as_deref().map(str::trim).unwrap_or_default();
        if model.is_empty() {
            return Err(invalid(
                "model",
                format!("the `{engine}` engine needs a model; add e.g. model = \"{example_model}\""),
            ));
        }
        let base = parse_base(spec.base_url.as_deref().unwrap_or(default_base), default_base)
            .map_err(|message| invalid("base_url", message))?;
        let key_var = spec.api_key_env.as_deref().map_or(default_key, str::trim);
        if !is_var_name(key_var) {
            // Never echo it: it may be the key itself, pasted in by mistake.
            return Err(invalid(
                "api_key_env",
                format!(
                    "`api_key_env` must be the name of the environment variable that holds the key (such as \"{default_key}\"), not the key itself"
                ),
            ));
        }
        let official = base.host_str().is_some_and(|h| h.eq_ignore_ascii_case("api.openai.com"));
        let wire = match engine {
            Engine::Anthropic => Wire::Anthropic,
            _ => match spec.env.get("GAVEL_OPENAI_API").map(|v| v.trim().to_ascii_lowercase()).as_deref() {
                Some("responses") => Wire::Responses,
                Some("chat") => Wire::Chat,
                Some(other) => {
                    return Err(invalid(
                        "env",
                        format!(
                            "`GAVEL_OPENAI_API = \"{other}\"` is not an OpenAI wire API; write \"responses\" or \"chat\""
                        ),
                    ));
                }
                None if official => Wire::Responses,
                None => Wire::Chat,
            },
        };
        let max_tokens = match spec.env.get("GAVEL_MAX_TOKENS") {
            None => None,
            Some(text) => match text.trim().parse::<u32>() {
                Ok(n) if n > 0 => Some(n),
                _ => {
                    return Err(invalid(
                        "env",
                        format!(
                            "`GAVEL_MAX_TOKENS = \"{text}\"` is not a positive whole number; write e.g. \"16000\""
                        ),
                    ));
                }
            },
        };
        let family = seat_family(spec)
            .or(match engine {
                Engine::Anthropic => Some(Family::ANTHROPIC),
                _ if official => Some(Family::OPENAI),
                _ => None,
            })
            .ok_or_else(|| {
                invalid(
                    "family",
                    format!(
                        "cannot tell which model family `{model}` belongs to; add family = \"...\" (e.g. \"meta\", \"qwen\")"
                    ),
                )
            })?;
        let root = base.as_str().trim_end_matches('/');
        let suffix = match wire {
            Wire::Anthropic if root.ends_with("/v1") => "/messages",
            Wire::Anthropic => "/v1/messages",
            Wire::Responses => "/responses",
            Wire::Chat => "/chat/completions",
        };
        let endpoint = Url::parse(&format!("{root}{suffix}"))
            .map_err(|e| invalid("base_url", format!("cannot build the endpoint from `base_url`: {e}")))?;
        let loopback = is_loopback(&base);
        install_crypto();
        let mut client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(20))
            .user_agent(concat!("gavel/", env!("CARGO_PKG_VERSION")));
        if loopback {
            client = client.no_proxy();
        }
        let client = client
            .build()
            .map_err(|e| invalid("engine", format!("cannot set up an HTTP client: {}", error_chain(&e))))?;
        Ok(HttpSeat {
            name: name.to_owned(),
            family,
            engine,
            wire,
            model: model.to_owned(),
            endpoint,
            loopback,
            official,
            key: KeySource::Env(key_var.to_owned()),
            max_tokens,
            price: spec.price,
            retry: RetryPolicy::default(),
            client,
        })
    }

    /// Uses `key` instead of reading the `api_key_env` variable (for programs
    /// that hold the key themselves, and tests).
    #[must_use]
    pub fn with_key(mut self, key: Secret) -> Self {
        crate::secret::remember(&key);
        self.key = KeySource::Given(key);
        self
    }

    /// Retries with `policy` instead of the default (4 attempts, 0.5 s base).
    #[must_use]
    pub fn with_retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// The wire API the seat speaks.
    pub fn wire(&self) -> Wire {
        self.wire
    }

    /// The URL requests are posted to.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// The model asked.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The environment variable the key is read from (`None` when the key
    /// was given with [`HttpSeat::with_key`]).
    pub fn key_env(&self) -> Option<&str> {
        match &self.key {
            KeySource::Env(var) => Some(var),
            KeySource::Given(_) => None,
        }
    }

    /// The key for one request: `None` on loopback when none is set.
    fn key(&self) -> Result<Option<Secret>, SeatError> {
        match &self.key {
            KeySource::Given(secret) => Ok(Some(secret.clone())),
            KeySource::Env(var) => match read_key(var) {
                Ok(secret) => Ok(Some(secret)),
                Err(_) if self.loopback => Ok(None),
                Err(e) => Err(SeatError::Engine(e.to_string())),
            },
        }
    }

    /// Where the key came from, for hints.
    fn key_origin(&self) -> String {
        match &self.key {
            KeySource::Env(var) => format!("`${var}`"),
            KeySource::Given(secret) => format!("`${}`", secret.source()),
        }
    }

    fn body(&self, system: &str, prompt: &str) -> Result<Bytes, SeatError> {
        let model = self.model.as_str();
        let value = match self.wire {
            Wire::Anthropic => anthropic::body(
                model,
                system,
                prompt,
                self.max_tokens.unwrap_or_else(|| anthropic::default_max_tokens(model)),
            ),
            Wire::Responses => openai::responses_body(model, system, prompt, self.max_tokens),
            Wire::Chat => openai::chat_body(model, system, prompt, self.max_tokens, self.official),
        };
        serde_json::to_vec(&value)
            .map(Bytes::from)
            .map_err(|e| SeatError::Engine(format!("cannot encode the request: {e}")))
    }

    async fn run(
        &self,
        request: &Request,
        started: Instant,
        deadline: tokio::time::Instant,
    ) -> Result<Reply, SeatError> {
        let key = self.key()?;
        let redactor = Redactor::new(key.clone());
        let builder = request.access == Access::MayWrite;
        let (system, prompt) = if builder {
            (BUILDER_SYSTEM, format!("{}{}", request.prompt, files::current_files(request)))
        } else {
            (READ_ONLY_SYSTEM, request.prompt.clone())
        };
        let body = self.body(system, &prompt)?;
        let collected = self.call(&body, key.as_ref(), &redactor, deadline).await?;
        if builder {
            files::apply(&collected.text, request).map_err(|error| match error {
                SeatError::Engine(message) => {
                    let cut = matches!(
                        collected.stop_reason.as_deref(),
                        Some("max_tokens" | "length" | "max_output_tokens")
                    );
                    let hint = if cut {
                        " (the reply was cut off at the output token limit: raise it with `GAVEL_MAX_TOKENS` in the seat's `env`, or have fewer or smaller files written per stage)"
                    } else {
                        ""
                    };
                    SeatError::Engine(redactor.scrub(&format!("{message}{hint}")))
                }
                SeatError::Refused(message) => SeatError::Refused(redactor.scrub(&message)),
                other @ SeatError::Timeout(_) => other,
            })?;
        }
        let cost = price::cost_usd(self.price, &self.model, collected.input_tokens, collected.output_tokens);
        // Scrubbed once the stream is assembled: a key split across two
        // chunks is whole here.
        Ok(Reply {
            text: redactor.scrub(&collected.text),
            usage: Usage {
                input_tokens: collected.input_tokens,
                output_tokens: collected.output_tokens,
                cost_usd: cost.unwrap_or(0.0),
            },
            duration: started.elapsed(),
            session: collected.id.map(|id| redactor.scrub(&id)),
        })
    }

    /// Sends the request, retrying what is worth retrying, until a reply,
    /// a final failure, or no time is left for another wait.
    async fn call(
        &self,
        body: &Bytes,
        key: Option<&Secret>,
        redactor: &Redactor,
        deadline: tokio::time::Instant,
    ) -> Result<Collected, SeatError> {
        let attempts = self.retry.attempts.max(1);
        let mut rng = fastrand::Rng::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let failure = match self.attempt(body, key).await {
                Ok(collected) => return Ok(collected),
                Err(failure) => failure,
            };
            if !failure.retryable || attempt >= attempts {
                let tail = if failure.retryable && attempt > 1 {
                    format!(" (gave up after {attempt} attempts)")
                } else {
                    String::new()
                };
                return Err(SeatError::Engine(redactor.scrub(&format!("{}{tail}", failure.message))));
            }
            let wait = failure.wait.unwrap_or_else(|| self.retry.backoff(attempt - 1, &mut rng));
            // `checked_add`: a server may ask for a wait no clock can add.
            if tokio::time::Instant::now().checked_add(wait).is_none_or(|end| end >= deadline) {
                return Err(SeatError::Engine(redactor.scrub(&format!(
                    "{} (not retried: waiting {:.1} s more would pass the seat's timeout)",
                    failure.message,
                    wait.as_secs_f64()
                ))));
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// One attempt: send, check the status, read the stream.
    async fn attempt(&self, body: &Bytes, key: Option<&Secret>) -> Result<Collected, Failure> {
        let api = self.wire.api_name();
        let mut request = self
            .client
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body.clone());
        if self.wire == Wire::Anthropic {
            request = request.header("anthropic-version", anthropic::VERSION);
        }
        if let Some(key) = key {
            let value = match self.wire {
                Wire::Anthropic => key.expose().to_owned(),
                Wire::Responses | Wire::Chat => format!("Bearer {}", key.expose()),
            };
            let Ok(mut value) = HeaderValue::from_str(&value) else {
                return Err(Failure {
                    message: format!(
                        "the key in {} cannot be sent: it contains a line break or another control character",
                        self.key_origin()
                    ),
                    retryable: false,
                    wait: None,
                });
            };
            value.set_sensitive(true);
            request = match self.wire {
                Wire::Anthropic => request.header("x-api-key", value),
                Wire::Responses | Wire::Chat => request.header(AUTHORIZATION, value),
            };
        }
        let response = request.send().await.map_err(|e| Failure {
            message: format!("cannot reach the {api} at {}: {}", self.endpoint, error_chain(&e)),
            retryable: !e.is_builder(),
            wait: None,
        })?;
        let status = response.status();
        if !status.is_success() {
            let wait = retry::retry_after(response.headers(), jiff::Timestamp::now());
            // Scrubbed whole, before it is cut to a quote: a key echoed near
            // the cut leaves no piece behind.
            let text = crate::secret::scrub(&response.text().await.unwrap_or_default()).into_owned();
            let detail = stream::api_error_message(&text);
            let hint = match status.as_u16() {
                401 | 403 => format!("; check the key in {}", self.key_origin()),
                404 => format!(
                    "; check `base_url` (posted to {}) and `model = \"{}\"`",
                    self.endpoint, self.model
                ),
                _ => String::new(),
            };
            return Err(Failure {
                message: format!("the {api} answered {status}: {detail}{hint}"),
                retryable: status.as_u16() == 429 || status.is_server_error(),
                wait,
            });
        }
        let json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        if json {
            let bytes = response.bytes().await.map_err(|e| Failure {
                message: format!("the {api}'s reply broke off: {}", error_chain(&e)),
                retryable: true,
                wait: None,
            })?;
            let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
                Failure::from(StreamFailure::fatal(format!("the {api}'s reply is not JSON: {e}")))
            })?;
            return self.wire.whole(&value).map_err(|f| with_api(api, f));
        }
        let mut events = SseByteStream::new(response.bytes_stream());
        let mut collected = Collected::default();
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| Failure {
                message: format!("the {api}'s reply stream broke off: {}", error_chain(&e)),
                retryable: true,
                wait: None,
            })?;
            let Some(data) = event.data.as_deref() else { continue };
            self.wire.fold(&mut collected, event.event.as_deref(), data).map_err(|f| with_api(api, f))?;
            if collected.done {
                break;
            }
        }
        if collected.complete {
            Ok(collected)
        } else {
            Err(Failure {
                message: format!("the {api}'s reply stream ended before the reply was complete"),
                retryable: true,
                wait: None,
            })
        }
    }
}

/// A failure reported inside a reply, prefixed with the API's name.
fn with_api(api: &str, failure: StreamFailure) -> Failure {
    let StreamFailure { message, retryable } = failure;
    Failure { message: format!("the {api} reported an error: {message}"), retryable, wait: None }
}

impl Seat for HttpSeat {
    fn name(&self) -> &str {
        &self.name
    }

    fn family(&self) -> &Family {
        &self.family
    }

    fn engine(&self) -> Engine {
        self.engine
    }

    fn answer<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Reply, SeatError>> {
        Box::pin(async move {
            let started = Instant::now();
            let now = tokio::time::Instant::now();
            let deadline = now
                .checked_add(request.timeout)
                .unwrap_or_else(|| now + Duration::from_secs(60 * 60 * 24 * 365));
            match tokio::time::timeout_at(deadline, self.run(request, started, deadline)).await {
                Ok(result) => result,
                Err(_) => Err(SeatError::Timeout(request.timeout)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn spec(engine: Engine, model: Option<&str>, base_url: Option<&str>) -> SeatSpec {
        SeatSpec {
            model: model.map(str::to_owned),
            base_url: base_url.map(str::to_owned),
            ..SeatSpec::new(engine)
        }
    }

    fn build(spec: &SeatSpec) -> Result<HttpSeat, BuildError> {
        HttpSeat::from_spec("s", spec, Path::new("."))
    }

    fn invalid_key(result: Result<HttpSeat, BuildError>) -> (&'static str, String) {
        match result {
            Err(BuildError::Invalid { key, message, .. }) => (key, message),
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn defaults_pick_the_official_endpoints() {
        let anthropic = build(&spec(Engine::Anthropic, Some("claude-sonnet-4-5"), None)).unwrap();
        assert_eq!(anthropic.endpoint(), "https://api.anthropic.com/v1/messages");
        assert_eq!(anthropic.wire(), Wire::Anthropic);
        assert_eq!(anthropic.key_env(), Some("ANTHROPIC_API_KEY"));
        assert_eq!(anthropic.family(), &Family::ANTHROPIC);
        let openai = build(&spec(Engine::Openai, Some("gpt-5"), None)).unwrap();
        assert_eq!(openai.endpoint(), "https://api.openai.com/v1/responses");
        assert_eq!(openai.wire(), Wire::Responses);
        assert_eq!(openai.key_env(), Some("OPENAI_API_KEY"));
    }

    #[test]
    fn other_servers_speak_chat_unless_the_env_says_otherwise() {
        let mut local = spec(Engine::Openai, Some("qwen/qwen3-coder"), Some("http://127.0.0.1:8080/v1/"));
        let seat = build(&local).unwrap();
        assert_eq!(seat.wire(), Wire::Chat);
        assert_eq!(seat.endpoint(), "http://127.0.0.1:8080/v1/chat/completions");
        local.env.insert("GAVEL_OPENAI_API".into(), "Responses".into());
        assert_eq!(build(&local).unwrap().endpoint(), "http://127.0.0.1:8080/v1/responses");
        local.env.insert("GAVEL_OPENAI_API".into(), "completions".into());
        let (key, message) = invalid_key(build(&local));
        assert_eq!(key, "env");
        assert!(message.contains("\"responses\" or \"chat\""), "{message}");
        let mut official = spec(Engine::Openai, Some("gpt-5"), None);
        official.env.insert("GAVEL_OPENAI_API".into(), "chat".into());
        assert_eq!(build(&official).unwrap().endpoint(), "https://api.openai.com/v1/chat/completions");
    }

    #[test]
    fn an_anthropic_base_with_v1_is_not_doubled() {
        let seat =
            build(&spec(Engine::Anthropic, Some("claude-haiku-4-5"), Some("http://localhost:9/v1"))).unwrap();
        assert_eq!(seat.endpoint(), "http://localhost:9/v1/messages");
        let seat =
            build(&spec(Engine::Anthropic, Some("claude-haiku-4-5"), Some("http://localhost:9/proxy/")))
                .unwrap();
        assert_eq!(seat.endpoint(), "http://localhost:9/proxy/v1/messages");
    }

    #[test]
    fn bad_specs_say_what_to_write() {
        let (key, message) = invalid_key(build(&spec(Engine::Anthropic, None, None)));
        assert_eq!(key, "model");
        assert!(message.contains("model = \"claude-sonnet-4-5\""), "{message}");
        let (key, _) = invalid_key(build(&spec(Engine::Openai, Some("  "), None)));
        assert_eq!(key, "model");
        for bad in [
            "api.openai.com/v1",
            "ftp://example.com",
            "http://",
            "https://x.test/v1?k=1",
            "https://u:p@x.test",
        ] {
            let (key, message) = invalid_key(build(&spec(Engine::Openai, Some("gpt-5"), Some(bad))));
            assert_eq!(key, "base_url", "{bad}");
            assert!(message.contains("base_url = \"https://api.openai.com/v1\""), "{bad}: {message}");
        }
        let mut tokens = spec(Engine::Anthropic, Some("claude-opus-4-5"), None);
        tokens.env.insert("GAVEL_MAX_TOKENS".into(), "lots".into());
        assert_eq!(invalid_key(build(&tokens)).0, "env");
        let (key, _) = invalid_key(build(&spec(Engine::Script, Some("m"), None)));
        assert_eq!(key, "engine");
    }

    #[test]
    fn a_pasted_key_in_api_key_env_is_not_echoed() {
        let mut pasted = spec(Engine::Anthropic, Some("claude-sonnet-4-5"), None);
        pasted.api_key_env = Some("sk-ant-api03-secret-value".into());
        let (key, message) = invalid_key(build(&pasted));
        assert_eq!(key, "api_key_env");
        assert!(!message.contains("secret-value"), "{message}");
    }

    #[test]
    fn an_unknown_family_off_openai_must_be_named() {
        let local = spec(Engine::Openai, Some("my-finetune"), Some("http://127.0.0.1:1/v1"));
        assert_eq!(invalid_key(build(&local)).0, "family");
        let mut named = local.clone();
        named.family = Some("meta".into());
        assert_eq!(build(&named).unwrap().family().as_str(), "meta");
    }

    #[test]
    fn loopback_needs_no_key_but_remote_does() {
        let mut local = spec(Engine::Openai, Some("gpt-5"), Some("http://[::1]:1/v1"));
        local.api_key_env = Some("GAVEL_TEST_SURELY_UNSET_KEY_VAR".into());
        assert_eq!(build(&local).unwrap().key().unwrap(), None);
        let mut remote = local.clone();
        remote.base_url = Some("https://models.example.com/v1".into());
        let err = build(&remote).unwrap().key().unwrap_err();
        let SeatError::Engine(message) = err else { panic!() };
        assert!(message.contains("GAVEL_TEST_SURELY_UNSET_KEY_VAR"), "{message}");
        assert!(message.contains("api_key_env"), "{message}");
    }

    #[test]
    fn debug_never_shows_a_given_key() {
        let seat = build(&spec(Engine::Anthropic, Some("claude-sonnet-4-5"), None))
            .unwrap()
            .with_key(Secret::new("TEST_KEY", "sk-ant-very-secret-value"));
        let shown = format!("{seat:?}");
        assert!(!shown.contains("very-secret"), "{shown}");
        assert!(shown.contains("TEST_KEY"));
    }

    #[test]
    fn loopback_hosts_are_recognised() {
        for (url, expected) in [
            ("http://127.0.0.1:1", true),
            ("http://127.8.0.1", true),
            ("http://[::1]:8", true),
            ("http://localhost:3", true),
            ("http://api.localhost", true),
            ("https://api.openai.com", false),
            ("http://10.0.0.1", false),
        ] {
            assert_eq!(is_loopback(&Url::parse(url).unwrap()), expected, "{url}");
        }
    }

    #[test]
    fn the_builder_system_text_asks_for_files() {
        assert!(BUILDER_SYSTEM.contains(r#"{"files":[{"path":"#));
        assert!(BUILDER_SYSTEM.contains("cannot run tools or edit files"));
        assert!(READ_ONLY_SYSTEM.contains("first JSON object"));
    }
}
