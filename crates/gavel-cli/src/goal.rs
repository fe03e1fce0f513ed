//! `gavel goal ...`, `gavel hook ...` and `gavel schema goal`: the command
//! line of goals. Messages go to stderr, data to stdout
//! (`--json`), and exit codes are the evaluator's: `0` pass, `1` fail or blocked,
//! `3` incomplete, `2` an invalid goal file or input, `4` gavel's own failure.
//!
//! `gavel hook stop` is the exception on purpose: it always exits 0, because
//! Claude Code reads a Stop hook's answer from stdout only on exit 0, and a
//! broken hook (bad input, a goal file that does not parse) must never trap an
//! agent. Such problems print on stderr and let the agent stop.

use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use gavel_goals::evaluate::Evaluation;
use gavel_goals::event::{CriterionStatus, GoalStatus, Trigger, Verdict};
use gavel_goals::file::{Constraints, Criterion, EvaluatorKind, GoalFile, StopHookOptions};
use gavel_goals::hook::{self, HookOutcome};
use gavel_goals::lifecycle::{self, Decision};
use gavel_goals::store::{self, GoalPaths};
use gavel_goals::{EvaluateRequest, GoalError, view};
use gavel_record::exit;
use gavel_runtime::RunError;

use crate::render::Style;

/// `gavel goal ...`.
#[derive(Debug, Args)]
pub struct GoalArgs {
    #[command(subcommand)]
    command: GoalCommand,
}

#[derive(Debug, Subcommand)]
enum GoalCommand {
    /// Write a new goal file (.gavel/goals/ID/goal.yaml) and record its base commit.
    New(NewArgs),
    /// Run every criterion's command, write evidence, and decide a verdict.
    Evaluate(EvaluateArgs),
    /// Show where a goal stands, from its record alone (and rewrite a missing state.md).
    Status(StatusArgs),
    /// List the goals of the project.
    List(ListArgs),
    /// Confirm (or reject) the proposed terminal transition: achieved, failed or cancelled.
    Confirm(ConfirmArgs),
    /// Propose cancelling a goal; `gavel goal confirm` applies it.
    Cancel(CancelArgs),
    /// Set a non-terminal status directly: active, blocked, waiting_for_user, waiting_for_ci.
    Mark(MarkArgs),
    /// Print a goal's record, one readable line per event.
    Log(LogArgs),
}

#[derive(Debug, Args)]
struct ProjectArg {
    /// The project root: the folder holding .gavel (default: found from the current folder up).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EvaluatorArg {
    Deterministic,
    Hybrid,
    Judge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TriggerArg {
    Manual,
    StopHook,
    Command,
}

#[derive(Debug, Args)]
struct NewArgs {
    /// The goal's id (its folder name): lowercase letters, digits, `-`, `_`, `.`.
    id: String,
    /// The outcome, in a line.
    #[arg(long, value_name = "TEXT")]
    title: String,
    /// A criterion: "text::command" (exit 0 = met), or just "text" for one a judge decides.
    /// Criteria are numbered AC1, AC2, ... in order.
    #[arg(long = "criterion", value_name = "TEXT::COMMAND", required = true)]
    criteria: Vec<String>,
    /// A glob every changed file must match (repeatable): `*` stays in a folder, `**` crosses.
    #[arg(long = "allowed-path", value_name = "GLOB")]
    allowed_paths: Vec<String>,
    /// Who decides the criteria.
    #[arg(long, value_enum, default_value = "deterministic")]
    evaluator: EvaluatorArg,
    /// A script file for the judge seat (relative to the goal's folder), for hybrid/judge.
    #[arg(long, value_name = "FILE")]
    judge_script: Option<String>,
    #[command(flatten)]
    project: ProjectArg,
    /// Print the new goal as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct EvaluateArgs {
    /// The goal's id.
    id: String,
    /// The run id for the evidence folder (default: a fresh one).
    #[arg(long, value_name = "R")]
    run_id: Option<String>,
    /// What asks for the evaluation.
    #[arg(long, value_enum, default_value = "manual")]
    trigger: TriggerArg,
    #[command(flatten)]
    project: ProjectArg,
    /// Print the verdict as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct StatusArgs {
    /// The goal's id.
    id: String,
    #[command(flatten)]
    project: ProjectArg,
    /// Print the state as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ListArgs {
    #[command(flatten)]
    project: ProjectArg,
    /// Print the goals as one JSON array on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ConfirmArgs {
    /// The goal's id.
    id: String,
    /// Reject the proposal instead: the goal goes on.
    #[arg(long)]
    reject: bool,
    /// Why (recorded with the decision).
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    /// Who decides (default: the login name).
    #[arg(long, value_name = "NAME")]
    by: Option<String>,
    #[command(flatten)]
    project: ProjectArg,
    /// Print the state as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct CancelArgs {
    /// The goal's id.
    id: String,
    /// Why.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    #[command(flatten)]
    project: ProjectArg,
}

#[derive(Debug, Args)]
struct MarkArgs {
    /// The goal's id.
    id: String,
    /// active, blocked, waiting_for_user or waiting_for_ci.
    status: String,
    /// Why.
    #[arg(long, value_name = "TEXT")]
    reason: Option<String>,
    #[command(flatten)]
    project: ProjectArg,
}

#[derive(Debug, Args)]
struct LogArgs {
    /// The goal's id.
    id: String,
    #[command(flatten)]
    project: ProjectArg,
}

/// `gavel hook ...`.
#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    command: HookCommand,
}

#[derive(Debug, Subcommand)]
enum HookCommand {
    /// Claude Code's Stop hook: reads the hook's JSON on stdin, evaluates the active goal,
    /// and blocks the stop while it is not achieved. Always exits 0.
    Stop,
    /// Add `gavel hook stop` as a Stop hook to a project's .claude/settings.json (keeps other settings).
    Install(InstallArgs),
}

#[derive(Debug, Args)]
struct InstallArgs {
    /// The project whose .claude/settings.json to edit (default: the goals' project root,
    /// else the git repository's top, else the current folder).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// The command Claude Code runs.
    #[arg(long, value_name = "CMD", default_value = hook::DEFAULT_COMMAND)]
    command: String,
}

/// `gavel schema ...`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    #[command(subcommand)]
    what: SchemaKind,
}

#[derive(Debug, Subcommand)]
enum SchemaKind {
    /// The JSON Schema of goal files (.gavel/goals/<id>/goal.yaml).
    Goal,
}

/// Runs `gavel goal ...`.
pub fn goal(args: GoalArgs, style: &Style) -> Result<i32, RunError> {
    let result = match args.command {
        GoalCommand::New(a) => new(&a, style),
        GoalCommand::Evaluate(a) => evaluate(&a, style),
        GoalCommand::Status(a) => status(&a, style),
        GoalCommand::List(a) => list(&a),
        GoalCommand::Confirm(a) => confirm(&a, style),
        GoalCommand::Cancel(a) => cancel(&a, style),
        GoalCommand::Mark(a) => mark(&a, style),
        GoalCommand::Log(a) => log(&a, style),
    };
    result.or_else(|err| fail(err, style))
}

/// Runs `gavel hook ...`.
pub fn hook(args: HookArgs, style: &Style) -> Result<i32, RunError> {
    match args.command {
        HookCommand::Stop => Ok(hook_stop(style)),
        HookCommand::Install(a) => install(&a, style).or_else(|err| fail(err, style)),
    }
}

/// Runs `gavel schema ...`.
#[allow(clippy::unnecessary_wraps)] // the same shape as every other command's dispatch
pub fn schema(args: &SchemaArgs) -> Result<i32, RunError> {
    match args.what {
        SchemaKind::Goal => print_json(&gavel_goals::file::schema()),
    }
    Ok(exit::PASS)
}

/// Maps a goal error to the CLI's errors: user mistakes exit 2, gavel's own
/// failures print here and exit 4.
fn fail(err: GoalError, style: &Style) -> Result<i32, RunError> {
    match err {
        GoalError::File(located) => Err(RunError::Invalid(located)),
        GoalError::Refused(message) => Err(RunError::Refused(message)),
        GoalError::Read(err) => Err(RunError::Read(err)),
        GoalError::Write(err) => Err(RunError::Write(err)),
        other @ (GoalError::Io { .. } | GoalError::Internal(_)) => {
            style.error(&RunError::Refused(other.to_string()));
            Ok(exit::INTERNAL)
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, GoalError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| GoalError::Internal(format!("cannot start the async runtime: {err}")))
}

fn cwd() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// The project root of an existing goal: `--project`, else the nearest
/// folder with `.gavel/goals` from here up.
fn root_of(project: &ProjectArg) -> Result<PathBuf, GoalError> {
    if let Some(dir) = &project.project {
        return Ok(std::path::absolute(dir).unwrap_or_else(|_| dir.clone()));
    }
    store::find_root(&cwd()).ok_or_else(|| {
        GoalError::Refused(format!(
            "no .gavel/goals in {} or any folder above it; create a goal with `gavel goal new ID --title ... --criterion \"text::command\"`, or pass --project DIR",
            cwd().display()
        ))
    })
}

fn print_json(value: &serde_json::Value) {
    crate::print_json(value);
}

fn new(args: &NewArgs, style: &Style) -> Result<i32, GoalError> {
    gavel_goals::file::check_goal_id(&args.id).map_err(GoalError::Refused)?;
    let mut criteria = Vec::with_capacity(args.criteria.len());
    for (i, raw) in args.criteria.iter().enumerate() {
        let (text, command) = match raw.split_once("::") {
            Some((text, command)) => (text.trim(), Some(command.trim())),
            None => (raw.trim(), None),
        };
        if text.is_empty() {
            return Err(GoalError::Refused(format!(
                "--criterion \"{raw}\" has no text; write \"what must hold::the command that proves it\""
            )));
        }
        if command.is_some_and(str::is_empty) {
            return Err(GoalError::Refused(format!(
                "--criterion \"{raw}\" has an empty command after `::`; write the command, or leave `::` out for a criterion a judge decides"
            )));
        }
        criteria.push(Criterion {
            id: format!("AC{}", i + 1),
            text: text.to_owned(),
            command: command.map(str::to_owned),
            must_pass: true,
            timeout_seconds: None,
            limits: None,
            judge: command.is_none().then_some(true),
        });
    }
    let evaluator = match args.evaluator {
        EvaluatorArg::Deterministic => EvaluatorKind::Deterministic,
        EvaluatorArg::Hybrid => EvaluatorKind::Hybrid,
        EvaluatorArg::Judge => EvaluatorKind::Judge,
    };
    if let Err((i, why)) = gavel_goals::file::AllowedPaths::new(&args.allowed_paths) {
        return Err(GoalError::Refused(format!(
            "--allowed-path `{}` {why}",
            args.allowed_paths.get(i).map_or("", String::as_str)
        )));
    }
    let judge_seat = args.judge_script.as_ref().map(|script| gavel_domain::SeatSpec {
        script: Some(script.clone()),
        ..gavel_domain::SeatSpec::new(gavel_domain::Engine::Script)
    });
    if evaluator.uses_judge() && judge_seat.is_none() && criteria.iter().any(Criterion::is_fuzzy) {
        return Err(GoalError::Refused(format!(
            "--evaluator {} needs a judge seat for the criteria without a command; pass --judge-script FILE, or add `judge_seat` to goal.yaml afterwards",
            evaluator.as_str()
        )));
    }
    let goal = GoalFile {
        id: args.id.clone(),
        title: args.title.trim().to_owned(),
        criteria,
        constraints: Constraints {
            allowed_paths: (!args.allowed_paths.is_empty()).then(|| args.allowed_paths.clone()),
        },
        evaluator,
        judge_seat,
        stop_hook: StopHookOptions::default(),
    };
    if goal.title.is_empty() {
        return Err(GoalError::Refused("--title is empty; say the outcome in a line".to_owned()));
    }
    let rt = runtime()?;
    let root = match &args.project.project {
        Some(dir) => std::path::absolute(dir).unwrap_or_else(|_| dir.clone()),
        None => rt.block_on(lifecycle::root_for_new(&cwd())),
    };
    let created = rt.block_on(lifecycle::create(&root, &goal))?;
    let file = created.paths.from_root(&created.paths.file);
    style.note(&format!(
        "created goal `{}` ({} criteria) in {}; base commit {}",
        goal.id,
        goal.criteria.len(),
        file,
        created.base_commit.as_deref().map_or("none (not in git: allowed_paths cannot be checked)", |c| c)
    ));
    style.note(&format!("next: `gavel goal evaluate {}`", goal.id));
    if args.json {
        print_json(&serde_json::json!({
            "goal": goal.id,
            "file": file,
            "root": root.display().to_string(),
            "base_commit": created.base_commit,
            "status": "active",
        }));
    }
    Ok(exit::PASS)
}

fn verdict_code(verdict: Verdict) -> i32 {
    match verdict {
        Verdict::Pass => exit::PASS,
        Verdict::Fail | Verdict::Blocked => exit::FAIL,
        Verdict::Incomplete => exit::PAUSED,
    }
}

fn evaluate(args: &EvaluateArgs, style: &Style) -> Result<i32, GoalError> {
    let root = root_of(&args.project)?;
    let trigger = match args.trigger {
        TriggerArg::Manual => Trigger::Manual,
        TriggerArg::StopHook => Trigger::StopHook,
        TriggerArg::Command => Trigger::Command,
    };
    let request = EvaluateRequest { root, goal_id: args.id.clone(), run_id: args.run_id.clone(), trigger };
    let evaluation = runtime()?.block_on(gavel_goals::evaluate(request))?;
    for warning in &evaluation.warnings {
        style.warning(warning);
    }
    describe_evaluation(&evaluation, style);
    if args.json {
        print_json(&serde_json::to_value(&evaluation).unwrap_or_default());
    }
    Ok(verdict_code(evaluation.verdict))
}

fn describe_evaluation(e: &Evaluation, style: &Style) {
    style.note(&format!(
        "goal `{}`: {} (confidence {:.2}) — {}",
        e.goal,
        e.verdict.as_str(),
        e.confidence,
        e.summary
    ));
    for c in &e.criteria {
        let mark = match c.status {
            CriterionStatus::Pass => "✓",
            CriterionStatus::Fail => "✗",
            CriterionStatus::Pending => "…",
        };
        let optional = if c.must_pass { "" } else { " (optional)" };
        style.note(&format!("  {mark} {} {}{optional}: {}", c.id, c.text, c.note));
    }
    if let Some(boundary) = &e.path_boundary {
        let line = match (&boundary.error, boundary.violations.is_empty()) {
            (Some(error), _) => format!("cannot be checked: {error}"),
            (None, true) => format!("holds ({} changed file(s))", boundary.changed.len()),
            (None, false) => format!("broken by {}", boundary.violations.join(", ")),
        };
        style.note(&format!("  path boundary: {line}"));
    }
    for d in &e.delta {
        let from = d.from.map_or("new", CriterionStatus::as_str);
        style.note(&format!("  changed: {} {from} → {}", d.criterion, d.to.as_str()));
    }
    if let Some(p) = &e.proposed_transition {
        style.note(&format!(
            "  proposed: {} ({}); `gavel goal confirm {}` applies it, `--reject` keeps the goal going",
            p.to, p.reason, e.goal
        ));
    }
    style.note(&format!("  hint: {}", e.next_step_hint));
    style.note(&format!("  evidence {} · status {}", e.evidence_dir, e.status));
}

fn status(args: &StatusArgs, style: &Style) -> Result<i32, GoalError> {
    let root = root_of(&args.project)?;
    let paths = GoalPaths::existing(&root, &args.id)?;
    let view = store::read_state(&paths)?;
    if let Some(warning) = &view.warning {
        style.warning(warning);
    }
    // A deleted state.md is written again from the record; an existing one is
    // left alone (a running evaluation may be about to replace it).
    if view.state.is_created() && !paths.state_md.exists() {
        store::write_state_md(&paths, &view.state, &view.events)?;
        style.note(&format!("wrote {} again from the record", paths.from_root(&paths.state_md)));
    }
    if args.json {
        let mut value = serde_json::to_value(&view.state).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.insert("record".into(), paths.from_root(&paths.record).into());
            object.insert("state_md".into(), paths.from_root(&paths.state_md).into());
        }
        print_json(&value);
    } else {
        let mut out = std::io::stdout().lock();
        let text = view::state_md(&paths, &view.state, &view.events);
        let _ = write!(out, "{}", gavel_seats::secret::scrub(&text));
    }
    Ok(exit::PASS)
}

fn list(args: &ListArgs) -> Result<i32, GoalError> {
    let root = root_of(&args.project)?;
    let mut rows = Vec::new();
    for id in store::list_goal_ids(&root) {
        let paths = GoalPaths::new(&root, &id)?;
        let row = match store::read_state(&paths) {
            Ok(view) => {
                let s = &view.state;
                serde_json::json!({
                    "goal": id,
                    "title": s.title,
                    "status": if s.is_created() { s.status.as_str() } else { "no record" },
                    "verdict": s.last.as_ref().map(|l| l.evaluation.verdict.as_str()),
                    "evaluations": s.evaluations,
                    "last_evaluated": s.last.as_ref().map(|l| l.at.to_string()),
                    "proposed": s.proposal.as_ref().map(|p| p.to.as_str()),
                })
            }
            Err(err) => serde_json::json!({"goal": id, "error": err.to_string()}),
        };
        rows.push(row);
    }
    if args.json {
        print_json(&serde_json::Value::Array(rows));
        return Ok(exit::PASS);
    }
    let mut out = std::io::stdout().lock();
    if rows.is_empty() {
        let _ = writeln!(out, "no goals under {}", root.join(store::GOALS_DIR).display());
    }
    for row in &rows {
        let text = |key: &str| row.get(key).and_then(serde_json::Value::as_str).unwrap_or("").to_owned();
        if let Some(error) = row.get("error").and_then(serde_json::Value::as_str) {
            let _ = writeln!(out, "{:<20} error: {error}", text("goal"));
            continue;
        }
        let verdict = row.get("verdict").and_then(serde_json::Value::as_str).unwrap_or("not evaluated");
        let proposed = row
            .get("proposed")
            .and_then(serde_json::Value::as_str)
            .map_or_else(String::new, |p| format!("  [proposed: {p}]"));
        let _ = writeln!(
            out,
            "{:<20} {:<17} {:<14} {}{proposed}",
            text("goal"),
            text("status"),
            verdict,
            text("title")
        );
    }
    Ok(exit::PASS)
}

fn confirm(args: &ConfirmArgs, style: &Style) -> Result<i32, GoalError> {
    let root = root_of(&args.project)?;
    let paths = GoalPaths::existing(&root, &args.id)?;
    let decision = Decision {
        by: crate::approve::person(args.by.as_deref()),
        approve: !args.reject,
        reason: args.reason.clone().unwrap_or_default(),
    };
    let before = store::read_state(&paths)?.state.proposal;
    let state = lifecycle::decide(&paths, &decision)?;
    if let Some(p) = before {
        if decision.approve {
            style.note(&format!("goal `{}` is now {} (confirmed by {})", args.id, p.to, decision.by));
        } else {
            style.note(&format!(
                "rejected the proposal `{}` for goal `{}`; it stays {}",
                p.to, args.id, state.status
            ));
        }
    }
    if args.json {
        print_json(&serde_json::to_value(&state).unwrap_or_default());
    }
    Ok(exit::PASS)
}

fn cancel(args: &CancelArgs, style: &Style) -> Result<i32, GoalError> {
    let root = root_of(&args.project)?;
    let paths = GoalPaths::existing(&root, &args.id)?;
    lifecycle::propose_cancel(&paths, args.reason.as_deref().unwrap_or(""))?;
    style.note(&format!(
        "proposed cancelling goal `{}`; `gavel goal confirm {}` applies it (or `--reject`)",
        args.id, args.id
    ));
    Ok(exit::PASS)
}

fn mark(args: &MarkArgs, style: &Style) -> Result<i32, GoalError> {
    let root = root_of(&args.project)?;
    let paths = GoalPaths::existing(&root, &args.id)?;
    let to: GoalStatus = args.status.parse().map_err(GoalError::Refused)?;
    let state = lifecycle::set_status(&paths, to, args.reason.as_deref().unwrap_or(""))?;
    style.note(&format!("goal `{}` is {}", args.id, state.status));
    Ok(exit::PASS)
}

fn log(args: &LogArgs, style: &Style) -> Result<i32, GoalError> {
    let root = root_of(&args.project)?;
    let paths = GoalPaths::existing(&root, &args.id)?;
    let view = store::read_state(&paths)?;
    if let Some(warning) = &view.warning {
        style.warning(warning);
    }
    let mut out = std::io::stdout().lock();
    for envelope in &view.events {
        let _ = writeln!(out, "{}", gavel_seats::secret::scrub(&view::line(envelope)));
    }
    Ok(exit::PASS)
}

/// The Stop hook. Every path exits 0: see the module docs.
fn hook_stop(style: &Style) -> i32 {
    let mut bytes = Vec::new();
    let read = std::io::stdin().lock().take(hook::MAX_INPUT_BYTES as u64 + 1).read_to_end(&mut bytes);
    let input = match read {
        Err(err) => Err(format!("cannot read the hook input on stdin: {err}")),
        Ok(_) if bytes.len() > hook::MAX_INPUT_BYTES => {
            Err(format!("the hook input is larger than {} bytes", hook::MAX_INPUT_BYTES))
        }
        Ok(_) => hook::parse_input(&bytes),
    };
    let input = match input {
        Ok(input) => input,
        Err(message) => {
            style.warning(&format!("gavel hook stop: {message}; letting the agent stop"));
            return exit::PASS;
        }
    };
    let outcome = runtime().and_then(|rt| rt.block_on(hook::stop(&input, &cwd())));
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(err) => {
            let message = match &err {
                GoalError::File(located) => located.to_string(),
                other => other.to_string(),
            };
            style.warning(&format!("gavel hook stop: {message}"));
            HookOutcome::allow_because(format!(
                "gavel hook stop could not check the goal, so it lets the agent stop: {}",
                first_line(&message)
            ))
        }
    };
    match &outcome {
        HookOutcome::Block { goal, .. } => {
            style.note(&format!("gavel hook stop: goal `{goal}` is not achieved; blocking the stop"));
        }
        HookOutcome::Allow { message: Some(message), .. } => style.note(message),
        HookOutcome::Allow { message: None, .. } => {}
    }
    if let Some(json) = outcome.stdout_json() {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", gavel_seats::secret::scrub(&json));
    }
    exit::PASS
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

fn install(args: &InstallArgs, style: &Style) -> Result<i32, GoalError> {
    let project = match &args.project {
        Some(dir) => dir.clone(),
        None => store::find_root(&cwd()).unwrap_or_else(|| {
            runtime().ok().and_then(|rt| rt.block_on(gavel_goals::exec::toplevel(&cwd()))).unwrap_or_else(cwd)
        }),
    };
    if !project.is_dir() {
        return Err(GoalError::Refused(format!("{} is not a folder; pass --project DIR", project.display())));
    }
    let installed = hook::install(&project, &args.command)?;
    let shown = display(&installed.path);
    if installed.changed {
        style.note(&format!("added the Stop hook `{}` to {shown}", args.command));
    } else {
        style.note(&format!("{shown} already runs `gavel hook stop` as a Stop hook; nothing changed"));
    }
    Ok(exit::PASS)
}

fn display(path: &Path) -> String {
    path.display().to_string()
}
