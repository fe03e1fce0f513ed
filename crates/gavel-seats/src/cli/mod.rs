//! The agent CLI engines: `claude`, `codex`, `opencode`, `gemini`.
//!
//! A [`CliSeat`] answers a request by spawning the agent CLI headless, through
//! `gavel-process` (cleared environment, stdin null, own process group, killed
//! with the whole group at the request's timeout), in the request's workspace,
//! with a private temporary home holding the settings gavel writes for it
//! (telemetry, update checks and plugins off). The CLI's JSON output is parsed
//! by the engine's own module: final text, tokens, cost, session id, error
//! payloads and denied tool calls.
//!
//! Rules every engine follows:
//!
//! - **Keys** reach the CLI only through its process environment, under the
//!   variable the CLI reads (opencode's config names it with `{env:VAR}`);
//!   never in a file gavel writes, in arguments or in error messages.
//! - **Access**: a request that may write (builders, goal workers) lets the
//!   CLI edit files inside the workspace only; every other request runs the
//!   CLI read-only. No engine gets an unsandboxed shell: only codex runs
//!   commands, inside its own sandbox.
//! - **Writes are checked after the fact**: around a request that may
//!   write, a snapshot of the workspace (`gavel_fs::snapshot`) is compared
//!   with the workspace after it; anything created, modified, deleted or
//!   re-moded outside the request's `writes` is undone and the request fails
//!   with an engine error naming every file (its answer is discarded).
//! - **Exit codes are not trusted alone**: an error payload is an engine
//!   error whatever the exit code, and a denied tool call is a
//!   [`SeatError::Refused`] even when the CLI exited 0 with an answer.
//! - **Retries** inside a CLI are capped where the CLI allows it, so the
//!   request's timeout stays the last word. (opencode and gemini retry 5xx
//!   for a minute or more whatever they are told: there the timeout ends it.)
//! - **Prompts** go as an argument, or, above [`PROMPT_ARG_LIMIT`], as a
//!   file on the CLI's stdin (a single argument is capped at 128 KiB).
//!
//! Authentication without a key: the private home hides a CLI's own login
//! (`claude login`, `codex login`, ...), so a seat normally needs its key in
//! `api_key_env` (or the engine's default variable). A `base_url` on loopback
//! (a local server) runs without one (a placeholder is sent). A seat whose
//! CLI authenticates some other way (e.g. `CLAUDE_CODE_USE_BEDROCK` and
//! cloud credentials in `env`) sets `api_key_env = ""`: then no key is
//! required or passed.

mod claude;
mod codex;
mod gemini;
mod json;
mod opencode;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gavel_domain::{Access, Engine, Family, Price, SeatSpec, Usage};
use gavel_fs::snapshot::{Budget, Guard};
use gavel_process::{Finished, Outcome, OutputLimit, SpawnError, SpawnSpec};

use crate::secret::{Redactor, Secret};
use crate::{BoxFuture, BuildError, Reply, Request, Seat, SeatError, seat_family};

/// Prompts up to this size go to the CLI as a command-line argument; longer
/// ones are written to a file in the request's scratch directory and fed to
/// the CLI on stdin (each of the four reads its prompt from stdin when none
/// is given as an argument), because Linux caps one argument at 128 KiB
/// (`MAX_ARG_STRLEN`).
pub const PROMPT_ARG_LIMIT: usize = 100 * 1024;

/// The shell line that feeds a long prompt to the CLI on stdin: `$0` is the
/// resolved CLI, `$@` its arguments.
const STDIN_WRAPPER: &str = "exec \"$0\" \"$@\" < \"$GAVEL_PROMPT_FILE\"";

/// Retries a CLI may make on its own (where it can be told), so a failing API
/// surfaces as an error well within the request's timeout.
const CLI_RETRIES: u32 = 2;

/// Bytes kept from each end of a CLI's stdout and stderr. Generous: a CLI's
/// final JSON line carries the whole reply text.
const OUTPUT_KEEP: usize = 2 * 1024 * 1024;

/// How much of stderr an error message quotes.
const STDERR_QUOTE: usize = 600;

/// Sent as the key to a local server when no key is set.
const PLACEHOLDER_KEY: &str = "gavel-local-no-key";

/// Variables copied from gavel's environment into every CLI's: where programs
/// live (node must be found by the npm shims), locale, user, time zone, and
/// the proxy and certificate settings a corporate network needs. `HOME` and
/// `TMPDIR` are not copied: each request gets private ones.
const INHERIT: &[&str] = &[
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "USER",
    "LOGNAME",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
];

/// The default binary name of an agent CLI engine, looked up on `PATH` when
/// the seat names no `executable`. `None` for engines that are not CLIs.
pub fn default_executable(engine: Engine) -> Option<&'static str> {
    match engine {
        Engine::Claude => Some("claude"),
        Engine::Codex => Some("codex"),
        Engine::Opencode => Some("opencode"),
        Engine::Gemini => Some("gemini"),
        Engine::Anthropic | Engine::Openai | Engine::Script => None,
    }
}

/// How to install an agent CLI engine's binary, for hints.
pub fn install_hint(engine: Engine) -> Option<&'static str> {
    match engine {
        Engine::Claude => Some("npm install -g @anthropic-ai/claude-code"),
        Engine::Codex => Some("npm install -g @openai/codex"),
        Engine::Opencode => Some("npm install -g opencode-ai"),
        Engine::Gemini => Some("npm install -g @google/gemini-cli"),
        Engine::Anthropic | Engine::Openai | Engine::Script => None,
    }
}

/// The version of an agent CLI gavel's real-CLI tests pin (see
/// `ci/install-agent-clis.sh`), for hints: other versions may work, but
/// their flags and output shapes are untested.
pub fn tested_version(engine: Engine) -> Option<&'static str> {
    match engine {
        Engine::Claude => Some("2.1.197"),
        Engine::Codex => Some("0.171.0"),
        Engine::Opencode => Some("1.18.33"),
        Engine::Gemini => Some("0.61.0"),
        Engine::Anthropic | Engine::Openai | Engine::Script => None,
    }
}

/// The variable a seat's key is read from when it names none.
pub(crate) fn default_key_env(engine: Engine, model: Option<&str>, base_url: Option<&str>) -> String {
    match engine {
        Engine::Claude | Engine::Anthropic => "ANTHROPIC_API_KEY".to_owned(),
        Engine::Gemini => "GEMINI_API_KEY".to_owned(),
        Engine::Opencode if base_url.is_none() => opencode::default_key_env(model),
        Engine::Codex | Engine::Opencode | Engine::Openai | Engine::Script => "OPENAI_API_KEY".to_owned(),
    }
}

/// Where a seat's key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum KeySource {
    /// Read from this variable of gavel's environment at request time.
    Var(String),
    /// `api_key_env = ""`: the CLI authenticates by itself.
    None,
    /// Given by the program ([`CliSeat::with_key`]).
    Given(Secret),
}

/// An agent CLI seat: one model behind `claude`, `codex`, `opencode` or
/// `gemini`, spawned once per request.
#[derive(Debug, Clone)]
pub struct CliSeat {
    name: String,
    family: Family,
    engine: Engine,
    model: Option<String>,
    executable: String,
    base_url: Option<String>,
    key: KeySource,
    env: BTreeMap<String, String>,
    price: Option<Price>,
}

impl CliSeat {
    /// Builds a seat from its spec (its seat keys). `base` is the
    /// workflow file's directory: a relative `executable` path (containing a
    /// `/`) is resolved against it; a bare name is looked up on `PATH` when
    /// the seat runs.
    pub fn from_spec(name: &str, spec: &SeatSpec, base: &Path) -> Result<CliSeat, BuildError> {
        let invalid =
            |key: &'static str, message: String| BuildError::Invalid { seat: name.to_owned(), message, key };
        let Some(default_exe) = default_executable(spec.engine) else {
            return Err(invalid(
                "engine",
                format!(
                    "the `{}` engine is not an agent CLI; use claude, codex, opencode or gemini",
                    spec.engine
                ),
            ));
        };
        let family = seat_family(spec).ok_or_else(|| {
            invalid("family", "cannot tell the model family; add `family = \"...\"` to the seat".to_owned())
        })?;

        let model = match spec.model.as_deref().map(str::trim) {
            Some("") => {
                return Err(invalid("model", "`model` is empty; name a model or leave the key out".into()));
            }
            other => other.map(str::to_owned),
        };
        let base_url =
            spec.base_url.as_deref().map(|url| check_base_url(url).map_err(|m| invalid("base_url", m)));
        let base_url = base_url.transpose()?;

        match spec.engine {
            Engine::Gemini if model.is_none() => {
                return Err(invalid(
                    "model",
                    "the gemini engine needs `model` (e.g. model = \"gemini-2.5-pro\"): without it the CLI asks a router model first".into(),
                ));
            }
            Engine::Opencode => opencode::check_model(model.as_deref(), base_url.as_deref())
                .map_err(|m| invalid("model", m))?,
            _ => {}
        }

        let key = match spec.api_key_env.as_deref().map(str::trim) {
            Some("") => KeySource::None,
            Some(var) if is_env_name(var) => KeySource::Var(var.to_owned()),
            Some(var) => {
                return Err(invalid(
                    "api_key_env",
                    format!(
                        "`{var}` is not an environment variable name; write the variable's name (e.g. \"ANTHROPIC_API_KEY\"), not the key"
                    ),
                ));
            }
            None => KeySource::Var(default_key_env(spec.engine, model.as_deref(), base_url.as_deref())),
        };

        if let Some(bad) = spec.env.keys().find(|k| !is_env_name(k)) {
            return Err(invalid("env", format!("`{bad}` is not an environment variable name")));
        }

        let executable = match spec.executable.as_deref().map(str::trim) {
            Some("") => return Err(invalid("executable", "`executable` is empty".into())),
            Some(exe) if exe.contains('/') && !Path::new(exe).is_absolute() => {
                base.join(exe).to_string_lossy().into_owned()
            }
            Some(exe) => exe.to_owned(),
            None => default_exe.to_owned(),
        };

        Ok(CliSeat {
            name: name.to_owned(),
            family,
            engine: spec.engine,
            model,
            executable,
            base_url,
            key,
            env: spec.env.clone(),
            price: spec.price,
        })
    }

    /// The program this seat runs (a path or a name looked up on `PATH`).
    pub fn executable(&self) -> &str {
        &self.executable
    }

    /// Uses `key` instead of reading the `api_key_env` variable (for
    /// programs that hold the key themselves, and tests). The CLI gets it
    /// under the variable it reads; the secret's source name is what codex's
    /// `env_key` and opencode's `{env:...}` refer to.
    #[must_use]
    pub fn with_key(mut self, key: Secret) -> Self {
        crate::secret::remember(&key);
        self.key = KeySource::Given(key);
        self
    }

    /// The variable the seat's key is read from (`None` when it needs none,
    /// or the key was given with [`CliSeat::with_key`]).
    pub fn key_env(&self) -> Option<&str> {
        match &self.key {
            KeySource::Var(var) => Some(var),
            KeySource::None | KeySource::Given(_) => None,
        }
    }

    /// The key for a request: `Ok(None)` when none is needed; a local
    /// server without a key gets a placeholder.
    fn key(&self) -> Result<Option<Secret>, SeatError> {
        let var = match &self.key {
            KeySource::Var(var) => var,
            KeySource::None => return Ok(None),
            KeySource::Given(secret) => return Ok(Some(secret.clone())),
        };
        match crate::secret::read_key(var) {
            Ok(secret) => Ok(Some(secret)),
            Err(_) if self.base_url.as_deref().is_some_and(is_loopback) => {
                Ok(Some(Secret::new(var.clone(), PLACEHOLDER_KEY)))
            }
            Err(_) => Err(SeatError::Engine(format!(
                "{}: no API key: the environment variable `{var}` is not set; export it, name another variable with `api_key_env`, or set `api_key_env = \"\"` if the {} CLI authenticates by itself",
                self.engine, self.engine
            ))),
        }
    }

    /// The command line, environment and files for one request, without
    /// spawning anything. `home` is the request's private home directory.
    fn plan(&self, request: &Request, home: &Path, key: Option<&Secret>) -> Plan {
        let inv = Invocation {
            model: self.model.as_deref(),
            prompt: &request.prompt,
            prompt_on_stdin: request.prompt.len() > PROMPT_ARG_LIMIT,
            access: request.access,
            workspace: &request.workspace,
            home,
            base_url: self.base_url.as_deref(),
            key_var: key.map(Secret::source),
            price: self.price,
        };
        let mut plan = match self.engine {
            Engine::Claude => claude::plan(&inv),
            Engine::Codex => codex::plan(&inv),
            Engine::Opencode => opencode::plan(&inv),
            _ => gemini::plan(&inv),
        };
        // The key under the variable the CLI reads; it never enters a file.
        if let Some(key) = key {
            let var = match self.engine {
                Engine::Claude => claude::key_var(key.source()),
                Engine::Gemini => gemini::KEY_VAR,
                _ => key.source(),
            };
            plan.secret_env = Some((var.to_owned(), key.clone()));
        }
        plan
    }

    /// The spawn request for a plan.
    fn spawn_spec(&self, request: &Request, home: &Path, plan: &Plan) -> SpawnSpec {
        let mut spec = SpawnSpec::new(&self.executable, &request.workspace)
            .inherit(INHERIT.iter().copied())
            .args(plan.args.iter().map(OsString::from))
            .env("HOME", home.join("home"))
            .env("TMPDIR", home.join("tmp"))
            .env("NO_COLOR", "1")
            .env("TERM", "dumb")
            .timeout(request.timeout)
            .limit(OutputLimit::new(OUTPUT_KEEP, OUTPUT_KEEP));
        for (name, value) in &plan.env {
            spec = spec.env(name, value);
        }
        if let Some((var, key)) = &plan.secret_env {
            spec = spec.env(var, key.expose());
        }
        for (name, value) in &self.env {
            spec = spec.env(name, value);
        }
        spec
    }

    /// Wraps `spec` so the CLI reads the prompt file on stdin: `/bin/sh -c
    /// 'exec "$0" "$@" < "$GAVEL_PROMPT_FILE"' CLI ARGS...`. The CLI is
    /// resolved first, so a missing binary is reported as such.
    fn via_stdin(spec: SpawnSpec, prompt_file: &Path) -> Result<SpawnSpec, SpawnError> {
        let exe = gavel_process::locate(&spec)?;
        let mut wrapped = SpawnSpec::new("/bin/sh", &spec.cwd)
            .arg("-c")
            .arg(STDIN_WRAPPER)
            .arg(exe)
            .args(spec.args)
            .inherit(spec.inherit)
            .env("GAVEL_PROMPT_FILE", prompt_file)
            .limit(spec.limit)
            .grace(spec.grace);
        wrapped.env.splice(0..0, spec.env);
        wrapped.timeout = spec.timeout;
        Ok(wrapped)
    }

    async fn run(&self, request: &Request) -> Result<Reply, SeatError> {
        let started = Instant::now();
        let key = self.key()?;
        let redactor = Redactor::new(key.clone());
        let scratch =
            tempfile::Builder::new().prefix(&format!("gavel-{}-", self.engine)).tempdir().map_err(|e| {
                SeatError::Engine(format!("{}: cannot create a temporary home: {e}", self.engine))
            })?;
        let plan = self.plan(request, scratch.path(), key.as_ref());
        prepare_home(scratch.path(), &plan)
            .map_err(|e| SeatError::Engine(format!("{}: cannot write its settings: {e}", self.engine)))?;
        if self.engine == Engine::Opencode {
            opencode::link_plugin(&scratch.path().join("home"));
        }

        let mut spec = self.spawn_spec(request, scratch.path(), &plan);
        if request.prompt.len() > PROMPT_ARG_LIMIT {
            let file = scratch.path().join("prompt.txt");
            std::fs::write(&file, &request.prompt).map_err(|e| {
                SeatError::Engine(format!("{}: cannot write the prompt file: {e}", self.engine))
            })?;
            spec = Self::via_stdin(spec, &file).map_err(|e| self.spawn_failed(&e, &redactor))?;
        }
        // A CLI edits files with its own tools: watch the workspace around a
        // request that may write, and undo what lands outside its `writes`.
        // One such request at a time per workspace (the turn is held until
        // the comparison ends), so a change is blamed on the request that
        // made it; helpers it left in the background are killed before the
        // comparison, so none writes after it.
        let watch = match request.access {
            Access::MayWrite => {
                spec = spec.kill_group_on_exit();
                Some(self.snapshot(request).await?)
            }
            Access::ReadOnly => None,
        };
        let finished = gavel_process::run(spec).await.map_err(|e| self.spawn_failed(&e, &redactor))?;
        let outcome = self.judge(&finished, request, key.as_ref().map(Secret::source), &redactor);
        drop(scratch);
        if let Some((guard, turn)) = watch {
            let undone = self.undo_outside_writes(guard, request, &outcome).await;
            drop(turn);
            undone.map_err(|e| match e {
                SeatError::Engine(message) => SeatError::Engine(redactor.scrub(&message)),
                other => other,
            })?;
        }
        outcome.map(|mut reply| {
            reply.duration = started.elapsed();
            reply
        })
    }

    /// Refuses a request whose `writes` lead somewhere no seat may write
    /// (out of the workspace through a symbolic link, into `.gavel/` or
    /// `.git/`, through a link to a file it may not write) or name a hard
    /// link, before the CLI starts: the snapshot compares the workspace
    /// only, so a file written through a link out of it (or through a hard
    /// link's other name) would go unseen.
    fn check_writes(&self, request: &Request) -> Result<(), SeatError> {
        let workspace = gavel_fs::write::Workspace::new(&request.workspace)
            .map_err(|e| SeatError::Engine(format!("{}: {e}; nothing was run", self.engine)))?;
        let allowed: Vec<String> =
            request.writes.iter().filter_map(|w| gavel_fs::write::normalise(w).ok()).collect();
        let refused = |what: String| {
            SeatError::Refused(format!(
                "{}: {what}; this request may write {}; the CLI was not started",
                self.engine,
                crate::written::list(&request.writes)
            ))
        };
        for path in &request.writes {
            let target = workspace.check(path).map_err(|e| {
                let message = format!("{}: {e}; the CLI was not started", self.engine);
                if e.is_refusal() { SeatError::Refused(message) } else { SeatError::Engine(message) }
            })?;
            let normal = gavel_fs::write::normalise(path).unwrap_or_else(|_| path.clone());
            if let Some(lands) = crate::written::lands_elsewhere(&workspace, &target, &normal, &allowed) {
                return Err(refused(format!(
                    "`{path}` leads through a symbolic link to `{lands}`, a file this request may not write; remove the link or add `{lands}` to `writes`"
                )));
            }
            let hard_link = target
                .path()
                .symlink_metadata()
                .is_ok_and(|meta| meta.is_file() && std::os::unix::fs::MetadataExt::nlink(&meta) > 1);
            if hard_link {
                return Err(refused(format!(
                    "`{path}` is a hard link: writing it would change another file too; replace it with a copy (`cp --remove-destination`) or leave it out of `writes`"
                )));
            }
        }
        Ok(())
    }

    /// The request's turn in its workspace, [`Self::check_writes`], then a
    /// snapshot of the workspace, taken off the async threads. May-write
    /// requests in one workspace (by its canonical path) take turns in this
    /// process: two CLIs at once could not be told apart by their changes.
    async fn snapshot(
        &self,
        request: &Request,
    ) -> Result<(Guard, tokio::sync::OwnedMutexGuard<()>), SeatError> {
        type Turns = std::sync::Mutex<BTreeMap<PathBuf, std::sync::Arc<tokio::sync::Mutex<()>>>>;
        static TURNS: std::sync::OnceLock<Turns> = std::sync::OnceLock::new();
        let key = request.workspace.canonicalize().unwrap_or_else(|_| request.workspace.clone());
        let lock = {
            let mut turns =
                TURNS.get_or_init(Turns::default).lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            // Drop the turns no request holds or waits for, so the map stays small.
            turns.retain(|_, lock| std::sync::Arc::strong_count(lock) > 1);
            std::sync::Arc::clone(turns.entry(key).or_default())
        };
        let turn = lock.lock_owned().await;
        self.check_writes(request)?;
        let (workspace, writes) = (request.workspace.clone(), request.writes.clone());
        let taken =
            tokio::task::spawn_blocking(move || Guard::take(&workspace, &writes, Budget::DEFAULT)).await;
        match taken {
            Ok(Ok(guard)) => Ok((guard, turn)),
            Ok(Err(e)) => Err(SeatError::Engine(format!(
                "{}: cannot take a snapshot of the workspace {} before the request, so its changes could not be checked; nothing was run: {e}",
                self.engine,
                request.workspace.display()
            ))),
            Err(e) => Err(SeatError::Engine(format!("{}: the workspace snapshot failed: {e}", self.engine))),
        }
    }

    /// Compares the workspace with `guard`'s snapshot; a change outside the
    /// request's `writes` is undone and the request fails with an engine
    /// error naming every file (the seat's answer is discarded).
    async fn undo_outside_writes(
        &self,
        guard: Guard,
        request: &Request,
        outcome: &Result<Reply, SeatError>,
    ) -> Result<(), SeatError> {
        let engine = self.engine;
        let report = match tokio::task::spawn_blocking(move || guard.finish()).await {
            Ok(Ok(report)) => report,
            Ok(Err(e)) => {
                return Err(SeatError::Engine(format!(
                    "{engine}: cannot compare the workspace {} with its state before the request: {e}",
                    request.workspace.display()
                )));
            }
            Err(e) => {
                return Err(SeatError::Engine(format!("{engine}: the workspace comparison failed: {e}")));
            }
        };
        if report.is_clean() {
            return Ok(());
        }
        let also = match outcome {
            Ok(_) => String::new(),
            Err(e) => format!(" (the seat had also failed: {e})"),
        };
        Err(SeatError::Engine(format!(
            "{engine}: the seat changed files outside those this request may write ({}); its answer was discarded and gavel undid what it could: {}{also}",
            crate::written::list(&request.writes),
            report.describe()
        )))
    }

    fn spawn_failed(&self, err: &SpawnError, redactor: &Redactor) -> SeatError {
        let hint = match err {
            SpawnError::NotFound { .. } | SpawnError::PermissionDenied { .. } => {
                format!(
                    "; install it ({}) or set the seat's `executable`",
                    install_hint(self.engine).unwrap_or("")
                )
            }
            _ => String::new(),
        };
        SeatError::Engine(redactor.scrub(&format!("{}: {err}{hint}", self.engine)))
    }

    /// Turns a finished run into a reply or an error: error payloads first,
    /// then denied tools, then the exit code, then a missing answer.
    fn judge(
        &self,
        finished: &Finished,
        request: &Request,
        key_var: Option<&str>,
        redactor: &Redactor,
    ) -> Result<Reply, SeatError> {
        if let Outcome::TimedOut { .. } = finished.outcome {
            return Err(SeatError::Timeout(request.timeout));
        }
        let stdout = finished.stdout.to_string_lossy();
        let stderr = finished.stderr.to_string_lossy();
        let parsed = match self.engine {
            Engine::Claude => claude::parse(&stdout, &stderr),
            Engine::Codex => codex::parse(&stdout, &stderr),
            Engine::Opencode => opencode::parse(&stdout, &stderr),
            _ => gemini::parse(&stdout, &stderr, request.access),
        };
        let engine = self.engine;
        // The tail starts at a cut: a key split by it is scrubbed too.
        let tail = || {
            stderr_tail(&crate::secret::scrub_cut(&finished.stderr.tail_text(STDERR_QUOTE * 2), true, false))
        };

        if let Some(error) = &parsed.error {
            let msg = describe_error(engine, error, key_var, self.base_url.as_deref());
            return Err(SeatError::Engine(redactor.scrub(&msg)));
        }
        if !parsed.denials.is_empty() {
            let what = parsed.denials.join("; ");
            let msg = match request.access {
                Access::ReadOnly => format!(
                    "{engine}: the seat tried to change files or run commands in a read-only `{}` request and was denied ({what}); its answer was not used",
                    request.kind
                ),
                Access::MayWrite => format!(
                    "{engine}: a tool call was denied ({what}): builders may edit files inside the workspace only, and run no shell outside a sandbox; its answer was not used"
                ),
            };
            return Err(SeatError::Refused(redactor.scrub(&msg)));
        }
        match finished.outcome {
            Outcome::Exited(0) => {}
            other => {
                let mut msg = format!("{engine} {other}");
                let tail = tail();
                if !tail.is_empty() {
                    let _ = write!(msg, ": {tail}");
                }
                return Err(SeatError::Engine(redactor.scrub(&msg)));
            }
        }
        let Some(text) = parsed.text.filter(|t| !t.trim().is_empty()) else {
            let mut msg = format!("{engine}: the CLI exited 0 but its output held no final answer");
            let tail = tail();
            if !tail.is_empty() {
                let _ = write!(msg, "; stderr: {tail}");
            }
            return Err(SeatError::Engine(redactor.scrub(&msg)));
        };

        let cost = match self.price {
            // An explicit price in the seat wins over what the CLI computed.
            Some(_) => crate::price::cost_usd(
                self.price,
                self.model.as_deref().unwrap_or(""),
                parsed.input_tokens,
                parsed.output_tokens,
            ),
            None => parsed.cost_usd.filter(|c| *c > 0.0).or_else(|| {
                crate::price::cost_usd(
                    None,
                    self.model.as_deref().unwrap_or(""),
                    parsed.input_tokens,
                    parsed.output_tokens,
                )
            }),
        };
        Ok(Reply {
            text: redactor.scrub(&text),
            usage: Usage {
                input_tokens: parsed.input_tokens,
                output_tokens: parsed.output_tokens,
                cost_usd: cost.or(parsed.cost_usd).unwrap_or(0.0),
            },
            duration: finished.duration,
            session: parsed.session.map(|id| redactor.scrub(&id)),
        })
    }
}

impl Seat for CliSeat {
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
        Box::pin(self.run(request))
    }
}

/// What one request asks of an engine's command builder.
#[derive(Debug, Clone, Copy)]
struct Invocation<'a> {
    model: Option<&'a str>,
    prompt: &'a str,
    /// The prompt comes on stdin (too long for an argument): leave it out
    /// of the arguments.
    prompt_on_stdin: bool,
    access: Access,
    workspace: &'a Path,
    /// The request's scratch directory: `home/` and `tmp/` live in it.
    home: &'a Path,
    base_url: Option<&'a str>,
    /// The variable the key was read from (`None`: no key is passed).
    key_var: Option<&'a str>,
    price: Option<Price>,
}

/// An engine's command line for one request.
#[derive(Debug, Clone, Default)]
struct Plan {
    /// Arguments after the program name.
    args: Vec<String>,
    /// Environment the engine needs (no secrets).
    env: Vec<(String, String)>,
    /// Files to write, relative to the scratch directory.
    files: Vec<(PathBuf, String)>,
    /// The key, and the variable the CLI reads it from.
    secret_env: Option<(String, Secret)>,
}

/// Creates `home/`, `tmp/` and the plan's files under `scratch`.
fn prepare_home(scratch: &Path, plan: &Plan) -> std::io::Result<()> {
    std::fs::create_dir_all(scratch.join("home"))?;
    std::fs::create_dir_all(scratch.join("tmp"))?;
    for (rel, contents) in &plan.files {
        let path = scratch.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, contents)?;
    }
    Ok(())
}

/// What an engine's parser read from a CLI's output.
#[derive(Debug, Clone, Default, PartialEq)]
struct Parsed {
    /// The final answer text.
    text: Option<String>,
    /// Prompt tokens, cached ones included.
    input_tokens: u64,
    /// Completion tokens (reasoning included where reported apart).
    output_tokens: u64,
    /// The cost the CLI reported, if any.
    cost_usd: Option<f64>,
    /// The session or thread id.
    session: Option<String>,
    /// An error payload.
    error: Option<CliError>,
    /// Denied tool calls, described briefly.
    denials: Vec<String>,
}

/// An error payload from a CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CliError {
    /// The HTTP status of the model API, when known.
    status: Option<u16>,
    /// What the CLI said.
    message: String,
}

impl CliError {
    fn new(status: Option<u16>, message: impl Into<String>) -> Self {
        let message = message.into();
        let status = status.or_else(|| status_in(&message));
        Self { status, message }
    }
}

/// A short, actionable message for an error payload.
fn describe_error(engine: Engine, error: &CliError, key_var: Option<&str>, base_url: Option<&str>) -> String {
    let message = shorten(error.message.trim(), 400);
    let key = key_var.map(|v| format!(" in ${v}")).unwrap_or_default();
    match error.status {
        Some(status @ (401 | 403)) => format!(
            "{engine}: the API refused the key{key} ({status}): {message}; check the key, or name the right variable with `api_key_env`"
        ),
        Some(429) => {
            format!("{engine}: the API is rate limiting this seat (429): {message}; try again later")
        }
        Some(404) => format!(
            "{engine}: the API answered 404: {message}; check the seat's `model`{}",
            if base_url.is_some() { " and `base_url`" } else { "" }
        ),
        Some(status @ 500..=599) => {
            format!("{engine}: the model API failed ({status}): {message}; usually temporary, try again")
        }
        Some(status) => format!("{engine}: the API answered {status}: {message}"),
        None => format!("{engine}: {message}"),
    }
}

/// Finds an HTTP status in a message such as "unexpected status 401
/// Unauthorized" or "API Error: 500 boom".
fn status_in(message: &str) -> Option<u16> {
    let lower = message.to_ascii_lowercase();
    for marker in ["status ", "status: ", "status code ", "api error: "] {
        if let Some(pos) = lower.find(marker) {
            let rest = &lower[pos + marker.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if digits.len() == 3 {
                return digits.parse().ok().filter(|s| (100..600).contains(s));
            }
        }
    }
    None
}

/// The last lines of stderr worth quoting: without blank lines and
/// stack-trace frames, at most [`STDERR_QUOTE`] bytes.
fn stderr_tail(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("at "))
        .collect();
    let mut out = String::new();
    for line in lines.iter().rev() {
        if out.len() + line.len() > STDERR_QUOTE {
            if out.is_empty() {
                // One long last line (an error with a JSON body): quote its start
                // rather than nothing.
                out = shorten(line.trim_start(), STDERR_QUOTE);
            }
            break;
        }
        out = if out.is_empty() { (*line).to_owned() } else { format!("{line} | {out}") };
    }
    out
}

/// `text` cut to about `max` bytes on a character boundary.
fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Whether `name` can be an environment variable name.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Checks a `base_url` and returns it without a trailing slash.
fn check_base_url(url: &str) -> Result<String, String> {
    let url = url.trim().trim_end_matches('/');
    let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
    // Credentials in the URL would land in the CLI's config file (codex,
    // opencode) and in this very message: refuse them without echoing.
    if rest.is_some_and(|r| r.split('/').next().is_some_and(|authority| authority.contains('@'))) {
        return Err("`base_url` must not carry credentials (`user:key@`); put the key in an environment variable and name it in `api_key_env`".to_owned());
    }
    match rest {
        Some(rest) if !rest.is_empty() && !rest.starts_with('/') && !url.contains(char::is_whitespace) => {
            Ok(url.to_owned())
        }
        _ => Err(format!(
            "`{url}` is not an http(s) URL; write where the model API lives, e.g. base_url = \"http://127.0.0.1:8080\""
        )),
    }
}

/// The host of an http(s) URL.
fn url_host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    authority.split(':').next().unwrap_or(authority)
}

/// Whether a URL points at this machine.
fn is_loopback(url: &str) -> bool {
    let host = url_host(url);
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// What `gavel doctor` found out about one agent CLI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// The engine.
    pub engine: Engine,
    /// The program looked for (a path, or a name on `PATH`).
    pub program: String,
    /// Where it was found.
    pub path: Option<PathBuf>,
    /// The first line `--version` printed.
    pub version: Option<String>,
    /// What is wrong and how to fix it, when something is.
    pub problem: Option<String>,
}

impl Probe {
    /// Whether the binary was found and answered `--version`.
    pub fn ok(&self) -> bool {
        self.problem.is_none()
    }
}

/// How long `--version` may take (gemini's takes a few seconds).
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);

/// Finds an agent CLI's binary (`executable`, or the engine's default name
/// on `PATH`) and runs its `--version` with a short timeout, in a throwaway
/// home so nothing is written to the user's. Never fails: what went wrong is
/// in [`Probe::problem`], with a hint.
pub async fn probe(engine: Engine, executable: Option<&str>) -> Probe {
    let program =
        executable.map_or_else(|| default_executable(engine).unwrap_or("").to_owned(), str::to_owned);
    let mut probe = Probe { engine, program: program.clone(), path: None, version: None, problem: None };
    if default_executable(engine).is_none() {
        probe.problem = Some(format!("`{engine}` is not an agent CLI engine"));
        return probe;
    }
    let Ok(scratch) = tempfile::Builder::new().prefix("gavel-probe-").tempdir() else {
        probe.problem = Some("cannot create a temporary directory".to_owned());
        return probe;
    };
    let spec = SpawnSpec::new(&program, scratch.path())
        .inherit(INHERIT.iter().copied())
        .env("HOME", scratch.path())
        .env("TMPDIR", scratch.path())
        .env("NO_COLOR", "1")
        .arg("--version")
        .timeout(VERSION_TIMEOUT);
    let install = install_hint(engine).unwrap_or("");
    match gavel_process::locate(&spec) {
        Ok(path) => probe.path = Some(path),
        Err(err) => {
            probe.problem = Some(format!("{err}; install it ({install}) or set the seat's `executable`"));
            return probe;
        }
    }
    match gavel_process::run(spec).await {
        Ok(finished) if finished.success() => {
            let out = finished.stdout.to_string_lossy();
            probe.version = out.lines().map(str::trim).find(|l| !l.is_empty()).map(str::to_owned);
            if probe.version.is_none() {
                probe.problem = Some("`--version` printed nothing".to_owned());
            }
        }
        Ok(finished) => {
            probe.problem = Some(format!(
                "`{program} --version` {}: {}; reinstall it ({install})",
                finished.outcome,
                stderr_tail(&finished.stderr.tail_text(STDERR_QUOTE))
            ));
        }
        Err(err) => probe.problem = Some(format!("{err}; reinstall it ({install})")),
    }
    probe
}

#[cfg(test)]
mod tests;
