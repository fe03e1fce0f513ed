//! The journal: what makes resume a replay.
//!
//! A run is executed from the start every time. Each effect (a seat request,
//! a build observation, a command) has a key; the journal answers from the
//! record when the key has a result, and otherwise performs the effect and
//! appends its result. Derived events (a stage starting, a goal check's
//! verdict) are keyed too, so replaying never records them twice. Pauses and
//! resumes are session markers, always appended.

use rustc_hash::{FxBuildHasher, FxHashMap as HashMap, FxHashSet as HashSet};
use std::path::Path;

use gavel_domain::{RequestKind, Usage};
use gavel_record::event::{
    Approval, ApprovalRequest, BuildDone, CheckRun, EndStatus, JobDone, RunEnd, RunPause, RunResume,
    SeatError, SeatKey, SeatReply, SeatRequest,
};
use gavel_record::{Envelope, Event, RecordWriter, WriteError};
use gavel_seats::secret::scrub_value;

use crate::Observer;

/// A seat effect's recorded result.
#[derive(Debug, Clone, PartialEq)]
pub enum SeatResult {
    /// The seat answered.
    Reply(SeatReply),
    /// The seat failed.
    Error(SeatError),
}

/// A recorded attempt: its result and where in the record it landed.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded<T> {
    /// The result.
    pub value: T,
    /// Its `seq`.
    pub seq: u64,
}

/// The record as an index of effects, plus the writer that extends it.
pub struct Journal<'o> {
    writer: RecordWriter,
    observer: &'o dyn Observer,
    derived: HashSet<String>,
    requests: HashSet<SeatKey>,
    results: HashMap<SeatKey, Recorded<SeatResult>>,
    builds: HashMap<(String, u32), BuildDone>,
    checks: HashMap<(String, u32), CheckRun>,
    jobs: HashMap<(String, u32), JobDone>,
    asks: HashMap<(String, u32), ApprovalRequest>,
    approvals: HashMap<(String, u32), Recorded<Approval>>,
    turns: HashMap<(String, RequestKind), u32>,
    last_pause_seq: u64,
    usage: Usage,
    rounds: u32,
    end: Option<RunEnd>,
}

impl std::fmt::Debug for Journal<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("record", &self.writer.path())
            .field("next_seq", &self.writer.next_seq())
            .finish_non_exhaustive()
    }
}

impl<'o> Journal<'o> {
    /// A journal over `events` already in the record, appending through
    /// `writer`. Takes the events: they move into the index, not cloned.
    pub fn new(writer: RecordWriter, events: Vec<Envelope>, observer: &'o dyn Observer) -> Self {
        let mut journal = Self {
            writer,
            observer,
            // About a third of a long record's events are results, a third
            // requests, the rest derived: sized once, never rehashed.
            derived: HashSet::with_capacity_and_hasher(events.len() / 2, FxBuildHasher),
            requests: HashSet::with_capacity_and_hasher(events.len() / 3, FxBuildHasher),
            results: HashMap::with_capacity_and_hasher(events.len() / 3, FxBuildHasher),
            builds: HashMap::default(),
            checks: HashMap::default(),
            jobs: HashMap::default(),
            asks: HashMap::default(),
            approvals: HashMap::default(),
            turns: HashMap::default(),
            last_pause_seq: 0,
            usage: Usage::default(),
            rounds: 0,
            end: None,
        };
        for envelope in events {
            journal.index(envelope);
        }
        // Usage and rounds are counted as the replay walks the run again.
        journal.usage = Usage::default();
        journal.rounds = 0;
        journal
    }

    fn index(&mut self, envelope: Envelope) {
        let seq = envelope.seq;
        if let Some(key) = derived_key(&envelope.event) {
            self.derived.insert(key);
        }
        match envelope.event {
            Event::SeatRequest(request) => {
                self.requests.insert(request.key);
            }
            Event::SeatReply(reply) => {
                self.results.insert(reply.key.clone(), Recorded { value: SeatResult::Reply(reply), seq });
            }
            Event::SeatError(error) => {
                self.results.insert(error.key.clone(), Recorded { value: SeatResult::Error(error), seq });
            }
            Event::BuildDone(build) => {
                self.builds.insert((build.stage.clone(), build.round), build);
            }
            Event::CheckRun(check) => {
                self.checks.insert((check.stage.clone(), check.round), check);
            }
            Event::JobDone(job) => {
                self.jobs.insert((job.stage.clone(), job.round), job);
            }
            Event::ApprovalRequest(ask) => {
                self.asks.insert((ask.stage.clone(), ask.round), ask);
            }
            Event::Approval(approval) => {
                self.approvals
                    .insert((approval.stage.clone(), approval.round), Recorded { value: approval, seq });
            }
            Event::RunPause(_) => self.last_pause_seq = seq,
            Event::RunEnd(end) => self.end = Some(end),
            _ => {}
        }
    }

    /// Closes the record (its writer and lock are released now) and frees
    /// the index. A long run's index is millions of small allocations, so
    /// it is freed on a thread of its own rather than on the way to the
    /// report.
    pub fn close(self) {
        let Journal {
            writer, derived, requests, results, builds, checks, jobs, asks, approvals, turns, ..
        } = self;
        drop(writer);
        let index = (derived, requests, results, builds, checks, jobs, asks, approvals, turns);
        if index.2.len() < 10_000 {
            return;
        }
        let freed = std::thread::Builder::new().name("gavel-free".to_owned()).spawn(move || drop(index));
        // No thread to be had: the caller frees it after all.
        if let Err(err) = freed {
            drop(err);
        }
    }

    /// The record's path.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// How the run ended, when the record already says.
    pub fn end(&self) -> Option<&RunEnd> {
        self.end.as_ref()
    }

    /// Usage counted so far in this walk of the run.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Rounds counted so far in this walk of the run.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// The `seq` of the last pause: failures after it count toward the next.
    pub fn last_pause_seq(&self) -> u64 {
        self.last_pause_seq
    }

    /// Appends an event unconditionally (session markers).
    ///
    /// Every event is scrubbed of the secrets the process knows before it is
    /// written: the one door text goes through into the record.
    pub fn append(&mut self, event: Event) -> Result<Envelope, WriteError> {
        let envelope = self.writer.append(scrub_value(event))?;
        self.index(envelope.clone());
        self.observer.on_event(&envelope);
        Ok(envelope)
    }

    /// Records a derived event unless the record already holds it.
    pub fn emit(&mut self, event: Event) -> Result<(), WriteError> {
        if let Event::StageStart(_) = &event {
            self.rounds += 1;
        }
        if derived_key(&event).is_some_and(|key| self.derived.contains(&key)) {
            return Ok(());
        }
        self.append(event).map(|_| ())
    }

    /// The next turn number of `kind` for `seat`, counting every
    /// request walked so far, replayed or live.
    pub fn next_turn(&mut self, seat: &str, kind: RequestKind) -> u32 {
        let counter = self.turns.entry((seat.to_owned(), kind)).or_insert(0);
        let turn = *counter;
        *counter += 1;
        turn
    }

    /// A seat effect's recorded result, if any.
    pub fn seat_result(&mut self, key: &SeatKey) -> Option<Recorded<SeatResult>> {
        let recorded = self.results.get(key).cloned()?;
        if let SeatResult::Reply(reply) = &recorded.value {
            self.usage.add(reply.usage);
        }
        Some(recorded)
    }

    /// Whether the request was already recorded as sent (its result may not be).
    pub fn request_sent(&self, key: &SeatKey) -> bool {
        self.requests.contains(key)
    }

    /// Records that a request is being sent, once per key.
    pub fn record_request(&mut self, request: SeatRequest) -> Result<(), WriteError> {
        if self.requests.contains(&request.key) {
            return Ok(());
        }
        self.append(Event::SeatRequest(request)).map(|_| ())
    }

    /// Records a seat's result and returns it with its `seq`.
    pub fn record_result(&mut self, result: SeatResult) -> Result<Recorded<SeatResult>, WriteError> {
        let mut recorded = self.record_results(vec![result])?;
        recorded.pop().ok_or_else(|| WriteError::Poisoned { path: self.writer.path().to_owned() })
    }

    /// Records results that landed together with one sync: each is written,
    /// and the last write is synced, which makes them all durable at once.
    pub fn record_results(
        &mut self,
        results: Vec<SeatResult>,
    ) -> Result<Vec<Recorded<SeatResult>>, WriteError> {
        let last = results.len().saturating_sub(1);
        let mut recorded = Vec::with_capacity(results.len());
        for (i, result) in results.into_iter().enumerate() {
            // Scrubbed before it is recorded and before the run reads it, so
            // a live run decides on the same text a replay reads back.
            let result = match result {
                SeatResult::Reply(reply) => SeatResult::Reply(scrub_value(reply)),
                SeatResult::Error(error) => SeatResult::Error(scrub_value(error)),
            };
            let event = match &result {
                SeatResult::Reply(reply) => {
                    self.usage.add(reply.usage);
                    Event::SeatReply(reply.clone())
                }
                SeatResult::Error(error) => Event::SeatError(error.clone()),
            };
            let envelope =
                if i == last { self.writer.append(event)? } else { self.writer.append_unsynced(event)? };
            self.index(envelope.clone());
            self.observer.on_event(&envelope);
            recorded.push(Recorded { value: result, seq: envelope.seq });
        }
        Ok(recorded)
    }

    /// A build observation, from the record or freshly made by `observe`.
    pub fn build_done(
        &mut self,
        stage: &str,
        round: u32,
        observe: impl FnOnce() -> BuildDone,
    ) -> Result<BuildDone, WriteError> {
        if let Some(build) = self.builds.get(&(stage.to_owned(), round)) {
            return Ok(build.clone());
        }
        let build = observe();
        self.append(Event::BuildDone(build.clone()))?;
        Ok(build)
    }

    /// Every path a recorded `build:done` names (built or missing), sorted.
    pub fn built_paths(&self) -> Vec<String> {
        let paths: std::collections::BTreeSet<&String> =
            self.builds.values().flat_map(|b| b.files.keys().chain(&b.missing)).collect();
        paths.into_iter().cloned().collect()
    }

    /// A command run the record holds, if any.
    pub fn check_run(&self, stage: &str, round: u32) -> Option<CheckRun> {
        self.checks.get(&(stage.to_owned(), round)).cloned()
    }

    /// A custom job's recorded result, if any.
    pub fn job_done(&self, stage: &str, round: u32) -> Option<JobDone> {
        self.jobs.get(&(stage.to_owned(), round)).cloned()
    }

    /// Records a custom job's result.
    pub fn record_job(&mut self, job: JobDone) -> Result<(), WriteError> {
        self.append(Event::JobDone(job)).map(|_| ())
    }

    /// Records a command run just performed.
    pub fn record_check(&mut self, check: CheckRun) -> Result<(), WriteError> {
        self.append(Event::CheckRun(check)).map(|_| ())
    }

    /// The recorded ask of an approve stage's `round`, if any.
    pub fn approval_ask(&self, stage: &str, round: u32) -> Option<&ApprovalRequest> {
        self.asks.get(&(stage.to_owned(), round))
    }

    /// The recorded answer to an approve stage's `round`, if any.
    pub fn approval(&self, stage: &str, round: u32) -> Option<&Recorded<Approval>> {
        self.approvals.get(&(stage.to_owned(), round))
    }

    /// Records a person's decision on an approval.
    pub fn record_approval(&mut self, approval: Approval) -> Result<(), WriteError> {
        self.append(Event::Approval(approval)).map(|_| ())
    }

    /// Records a pause.
    pub fn pause(&mut self, reason: String, waiting_for: String) -> Result<(), WriteError> {
        self.append(Event::RunPause(RunPause { reason, waiting_for })).map(|_| ())
    }

    /// Records that this process takes the run up again, in `workspace`.
    pub fn resume(&mut self, resume: RunResume) -> Result<(), WriteError> {
        self.append(Event::RunResume(resume)).map(|_| ())
    }

    /// Records the end of the run (once).
    pub fn end_run(&mut self, status: EndStatus, summary: String) -> Result<RunEnd, WriteError> {
        if let Some(end) = &self.end {
            return Ok(end.clone());
        }
        let end = RunEnd { status, summary, rounds: self.rounds, usage: self.usage };
        self.append(Event::RunEnd(end.clone()))?;
        Ok(end)
    }
}

/// The key of a derived event: replay skips an event whose key is recorded.
/// Effects (seat requests and results) and session markers have none here.
fn derived_key(event: &Event) -> Option<String> {
    Some(match event {
        Event::RunStart(_) => "run:start".to_owned(),
        Event::StageStart(e) => format!("stage:start/{}/{}", e.stage, e.round),
        Event::BuildDone(e) => format!("build:done/{}/{}", e.stage, e.round),
        Event::CheckRun(e) => format!("check:run/{}/{}", e.stage, e.round),
        Event::JobDone(e) => format!("job:done/{}/{}", e.stage, e.round),
        Event::GoalCheck(e) => format!("goal:check/{}/{}", e.stage, e.round),
        Event::ReviewDecision(e) => {
            format!("review:decision/{}/{}/{}/{}", e.stage, e.round, e.reviewer, e.attempt)
        }
        Event::ReviewSynthesis(e) => format!("review:synthesis/{}/{}", e.stage, e.round),
        Event::RefineJudge(e) => format!("refine:judge/{}/{}", e.stage, e.round),
        Event::Kickback(e) => format!("kickback/{}/{}/{}", e.from, e.round, e.to),
        Event::ApprovalRequest(e) => format!("approval:request/{}/{}", e.stage, e.round),
        Event::RunEnd(_) => "run:end".to_owned(),
        Event::SeatRequest(_)
        | Event::SeatReply(_)
        | Event::SeatError(_)
        | Event::Approval(_)
        | Event::RunPause(_)
        | Event::RunResume(_) => return None,
    })
}
