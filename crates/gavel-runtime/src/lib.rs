//! gavel's runtime: workflow files in, a recorded run out.
//!
//! This crate owns workflow files (parse, validate, compile), the executor
//! that walks a workflow's stages, the prompt templates, and the journal that
//! makes resume a replay: a run is always executed from the start against its
//! record, and only effects the record has no result for are performed.
//!
//! It must not print to the terminal: progress reaches the caller through an
//! [`Observer`], and results come back as values.

pub mod brief;
pub mod builder;
pub mod built;
pub mod de;
mod exec;
pub mod graph;
pub mod job;
pub mod journal;
mod phases;
pub mod prompts;
mod review;
pub mod runs;
pub mod workflow;

use std::path::PathBuf;

use gavel_domain::{Located, Usage};
use gavel_record::{Envelope, LockError, ReadError, WriteError, exit};
use serde::Serialize;

pub use exec::{ResumeRequest, StartRequest, resume, start};
pub use job::{Job, JobContext, JobOutcome, fn_job};
pub use workflow::{Registry, Workflow};

/// Receives progress while a run works. Implementations must be cheap: they
/// are called on the executor's path.
pub trait Observer: Send + Sync {
    /// An event was appended to the record.
    fn on_event(&self, envelope: &Envelope);
    /// A seat request starts (live, not replayed); its result arrives as a
    /// `seat:reply` or `seat:error` event with the same key.
    fn on_seat_start(&self, _key: &gavel_record::event::SeatKey) {}
    /// Something the person should know that is not an event (a torn line cut).
    fn on_warning(&self, _message: &str) {}
    /// Something worth saying that needs no action (which folder a resumed
    /// run works in).
    fn on_note(&self, _message: &str) {}
}

/// What a person is asked to approve: exact bytes, by SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAsk {
    /// The run.
    pub run_id: String,
    /// The approve stage.
    pub stage: String,
    /// Which ask of the stage this is (a new one follows changed bytes).
    pub round: u32,
    /// Each file with the SHA-256 of the bytes to approve.
    pub files: std::collections::BTreeMap<String, String>,
    /// Where the files are.
    pub workspace: PathBuf,
    /// This ask was made in this process because the bytes changed since
    /// the last one: a decision given for the earlier bytes does not cover it.
    pub asked_again: bool,
}

/// A person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAnswer {
    /// Approved or rejected.
    pub approved: bool,
    /// Who decided.
    pub by: String,
    /// Why, when given.
    pub reason: String,
}

/// Asks a person to approve (an answers file, a terminal prompt, the
/// `gavel approve` flags). `None` means no answer now: the run pauses.
pub trait Approver: Send + Sync {
    /// The answer to `ask`, if one can be had now.
    fn decide(&self, ask: &ApprovalAsk) -> Option<ApprovalAnswer>;
}

/// An observer that ignores everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Observer for Silent {
    fn on_event(&self, _envelope: &Envelope) {}
}

/// How a run stands when the executor returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The work was accepted.
    Pass,
    /// The work was not accepted.
    Fail,
    /// Waiting for a person or a readable reply; resume continues.
    Paused,
    /// A seat's engine failed twice; resume tries again.
    Error,
}

impl Status {
    /// The documented exit code of this status.
    pub fn exit_code(self) -> i32 {
        match self {
            Status::Pass => exit::PASS,
            Status::Fail => exit::FAIL,
            Status::Paused => exit::PAUSED,
            Status::Error => exit::INTERNAL,
        }
    }
}

/// What a run came to (the `--json` object, and more).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    /// Pass, fail, paused or error.
    pub status: Status,
    /// One sentence on why.
    pub summary: String,
    /// The run's id.
    pub run_id: String,
    /// The record's path.
    pub record: PathBuf,
    /// Rounds over all stages.
    pub rounds: u32,
    /// Usage totals.
    pub usage: Usage,
    /// What a paused run waits for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_for: Option<String>,
    /// Each stage's rounds and result.
    pub stages: Vec<StageReport>,
}

/// One stage's part of an outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StageReport {
    /// The stage.
    pub stage: String,
    /// Rounds it took.
    pub rounds: u32,
    /// `pass`, `fail`, `paused`, `error`.
    pub status: Status,
    /// What each round decided, one line each.
    pub decisions: Vec<String>,
    /// Each goal check's verdicts, one line per requirement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub goal_checks: Vec<RoundLines>,
    /// Each review's decisions, one line per reviewer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reviews: Vec<RoundLines>,
    /// Each synthesis: the merged findings with their results and votes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub synthesis: Vec<SynthesisRound>,
    /// Each judge's route and decisions.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub judge: Vec<JudgeRound>,
}

/// One round's synthesis, as `--json` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SynthesisRound {
    /// The round.
    pub round: u32,
    /// Each merged finding.
    pub entries: Vec<SynthesisLine>,
}

/// One merged finding and what the votes did to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SynthesisLine {
    /// `kept`, `better-fix`, `disputed` or `dropped`.
    pub result: String,
    /// Every reviewer that raised it.
    pub raised_by: Vec<String>,
    /// Its severity.
    pub severity: String,
    /// What is wrong.
    pub evidence: String,
    /// `reviewer vote: reason`, one per vote.
    pub votes: Vec<String>,
}

/// One round's judge, as `--json` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JudgeRound {
    /// The round.
    pub round: u32,
    /// `again`, `pass` or `fail`.
    pub route: String,
    /// Why.
    pub reason: String,
    /// `act: evidence (reason)` or `skip: ...`, one per finding.
    pub findings: Vec<String>,
}

/// Lines about one round of a stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RoundLines {
    /// The round.
    pub round: u32,
    /// One line per item.
    pub lines: Vec<String>,
}

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A user file is wrong.
    #[error(transparent)]
    Invalid(#[from] Box<Located>),
    /// Something else the user must fix (a changed workflow, a bad run id).
    #[error("{0}")]
    Refused(String),
    /// Another process works on the run.
    #[error(transparent)]
    Locked(#[from] LockError),
    /// The record cannot be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The record cannot be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// A prompt could not be rendered.
    #[error(transparent)]
    Prompt(#[from] prompts::PromptError),
    /// The workspace's files differ from what the record says was built: the
    /// run does not go on there.
    #[error("{}", diverged(run_id, workspace, files))]
    Diverged {
        /// The run.
        run_id: String,
        /// Where it would have gone on.
        workspace: PathBuf,
        /// Each file that differs, and how.
        files: Vec<(String, built::Divergence)>,
    },
    /// The recorded cost passed the budget; the executor turns this into a
    /// pause before any further request is sent.
    #[error("budget_limited: ${spent:.4} spent of the ${limit:.4} budget")]
    BudgetSpent {
        /// Dollars recorded so far.
        spent: f64,
        /// The budget.
        limit: f64,
    },
}

impl RunError {
    /// The documented exit code of this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Invalid(_)
            | RunError::Refused(_)
            | RunError::Locked(_)
            | RunError::Read(_)
            | RunError::Prompt(prompts::PromptError::File(_))
            | RunError::Diverged { .. }
            | RunError::Write(WriteError::Exists { .. } | WriteError::Locked(_) | WriteError::NotAFile(_)) => {
                exit::INVALID
            }
            // A template of the person's own (`prompts_dir`) is their file.
            RunError::Prompt(prompts::PromptError::Template { origin, .. }) if origin != "(shipped)" => {
                exit::INVALID
            }
            RunError::Write(_) | RunError::Prompt(_) => exit::INTERNAL,
            RunError::BudgetSpent { .. } => exit::PAUSED,
        }
    }
}

/// What to do when a workspace's files differ from the record.
pub const DIVERGED_HINT: &str = "restore those files as the run left them (e.g. `git checkout`, or copy them from the folder the run worked in), or pass --workspace with the folder the run worked in, or start a new run with `gavel run`";

/// The message of [`RunError::Diverged`]: every file, one per line, and what to do.
fn diverged(run_id: &str, workspace: &std::path::Path, files: &[(String, built::Divergence)]) -> String {
    use std::fmt::Write as _;
    let mut message = format!(
        "run `{run_id}` cannot go on in {}: {} file{} differ{} from what its record says was built there:",
        workspace.display(),
        files.len(),
        if files.len() == 1 { "" } else { "s" },
        if files.len() == 1 { "s" } else { "" },
    );
    for (path, how) in files {
        let _ = write!(message, "\n  {path}: {}", how.describe());
    }
    let _ = write!(message, "\n{DIVERGED_HINT}");
    message
}
