//! The judge seat's part: only criteria without a command, one request per
//! criterion, read as the first JSON object of the reply, asked once
//! more when unreadable. A judge is never asked what a command answers: the
//! prompt gives command results as settled facts, and no request names a
//! criterion that has a command.

use std::fmt::Write as _;

use gavel_domain::RequestKind;
use gavel_domain::protocol::{FieldProblem, Protocol, ProtocolError, ProtocolProblem};
use serde_json::{Map, Value};

use crate::event::{CriterionResult, CriterionStatus, JudgeVerdict};
use crate::file::{Criterion, GoalFile};

/// The reply to a `criterion` request.
#[derive(Debug, Clone, PartialEq)]
pub struct CriterionReply {
    /// Met or unmet.
    pub verdict: JudgeVerdict,
    /// What the judge saw, in its words.
    pub evidence: String,
    /// How sure it is, 0 to 1, when it says.
    pub confidence: Option<f64>,
}

impl Protocol for CriterionReply {
    const KIND: RequestKind = RequestKind::Criterion;
    const SHAPE: &'static str = r#"{"verdict": "met" | "unmet", "evidence": "<the file and line, or what is missing>", "confidence": <0 to 1>}"#;

    fn from_object(object: &Map<String, Value>) -> Result<Self, ProtocolError> {
        let mut problems = Vec::new();
        let verdict = match object.get("verdict") {
            Some(Value::String(word)) if word.eq_ignore_ascii_case("met") => Some(JudgeVerdict::Met),
            Some(Value::String(word)) if word.eq_ignore_ascii_case("unmet") => Some(JudgeVerdict::Unmet),
            Some(other) => {
                problems.push(problem("verdict", &format!("is {other}; write \"met\" or \"unmet\"")));
                None
            }
            None => {
                problems.push(problem("verdict", "is missing; write \"met\" or \"unmet\""));
                None
            }
        };
        let evidence = match object.get("evidence") {
            Some(Value::String(text)) if !text.trim().is_empty() => text.trim().to_owned(),
            _ => {
                problems
                    .push(problem("evidence", "is missing or empty; say what you saw, with a file and line"));
                String::new()
            }
        };
        let confidence = match object.get("confidence") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_f64() {
                Some(c) if (0.0..=1.0).contains(&c) => Some(c),
                _ => {
                    problems.push(problem("confidence", &format!("is {n}; write a number from 0 to 1")));
                    None
                }
            },
            Some(other) => {
                problems.push(problem("confidence", &format!("is {other}; write a number from 0 to 1")));
                None
            }
        };
        match (verdict, problems.is_empty()) {
            (Some(verdict), true) => Ok(CriterionReply { verdict, evidence, confidence }),
            _ => Err(ProtocolError {
                protocol: Self::NAME,
                shape: Self::SHAPE,
                problem: ProtocolProblem::Mismatch(problems),
            }),
        }
    }
}

fn problem(path: &str, text: &str) -> FieldProblem {
    FieldProblem { path: path.to_owned(), problem: text.to_owned() }
}

/// What the judge is given: the evidence bundle for one fuzzy criterion.
#[derive(Debug)]
pub struct Bundle<'a> {
    /// The goal.
    pub goal: &'a GoalFile,
    /// The criterion to decide.
    pub criterion: &'a Criterion,
    /// Results of the criteria commands decided in this evaluation.
    pub settled: &'a [CriterionResult],
    /// Files changed since the goal's base, when known.
    pub changed: Option<&'a [String]>,
    /// The evidence folder, relative to the project root.
    pub evidence_dir: &'a str,
}

/// How many changed files the prompt lists before it says "and N more".
const MAX_LISTED_FILES: usize = 200;

/// The prompt for one `criterion` request.
pub fn prompt(bundle: &Bundle<'_>) -> String {
    let Bundle { goal, criterion, settled, changed, evidence_dir } = bundle;
    let mut out = String::new();
    let _ =
        writeln!(out, "You are the judge of one acceptance criterion of a goal. Decide only this criterion.");
    let _ = writeln!(out);
    let _ = writeln!(out, "Goal `{}`: {}", goal.id, goal.title);
    let _ = writeln!(out);
    let _ = writeln!(out, "## The criterion to decide");
    let _ = writeln!(out, "{}: {}", criterion.id, criterion.text);
    if let Some(limits) = &criterion.limits {
        let _ = writeln!(out, "Its limits (what it does not require): {limits}");
    }
    let _ = writeln!(out);
    if !settled.is_empty() {
        let _ =
            writeln!(out, "## Criteria already decided by their commands (settled facts; do not judge them)");
        for result in *settled {
            let _ = writeln!(
                out,
                "- {} ({}): {} — {}",
                result.id,
                result.text,
                result.status.as_str(),
                result.note
            );
        }
        let _ = writeln!(out);
    }
    match changed {
        Some(files) if !files.is_empty() => {
            let _ = writeln!(out, "## Files changed since the goal began");
            for file in files.iter().take(MAX_LISTED_FILES) {
                let _ = writeln!(out, "- {file}");
            }
            if files.len() > MAX_LISTED_FILES {
                let _ = writeln!(out, "- ... and {} more", files.len() - MAX_LISTED_FILES);
            }
            let _ = writeln!(out);
        }
        Some(_) => {
            let _ = writeln!(out, "No file changed since the goal began.");
            let _ = writeln!(out);
        }
        None => {}
    }
    let _ = writeln!(out, "Evidence files of this evaluation are under `{evidence_dir}`.");
    let _ = writeln!(out, "Read the workspace as you need; change nothing.");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Reply with one JSON object: {}. \"met\" only when the workspace shows the criterion holds; cite the file and line.",
        CriterionReply::SHAPE
    );
    out
}

/// What the judge decided about one criterion, after at most two asks.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeResult {
    /// The status it gives the criterion.
    pub status: CriterionStatus,
    /// Its verdict, when readable.
    pub verdict: Option<JudgeVerdict>,
    /// Its confidence.
    pub confidence: Option<f64>,
    /// Its evidence.
    pub evidence: String,
    /// Requests made.
    pub attempts: u32,
    /// Why it could not decide.
    pub problem: Option<String>,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use gavel_domain::protocol::parse;

    #[test]
    fn replies_are_read_from_the_first_object() {
        let reply = parse::<CriterionReply>(
            "Sure.\n```json\n{\"verdict\":\"met\",\"evidence\":\"README.md:12 explains it\",\"confidence\":0.9}\n```",
        )
        .unwrap();
        assert_eq!(reply.verdict, JudgeVerdict::Met);
        assert_eq!(reply.confidence, Some(0.9));

        let err = parse::<CriterionReply>("{\"verdict\":\"maybe\"}").unwrap_err();
        let note = err.note();
        assert!(note.contains("`verdict`") && note.contains("`evidence`"), "{note}");
        assert!(parse::<CriterionReply>("no json here").unwrap_err().is_unreadable());
        assert!(
            parse::<CriterionReply>("{\"verdict\":\"met\",\"evidence\":\"x\",\"confidence\":7}").is_err()
        );
    }
}
