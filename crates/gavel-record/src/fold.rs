//! The fold from events to run state: the one view `gavel status`, the
//! summary and resume share. Every field comes from the record alone.

use std::collections::{HashMap, HashSet};

use gavel_domain::{RequestKind, Usage};
use jiff::Timestamp;
use serde::Serialize;

use crate::event::{EndStatus, Envelope, Event, ReviewOutcome};

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

/// What [`RunState`] prefixes a failure that rests on a failed request:
/// such a failure is counted once, at its `seat:error`.
const RESTS_ON_A_SEAT_ERROR: &str = "the seat failed";

impl RunState {
    /// Counts a request whose replies could not be used, unless its reason
    /// is a failed request (a `seat:error`, counted already).
    fn unusable(
        &mut self,
        stage: &str,
        round: u32,
        request: RequestKind,
        seat: Option<&String>,
        kind: &'static str,
        error: &str,
    ) {
        if error.starts_with(RESTS_ON_A_SEAT_ERROR) {
            return;
        }
        let asked = self.last_asked.get(&(stage.to_owned(), round, request));
        let seat = seat.cloned().or_else(|| asked.map(|(seat, _)| seat.clone())).unwrap_or_default();
        let attempt = asked.map_or(0, |(_, attempt)| *attempt);
        self.engine_errors += 1;
        self.errors.push(EngineError {
            kind,
            stage: stage.to_owned(),
            round,
            seat,
            request,
            attempt,
            error: error.to_owned(),
        });
    }
}

/// One engine error the record holds, with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EngineError {
    /// The event it comes from: `seat:error`, or `review:decision` for a
    /// reviewer whose decision is `error` because its replies could not be
    /// used.
    pub kind: &'static str,
    /// The stage.
    pub stage: String,
    /// The round.
    pub round: u32,
    /// The seat (for a reviewer, its reviewer name when the record does not
    /// name the seat).
    pub seat: String,
    /// The request kind.
    pub request: RequestKind,
    /// The attempt.
    pub attempt: u32,
    /// Why, as recorded (secrets scrubbed).
    pub error: String,
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
    /// The workspace: where the run started, or where the latest resume
    /// took it up.
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
    /// Engine errors: failed seat requests, and reviewers whose decision is
    /// `error` because their replies could not be used (a reviewer whose
    /// last attempt failed is counted once, by its `seat:error`).
    pub engine_errors: u64,
    /// Each engine error with its reason, in record order.
    pub errors: Vec<EngineError>,
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
    /// The keys of failed review requests, so a reviewer's `error` decision
    /// resting on one is not counted twice.
    #[serde(skip)]
    failed_reviews: HashSet<(String, u32, String, u32)>,
    /// The last request of a kind in a stage's round: its seat and attempt
    /// (a merge's or a judge's failure names no seat).
    #[serde(skip)]
    last_asked: HashMap<(String, u32, RequestKind), (String, u32)>,
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
            engine_errors: 0,
            errors: Vec::new(),
            in_flight: None,
            usage: Usage::default(),
            events: 0,
            started_at: None,
            last_at: None,
            resumes: 0,
            failed_reviews: HashSet::new(),
            last_asked: HashMap::new(),
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
                self.last_asked
                    .insert((key.stage.clone(), key.round, key.request), (key.seat.clone(), key.attempt));
            }
            Event::SeatReply(reply) => {
                self.usage.add(reply.usage);
                self.in_flight = None;
            }
            Event::SeatError(error) => {
                self.seat_errors += 1;
                self.engine_errors += 1;
                self.in_flight = None;
                let key = &error.key;
                if key.request == RequestKind::Review {
                    self.failed_reviews.insert((key.stage.clone(), key.round, key.seat.clone(), key.attempt));
                }
                self.errors.push(EngineError {
                    kind: "seat:error",
                    stage: key.stage.clone(),
                    round: key.round,
                    seat: key.seat.clone(),
                    request: key.request,
                    attempt: key.attempt,
                    error: error.error.clone(),
                });
            }
            Event::ReviewDecision(decision) if decision.decision == ReviewOutcome::Error => {
                let seat = if decision.seat.is_empty() { &decision.reviewer } else { &decision.seat };
                let key = (decision.stage.clone(), decision.round, seat.clone(), decision.attempt);
                if !self.failed_reviews.contains(&key) {
                    self.engine_errors += 1;
                    self.errors.push(EngineError {
                        kind: "review:decision",
                        stage: decision.stage.clone(),
                        round: decision.round,
                        seat: seat.clone(),
                        request: RequestKind::Review,
                        attempt: decision.attempt,
                        error: decision
                            .error
                            .clone()
                            .unwrap_or_else(|| "no usable decision (the record names no reason)".to_owned()),
                    });
                }
            }
            // A merge, a vote or a judge whose replies could not be used
            // (asked once more, unusable again): an engine error too,
            // unless it rests on a failed request already counted.
            Event::ReviewSynthesis(synthesis) => {
                if let Some(error) = &synthesis.merge_error {
                    self.unusable(
                        &synthesis.stage,
                        synthesis.round,
                        RequestKind::Merge,
                        None,
                        "review:synthesis",
                        error,
                    );
                }
                for (voter, error) in &synthesis.vote_errors {
                    self.unusable(
                        &synthesis.stage,
                        synthesis.round,
                        RequestKind::Vote,
                        Some(voter),
                        "review:synthesis",
                        error,
                    );
                }
            }
            Event::RefineJudge(judge) => {
                if let Some(error) = &judge.error {
                    self.unusable(&judge.stage, judge.round, RequestKind::Judge, None, "refine:judge", error);
                }
            }
            Event::RunPause(pause) => {
                self.status = RunStatus::Paused {
                    reason: pause.reason.clone(),
                    waiting_for: pause.waiting_for.clone(),
                };
            }
            Event::RunResume(resume) => {
                self.resumes += 1;
                self.status = RunStatus::Running;
                if !resume.workspace.is_empty() {
                    self.workspace.clone_from(&resume.workspace);
                }
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
            | Event::Kickback(_)
            | Event::ApprovalRequest(_)
            | Event::Approval(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::fmt::Write as _;
    use std::path::Path;

    use super::*;
    use crate::read::parse_record;

    fn fold(lines: &[&str]) -> RunState {
        let mut text = String::new();
        for (i, data) in lines.iter().enumerate() {
            let _ = writeln!(text, "{{\"v\":1,\"seq\":{},\"at\":\"2026-01-01T00:00:00Z\",{data}}}", i + 1);
        }
        let recording = parse_record(Path::new("events.jsonl"), text.as_bytes()).unwrap();
        RunState::fold(&recording.events)
    }

    const START: &str =
        r#""kind":"run:start","data":{"run_id":"r","workflow":"w","file":"w.toml","digest":"d"}"#;

    #[test]
    fn records_from_before_the_reasons_still_read_and_count() {
        // No `note`, `seat`, `error`, `merge_error`, `vote_errors`, `reason`.
        let state = fold(&[
            START,
            r#""kind":"seat:request","data":{"stage":"s","round":1,"seat":"c","request":"review","attempt":2,"prompt_sha256":"p"}"#,
            r#""kind":"review:decision","data":{"stage":"s","round":1,"reviewer":"s-1","decision":"error","findings":[],"attempt":2}"#,
            r#""kind":"review:synthesis","data":{"stage":"s","round":1,"entries":[],"merge_failed":true,"no_votes_from":["s-2"]}"#,
            r#""kind":"refine:judge","data":{"stage":"s","round":1,"route":"again","reason":"r"}"#,
            r#""kind":"approval:request","data":{"stage":"a","files":{}}"#,
        ]);
        assert_eq!(state.engine_errors, 1);
        assert_eq!(state.errors[0].seat, "s-1", "the reviewer's name stands in for the seat");
        assert!(state.errors[0].error.contains("names no reason"), "{:?}", state.errors[0]);
    }

    #[test]
    fn engine_errors_count_failed_requests_and_unusable_reviews_once_each() {
        let state = fold(&[
            START,
            // A reviewer whose engine failed twice: two errors, its decision no third.
            r#""kind":"seat:error","data":{"stage":"s","round":1,"seat":"a","request":"review","attempt":1,"error":"reset"}"#,
            r#""kind":"seat:error","data":{"stage":"s","round":1,"seat":"a","request":"review","attempt":2,"error":"reset again"}"#,
            r#""kind":"review:decision","data":{"stage":"s","round":1,"reviewer":"s-1","seat":"a","decision":"error","findings":[],"attempt":2,"error":"the seat failed: reset again"}"#,
            // A reviewer whose replies could not be read: one error, with why.
            r#""kind":"seat:request","data":{"stage":"s","round":1,"seat":"b","request":"review","attempt":2,"prompt_sha256":"p","note":"Your reply had no JSON object."}"#,
            r#""kind":"review:decision","data":{"stage":"s","round":1,"reviewer":"s-2","seat":"b","decision":"error","findings":[],"attempt":2,"error":"Your reply had no JSON object."}"#,
            // A passing reviewer is no error.
            r#""kind":"review:decision","data":{"stage":"s","round":1,"reviewer":"s-3","seat":"c","decision":"pass","findings":[],"attempt":1}"#,
        ]);
        assert_eq!((state.seat_errors, state.engine_errors), (2, 3));
        let listed: Vec<(&str, &str, &str)> =
            state.errors.iter().map(|e| (e.kind, e.seat.as_str(), e.error.as_str())).collect();
        assert_eq!(
            listed,
            [
                ("seat:error", "a", "reset"),
                ("seat:error", "a", "reset again"),
                ("review:decision", "b", "Your reply had no JSON object."),
            ]
        );
        let json = serde_json::to_value(&state).unwrap();
        assert_eq!(json["engine_errors"], 3);
        assert_eq!(json["errors"][2]["request"], "review");
        assert!(json.get("failed_reviews").is_none(), "the fold's own index is not a view");
    }

    #[test]
    fn merges_votes_and_judges_whose_replies_could_not_be_used_count_too() {
        let state = fold(&[
            START,
            r#""kind":"seat:request","data":{"stage":"s","round":1,"seat":"m","request":"merge","attempt":2,"prompt_sha256":"p","note":"no JSON"}"#,
            r#""kind":"seat:request","data":{"stage":"s","round":1,"seat":"v","request":"vote","attempt":2,"prompt_sha256":"p"}"#,
            r#""kind":"seat:error","data":{"stage":"s","round":1,"seat":"w","request":"vote","attempt":2,"error":"boom"}"#,
            // The merge and one vote unusable twice; the other vote rests on
            // its seat:error, counted once.
            r#""kind":"review:synthesis","data":{"stage":"s","round":1,"entries":[],"merge_failed":true,"no_votes_from":["v","w"],"merge_error":"Your reply had no JSON object.","vote_errors":{"v":"`votes` is missing","w":"the seat failed: boom"}}"#,
            r#""kind":"seat:request","data":{"stage":"s","round":1,"seat":"j","request":"judge","attempt":2,"prompt_sha256":"p"}"#,
            r#""kind":"refine:judge","data":{"stage":"s","round":1,"route":"again","reason":"r","answers":{},"findings":[],"error":"no JSON object"}"#,
            // A judge whose engine failed: counted at its seat:error only.
            r#""kind":"seat:error","data":{"stage":"s","round":2,"seat":"j","request":"judge","attempt":2,"error":"down"}"#,
            r#""kind":"refine:judge","data":{"stage":"s","round":2,"route":"again","reason":"r","answers":{},"findings":[],"error":"the seat failed: down"}"#,
        ]);
        let listed: Vec<(&str, &str, RequestKind, u32, &str)> = state
            .errors
            .iter()
            .map(|e| (e.kind, e.seat.as_str(), e.request, e.attempt, e.error.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                ("seat:error", "w", RequestKind::Vote, 2, "boom"),
                ("review:synthesis", "m", RequestKind::Merge, 2, "Your reply had no JSON object."),
                ("review:synthesis", "v", RequestKind::Vote, 2, "`votes` is missing"),
                ("refine:judge", "j", RequestKind::Judge, 2, "no JSON object"),
                ("seat:error", "j", RequestKind::Judge, 2, "down"),
            ]
        );
        assert_eq!((state.seat_errors, state.engine_errors), (2, 5));
    }
}
