//! A fake model server for tests: the Anthropic Messages API, OpenAI
//! Responses and Chat Completions, and Gemini `generateContent`, served on
//! `127.0.0.1` at a random port and answering from a [`FakeScript`].
//!
//! Every request is logged ([`FakeModel::requests`]), headers and JSON body
//! included, with the rule that answered and the status sent.
//!
//! Endpoints (the `/v1` prefix is optional for the OpenAI and Anthropic ones,
//! so base URLs with or without it work):
//!
//! | request | answer |
//! |---|---|
//! | `HEAD /`, `GET /` | 200 (claude probes `HEAD /` first) |
//! | `POST /v1/messages` | Anthropic message, SSE when the body has `"stream": true` |
//! | `POST /v1/messages/count_tokens` | `{"input_tokens": N}` |
//! | `POST /v1/responses` | OpenAI Responses, SSE when streaming |
//! | `GET /v1/responses` | 404 (codex's WebSocket probe) |
//! | `POST /v1/chat/completions` | Chat Completions, SSE when streaming (usage chunk with `stream_options.include_usage`) |
//! | `GET /v1/models`, `GET /v1beta/models` | a small model list |
//! | `POST /v1beta/models/{m}:streamGenerateContent?alt=sse` | Gemini SSE (without `alt=sse`: a JSON array) |
//! | `POST /v1beta/models/{m}:generateContent` | Gemini JSON |
//! | `POST /v1beta/models/{m}:countTokens` | `{"totalTokens": N}` |
//!
//! Generation requests are answered by the first rule whose
//! [`Match`] holds and that has uses left (one use is consumed); with none,
//! the answer is a 500 whose message says "no rule in the fake script
//! matched". Other endpoints consult no rule.
//!
//! Use [`FakeModel::start`] inside a tokio runtime whose threads stay free
//! (the server runs on it), or [`FakeModel::start_blocking`] for tests that
//! block (e.g. waiting for a spawned CLI): it runs on its own thread.
//! Dropping the [`FakeModel`] shuts the server down and cuts stalled streams.

mod anthropic;
mod gemini;
mod log;
mod openai;
mod request;
mod script;
mod server;
pub mod sse;

use std::fmt;
use std::fs::OpenOptions;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread;

use tokio::sync::watch;

pub use log::LoggedRequest;
pub use script::{Api, FakeReply, FakeScript, FakeUsage, Match, Rule};

/// The message of the 500 answered when no rule matches (tests can search
/// logs and engine errors for it).
pub const NO_RULE_MESSAGE: &str = "no rule in the fake script matched";

/// Options for [`FakeModel::start_with`] / [`FakeModel::start_blocking_with`].
#[derive(Debug, Clone, Default)]
pub struct FakeOptions {
    /// Port to bind on 127.0.0.1; 0 (the default) picks a free one.
    pub port: u16,
    /// Append every logged request to this file as a JSON line.
    pub log_path: Option<PathBuf>,
}

/// A running fake model server. Dropping it shuts the server down.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<server::Shared>,
    shutdown: watch::Sender<bool>,
    /// The server's own thread, for [`FakeModel::start_blocking`].
    thread: Option<thread::JoinHandle<()>>,
}

impl fmt::Debug for FakeModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeModel")
            .field("addr", &self.addr)
            .field("own_thread", &self.thread.is_some())
            .finish_non_exhaustive()
    }
}

struct Prepared {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    shared: Arc<server::Shared>,
    shutdown: watch::Sender<bool>,
}

fn prepare(script: FakeScript, options: FakeOptions) -> io::Result<Prepared> {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, options.port))?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let log_file = match options.log_path {
        Some(path) => Some(OpenOptions::new().create(true).append(true).open(path)?),
        None => None,
    };
    let (shutdown, down) = watch::channel(false);
    let shared = Arc::new(server::Shared::new(script, log_file, down));
    Ok(Prepared { listener, addr, shared, shutdown })
}

impl FakeModel {
    /// Binds 127.0.0.1 on a free port and serves on the current tokio
    /// runtime.
    pub async fn start(script: FakeScript) -> io::Result<FakeModel> {
        Self::start_with(script, FakeOptions::default()).await
    }

    /// Like [`FakeModel::start`], with options.
    #[allow(clippy::unused_async)] // async so that it is called from a runtime
    pub async fn start_with(script: FakeScript, options: FakeOptions) -> io::Result<FakeModel> {
        tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        let prepared = prepare(script, options)?;
        let listener = tokio::net::TcpListener::from_std(prepared.listener)?;
        tokio::spawn(server::run(listener, Arc::clone(&prepared.shared)));
        Ok(FakeModel {
            addr: prepared.addr,
            shared: prepared.shared,
            shutdown: prepared.shutdown,
            thread: None,
        })
    }

    /// Starts on its own thread with its own runtime (for sync tests and
    /// tests that block).
    pub fn start_blocking(script: FakeScript) -> io::Result<FakeModel> {
        Self::start_blocking_with(script, FakeOptions::default())
    }

    /// Like [`FakeModel::start_blocking`], with options.
    pub fn start_blocking_with(script: FakeScript, options: FakeOptions) -> io::Result<FakeModel> {
        let prepared = prepare(script, options)?;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let listener = {
            let _entered = runtime.enter();
            tokio::net::TcpListener::from_std(prepared.listener)?
        };
        let shared = Arc::clone(&prepared.shared);
        let thread = thread::Builder::new()
            .name(format!("fake-model-{}", prepared.addr.port()))
            .spawn(move || runtime.block_on(server::run(listener, shared)))?;
        Ok(FakeModel {
            addr: prepared.addr,
            shared: prepared.shared,
            shutdown: prepared.shutdown,
            thread: Some(thread),
        })
    }

    /// The base URL, `http://127.0.0.1:PORT` (no trailing slash).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<LoggedRequest> {
        self.shared.requests()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        if let Some(thread) = self.thread.take() {
            // Bounded: the server cuts connections after a short grace.
            let _ = thread.join();
        }
    }
}
