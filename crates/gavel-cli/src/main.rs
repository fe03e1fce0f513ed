//! The `gavel` command line: parses arguments, runs the runtime, renders
//! progress and errors on stderr, data on stdout, and exits with the documented codes.
//!
//! It holds no logic another crate needs: everything it shows is a view of
//! an outcome or of the record.

mod approve;
mod describe;
mod doctor;
mod goal;
mod render;

use std::io::{IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};
use gavel_record::{RunState, exit, read_record};
use gavel_runtime::{Approver, Observer, Outcome, ResumeRequest, RunError, StartRequest, Workflow, runs};

use crate::render::Style;

/// gavel runs AI agent work in loops that check the work before anyone accepts it.
#[derive(Debug, Parser)]
#[command(name = "gavel", version, about, long_about = None, propagate_version = true)]
struct Cli {
    /// Print no progress on stderr (errors still print).
    #[arg(short, long, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a workflow from its first stage.
    Run(RunArgs),
    /// Take a paused or interrupted run up again (replays its record).
    Resume(ResumeArgs),
    /// Show where a run stands, from its record alone.
    Status(StatusArgs),
    /// Print a run's record, one readable line per event.
    Log(LogArgs),
    /// Approve (or reject) the exact bytes a paused approve stage asks about, then go on.
    Approve(ApproveArgs),
    /// Validate a workflow: references, seats, scripts, brief. Runs nothing.
    Check(CheckArgs),
    /// Print the workflow as a Mermaid flowchart (stages or nodes, kickbacks, panels).
    Graph(GraphArgs),
    /// Goals: outcomes with acceptance criteria that commands prove (new, evaluate, status, ...).
    Goal(goal::GoalArgs),
    /// Agent hooks: `gavel hook stop` for Claude Code's Stop hook, and `gavel hook install`.
    Hook(goal::HookArgs),
    /// Print a JSON Schema (`gavel schema goal`).
    Schema(goal::SchemaArgs),
    /// List the engines this machine can run; with a workflow, ask each seat one short request.
    Doctor(doctor::DoctorArgs),
}

#[derive(Debug, Args)]
struct GraphArgs {
    /// The workflow file.
    workflow: PathBuf,
}

#[derive(Debug, Args)]
struct ApproveArgs {
    #[command(flatten)]
    run: RunRef,
    /// Reject instead of approving: the run fails.
    #[arg(long)]
    reject: bool,
    /// Why (recorded with the decision).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Who decides (default: the login name).
    #[arg(long, value_name = "NAME")]
    by: Option<String>,
    /// Print the outcome as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The workflow file.
    workflow: PathBuf,
    /// Use this run id instead of a generated one.
    #[arg(long, value_name = "ID")]
    run_id: Option<String>,
    /// Write the record here instead of .gavel/runs/<run-id>/events.jsonl.
    #[arg(long, value_name = "PATH")]
    record: Option<PathBuf>,
    /// The folder the seats work in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Answers for approve stages, for offline runs.
    #[arg(long, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// Print the outcome as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct RunRef {
    /// A run id under .gavel/runs, or a record path.
    run: String,
    /// The workspace whose .gavel/runs holds the run (default: the current
    /// directory). A run that goes on (resume, approve) works in this folder;
    /// without it, in the folder whose .gavel/ holds the record.
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct ResumeArgs {
    #[command(flatten)]
    run: RunRef,
    /// Answers for approve stages, for offline runs.
    #[arg(long, value_name = "FILE")]
    answers: Option<PathBuf>,
    /// A new budget in US dollars, for a run paused by `max_cost_usd`.
    #[arg(long, value_name = "USD", value_parser = dollars)]
    max_cost_usd: Option<f64>,
    /// Print the outcome as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct StatusArgs {
    #[command(flatten)]
    run: RunRef,
    /// Print the status as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct LogArgs {
    #[command(flatten)]
    run: RunRef,
}

#[derive(Debug, Args)]
struct CheckArgs {
    /// The workflow file.
    workflow: PathBuf,
    /// Print the result as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    // A full disk or a file-size limit must surface as a write error the
    // record can report (exit 4, the record intact), not as SIGXFSZ killing
    // the process. Blocked here, before any thread starts, so every thread
    // inherits it.
    let mut xfsz = nix::sys::signal::SigSet::empty();
    xfsz.add(nix::sys::signal::Signal::SIGXFSZ);
    let _ = xfsz.thread_block();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { exit::INVALID } else { exit::PASS };
            let _ = err.print();
            return code_of(code);
        }
    };
    // Keys in gavel's own environment are scrubbed from everything shown,
    // whichever command shows it; seats remember the keys they are handed.
    gavel_seats::secret::remember_secret_env();
    let style = Style::detect(cli.quiet);
    let code = match dispatch(cli.command, &style) {
        Ok(code) => code,
        Err(err) => {
            style.error(&err);
            err.exit_code()
        }
    };
    code_of(code)
}

fn code_of(code: i32) -> ExitCode {
    ExitCode::from(u8::try_from(code).unwrap_or(4))
}

fn dispatch(command: Command, style: &Style) -> Result<i32, RunError> {
    match command {
        Command::Run(args) => run(args, style),
        Command::Resume(args) => resume(&args, style),
        Command::Status(args) => status(&args, style),
        Command::Log(args) => log(&args, style),
        Command::Approve(args) => approve(&args, style),
        Command::Check(args) => check(&args, style),
        Command::Graph(args) => {
            let workflow = Workflow::load(&args.workflow)?;
            print!("{}", gavel_runtime::graph::mermaid(&workflow));
            Ok(exit::PASS)
        }
        Command::Goal(args) => goal::goal(args, style),
        Command::Hook(args) => goal::hook(args, style),
        Command::Schema(args) => goal::schema(&args),
        Command::Doctor(args) => doctor::doctor(&args, style),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, RunError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| RunError::Refused(format!("cannot start the async runtime: {err}")))
}

fn workspace_or_cwd(dir: Option<&Path>) -> PathBuf {
    dir.map_or_else(|| PathBuf::from("."), Path::to_owned)
}

fn run(args: RunArgs, style: &Style) -> Result<i32, RunError> {
    let workflow = Workflow::load(&args.workflow)?;
    let request = StartRequest {
        workflow,
        workspace: workspace_or_cwd(args.workspace.as_deref()),
        run_id: args.run_id,
        record: args.record,
        approver: approver_for(args.answers.as_deref())?,
    };
    let progress = render::Progress::new(style);
    let outcome = runtime()?.block_on(gavel_runtime::start(request, &progress))?;
    Ok(finish(&outcome, args.json, style))
}

fn resume(args: &ResumeArgs, style: &Style) -> Result<i32, RunError> {
    let record = locate(&args.run)?;
    let request = ResumeRequest {
        record,
        approver: approver_for(args.answers.as_deref())?,
        max_cost_usd: args.max_cost_usd,
        workflow: None,
        workspace: args.run.workspace.clone(),
    };
    let progress = render::Progress::new(style);
    let outcome = runtime()?.block_on(gavel_runtime::resume(request, &progress))?;
    Ok(finish(&outcome, args.json, style))
}

/// A budget from the command line: a finite number of dollars above zero
/// (`nan`, `inf` and `-1` parse as numbers, but are no budget).
fn dollars(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 => Ok(value),
        Ok(value) => Err(format!("{value} is not a budget; give a positive number of US dollars, e.g. 5.0")),
        Err(_) => Err(format!("`{text}` is not a number; give a positive number of US dollars, e.g. 5.0")),
    }
}

/// Who answers approve stages: the answers file, else a terminal prompt,
/// else nobody (the run pauses).
fn approver_for(answers: Option<&Path>) -> Result<Option<Arc<dyn Approver>>, RunError> {
    if let Some(path) = answers {
        return Ok(Some(Arc::new(approve::AnswersFile::load(path)?)));
    }
    Ok(approve::TerminalPrompt::if_interactive(approve::person(None))
        .map(|p| Arc::new(p) as Arc<dyn Approver>))
}

fn approve(args: &ApproveArgs, style: &Style) -> Result<i32, RunError> {
    let record = locate(&args.run)?;
    let state = RunState::fold(&read_record(&record)?.events);
    let waiting = match &state.status {
        gavel_record::RunStatus::Paused { waiting_for, .. } if waiting_for.starts_with("approval") => {
            waiting_for
        }
        other => {
            return Err(RunError::Refused(format!(
                "run `{}` is not waiting for an approval (it is {}); `gavel status {}` shows where it stands",
                state.run_id,
                other.word(),
                args.run.run
            )));
        }
    };
    style.note(&format!(
        "{} the {waiting} for run {}",
        if args.reject { "rejecting" } else { "approving" },
        state.run_id
    ));
    let answer = approve::FlagAnswer {
        approved: !args.reject,
        by: approve::person(args.by.as_deref()),
        reason: args.reason.clone().unwrap_or_default(),
    };
    let request = ResumeRequest {
        record,
        approver: Some(Arc::new(answer)),
        max_cost_usd: None,
        workflow: None,
        workspace: args.run.workspace.clone(),
    };
    let progress = render::Progress::new(style);
    let outcome = runtime()?.block_on(gavel_runtime::resume(request, &progress))?;
    Ok(finish(&outcome, args.json, style))
}

fn finish(outcome: &Outcome, json: bool, style: &Style) -> i32 {
    style.summary(outcome);
    if json {
        print_json(&serde_json::to_value(outcome).unwrap_or_default());
    }
    outcome.status.exit_code()
}

/// Prints one JSON value on stdout, scrubbed of every secret the process knows.
fn print_json(value: &serde_json::Value) {
    let value = gavel_seats::secret::scrub_value(value.clone());
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer_pretty(&mut out, &value);
    let _ = writeln!(out);
}

fn locate(run: &RunRef) -> Result<PathBuf, RunError> {
    let record =
        runs::locate(&run.run, &workspace_or_cwd(run.workspace.as_deref())).map_err(RunError::Refused)?;
    Ok(std::path::absolute(&record).unwrap_or(record))
}

/// Whether another process works on the run now: a running run's lock
/// names a live gavel process; an interrupted one's does not.
fn held_by_another(record: &Path) -> Option<String> {
    gavel_record::RunLock::holder(record).map(|pid| format!("(pid {pid})"))
}

fn status(args: &StatusArgs, style: &Style) -> Result<i32, RunError> {
    let record = locate(&args.run)?;
    let recording = read_record(&record)?;
    if let Some(torn) = &recording.torn {
        style.warning(&torn.warning(&record));
    }
    let state = RunState::fold(&recording.events);
    let live = match state.status {
        gavel_record::RunStatus::Running => held_by_another(&record),
        _ => None,
    };
    if args.json {
        let mut value = serde_json::to_value(&state).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.insert("record".into(), record.display().to_string().into());
            object.insert("torn_tail".into(), recording.torn.is_some().into());
            if matches!(state.status, gavel_record::RunStatus::Running) {
                object.insert("live".into(), live.is_some().into());
            }
        }
        print_json(&value);
    } else {
        let mut out = std::io::stdout().lock();
        let text = describe::status(&state, &record, live.as_deref());
        let _ = write!(out, "{}", gavel_seats::secret::scrub(&text));
    }
    Ok(exit::PASS)
}

fn log(args: &LogArgs, style: &Style) -> Result<i32, RunError> {
    let record = locate(&args.run)?;
    let recording = read_record(&record)?;
    if let Some(torn) = &recording.torn {
        style.warning(&torn.warning(&record));
    }
    let mut out = std::io::stdout().lock();
    for envelope in &recording.events {
        // The record is scrubbed when written; this also covers keys a
        // record from elsewhere (or an older gavel) may hold.
        let _ = writeln!(out, "{}", gavel_seats::secret::scrub(&describe::line(envelope)));
    }
    Ok(exit::PASS)
}

fn check(args: &CheckArgs, style: &Style) -> Result<i32, RunError> {
    let workflow = Workflow::load(&args.workflow)?;
    workflow.check_commands(&std::env::current_dir().unwrap_or_default())?;
    let seats: Vec<serde_json::Value> = workflow
        .seats
        .iter()
        .map(|(name, entry)| {
            serde_json::json!({"seat": name, "engine": entry.spec.engine.as_str(), "family": entry.family.as_str()})
        })
        .collect();
    if args.json {
        print_json(&serde_json::json!({
            "ok": true,
            "workflow": workflow.name,
            "file": workflow.file.display().to_string(),
            "stages": workflow.stages.iter().map(|s| serde_json::json!({"name": s.name, "kind": s.kind.key()})).collect::<Vec<_>>(),
            "seats": seats,
            "digest": workflow.digest,
        }));
    } else {
        style.note(&format!(
            "ok: workflow `{}` ({}): {} stage{}, {} seat{}",
            workflow.name,
            args.workflow.display(),
            workflow.stages.len(),
            if workflow.stages.len() == 1 { "" } else { "s" },
            workflow.seats.len(),
            if workflow.seats.len() == 1 { "" } else { "s" },
        ));
    }
    Ok(exit::PASS)
}

/// Lets tests and the progress renderer share one check for colour.
pub(crate) fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

impl Observer for render::Progress<'_> {
    fn on_event(&self, envelope: &gavel_record::Envelope) {
        self.event(envelope);
    }

    fn on_seat_start(&self, key: &gavel_record::event::SeatKey) {
        self.seat_start(key);
    }

    fn on_warning(&self, message: &str) {
        self.warning(message);
    }

    fn on_note(&self, message: &str) {
        self.notice(message);
    }
}
