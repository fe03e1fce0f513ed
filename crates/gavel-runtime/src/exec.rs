//! The executor: walks a workflow's stages against the journal.
//!
//! The same code runs a fresh run and a resumed one: every effect goes
//! through the journal, which answers from the record when it can.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use gavel_domain::RequestKind;
use gavel_record::event::{
    EndStatus, Finding, Kickback, RunResume, RunStart, SeatError, SeatKey, SeatReply, SeatRequest,
};
use gavel_record::write::Durability;
use gavel_record::{Event, RecordWriter, RunLock, RunState, RunStatus, read_record};
use gavel_seats::Request;
use sha2::{Digest as _, Sha256};
use tokio::task::JoinSet;

use crate::journal::{Journal, Recorded, SeatResult};
use crate::prompts::{Prompt, Prompts};
use crate::runs::{check_run_id, default_record, new_run_id};
use crate::workflow::{Form, Kickbacks, Stage, StageKind, Workflow};
use crate::{Approver, Observer, Outcome, RunError, StageReport, Status};
use futures_util::StreamExt as _;
use futures_util::stream::FuturesUnordered;

/// Extra time past a seat's own timeout before the executor gives up on it:
/// engines enforce their timeout themselves; this only guards against one
/// that does not.
const SEAT_GRACE: Duration = Duration::from_secs(5);

/// Failed attempts at one request, since the last pause, before the caller
/// gives up on it: the first ask and the "ask once more" turn.
const ATTEMPTS_PER_WINDOW: u32 = 2;

/// What `gavel run` asks for.
#[derive(Clone)]
#[allow(missing_debug_implementations)] // holds a `dyn Approver`
pub struct StartRequest {
    /// The compiled workflow.
    pub workflow: Workflow,
    /// The workspace the seats work in.
    pub workspace: PathBuf,
    /// A run id, instead of a generated one.
    pub run_id: Option<String>,
    /// A record path, instead of the default.
    pub record: Option<PathBuf>,
    /// Who answers approve stages; without one, the run pauses at them.
    pub approver: Option<Arc<dyn Approver>>,
}

/// What `gavel resume` (and `gavel approve`) asks for.
#[derive(Clone)]
#[allow(missing_debug_implementations)] // holds a `dyn Approver`
pub struct ResumeRequest {
    /// The run's record.
    pub record: PathBuf,
    /// Who answers approve stages; without one, the run pauses at them.
    pub approver: Option<Arc<dyn Approver>>,
    /// A new budget, in place of the workflow's `max_cost_usd`.
    pub max_cost_usd: Option<f64>,
    /// The workflow, when it was built in code (the library face): a file
    /// workflow is loaded from the path the record names.
    pub workflow: Option<Workflow>,
    /// The folder to go on in (`--workspace`); `None`: the folder whose
    /// `.gavel/` holds the record, else the folder the record names (see
    /// [`crate::runs::resume_folder`]).
    pub workspace: Option<PathBuf>,
}

/// Starts a new run and executes it until it passes, fails or pauses.
pub async fn start(request: StartRequest, observer: &dyn Observer) -> Result<Outcome, RunError> {
    let StartRequest { workflow, workspace, run_id, record, approver } = request;
    if !workspace.is_dir() {
        return Err(RunError::Refused(format!(
            "the workspace {} is not a folder; create it or pass --workspace DIR",
            workspace.display()
        )));
    }
    let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
    workflow.check_commands(&workspace)?;
    let run_id = run_id.unwrap_or_else(|| new_run_id(&workflow.name, jiff::Timestamp::now()));
    check_run_id(&run_id).map_err(RunError::Refused)?;
    let record = record
        .or_else(|| workflow.options.record.as_ref().map(|r| workspace.join(r)))
        .unwrap_or_else(|| default_record(&workspace, &run_id));
    let writer = RecordWriter::create(&record, Durability::Synced)?;
    let mut journal = Journal::new(writer, Vec::new(), observer);
    journal.emit(Event::RunStart(RunStart {
        run_id: run_id.clone(),
        workflow: workflow.name.clone(),
        file: workflow.file.display().to_string(),
        digest: workflow.digest.clone(),
        workspace: workspace.display().to_string(),
        gavel: env!("CARGO_PKG_VERSION").to_owned(),
        record: std::path::absolute(&record).unwrap_or_else(|_| record.clone()).display().to_string(),
        allow_same_family: workflow
            .stages
            .iter()
            .filter(|s| s.allow_same_family)
            .map(|s| s.name.clone())
            .collect(),
    }))?;
    Executor::new(workflow, workspace, run_id, journal, observer, approver).run().await
}

/// Takes a run up again from its record: replays what is recorded, performs
/// what is not. A finished run is walked without writing and reported.
pub async fn resume(request: ResumeRequest, observer: &dyn Observer) -> Result<Outcome, RunError> {
    let ResumeRequest { record, approver, max_cost_usd, workflow: built, workspace } = request;
    let record = record.as_path();
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
    let started = recording.events.iter().find_map(|e| match &e.event {
        Event::RunStart(start) => Some((start.workspace.as_str(), start.record.as_str())),
        _ => None,
    });
    let folder = crate::runs::resume_folder(record, workspace.as_deref(), &state.workspace, started)
        .map_err(RunError::Refused)?;
    let workspace = folder.workspace;
    let mut workflow = if let Some(workflow) = built {
        workflow
    } else {
        let started_in = recording.events.iter().find_map(|e| match &e.event {
            Event::RunStart(start) => Some(start.workspace.as_str()),
            _ => None,
        });
        Workflow::load(&workflow_file(&state.file, started_in.unwrap_or_default(), &workspace))?
    };
    if workflow.digest != state.digest {
        return Err(RunError::Refused(format!(
            "the workflow {} or its brief changed since run `{}` started; a run resumes only against the files it started with; restore them, or start a new run with `gavel run`",
            state.file, state.run_id
        )));
    }
    // A budget raised on an earlier resume is in the record, so it survives
    // a crash; a new one given now wins.
    if let Some(limit) = max_cost_usd.or_else(|| budget_raised(&recording.events)) {
        workflow.options.max_cost_usd = Some(limit);
    }
    let ended = matches!(state.status, RunStatus::Ended { .. });
    if !ended {
        // Before anything is performed: the files must be as the record left them.
        let files = crate::built::differences(&recording.events, &workflow, &workspace);
        if !files.is_empty() {
            return Err(RunError::Diverged { run_id: state.run_id, workspace, files });
        }
    }
    if let Some(note) = &folder.note {
        observer.on_note(note);
    }
    let writer = RecordWriter::resume(record, lock, &recording, Durability::Synced)?;
    let mut journal = Journal::new(writer, recording.events, observer);
    if !ended {
        let (reason, waiting_for) = match &state.status {
            RunStatus::Paused { waiting_for, .. } => {
                ("resumed after a pause".to_owned(), waiting_for.clone())
            }
            _ => ("resumed after an interruption".to_owned(), String::new()),
        };
        journal.resume(RunResume {
            reason,
            waiting_for,
            max_cost_usd,
            workspace: workspace.display().to_string(),
        })?;
    }
    Executor::new(workflow, workspace, state.run_id, journal, observer, approver).run().await
}

/// The workflow file a resumed run loads: the recorded one, or, when the run
/// goes on in another folder and the file lived inside the recorded one, its
/// counterpart in the new folder when that exists (a copied workspace brings
/// its workflow along; the digest check still has to pass).
fn workflow_file(recorded_file: &str, recorded_workspace: &str, workspace: &Path) -> PathBuf {
    let file = PathBuf::from(recorded_file);
    if recorded_workspace.is_empty() {
        return file;
    }
    match file.strip_prefix(recorded_workspace) {
        Ok(inside) if Path::new(recorded_workspace) != workspace => {
            let moved = workspace.join(inside);
            if moved.is_file() { moved } else { file }
        }
        _ => file,
    }
}

/// The last budget a resume raised, from the record.
fn budget_raised(events: &[gavel_record::Envelope]) -> Option<f64> {
    events.iter().rev().find_map(|e| match &e.event {
        Event::RunResume(resume) => resume.max_cost_usd,
        _ => None,
    })
}

/// What becomes of a kickback.
pub(crate) enum KickbackDecision {
    /// It goes ahead.
    Allowed,
    /// Refused by the judge: the sending node's outcome stands (its review
    /// stays on the record as notes) and the walk goes on.
    Stands,
    /// Refused: the run fails with this summary.
    Fail(String),
}

/// `name`'s node and every node downstream of it, by index.
fn downstream_of(nodes: &[Stage], name: &str) -> Vec<usize> {
    let mut marked: Vec<&str> = vec![name];
    // Nodes come after their needs, so one pass in order finds them all.
    for node in nodes {
        if node.needs.iter().any(|need| marked.contains(&need.as_str()))
            && !marked.contains(&node.name.as_str())
        {
            marked.push(&node.name);
        }
    }
    nodes.iter().enumerate().filter(|(_, n)| marked.contains(&n.name.as_str())).map(|(i, _)| i).collect()
}

/// How a stage came out.
pub(crate) enum StageEnd {
    /// Go on to the next stage.
    Pass,
    /// Send the work back to an earlier stage, which runs again with these
    /// findings, and then every stage after it.
    SendBack { to: String, round: u32, reason: String, findings: Vec<Finding> },
    /// The run fails.
    Fail(String),
    /// The run stops and waits.
    Pause { status: Status, reason: String, waiting_for: String },
}

/// The result of asking a seat until it answers usably or the window of
/// attempts runs out.
pub(crate) enum Asked<T> {
    /// A usable answer, and the attempt it came on.
    Answer(T, u32),
    /// No usable answer within the window; the last failure, and its attempt.
    GaveUp(String, u32),
}

/// Which request of which seat, in which stage and round.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub stage: String,
    pub round: u32,
    pub seat: String,
    pub kind: RequestKind,
    pub writes: Vec<String>,
}

impl Target {
    fn key(&self, attempt: u32) -> SeatKey {
        SeatKey {
            stage: self.stage.clone(),
            round: self.round,
            seat: self.seat.clone(),
            request: self.kind,
            attempt,
        }
    }
}

/// Where one target stands while it is being asked.
#[derive(Debug, Clone)]
struct Slot {
    attempt: u32,
    failures: u32,
    note: Option<String>,
}

pub(crate) struct Executor<'o> {
    pub(crate) workflow: Workflow,
    pub(crate) workspace: PathBuf,
    run_id: String,
    observer: &'o dyn Observer,
    pub(crate) approver: Option<Arc<dyn Approver>>,
    pub(crate) prompts: Prompts,
    /// What the walk changes. Nodes of a graph run at the same time and
    /// share it; the lock is held only between awaits, never across one.
    inner: Mutex<Inner<'o>>,
}

/// The executor's mutable state.
pub(crate) struct Inner<'o> {
    pub(crate) journal: Journal<'o>,
    reports: Vec<StageReport>,
    /// Where each stage's report is in `reports` (a long chain looks it up
    /// several times a step).
    report_index: HashMap<String, usize>,
    /// Rounds each stage has used so far in this walk of the run.
    pub(crate) rounds_used: HashMap<String, u32>,
    /// Approval asks each approve stage has used so far in this walk.
    pub(crate) asks_used: HashMap<String, u32>,
    /// The first ask round of each approve stage's current pass.
    pub(crate) pass_first_ask: HashMap<String, u32>,
    /// Each reviewed stage's rounds so far, one line each, for the judge.
    pub(crate) history: HashMap<String, Vec<String>>,
    /// Findings the judge skipped, with why, for the next round's reviewers.
    pub(crate) skipped: HashMap<String, Vec<String>>,
    /// Each builder stage's files after its last finished round.
    pub(crate) last_build: HashMap<String, std::collections::BTreeMap<String, String>>,
    /// Things the end of the run must say (a stage the loop breaker passed).
    pub(crate) notes: Vec<String>,
}

impl Inner<'_> {
    /// The report of `stage`, created on first use.
    pub(crate) fn report(&mut self, stage: &str) -> &mut StageReport {
        if let Some(&i) = self.report_index.get(stage) {
            return &mut self.reports[i];
        }
        self.report_index.insert(stage.to_owned(), self.reports.len());
        self.reports.push(StageReport {
            stage: stage.to_owned(),
            rounds: 0,
            status: Status::Pass,
            decisions: Vec::new(),
            goal_checks: Vec::new(),
            reviews: Vec::new(),
            synthesis: Vec::new(),
            judge: Vec::new(),
        });
        let last = self.reports.len() - 1;
        &mut self.reports[last]
    }
}

impl<'o> Executor<'o> {
    fn new(
        workflow: Workflow,
        workspace: PathBuf,
        run_id: String,
        journal: Journal<'o>,
        observer: &'o dyn Observer,
        approver: Option<Arc<dyn Approver>>,
    ) -> Self {
        let prompts = Prompts::new(workflow.options.prompts_dir.as_deref());
        Self {
            workflow,
            workspace,
            run_id,
            observer,
            approver,
            prompts,
            inner: Mutex::new(Inner {
                journal,
                reports: Vec::new(),
                report_index: HashMap::new(),
                rounds_used: HashMap::new(),
                asks_used: HashMap::new(),
                pass_first_ask: HashMap::new(),
                history: HashMap::new(),
                skipped: HashMap::new(),
                last_build: HashMap::new(),
                notes: Vec::new(),
            }),
        }
    }

    /// The mutable state, for one statement's worth of work.
    pub(crate) fn st(&self) -> MutexGuard<'_, Inner<'o>> {
        // A panic while holding the lock poisons it; the state is still the
        // walk's best knowledge, so go on with it.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run's id.
    pub(crate) fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Walks the workflow as a graph: every node whose needs are done runs,
    /// at the same time as the others (up to `max_parallel`); a kickback
    /// runs its target again with the findings, then everything downstream.
    /// The stages form is a chain, so it walks the same way.
    async fn run(self) -> Result<Outcome, RunError> {
        let nodes = self.workflow.stages.clone();
        let count = nodes.len();
        // Each node's needs by index, found once: the walk checks readiness
        // after every node ends, so a name lookup there would cost a scan of
        // the whole graph per need per step.
        let positions: HashMap<&str, usize> =
            nodes.iter().enumerate().map(|(i, s)| (s.name.as_str(), i)).collect();
        let needs: Vec<Vec<usize>> = nodes
            .iter()
            .map(|node| node.needs.iter().filter_map(|need| positions.get(need.as_str()).copied()).collect())
            .collect();
        let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); count];
        for (i, list) in needs.iter().enumerate() {
            for &j in list {
                dependents[j].push(i);
            }
        }
        // Candidates to launch, in graph order: nodes whose needs may all be
        // done. Only a node's dependents become candidates when it ends, so
        // a long chain is walked in linear time.
        let mut candidates: std::collections::BTreeSet<usize> =
            (0..count).filter(|&i| needs[i].is_empty()).collect();
        let mut done = vec![false; count];
        let mut in_flight = vec![false; count];
        // Bumped when a node is reset, so a run of it that was already going
        // when its upstream was sent back is not taken as its result.
        let mut generation = vec![0u64; count];
        let mut incoming: HashMap<String, Vec<Finding>> = HashMap::new();
        let mut kickbacks: HashMap<String, u32> = HashMap::new();
        let limit = self.workflow.options.max_parallel.unwrap_or(usize::MAX);
        let mut running = FuturesUnordered::new();
        loop {
            let mut waiting = std::collections::BTreeSet::new();
            while let Some(i) = candidates.pop_first() {
                if running.len() >= limit {
                    waiting.insert(i);
                    continue;
                }
                let ready = !done[i] && !in_flight[i] && needs[i].iter().all(|&j| done[j]);
                if !ready {
                    continue;
                }
                let node = &nodes[i];
                in_flight[i] = true;
                let feedback = incoming.remove(&node.name).unwrap_or_default();
                let this_generation = generation[i];
                let this = &self;
                running.push(async move { (i, this_generation, this.run_node(node, feedback).await) });
            }
            // Ready nodes past `max_parallel` wait for the next turn.
            candidates.append(&mut waiting);
            let Some((i, this_generation, end)) = running.next().await else { break };
            in_flight[i] = false;
            if this_generation != generation[i] {
                // Reset while it ran: it runs again once its needs are done.
                candidates.insert(i);
                continue;
            }
            let end = match end {
                Err(spent @ RunError::BudgetSpent { .. }) => {
                    drop(running);
                    // Never fail or kill for money: stop before the next request.
                    return self.pause(Status::Paused, spent.to_string(), "budget".to_owned());
                }
                other => other?,
            };
            let node = &nodes[i];
            match end {
                StageEnd::Pass => {
                    done[i] = true;
                    candidates.extend(dependents[i].iter().copied());
                }
                StageEnd::SendBack { to, round, reason, findings } => {
                    match self.allow_kickback(node, &to, round, &findings, &mut kickbacks).await? {
                        KickbackDecision::Allowed => {
                            self.st().journal.emit(Event::Kickback(Kickback {
                                from: node.name.clone(),
                                round,
                                to: to.clone(),
                                reason,
                                findings: findings.clone(),
                            }))?;
                            for j in downstream_of(&nodes, &to) {
                                done[j] = false;
                                generation[j] += 1;
                                candidates.insert(j);
                            }
                            incoming.insert(to, findings);
                        }
                        KickbackDecision::Stands => {
                            done[i] = true;
                            candidates.extend(dependents[i].iter().copied());
                        }
                        KickbackDecision::Fail(summary) => {
                            drop(running);
                            return self.finish(EndStatus::Fail, summary);
                        }
                    }
                }
                StageEnd::Fail(summary) => {
                    drop(running);
                    return self.finish(EndStatus::Fail, summary);
                }
                StageEnd::Pause { status, reason, waiting_for } => {
                    drop(running);
                    return self.pause(status, reason, waiting_for);
                }
            }
        }
        drop(running);
        let noun = if self.workflow.form == Form::Graph { "node" } else { "stage" };
        let mut summary = format!("every {noun} passed ({count} in all)");
        for note in &self.st().notes {
            let _ = std::fmt::Write::write_fmt(&mut summary, format_args!("; {note}"));
        }
        self.finish(EndStatus::Pass, summary)
    }

    /// Runs one node (or stage) once, to its end.
    async fn run_node(&self, node: &Stage, feedback: Vec<Finding>) -> Result<StageEnd, RunError> {
        match &node.kind {
            StageKind::Build(build) => self.build_stage(node, build, feedback).await,
            StageKind::Run(run) => self.run_stage(node, run).await,
            StageKind::Panel(panel) => self.panel_stage(node, panel).await,
            StageKind::Approve { files } => self.approve_stage(node, files.as_deref()),
            StageKind::GoalCheck { seat, target } => self.goal_node(node, seat, target).await,
            StageKind::Job(job) => self.job_node(node, job, feedback).await,
        }
    }

    /// Whether a kickback to `to` may go ahead: within
    /// `max_kickbacks`, and, with a judge, when it says another round is
    /// worth it. A goal check's kickback is counted but never judged.
    async fn allow_kickback(
        &self,
        sender: &Stage,
        to: &str,
        round: u32,
        findings: &[Finding],
        counts: &mut HashMap<String, u32>,
    ) -> Result<KickbackDecision, RunError> {
        let count = counts.entry(to.to_owned()).or_insert(0);
        *count += 1;
        let count = *count;
        let listed: Vec<&str> = findings.iter().map(|f| f.evidence.as_str()).collect();
        let over = |max: u32| {
            KickbackDecision::Fail(format!(
                "node `{}` would send `{to}` back a {count}th time, past max_kickbacks = {max}; the findings: {}",
                sender.name,
                listed.join(" | ")
            ))
        };
        match &self.workflow.max_kickbacks {
            Kickbacks::Unlimited => Ok(KickbackDecision::Allowed),
            Kickbacks::Count(max) => Ok(if count > *max { over(*max) } else { KickbackDecision::Allowed }),
            Kickbacks::Judge { judge, cap } => {
                if count > *cap {
                    return Ok(over(*cap));
                }
                if matches!(sender.kind, StageKind::GoalCheck { .. }) {
                    return Ok(KickbackDecision::Allowed);
                }
                self.judge_kickback(sender, round, judge, count, *cap, findings).await
            }
        }
    }

    /// Starts the next round of `stage`, or `None` when it has used `max`.
    pub(crate) fn next_round(&self, stage: &str, max: u32) -> Option<u32> {
        let mut st = self.st();
        let used = st.rounds_used.entry(stage.to_owned()).or_insert(0);
        if *used >= max {
            return None;
        }
        *used += 1;
        let round = *used;
        st.report(stage).rounds = round;
        Some(round)
    }

    /// Asks one seat until `parse` accepts a reply (see [`Self::ask_many`]).
    pub(crate) async fn ask_one<T>(
        &self,
        target: Target,
        prompt_for: impl Fn(Option<&str>) -> Result<Prompt, RunError>,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Asked<T>, RunError> {
        let mut asked = self.ask_many(vec![target], |_, note| prompt_for(note), parse).await?;
        asked.pop().ok_or_else(|| RunError::Refused("internal: a request went unanswered".to_owned()))
    }

    /// Asks several seats at the same time, each until `parse` accepts its
    /// reply. Attempts already recorded are replayed; at the record's
    /// frontier the live ones run concurrently and each result is recorded
    /// as it lands. A target whose second failure since the last pause has no
    /// later attempt recorded gives up.
    pub(crate) async fn ask_many<T>(
        &self,
        targets: Vec<Target>,
        prompt_for: impl Fn(usize, Option<&str>) -> Result<Prompt, RunError>,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Vec<Asked<T>>, RunError> {
        let mut slots = vec![Slot { attempt: 1, failures: 0, note: None }; targets.len()];
        let mut done: Vec<Option<Asked<T>>> = targets.iter().map(|_| None).collect();
        loop {
            let mut live = Vec::new();
            for (idx, target) in targets.iter().enumerate() {
                while done[idx].is_none() {
                    let key = target.key(slots[idx].attempt);
                    let turn = self.st().journal.next_turn(&target.seat, target.kind);
                    // Bound first: the lock must be released before `settle` takes it.
                    let recorded = self.st().journal.seat_result(&key);
                    if let Some(recorded) = recorded {
                        done[idx] = self.settle(&recorded, &key, &mut slots[idx], &parse);
                    } else {
                        // Only a request that is sent needs its prompt: a
                        // replay of recorded answers renders nothing.
                        let note = slots[idx].note.clone();
                        let prompt = prompt_for(idx, note.as_deref())?;
                        live.push((idx, key, prompt, note, turn, target.writes.clone()));
                        break;
                    }
                }
            }
            if live.is_empty() {
                break;
            }
            if let Some(limit) = self.workflow.options.max_cost_usd {
                let spent = self.st().journal.usage().cost_usd;
                if spent >= limit {
                    return Err(RunError::BudgetSpent { spent, limit });
                }
            }
            let mut tasks = JoinSet::new();
            for (idx, key, prompt, note, turn, writes) in live {
                // The note sent with an "ask once more" is a reason: it is recorded.
                self.st().journal.record_request(SeatRequest {
                    key: key.clone(),
                    prompt_sha256: prompt.sha256.clone(),
                    note,
                })?;
                self.observer.on_seat_start(&key);
                let Some(entry) = self.workflow.seat(&key.seat) else {
                    let error = format!("no seat named `{}`", key.seat);
                    let recorded = self.st().journal.record_result(SeatResult::Error(SeatError {
                        key: key.clone(),
                        error,
                        ms: 0,
                    }))?;
                    done[idx] = self.settle(&recorded, &key, &mut slots[idx], &parse);
                    continue;
                };
                let seat = Arc::clone(&entry.seat);
                let timeout = entry
                    .spec
                    .timeout
                    .as_deref()
                    .and_then(|t| crate::workflow::parse_duration(t).ok())
                    .unwrap_or(self.workflow.options.seat_timeout);
                let request = Request {
                    kind: key.request,
                    prompt: prompt.text,
                    workspace: self.workspace.clone(),
                    access: key.request.access(),
                    turn,
                    writes,
                    timeout,
                };
                tasks.spawn(async move {
                    let started = Instant::now();
                    let answer = tokio::time::timeout(timeout + SEAT_GRACE, seat.answer(&request))
                        .await
                        .map(|answered| answered.and_then(gavel_seats::Reply::checked));
                    let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                    let result = match answer {
                        Ok(Ok(reply)) => SeatResult::Reply(SeatReply {
                            key: key.clone(),
                            text: reply.text,
                            usage: reply.usage,
                            ms,
                            session: reply.session,
                        }),
                        Ok(Err(err)) => {
                            SeatResult::Error(SeatError { key: key.clone(), error: err.to_string(), ms })
                        }
                        Err(_) => SeatResult::Error(SeatError {
                            key: key.clone(),
                            error: format!(
                                "no answer within {}; the request was abandoned",
                                humanize(timeout + SEAT_GRACE)
                            ),
                            ms,
                        }),
                    };
                    (idx, key, result)
                });
            }
            while let Some(joined) = tasks.join_next().await {
                // Results that landed together are written with one sync.
                let mut landed = vec![joined];
                while let Some(more) = tasks.try_join_next() {
                    landed.push(more);
                }
                let mut keys = Vec::with_capacity(landed.len());
                let mut results = Vec::with_capacity(landed.len());
                for joined in landed {
                    let (idx, key, result) = joined
                        .map_err(|err| RunError::Refused(format!("internal: a seat task failed: {err}")))?;
                    keys.push((idx, key));
                    results.push(result);
                }
                let recorded = self.st().journal.record_results(results)?;
                for ((idx, key), recorded) in keys.into_iter().zip(recorded) {
                    done[idx] = self.settle(&recorded, &key, &mut slots[idx], &parse);
                }
            }
        }
        Ok(done.into_iter().flatten().collect())
    }

    /// Reads one attempt's result: an answer, a give-up, or `None` to ask again.
    fn settle<T>(
        &self,
        recorded: &Recorded<SeatResult>,
        key: &SeatKey,
        slot: &mut Slot,
        parse: &impl Fn(&str) -> Result<T, String>,
    ) -> Option<Asked<T>> {
        let failure = match &recorded.value {
            SeatResult::Reply(reply) => match parse(&reply.text) {
                Ok(value) => return Some(Asked::Answer(value, key.attempt)),
                Err(why) => why,
            },
            SeatResult::Error(error) => format!("the seat failed: {}", error.error),
        };
        if recorded.seq > self.st().journal.last_pause_seq() {
            slot.failures += 1;
        }
        let next = SeatKey { attempt: key.attempt + 1, ..key.clone() };
        if slot.failures >= ATTEMPTS_PER_WINDOW && !self.st().journal.request_sent(&next) {
            return Some(Asked::GaveUp(failure, key.attempt));
        }
        slot.attempt = key.attempt + 1;
        slot.note = Some(failure);
        None
    }

    fn pause(self, status: Status, reason: String, waiting_for: String) -> Result<Outcome, RunError> {
        self.st().journal.pause(reason.clone(), waiting_for.clone())?;
        Ok(self.outcome(status, reason, Some(waiting_for)))
    }

    fn finish(self, status: EndStatus, summary: String) -> Result<Outcome, RunError> {
        let end = self.st().journal.end_run(status, summary)?;
        let status = match end.status {
            EndStatus::Pass => Status::Pass,
            EndStatus::Fail => Status::Fail,
        };
        Ok(self.outcome(status, end.summary, None))
    }

    fn outcome(self, status: Status, summary: String, waiting_for: Option<String>) -> Outcome {
        let inner = self.inner.into_inner().unwrap_or_else(PoisonError::into_inner);
        let outcome = Outcome {
            status,
            summary,
            run_id: self.run_id,
            record: inner.journal.path().to_owned(),
            rounds: inner.journal.rounds(),
            usage: inner.journal.usage(),
            waiting_for,
            stages: inner.reports,
        };
        inner.journal.close();
        outcome
    }
}

/// The prompt for an "ask once more" turn: the same prompt with a note of
/// what was wrong with the last reply.
pub(crate) fn with_note(prompt: &Prompt, note: Option<&str>) -> Prompt {
    match note {
        None => prompt.clone(),
        Some(note) => {
            let text = format!("{}\n\n## Your last reply could not be used\n\n{note}\n", prompt.text);
            let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
            Prompt { text, sha256 }
        }
    }
}

pub(crate) fn humanize(d: Duration) -> String {
    let secs = d.as_secs();
    if secs >= 60 && secs.is_multiple_of(60) { format!("{}m", secs / 60) } else { format!("{secs}s") }
}
