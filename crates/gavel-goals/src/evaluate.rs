//! The evaluator: deterministic checks first.
//!
//! One evaluation, in order: every criterion command runs (in the goal file's
//! order, one at a time, since test runners fight over build locks) and leaves
//! an evidence file; the path boundary is checked when `allowed_paths` is set;
//! only then, and only when no command has already failed the goal, a judge
//! seat decides the criteria without a command, one request each. The verdict
//! follows from the results alone: a broken boundary → `blocked`; a failing
//! `must_pass` criterion → `fail`; an undecided one → `incomplete`; else `pass`.
//! The evaluation is recorded, non-terminal statuses are written directly, and
//! terminal ones are only proposed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gavel_domain::protocol::{Protocol as _, ProtocolError};
use gavel_domain::{Access, RequestKind};
use gavel_seats::{Request, Seat, build_seat};
use jiff::Timestamp;
use serde::Serialize;

use crate::GoalError;
use crate::event::{
    Actor, Created, CriterionResult, CriterionStatus, DecidedBy, Evaluated, GoalEvent, GoalStatus, Judged,
    PathBoundary, Proposed, StatusChange, Trigger, Verdict, Withdrawn,
};
use crate::evidence::{self, BoundaryEvidence, CommandEvidence, Evidence, EvidenceKind, JudgeEvidence};
use crate::exec::{self, RECORD_TAIL_BYTES, millis};
use crate::file::{Criterion, EvaluatorKind, LoadedGoal, PATH_BOUNDARY_ID};
use crate::judge::{self, CriterionReply, JudgeResult};
use crate::store::{GoalPaths, GoalRecord};

/// How long a judge seat may take per request unless its `timeout` says.
pub const DEFAULT_JUDGE_TIMEOUT: Duration = Duration::from_secs(600);
/// The judge seat's name in the record.
pub const JUDGE_SEAT: &str = "judge";
/// The confidence given to a judge's decision that names none.
pub const DEFAULT_JUDGE_CONFIDENCE: f64 = 0.5;

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct EvaluateRequest {
    /// The project root (the folder holding `.gavel`).
    pub root: PathBuf,
    /// The goal's id.
    pub goal_id: String,
    /// The run id for the evidence folder; generated when `None`.
    pub run_id: Option<String>,
    /// What asked.
    pub trigger: Trigger,
}

/// A criterion whose status changed since the last evaluation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Delta {
    /// The criterion.
    pub criterion: String,
    /// Its status before (`None`: never evaluated).
    pub from: Option<CriterionStatus>,
    /// Its status now.
    pub to: CriterionStatus,
}

/// A proposed terminal transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transition {
    /// The terminal status.
    pub to: GoalStatus,
    /// Why, as a code.
    pub reason: String,
    /// Why, in a sentence.
    pub summary: String,
    /// Who proposed it.
    pub by: Actor,
}

/// The verdict of one evaluation, as `--json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evaluation {
    /// The goal's id.
    pub goal: String,
    /// The evaluation's run id.
    pub run_id: String,
    /// What asked.
    pub trigger: Trigger,
    /// `pass`, `fail`, `incomplete` or `blocked`.
    pub verdict: Verdict,
    /// 1.0 when commands decided the verdict; the judge's confidence when it
    /// did; 0 when there is no verdict yet (`incomplete`).
    pub confidence: f64,
    /// Why, as a code.
    pub reason: String,
    /// Why, in a sentence.
    pub summary: String,
    /// What to do next.
    pub next_step_hint: String,
    /// Criteria whose status changed since the last evaluation.
    pub delta: Vec<Delta>,
    /// Every criterion's result, with its evidence file.
    pub criteria: Vec<CriterionResult>,
    /// The path-boundary check, when `allowed_paths` is set.
    pub path_boundary: Option<PathBoundary>,
    /// The terminal transition waiting for a person, if any.
    pub proposed_transition: Option<Transition>,
    /// The goal's status after the evaluation.
    pub status: GoalStatus,
    /// The evidence folder, relative to the project root.
    pub evidence_dir: String,
    /// The goal's record.
    pub record: String,
    /// Whether this evaluation found the goal stuck (`stuck_no_progress`).
    pub stuck: bool,
    /// Things the person should know (an adopted goal file, a cut record tail).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Evaluates a goal: loads and checks its file first (a bad file changes
/// nothing), then locks its record for the whole evaluation.
pub async fn evaluate(request: EvaluateRequest) -> Result<Evaluation, GoalError> {
    let paths = GoalPaths::existing(&request.root, &request.goal_id)?;
    let goal = LoadedGoal::load(&paths.file, &paths.id)?;
    let mut record = GoalRecord::open(&paths)?;
    let evaluation = evaluate_in(&mut record, &goal, request.run_id, request.trigger).await?;
    record.write_state_md()?;
    Ok(evaluation)
}

/// Evaluates a loaded goal within an open record (the stop hook goes on
/// appending to the same record afterwards). Does not write `state.md`.
pub async fn evaluate_in(
    record: &mut GoalRecord,
    goal: &LoadedGoal,
    run_id: Option<String>,
    trigger: Trigger,
) -> Result<Evaluation, GoalError> {
    let started = Instant::now();
    let paths = record.paths.clone();
    let mut warnings: Vec<String> = record.torn_warning.iter().cloned().collect();
    let status = record.state().status;
    if status.is_terminal() {
        return Err(GoalError::Refused(format!(
            "goal `{}` is {status}; a finished goal is not evaluated again (create a new goal to go on)",
            paths.id
        )));
    }
    let spec = &goal.goal;
    let fuzzy: Vec<&Criterion> = spec.criteria.iter().filter(|c| c.is_fuzzy()).collect();
    // Built before anything is written: a bad judge seat changes nothing.
    let seat = match (&spec.judge_seat, spec.evaluator.uses_judge() && !fuzzy.is_empty()) {
        (Some(seat_spec), true) => Some(build_judge(seat_spec, &paths)?),
        _ => None,
    };
    let run_id = pick_run_id(&paths, run_id)?;
    let evidence_dir = paths.evidence_dir(&run_id);
    std::fs::create_dir_all(&evidence_dir).map_err(|source| GoalError::io(&evidence_dir, source))?;

    if !record.state().is_created() {
        // A goal file written by hand: its first evaluation adopts it, and the
        // base commit is the one now (the best that can be known).
        let base = exec::head_commit(&paths.root).await;
        warnings.push(format!(
            "goal `{}` had no record; adopted it now{}",
            paths.id,
            base.as_deref().map_or_else(
                || " (not in git: no base commit)".to_owned(),
                |b| format!(
                    " with base commit {}; changes made before now do not count against allowed_paths",
                    short(b)
                )
            )
        ));
        record.append(GoalEvent::Created(Created {
            goal_id: paths.id.clone(),
            title: spec.title.clone(),
            digest: goal.digest.clone(),
            base_commit: base,
            root: paths.root.display().to_string(),
            gavel: env!("CARGO_PKG_VERSION").to_owned(),
            adopted: true,
        }))?;
    }

    let ctx = Ctx { paths: &paths, run_id: &run_id, trigger, evidence_dir: &evidence_dir };
    let mut results: BTreeMap<String, CriterionResult> = BTreeMap::new();
    for criterion in spec.criteria.iter().filter(|c| !c.is_fuzzy()) {
        let result = ctx.run_criterion(criterion).await?;
        results.insert(criterion.id.clone(), result);
    }

    // `judge` asks its judge only when a person or a command evaluates, so an
    // agent's stop-hook loop spends no judge calls.
    let judge_now = match spec.evaluator {
        EvaluatorKind::Deterministic => false,
        EvaluatorKind::Hybrid => true,
        EvaluatorKind::Judge => trigger != Trigger::StopHook,
    };
    let mut changed: Option<Vec<String>> = None;
    let boundary = match &goal.allowed {
        Some(allowed) => {
            let base = record.state().base_commit.clone();
            let (boundary, files) = ctx.check_boundary(allowed, base).await?;
            changed = files;
            Some(boundary)
        }
        None => None,
    };
    if changed.is_none()
        && judge_now
        && seat.is_some()
        && let Some(base) = record.state().base_commit.clone()
    {
        changed = exec::changed_files(&paths.root, &base).await.ok();
    }

    let command_failed = spec
        .criteria
        .iter()
        .any(|c| c.must_pass && results.get(&c.id).is_some_and(|r| r.status == CriterionStatus::Fail));
    let blocked = boundary.as_ref().is_some_and(|b| !b.holds());
    let settled: Vec<CriterionResult> =
        spec.criteria.iter().filter_map(|c| results.get(&c.id).cloned()).collect();
    for criterion in &fuzzy {
        let skip = if !judge_now || seat.is_none() {
            Some(match spec.evaluator {
                EvaluatorKind::Deterministic => {
                    "no command, and `evaluator: deterministic` has no judge to decide it".to_owned()
                }
                _ => "the `judge` evaluator asks its judge only when a person or a command evaluates, not the stop hook".to_owned(),
            })
        } else if blocked {
            Some("not judged: the path boundary is broken".to_owned())
        } else if command_failed {
            Some("not judged: a must_pass command already fails the goal".to_owned())
        } else {
            None
        };
        let result = match (skip, &seat) {
            (None, Some(seat)) => {
                let bundle = judge::Bundle {
                    goal: spec,
                    criterion,
                    settled: &settled,
                    changed: changed.as_deref(),
                    evidence_dir: &paths.from_root(&evidence_dir),
                };
                let outcome = ask_judge(record, seat.as_ref(), &bundle, &run_id).await?;
                ctx.judged_result(criterion, seat.as_ref(), &outcome)?
            }
            (skip, _) => {
                pending(criterion, skip.unwrap_or_else(|| format!("`{}` has no command", criterion.id)))
            }
        };
        results.insert(criterion.id.clone(), result);
    }

    let criteria: Vec<CriterionResult> = spec.criteria.iter().filter_map(|c| results.remove(&c.id)).collect();
    let verdict = verdict_of(&criteria, boundary.as_ref());
    let confidence = confidence_of(verdict, &criteria);

    let previous = record.state().last_criteria();
    let delta: Vec<Delta> = criteria
        .iter()
        .filter_map(|c| {
            let from = previous.get(c.id.as_str()).map(|p| p.status);
            (from != Some(c.status)).then(|| Delta { criterion: c.id.clone(), from, to: c.status })
        })
        .collect();
    let last_passing = record.state().last.as_ref().map(|l| l.evaluation.passing());

    let mut evaluated = Evaluated {
        run_id: run_id.clone(),
        trigger,
        digest: goal.digest.clone(),
        verdict,
        confidence,
        reason: String::new(),
        summary: String::new(),
        hint: String::new(),
        criteria,
        path_boundary: boundary,
        ms: 0,
    };
    let passing = evaluated.passing();
    let stuck = trigger == Trigger::StopHook && verdict != Verdict::Pass && {
        let mut row = record.state().stop_hook_row.clone();
        row.push(passing.clone());
        let same = row.iter().rev().take_while(|set| **set == passing).count();
        same >= usize::try_from(spec.stop_hook.stuck_after).unwrap_or(usize::MAX)
    };
    let (reason, summary) = explain(&evaluated);
    evaluated.reason = reason;
    evaluated.summary = summary;
    evaluated.hint = hint(&paths.id, spec.evaluator, &evaluated, stuck, spec.stop_hook.stuck_after);
    evaluated.ms = millis(started.elapsed());
    record.append(GoalEvent::Evaluated(evaluated.clone()))?;

    // Non-terminal statuses are written directly.
    let target = match verdict {
        Verdict::Blocked => GoalStatus::Blocked,
        Verdict::Incomplete => GoalStatus::WaitingForUser,
        Verdict::Pass | Verdict::Fail => GoalStatus::Active,
    };
    if target != record.state().status {
        record.append(GoalEvent::Status(StatusChange {
            from: record.state().status,
            to: target,
            reason: evaluated.reason.clone(),
            by: Actor::Evaluator,
        }))?;
    }

    // Terminal ones are only proposed.
    let wanted = if verdict == Verdict::Pass {
        Some((GoalStatus::Achieved, "all_criteria_pass", evaluated.summary.clone()))
    } else if stuck {
        Some((
            GoalStatus::Failed,
            "stuck_no_progress",
            format!(
                "the passing criteria did not change over {} stop-hook evaluations in a row",
                spec.stop_hook.stuck_after
            ),
        ))
    } else {
        None
    };
    let pending = record.state().proposal.clone();
    match (&pending, wanted) {
        // A person's proposal stands until a person decides it.
        (Some(p), _) if p.by == Actor::Person => {}
        (Some(p), Some((to, _, _))) if p.to == to && p.digest.as_deref() == Some(goal.digest.as_str()) => {}
        (_, Some((to, reason, summary))) => {
            record.append(GoalEvent::Proposed(Proposed {
                to,
                reason: reason.to_owned(),
                summary,
                by: Actor::Evaluator,
                run_id: Some(run_id.clone()),
                digest: Some(goal.digest.clone()),
            }))?;
        }
        (Some(p), None) => {
            // An `achieved` proposal falls when the checks no longer pass; a
            // `failed` (stuck) one only when progress resumed, so a person
            // merely looking (a manual evaluation) does not withdraw it.
            let progressed = last_passing.as_ref() != Some(&passing);
            let reason = match p.to {
                GoalStatus::Achieved => Some(format!("the checks no longer pass: {}", evaluated.summary)),
                GoalStatus::Failed if progressed => {
                    Some("progress resumed: the passing criteria changed".to_owned())
                }
                _ => None,
            };
            if let Some(reason) = reason {
                record.append(GoalEvent::Withdrawn(Withdrawn {
                    to: p.to,
                    reason,
                    run_id: Some(run_id.clone()),
                }))?;
            }
        }
        (None, None) => {}
    }

    let state = record.state();
    Ok(Evaluation {
        goal: paths.id.clone(),
        run_id,
        trigger,
        verdict,
        confidence,
        reason: evaluated.reason,
        summary: evaluated.summary,
        next_step_hint: evaluated.hint,
        delta,
        criteria: evaluated.criteria,
        path_boundary: evaluated.path_boundary,
        proposed_transition: state.proposal.as_ref().map(|p| Transition {
            to: p.to,
            reason: p.reason.clone(),
            summary: p.summary.clone(),
            by: p.by,
        }),
        status: state.status,
        evidence_dir: paths.from_root(&evidence_dir),
        record: paths.from_root(&paths.record),
        stuck,
        warnings,
    })
}

/// What every step of one evaluation shares.
struct Ctx<'a> {
    paths: &'a GoalPaths,
    run_id: &'a str,
    trigger: Trigger,
    evidence_dir: &'a Path,
}

impl Ctx<'_> {
    fn evidence(&self, kind: EvidenceKind, proves: Vec<String>, status: CriterionStatus) -> Evidence {
        Evidence {
            goal: self.paths.id.clone(),
            run_id: self.run_id.to_owned(),
            trigger: self.trigger,
            kind,
            proves,
            criterion: None,
            status,
            limits: None,
            when: now_text(),
            command: None,
            judge: None,
            path_boundary: None,
        }
    }

    async fn run_criterion(&self, criterion: &Criterion) -> Result<CriterionResult, GoalError> {
        let line = criterion.command.as_deref().unwrap_or_default();
        let timeout = Duration::from_secs(criterion.timeout_seconds());
        let env = [
            ("GAVEL_GOAL_ID", self.paths.id.clone()),
            ("GAVEL_RUN_ID", self.run_id.to_owned()),
            ("GAVEL_CRITERION_ID", criterion.id.clone()),
        ];
        let run = exec::run_command(&self.paths.root, line, timeout, &env).await;
        let status = if run.passed() { CriterionStatus::Pass } else { CriterionStatus::Fail };
        let mut evidence = self.evidence(EvidenceKind::CommandResult, vec![criterion.id.clone()], status);
        evidence.criterion = Some(criterion.text.clone());
        evidence.limits.clone_from(&criterion.limits);
        evidence.command = Some(CommandEvidence {
            line: line.to_owned(),
            cwd: self.paths.root.display().to_string(),
            exit_code: run.exit,
            timed_out: run.timed_out,
            timeout_seconds: criterion.timeout_seconds(),
            outcome: run.outcome.clone(),
            error: run.error.clone(),
            duration_ms: run.ms,
            output_sha256: crate::sha256_hex(&run.kept),
            output_bytes: run.total_bytes,
            output_truncated: run.truncated,
            output_tail: run.tail.clone(),
        });
        let written = evidence::write(self.evidence_dir, &criterion.id, &evidence)?;
        let note = match (&run.error, run.timed_out) {
            (Some(error), _) => format!("could not start: {error}"),
            (None, true) if criterion.timeout_seconds.is_none() => format!(
                "timed out after the default {} s; a command slower than that needs `timeout_seconds`",
                criterion.timeout_seconds()
            ),
            (None, true) => format!("timed out after {} s (`timeout_seconds`)", criterion.timeout_seconds()),
            (None, false) => format!("`{line}` {}", run.outcome),
        };
        Ok(CriterionResult {
            id: criterion.id.clone(),
            text: criterion.text.clone(),
            must_pass: criterion.must_pass,
            status,
            decided_by: DecidedBy::Command,
            command: Some(line.to_owned()),
            exit: run.exit,
            timed_out: run.timed_out,
            ms: Some(run.ms),
            output_tail: run.tail_of(RECORD_TAIL_BYTES),
            output_truncated: run.tail_of_is_cut(RECORD_TAIL_BYTES),
            evidence: Some(self.paths.from_root(&written.path)),
            evidence_sha256: Some(written.sha256),
            confidence: None,
            note,
        })
    }

    async fn check_boundary(
        &self,
        allowed: &crate::file::AllowedPaths,
        base: Option<String>,
    ) -> Result<(PathBoundary, Option<Vec<String>>), GoalError> {
        let (changed, error) = match &base {
            None => (None, Some("the goal has no base commit (it was created outside git), so changed files cannot be listed".to_owned())),
            Some(base) => match exec::changed_files(&self.paths.root, base).await {
                Ok(files) => (Some(files), None),
                Err(err) => (None, Some(err)),
            },
        };
        let files = changed.clone().unwrap_or_default();
        let violations: Vec<String> = files.iter().filter(|f| !allowed.allows(f)).cloned().collect();
        let status = if error.is_none() && violations.is_empty() {
            CriterionStatus::Pass
        } else {
            CriterionStatus::Fail
        };
        let mut evidence = self.evidence(EvidenceKind::PathBoundaryCheck, Vec::new(), status);
        evidence.path_boundary = Some(BoundaryEvidence {
            allowed_paths: allowed.globs.clone(),
            base_commit: base.clone(),
            changed: files.clone(),
            violations: violations.clone(),
            error: error.clone(),
        });
        let written = evidence::write(self.evidence_dir, PATH_BOUNDARY_ID, &evidence)?;
        let boundary = PathBoundary {
            allowed: allowed.globs.clone(),
            base,
            changed: files,
            violations,
            error,
            evidence: Some(self.paths.from_root(&written.path)),
        };
        Ok((boundary, changed))
    }

    fn judged_result(
        &self,
        criterion: &Criterion,
        seat: &dyn Seat,
        outcome: &JudgeResult,
    ) -> Result<CriterionResult, GoalError> {
        let mut evidence =
            self.evidence(EvidenceKind::JudgeDecision, vec![criterion.id.clone()], outcome.status);
        evidence.criterion = Some(criterion.text.clone());
        evidence.limits.clone_from(&criterion.limits);
        evidence.judge = Some(JudgeEvidence {
            seat: JUDGE_SEAT.to_owned(),
            engine: seat.engine().as_str().to_owned(),
            verdict: outcome.verdict,
            confidence: outcome.confidence,
            evidence: outcome.evidence.clone(),
            attempts: outcome.attempts,
            problem: outcome.problem.clone(),
        });
        let written = evidence::write(self.evidence_dir, &criterion.id, &evidence)?;
        let note = match (&outcome.problem, outcome.status) {
            (Some(problem), _) => format!("the judge could not decide: {problem}"),
            (None, CriterionStatus::Pass) => format!("judge: met — {}", outcome.evidence),
            (None, _) => format!("judge: unmet — {}", outcome.evidence),
        };
        Ok(CriterionResult {
            id: criterion.id.clone(),
            text: criterion.text.clone(),
            must_pass: criterion.must_pass,
            status: outcome.status,
            decided_by: if outcome.problem.is_some() { DecidedBy::None } else { DecidedBy::Judge },
            command: None,
            exit: None,
            timed_out: false,
            ms: None,
            output_tail: String::new(),
            output_truncated: false,
            evidence: Some(self.paths.from_root(&written.path)),
            evidence_sha256: Some(written.sha256),
            confidence: outcome.confidence,
            note,
        })
    }
}

fn pending(criterion: &Criterion, note: String) -> CriterionResult {
    CriterionResult {
        id: criterion.id.clone(),
        text: criterion.text.clone(),
        must_pass: criterion.must_pass,
        status: CriterionStatus::Pending,
        decided_by: DecidedBy::None,
        command: None,
        exit: None,
        timed_out: false,
        ms: None,
        output_tail: String::new(),
        output_truncated: false,
        evidence: None,
        evidence_sha256: None,
        confidence: None,
        note,
    }
}

fn build_judge(spec: &gavel_domain::SeatSpec, paths: &GoalPaths) -> Result<Box<dyn Seat>, GoalError> {
    build_seat(JUDGE_SEAT, spec, &paths.dir).map_err(|err| match err {
        gavel_seats::BuildError::File(located) => GoalError::File(located),
        other @ (gavel_seats::BuildError::Unsupported { .. } | gavel_seats::BuildError::Invalid { .. }) => {
            GoalError::Refused(format!("{} (in {})", other, paths.file.display()))
        }
    })
}

/// Asks the judge about one criterion: once, and once more with a note when
/// the reply is unreadable. Every request is recorded as it completes, so a
/// script seat's turns count the same after a crash.
async fn ask_judge(
    record: &mut GoalRecord,
    seat: &dyn Seat,
    bundle: &judge::Bundle<'_>,
    run_id: &str,
) -> Result<JudgeResult, GoalError> {
    let base_prompt = judge::prompt(bundle);
    let timeout = bundle
        .goal
        .judge_seat
        .as_ref()
        .and_then(|s| s.timeout.as_deref())
        .and_then(|t| gavel_runtime::workflow::parse_duration(t).ok())
        .unwrap_or(DEFAULT_JUDGE_TIMEOUT);
    let mut prompt = base_prompt.clone();
    let mut last_problem = String::new();
    for attempt in 1..=2u32 {
        let turn = record.state().judge_requests.get(JUDGE_SEAT).copied().unwrap_or(0);
        let request = Request {
            kind: RequestKind::Criterion,
            prompt: prompt.clone(),
            workspace: record.paths.root.clone(),
            access: Access::ReadOnly,
            turn,
            writes: Vec::new(),
            timeout,
        };
        let started = Instant::now();
        let answer = seat.answer(&request).await.and_then(gavel_seats::Reply::checked);
        let ms = millis(started.elapsed());
        let mut judged = Judged {
            run_id: run_id.to_owned(),
            criterion: bundle.criterion.id.clone(),
            seat: JUDGE_SEAT.to_owned(),
            attempt,
            prompt_sha256: crate::sha256_hex(prompt.as_bytes()),
            reply: None,
            error: None,
            verdict: None,
            confidence: None,
            evidence: None,
            problem: None,
            usage: gavel_domain::Usage::default(),
            ms,
        };
        match answer {
            Err(err) => {
                judged.error = Some(err.to_string());
                record.append(GoalEvent::Judged(judged))?;
                // An engine failure is not a decision; the criterion stays open.
                return Ok(JudgeResult {
                    status: CriterionStatus::Pending,
                    verdict: None,
                    confidence: None,
                    evidence: String::new(),
                    attempts: attempt,
                    problem: Some(format!("the judge seat failed: {err}")),
                });
            }
            Ok(reply) => {
                judged.usage = reply.usage;
                let parsed: Result<CriterionReply, ProtocolError> = CriterionReply::parse(&reply.text);
                judged.reply = Some(reply.text);
                match parsed {
                    Ok(decision) => {
                        judged.verdict = Some(decision.verdict);
                        judged.confidence = decision.confidence;
                        judged.evidence = Some(decision.evidence.clone());
                        record.append(GoalEvent::Judged(judged))?;
                        let status = match decision.verdict {
                            crate::event::JudgeVerdict::Met => CriterionStatus::Pass,
                            crate::event::JudgeVerdict::Unmet => CriterionStatus::Fail,
                        };
                        return Ok(JudgeResult {
                            status,
                            verdict: Some(decision.verdict),
                            confidence: decision.confidence,
                            evidence: decision.evidence,
                            attempts: attempt,
                            problem: None,
                        });
                    }
                    Err(err) => {
                        judged.problem = Some(err.to_string());
                        record.append(GoalEvent::Judged(judged))?;
                        last_problem = err.to_string();
                        prompt = format!("{base_prompt}\n{}\n", err.note());
                    }
                }
            }
        }
    }
    Ok(JudgeResult {
        status: CriterionStatus::Pending,
        verdict: None,
        confidence: None,
        evidence: String::new(),
        attempts: 2,
        problem: Some(format!("its reply was unreadable twice ({last_problem})")),
    })
}

/// A fresh or given run id; a given one that already holds evidence is refused.
fn pick_run_id(paths: &GoalPaths, given: Option<String>) -> Result<String, GoalError> {
    if let Some(id) = given {
        gavel_runtime::runs::check_run_id(&id).map_err(GoalError::Refused)?;
        if paths.run_dir(&id).exists() {
            return Err(GoalError::Refused(format!(
                "run `{id}` of goal `{}` already holds evidence ({}); choose another --run-id, or leave it out for a fresh one",
                paths.id,
                paths.from_root(&paths.run_dir(&id))
            )));
        }
        return Ok(id);
    }
    let base = gavel_runtime::runs::new_run_id(&paths.id, Timestamp::now());
    let mut id = base.clone();
    let mut n = 2;
    while paths.run_dir(&id).exists() {
        id = format!("{base}-{n}");
        n += 1;
    }
    Ok(id)
}

/// The verdict from the results alone.
pub fn verdict_of(criteria: &[CriterionResult], boundary: Option<&PathBoundary>) -> Verdict {
    if boundary.is_some_and(|b| !b.holds()) {
        return Verdict::Blocked;
    }
    let needed = || criteria.iter().filter(|c| c.must_pass);
    if needed().any(|c| c.status == CriterionStatus::Fail) {
        Verdict::Fail
    } else if needed().any(|c| c.status == CriterionStatus::Pending) {
        Verdict::Incomplete
    } else {
        Verdict::Pass
    }
}

/// How far the verdict rests on commands rather than a judge's opinion.
pub fn confidence_of(verdict: Verdict, criteria: &[CriterionResult]) -> f64 {
    let judged_confidence = |c: &CriterionResult| -> f64 {
        if c.decided_by == DecidedBy::Judge { c.confidence.unwrap_or(DEFAULT_JUDGE_CONFIDENCE) } else { 1.0 }
    };
    let needed = criteria.iter().filter(|c| c.must_pass);
    match verdict {
        Verdict::Blocked => 1.0,
        Verdict::Incomplete => 0.0,
        Verdict::Fail => {
            let failing: Vec<&CriterionResult> =
                needed.filter(|c| c.status == CriterionStatus::Fail).collect();
            if failing.iter().any(|c| c.decided_by == DecidedBy::Command) {
                1.0
            } else {
                failing.iter().map(|c| judged_confidence(c)).fold(1.0, f64::min)
            }
        }
        Verdict::Pass => needed.map(judged_confidence).fold(1.0, f64::min),
    }
}

/// The reason code and sentence of an evaluation.
fn explain(e: &Evaluated) -> (String, String) {
    let needed: Vec<&CriterionResult> = e.criteria.iter().filter(|c| c.must_pass).collect();
    let ids = |status: CriterionStatus| -> Vec<&str> {
        needed.iter().filter(|c| c.status == status).map(|c| c.id.as_str()).collect()
    };
    match e.verdict {
        Verdict::Blocked => {
            let boundary = e.path_boundary.as_ref();
            if let Some(error) = boundary.and_then(|b| b.error.as_ref()) {
                (
                    "path_boundary_unverifiable".to_owned(),
                    format!("the path boundary cannot be checked: {error}"),
                )
            } else {
                let files = boundary.map(|b| b.violations.clone()).unwrap_or_default();
                (
                    "path_boundary_violation".to_owned(),
                    format!(
                        "{} changed outside allowed_paths: {}",
                        plural(files.len(), "file"),
                        list(&files, 10)
                    ),
                )
            }
        }
        Verdict::Fail => {
            let failing = ids(CriterionStatus::Fail);
            (
                "criteria_failed".to_owned(),
                format!(
                    "{} of {} must_pass criteria fail: {}",
                    failing.len(),
                    needed.len(),
                    failing.join(", ")
                ),
            )
        }
        Verdict::Incomplete => {
            let open = ids(CriterionStatus::Pending);
            ("criteria_pending".to_owned(), format!("undecided: {}", open.join(", ")))
        }
        Verdict::Pass => {
            let by_judge: Vec<&str> =
                needed.iter().filter(|c| c.decided_by == DecidedBy::Judge).map(|c| c.id.as_str()).collect();
            let tail = if by_judge.is_empty() {
                String::new()
            } else {
                format!(" ({} by the judge)", by_judge.join(", "))
            };
            ("all_criteria_pass".to_owned(), format!("all {} must_pass criteria pass{tail}", needed.len()))
        }
    }
}

/// What to do next, in a line.
fn hint(goal: &str, evaluator: EvaluatorKind, e: &Evaluated, stuck: bool, stuck_after: u32) -> String {
    if stuck {
        return format!(
            "no progress over {stuck_after} stop-hook evaluations: `gavel goal confirm {goal}` marks the goal failed, `gavel goal confirm {goal} --reject` keeps it going"
        );
    }
    match e.verdict {
        Verdict::Pass => format!(
            "every must_pass criterion passes: `gavel goal confirm {goal}` marks the goal achieved (or `--reject`)"
        ),
        Verdict::Blocked => {
            if e.path_boundary.as_ref().is_some_and(|b| b.error.is_some()) {
                "allowed_paths needs a base commit: create the goal inside a git repository with at least one commit, or remove `constraints.allowed_paths`".to_owned()
            } else {
                let files = e.path_boundary.as_ref().map(|b| b.violations.clone()).unwrap_or_default();
                format!(
                    "revert or move the changes to {} (outside allowed_paths), or widen `constraints.allowed_paths` in goal.yaml; then `gavel goal evaluate {goal}`",
                    list(&files, 5)
                )
            }
        }
        Verdict::Fail => {
            let first = e.criteria.iter().find(|c| c.must_pass && c.status == CriterionStatus::Fail);
            match first {
                Some(c) if c.timed_out => format!("{}: {}; then `gavel goal evaluate {goal}`", c.id, c.note),
                Some(c) => {
                    let last_line =
                        c.output_tail.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
                    let said = if last_line.is_empty() {
                        String::new()
                    } else {
                        format!(" (last output: {})", clip(last_line, 120))
                    };
                    format!("make {} pass: {}{said}; then `gavel goal evaluate {goal}`", c.id, c.note)
                }
                None => format!("fix the failing criteria, then `gavel goal evaluate {goal}`"),
            }
        }
        Verdict::Incomplete => {
            let open: Vec<&CriterionResult> =
                e.criteria.iter().filter(|c| c.must_pass && c.status == CriterionStatus::Pending).collect();
            let ids: Vec<&str> = open.iter().map(|c| c.id.as_str()).collect();
            match evaluator {
                EvaluatorKind::Deterministic => format!(
                    "{} {} no command: give {} a `command`, or set `evaluator: hybrid` with a `judge_seat` to have a judge decide",
                    ids.join(", "),
                    if ids.len() == 1 { "has" } else { "have" },
                    if ids.len() == 1 { "it" } else { "each" }
                ),
                EvaluatorKind::Judge if e.trigger == Trigger::StopHook => {
                    format!("run `gavel goal evaluate {goal}` to have the judge decide {}", ids.join(", "))
                }
                _ => format!(
                    "the judge could not decide {} ({}); evaluate again with `gavel goal evaluate {goal}`",
                    ids.join(", "),
                    open.first().map_or("", |c| c.note.as_str())
                ),
            }
        }
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}

fn list(items: &[String], max: usize) -> String {
    let mut out: Vec<&str> = items.iter().take(max).map(String::as_str).collect();
    let more = items.len().saturating_sub(max);
    let extra = format!("and {more} more");
    if more > 0 {
        out.push(&extra);
    }
    out.join(", ")
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn now_text() -> String {
    Timestamp::now().round(jiff::Unit::Second).unwrap_or_else(|_| Timestamp::now()).to_string()
}

#[cfg(test)]
mod tests {
    // Confidences here are exact: 1.0, 0.0, or a judge's number passed through.
    #![allow(clippy::float_cmp)]

    use super::*;
    use pretty_assertions::assert_eq;

    fn result(id: &str, must_pass: bool, status: CriterionStatus, decided_by: DecidedBy) -> CriterionResult {
        CriterionResult {
            id: id.to_owned(),
            text: String::new(),
            must_pass,
            status,
            decided_by,
            command: None,
            exit: None,
            timed_out: false,
            ms: None,
            output_tail: String::new(),
            output_truncated: false,
            evidence: None,
            evidence_sha256: None,
            confidence: (decided_by == DecidedBy::Judge).then_some(0.7),
            note: String::new(),
        }
    }

    #[test]
    fn the_verdict_follows_from_the_results_alone() {
        use CriterionStatus::{Fail, Pass, Pending};
        use DecidedBy::{Command, Judge, None as Nobody};
        let pass = result("A", true, Pass, Command);
        let fail = result("B", true, Fail, Command);
        let open = result("C", true, Pending, Nobody);
        let optional_fail = result("D", false, Fail, Command);
        let judged = result("E", true, Pass, Judge);

        assert_eq!(verdict_of(&[pass.clone(), optional_fail.clone()], None), Verdict::Pass);
        assert_eq!(verdict_of(&[pass.clone(), open.clone()], None), Verdict::Incomplete);
        assert_eq!(
            verdict_of(&[open.clone(), fail.clone()], None),
            Verdict::Fail,
            "a failure outranks the undecided"
        );
        let broken = PathBoundary {
            allowed: vec!["src/**".into()],
            base: None,
            changed: vec!["x".into()],
            violations: vec!["x".into()],
            error: None,
            evidence: None,
        };
        assert_eq!(verdict_of(std::slice::from_ref(&pass), Some(&broken)), Verdict::Blocked);

        assert_eq!(confidence_of(Verdict::Pass, std::slice::from_ref(&pass)), 1.0);
        assert_eq!(confidence_of(Verdict::Pass, &[pass.clone(), judged.clone()]), 0.7);
        assert_eq!(confidence_of(Verdict::Fail, &[fail, judged]), 1.0);
        assert_eq!(confidence_of(Verdict::Incomplete, &[open]), 0.0);
    }
}
