//! The judge's routing as a table: every routing rule in order, the cap, unreadable
//! replies, seed 003's stop; and the judge's questions and answer checks.

use std::collections::BTreeMap;

use gavel_domain::protocol::{AnswerValue, JudgeAct, JudgeDecision, JudgeReply, Severity};
use gavel_domain::rules::judge::{HOLDS, STOP_REASON, WORTH_ANOTHER_ROUND, WORTH_DOING};
use gavel_domain::rules::{
    Blocks, Finding, JudgeInput, OnCap, Question, QuestionKind, Route, RouteDecision, check_answers,
    default_questions, route,
};
use pretty_assertions::assert_eq;

fn findings(list: &[(&str, Severity)]) -> Vec<Finding> {
    list.iter()
        .map(|(id, severity)| Finding {
            id: (*id).to_owned(),
            severity: *severity,
            evidence: format!("evidence of {id}"),
            fix: None,
            raised_by: vec!["write-1".to_owned()],
            members: Vec::new(),
        })
        .collect()
}

/// Answers `[holds, worth_doing, worth_another_round]` (None = not given)
/// and a stop reason, with decisions `(id, act?, reason)`.
fn reply(probabilities: [Option<f64>; 3], stop: Option<&str>, decisions: &[(&str, JudgeAct)]) -> JudgeReply {
    let mut answers = BTreeMap::new();
    for (name, p) in [HOLDS, WORTH_DOING, WORTH_ANOTHER_ROUND].into_iter().zip(probabilities) {
        if let Some(p) = p {
            answers.insert(name.to_owned(), AnswerValue::Number(p));
        }
    }
    if let Some(stop) = stop {
        answers.insert(STOP_REASON.to_owned(), AnswerValue::Text(stop.to_owned()));
    }
    let findings = decisions
        .iter()
        .map(|(id, act)| JudgeDecision {
            finding: (*id).to_owned(),
            decision: *act,
            reason: format!("{act} {id}"),
        })
        .collect();
    JudgeReply { answers, findings }
}

/// Answers that lead past every stop rule: the judge wants another round.
fn go_on(decisions: &[(&str, JudgeAct)]) -> JudgeReply {
    reply([Some(0.3), Some(0.8), Some(0.7)], Some("continue"), decisions)
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn skip(id: &str) -> (String, String) {
    (id.to_owned(), format!("skip {id}"))
}

fn decided(route: Route, reason: &str, acted: &[&str], skipped: &[&str]) -> RouteDecision {
    RouteDecision {
        route,
        reason: reason.to_owned(),
        acted: ids(acted),
        skipped: skipped.iter().map(|id| skip(id)).collect(),
    }
}

struct Case {
    name: &'static str,
    round: u32,
    cap: u32,
    on_cap: OnCap,
    blocks: Blocks,
    findings: Vec<Finding>,
    reply: Option<JudgeReply>,
    expected: RouteDecision,
}

#[test]
fn routing_table() {
    use JudgeAct::{Act, Skip};
    use Severity::{Block, NiceToHave, ShouldFix};
    let two = || findings(&[("F1", ShouldFix), ("F2", NiceToHave)]);
    let with_block = || findings(&[("F1", Block), ("F2", ShouldFix), ("F3", NiceToHave)]);
    let case = |name, round, cap, on_cap, blocks, findings, reply, expected| Case {
        name,
        round,
        cap,
        on_cap,
        blocks,
        findings,
        reply,
        expected,
    };
    let cases = [
        case(
            "1. always-back: a block goes back under the cap, though the judge skips it and says stop",
            2,
            3,
            OnCap::Fail,
            Blocks::AlwaysBack,
            with_block(),
            Some(reply([Some(0.9), Some(0.1), Some(0.1)], Some("holds"), &[("F1", Skip), ("F3", Skip)])),
            decided(
                Route::Again,
                "1 block finding always goes back under the cap of 3 rounds; with them, 2 of 3 findings go back",
                &["F1", "F2"],
                &["F3"],
            ),
        ),
        case(
            "1. always-back with an unreadable judge: every finding goes back",
            1,
            3,
            OnCap::Fail,
            Blocks::AlwaysBack,
            findings(&[("F1", Block), ("F2", Block)]),
            None,
            decided(
                Route::Again,
                "2 block findings always go back under the cap of 3 rounds; the judge's answer was unreadable",
                &["F1", "F2"],
                &[],
            ),
        ),
        case(
            "1. always-back at the cap: the judge's stop answers decide",
            3,
            3,
            OnCap::Fail,
            Blocks::AlwaysBack,
            with_block(),
            Some(reply([Some(0.2), Some(0.9), Some(0.9)], Some("not_converging"), &[])),
            decided(
                Route::Pass,
                "the judge stopped it, reason not_converging (holds 0.2, worth doing 0.9, another round 0.9)",
                &["F1", "F2", "F3"],
                &[],
            ),
        ),
        case(
            "1. always-back at the cap, the judge wants more: per on_cap",
            3,
            3,
            OnCap::Fail,
            Blocks::AlwaysBack,
            with_block(),
            Some(go_on(&[("F2", Skip)])),
            decided(
                Route::Fail,
                "the judge acts on 2 of 3 findings at the cap of 3 rounds, and on_cap is fail",
                &["F1", "F3"],
                &["F2"],
            ),
        ),
        case(
            "blocks = judge: the judge may skip a block",
            1,
            3,
            OnCap::Fail,
            Blocks::Judge,
            with_block(),
            Some(go_on(&[("F1", Skip)])),
            decided(Route::Again, "the judge acts on 2 of 3 findings", &["F2", "F3"], &["F1"]),
        ),
        case(
            "2. unreadable under the cap: run again with every finding",
            1,
            3,
            OnCap::Fail,
            Blocks::Judge,
            two(),
            None,
            decided(
                Route::Again,
                "the judge's answer was unreadable, so the round runs again with all 2 findings",
                &["F1", "F2"],
                &[],
            ),
        ),
        case(
            "2. unreadable at the cap, on_cap = fail",
            3,
            3,
            OnCap::Fail,
            Blocks::Judge,
            two(),
            None,
            decided(
                Route::Fail,
                "the judge's answer was unreadable at the cap of 3 rounds, and on_cap is fail",
                &["F1", "F2"],
                &[],
            ),
        ),
        case(
            "2. unreadable at the cap, on_cap = pass",
            3,
            3,
            OnCap::Pass,
            Blocks::Judge,
            two(),
            None,
            decided(
                Route::Pass,
                "the judge's answer was unreadable at the cap of 3 rounds, and on_cap is pass",
                &["F1", "F2"],
                &[],
            ),
        ),
        case(
            "3. seed 003, round 2: no findings, the judge stops it because the work holds",
            2,
            6,
            OnCap::Fail,
            Blocks::AlwaysBack,
            Vec::new(),
            Some(reply([Some(0.9), Some(0.2), Some(0.1)], Some("holds"), &[])),
            decided(
                Route::Pass,
                "the judge stopped it, reason holds (holds 0.9, worth doing 0.2, another round 0.1)",
                &[],
                &[],
            ),
        ),
        case(
            "3. a stop reason other than continue wins over wanting more, words read loosely",
            1,
            6,
            OnCap::Fail,
            Blocks::Judge,
            two(),
            Some(reply([Some(0.1), Some(0.9), None], Some("Over-Polishing"), &[("F2", Skip)])),
            decided(
                Route::Pass,
                "the judge stopped it, reason over_polishing (holds 0.1, worth doing 0.9)",
                &["F1"],
                &["F2"],
            ),
        ),
        case(
            "4. holds at exactly 0.5: pass",
            1,
            6,
            OnCap::Fail,
            Blocks::Judge,
            two(),
            Some(reply([Some(0.5), Some(0.9), Some(0.9)], Some("continue"), &[])),
            decided(Route::Pass, "the judge says the work holds (holds 0.5)", &["F1", "F2"], &[]),
        ),
        case(
            "5. worth_doing below 0.5: pass",
            1,
            6,
            OnCap::Fail,
            Blocks::Judge,
            two(),
            Some(reply([Some(0.49), Some(0.49), Some(0.9)], Some("continue"), &[])),
            decided(
                Route::Pass,
                "the judge says the findings are not worth doing (worth doing 0.49)",
                &["F1", "F2"],
                &[],
            ),
        ),
        case(
            "6. worth_another_round below 0.5: pass",
            1,
            6,
            OnCap::Fail,
            Blocks::Judge,
            two(),
            Some(reply([Some(0.2), Some(0.5), Some(0.25)], None, &[])),
            decided(
                Route::Pass,
                "the judge says another round is not worth it (another round 0.25)",
                &["F1", "F2"],
                &[],
            ),
        ),
        case(
            "7. the judge skips every finding: pass",
            1,
            6,
            OnCap::Fail,
            Blocks::Judge,
            two(),
            Some(go_on(&[("F1", Skip), ("F2", Skip)])),
            decided(Route::Pass, "the judge skips all 2 findings", &[], &["F1", "F2"]),
        ),
        case(
            "7. nothing left to act on: pass",
            1,
            6,
            OnCap::Fail,
            Blocks::Judge,
            Vec::new(),
            Some(go_on(&[])),
            decided(Route::Pass, "no findings are left to act on", &[], &[]),
        ),
        case(
            "8. at the cap, on_cap = fail: fails with the acted findings",
            6,
            6,
            OnCap::Fail,
            Blocks::Judge,
            two(),
            Some(go_on(&[("F1", Act)])),
            decided(
                Route::Fail,
                "the judge acts on 2 of 2 findings at the cap of 6 rounds, and on_cap is fail",
                &["F1", "F2"],
                &[],
            ),
        ),
        case(
            "8. past the cap, on_cap = pass",
            7,
            6,
            OnCap::Pass,
            Blocks::Judge,
            two(),
            Some(go_on(&[("F2", Skip)])),
            decided(
                Route::Pass,
                "the judge acts on 1 of 2 findings at the cap of 6 rounds, and on_cap is pass",
                &["F1"],
                &["F2"],
            ),
        ),
        case(
            "9. otherwise another round; unmentioned is acted on, ids match in any case, first decision wins",
            1,
            6,
            OnCap::Fail,
            Blocks::Judge,
            findings(&[("F1", ShouldFix), ("F2", NiceToHave), ("F3", ShouldFix)]),
            Some(go_on(&[("f2", Skip), ("F9", Skip), ("F2", Act)])),
            RouteDecision {
                skipped: vec![("F2".to_owned(), "skip f2".to_owned())],
                ..decided(Route::Again, "the judge acts on 2 of 3 findings", &["F1", "F3"], &[])
            },
        ),
        case(
            "9. answers of the wrong type skip their rule",
            1,
            6,
            OnCap::Fail,
            Blocks::Judge,
            findings(&[("F1", ShouldFix)]),
            Some(JudgeReply {
                answers: [
                    (HOLDS.to_owned(), AnswerValue::Text("high".to_owned())),
                    (STOP_REASON.to_owned(), AnswerValue::Number(1.0)),
                ]
                .into_iter()
                .collect(),
                findings: Vec::new(),
            }),
            decided(Route::Again, "the judge acts on 1 of 1 finding", &["F1"], &[]),
        ),
    ];
    for case in cases {
        let input = JudgeInput {
            round: case.round,
            cap: case.cap,
            on_cap: case.on_cap,
            blocks: case.blocks,
            findings: &case.findings,
            reply: case.reply.as_ref(),
        };
        assert_eq!(route(&input), case.expected, "{}", case.name);
    }
}

#[test]
fn default_questions_are_spec_4_2() {
    let questions = default_questions();
    let shape: Vec<(&str, QuestionKind, Vec<&str>)> = questions
        .iter()
        .map(|q| (q.name.as_str(), q.kind, q.criteria.iter().map(|(c, _)| c.as_str()).collect()))
        .collect();
    assert_eq!(
        shape,
        vec![
            ("holds", QuestionKind::Probability, vec![]),
            ("worth_doing", QuestionKind::Probability, vec![]),
            ("worth_another_round", QuestionKind::Probability, vec![]),
            (
                "stop_reason",
                QuestionKind::Choice,
                vec!["holds", "over_polishing", "not_converging", "continue"]
            ),
        ]
    );
    assert!(questions.iter().all(|q| !q.instructions.is_empty()));
    assert!(questions[3].criteria.iter().all(|(_, meaning)| !meaning.is_empty()));
}

#[test]
fn answers_are_checked_with_a_precise_note() {
    let mut questions = default_questions();
    questions.push(Question {
        name: "ship it?".to_owned(),
        kind: QuestionKind::Boolean,
        instructions: "Would you ship it?".to_owned(),
        criteria: Vec::new(),
    });
    questions.push(Question {
        name: "summary".to_owned(),
        kind: QuestionKind::Text,
        instructions: "One line.".to_owned(),
        criteria: Vec::new(),
    });
    let answers = |pairs: &[(&str, AnswerValue)]| -> BTreeMap<String, AnswerValue> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
    };
    let good = answers(&[
        ("holds", AnswerValue::Number(0.0)),
        ("worth_doing", AnswerValue::Number(1.0)),
        ("worth_another_round", AnswerValue::Number(0.5)),
        ("stop_reason", AnswerValue::Text(" Not-Converging ".to_owned())),
        ("ship it?", AnswerValue::Bool(false)),
        ("summary", AnswerValue::Text("fine".to_owned())),
        ("extra", AnswerValue::Text("ignored".to_owned())),
    ]);
    assert_eq!(check_answers(&questions, &good), Ok(()));

    let bad = answers(&[
        ("holds", AnswerValue::Number(1.5)),
        ("worth_doing", AnswerValue::Text("0.5".to_owned())),
        ("stop_reason", AnswerValue::Text("done".to_owned())),
        ("ship it?", AnswerValue::Text("yes".to_owned())),
        ("summary", AnswerValue::Text("  ".to_owned())),
    ]);
    assert_eq!(
        check_answers(&questions, &bad),
        Err(concat!(
            "Your answers did not fit the questions:",
            " `answers.holds` is 1.5; write a probability, a number from 0 to 1.",
            " `answers.worth_doing` is \"0.5\"; write a probability, a number from 0 to 1.",
            " `answers.worth_another_round` is missing; write a probability, a number from 0 to 1.",
            " `answers.stop_reason` is \"done\"; write one of \"holds\", \"over_polishing\", \"not_converging\", \"continue\".",
            " `answers[\"ship it?\"]` is \"yes\"; write true or false.",
            " `answers.summary` is empty; write your answer as a string.",
        )
        .to_owned())
    );
    assert_eq!(check_answers(&[], &BTreeMap::new()), Ok(()));
}
