//! The executor: walks a workflow's stages against the journal.
//!
//! The same code runs a fresh run and a resumed one: every effect goes
//! through the journal, which answers from the record when it can.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gavel_domain::RequestKind;
use gavel_record::event::{
    BuildDone, EndStatus, RunStart, SeatError, SeatKey, SeatReply, SeatRequest, StageStart,
};
use gavel_record::write::Durability;
use gavel_record::{Event, RecordWriter, RunLock, RunState, RunStatus, read_record};
use gavel_seats::Request;
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::journal::{Journal, Recorded, SeatResult};
use crate::prompts::{Prompt, Prompts};
use crate::runs::{check_run_id, default_record, new_run_id};
use crate::workflow::{BuildStage, Stage, StageKind, Workflow};
use crate::{Observer, Outcome, RunError, StageReport, Status};

/// Extra time past a seat's own timeout before the executor gives up on it:
/// engines enforce their timeout themselves; this only guards against one
/// that does not.
const SEAT_GRACE: Duration = Duration::from_secs(5);

/// Failed attempts at one request, since the last pause, before the run
/// pauses: the first ask and the "ask once more" turn (SPEC 3).
const ATTEMPTS_PER_WINDOW: u32 = 2;

/// What `gavel run` asks for.
#[derive(Debug, Clone)]
pub struct StartRequest {
    /// The compiled workflow.
    pub workflow: Workflow,
    /// The workspace the seats work in.
    pub workspace: PathBuf,
    /// A run id, instead of a generated one.
    pub run_id: Option<String>,
    /// A record path, instead of the default.
    pub record: Option<PathBuf>,
}

/// Starts a new run and executes it until it passes, fails or pauses.
pub async fn start(request: StartRequest, observer: &dyn Observer) -> Result<Outcome, RunError> {
    let StartRequest { workflow, workspace, run_id, record } = request;
    check_supported(&workflow)?;
    if !workspace.is_dir() {
        return Err(RunError::Refused(format!(
            "the workspace {} is not a folder; create it or pass --workspace DIR",
            workspace.display()
        )));
    }
    let workspace = std::path::absolute(&workspace).unwrap_or(workspace);
    let run_id = run_id.unwrap_or_else(|| new_run_id(&workflow.name, jiff::Timestamp::now()));
    check_run_id(&run_id).map_err(RunError::Refused)?;
    let record = record
        .or_else(|| workflow.options.record.as_ref().map(|r| workspace.join(r)))
        .unwrap_or_else(|| default_record(&workspace, &run_id));
    let writer = RecordWriter::create(&record, Durability::Synced)?;
    let mut journal = Journal::new(writer, &[], observer);
    journal.emit(Event::RunStart(RunStart {
        run_id: run_id.clone(),
        workflow: workflow.name.clone(),
        file: workflow.file.display().to_string(),
        digest: workflow.digest.clone(),
        workspace: workspace.display().to_string(),
        gavel: env!("CARGO_PKG_VERSION").to_owned(),
    }))?;
    Executor::new(workflow, workspace, run_id, journal, observer).run().await
}

/// Takes a run up again from its record: replays what is recorded, performs
/// what is not. A finished run is walked without writing and reported.
pub async fn resume(record: &Path, observer: &dyn Observer) -> Result<Outcome, RunError> {
    let lock = RunLock::acquire(record)?;
    let recording = read_record(record)?;
    if let Some(torn) = &recording.torn {
        observer.on_warning(&torn.warning(record));
    }
    let state = RunState::fold(&recording.events);
    if state.status == RunStatus::Empty {
        return Err(RunError::Refused(format!(
            "{} holds no run (no run:start); nothing to resume",
            record.display()
        )));
    }
    let workflow = Workflow::load(Path::new(&state.file))?;
    if workflow.digest != state.digest {
        return Err(RunError::Refused(format!(
            "the workflow {} or its brief changed since run `{}` started; a run resumes only against the files it started with; restore them, or start a new run with `gavel run`",
            state.file, state.run_id
        )));
    }
    check_supported(&workflow)?;
    let ended = matches!(state.status, RunStatus::Ended { .. });
    let writer = RecordWriter::resume(record, lock, &recording, Durability::Synced)?;
    let mut journal = Journal::new(writer, &recording.events, observer);
    if !ended {
        let (reason, waiting_for) = match &state.status {
            RunStatus::Paused { waiting_for, .. } => {
                ("resumed after a pause".to_owned(), waiting_for.clone())
            }
            _ => ("resumed after an interruption".to_owned(), String::new()),
        };
        journal.resume(reason, waiting_for)?;
    }
    let workspace = PathBuf::from(&state.workspace);
    Executor::new(workflow, workspace, state.run_id, journal, observer).run().await
}

/// Refuses, before anything is recorded, a workflow this version cannot run.
pub fn check_supported(workflow: &Workflow) -> Result<(), RunError> {
    for stage in &workflow.stages {
        let unsupported = match &stage.kind {
            StageKind::Build(build) if build.goal.is_some() => Some("a goal check (`goal`)"),
            StageKind::Build(build) if build.review.is_some() => Some("a review panel (`reviewed_by`)"),
            StageKind::Build(build) if matches!(build.refine, crate::workflow::Refine::Judge { .. }) => {
                Some("a judge (`refine = { judge = ... }`)")
            }
            StageKind::Build(_) => None,
            StageKind::Run(_) => Some("a `run` stage"),
            StageKind::Panel(_) => Some("a `panel` stage"),
            StageKind::Approve { .. } => Some("an `approve` stage"),
        };
        if let Some(what) = unsupported {
            return Err(RunError::Refused(format!(
                "stage `{}` uses {what}, which this version of gavel cannot run yet; it runs builder stages (`agent`, `writes`, `refine = N`)",
                stage.name
            )));
        }
    }
    Ok(())
}

/// How a stage came out.
enum StageEnd {
    Pass,
    Fail(String),
    Pause { status: Status, reason: String, waiting_for: String },
}

/// Which request of which seat, in which stage and round.
#[derive(Clone, Copy)]
struct Target<'a> {
    stage: &'a str,
    round: u32,
    seat: &'a str,
    kind: RequestKind,
    writes: &'a [String],
}

/// The result of asking a seat until it answers usably or the window of
/// attempts runs out.
enum Asked<T> {
    Answer(T),
    GaveUp { last: String },
}

struct Executor<'o> {
    workflow: Workflow,
    workspace: PathBuf,
    run_id: String,
    journal: Journal<'o>,
    observer: &'o dyn Observer,
    prompts: Prompts,
    reports: Vec<StageReport>,
}

impl<'o> Executor<'o> {
    fn new(
        workflow: Workflow,
        workspace: PathBuf,
        run_id: String,
        journal: Journal<'o>,
        observer: &'o dyn Observer,
    ) -> Self {
        let prompts = Prompts::new(workflow.options.prompts_dir.as_deref());
        Self { workflow, workspace, run_id, journal, observer, prompts, reports: Vec::new() }
    }

    async fn run(mut self) -> Result<Outcome, RunError> {
        let stages = self.workflow.stages.clone();
        for stage in &stages {
            let end = match &stage.kind {
                StageKind::Build(build) => self.build_stage(stage, build).await?,
                // `check_supported` refused these before anything ran.
                StageKind::Run(_) | StageKind::Panel(_) | StageKind::Approve { .. } => {
                    return Err(RunError::Refused(format!(
                        "stage `{}` cannot run in this version",
                        stage.name
                    )));
                }
            };
            match end {
                StageEnd::Pass => {}
                StageEnd::Fail(summary) => return self.finish(EndStatus::Fail, summary),
                StageEnd::Pause { status, reason, waiting_for } => {
                    return self.pause(status, reason, waiting_for);
                }
            }
        }
        let summary = format!("every stage passed ({} in all)", stages.len());
        self.finish(EndStatus::Pass, summary)
    }

    fn report(&mut self, stage: &str) -> &mut StageReport {
        if let Some(i) = self.reports.iter().position(|r| r.stage == stage) {
            return &mut self.reports[i];
        }
        self.reports.push(StageReport {
            stage: stage.to_owned(),
            rounds: 0,
            status: Status::Pass,
            decisions: Vec::new(),
        });
        let last = self.reports.len() - 1;
        &mut self.reports[last]
    }

    async fn build_stage(&mut self, stage: &Stage, build: &BuildStage) -> Result<StageEnd, RunError> {
        let max_rounds = build.refine.max_rounds();
        let mut feedback: Vec<String> = Vec::new();
        let mut missing_last: Vec<String> = Vec::new();
        for round in 1..=max_rounds {
            self.journal.emit(Event::StageStart(StageStart { stage: stage.name.clone(), round }))?;
            self.report(&stage.name).rounds = round;

            let context = self.write_context(stage, build, round, &feedback);
            let prompt = self.prompts.render(RequestKind::Write, &context)?;
            let asked = self
                .ask_until(
                    &Target {
                        stage: &stage.name,
                        round,
                        seat: &build.builder,
                        kind: RequestKind::Write,
                        writes: &build.writes,
                    },
                    |note| Ok(with_note(&prompt, note)),
                    |_text| Ok(()),
                )
                .await?;
            if let Asked::GaveUp { last } = asked {
                let reason = format!("the builder `{}` failed twice: {last}", build.builder);
                self.report(&stage.name).status = Status::Error;
                self.report(&stage.name).decisions.push(format!("round {round}: {reason}"));
                return Ok(StageEnd::Pause {
                    status: Status::Error,
                    reason,
                    waiting_for: format!("seat {}", build.builder),
                });
            }

            let workspace = self.workspace.clone();
            let done = self.journal.build_done(&stage.name, round, || {
                observe_build(&workspace, &stage.name, round, &build.writes)
            })?;
            if done.missing.is_empty() {
                self.report(&stage.name).decisions.push(format!(
                    "round {round}: built {}",
                    done.files.keys().cloned().collect::<Vec<_>>().join(", ")
                ));
                self.report(&stage.name).status = Status::Pass;
                return Ok(StageEnd::Pass);
            }
            let missing = done.missing.join(", ");
            missing_last.clone_from(&done.missing);
            self.report(&stage.name).decisions.push(format!("round {round}: missing {missing}"));
            feedback = done
                .missing
                .iter()
                .map(|file| {
                    format!("`{file}` is missing: write it (it is one of the files this stage must produce).")
                })
                .collect();
        }
        self.report(&stage.name).status = Status::Fail;
        Ok(StageEnd::Fail(format!(
            "stage `{}` ran out of rounds ({max_rounds}) with files still missing: {}",
            stage.name,
            missing_last.join(", ")
        )))
    }

    fn write_context(
        &self,
        stage: &Stage,
        build: &BuildStage,
        round: u32,
        feedback: &[String],
    ) -> WriteContext {
        let brief = self.workflow.brief.as_ref();
        WriteContext {
            stage: stage.name.clone(),
            round,
            brief: brief.map(|b| b.body.clone()).unwrap_or_default(),
            requirements: brief.map(|b| b.requirements.clone()).unwrap_or_default(),
            desc: build.desc.clone().unwrap_or_default(),
            gate: build.gate.clone().unwrap_or_default(),
            writes: build.writes.clone(),
            feedback: feedback.to_vec(),
            goal: build.goal.is_some(),
            reviewed: build.review.is_some(),
        }
    }

    /// Asks `seat` until `parse` accepts a reply. Attempts already recorded
    /// are replayed; at the record's frontier, a second failure since the
    /// last pause gives up (the caller decides what that means).
    async fn ask_until<T>(
        &mut self,
        target: &Target<'_>,
        prompt_for: impl Fn(Option<&str>) -> Result<Prompt, RunError>,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Asked<T>, RunError> {
        let Target { stage, round, seat, kind, writes } = *target;
        let mut note: Option<String> = None;
        let mut failures = 0u32;
        let mut attempt = 1u32;
        loop {
            let key =
                SeatKey { stage: stage.to_owned(), round, seat: seat.to_owned(), request: kind, attempt };
            let prompt = prompt_for(note.as_deref())?;
            let recorded = self.ask(key.clone(), &prompt, writes).await?;
            let failure = match &recorded.value {
                SeatResult::Reply(reply) => match parse(&reply.text) {
                    Ok(value) => return Ok(Asked::Answer(value)),
                    Err(why) => why,
                },
                SeatResult::Error(error) => error.error.clone(),
            };
            if recorded.seq > self.journal.last_pause_seq() {
                failures += 1;
            }
            let next = SeatKey { attempt: attempt + 1, ..key };
            let next_recorded = self.journal.request_sent(&next);
            if failures >= ATTEMPTS_PER_WINDOW && !next_recorded {
                return Ok(Asked::GaveUp { last: failure });
            }
            note = Some(failure);
            attempt += 1;
        }
    }

    /// One seat effect: the recorded result, or a live request recorded now.
    async fn ask(
        &mut self,
        key: SeatKey,
        prompt: &Prompt,
        writes: &[String],
    ) -> Result<Recorded<SeatResult>, RunError> {
        let turn = self.journal.next_turn(&key.seat, key.request);
        if let Some(recorded) = self.journal.seat_result(&key) {
            return Ok(recorded);
        }
        self.journal
            .record_request(SeatRequest { key: key.clone(), prompt_sha256: prompt.sha256.clone() })?;
        self.observer.on_seat_start(&key.stage, key.round, &key.seat, key.request);
        let result = match self.workflow.seat(&key.seat) {
            Some(entry) => {
                let seat = Arc::clone(&entry.seat);
                let timeout = entry
                    .spec
                    .timeout
                    .as_deref()
                    .and_then(|t| crate::workflow::parse_duration(t).ok())
                    .unwrap_or(self.workflow.options.seat_timeout);
                let request = Request {
                    kind: key.request,
                    prompt: prompt.text.clone(),
                    workspace: self.workspace.clone(),
                    access: key.request.access(),
                    turn,
                    writes: writes.to_vec(),
                    timeout,
                };
                let started = Instant::now();
                let answer = tokio::time::timeout(timeout + SEAT_GRACE, seat.answer(&request)).await;
                let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                match answer {
                    Ok(Ok(reply)) => {
                        SeatResult::Reply(SeatReply { key, text: reply.text, usage: reply.usage, ms })
                    }
                    Ok(Err(err)) => SeatResult::Error(SeatError { key, error: err.to_string(), ms }),
                    Err(_) => SeatResult::Error(SeatError {
                        key,
                        error: format!(
                            "no answer within {}; the request was abandoned",
                            humanize(timeout + SEAT_GRACE)
                        ),
                        ms,
                    }),
                }
            }
            None => SeatResult::Error(SeatError {
                key: key.clone(),
                error: format!("no seat named `{}`", key.seat),
                ms: 0,
            }),
        };
        Ok(self.journal.record_result(result)?)
    }

    fn pause(mut self, status: Status, reason: String, waiting_for: String) -> Result<Outcome, RunError> {
        self.journal.pause(reason.clone(), waiting_for.clone())?;
        Ok(self.outcome(status, reason, Some(waiting_for)))
    }

    fn finish(mut self, status: EndStatus, summary: String) -> Result<Outcome, RunError> {
        let end = self.journal.end_run(status, summary)?;
        let status = match end.status {
            EndStatus::Pass => Status::Pass,
            EndStatus::Fail => Status::Fail,
        };
        Ok(self.outcome(status, end.summary, None))
    }

    fn outcome(self, status: Status, summary: String, waiting_for: Option<String>) -> Outcome {
        Outcome {
            status,
            summary,
            run_id: self.run_id,
            record: self.journal.path().to_owned(),
            rounds: self.journal.rounds(),
            usage: self.journal.usage(),
            waiting_for,
            stages: self.reports,
        }
    }
}

#[derive(Debug, Serialize)]
struct WriteContext {
    stage: String,
    round: u32,
    brief: String,
    requirements: Vec<String>,
    desc: String,
    gate: String,
    writes: Vec<String>,
    feedback: Vec<String>,
    goal: bool,
    reviewed: bool,
}

/// The prompt for an "ask once more" turn: the same prompt with a note of
/// what was wrong with the last reply.
fn with_note(prompt: &Prompt, note: Option<&str>) -> Prompt {
    match note {
        None => prompt.clone(),
        Some(note) => {
            let text = format!("{}\n\n## Your last reply could not be used\n\n{note}\n", prompt.text);
            let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
            Prompt { text, sha256 }
        }
    }
}

/// Looks at the files a stage writes: each one's SHA-256, or missing.
fn observe_build(workspace: &Path, stage: &str, round: u32, writes: &[String]) -> BuildDone {
    let mut done = BuildDone {
        stage: stage.to_owned(),
        round,
        files: std::collections::BTreeMap::default(),
        missing: Vec::new(),
    };
    for file in writes {
        match std::fs::read(workspace.join(file)) {
            Ok(bytes) => {
                done.files.insert(file.clone(), hex::encode(Sha256::digest(&bytes)));
            }
            Err(_) => done.missing.push(file.clone()),
        }
    }
    done
}

fn humanize(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 60 && secs.is_multiple_of(60) { format!("{}m", secs / 60) } else { format!("{secs}s") }
}
