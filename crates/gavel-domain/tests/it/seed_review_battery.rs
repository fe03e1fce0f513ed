//! Seed 001's worked example ("Ask a Panel", review-battery round 1), end to
//! end through the pure rules: three reviews, one merge, the cross-votes, the
//! vote rules, the panel rule and the judge's route, from the replies as the
//! seats would write them.

use gavel_domain::protocol::{JudgeReply, MergeReply, Protocol, ReviewReply, Severity, VoteReply};
use gavel_domain::rules::{
    Ballot, Blocks, Finding, JudgeInput, OnCap, PanelCount, PanelOutcome, RawEntry, Route, RouteDecision,
    VoteResult, apply_merge, check_answers, default_questions, panel_outcome, route, tally,
};
use pretty_assertions::assert_eq;

const BACKOFF: &str = r#""The client uses exponential backoff between attempts." The reader has not met "exponential backoff"."#;
const LAST_RETRY: &str = "The page never says what happens when every retry fails.";
const TABLE: &str = "Add a table of every client setting.";
const SHORTER: &str = r#""Set max_retries to the number of extra attempts you want." could be shorter."#;

/// One entry as the seed prints it: result, who raised it, severity,
/// evidence, and each vote as `<voter> <vote>: <reason>`.
#[derive(Debug, PartialEq)]
struct Entry {
    result: VoteResult,
    raised_by: Vec<String>,
    severity: Severity,
    evidence: String,
    votes: Vec<String>,
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn json(value: &serde_json::Value) -> String {
    value.to_string()
}

#[test]
fn review_battery_round_one() {
    let reviewers = names(&["write-1", "write-2", "write-3"]);

    // 1. Review: write-1 is the Claude seat, write-2 Codex, write-3 Gemini.
    let replies = [
        json(&serde_json::json!({"decision": "revise", "findings": [
            {"severity": "should-fix", "evidence": BACKOFF},
        ]})),
        json(&serde_json::json!({"decision": "revise", "findings": [
            {"severity": "should-fix", "evidence": "The page says \"backoff\" but never explains it.",
             "fix": "Say in one sentence that each wait doubles."},
            {"severity": "should-fix", "evidence": LAST_RETRY},
        ]})),
        format!(
            "Two points.\n```json\n{}\n```",
            json(&serde_json::json!({"decision": "revise", "findings": [
                {"severity": "should-fix", "evidence": TABLE},
                {"severity": "nice-to-have", "evidence": SHORTER},
            ]}))
        ),
    ];
    let raw: Vec<RawEntry> = reviewers
        .iter()
        .zip(&replies)
        .flat_map(|(name, text)| RawEntry::from_review(name, &ReviewReply::parse(text).unwrap()))
        .collect();
    assert_eq!(
        raw.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ["write-1.1", "write-2.1", "write-2.2", "write-3.1", "write-3.2"]
    );

    // 2. Merge: the two "backoff" findings become one, with write-1's evidence
    // and write-2's fix; the merger leaves the rest out, and they stay.
    let merge = MergeReply::parse(&json(&serde_json::json!({"findings": [
        {"members": ["write-1.1", "write-2.1"], "evidence": BACKOFF,
         "fix": "Say in one sentence that each wait doubles."},
    ]})))
    .unwrap();
    let merged = apply_merge(&raw, &merge).unwrap();
    assert_eq!(
        merged[0],
        Finding {
            id: "F1".to_owned(),
            severity: Severity::ShouldFix,
            evidence: BACKOFF.to_owned(),
            fix: Some("Say in one sentence that each wait doubles.".to_owned()),
            raised_by: names(&["write-1", "write-2"]),
            members: names(&["write-1.1", "write-2.1"]),
        }
    );
    assert_eq!(merged.iter().map(|f| f.id.as_str()).collect::<Vec<_>>(), ["F1", "F2", "F3", "F4"]);

    // 3. Cross-review: each reviewer votes on the findings it did not raise.
    let votes = [
        json(&serde_json::json!({"votes": [
            {"finding": "F2", "vote": "agree", "reason": "The reader needs to know."},
            {"finding": "F3", "vote": "disagree",
             "reason": "The page covers one setting; a table is past what this reader needs."},
            {"finding": "F4", "vote": "agree", "reason": "Shorter reads better."},
        ]})),
        json(&serde_json::json!({"votes": [
            {"finding": "F3", "vote": "disagree", "reason": "Other settings belong on their own pages."},
            {"finding": "F4", "vote": "disagree", "reason": "It is already one short line."},
        ]})),
        json(&serde_json::json!({"votes": [
            {"finding": "F1", "vote": "agree", "reason": "The term is unexplained."},
            {"finding": "F2", "vote": "agree", "reason": "A reader will ask."},
        ]})),
    ];
    let ballots: Vec<(String, Ballot)> = reviewers
        .iter()
        .zip(&votes)
        .flat_map(|(voter, text)| {
            VoteReply::parse(text)
                .unwrap()
                .votes
                .iter()
                .map(|vote| (vote.finding.clone(), Ballot::from_vote(voter, vote)))
                .collect::<Vec<_>>()
        })
        .collect();

    // 4. Votes, by the rules.
    let mut entries = Vec::new();
    let mut left = Vec::new();
    for finding in &merged {
        // The seed lists votes in reviewer order.
        let on_it: Vec<Ballot> =
            ballots.iter().filter(|(id, _)| id == &finding.id).map(|(_, ballot)| ballot.clone()).collect();
        let outcome = tally(finding, &on_it, &reviewers, false);
        entries.push(Entry {
            result: outcome.result,
            raised_by: finding.raised_by.clone(),
            severity: finding.severity,
            evidence: finding.evidence.clone(),
            votes: on_it.iter().map(|b| format!("{} {}: {}", b.voter, b.vote, b.reason)).collect(),
        });
        if outcome.result.stays() {
            left.push(Finding { fix: outcome.fix, ..finding.clone() });
        }
    }
    assert_eq!(
        entries,
        vec![
            Entry {
                result: VoteResult::Kept,
                raised_by: names(&["write-1", "write-2"]),
                severity: Severity::ShouldFix,
                evidence: BACKOFF.to_owned(),
                votes: names(&["write-3 agree: The term is unexplained."]),
            },
            Entry {
                result: VoteResult::Kept,
                raised_by: names(&["write-2"]),
                severity: Severity::ShouldFix,
                evidence: LAST_RETRY.to_owned(),
                votes: names(&[
                    "write-1 agree: The reader needs to know.",
                    "write-3 agree: A reader will ask."
                ]),
            },
            Entry {
                result: VoteResult::Dropped,
                raised_by: names(&["write-3"]),
                severity: Severity::ShouldFix,
                evidence: TABLE.to_owned(),
                votes: names(&[
                    "write-1 disagree: The page covers one setting; a table is past what this reader needs.",
                    "write-2 disagree: Other settings belong on their own pages.",
                ]),
            },
            Entry {
                result: VoteResult::Disputed,
                raised_by: names(&["write-3"]),
                severity: Severity::NiceToHave,
                evidence: SHORTER.to_owned(),
                votes: names(&[
                    "write-1 agree: Shorter reads better.",
                    "write-2 disagree: It is already one short line."
                ]),
            },
        ]
    );

    // Every reviewer asked for a revision and three findings are left: the
    // panel fails, and the judge decides what goes back.
    let count = PanelCount { passed: 0, revised: 3, errors: 0, agree: 3, findings_left: left.len() };
    assert_eq!(panel_outcome(&count), PanelOutcome::Revise);

    // 5. Judge: acts on F1 and F2, skips the disputed wording point.
    let judge = JudgeReply::parse(&json(&serde_json::json!({
        "answers": {"holds": 0.3, "worth_doing": 0.8, "worth_another_round": 0.7, "stop_reason": "continue"},
        "findings": [
            {"finding": "F1", "decision": "act",
             "reason": "A reader who has not met the term cannot tell what the client does."},
            {"finding": "F2", "decision": "act",
             "reason": "A reader needs to know what the call does after the last retry."},
            {"finding": "F4", "decision": "skip", "reason": "The sentence is clear as it is; a shorter one is taste."},
        ],
    })))
    .unwrap();
    assert_eq!(check_answers(&default_questions(), &judge.answers), Ok(()));
    let decision = route(&JudgeInput {
        round: 1,
        cap: 6,
        on_cap: OnCap::Fail,
        blocks: Blocks::Judge,
        findings: &left,
        reply: Some(&judge),
    });
    assert_eq!(
        decision,
        RouteDecision {
            route: Route::Again,
            reason: "the judge acts on 2 of 3 findings".to_owned(),
            acted: names(&["F1", "F2"]),
            skipped: vec![(
                "F4".to_owned(),
                "The sentence is clear as it is; a shorter one is taste.".to_owned()
            )],
        }
    );

    // Round two: every reviewer passes, so there is nothing to merge, vote on
    // or judge, and the panel passes.
    let count = PanelCount { passed: 3, revised: 0, errors: 0, agree: 3, findings_left: 0 };
    assert_eq!(panel_outcome(&count), PanelOutcome::Pass);
}
