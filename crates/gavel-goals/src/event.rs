//! A goal's record: its own event kinds, written in the run record's envelope
//! (`{"v","seq","at","kind","data"}`) by the same writer and read by the same
//! reader, under the record's rules (one line per event, synced, torn tail cut).
//!
//! The kinds are a separate enum rather than new variants of the run
//! record's `Event`: a goal's record and a run's record are different logs, and
//! neither reader should accept the other's events. The plan/execute/verify
//! pipeline adds its kinds (`plan:*`, `task:*`) here, and older
//! gavels refuse a record holding them with the reader's "written by a newer
//! gavel" message, never misread it.
//!
//! Format rules are the run record's: fields added later carry
//! `#[serde(default)]`; a kind is never removed or renamed.

use std::fmt;

use gavel_domain::Usage;
use gavel_record::RecordEvent;
use serde::{Deserialize, Serialize};

/// One event of a goal's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "data")]
pub enum GoalEvent {
    /// The goal was created (or an existing goal file adopted): the facts
    /// fixed at creation, such as the base commit the path boundary uses.
    #[serde(rename = "goal:created")]
    Created(Created),
    /// A judge seat was asked about one fuzzy criterion (an effect with its result).
    #[serde(rename = "goal:judged")]
    Judged(Judged),
    /// One evaluation: every criterion's result, the verdict and why.
    #[serde(rename = "goal:evaluated")]
    Evaluated(Evaluated),
    /// A non-terminal status written directly (`active`, `blocked`,
    /// `waiting_for_user`, `waiting_for_ci`).
    #[serde(rename = "goal:status")]
    Status(StatusChange),
    /// A terminal status proposed (`achieved`, `failed`, `cancelled`); it
    /// takes effect only when a person confirms it.
    #[serde(rename = "goal:proposed")]
    Proposed(Proposed),
    /// A pending proposal taken back because a later evaluation no longer
    /// supports it (the checks regressed, or progress resumed).
    #[serde(rename = "goal:withdrawn")]
    Withdrawn(Withdrawn),
    /// A person's decision on a proposal.
    #[serde(rename = "goal:decided")]
    Decided(Decided),
    /// The Claude Code stop hook blocked or allowed a stop.
    #[serde(rename = "hook:stop")]
    HookStop(HookStop),
}

impl GoalEvent {
    /// Every kind this version of gavel writes in a goal's record.
    pub const KINDS: [&'static str; 8] = [
        "goal:created",
        "goal:judged",
        "goal:evaluated",
        "goal:status",
        "goal:proposed",
        "goal:withdrawn",
        "goal:decided",
        "hook:stop",
    ];

    /// The event's `kind` as written.
    pub const fn kind(&self) -> &'static str {
        match self {
            GoalEvent::Created(_) => "goal:created",
            GoalEvent::Judged(_) => "goal:judged",
            GoalEvent::Evaluated(_) => "goal:evaluated",
            GoalEvent::Status(_) => "goal:status",
            GoalEvent::Proposed(_) => "goal:proposed",
            GoalEvent::Withdrawn(_) => "goal:withdrawn",
            GoalEvent::Decided(_) => "goal:decided",
            GoalEvent::HookStop(_) => "hook:stop",
        }
    }
}

impl RecordEvent for GoalEvent {
    const KINDS: &'static [&'static str] = &GoalEvent::KINDS;

    fn kind_name(&self) -> &'static str {
        self.kind()
    }
}

/// A goal's lifecycle status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    /// Being worked on.
    Active,
    /// A constraint stops it (a path-boundary violation).
    Blocked,
    /// Waiting for a person (a criterion only a judge or a person can decide).
    WaitingForUser,
    /// Waiting for CI.
    WaitingForCi,
    /// Done, confirmed by a person.
    Achieved,
    /// Given up, confirmed by a person.
    Failed,
    /// Called off, confirmed by a person.
    Cancelled,
}

impl GoalStatus {
    /// Every status, for messages.
    pub const ALL: [GoalStatus; 7] = [
        GoalStatus::Active,
        GoalStatus::Blocked,
        GoalStatus::WaitingForUser,
        GoalStatus::WaitingForCi,
        GoalStatus::Achieved,
        GoalStatus::Failed,
        GoalStatus::Cancelled,
    ];

    /// The status as written.
    pub const fn as_str(self) -> &'static str {
        match self {
            GoalStatus::Active => "active",
            GoalStatus::Blocked => "blocked",
            GoalStatus::WaitingForUser => "waiting_for_user",
            GoalStatus::WaitingForCi => "waiting_for_ci",
            GoalStatus::Achieved => "achieved",
            GoalStatus::Failed => "failed",
            GoalStatus::Cancelled => "cancelled",
        }
    }

    /// Whether the status ends the goal; such a status is only ever proposed,
    /// and written by a person's confirmation.
    pub const fn is_terminal(self) -> bool {
        matches!(self, GoalStatus::Achieved | GoalStatus::Failed | GoalStatus::Cancelled)
    }
}

impl fmt::Display for GoalStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for GoalStatus {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GoalStatus::ALL.into_iter().find(|st| st.as_str() == s).ok_or_else(|| {
            format!(
                "unknown status `{s}`; expected one of {}",
                GoalStatus::ALL.map(GoalStatus::as_str).join(", ")
            )
        })
    }
}

/// What asked for an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Trigger {
    /// A person, from the command line.
    #[default]
    Manual,
    /// The Claude Code stop hook.
    StopHook,
    /// Another command or script.
    Command,
}

impl Trigger {
    /// The trigger as written.
    pub const fn as_str(self) -> &'static str {
        match self {
            Trigger::Manual => "manual",
            Trigger::StopHook => "stop-hook",
            Trigger::Command => "command",
        }
    }
}

/// The outcome of an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every `must_pass` criterion is met.
    Pass,
    /// A `must_pass` criterion is not met.
    Fail,
    /// A `must_pass` criterion is undecided (waiting for a judge or a person).
    Incomplete,
    /// A constraint is broken (a path-boundary violation).
    Blocked,
}

impl Verdict {
    /// The verdict as written.
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Incomplete => "incomplete",
            Verdict::Blocked => "blocked",
        }
    }
}

/// Where one criterion stands after an evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CriterionStatus {
    /// Met.
    Pass,
    /// Not met.
    Fail,
    /// Not decided (no command and no judge, or the judge could not say).
    Pending,
}

impl CriterionStatus {
    /// The status as written.
    pub const fn as_str(self) -> &'static str {
        match self {
            CriterionStatus::Pass => "pass",
            CriterionStatus::Fail => "fail",
            CriterionStatus::Pending => "pending",
        }
    }
}

/// What decided a criterion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecidedBy {
    /// Its command's exit code.
    Command,
    /// The judge seat.
    Judge,
    /// Nothing yet.
    None,
}

/// `goal:created`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Created {
    /// The goal's id.
    pub goal_id: String,
    /// Its title when created.
    pub title: String,
    /// SHA-256 of goal.yaml when created, hex.
    pub digest: String,
    /// `git rev-parse HEAD` in the project root when the goal was created;
    /// `None` outside git (the path boundary cannot be checked then).
    pub base_commit: Option<String>,
    /// The project root (the folder holding `.gavel`), absolute.
    pub root: String,
    /// The gavel version that created it.
    pub gavel: String,
    /// The goal file was written by hand and adopted by its first evaluation,
    /// so the base commit is the one at that moment.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub adopted: bool,
}

/// A judge's answer on a criterion, as the protocol reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JudgeVerdict {
    /// The criterion holds.
    Met,
    /// It does not.
    Unmet,
}

/// `goal:judged`: one request to the judge seat and its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// The evaluation's run id.
    pub run_id: String,
    /// The one criterion asked about.
    pub criterion: String,
    /// The seat's name (`judge`).
    pub seat: String,
    /// 1 for the first ask, 2 for the "ask once more" turn.
    pub attempt: u32,
    /// SHA-256 of the prompt, hex.
    pub prompt_sha256: String,
    /// The reply text, when the seat answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// The engine error, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The verdict read from the reply, when it was readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<JudgeVerdict>,
    /// The judge's confidence, 0 to 1, when given.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "gavel_domain::finite::serialize_option"
    )]
    pub confidence: Option<f64>,
    /// The judge's evidence, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// What was wrong with an unreadable reply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Tokens and cost.
    #[serde(default)]
    pub usage: Usage,
    /// How long it took, in milliseconds.
    pub ms: u64,
}

/// One criterion's result in an evaluation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriterionResult {
    /// The criterion's id.
    pub id: String,
    /// Its text (kept here so every view is a fold of the record alone).
    pub text: String,
    /// Whether the goal needs it.
    pub must_pass: bool,
    /// Where it stands.
    pub status: CriterionStatus,
    /// What decided it.
    pub decided_by: DecidedBy,
    /// Its command, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The command's exit code (`None` when it did not exit on its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// Whether its timeout stopped it.
    #[serde(default)]
    pub timed_out: bool,
    /// How long the command ran, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    /// The last lines of its output (stderr merged into stdout), as plain
    /// text.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub output_tail: String,
    /// Whether `output_tail` holds less than the command printed. Written
    /// only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub output_truncated: bool,
    /// Its evidence file, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// SHA-256 of the evidence file's bytes, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence_sha256: Option<String>,
    /// The judge's confidence, 0 to 1, for a criterion a judge decided.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "gavel_domain::finite::serialize_option"
    )]
    pub confidence: Option<f64>,
    /// One line on why it stands where it does.
    #[serde(default)]
    pub note: String,
}

/// The path-boundary check of an evaluation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathBoundary {
    /// The globs checked.
    pub allowed: Vec<String>,
    /// The base commit the changes were taken against.
    #[serde(default)]
    pub base: Option<String>,
    /// Files changed (or added) since the base.
    #[serde(default)]
    pub changed: Vec<String>,
    /// The changed files no glob allows.
    #[serde(default)]
    pub violations: Vec<String>,
    /// Why the check could not run (no base commit, git failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its evidence file, relative to the project root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

impl PathBoundary {
    /// Whether the check passed.
    pub fn holds(&self) -> bool {
        self.error.is_none() && self.violations.is_empty()
    }
}

/// `goal:evaluated`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluated {
    /// The evaluation's run id (its evidence folder).
    pub run_id: String,
    /// What asked for it.
    pub trigger: Trigger,
    /// SHA-256 of goal.yaml as evaluated, hex.
    pub digest: String,
    /// The verdict.
    pub verdict: Verdict,
    /// How sure the verdict is, 0 to 1: 1 when commands decided it.
    #[serde(serialize_with = "gavel_domain::finite::serialize")]
    pub confidence: f64,
    /// Why, as a code (`all_criteria_pass`, `criteria_failed`,
    /// `criteria_pending`, `path_boundary_violation`, `path_boundary_unverifiable`).
    pub reason: String,
    /// Why, in a sentence.
    pub summary: String,
    /// What to do next.
    pub hint: String,
    /// Every criterion's result, in the goal file's order.
    pub criteria: Vec<CriterionResult>,
    /// The path-boundary check, when `allowed_paths` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_boundary: Option<PathBoundary>,
    /// How long the evaluation took, in milliseconds.
    pub ms: u64,
}

impl Evaluated {
    /// The ids of the criteria that pass, sorted: what stuck detection compares.
    pub fn passing(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .criteria
            .iter()
            .filter(|c| c.status == CriterionStatus::Pass)
            .map(|c| c.id.clone())
            .collect();
        ids.sort();
        ids
    }
}

/// Who wrote a status or a proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Actor {
    /// The evaluator, from a verdict.
    Evaluator,
    /// A person, from the command line.
    Person,
    /// The stop hook.
    Hook,
}

/// `goal:status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusChange {
    /// The status before.
    pub from: GoalStatus,
    /// The status now (never terminal).
    pub to: GoalStatus,
    /// Why, as a code or a sentence.
    pub reason: String,
    /// Who wrote it.
    pub by: Actor,
}

/// `goal:proposed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposed {
    /// The terminal status proposed.
    pub to: GoalStatus,
    /// Why, as a code (`all_criteria_pass`, `stuck_no_progress`, `cancel_requested`).
    pub reason: String,
    /// Why, in a sentence.
    pub summary: String,
    /// Who proposed it.
    pub by: Actor,
    /// The evaluation it rests on, when an evaluation proposed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// SHA-256 of goal.yaml the proposal rests on; confirming is refused
    /// once the goal file changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

/// `goal:withdrawn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Withdrawn {
    /// The status that had been proposed.
    pub to: GoalStatus,
    /// Why it no longer stands.
    pub reason: String,
    /// The evaluation that withdrew it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// `goal:decided`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decided {
    /// The status that had been proposed.
    pub to: GoalStatus,
    /// Confirmed (the status takes effect) or rejected (the goal goes on).
    pub approved: bool,
    /// Who decided.
    pub by: String,
    /// Why, when given.
    #[serde(default)]
    pub reason: String,
}

/// What the stop hook told Claude Code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HookDecision {
    /// Keep working: the stop was blocked.
    Block,
    /// The agent may stop.
    Allow,
}

/// `hook:stop`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HookStop {
    /// Claude Code's session id.
    pub session_id: String,
    /// Whether Claude Code was already continuing because of a stop hook.
    pub stop_hook_active: bool,
    /// Block or allow.
    pub decision: HookDecision,
    /// Why, as a code (`criteria_failed`, `path_boundary_violation`, `passes`,
    /// `stuck_no_progress`, `incomplete`, `block_limit`, `proposal_pending`).
    pub reason: String,
    /// The evaluation it rests on, when it evaluated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}
