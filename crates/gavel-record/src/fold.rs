//! The fold from events to run state: the one view `gavel status`, the
//! summary and resume share. Every field comes from the record alone.

use gavel_domain::Usage;
use jiff::Timestamp;
use serde::Serialize;

use crate::event::{EndStatus, Envelope, Event};

/// Where a run stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "lowercase")]
pub enum RunStatus {
    /// No event yet.
    Empty,
    /// Started and not ended or paused: working now, or stopped by a crash
    /// (resume takes it up again).
    Running,
    /// Stopped to wait for something; resume takes it up again.
    Paused {
        /// Why.
        reason: String,
        /// What it waits for.
        waiting_for: String,
    },
    /// Ended.
    Ended {
        /// Pass or fail.
        status: EndStatus,
        /// Why.
        summary: String,
    },
}

impl RunStatus {
    /// One word for the status: `running`, `paused`, `pass`, `fail`, `empty`.
    pub fn word(&self) -> &'static str {
        match self {
            RunStatus::Empty => "empty",
            RunStatus::Running => "running",
            RunStatus::Paused { .. } => "paused",
            RunStatus::Ended { status, .. } => status.as_str(),
        }
    }
}

/// A run's state, folded from its events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunState {
    /// The run's id.
    pub run_id: String,
    /// The workflow's name.
    pub workflow: String,
    /// The workflow file.
    pub file: String,
    /// The workspace.
    pub workspace: String,
    /// SHA-256 of the workflow and brief when the run started.
    pub digest: String,
    /// Where the run stands.
    pub status: RunStatus,
    /// The stage that last started.
    pub stage: Option<String>,
    /// That stage's round.
    pub round: u32,
    /// Rounds over all stages (the count `run:end` reports once ended).
    pub rounds: u32,
    /// Seat requests sent, over all stages.
    pub requests: u64,
    /// Seat requests that failed.
    pub seat_errors: u64,
    /// A seat request sent and not yet answered, as `stage/seat/request`.
    pub in_flight: Option<String>,
    /// Usage so far.
    pub usage: Usage,
    /// Events in the record.
    pub events: u64,
    /// When the run started.
    pub started_at: Option<Timestamp>,
    /// When the last event was written.
    pub last_at: Option<Timestamp>,
    /// How often the run was taken up again.
    pub resumes: u32,
}

impl Default for RunState {
    fn default() -> Self {
        Self {
            run_id: String::new(),
            workflow: String::new(),
            file: String::new(),
            workspace: String::new(),
            digest: String::new(),
            status: RunStatus::Empty,
            stage: None,
            round: 0,
            rounds: 0,
            requests: 0,
            seat_errors: 0,
            in_flight: None,
            usage: Usage::default(),
            events: 0,
            started_at: None,
            last_at: None,
            resumes: 0,
        }
    }
}

impl RunState {
    /// Folds a whole record.
    pub fn fold<'a>(events: impl IntoIterator<Item = &'a Envelope>) -> Self {
        let mut state = Self::default();
        for envelope in events {
            state.apply(envelope);
        }
        state
    }

    /// Applies one event.
    pub fn apply(&mut self, envelope: &Envelope) {
        self.events = envelope.seq;
        self.last_at = Some(envelope.at);
        match &envelope.event {
            Event::RunStart(start) => {
                self.run_id.clone_from(&start.run_id);
                self.workflow.clone_from(&start.workflow);
                self.file.clone_from(&start.file);
                self.workspace.clone_from(&start.workspace);
                self.digest.clone_from(&start.digest);
                self.started_at = Some(envelope.at);
                self.status = RunStatus::Running;
            }
            Event::StageStart(start) => {
                self.stage = Some(start.stage.clone());
                self.round = start.round;
                self.rounds += 1;
            }
            Event::SeatRequest(request) => {
                self.requests += 1;
                let key = &request.key;
                self.in_flight = Some(format!("{}/{}/{}", key.stage, key.seat, key.request));
            }
            Event::SeatReply(reply) => {
                self.usage.add(reply.usage);
                self.in_flight = None;
            }
            Event::SeatError(_) => {
                self.seat_errors += 1;
                self.in_flight = None;
            }
            Event::RunPause(pause) => {
                self.status = RunStatus::Paused {
                    reason: pause.reason.clone(),
                    waiting_for: pause.waiting_for.clone(),
                };
            }
            Event::RunResume(_) => {
                self.resumes += 1;
                self.status = RunStatus::Running;
            }
            Event::RunEnd(end) => {
                self.rounds = end.rounds;
                self.status = RunStatus::Ended { status: end.status, summary: end.summary.clone() };
            }
            Event::BuildDone(_)
            | Event::CheckRun(_)
            | Event::JobDone(_)
            | Event::GoalCheck(_)
            | Event::ReviewDecision(_)
            | Event::ReviewSynthesis(_)
            | Event::RefineJudge(_)
            | Event::Kickback(_)
            | Event::ApprovalRequest(_)
            | Event::Approval(_) => {}
        }
    }
}
