//! `gavel doctor [WORKFLOW]`: what this machine can run, and whether the
//! seats of a workflow answer.
//!
//! Without a workflow it lists every engine: each agent CLI's binary and the
//! first line of its `--version` (all probed at the same time), or what is
//! wrong and how to fix it; each HTTP engine's default endpoint and whether
//! its default key variable is set (never its value); the script engine,
//! which is built in.
//!
//! With a workflow it compiles it as `gavel check` does (a bad file is a
//! located error, exit 2), then asks every seat one trivial read-only review
//! request, all at the same time, in an empty temporary workspace so nothing
//! in the user's tree can change. Each seat's line says whether it answered,
//! how long it took, its tokens and cost, and on failure the engine's error
//! and a hint (missing binary, no key, unreachable `base_url`, refused key,
//! timeout). A CLI seat whose binary cannot be found is not asked. A script
//! seat answers from turn 0 of its `[[review]]` queue; a scripted `error`
//! there is what its script says, not a failure.
//!
//! Exit codes: 0 when every seat asked answered (or there was no workflow),
//! 4 when any seat failed, 2 for invalid input. The report is the command's
//! data: aligned text on stdout, or one JSON object `{"ok", "workflow",
//! "engines", "seats"}` with `--json`; progress goes to stderr. Keys never
//! appear: engines scrub them from their errors, and only whether a
//! variable is set is shown.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use futures_util::future::join_all;
use gavel_domain::{Access, Engine, RequestKind, SeatSpec, Usage};
use gavel_record::exit;
use gavel_runtime::workflow::{SeatEntry, parse_duration};
use gavel_runtime::{RunError, Workflow};
use gavel_seats::cli::{self, CliSeat, Probe};
use gavel_seats::http::HttpSeat;
use gavel_seats::secret::read_key;
use gavel_seats::{Request, ScriptSeat, SeatError};
use serde::Serialize;

use crate::render::Style;

/// How long a seat may take to answer doctor's request, unless the seat
/// sets its own `timeout` or `--timeout` is given (the workflow's
/// `seat_timeout` applies when it is shorter).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Extra time past a seat's timeout before doctor stops waiting for it (the
/// engines enforce the timeout themselves; this only guards against one
/// that does not).
const GRACE: Duration = Duration::from_secs(5);

/// The request every seat is asked.
pub const PROMPT: &str = "This request comes from `gavel doctor` and only checks that you answer. \
Do not read, run or change anything. Reply with exactly this JSON object and nothing else:\n\
{\"decision\":\"pass\",\"findings\":[]}\n";

/// `gavel doctor [WORKFLOW]`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// A workflow whose seats to ask one short read-only request each.
    workflow: Option<PathBuf>,
    /// How long each seat may take (default: the seat's `timeout`, else 60s or the workflow's shorter `seat_timeout`).
    #[arg(long, value_name = "DURATION")]
    timeout: Option<String>,
    /// Print the report as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

/// What kind of engine a line is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    /// An agent CLI gavel spawns.
    Cli,
    /// An HTTP API.
    Http,
    /// The built-in script engine.
    Script,
}

/// Where an engine stands on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum EngineStatus {
    /// The CLI's binary was found and answered `--version`.
    Found,
    /// The CLI's binary was not found.
    Missing,
    /// The binary was found but `--version` failed.
    Broken,
    /// An HTTP engine whose default key variable is set.
    Ready,
    /// An HTTP engine whose default key variable is not set (it still works
    /// with a local server, or a seat naming another variable).
    NoKey,
    /// The script engine.
    BuiltIn,
}

impl EngineStatus {
    fn word(self) -> &'static str {
        match self {
            EngineStatus::Found => "found",
            EngineStatus::Missing => "missing",
            EngineStatus::Broken => "broken",
            EngineStatus::Ready => "ready",
            EngineStatus::NoKey => "no key",
            EngineStatus::BuiltIn => "built in",
        }
    }
}

/// One engine on this machine.
#[derive(Debug, Clone, Serialize)]
struct EngineLine {
    engine: Engine,
    kind: Kind,
    status: EngineStatus,
    /// Whether seats of this engine can run here as far as doctor can tell
    /// without asking a model.
    available: bool,
    /// The binary looked for (CLI engines).
    program: Option<String>,
    /// Where it was found.
    path: Option<String>,
    /// The first line of its `--version`.
    version: Option<String>,
    /// The version gavel's real-CLI tests pin.
    tested_version: Option<&'static str>,
    /// The default endpoint (HTTP engines).
    endpoint: Option<String>,
    /// The default key variable (HTTP engines).
    key_env: Option<String>,
    /// Whether that variable is set (its value is never shown).
    key_set: Option<bool>,
    /// What is wrong.
    problem: Option<String>,
    /// How to fix it.
    hint: Option<String>,
}

/// How a seat did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum SeatStatus {
    /// It answered.
    Ok,
    /// It gave no answer (or was not asked because it cannot run).
    Failed,
    /// A script seat: it answers from its script.
    Scripted,
}

impl SeatStatus {
    fn word(self) -> &'static str {
        match self {
            SeatStatus::Ok => "ok",
            SeatStatus::Failed => "failed",
            SeatStatus::Scripted => "scripted",
        }
    }
}

/// What went wrong with a seat, for scripts reading `--json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Problem {
    /// The CLI's binary is not there (or not executable).
    MissingBinary,
    /// The key variable is not set.
    NoKey,
    /// Nothing answered at the model API's address.
    Unreachable,
    /// The API refused the key (401/403).
    KeyRefused,
    /// The API is rate limiting (429).
    RateLimited,
    /// The API does not know the endpoint or model (404).
    NotFound,
    /// The API failed (5xx).
    ServerError,
    /// No answer within the timeout.
    Timeout,
    /// The seat tried something a read-only request does not allow.
    Refused,
    /// Any other engine error.
    Engine,
}

/// One seat's result.
#[derive(Debug, Clone, Serialize)]
struct SeatLine {
    seat: String,
    engine: Engine,
    model: Option<String>,
    family: String,
    status: SeatStatus,
    /// Whether the seat is fine (answered, or scripted).
    ok: bool,
    /// Whether a request was sent.
    asked: bool,
    /// How long the request took, in milliseconds.
    ms: Option<u64>,
    /// Tokens and cost of the request.
    usage: Option<Usage>,
    /// Whether the answer held the JSON object asked for.
    replied_as_asked: Option<bool>,
    /// `false` when the cost is 0 only because no price is known for the model.
    price_known: Option<bool>,
    /// The binary a CLI seat runs, where it is, and its version.
    program: Option<String>,
    path: Option<String>,
    version: Option<String>,
    /// The endpoint an HTTP seat posts to.
    endpoint: Option<String>,
    /// The variable the key is read from, and whether it is set.
    key_env: Option<String>,
    key_set: Option<bool>,
    /// The engine's error.
    error: Option<String>,
    problem: Option<Problem>,
    hint: Option<String>,
    /// Anything else worth knowing.
    note: Option<String>,
}

/// The whole report.
#[derive(Debug, Serialize)]
struct Report {
    /// Every seat asked answered (true without a workflow).
    ok: bool,
    /// The workflow file, when one was given.
    workflow: Option<String>,
    engines: Vec<EngineLine>,
    seats: Vec<SeatLine>,
}

/// Runs `gavel doctor`.
pub fn doctor(args: &DoctorArgs, style: &Style) -> Result<i32, RunError> {
    let timeout = match args.timeout.as_deref() {
        None => None,
        Some(text) => Some(parse_duration(text).map_err(|why| {
            RunError::Refused(format!(
                "`--timeout {text}` is not a duration ({why}); write e.g. --timeout 90s or --timeout 2m"
            ))
        })?),
    };
    let workflow = args.workflow.as_deref().map(Workflow::load).transpose()?;
    let workspace = match tempfile::Builder::new().prefix("gavel-doctor-").tempdir() {
        Ok(dir) => dir,
        Err(err) => {
            say_error(&format!("cannot create an empty temporary workspace for the seats: {err}"));
            return Ok(exit::INTERNAL);
        }
    };
    let report = crate::runtime()?.block_on(examine(workflow.as_ref(), timeout, workspace.path(), style));
    drop(workspace);

    if args.json {
        crate::print_json(&serde_json::to_value(&report).unwrap_or_default());
    } else {
        let paint = Paint::detect();
        let mut out = std::io::stdout().lock();
        let text = human(&report, workflow.as_ref(), paint);
        let _ = write!(out, "{}", gavel_seats::secret::scrub(&text));
    }
    if workflow.is_none() {
        style.note("to ask a workflow's seats whether they answer: gavel doctor WORKFLOW.toml");
    }
    Ok(if report.ok { exit::PASS } else { exit::INTERNAL })
}

/// An error of gavel's own (not the user's input) on stderr.
fn say_error(message: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "error: {message}");
}

/// Probes every CLI, then asks every seat.
async fn examine(
    workflow: Option<&Workflow>,
    timeout: Option<Duration>,
    workspace: &Path,
    style: &Style,
) -> Report {
    // The binaries to probe: each CLI engine's default name, and each CLI
    // seat's own `executable`, once each.
    let mut programs: BTreeMap<(usize, String), Engine> = BTreeMap::new();
    let order = |engine: Engine| Engine::ALL.iter().position(|e| *e == engine).unwrap_or(usize::MAX);
    for engine in Engine::ALL.into_iter().filter(|e| e.is_cli()) {
        if let Some(name) = cli::default_executable(engine) {
            programs.insert((order(engine), name.to_owned()), engine);
        }
    }
    let seats: Vec<SeatFacts> = workflow
        .map(|w| w.seats.iter().map(|(name, entry)| SeatFacts::of(name, entry, &w.dir)).collect())
        .unwrap_or_default();
    for facts in &seats {
        if let Some(program) = &facts.program {
            programs.insert((order(facts.engine), program.clone()), facts.engine);
        }
    }
    style.note(&format!(
        "doctor: looking for the agent CLIs ({})",
        programs.keys().map(|(_, p)| p.as_str()).collect::<Vec<_>>().join(", ")
    ));
    let probes: HashMap<(Engine, String), Probe> =
        join_all(programs.iter().map(|((_, program), engine)| async move {
            ((*engine, program.clone()), cli::probe(*engine, Some(program)).await)
        }))
        .await
        .into_iter()
        .collect();

    let engines = Engine::ALL.into_iter().map(|engine| engine_line(engine, &probes)).collect();

    let seat_lines = match workflow {
        None => Vec::new(),
        Some(workflow) => {
            style.note(&format!(
                "doctor: asking {} seat{} of `{}` one short read-only request each, at the same time",
                seats.len(),
                if seats.len() == 1 { "" } else { "s" },
                workflow.name
            ));
            join_all(seats.iter().map(|facts| {
                let limit = timeout.unwrap_or_else(|| facts.timeout(workflow));
                ask(facts, &probes, workspace, limit, style)
            }))
            .await
        }
    };
    let ok = seat_lines.iter().all(|s| s.ok);
    Report { ok, workflow: workflow.map(|w| w.file.display().to_string()), engines, seats: seat_lines }
}

/// The line for one engine.
fn engine_line(engine: Engine, probes: &HashMap<(Engine, String), Probe>) -> EngineLine {
    let mut line = EngineLine {
        engine,
        kind: Kind::Script,
        status: EngineStatus::BuiltIn,
        available: true,
        program: None,
        path: None,
        version: None,
        tested_version: cli::tested_version(engine),
        endpoint: None,
        key_env: None,
        key_set: None,
        problem: None,
        hint: None,
    };
    match engine {
        Engine::Claude | Engine::Codex | Engine::Opencode | Engine::Gemini => {
            line.kind = Kind::Cli;
            let program = cli::default_executable(engine).unwrap_or_default().to_owned();
            let Some(probe) = probes.get(&(engine, program.clone())) else {
                line.status = EngineStatus::Missing;
                line.available = false;
                line.program = Some(program);
                return line;
            };
            line.program = Some(program);
            line.path = probe.path.as_ref().map(|p| p.display().to_string());
            line.version.clone_from(&probe.version);
            line.available = probe.ok();
            line.status = match (&probe.path, probe.ok()) {
                (None, _) => EngineStatus::Missing,
                (Some(_), false) => EngineStatus::Broken,
                (Some(_), true) => EngineStatus::Found,
            };
            if let Some(problem) = &probe.problem {
                line.problem = Some(problem_text(problem));
                line.hint = Some(install_advice(engine, probe.path.is_some()));
            }
        }
        Engine::Anthropic | Engine::Openai => {
            line.kind = Kind::Http;
            // What a seat naming no `base_url` and no `api_key_env` uses.
            let spec = bare_spec(engine, Some("gavel-doctor"));
            if let Ok(seat) = HttpSeat::from_spec("doctor", &spec, Path::new(".")) {
                line.endpoint = Some(seat.endpoint().to_owned());
                line.key_env = seat.key_env().map(str::to_owned);
            }
            let set = line.key_env.as_deref().is_some_and(|var| read_key(var).is_ok());
            line.key_set = Some(set);
            if set {
                line.status = EngineStatus::Ready;
            } else {
                line.status = EngineStatus::NoKey;
                let var = line.key_env.clone().unwrap_or_default();
                line.hint = Some(format!(
                    "export {var}=… to use the hosted API; a seat may name another variable with `api_key_env`, and a `base_url` on loopback needs no key"
                ));
            }
        }
        Engine::Script => {}
    }
    line
}

/// A seat spec with only `engine` (and `model`) set.
fn bare_spec(engine: Engine, model: Option<&str>) -> SeatSpec {
    SeatSpec { model: model.map(str::to_owned), ..SeatSpec::new(engine) }
}

/// A probe's problem without the install hint it ends with (doctor gives
/// its own) and without the throwaway folder it ran in.
fn problem_text(problem: &str) -> String {
    let mut text = problem;
    for marker in ["; install it (", "; reinstall it ("] {
        if let Some((head, _)) = text.split_once(marker) {
            text = head;
        }
    }
    match text.split_once("; cwd ") {
        Some((head, tail)) => match tail.split_once(')') {
            Some((_, rest)) => format!("{head}){rest}"),
            None => head.to_owned(),
        },
        None => text.to_owned(),
    }
}

/// How to get an agent CLI working.
fn install_advice(engine: Engine, found: bool) -> String {
    let install = cli::install_hint(engine).unwrap_or_default();
    let tested =
        cli::tested_version(engine).map(|v| format!(" (gavel is tested with {v})")).unwrap_or_default();
    if found {
        format!("reinstall it: {install}{tested}")
    } else {
        format!("install it: {install}{tested}; or set the seat's `executable` to the binary's path")
    }
}

/// What doctor knows about a seat before asking it.
#[derive(Debug)]
struct SeatFacts<'w> {
    name: &'w str,
    entry: &'w SeatEntry,
    engine: Engine,
    /// A CLI seat's binary (its `executable`, resolved, or the default name).
    program: Option<String>,
    /// An HTTP seat's endpoint.
    endpoint: Option<String>,
    /// The variable the key is read from.
    key_env: Option<String>,
    /// A script seat's queues.
    script_queues: Option<Vec<RequestKind>>,
}

impl<'w> SeatFacts<'w> {
    fn of(name: &'w str, entry: &'w SeatEntry, dir: &Path) -> Self {
        let engine = entry.spec.engine;
        let mut facts = SeatFacts {
            name,
            entry,
            engine,
            program: None,
            endpoint: None,
            key_env: None,
            script_queues: None,
        };
        match engine {
            Engine::Claude | Engine::Codex | Engine::Opencode | Engine::Gemini => {
                if let Ok(seat) = CliSeat::from_spec(name, &entry.spec, dir) {
                    facts.program = Some(seat.executable().to_owned());
                    facts.key_env = seat.key_env().map(str::to_owned);
                }
            }
            Engine::Anthropic | Engine::Openai => {
                if let Ok(seat) = HttpSeat::from_spec(name, &entry.spec, dir) {
                    facts.endpoint = Some(seat.endpoint().to_owned());
                    facts.key_env = seat.key_env().map(str::to_owned);
                }
            }
            Engine::Script => {
                if let Ok(seat) = ScriptSeat::from_spec(name, &entry.spec, dir) {
                    facts.script_queues = Some(seat.script().queues.keys().copied().collect());
                }
            }
        }
        facts
    }

    /// The seat's own `timeout`, else the shorter of doctor's default and
    /// the workflow's `seat_timeout`.
    fn timeout(&self, workflow: &Workflow) -> Duration {
        self.entry
            .spec
            .timeout
            .as_deref()
            .and_then(|t| parse_duration(t).ok())
            .unwrap_or_else(|| DEFAULT_TIMEOUT.min(workflow.options.seat_timeout))
    }

    fn blank_line(&self) -> SeatLine {
        SeatLine {
            seat: self.name.to_owned(),
            engine: self.engine,
            model: self.entry.spec.model.clone(),
            family: self.entry.family.as_str().to_owned(),
            status: SeatStatus::Failed,
            ok: false,
            asked: false,
            ms: None,
            usage: None,
            replied_as_asked: None,
            price_known: None,
            program: self.program.clone(),
            path: None,
            version: None,
            endpoint: self.endpoint.clone(),
            key_env: self.key_env.clone(),
            key_set: self.key_env.as_deref().map(|var| read_key(var).is_ok()),
            error: None,
            problem: None,
            hint: None,
            note: None,
        }
    }
}

/// Asks one seat, or says why it was not asked.
async fn ask(
    facts: &SeatFacts<'_>,
    probes: &HashMap<(Engine, String), Probe>,
    workspace: &Path,
    timeout: Duration,
    style: &Style,
) -> SeatLine {
    let mut line = facts.blank_line();
    let mut notes: Vec<String> = Vec::new();

    if let Some(program) = &facts.program
        && let Some(probe) = probes.get(&(facts.engine, program.clone()))
    {
        line.path = probe.path.as_ref().map(|p| p.display().to_string());
        line.version.clone_from(&probe.version);
        match (&probe.path, &probe.problem) {
            (None, Some(problem)) => {
                line.error = Some(problem_text(problem));
                line.problem = Some(Problem::MissingBinary);
                line.hint = Some(install_advice(facts.engine, false));
                style.note(&format!("  {}: not asked: its binary `{program}` was not found", facts.name));
                return line;
            }
            (Some(_), Some(problem)) => {
                notes.push(format!("`--version` failed: {}", problem_text(problem)));
            }
            _ => {}
        }
        if let (Some(version), Some(tested)) = (&probe.version, cli::tested_version(facts.engine))
            && !version.contains(tested)
        {
            notes.push(format!("gavel is tested with {} {tested}", facts.engine));
        }
    }
    if let Some(queues) = &facts.script_queues
        && !queues.contains(&RequestKind::Review)
    {
        line.status = SeatStatus::Scripted;
        line.ok = true;
        let names: Vec<String> = queues.iter().map(ToString::to_string).collect();
        line.note = Some(format!(
            "not asked: its script has no [[review]] turns (it answers {})",
            if names.is_empty() { "nothing".to_owned() } else { names.join(", ") }
        ));
        style.note(&format!("  {}: scripted, not asked", facts.name));
        return line;
    }

    let request = Request {
        kind: RequestKind::Review,
        prompt: PROMPT.to_owned(),
        workspace: workspace.to_owned(),
        access: Access::ReadOnly,
        turn: 0,
        writes: Vec::new(),
        timeout,
    };
    let started = Instant::now();
    let answer = match tokio::time::timeout(timeout + GRACE, facts.entry.seat.answer(&request)).await {
        Ok(answer) => answer.and_then(gavel_seats::Reply::checked),
        Err(_) => Err(SeatError::Timeout(timeout)),
    };
    let elapsed = started.elapsed();
    line.asked = true;
    line.ms = Some(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX));
    let scripted = facts.engine == Engine::Script;
    match answer {
        Ok(reply) => {
            line.status = if scripted { SeatStatus::Scripted } else { SeatStatus::Ok };
            line.ok = true;
            line.usage = Some(reply.usage);
            let as_asked = replied_as_asked(&reply.text);
            line.replied_as_asked = Some(as_asked);
            line.price_known = (!scripted).then(|| price_known(facts, reply.usage));
            if !as_asked {
                notes.push(format!(
                    "it answered, but not with the JSON object asked for: {}",
                    excerpt(&reply.text, 120)
                ));
            }
            if scripted {
                notes.push("answered from its script (turn 0 of [[review]])".to_owned());
            } else if line.price_known == Some(false) {
                notes.push(format!(
                    "no price is known for `{}`, so its cost counts as 0: add `price = {{ input = …, output = … }}` (USD per million tokens) to the seat",
                    facts.entry.spec.model.as_deref().unwrap_or_default()
                ));
            }
            style.note(&format!("  {}: answered in {}", facts.name, seconds(elapsed)));
        }
        Err(SeatError::Engine(message)) if scripted => {
            // A scripted `error` turn: the seat does what its script says.
            line.status = SeatStatus::Scripted;
            line.ok = true;
            notes.push(format!("its script answers the first review with an error: {message}"));
            style.note(&format!("  {}: scripted error", facts.name));
        }
        Err(error) => {
            let (problem, hint) = diagnose(&error, facts, timeout);
            line.error = Some(error.to_string());
            line.problem = Some(problem);
            line.hint = hint;
            style.note(&format!("  {}: failed after {}", facts.name, seconds(elapsed)));
        }
    }
    if !notes.is_empty() {
        line.note = Some(notes.join("; "));
    }
    line
}

/// Whether a reply's cost means something: the engine reported one, the
/// seat sets `price`, gavel's price table knows the model, or nothing was
/// used.
fn price_known(facts: &SeatFacts<'_>, usage: Usage) -> bool {
    usage.cost_usd > 0.0
        || (usage.input_tokens == 0 && usage.output_tokens == 0)
        || facts.entry.spec.price.is_some()
        || facts.entry.spec.model.as_deref().and_then(gavel_seats::price::lookup).is_some()
}

/// Whether a reply holds `{"decision":"pass", ...}` as asked.
fn replied_as_asked(text: &str) -> bool {
    gavel_domain::reply::first_json_object(text)
        .is_ok_and(|object| object.get("decision").and_then(serde_json::Value::as_str) == Some("pass"))
}

/// `text` on one line, quoted, cut to about `max` characters.
fn excerpt(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        format!("\"{flat}\"")
    } else {
        format!("\"{}…\"", flat.chars().take(max).collect::<String>())
    }
}

/// What kind of failure an engine error is, and what to do about it.
fn diagnose(error: &SeatError, facts: &SeatFacts<'_>, timeout: Duration) -> (Problem, Option<String>) {
    let engine = facts.engine;
    let base_url = facts.entry.spec.base_url.as_deref();
    let target = base_url.map(str::to_owned).or_else(|| facts.endpoint.clone());
    let message = match error {
        SeatError::Timeout(_) => {
            let retries = if matches!(engine, Engine::Opencode | Engine::Gemini) {
                format!(" ({engine} retries a failing API until it is stopped)")
            } else {
                String::new()
            };
            return (
                Problem::Timeout,
                Some(format!(
                    "no answer within {}{retries}: check that the model API{} is up, or give the seat more time with its `timeout` key (or --timeout)",
                    seconds(timeout),
                    target.map(|t| format!(" at {t}")).unwrap_or_default()
                )),
            );
        }
        SeatError::Refused(_) => {
            return (
                Problem::Refused,
                Some("a review must change nothing: the seat tried to, and gavel did not use its answer; check the seat's `env` does not loosen its CLI's permissions".to_owned()),
            );
        }
        SeatError::Engine(message) => message,
    };
    let lower = message.to_ascii_lowercase();
    if lower.contains("no api key") {
        let var =
            variable_in(message).or_else(|| facts.key_env.clone()).unwrap_or_else(|| "THE_KEY_VAR".into());
        let own_login = if engine.is_cli() {
            format!(
                "; or `api_key_env = \"\"` if the {engine} CLI signs in some other way (e.g. cloud credentials in `env`)"
            )
        } else {
            String::new()
        };
        return (
            Problem::NoKey,
            Some(format!(
                "export {var}=… in the shell that runs gavel, or name the variable that holds the key with `api_key_env`{own_login}"
            )),
        );
    }
    if lower.contains("program `") && (lower.contains("not found (") || lower.contains("not executable")) {
        return (Problem::MissingBinary, Some(install_advice(engine, false)));
    }
    let key = facts.key_env.as_deref().map(|v| format!(" in ${v}")).unwrap_or_default();
    match status_in(&lower) {
        Some(401 | 403) => {
            return (
                Problem::KeyRefused,
                Some(format!(
                    "the API refused the key{key}: check it is valid for {}, or name the right variable with `api_key_env`",
                    target.as_deref().unwrap_or("this API")
                )),
            );
        }
        Some(429) => {
            return (
                Problem::RateLimited,
                Some("the API is rate limiting this key; try again later".to_owned()),
            );
        }
        Some(404) => {
            return (
                Problem::NotFound,
                Some(format!(
                    "check the seat's `model`{}",
                    if base_url.is_some() {
                        " and `base_url` (OpenAI-compatible servers usually serve under /v1)"
                    } else {
                        ""
                    }
                )),
            );
        }
        Some(500..=599) => {
            return (
                Problem::ServerError,
                Some("the model API failed; usually temporary, try again".to_owned()),
            );
        }
        _ => {}
    }
    let unreachable = [
        "connection refused",
        "econnrefused",
        "cannot reach",
        "unable to connect",
        "connection error",
        "fetch failed",
        "dns error",
        "failed to lookup address",
        "could not resolve",
        "enotfound",
        "network is unreachable",
    ];
    if unreachable.iter().any(|needle| lower.contains(needle)) {
        let at = target.map(|t| format!(" at {t}")).unwrap_or_default();
        return (
            Problem::Unreachable,
            Some(format!(
                "nothing answered{at}: start the server (or check its host and port), or fix the seat's `base_url`"
            )),
        );
    }
    (Problem::Engine, None)
}

/// The variable named in "the environment variable `VAR` is not set".
fn variable_in(message: &str) -> Option<String> {
    let rest = message.split_once("environment variable `")?.1;
    let var = rest.split('`').next()?;
    (!var.is_empty()).then(|| var.to_owned())
}

/// The HTTP status an engine error names: "answered 401 Unauthorized",
/// "refused the key in $X (401)", "failed (503)", "rate limiting this seat
/// (429)".
fn status_in(lower: &str) -> Option<u16> {
    let three = |rest: &str| -> Option<u16> {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        (digits.len() == 3).then(|| digits.parse().ok()).flatten().filter(|s| (100..600).contains(s))
    };
    if let Some(pos) = lower.find("answered ")
        && let Some(status) = three(&lower[pos + "answered ".len()..])
    {
        return Some(status);
    }
    lower.match_indices('(').find_map(|(pos, _)| {
        let rest = &lower[pos + 1..];
        three(rest).filter(|_| rest.chars().nth(3) == Some(')'))
    })
}

/// A duration as seconds with one decimal.
fn seconds(duration: Duration) -> String {
    format!("{:.1}s", duration.as_secs_f64())
}

/// Colour for stdout: only on a terminal, never with `NO_COLOR`.
#[derive(Debug, Clone, Copy)]
struct Paint {
    color: bool,
}

impl Paint {
    fn detect() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self { color: !no_color && std::io::stdout().is_terminal() }
    }

    fn code(self, code: &str, text: &str) -> String {
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    /// A status word in its colour.
    fn status(self, word: &str) -> String {
        let code = match word {
            "ok" | "found" | "ready" | "built in" | "scripted" => "32",
            "no key" => "33",
            "failed" | "missing" | "broken" => "31;1",
            _ => return word.to_owned(),
        };
        self.code(code, word)
    }

    /// A detail line's label.
    fn label(self, label: &str) -> String {
        let code = match label {
            "error" => "31",
            "hint" => "36",
            _ => "2",
        };
        self.code(code, &format!("{label}:"))
    }
}

/// A labelled line under a table row: `("hint", "install it ...")`.
type Detail = (&'static str, String);

/// Rows of cells printed in aligned columns, with detail lines (an error, a
/// hint) indented under a row.
#[derive(Debug, Default)]
struct Table {
    /// The column holding status words (painted).
    status_column: usize,
    rows: Vec<(Vec<String>, Vec<Detail>)>,
}

impl Table {
    fn row(&mut self, cells: Vec<String>, details: Vec<Detail>) {
        self.rows.push((cells, details));
    }

    fn render(&self, paint: Paint) -> String {
        let columns = self.rows.iter().map(|(cells, _)| cells.len()).max().unwrap_or(0);
        let mut widths = vec![0; columns];
        for (cells, _) in &self.rows {
            for (i, cell) in cells.iter().enumerate() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for (index, (cells, details)) in self.rows.iter().enumerate() {
            let mut line = String::from("  ");
            for (i, cell) in cells.iter().enumerate() {
                let shown =
                    if i == self.status_column && index > 0 { paint.status(cell) } else { cell.clone() };
                line.push_str(&shown);
                if i + 1 < cells.len() {
                    let pad = widths[i].saturating_sub(cell.chars().count()) + 2;
                    line.push_str(&" ".repeat(pad));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
            for (label, text) in details {
                let _ = writeln!(out, "      {} {text}", paint.label(label));
            }
        }
        out
    }
}

/// The report as aligned text.
fn human(report: &Report, workflow: Option<&Workflow>, paint: Paint) -> String {
    let mut out = String::from("engines\n");
    let mut table = Table { status_column: 1, ..Table::default() };
    table.row(["engine", "status", "where", "version / key"].map(str::to_owned).to_vec(), Vec::new());
    for line in &report.engines {
        let (place, detail) = match line.kind {
            Kind::Cli => {
                let place = line.path.clone().unwrap_or_else(|| {
                    format!("{} (not found)", line.program.as_deref().unwrap_or_default())
                });
                let mut detail = line.version.clone().unwrap_or_else(|| "-".to_owned());
                if let (Some(version), Some(tested)) = (&line.version, line.tested_version)
                    && !version.contains(tested)
                {
                    let _ = write!(detail, " (tested: {tested})");
                }
                (place, detail)
            }
            Kind::Http => {
                let var = line.key_env.as_deref().unwrap_or("?");
                let set = if line.key_set == Some(true) { "set" } else { "not set" };
                (line.endpoint.clone().unwrap_or_default(), format!("${var} {set}"))
            }
            Kind::Script => ("-".to_owned(), "answers from script files, no model".to_owned()),
        };
        let mut details = Vec::new();
        if let Some(problem) = &line.problem {
            details.push(("problem", problem.clone()));
        }
        if let Some(hint) = &line.hint {
            details.push(("hint", hint.clone()));
        }
        table.row(vec![line.engine.to_string(), line.status.word().to_owned(), place, detail], details);
    }
    out.push_str(&table.render(paint));

    let Some(workflow) = workflow else { return out };
    let _ = writeln!(out, "\nseats of `{}` ({})", workflow.name, workflow.file.display());
    let mut table = Table { status_column: 4, ..Table::default() };
    table.row(
        ["seat", "engine", "model", "family", "result", "time", "tokens in/out", "cost"]
            .map(str::to_owned)
            .to_vec(),
        Vec::new(),
    );
    for seat in &report.seats {
        let time = seat
            .ms
            .map_or_else(|| "-".to_owned(), |ms| format!("{:.1}s", Duration::from_millis(ms).as_secs_f64()));
        let (tokens, cost) = match seat.usage {
            Some(usage) => (
                format!("{}/{}", usage.input_tokens, usage.output_tokens),
                if seat.price_known == Some(false) {
                    "?".to_owned()
                } else {
                    format!("${:.4}", usage.cost_usd)
                },
            ),
            None => ("-".to_owned(), "-".to_owned()),
        };
        let mut details = Vec::new();
        if let Some(error) = &seat.error {
            details.push(("error", error.clone()));
        }
        if let Some(hint) = &seat.hint {
            details.push(("hint", hint.clone()));
        }
        if let Some(note) = &seat.note {
            details.push(("note", note.clone()));
        }
        table.row(
            vec![
                seat.seat.clone(),
                seat.engine.to_string(),
                seat.model.clone().unwrap_or_else(|| "-".to_owned()),
                seat.family.clone(),
                seat.status.word().to_owned(),
                time,
                tokens,
                cost,
            ],
            details,
        );
    }
    out.push_str(&table.render(paint));
    let count = |status: SeatStatus| report.seats.iter().filter(|s| s.status == status).count();
    let _ = writeln!(
        out,
        "\n{} seat{}: {} answered, {} scripted, {} failed",
        report.seats.len(),
        if report.seats.len() == 1 { "" } else { "s" },
        count(SeatStatus::Ok),
        count(SeatStatus::Scripted),
        count(SeatStatus::Failed),
    );
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn statuses_are_read_from_engine_messages() {
        assert_eq!(status_in("the openai responses api answered 401 unauthorized: bad key"), Some(401));
        assert_eq!(status_in("claude: the api refused the key in $k (403): nope"), Some(403));
        assert_eq!(status_in("gemini: the model api failed (503): overloaded"), Some(503));
        assert_eq!(status_in("codex: rate limiting this seat (429): slow down"), Some(429));
        assert_eq!(status_in("cannot reach the api at http://127.0.0.1:9 (os error 111)"), None);
        assert_eq!(status_in("answered 99 things"), None);
    }

    #[test]
    fn the_missing_variable_is_named() {
        let message = "claude: no API key: the environment variable `MY_KEY` is not set; export it";
        assert_eq!(variable_in(message).as_deref(), Some("MY_KEY"));
        assert_eq!(variable_in("no variable here"), None);
    }

    #[test]
    fn probe_problems_lose_their_install_tail() {
        let problem = "program `codex` not found (searched PATH=/x; cwd /tmp/gavel-probe-1); install it (npm install -g @openai/codex) or set the seat's `executable`";
        assert_eq!(problem_text(problem), "program `codex` not found (searched PATH=/x)");
        assert_eq!(problem_text("`--version` printed nothing"), "`--version` printed nothing");
        assert!(install_advice(Engine::Codex, false).contains("npm install -g @openai/codex"));
        assert!(install_advice(Engine::Codex, false).contains("0.171.0"));
    }

    #[test]
    fn a_reply_as_asked_is_recognised_with_prose_around_it() {
        assert!(replied_as_asked(r#"Sure. {"decision":"pass","findings":[]}"#));
        assert!(!replied_as_asked("pass"));
        assert!(!replied_as_asked(r#"{"decision":"fail","findings":[]}"#));
        assert_eq!(excerpt("a\n b   c", 10), "\"a b c\"");
        assert_eq!(excerpt("abcdefghijkl", 4), "\"abcd…\"");
    }

    #[test]
    fn tables_align_columns_and_indent_details() {
        let mut table = Table { status_column: 1, ..Table::default() };
        table.row(vec!["engine".into(), "status".into(), "where".into()], Vec::new());
        table.row(vec!["codex".into(), "missing".into(), "-".into()], vec![("hint", "install it".into())]);
        let text = table.render(Paint { color: false });
        assert_eq!(text, "  engine  status   where\n  codex   missing  -\n      hint: install it\n");
    }
}
