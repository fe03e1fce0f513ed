//! The fold from a goal's events to its state: the one view `gavel goal
//! status`, `gavel goal list`, `state.md`, the evaluator and the stop hook
//! share. Every field comes from the record alone.

use std::collections::BTreeMap;

use gavel_record::Envelope;
use jiff::Timestamp;
use serde::Serialize;

use crate::event::{Actor, CriterionResult, Evaluated, GoalEvent, GoalStatus, HookDecision, Trigger};

/// A proposal waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingProposal {
    /// The terminal status proposed.
    pub to: GoalStatus,
    /// Why, as a code.
    pub reason: String,
    /// Why, in a sentence.
    pub summary: String,
    /// Who proposed it.
    pub by: Actor,
    /// The evaluation it rests on.
    pub run_id: Option<String>,
    /// The goal file's digest it rests on.
    pub digest: Option<String>,
    /// When it was proposed.
    pub at: Timestamp,
    /// Its event's `seq`.
    pub seq: u64,
}

/// The last evaluation, with when it was recorded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LastEvaluation {
    /// When it was recorded.
    pub at: Timestamp,
    /// Its event's `seq`.
    pub seq: u64,
    /// What it found.
    #[serde(flatten)]
    pub evaluation: Evaluated,
}

/// A goal's state, folded from its events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoalState {
    /// The goal's id (empty before `goal:created`).
    pub goal_id: String,
    /// Its title when created.
    pub title: String,
    /// Where it stands.
    pub status: GoalStatus,
    /// Why it stands there.
    pub status_reason: String,
    /// The commit the path boundary compares against.
    pub base_commit: Option<String>,
    /// The project root when created.
    pub root: String,
    /// When it was created.
    pub created_at: Option<Timestamp>,
    /// Evaluations so far.
    pub evaluations: u32,
    /// The last evaluation.
    pub last: Option<LastEvaluation>,
    /// A proposal waiting for a person.
    pub proposal: Option<PendingProposal>,
    /// The last decision a person took, with whether it confirmed.
    pub last_decision: Option<(GoalStatus, bool, String)>,
    /// Requests each judge seat answered so far (a script seat's next turn).
    pub judge_requests: BTreeMap<String, u32>,
    /// Blocks the stop hook gave in a row (reset by an allow, or by a block
    /// that was not itself a re-entry).
    pub hook_blocks: u32,
    /// The passing criteria of each stop-hook evaluation in the current row
    /// (reset by any other evaluation and by a person's decision).
    #[serde(skip)]
    pub stop_hook_row: Vec<Vec<String>>,
    /// Events in the record.
    pub events: u64,
    /// When the last event was written.
    pub last_at: Option<Timestamp>,
}

impl Default for GoalState {
    fn default() -> Self {
        Self {
            goal_id: String::new(),
            title: String::new(),
            status: GoalStatus::Active,
            status_reason: String::new(),
            base_commit: None,
            root: String::new(),
            created_at: None,
            evaluations: 0,
            last: None,
            proposal: None,
            last_decision: None,
            judge_requests: BTreeMap::new(),
            hook_blocks: 0,
            stop_hook_row: Vec::new(),
            events: 0,
            last_at: None,
        }
    }
}

impl GoalState {
    /// Folds a whole record.
    pub fn fold<'a>(events: impl IntoIterator<Item = &'a Envelope<GoalEvent>>) -> Self {
        let mut state = Self::default();
        for envelope in events {
            state.apply(envelope);
        }
        state
    }

    /// Whether the goal record holds its creation.
    pub fn is_created(&self) -> bool {
        self.created_at.is_some()
    }

    /// The last evaluation's criterion results, by id.
    pub fn last_criteria(&self) -> BTreeMap<&str, &CriterionResult> {
        self.last
            .as_ref()
            .map(|l| l.evaluation.criteria.iter().map(|c| (c.id.as_str(), c)).collect())
            .unwrap_or_default()
    }

    /// When the goal was last active: its last evaluation, else its creation.
    /// The stop hook picks the most recent of several open goals by it.
    pub fn last_touched(&self) -> Option<Timestamp> {
        self.last.as_ref().map(|l| l.at).or(self.created_at)
    }

    /// Applies one event.
    pub fn apply(&mut self, envelope: &Envelope<GoalEvent>) {
        self.events += 1;
        self.last_at = Some(envelope.at);
        match &envelope.event {
            GoalEvent::Created(e) => {
                self.goal_id.clone_from(&e.goal_id);
                self.title.clone_from(&e.title);
                self.base_commit.clone_from(&e.base_commit);
                self.root.clone_from(&e.root);
                self.created_at = Some(envelope.at);
                self.status = GoalStatus::Active;
                self.status_reason = if e.adopted { "adopted".to_owned() } else { "created".to_owned() };
            }
            GoalEvent::Judged(e) => {
                *self.judge_requests.entry(e.seat.clone()).or_default() += 1;
            }
            GoalEvent::Evaluated(e) => {
                self.evaluations += 1;
                if e.trigger == Trigger::StopHook {
                    self.stop_hook_row.push(e.passing());
                } else {
                    self.stop_hook_row.clear();
                }
                self.last =
                    Some(LastEvaluation { at: envelope.at, seq: envelope.seq, evaluation: e.clone() });
            }
            GoalEvent::Status(e) => {
                self.status = e.to;
                self.status_reason.clone_from(&e.reason);
            }
            GoalEvent::Proposed(e) => {
                self.proposal = Some(PendingProposal {
                    to: e.to,
                    reason: e.reason.clone(),
                    summary: e.summary.clone(),
                    by: e.by,
                    run_id: e.run_id.clone(),
                    digest: e.digest.clone(),
                    at: envelope.at,
                    seq: envelope.seq,
                });
            }
            GoalEvent::Withdrawn(_) => {
                self.proposal = None;
            }
            GoalEvent::Decided(e) => {
                self.proposal = None;
                self.stop_hook_row.clear();
                self.hook_blocks = 0;
                self.last_decision = Some((e.to, e.approved, e.by.clone()));
                if e.approved {
                    self.status = e.to;
                    self.status_reason = if e.reason.is_empty() {
                        format!("confirmed by {}", e.by)
                    } else {
                        format!("confirmed by {}: {}", e.by, e.reason)
                    };
                }
            }
            GoalEvent::HookStop(e) => match e.decision {
                HookDecision::Block if e.stop_hook_active => self.hook_blocks += 1,
                HookDecision::Block => self.hook_blocks = 1,
                HookDecision::Allow => self.hook_blocks = 0,
            },
        }
    }

    /// How many stop-hook evaluations in a row, counting back from the last,
    /// share the last one's passing criteria.
    pub fn unchanged_stop_hook_row(&self) -> usize {
        let Some(last) = self.stop_hook_row.last() else { return 0 };
        self.stop_hook_row.iter().rev().take_while(|set| *set == last).count()
    }
}
