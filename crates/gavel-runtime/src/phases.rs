//! The phases of a stage: build, goal check, review panel, command, and the
//! routing of a reviewed round between them. Every effect goes through the executor's
//! journal, so the same code serves a live run and a replay.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use gavel_domain::protocol::{GoalReply, Protocol, Verdict};
use gavel_domain::{RequestKind, Severity};
use gavel_process::{Outcome as ProcessOutcome, SpawnSpec};
use gavel_record::Event;
use gavel_record::event::{BuildDone, CheckRun, Finding, GoalCheck, StageStart};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::de::CommandSpec;
use crate::exec::{Asked, Executor, StageEnd, Target, with_note};
use crate::review::{PanelVerdict, ReviewContext};
use crate::workflow::{BuildStage, PanelStage, Refine, RunStage, Stage};
use crate::{RunError, Status};
use gavel_domain::rules::{self, OnCap};

/// How much of each file a read-only seat is shown in its prompt.
const FILE_LIMIT: u64 = 64 * 1024;
const WORKSPACE_FILE: gavel_fs::read::UserFile = gavel_fs::read::UserFile::WorkspaceFile;
/// How much of a command's output is recorded and sent back.
const OUTPUT_TAIL: usize = 4 * 1024;

/// One file as a prompt shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct FileView {
    pub(crate) path: String,
    pub(crate) missing: bool,
    pub(crate) content: String,
}

/// The files a round's prompts show, read from the workspace the first time
/// a prompt (or a check for missing files) needs them: a replay whose
/// requests are all answered from the record reads none.
#[derive(Debug)]
pub(crate) struct Files {
    root: std::path::PathBuf,
    paths: Vec<String>,
    views: std::sync::OnceLock<Vec<FileView>>,
}

impl Files {
    /// No files.
    pub(crate) fn none() -> Self {
        Self { root: std::path::PathBuf::new(), paths: Vec::new(), views: std::sync::OnceLock::new() }
    }

    /// The files as prompts show them (read now, if not yet).
    pub(crate) fn views(&self) -> &[FileView] {
        self.views.get_or_init(|| {
            self.paths
                .iter()
                // Only the head is read, and only from a regular file: a
                // FIFO or a device named here must not hang the run.
                .map(|path| {
                    match gavel_fs::read::read_head(&self.root.join(path), WORKSPACE_FILE, FILE_LIMIT) {
                        Ok((bytes, size)) => {
                            let mut content = String::from_utf8_lossy(&bytes).into_owned();
                            if size > FILE_LIMIT {
                                let _ = write!(content, "\n… ({} more bytes not shown)", size - FILE_LIMIT);
                            }
                            FileView { path: path.clone(), missing: false, content }
                        }
                        Err(_) => FileView { path: path.clone(), missing: true, content: String::new() },
                    }
                })
                .collect()
        })
    }
}

impl Serialize for Files {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.views().serialize(serializer)
    }
}

/// What the goal check concluded.
enum GoalResult {
    Met,
    Unmet(Vec<Finding>),
    Unreadable(String),
}

#[derive(Debug, Serialize)]
struct WriteContext<'a> {
    stage: &'a str,
    round: u32,
    brief: &'a str,
    requirements: &'a [String],
    desc: &'a str,
    gate: &'a str,
    writes: &'a [String],
    feedback: Vec<String>,
    goal: bool,
    reviewed: bool,
}

impl Executor<'_> {
    fn brief_body(&self) -> &str {
        self.workflow.brief.as_ref().map_or("", |b| b.body.as_str())
    }

    fn brief_requirements(&self) -> Vec<String> {
        self.workflow.brief.as_ref().map(|b| b.requirements.clone()).unwrap_or_default()
    }

    /// A builder stage: build → goal check → reviews → route, round by round.
    pub(crate) async fn build_stage(
        &self,
        stage: &Stage,
        build: &BuildStage,
        incoming: Vec<Finding>,
    ) -> Result<StageEnd, RunError> {
        // In the stages form `refine` bounds the stage's rounds in all,
        // whichever check sends them back. In a graph, kickbacks are
        // bounded by `max_kickbacks`, and each run of the node gets its own.
        let max_rounds = match self.workflow.form {
            crate::workflow::Form::Stages => build.refine.max_rounds(),
            crate::workflow::Form::Graph => {
                self.st().rounds_used.get(&stage.name).copied().unwrap_or(0) + build.refine.max_rounds()
            }
        };
        let mut feedback = incoming;
        let mut previous_sent: Option<Vec<Finding>> = None;
        loop {
            let Some(round) = self.next_round(&stage.name, max_rounds) else {
                self.st().report(&stage.name).status = Status::Fail;
                return Ok(StageEnd::Fail(out_of_rounds(&stage.name, max_rounds, &feedback)));
            };
            self.st().journal.emit(Event::StageStart(StageStart { stage: stage.name.clone(), round }))?;

            // 1. Build.
            let requirements = self.brief_requirements();
            let context = WriteContext {
                stage: &stage.name,
                round,
                brief: self.brief_body(),
                requirements: &requirements,
                desc: build.desc.as_deref().unwrap_or_default(),
                gate: build.gate.as_deref().unwrap_or_default(),
                writes: &build.writes,
                feedback: feedback.iter().map(feedback_line).collect(),
                goal: build.goal.is_some(),
                reviewed: build.review.is_some(),
            };
            let target = Target {
                stage: stage.name.clone(),
                round,
                seat: build.builder.clone(),
                kind: RequestKind::Write,
                writes: build.writes.clone(),
            };
            // Rendered on first need: a replayed round sends nothing.
            let rendered: std::sync::OnceLock<crate::prompts::Prompt> = std::sync::OnceLock::new();
            let prompt_for = |note: Option<&str>| -> Result<crate::prompts::Prompt, RunError> {
                if let Some(prompt) = rendered.get() {
                    return Ok(with_note(prompt, note));
                }
                let prompt = self.prompts.render(RequestKind::Write, &context)?;
                Ok(with_note(rendered.get_or_init(|| prompt), note))
            };
            let asked = self.ask_one(target, prompt_for, |_| Ok(())).await?;
            if let Asked::GaveUp(last, _) = asked {
                let reason = format!("the builder `{}` failed twice: {last}", build.builder);
                self.decide(&stage.name, round, Status::Error, &reason);
                return Ok(StageEnd::Pause {
                    status: Status::Error,
                    reason,
                    waiting_for: format!("seat {}", build.builder),
                });
            }
            let workspace = self.workspace.clone();
            let done = self.st().journal.build_done(&stage.name, round, || {
                observe_build(&workspace, &stage.name, round, &build.writes)
            })?;
            let files = self.file_views(&build.writes);

            // 2. Goal check: every round, also when a file is missing.
            let mut decision = format!("built {}", list_or_none(done.files.keys()));
            if let Some(goal) = &build.goal {
                match self
                    .goal_check(
                        stage,
                        round,
                        (
                            build.desc.as_deref().unwrap_or_default(),
                            build.gate.as_deref().unwrap_or_default(),
                        ),
                        goal,
                        &files,
                    )
                    .await?
                {
                    GoalResult::Met => decision.push_str("; goal check: every requirement met"),
                    GoalResult::Unmet(unmet) => {
                        let line =
                            format!("{decision}; goal check: {} unmet, back to the builder", unmet.len());
                        self.decide(&stage.name, round, Status::Fail, &line);
                        feedback = unmet;
                        continue;
                    }
                    GoalResult::Unreadable(last) => {
                        let reason = format!("the goal check `{goal}` sent no readable reply twice: {last}");
                        self.decide(&stage.name, round, Status::Paused, &reason);
                        return Ok(StageEnd::Pause {
                            status: Status::Paused,
                            reason,
                            waiting_for: "readable goal check".to_owned(),
                        });
                    }
                }
            }

            // Missing files go back before any reviewer sees incomplete work.
            if !done.missing.is_empty() {
                let line = format!("{decision}; missing {}, back to the builder", done.missing.join(", "));
                self.decide(&stage.name, round, Status::Fail, &line);
                feedback = done.missing.iter().map(|f| missing_finding(&stage.name, f)).collect();
                continue;
            }

            // 3. Reviews.
            let Some(panel) = &build.review else {
                self.decide(&stage.name, round, Status::Pass, &decision);
                return Ok(StageEnd::Pass);
            };
            let verdict = self.panel_round(&stage.name, round, panel, &files, Some(&build.refine)).await?;
            let sent = match verdict {
                PanelVerdict::Pass(line) => {
                    self.decide(&stage.name, round, Status::Pass, &format!("{decision}; {line}"));
                    self.note_round(&stage.name, round, &done, "passed");
                    return Ok(StageEnd::Pass);
                }
                PanelVerdict::Pause(reason) => {
                    self.decide(&stage.name, round, Status::Paused, &reason);
                    return Ok(StageEnd::Pause {
                        status: Status::Paused,
                        reason,
                        waiting_for: "reviewers".to_owned(),
                    });
                }
                PanelVerdict::Fail(findings, reason) => {
                    self.decide(&stage.name, round, Status::Fail, &format!("{decision}; {reason}"));
                    return Ok(StageEnd::Fail(format!(
                        "stage `{}`: {reason}; the last findings: {}",
                        stage.name,
                        listed(&findings)
                    )));
                }
                PanelVerdict::Back { feedback: findings, plain, line } => {
                    self.decide(
                        &stage.name,
                        round,
                        Status::Fail,
                        &format!("{decision}; {line}; back to the builder"),
                    );
                    self.note_round(
                        &stage.name,
                        round,
                        &done,
                        &format!("{} finding(s) sent back", findings.len()),
                    );
                    (findings, plain)
                }
            };
            let (sent, plain) = sent;
            // The loop breaker: the same findings twice in a row will not converge.
            if let Some(previous) = &previous_sent
                && rules::same_findings(previous, &plain)
            {
                let reason = format!(
                    "not_converging: round {round} would send back the same findings as round {}",
                    round - 1
                );
                let passes = matches!(build.refine, Refine::Judge { on_cap: OnCap::Pass, .. });
                self.decide(&stage.name, round, if passes { Status::Pass } else { Status::Fail }, &reason);
                if passes {
                    // The record must say why a stage with findings left passed.
                    self.st()
                        .notes
                        .push(format!("stage `{}` stopped by on_cap = \"pass\": {reason}", stage.name));
                    return Ok(StageEnd::Pass);
                }
                return Ok(StageEnd::Fail(format!(
                    "stage `{}` stopped, {reason}: {}",
                    stage.name,
                    listed(&sent)
                )));
            }
            previous_sent = Some(plain);
            feedback = sent;
        }
    }

    /// Adds one line about a finished round to the stage's history (the judge reads it).
    fn note_round(&self, stage: &str, round: u32, done: &BuildDone, what: &str) {
        let previous = self.st().last_build.insert(stage.to_owned(), done.files.clone());
        let changed: Vec<&String> = done
            .files
            .iter()
            .filter(|(file, sha)| previous.as_ref().and_then(|p| p.get(*file)) != Some(*sha))
            .map(|(file, _)| file)
            .collect();
        let changed = if changed.is_empty() {
            "no file changed".to_owned()
        } else {
            format!("changed {}", list_or_none(changed.into_iter()))
        };
        self.st()
            .history
            .entry(stage.to_owned())
            .or_default()
            .push(format!("round {round}: {changed}; {what}"));
    }

    /// Records one round's decision line in the stage's report.
    fn decide(&self, stage: &str, round: u32, status: Status, line: &str) {
        let mut st = self.st();
        let report = st.report(stage);
        report.status = status;
        report.decisions.push(format!("round {round}: {line}"));
    }

    /// The goal check.
    async fn goal_check(
        &self,
        stage: &Stage,
        round: u32,
        texts: (&str, &str),
        seat: &str,
        files: &Files,
    ) -> Result<GoalResult, RunError> {
        let requirements = self.brief_requirements();
        let context = ReviewContext {
            stage: &stage.name,
            round,
            reviewer: seat,
            brief: self.brief_body(),
            requirements: &requirements,
            desc: texts.0,
            gate: texts.1,
            files,
            skipped: &[],
        };
        let target = Target {
            stage: stage.name.clone(),
            round,
            seat: seat.to_owned(),
            kind: RequestKind::Goal,
            writes: Vec::new(),
        };
        let parse = |text: &str| read_goal(text, &requirements);
        // Rendered only when the request is sent: a replay renders nothing.
        let prompt_for =
            |note: Option<&str>| Ok(with_note(&self.prompts.render(RequestKind::Goal, &context)?, note));
        match self.ask_one(target, prompt_for, parse).await? {
            Asked::GaveUp(last, _) => Ok(GoalResult::Unreadable(last)),
            Asked::Answer(reply, _) => {
                self.st().journal.emit(Event::GoalCheck(GoalCheck {
                    stage: stage.name.clone(),
                    round,
                    requirements: reply.requirements.clone(),
                }))?;
                let lines = reply
                    .requirements
                    .iter()
                    .map(|r| format!("{}: {} ({})", r.verdict.as_str(), r.requirement, r.evidence))
                    .collect();
                self.st().report(&stage.name).goal_checks.push(crate::RoundLines { round, lines });
                let unmet: Vec<Finding> = reply
                    .requirements
                    .iter()
                    .filter(|r| r.verdict == Verdict::Unmet)
                    .enumerate()
                    .map(|(i, r)| Finding {
                        id: format!("goal.{}", i + 1),
                        severity: Severity::Block,
                        evidence: format!("Requirement not met: {}. {}", r.requirement, r.evidence),
                        fix: None,
                        raised_by: vec![seat.to_owned()],
                        members: Vec::new(),
                    })
                    .collect();
                Ok(if unmet.is_empty() { GoalResult::Met } else { GoalResult::Unmet(unmet) })
            }
        }
    }

    /// A `panel` stage: reviewers judge every file written so far.
    pub(crate) async fn panel_stage(&self, stage: &Stage, panel: &PanelStage) -> Result<StageEnd, RunError> {
        let Some(round) = self.next_round(&stage.name, u32::MAX) else {
            return Ok(StageEnd::Fail(format!("stage `{}` ran out of rounds", stage.name)));
        };
        self.st().journal.emit(Event::StageStart(StageStart { stage: stage.name.clone(), round }))?;
        let written = self.files_written_before(&stage.name);
        let files = self.file_views(&written);
        match self.panel_round(&stage.name, round, &panel.panel, &files, None).await? {
            PanelVerdict::Pass(line) => {
                self.decide(&stage.name, round, Status::Pass, &line);
                Ok(StageEnd::Pass)
            }
            PanelVerdict::Back { feedback: findings, line, .. } | PanelVerdict::Fail(findings, line) => {
                self.decide(&stage.name, round, Status::Fail, &format!("{line}; revise"));
                Ok(Self::send_back_or_fail(
                    stage,
                    round,
                    panel.sends_back_to.as_deref(),
                    "the panel asked for a revision",
                    findings,
                ))
            }
            PanelVerdict::Pause(reason) => {
                self.decide(&stage.name, round, Status::Paused, &reason);
                Ok(StageEnd::Pause { status: Status::Paused, reason, waiting_for: "reviewers".to_owned() })
            }
        }
    }

    /// A `goal_check` node (graph form): the brief's requirements against a
    /// builder node's files; anything unmet or missing goes back to it.
    pub(crate) async fn goal_node(
        &self,
        stage: &Stage,
        seat: &str,
        target: &str,
    ) -> Result<StageEnd, RunError> {
        let Some(round) = self.next_round(&stage.name, u32::MAX) else {
            return Ok(StageEnd::Fail(format!("node `{}` ran out of rounds", stage.name)));
        };
        self.st().journal.emit(Event::StageStart(StageStart { stage: stage.name.clone(), round }))?;
        // The target's files: a builder's `writes`, or for a job the brief's `files`.
        let brief_files = self.workflow.brief.as_ref().map(|b| b.files.clone()).unwrap_or_default();
        let (writes, desc, gate) =
            match self.workflow.stages.iter().find(|s| s.name == target).map(|s| &s.kind) {
                Some(crate::workflow::StageKind::Build(build)) => (
                    build.writes.clone(),
                    build.desc.clone().unwrap_or_default(),
                    build.gate.clone().unwrap_or_default(),
                ),
                _ => (brief_files, String::new(), String::new()),
            };
        let files = self.file_views(&writes);
        match self.goal_check(stage, round, (&desc, &gate), seat, &files).await? {
            GoalResult::Unreadable(last) => {
                let reason = format!("the goal check `{seat}` sent no readable reply twice: {last}");
                self.decide(&stage.name, round, Status::Paused, &reason);
                Ok(StageEnd::Pause {
                    status: Status::Paused,
                    reason,
                    waiting_for: "readable goal check".to_owned(),
                })
            }
            GoalResult::Unmet(unmet) => {
                let line = format!("goal check: {} unmet, back to `{target}`", unmet.len());
                self.decide(&stage.name, round, Status::Fail, &line);
                Ok(StageEnd::SendBack {
                    to: target.to_owned(),
                    round,
                    reason: format!(
                        "node `{}`: {} requirement(s) of the brief unmet",
                        stage.name,
                        unmet.len()
                    ),
                    findings: unmet,
                })
            }
            GoalResult::Met => {
                let missing: Vec<Finding> = files
                    .views()
                    .iter()
                    .filter(|f| f.missing)
                    .map(|f| missing_finding(target, &f.path))
                    .collect();
                if missing.is_empty() {
                    self.decide(&stage.name, round, Status::Pass, "goal check: every requirement met");
                    return Ok(StageEnd::Pass);
                }
                self.decide(
                    &stage.name,
                    round,
                    Status::Fail,
                    &format!("{} file(s) missing, back to `{target}`", missing.len()),
                );
                Ok(StageEnd::SendBack {
                    to: target.to_owned(),
                    round,
                    reason: format!("node `{}`: files missing", stage.name),
                    findings: missing,
                })
            }
        }
    }

    /// A `job` node: Rust code decides. Its result is recorded, so a replay
    /// reads it instead of running the job again.
    pub(crate) async fn job_node(
        &self,
        stage: &Stage,
        job: &crate::job::JobRef,
        feedback: Vec<Finding>,
    ) -> Result<StageEnd, RunError> {
        use crate::job::{JobContext, JobOutcome};
        let Some(round) = self.next_round(&stage.name, u32::MAX) else {
            return Ok(StageEnd::Fail(format!("node `{}` ran out of rounds", stage.name)));
        };
        self.st().journal.emit(Event::StageStart(StageStart { stage: stage.name.clone(), round }))?;
        let recorded = self.st().journal.job_done(&stage.name, round);
        let done = if let Some(done) = recorded {
            done
        } else {
            let context =
                JobContext { node: stage.name.clone(), round, workspace: self.workspace.clone(), feedback };
            let started = std::time::Instant::now();
            // A job's code may write anywhere in the workspace, like a command.
            let scope = gavel_fs::scope::WriteScope::enter_anywhere(&self.workspace);
            let outcome = job.job.run(&context).await;
            drop(scope);
            let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
            let (status, summary, to, findings) = match outcome {
                Ok(JobOutcome::Pass(summary)) => ("pass", summary, None, Vec::new()),
                Ok(JobOutcome::SendBack { to, reason, findings }) => {
                    ("send_back", reason, Some(to), findings)
                }
                Ok(JobOutcome::Fail(summary)) => ("fail", summary, None, Vec::new()),
                Err(error) => ("fail", format!("the job failed: {error}"), None, Vec::new()),
            };
            let done = gavel_record::event::JobDone {
                stage: stage.name.clone(),
                round,
                status: status.to_owned(),
                summary,
                to,
                findings,
                ms,
            };
            self.st().journal.record_job(done.clone())?;
            done
        };
        match (done.status.as_str(), done.to) {
            ("pass", _) => {
                self.decide(&stage.name, round, Status::Pass, &format!("job: {}", done.summary));
                Ok(StageEnd::Pass)
            }
            ("send_back", Some(to)) => {
                let upstream = self.upstream_of(&stage.name);
                if !upstream.contains(&to) {
                    let summary = format!(
                        "node `{}` tried to send work back to `{to}`, which is not a node it needs",
                        stage.name
                    );
                    self.decide(&stage.name, round, Status::Fail, &summary);
                    return Ok(StageEnd::Fail(summary));
                }
                self.decide(
                    &stage.name,
                    round,
                    Status::Fail,
                    &format!("job: {}; back to `{to}`", done.summary),
                );
                Ok(StageEnd::SendBack { to, round, reason: done.summary, findings: done.findings })
            }
            _ => {
                self.decide(&stage.name, round, Status::Fail, &format!("job: {}", done.summary));
                Ok(StageEnd::Fail(format!("node `{}`: {}", stage.name, done.summary)))
            }
        }
    }

    /// Every node `name` needs, directly or not.
    fn upstream_of(&self, name: &str) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        let mut stack: Vec<String> =
            self.workflow.stages.iter().find(|s| s.name == name).map(|s| s.needs.clone()).unwrap_or_default();
        while let Some(next) = stack.pop() {
            if !seen.contains(&next) {
                if let Some(node) = self.workflow.stages.iter().find(|s| s.name == next) {
                    stack.extend(node.needs.iter().cloned());
                }
                seen.push(next);
            }
        }
        seen
    }

    /// A `run` stage: the command is the gate.
    pub(crate) async fn run_stage(&self, stage: &Stage, run: &RunStage) -> Result<StageEnd, RunError> {
        let Some(round) = self.next_round(&stage.name, u32::MAX) else {
            return Ok(StageEnd::Fail(format!("stage `{}` ran out of rounds", stage.name)));
        };
        self.st().journal.emit(Event::StageStart(StageStart { stage: stage.name.clone(), round }))?;
        let workspace = self.workspace.clone();
        let recorded = self.st().journal.check_run(&stage.name, round);
        let check = if let Some(check) = recorded {
            check
        } else {
            let mut check = run_command(&workspace, &stage.name, round, run).await;
            // Only the output's end is kept: a secret the cut split in two
            // leaves a piece at the start, which the record must not hold.
            check.output_tail = gavel_seats::secret::scrub_cut(&check.output_tail, true, false);
            // The built files as the command left them: resume checks the
            // workspace against the latest state the record holds.
            let built = self.st().journal.built_paths();
            let after = observe_build(&workspace, &stage.name, round, &built);
            (check.files, check.missing) = (after.files, after.missing);
            self.st().journal.record_check(check.clone())?;
            check
        };
        let command = command_text(&run.command);
        let passed = check.exit == Some(0) && !check.timed_out;
        let result = if check.timed_out {
            format!("timed out after {}", crate::exec::humanize(run.timeout))
        } else if let Some(error) = &check.error {
            format!("could not start: {error}")
        } else {
            check.exit.map_or_else(|| "was killed by a signal".to_owned(), |code| format!("exited {code}"))
        };
        if passed {
            self.decide(&stage.name, round, Status::Pass, &format!("`{command}` {result}"));
            return Ok(StageEnd::Pass);
        }
        self.decide(&stage.name, round, Status::Fail, &format!("`{command}` {result}"));
        let finding = Finding {
            id: format!("{}.1", stage.name),
            severity: Severity::Block,
            // Cleaned again: a record written by an older gavel kept colour codes.
            evidence: format!(
                "`{command}` {result}. Its output ends:\n{}",
                gavel_process::plain::plain_text(check.output_tail.as_bytes())
            ),
            fix: None,
            raised_by: vec![stage.name.clone()],
            members: Vec::new(),
        };
        let reason = format!("`{command}` {result}");
        Ok(Self::send_back_or_fail(stage, round, run.sends_back_to.as_deref(), &reason, vec![finding]))
    }

    /// An `approve` stage: a person approves exact bytes. The
    /// approval is bound to each file's SHA-256 when asked; bytes that changed
    /// since are refused and asked for again.
    pub(crate) fn approve_stage(
        &self,
        stage: &Stage,
        files: Option<&[String]>,
    ) -> Result<StageEnd, RunError> {
        let Some(stage_round) = self.next_round(&stage.name, u32::MAX) else {
            return Ok(StageEnd::Fail(format!("stage `{}` ran out of rounds", stage.name)));
        };
        self.st()
            .journal
            .emit(Event::StageStart(StageStart { stage: stage.name.clone(), round: stage_round }))?;
        let files: Vec<String> =
            files.map_or_else(|| self.files_written_before(&stage.name), <[String]>::to_vec);
        // Asks are numbered per stage across its passes, so a second pass
        // (after a send-back) asks afresh for the bytes it then has.
        let mut ask_round = self.st().asks_used.get(&stage.name).copied().unwrap_or(0) + 1;
        self.st().pass_first_ask.insert(stage.name.clone(), ask_round);
        let mut asked_again = false;
        // Why the next ask is made again, for its record.
        let mut ask_reason: Option<String> = None;
        loop {
            self.st().asks_used.insert(stage.name.clone(), ask_round);
            let existing =
                self.st().journal.approval_ask(&stage.name, ask_round).map(|ask| ask.files.clone());
            let asked = if let Some(files) = existing {
                files
            } else {
                asked_again = ask_round > self.asks_used_before(&stage.name);
                let hashes = self.hashes(&files);
                self.st().journal.emit(Event::ApprovalRequest(gavel_record::event::ApprovalRequest {
                    stage: stage.name.clone(),
                    round: ask_round,
                    files: hashes.clone(),
                    reason: ask_reason.take(),
                }))?;
                hashes
            };
            let recorded = self.st().journal.approval(&stage.name, ask_round).cloned();
            if let Some(recorded) = recorded {
                let approval = recorded.value;
                if approval.approved {
                    let line = format!(
                        "approved by {} ({} file(s), bound by SHA-256)",
                        approval.by,
                        approval.files.len()
                    );
                    self.decide(&stage.name, stage_round, Status::Pass, &line);
                    return Ok(StageEnd::Pass);
                }
                let why =
                    if approval.reason.is_empty() { String::new() } else { format!(": {}", approval.reason) };
                let line = format!("rejected by {}{why}", approval.by);
                self.decide(&stage.name, stage_round, Status::Fail, &line);
                return Ok(StageEnd::Fail(format!("stage `{}`: {line}", stage.name)));
            }
            if self.st().journal.approval_ask(&stage.name, ask_round + 1).is_some() {
                // The bytes changed before this ask was answered; the record
                // asked again.
                ask_round += 1;
                continue;
            }
            let current = self.hashes(&files);
            if current != asked {
                // The bytes changed since the ask: that ask cannot be answered.
                ask_round += 1;
                let changed: Vec<&String> =
                    current.keys().filter(|f| current.get(*f) != asked.get(*f)).collect();
                let note = format!(
                    "changed since the approval was asked for: {}",
                    changed.iter().map(|f| f.as_str()).collect::<Vec<_>>().join(", ")
                );
                self.st()
                    .report(&stage.name)
                    .decisions
                    .push(format!("round {stage_round}: {note}; asked again"));
                ask_reason = Some(note);
                continue;
            }
            let ask = crate::ApprovalAsk {
                run_id: self.run_id().to_owned(),
                stage: stage.name.clone(),
                round: ask_round,
                files: asked.clone(),
                workspace: self.workspace.clone(),
                asked_again,
            };
            let answer = self.approver.as_ref().and_then(|approver| approver.decide(&ask));
            let Some(answer) = answer else {
                let reason = if ask_round > 1 {
                    format!(
                        "the files of stage `{}` changed since the approval was asked for; approve the new bytes",
                        stage.name
                    )
                } else {
                    format!("stage `{}` waits for a person to approve {} file(s)", stage.name, asked.len())
                };
                self.decide(&stage.name, stage_round, Status::Paused, &reason);
                return Ok(StageEnd::Pause {
                    status: Status::Paused,
                    reason,
                    waiting_for: format!("approval of stage {}", stage.name),
                });
            };
            self.st().journal.record_approval(gavel_record::event::Approval {
                stage: stage.name.clone(),
                round: ask_round,
                files: asked,
                approved: answer.approved,
                by: answer.by,
                reason: answer.reason,
            })?;
        }
    }

    /// The first ask round of the stage's current pass, minus one.
    fn asks_used_before(&self, stage: &str) -> u32 {
        self.st().pass_first_ask.get(stage).copied().unwrap_or(1)
    }

    /// Each file's SHA-256 as it is now (a missing file hashes as "missing").
    fn hashes(&self, files: &[String]) -> BTreeMap<String, String> {
        files
            .iter()
            .map(|f| {
                let digest = sha256_of(&self.workspace.join(f)).unwrap_or_else(|| "missing".to_owned());
                (f.clone(), digest)
            })
            .collect()
    }

    fn send_back_or_fail(
        stage: &Stage,
        round: u32,
        to: Option<&str>,
        reason: &str,
        findings: Vec<Finding>,
    ) -> StageEnd {
        if let Some(to) = to {
            return StageEnd::SendBack {
                to: to.to_owned(),
                round,
                reason: format!("stage `{}`: {reason}", stage.name),
                findings,
            };
        }
        let listed: Vec<String> = findings.iter().map(feedback_line).collect();
        StageEnd::Fail(format!("stage `{}` failed: {reason}; {}", stage.name, listed.join(" | ")))
    }

    /// The files the builder stages before `stage` write, in stage order.
    fn files_written_before(&self, stage: &str) -> Vec<String> {
        let mut files: Vec<String> = Vec::new();
        for s in &self.workflow.stages {
            if s.name == stage {
                break;
            }
            if let crate::workflow::StageKind::Build(build) = &s.kind {
                for file in &build.writes {
                    if !files.contains(file) {
                        files.push(file.clone());
                    }
                }
            }
        }
        files
    }

    /// The files as a read-only seat's prompt shows them.
    fn file_views(&self, files: &[String]) -> Files {
        Files { root: self.workspace.clone(), paths: files.to_vec(), views: std::sync::OnceLock::new() }
    }
}

/// Reads a goal check reply, and insists on a verdict for every requirement
/// the brief lists.
fn read_goal(text: &str, required: &[String]) -> Result<GoalReply, String> {
    let reply = GoalReply::parse(text).map_err(|e| e.note())?;
    let normal = |s: &str| s.trim().trim_end_matches('.').to_lowercase();
    let answered: Vec<String> = reply.requirements.iter().map(|r| normal(&r.requirement)).collect();
    let missing: Vec<&String> = required.iter().filter(|r| !answered.contains(&normal(r))).collect();
    if missing.is_empty() {
        return Ok(reply);
    }
    let listed: Vec<String> = missing.iter().map(|r| format!("\"{r}\"")).collect();
    Err(format!(
        "Your reply has no verdict for {}. Give one entry per requirement of the brief, with the requirement's text as written. Reply with one JSON object of this shape: {}",
        listed.join(", "),
        GoalReply::SHAPE
    ))
}

fn missing_finding(stage: &str, file: &str) -> Finding {
    Finding {
        id: format!("{stage}.missing"),
        severity: Severity::Block,
        evidence: format!("`{file}` is missing: write it; it is one of the files this stage must produce."),
        fix: None,
        raised_by: vec!["gavel".to_owned()],
        members: Vec::new(),
    }
}

/// One feedback item as the builder reads it.
fn feedback_line(finding: &Finding) -> String {
    let mut line = format!("[{}] {}", finding.severity.as_str(), finding.evidence);
    if let Some(fix) = &finding.fix {
        let _ = write!(line, " Fix: {fix}");
    }
    line
}

fn listed(findings: &[Finding]) -> String {
    let lines: Vec<String> = findings.iter().map(feedback_line).collect();
    if lines.is_empty() { "none".to_owned() } else { lines.join(" | ") }
}

fn out_of_rounds(stage: &str, max: u32, findings: &[Finding]) -> String {
    let listed: Vec<String> = findings.iter().map(feedback_line).collect();
    format!(
        "stage `{stage}` used its {max} round{} and the work is still not accepted; the last findings: {}",
        if max == 1 { "" } else { "s" },
        if listed.is_empty() { "none".to_owned() } else { listed.join(" | ") }
    )
}

fn list_or_none<'a>(items: impl Iterator<Item = &'a String>) -> String {
    let items: Vec<&str> = items.map(String::as_str).collect();
    if items.is_empty() { "nothing".to_owned() } else { items.join(", ") }
}

/// Looks at the files a stage writes: each one's SHA-256, or missing.
pub(crate) fn observe_build(workspace: &Path, stage: &str, round: u32, writes: &[String]) -> BuildDone {
    let mut done = BuildDone { stage: stage.to_owned(), round, files: BTreeMap::new(), missing: Vec::new() };
    for file in writes {
        match sha256_of(&workspace.join(file)) {
            Some(digest) => {
                done.files.insert(file.clone(), digest);
            }
            None => done.missing.push(file.clone()),
        }
    }
    done
}

/// The SHA-256 of a file's bytes, hex; `None` when it cannot be read.
pub(crate) fn sha256_of(path: &Path) -> Option<String> {
    // Streamed from a handle checked to be a regular file: a FIFO left at a
    // `writes` path must not hang the run, nor a huge file fill memory.
    let (mut file, _) = gavel_fs::read::open(path, WORKSPACE_FILE).ok()?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match std::io::Read::read(&mut file, &mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(hex::encode(hasher.finalize()))
}

fn command_text(command: &CommandSpec) -> String {
    match command {
        CommandSpec::Argv(argv) => argv.join(" "),
        CommandSpec::Shell(line) => line.clone(),
    }
}

/// Runs a stage's command in the workspace and describes how it went.
async fn run_command(workspace: &Path, stage: &str, round: u32, run: &RunStage) -> CheckRun {
    let (spec, argv, shell) = match &run.command {
        CommandSpec::Argv(argv) => {
            let spec = SpawnSpec::new(&argv[0], workspace).args(&argv[1..]);
            (spec, Some(argv.clone()), None)
        }
        CommandSpec::Shell(line) => (SpawnSpec::shell(line, workspace), None, Some(line.clone())),
    };
    let started = std::time::Instant::now();
    // A command may write anywhere in the workspace: an agent CLI builder
    // running at the same time (a parallel node) must not have the
    // command's files blamed on it and undone.
    let scope = gavel_fs::scope::WriteScope::enter_anywhere(workspace);
    // Plain output: the tail is stored in the record and sent back to a
    // builder, where colour codes are noise.
    let finished = gavel_process::run(spec.plain_output().timeout(run.timeout)).await;
    drop(scope);
    let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let (exit, timed_out, output_tail, output_truncated, error) = match finished {
        Ok(done) => {
            let exit = match done.outcome {
                ProcessOutcome::Exited(code) => Some(code),
                ProcessOutcome::Signaled(_) | ProcessOutcome::TimedOut { .. } => None,
            };
            let timed_out = matches!(done.outcome, ProcessOutcome::TimedOut { .. });
            // Escape sequences stripped; cut when what is kept is less than
            // what the command printed.
            let (mut tail, out_cut) = done.stdout.plain_tail(OUTPUT_TAIL);
            let (err, err_cut) = done.stderr.plain_tail(OUTPUT_TAIL);
            if !err.trim().is_empty() {
                if !tail.is_empty() && !tail.ends_with('\n') {
                    tail.push('\n');
                }
                tail.push_str(&err);
            }
            (exit, timed_out, tail, out_cut || err_cut, None)
        }
        Err(err) => (None, false, String::new(), false, Some(err.to_string())),
    };
    CheckRun {
        stage: stage.to_owned(),
        round,
        argv,
        shell,
        exit,
        timed_out,
        ms,
        output_tail,
        output_truncated,
        error,
        files: BTreeMap::new(),
        missing: Vec::new(),
    }
}
