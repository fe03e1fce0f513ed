//! The judge: its questions, the check of its answers, and the route a
//! round takes on them.
//!
//! The judge only answers questions and marks findings `act` or `skip`; the
//! route is decided here, by fixed rules in a fixed order, so the cap always
//! ends the loop and a `block` can be made to go back whatever the judge says.

use std::collections::BTreeMap;
use std::fmt;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::merge::Finding;
use crate::protocol::{AnswerValue, JudgeAct, JudgeReply, Severity};

/// `holds`: the work holds for this use case (a probability).
pub const HOLDS: &str = "holds";
/// `worth_doing`: the remaining findings are worth acting on (a probability).
pub const WORTH_DOING: &str = "worth_doing";
/// `worth_another_round`: another round is worth its cost (a probability).
pub const WORTH_ANOTHER_ROUND: &str = "worth_another_round";
/// `stop_reason`: are we at diminishing returns, and which kind (a choice).
pub const STOP_REASON: &str = "stop_reason";
/// The `stop_reason` choice that means "do not stop".
pub const CONTINUE: &str = "continue";

/// The threshold of every probability rule of the judge.
const HALF: f64 = 0.5;

/// What kind of answer a question takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QuestionKind {
    /// A number from 0 to 1.
    Probability,
    /// One of the question's criteria, by name.
    Choice,
    /// `true` or `false`.
    Boolean,
    /// Free text.
    Text,
}

/// One typed question the judge answers each round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Question {
    /// The answer's key (`holds`).
    pub name: String,
    /// What kind of answer it takes.
    #[serde(rename = "type")]
    pub kind: QuestionKind,
    /// What to weigh, as the judge reads it.
    pub instructions: String,
    /// For a choice, each choice's name and meaning, in the order shown; the
    /// names are the only valid answers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub criteria: Vec<(String, String)>,
}

impl Question {
    fn new(name: &str, kind: QuestionKind, instructions: &str, criteria: &[(&str, &str)]) -> Question {
        Question {
            name: name.to_owned(),
            kind,
            instructions: instructions.to_owned(),
            criteria: criteria.iter().map(|(c, m)| ((*c).to_owned(), (*m).to_owned())).collect(),
        }
    }
}

/// The default question set, in the order the judge is asked.
pub fn default_questions() -> Vec<Question> {
    vec![
        Question::new(
            HOLDS,
            QuestionKind::Probability,
            "How likely is it that the work, as it is now, holds for this use case?",
            &[],
        ),
        Question::new(
            WORTH_DOING,
            QuestionKind::Probability,
            "How likely is it that the remaining findings are worth acting on for this use case?",
            &[],
        ),
        Question::new(
            WORTH_ANOTHER_ROUND,
            QuestionKind::Probability,
            "How likely is it that another round is worth its cost, given the rounds so far?",
            &[],
        ),
        Question::new(
            STOP_REASON,
            QuestionKind::Choice,
            "Are we at the point of diminishing returns? If so, which kind; if not, continue.",
            &[
                ("holds", "The work holds for this use case."),
                ("over_polishing", "The remaining findings are taste, nits or edge cases past the bar."),
                (
                    "not_converging",
                    "The same class of finding keeps returning, so another round will not fix it.",
                ),
                (CONTINUE, "Another round is worth it."),
            ],
        ),
    ]
}

/// A choice word the way a model may write it: any case, `-` or space for
/// `_`, surrounding space (`"Over-Polishing"` is `over_polishing`).
fn loose(word: &str) -> String {
    word.trim().chars().map(|c| if c == '-' || c == ' ' { '_' } else { c.to_ascii_lowercase() }).collect()
}

/// The criterion a choice answer names, matched loosely.
fn choice<'q>(question: &'q Question, answer: &str) -> Option<&'q str> {
    let answer = loose(answer);
    question.criteria.iter().map(|(name, _)| name.as_str()).find(|name| loose(name) == answer)
}

/// Checks a judge's answers against the questions, for the one "ask once
/// more" turn: every question must be answered, a probability with a number
/// from 0 to 1, a choice with one of its criteria (matched ignoring case and
/// `-`/space for `_`), a boolean with `true`/`false`, text with non-blank
/// text. Answers to questions nobody asked are ignored, as the protocol
/// reader ignores unknown fields. The error is one note listing every
/// problem.
pub fn check_answers(questions: &[Question], answers: &BTreeMap<String, AnswerValue>) -> Result<(), String> {
    let mut problems = Vec::new();
    for question in questions {
        let want = match question.kind {
            QuestionKind::Probability => "a probability, a number from 0 to 1".to_owned(),
            QuestionKind::Choice => {
                let names: Vec<String> = question.criteria.iter().map(|(name, _)| quote(name)).collect();
                format!("one of {}", names.join(", "))
            }
            QuestionKind::Boolean => "true or false".to_owned(),
            QuestionKind::Text => "your answer as a string".to_owned(),
        };
        let fits = match (question.kind, answers.get(&question.name)) {
            (QuestionKind::Probability, Some(AnswerValue::Number(n))) => (0.0..=1.0).contains(n),
            (QuestionKind::Choice, Some(AnswerValue::Text(text))) => choice(question, text).is_some(),
            (QuestionKind::Boolean, Some(AnswerValue::Bool(_))) => true,
            (QuestionKind::Text, Some(AnswerValue::Text(text))) => !text.trim().is_empty(),
            // Missing, or an answer of another type.
            _ => false,
        };
        if !fits {
            let given = answers.get(&question.name).map_or_else(|| "missing".to_owned(), describe);
            problems.push(format!("`{}` is {given}; write {want}", answer_path(&question.name)));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    let mut note = "Your answers did not fit the questions:".to_owned();
    for problem in problems {
        let _ = write!(note, " {problem}.");
    }
    Err(note)
}

/// `answers.holds`, or `answers["ship it?"]` for a key that is not a word.
fn answer_path(name: &str) -> String {
    let plain = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain { format!("answers.{name}") } else { format!("answers[{}]", quote(name)) }
}

fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""))
}

/// An answer as a note names it.
fn describe(answer: &AnswerValue) -> String {
    match answer {
        AnswerValue::Bool(b) => b.to_string(),
        AnswerValue::Number(n) => n.to_string(),
        AnswerValue::Text(t) if t.trim().is_empty() => "empty".to_owned(),
        AnswerValue::Text(t) => quote(t),
    }
}

/// How `block` findings are routed (`refine.blocks`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Blocks {
    /// The judge decides blocks like any finding.
    #[default]
    Judge,
    /// A block always goes back while under the cap (the judge-stops
    /// pattern), whatever the judge says.
    AlwaysBack,
}

/// What reaching the cap means (`refine.on_cap`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnCap {
    /// The stage fails with the last findings.
    #[default]
    Fail,
    /// The stage passes as it is.
    Pass,
}

impl OnCap {
    /// The setting as the workflow file spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            OnCap::Fail => "fail",
            OnCap::Pass => "pass",
        }
    }

    fn route(self) -> Route {
        match self {
            OnCap::Fail => Route::Fail,
            OnCap::Pass => Route::Pass,
        }
    }
}

/// Where a round goes after the judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// Another round, with the acted findings.
    Again,
    /// The stage passes.
    Pass,
    /// The stage fails with the acted findings.
    Fail,
}

impl Route {
    /// The word as the record spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Route::Again => "again",
            Route::Pass => "pass",
            Route::Fail => "fail",
        }
    }
}

impl fmt::Display for Route {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything the route depends on for one round.
#[derive(Debug, Clone, Copy)]
pub struct JudgeInput<'a> {
    /// This round, counting from 1.
    pub round: u32,
    /// The most rounds the stage gets; at `round >= cap` no round follows.
    pub cap: u32,
    /// What the cap means.
    pub on_cap: OnCap,
    /// How blocks are routed.
    pub blocks: Blocks,
    /// The findings the judge decided on (those the votes left), in order.
    pub findings: &'a [Finding],
    /// The judge's reply; `None` when it stayed unreadable after the second
    /// ask (the reply protocols: it routes as "run again" within the cap).
    pub reply: Option<&'a JudgeReply>,
}

/// The route of a round, and the findings it carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteDecision {
    /// Where the round goes.
    pub route: Route,
    /// One readable sentence with the numbers behind it. It does not repeat
    /// the round: the `refine:judge` event carries it.
    pub reason: String,
    /// Finding ids acted on, in finding order: they go back with
    /// [`Route::Again`] and are the last findings with [`Route::Fail`]. A
    /// finding the judge does not mention is acted on; with
    /// `blocks = "always-back"` under the cap every block is.
    pub acted: Vec<String>,
    /// Finding ids the judge skipped, with its reason, in finding order: the
    /// next round's reviewers are told.
    pub skipped: Vec<(String, String)>,
}

/// Routes a round on the judge's reply, in this order:
///
/// 1. `blocks = "always-back"`, a `block` finding and `round < cap` →
///    again, with every block plus what the judge acts on.
/// 2. The reply is unreadable → again within the cap, every finding acted on;
///    at the cap → per `on_cap`.
/// 3. `stop_reason` other than `continue` → pass.
/// 4. `holds ≥ 0.5` → pass.
/// 5. `worth_doing < 0.5` → pass.
/// 6. `worth_another_round < 0.5` → pass.
/// 7. The judge skips every finding (or none is left) → pass.
/// 8. At the cap (`round >= cap`) → per `on_cap`.
/// 9. Otherwise → again, with the acted findings.
///
/// An answer that is missing or of the wrong type skips its rule (answers
/// are checked with [`check_answers`] before they get here; a custom
/// question set without `stop_reason` routes on the rest and the cap).
/// Decisions naming no finding are ignored; a finding decided twice takes
/// its first decision.
pub fn route(input: &JudgeInput<'_>) -> RouteDecision {
    let under_cap = input.round < input.cap;
    let total = input.findings.len();
    let (mut acted, skipped) = decide(input.findings, input.reply);
    let decision = |route: Route, reason: String, acted: Vec<String>, skipped: Vec<(String, String)>| {
        RouteDecision { route, reason, acted, skipped }
    };

    let blocks: Vec<&Finding> = input.findings.iter().filter(|f| f.severity == Severity::Block).collect();
    if input.blocks == Blocks::AlwaysBack && !blocks.is_empty() && under_cap {
        let skipped = skipped.into_iter().filter(|(id, _)| !blocks.iter().any(|b| &b.id == id)).collect();
        acted = input
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Block || acted.contains(&f.id))
            .map(|f| f.id.clone())
            .collect();
        let n = blocks.len();
        let mut reason = format!(
            "{n} block finding{} always go{} back under the cap of {} rounds",
            plural(n),
            if n == 1 { "es" } else { "" },
            input.cap
        );
        match input.reply {
            None => reason.push_str("; the judge's answer was unreadable"),
            Some(_) => {
                let _ = write!(reason, "; with them, {} of {total} findings go back", acted.len());
            }
        }
        return decision(Route::Again, reason, acted, skipped);
    }

    let Some(reply) = input.reply else {
        return if under_cap {
            let reason = format!(
                "the judge's answer was unreadable, so the round runs again with all {total} finding{}",
                plural(total)
            );
            decision(Route::Again, reason, acted, skipped)
        } else {
            let reason = format!(
                "the judge's answer was unreadable at the cap of {} rounds, and on_cap is {}",
                input.cap,
                input.on_cap.as_str()
            );
            decision(input.on_cap.route(), reason, acted, skipped)
        };
    };

    let answers = &reply.answers;
    let probability = |name: &str| answers.get(name).and_then(AnswerValue::as_f64);
    let (holds, doing, another) =
        (probability(HOLDS), probability(WORTH_DOING), probability(WORTH_ANOTHER_ROUND));
    let stop = answers.get(STOP_REASON).and_then(AnswerValue::as_str).map(loose);

    if let Some(stop) = stop.filter(|s| !s.is_empty() && s != CONTINUE) {
        let numbers = [("holds", holds), ("worth doing", doing), ("another round", another)]
            .iter()
            .filter_map(|(label, p)| p.map(|p| format!("{label} {}", number(p))))
            .collect::<Vec<_>>();
        let mut reason = format!("the judge stopped it, reason {stop}");
        if !numbers.is_empty() {
            let _ = write!(reason, " ({})", numbers.join(", "));
        }
        return decision(Route::Pass, reason, acted, skipped);
    }
    if let Some(p) = holds.filter(|p| *p >= HALF) {
        let reason = format!("the judge says the work holds (holds {})", number(p));
        return decision(Route::Pass, reason, acted, skipped);
    }
    if let Some(p) = doing.filter(|p| *p < HALF) {
        let reason = format!("the judge says the findings are not worth doing (worth doing {})", number(p));
        return decision(Route::Pass, reason, acted, skipped);
    }
    if let Some(p) = another.filter(|p| *p < HALF) {
        let reason = format!("the judge says another round is not worth it (another round {})", number(p));
        return decision(Route::Pass, reason, acted, skipped);
    }
    if acted.is_empty() {
        let reason = match total {
            0 => "no findings are left to act on".to_owned(),
            1 => "the judge skips the only finding".to_owned(),
            n => format!("the judge skips all {n} findings"),
        };
        return decision(Route::Pass, reason, acted, skipped);
    }
    let acts = format!("the judge acts on {} of {total} finding{}", acted.len(), plural(total));
    if !under_cap {
        let reason =
            format!("{acts} at the cap of {} rounds, and on_cap is {}", input.cap, input.on_cap.as_str());
        return decision(input.on_cap.route(), reason, acted, skipped);
    }
    decision(Route::Again, acts, acted, skipped)
}

/// Splits the findings into acted and skipped by the judge's decisions; with
/// no reply, every finding is acted on (nothing was skipped).
fn decide(findings: &[Finding], reply: Option<&JudgeReply>) -> (Vec<String>, Vec<(String, String)>) {
    let mut acted = Vec::new();
    let mut skipped = Vec::new();
    for finding in findings {
        // Ids are ours (`F1`), but a model may write `f1`: matching ignoring
        // ASCII case costs nothing.
        let said =
            reply.and_then(|r| r.findings.iter().find(|d| d.finding.eq_ignore_ascii_case(&finding.id)));
        match said {
            Some(d) if d.decision == JudgeAct::Skip => skipped.push((finding.id.clone(), d.reason.clone())),
            _ => acted.push(finding.id.clone()),
        }
    }
    (acted, skipped)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A probability for a reason: at most two decimals, no trailing zeros
/// (`0.9`, `0.25`, `1`).
fn number(p: f64) -> String {
    let text = format!("{p:.2}");
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_plainly() {
        assert_eq!(number(0.9), "0.9");
        assert_eq!(number(1.0), "1");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(0.126), "0.13");
        assert_eq!(number(0.25), "0.25");
    }

    #[test]
    fn words_and_paths() {
        assert_eq!(loose(" Over-Polishing "), "over_polishing");
        assert_eq!(answer_path("holds"), "answers.holds");
        assert_eq!(answer_path("ship it?"), "answers[\"ship it?\"]");
        assert_eq!(serde_json::to_string(&Blocks::AlwaysBack).unwrap(), "\"always-back\"");
        assert_eq!(serde_json::to_string(&OnCap::Pass).unwrap(), "\"pass\"");
        assert_eq!(serde_json::to_string(&QuestionKind::Probability).unwrap(), "\"probability\"");
        assert_eq!(Route::Again.to_string(), "again");
    }
}
