//! The lifecycle steps a person takes: create a goal, confirm or reject a
//! proposed terminal status, propose cancelling, and set a non-terminal
//! status directly. Each step is one or two record events and a fresh
//! `state.md`.

use std::path::{Path, PathBuf};

use crate::GoalError;
use crate::event::{Actor, Created, Decided, GoalEvent, GoalStatus, Proposed, StatusChange};
use crate::exec;
use crate::file::{self, GoalFile, LoadedGoal};
use crate::state::GoalState;
use crate::store::{GoalPaths, GoalRecord, write_atomic};

/// The project root for a new goal when none is given: the nearest folder
/// holding `.gavel/goals`, else one holding `.gavel`, else the top of the git
/// repository, else `cwd` itself.
pub async fn root_for_new(cwd: &Path) -> PathBuf {
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_owned());
    if let Some(root) = crate::store::find_root(&cwd) {
        return root;
    }
    if let Some(root) = cwd.ancestors().find(|dir| dir.join(".gavel").is_dir()) {
        return root.to_owned();
    }
    exec::toplevel(&cwd).await.unwrap_or(cwd)
}

/// A goal just created.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedGoal {
    /// Its files.
    pub paths: GoalPaths,
    /// The base commit recorded (`None` outside git).
    pub base_commit: Option<String>,
}

/// Writes `goal` as `.gavel/goals/<id>/goal.yaml` under `root`, then records
/// its creation with the base commit. Refuses a goal that exists.
pub async fn create(root: &Path, goal: &GoalFile) -> Result<CreatedGoal, GoalError> {
    let paths = GoalPaths::new(root, &goal.id)?;
    if paths.file.exists() || paths.record.exists() {
        return Err(GoalError::Refused(format!(
            "goal `{}` already exists ({}); choose another id, or edit its goal.yaml",
            goal.id,
            paths.from_root(&paths.dir)
        )));
    }
    let text = file::render(goal);
    // What gavel writes must read back as what was asked; anything else is a
    // bug here, not the user's mistake.
    let back = file::parse(&paths.file, &text, &goal.id)
        .map_err(|err| GoalError::Internal(format!("the goal file gavel wrote does not read back: {err}")))?;
    if &back != goal {
        return Err(GoalError::Internal("the goal file gavel wrote reads back differently".to_owned()));
    }
    let base_commit = exec::head_commit(root).await;
    let mut record = GoalRecord::open(&paths)?;
    write_atomic(&paths.file, text.as_bytes())?;
    record.append(GoalEvent::Created(Created {
        goal_id: goal.id.clone(),
        title: goal.title.clone(),
        digest: crate::sha256_hex(text.as_bytes()),
        base_commit: base_commit.clone(),
        root: root.display().to_string(),
        gavel: env!("CARGO_PKG_VERSION").to_owned(),
        adopted: false,
    }))?;
    record.write_state_md()?;
    Ok(CreatedGoal { paths, base_commit })
}

/// A person's decision on a pending proposal.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Who decides.
    pub by: String,
    /// Confirm (true) or reject.
    pub approve: bool,
    /// Why.
    pub reason: String,
}

/// Applies or rejects the pending proposal. Confirming an evaluator's
/// proposal is refused once goal.yaml changed since the evaluation it rests on.
pub fn decide(paths: &GoalPaths, decision: &Decision) -> Result<GoalState, GoalError> {
    let mut record = GoalRecord::open(paths)?;
    let state = record.state();
    let Some(proposal) = state.proposal.clone() else {
        return Err(GoalError::Refused(format!(
            "goal `{}` has no proposed transition to {}; it is {} (`gavel goal status {}` shows why)",
            paths.id,
            if decision.approve { "confirm" } else { "reject" },
            state.status,
            paths.id
        )));
    };
    if decision.approve
        && let Some(digest) = &proposal.digest
        && gavel_fs::read::read(&paths.file, gavel_fs::read::UserFile::Goal)
            .map(|b| crate::sha256_hex(&b))
            .ok()
            .as_deref()
            != Some(digest.as_str())
    {
        return Err(GoalError::Refused(format!(
            "goal.yaml of `{}` changed since the evaluation that proposed {}; run `gavel goal evaluate {}` again before confirming",
            paths.id, proposal.to, paths.id
        )));
    }
    record.append(GoalEvent::Decided(Decided {
        to: proposal.to,
        approved: decision.approve,
        by: decision.by.clone(),
        reason: decision.reason.clone(),
    }))?;
    record.write_state_md()?;
    Ok(record.state().clone())
}

/// Proposes cancelling the goal; a person confirms it with `confirm`.
pub fn propose_cancel(paths: &GoalPaths, reason: &str) -> Result<GoalState, GoalError> {
    let mut record = GoalRecord::open(paths)?;
    refuse_finished(paths, record.state())?;
    if record.state().proposal.as_ref().is_some_and(|p| p.to == GoalStatus::Cancelled) {
        return Ok(record.state().clone());
    }
    record.append(GoalEvent::Proposed(Proposed {
        to: GoalStatus::Cancelled,
        reason: "cancel_requested".to_owned(),
        summary: if reason.is_empty() {
            "a person asked to cancel the goal".to_owned()
        } else {
            reason.to_owned()
        },
        by: Actor::Person,
        run_id: None,
        digest: None,
    }))?;
    record.write_state_md()?;
    Ok(record.state().clone())
}

/// Sets a non-terminal status directly (`waiting_for_ci`, ...). Terminal
/// statuses are refused: they are only proposed and confirmed.
pub fn set_status(paths: &GoalPaths, to: GoalStatus, reason: &str) -> Result<GoalState, GoalError> {
    if to.is_terminal() {
        return Err(GoalError::Refused(format!(
            "`{to}` is a terminal status: it is only proposed (by an evaluation, or `gavel goal cancel`) and takes effect with `gavel goal confirm {}`",
            paths.id
        )));
    }
    let mut record = GoalRecord::open(paths)?;
    refuse_finished(paths, record.state())?;
    let from = record.state().status;
    if from != to {
        record.append(GoalEvent::Status(StatusChange {
            from,
            to,
            reason: if reason.is_empty() { "set by a person".to_owned() } else { reason.to_owned() },
            by: Actor::Person,
        }))?;
    }
    record.write_state_md()?;
    Ok(record.state().clone())
}

fn refuse_finished(paths: &GoalPaths, state: &GoalState) -> Result<(), GoalError> {
    if state.status.is_terminal() {
        return Err(GoalError::Refused(format!("goal `{}` is {}; it is finished", paths.id, state.status)));
    }
    if !state.is_created() {
        return Err(GoalError::Refused(format!(
            "goal `{}` has no record yet; evaluate it first (`gavel goal evaluate {}`)",
            paths.id, paths.id
        )));
    }
    Ok(())
}

/// Loads a goal's file for a step that needs it, with a clear error.
pub fn load(paths: &GoalPaths) -> Result<LoadedGoal, GoalError> {
    Ok(LoadedGoal::load(&paths.file, &paths.id)?)
}
