//! A panel's round: reviews at the same time, then, when
//! set, synthesis (merge and cross-review votes, tallied by the vote rules)
//! and the judge, and the route that follows.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use gavel_domain::RequestKind;
use gavel_domain::protocol::{Decision, JudgeAct, JudgeReply, MergeReply, Protocol, ReviewReply, VoteReply};
use gavel_domain::rules::{
    self, Ballot, Finding, JudgeInput, PanelCount, PanelOutcome, RawEntry, Route, VoteResult,
};
use gavel_record::Event;
use gavel_record::event::{
    RecordedJudgement, RecordedVote, RefineJudge, ReviewDecision, ReviewOutcome, ReviewSynthesis,
    SynthesisEntry, SynthesisFinding,
};
use serde::Serialize;

use crate::exec::{Asked, Executor, Target, with_note};
use crate::phases::Files;
use crate::workflow::{Panel, Refine};
use crate::{JudgeRound, RunError, SynthesisLine, SynthesisRound};

/// Where a panel's round leads.
pub(crate) enum PanelVerdict {
    /// The work passes; the line says why.
    Pass(String),
    /// These findings go back: as the builder reads them (with the judge's
    /// reasons, when one decided), and as the reviewers raised them (which
    /// the loop breaker compares round to round).
    Back { feedback: Vec<Finding>, plain: Vec<Finding>, line: String },
    /// The stage fails with these findings.
    Fail(Vec<Finding>, String),
    /// Short of `agree` only by engine errors: the run waits for the reviewers.
    Pause(String),
}

/// What the reviewers said.
struct Reviews {
    passed: usize,
    revised: usize,
    errors: Vec<String>,
    /// Every raw finding, passing reviewers' included, in reviewer order.
    raw: Vec<RawEntry>,
    /// The raw findings of the reviewers that asked for a revision.
    revisers: Vec<RawEntry>,
}

/// What a goal check or a reviewer is shown.
#[derive(Debug, Serialize)]
pub(crate) struct ReviewContext<'a> {
    pub(crate) stage: &'a str,
    pub(crate) round: u32,
    pub(crate) reviewer: &'a str,
    pub(crate) brief: &'a str,
    pub(crate) requirements: &'a [String],
    pub(crate) desc: &'a str,
    pub(crate) gate: &'a str,
    pub(crate) files: &'a Files,
    pub(crate) skipped: &'a [String],
}

#[derive(Debug, Serialize)]
struct MergeContext<'a> {
    stage: &'a str,
    round: u32,
    findings: &'a [RawEntryView],
}

#[derive(Debug, Serialize)]
struct RawEntryView {
    id: String,
    reviewer: String,
    severity: &'static str,
    evidence: String,
    fix: Option<String>,
}

#[derive(Debug, Serialize)]
struct FindingView {
    id: String,
    severity: &'static str,
    raised_by: Vec<String>,
    evidence: String,
    fix: Option<String>,
    votes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct VoteContext<'a> {
    stage: &'a str,
    round: u32,
    reviewer: &'a str,
    brief: &'a str,
    files: &'a Files,
    findings: Vec<FindingView>,
}

#[derive(Debug, Serialize)]
struct JudgeContext<'a> {
    stage: &'a str,
    round: u32,
    cap: u32,
    brief: &'a str,
    files: &'a Files,
    history: &'a [String],
    findings: Vec<FindingView>,
    questions: &'a [rules::Question],
}

fn view(finding: &Finding, votes: &[RecordedVote]) -> FindingView {
    FindingView {
        id: finding.id.clone(),
        severity: finding.severity.as_str(),
        raised_by: finding.raised_by.clone(),
        evidence: finding.evidence.clone(),
        fix: finding.fix.clone(),
        votes: votes.iter().map(|v| format!("{} {}: {}", v.reviewer, v.vote.as_str(), v.reason)).collect(),
    }
}

impl Executor<'_> {
    /// One round of a panel over `files`; `refine` carries the judge, when
    /// the stage has one.
    pub(crate) async fn panel_round(
        &self,
        stage: &str,
        round: u32,
        panel: &Panel,
        files: &Files,
        refine: Option<&Refine>,
    ) -> Result<PanelVerdict, RunError> {
        let names: Vec<String> = (1..=panel.seats.len()).map(|i| format!("{stage}-{i}")).collect();
        let reviews = self.reviews(stage, round, panel, &names, files).await?;

        // Synthesis: merge and cross-review, when set and there is anything to merge.
        let mut votes_by_id: BTreeMap<String, Vec<RecordedVote>> = BTreeMap::new();
        let remaining = if panel.synthesise.is_some() && panel.seats.len() >= 2 && !reviews.raw.is_empty() {
            let (left, votes) = self.synthesise(stage, round, panel, &names, &reviews.raw, files).await?;
            votes_by_id = votes;
            left
        } else {
            // Without a merge, raw findings become F1..Fn in reviewer order.
            rules::unmerged(&reviews.revisers)
        };

        let count = PanelCount {
            passed: reviews.passed,
            revised: reviews.revised,
            errors: reviews.errors.len(),
            agree: panel.agree,
            findings_left: remaining.len(),
        };
        let outcome = rules::panel_outcome(&count);
        if outcome == PanelOutcome::ShortByErrors {
            return Ok(PanelVerdict::Pause(format!(
                "the panel fell short of {} acceptance(s) only because {} sent no usable decision",
                panel.agree,
                reviews.errors.join(", ")
            )));
        }
        let panel_line = if reviews.passed >= panel.agree {
            format!("review: {} of {} passed ({} needed)", reviews.passed, panel.seats.len(), panel.agree)
        } else if remaining.is_empty() {
            "review: the votes dropped every finding of the failing panel".to_owned()
        } else {
            format!("review: revise, {} finding(s) left", remaining.len())
        };

        let Some(Refine::Judge { judge, cap, on_cap, blocks }) = refine else {
            return Ok(match outcome {
                PanelOutcome::Revise => {
                    PanelVerdict::Back { feedback: remaining.clone(), plain: remaining, line: panel_line }
                }
                PanelOutcome::Pass | PanelOutcome::ShortByErrors => PanelVerdict::Pass(panel_line),
            });
        };

        // The judge: every round the reviews ran.
        let history = self.st().history.get(stage).cloned().unwrap_or_default();
        let context = JudgeContext {
            stage,
            round,
            cap: *cap,
            brief: self.workflow.brief.as_ref().map_or("", |b| b.body.as_str()),
            files,
            history: &history,
            findings: remaining
                .iter()
                .map(|f| view(f, votes_by_id.get(&f.id).map_or(&[], Vec::as_slice)))
                .collect(),
            questions: &self.workflow.judge_questions,
        };
        let (reply, judge_error) = self.ask_judge(stage, round, judge, &context).await?;
        let decision = rules::route(&JudgeInput {
            round,
            cap: *cap,
            on_cap: *on_cap,
            blocks: *blocks,
            findings: &remaining,
            reply: reply.as_ref(),
        });
        let (route, reason) = if outcome == PanelOutcome::Pass {
            let reason =
                if decision.route == Route::Pass { decision.reason.clone() } else { panel_line.clone() };
            (Route::Pass, reason)
        } else {
            (decision.route, decision.reason.clone())
        };
        let (answers, judgements) = recorded_parts(reply.as_ref());
        self.st().journal.emit(Event::RefineJudge(RefineJudge {
            stage: stage.to_owned(),
            round,
            route,
            reason: reason.clone(),
            answers,
            findings: judgements.clone(),
            error: judge_error,
        }))?;

        // What the next round's reviewers are told, and the report.
        let skipped: Vec<String> = decision
            .skipped
            .iter()
            .filter_map(|(id, why)| {
                remaining.iter().find(|f| &f.id == id).map(|f| format!("{} (skipped: {why})", f.evidence))
            })
            .collect();
        self.st().skipped.insert(stage.to_owned(), skipped);
        let lines = remaining
            .iter()
            .map(|f| {
                let (word, why) = judgements
                    .iter()
                    .find(|j| j.finding == f.id)
                    .map_or(("act", "not mentioned: acted on"), |j| {
                        (if j.decision == JudgeAct::Skip { "skip" } else { "act" }, j.reason.as_str())
                    });
                format!("{word}: {} ({why})", f.evidence)
            })
            .collect();
        self.st().report(stage).judge.push(JudgeRound {
            round,
            route: route.as_str().to_owned(),
            reason: reason.clone(),
            findings: lines,
        });

        let reasons: BTreeMap<&str, &str> =
            judgements.iter().map(|j| (j.finding.as_str(), j.reason.as_str())).collect();
        let plain: Vec<Finding> =
            remaining.iter().filter(|f| decision.acted.contains(&f.id)).cloned().collect();
        let acted: Vec<Finding> = plain
            .iter()
            .map(|f| {
                let mut f = f.clone();
                if let Some(why) = reasons.get(f.id.as_str()).filter(|r| !r.is_empty()) {
                    let _ = write!(f.evidence, " (The judge acts on it: {why})");
                }
                f
            })
            .collect();
        Ok(match route {
            Route::Pass => PanelVerdict::Pass(format!("judge: {reason}")),
            Route::Again => PanelVerdict::Back { feedback: acted, plain, line: format!("judge: {reason}") },
            Route::Fail => PanelVerdict::Fail(acted, reason),
        })
    }

    /// Asks a judge seat to answer the round's questions and decide each
    /// finding; no reply, and why, when it sent no readable reply twice
    /// (which routes as "run again").
    async fn ask_judge(
        &self,
        stage: &str,
        round: u32,
        judge: &str,
        context: &JudgeContext<'_>,
    ) -> Result<(Option<JudgeReply>, Option<String>), RunError> {
        let questions = &self.workflow.judge_questions;
        let parse = |text: &str| {
            let reply = JudgeReply::parse(text).map_err(|e| e.note())?;
            rules::check_answers(questions, &reply.answers).map_err(|note| {
                format!("{note} Reply with one JSON object of this shape: {}", JudgeReply::SHAPE)
            })?;
            Ok(reply)
        };
        let target = Target {
            stage: stage.to_owned(),
            round,
            seat: judge.to_owned(),
            kind: RequestKind::Judge,
            writes: Vec::new(),
        };
        let prompt_for =
            |note: Option<&str>| Ok(with_note(&self.prompts.render(RequestKind::Judge, context)?, note));
        Ok(match self.ask_one(target, prompt_for, parse).await? {
            Asked::Answer(reply, _) => (Some(reply), None),
            Asked::GaveUp(last, _) => (None, Some(last)),
        })
    }

    /// Asks the `max_kickbacks` judge whether sending the work back is worth
    /// it: another round goes ahead; a stop lets the sender's
    /// outcome stand; a fail ends the run.
    pub(crate) async fn judge_kickback(
        &self,
        sender: &crate::workflow::Stage,
        round: u32,
        judge: &str,
        count: u32,
        cap: u32,
        findings: &[Finding],
    ) -> Result<crate::exec::KickbackDecision, RunError> {
        use crate::exec::KickbackDecision;
        let history = self.st().history.get(&sender.name).cloned().unwrap_or_default();
        let no_files = Files::none();
        let context = JudgeContext {
            stage: &sender.name,
            round: count,
            cap,
            brief: self.workflow.brief.as_ref().map_or("", |b| b.body.as_str()),
            files: &no_files,
            history: &history,
            findings: findings.iter().map(|f| view(f, &[])).collect(),
            questions: &self.workflow.judge_questions,
        };
        let (reply, judge_error) = self.ask_judge(&sender.name, round, judge, &context).await?;
        let decision = rules::route(&JudgeInput {
            round: count,
            cap,
            on_cap: rules::OnCap::Fail,
            blocks: rules::Blocks::Judge,
            findings,
            reply: reply.as_ref(),
        });
        let (answers, judgements) = recorded_parts(reply.as_ref());
        self.st().journal.emit(Event::RefineJudge(RefineJudge {
            stage: sender.name.clone(),
            round,
            route: decision.route,
            reason: format!("kickback {count} of at most {cap}: {}", decision.reason),
            answers,
            findings: judgements,
            error: judge_error,
        }))?;
        Ok(match decision.route {
            Route::Again => KickbackDecision::Allowed,
            Route::Pass => KickbackDecision::Stands,
            Route::Fail => KickbackDecision::Fail(format!(
                "the judge refused to send the work of `{}` back: {}",
                sender.name, decision.reason
            )),
        })
    }

    /// A stage's `desc` and `gate`, as reviewers are told them.
    fn stage_texts(&self, stage: &str) -> (String, String) {
        let texts = self.workflow.stages.iter().find(|s| s.name == stage).map(|s| match &s.kind {
            crate::workflow::StageKind::Build(b) => (b.desc.clone(), b.gate.clone()),
            crate::workflow::StageKind::Panel(p) => (p.desc.clone(), p.gate.clone()),
            _ => (None, None),
        });
        let (desc, gate) = texts.unwrap_or_default();
        (desc.unwrap_or_default(), gate.unwrap_or_default())
    }

    /// The reviewers read at the same time; each decision is recorded.
    async fn reviews(
        &self,
        stage: &str,
        round: u32,
        panel: &Panel,
        names: &[String],
        files: &Files,
    ) -> Result<Reviews, RunError> {
        let requirements = self.workflow.brief.as_ref().map(|b| b.requirements.clone()).unwrap_or_default();
        let skipped = self.st().skipped.get(stage).cloned().unwrap_or_default();
        let (desc, gate) = self.stage_texts(stage);
        // Rendered only when a request is sent: a replay renders nothing.
        let prompt_for = |i: usize, note: Option<&str>| {
            let context = ReviewContext {
                stage,
                round,
                reviewer: &names[i],
                brief: self.workflow.brief.as_ref().map_or("", |b| b.body.as_str()),
                requirements: &requirements,
                desc: &desc,
                gate: &gate,
                files,
                skipped: &skipped,
            };
            Ok(with_note(&self.prompts.render(RequestKind::Review, &context)?, note))
        };
        let targets = panel
            .seats
            .iter()
            .map(|seat| Target {
                stage: stage.to_owned(),
                round,
                seat: seat.clone(),
                kind: RequestKind::Review,
                writes: Vec::new(),
            })
            .collect();
        let parse = |text: &str| ReviewReply::parse(text).map_err(|e| e.note());
        let answers = self.ask_many(targets, prompt_for, parse).await?;

        let mut reviews =
            Reviews { passed: 0, revised: 0, errors: Vec::new(), raw: Vec::new(), revisers: Vec::new() };
        let mut lines = Vec::new();
        for ((name, seat), asked) in names.iter().zip(&panel.seats).zip(answers) {
            let (decision, findings, attempt, error) = match asked {
                Asked::Answer(reply, attempt) => {
                    let raw = RawEntry::from_review(name, &reply);
                    let findings = rules::unmerged(&raw)
                        .into_iter()
                        .zip(&raw)
                        .map(|(mut f, r)| {
                            f.id.clone_from(&r.id);
                            f
                        })
                        .collect::<Vec<_>>();
                    if reply.decision == Decision::Revise {
                        reviews.revisers.extend(raw.iter().cloned());
                    }
                    reviews.raw.extend(raw);
                    let outcome = match reply.decision {
                        Decision::Pass => {
                            reviews.passed += 1;
                            ReviewOutcome::Pass
                        }
                        Decision::Revise => {
                            reviews.revised += 1;
                            ReviewOutcome::Revise
                        }
                    };
                    let mut line =
                        format!("{name} {}", if outcome == ReviewOutcome::Pass { "pass" } else { "revise" });
                    for finding in &findings {
                        let _ = write!(line, "; {} {}", finding.severity.as_str(), finding.evidence);
                    }
                    lines.push(line);
                    (outcome, findings, attempt, None)
                }
                Asked::GaveUp(last, attempt) => {
                    reviews.errors.push(name.clone());
                    lines.push(format!("{name} engine error: {}", first_sentence(&last)));
                    (ReviewOutcome::Error, Vec::new(), attempt, Some(last))
                }
            };
            let findings = findings.into_iter().map(|mut f| {
                f.members.clear();
                f
            });
            self.st().journal.emit(Event::ReviewDecision(ReviewDecision {
                stage: stage.to_owned(),
                round,
                reviewer: name.clone(),
                decision,
                findings: findings.collect(),
                attempt,
                seat: seat.clone(),
                error,
            }))?;
        }
        self.st().report(stage).reviews.push(crate::RoundLines { round, lines });
        Ok(reviews)
    }

    /// Merge, cross-review and tally. Returns the
    /// findings left (fix replaced where most preferred a better one) and
    /// the votes on each finding.
    async fn synthesise(
        &self,
        stage: &str,
        round: u32,
        panel: &Panel,
        names: &[String],
        raw: &[RawEntry],
        files: &Files,
    ) -> Result<(Vec<Finding>, BTreeMap<String, Vec<RecordedVote>>), RunError> {
        // Merge, by the merging seat; code sets severity and raised_by.
        let merger = panel.synthesise.clone().unwrap_or_else(|| panel.seats[0].clone());
        let views: Vec<RawEntryView> = raw
            .iter()
            .map(|r| RawEntryView {
                id: r.id.clone(),
                reviewer: r.reviewer.clone(),
                severity: r.severity.as_str(),
                evidence: r.evidence.clone(),
                fix: r.fix.clone(),
            })
            .collect();
        let parse = |text: &str| {
            let reply = MergeReply::parse(text).map_err(|e| e.note())?;
            rules::apply_merge(raw, &reply).map_err(|problem| problem.note())
        };
        let target = Target {
            stage: stage.to_owned(),
            round,
            seat: merger,
            kind: RequestKind::Merge,
            writes: Vec::new(),
        };
        let prompt_for = |note: Option<&str>| {
            let context = MergeContext { stage, round, findings: &views };
            Ok(with_note(&self.prompts.render(RequestKind::Merge, &context)?, note))
        };
        let (merged, merge_error) = match self.ask_one(target, prompt_for, parse).await? {
            Asked::Answer(merged, _) => (merged, None),
            Asked::GaveUp(last, _) => (rules::unmerged(raw), Some(last)),
        };

        // Cross-review: each reviewer votes once on every finding it did not raise.
        let brief = self.workflow.brief.as_ref().map_or(String::new(), |b| b.body.clone());
        let mut voters = Vec::new();
        for (name, seat) in names.iter().zip(&panel.seats) {
            let shown: Vec<&Finding> = merged.iter().filter(|f| !f.raised_by.contains(name)).collect();
            if shown.is_empty() {
                continue;
            }
            let ids: Vec<String> = shown.iter().map(|f| f.id.clone()).collect();
            voters.push((name.clone(), seat.clone(), shown, ids));
        }
        // Rendered only when a request is sent: a replay renders nothing.
        let prompt_for = |i: usize, note: Option<&str>| {
            let (name, _, shown, _) = &voters[i];
            let context = VoteContext {
                stage,
                round,
                reviewer: name,
                brief: &brief,
                files,
                findings: shown.iter().map(|f| view(f, &[])).collect(),
            };
            Ok(with_note(&self.prompts.render(RequestKind::Vote, &context)?, note))
        };
        let targets = voters
            .iter()
            .map(|(_, seat, _, _)| Target {
                stage: stage.to_owned(),
                round,
                seat: seat.clone(),
                kind: RequestKind::Vote,
                writes: Vec::new(),
            })
            .collect();
        let shown_ids: Vec<Vec<String>> = voters.iter().map(|(_, _, _, ids)| ids.clone()).collect();
        let replies = self
            .ask_many(targets, prompt_for, |text: &str| VoteReply::parse(text).map_err(|e| e.note()))
            .await?;

        let mut ballots: BTreeMap<String, Vec<Ballot>> = BTreeMap::new();
        let mut failed: Vec<String> = Vec::new();
        let mut vote_errors: BTreeMap<String, String> = BTreeMap::new();
        for (i, asked) in replies.into_iter().enumerate() {
            let name = &voters[i].0;
            match asked {
                Asked::Answer(reply, _) => {
                    for vote in &reply.votes {
                        if shown_ids[i].contains(&vote.finding) {
                            ballots
                                .entry(vote.finding.clone())
                                .or_default()
                                .push(Ballot::from_vote(name, vote));
                        }
                    }
                }
                Asked::GaveUp(last, _) => {
                    failed.push(name.clone());
                    vote_errors.insert(name.clone(), last);
                }
            }
        }

        // Tally by the vote rules.
        let mut entries = Vec::new();
        let mut left = Vec::new();
        let mut votes_by_id = BTreeMap::new();
        let mut report_entries = Vec::new();
        for finding in &merged {
            let cast = ballots.get(&finding.id).cloned().unwrap_or_default();
            let shown_to_failed = voters
                .iter()
                .enumerate()
                .any(|(i, (name, ..))| failed.contains(name) && shown_ids[i].contains(&finding.id));
            let tally = rules::tally(finding, &cast, names, shown_to_failed);
            let mut kept = finding.clone();
            kept.fix.clone_from(&tally.fix);
            let votes: Vec<RecordedVote> = cast
                .iter()
                .map(|b| RecordedVote {
                    reviewer: b.voter.clone(),
                    vote: b.vote,
                    reason: b.reason.clone(),
                    fix: b.fix.clone(),
                })
                .collect();
            report_entries.push(SynthesisLine {
                result: tally.result.as_str().to_owned(),
                raised_by: kept.raised_by.clone(),
                severity: kept.severity.as_str().to_owned(),
                evidence: kept.evidence.clone(),
                votes: votes
                    .iter()
                    .map(|v| format!("{} {}: {}", v.reviewer, v.vote.as_str(), v.reason))
                    .collect(),
            });
            entries.push(SynthesisEntry {
                result: tally.result,
                finding: SynthesisFinding { finding: kept.clone(), votes: votes.clone() },
            });
            votes_by_id.insert(kept.id.clone(), votes);
            if tally.result != VoteResult::Dropped {
                left.push(kept);
            }
        }
        self.st().journal.emit(Event::ReviewSynthesis(ReviewSynthesis {
            stage: stage.to_owned(),
            round,
            entries,
            merge_failed: merge_error.is_some(),
            no_votes_from: failed,
            merge_error,
            vote_errors,
        }))?;
        self.st().report(stage).synthesis.push(SynthesisRound { round, entries: report_entries });
        Ok((left, votes_by_id))
    }
}

/// A judge's answers and decisions as `refine:judge` records them (empty
/// when it sent no readable reply).
fn recorded_parts(
    reply: Option<&JudgeReply>,
) -> (BTreeMap<String, serde_json::Value>, Vec<RecordedJudgement>) {
    let Some(reply) = reply else { return (BTreeMap::new(), Vec::new()) };
    let answers =
        reply.answers.iter().map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or_default())).collect();
    let judgements = reply
        .findings
        .iter()
        .map(|d| RecordedJudgement {
            finding: d.finding.clone(),
            decision: d.decision,
            reason: d.reason.clone(),
        })
        .collect();
    (answers, judgements)
}

fn first_sentence(text: &str) -> &str {
    text.split_once(". ").map_or(text, |(first, _)| first)
}
