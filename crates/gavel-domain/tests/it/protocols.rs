//! The protocols end to end, on replies as models and script seats write them.

use gavel_domain::protocol::{
    Decision, GoalReply, MergeGroup, MergeReply, Protocol, ProtocolError, ProtocolProblem, RawFinding,
    RequirementVerdict, ReviewReply, Severity, Verdict, VoteReply,
};
use gavel_domain::reply::{Position, ReplyError};
use pretty_assertions::assert_eq;

#[test]
fn the_spec_goal_example_reads() {
    // The script seat format's goal reply, verbatim.
    let text = r#"{"requirements":[{"requirement":"Lists the opening hours","verdict":"unmet","evidence":"welcome.md has no opening hours"}]}"#;
    assert_eq!(
        GoalReply::parse(text),
        Ok(GoalReply {
            requirements: vec![RequirementVerdict {
                requirement: "Lists the opening hours".to_owned(),
                verdict: Verdict::Unmet,
                evidence: "welcome.md has no opening hours".to_owned(),
            }],
        })
    );
}

#[test]
fn a_chatty_review_reads() {
    let text = "I looked at `src/retry.rs` closely.\n\n\
        Some notes on style: I prefer braces like `{ x }` around one-line ifs.\n\n\
        ```json\n\
        {\n  \"decision\": \"revise\",\n  \"findings\": [\n    {\n      \"severity\": \"block\",\n      \
        \"evidence\": \"src/retry.rs:14 loops forever when the server says \\\"retry-after: 0\\\"\",\n      \
        \"fix\": \"cap retries at `max_retries`\"\n    },\n    {\"evidence\": \"the doc comment says {n} twice\"}\n  ]\n}\n\
        ```\n\nLet me know if you want more detail.";
    assert_eq!(
        ReviewReply::parse(text),
        Ok(ReviewReply {
            decision: Decision::Revise,
            findings: vec![
                RawFinding {
                    severity: Some(Severity::Block),
                    evidence: "src/retry.rs:14 loops forever when the server says \"retry-after: 0\""
                        .to_owned(),
                    fix: Some("cap retries at `max_retries`".to_owned()),
                },
                RawFinding {
                    severity: None,
                    evidence: "the doc comment says {n} twice".to_owned(),
                    fix: None
                },
            ],
        })
    );
}

#[test]
fn an_empty_object_in_prose_is_the_first_object() {
    // The reply reader takes the first JSON object, and `{}` is one: a model that writes
    // it in prose gets asked once more, with a note naming what is missing.
    let err = ReviewReply::parse("Empty blocks `{}` are fine.\n{\"decision\": \"pass\"}").unwrap_err();
    assert_eq!(
        err.to_string(),
        "review reply: Your reply's JSON object did not fit: `decision` is missing; write \"pass\" or \"revise\"."
    );
}

#[test]
fn an_unreadable_reply_gets_a_note_with_the_shape() {
    let err =
        MergeReply::parse("{\"findings\": [{\"members\": [\"write-1.1\"], \"evidence\": \"cut").unwrap_err();
    assert_eq!(
        err,
        ProtocolError {
            protocol: "merge",
            shape: MergeReply::SHAPE,
            problem: ProtocolProblem::Unreadable(ReplyError::Truncated {
                start: Position { offset: 0, line: 1, column: 1 }
            }),
        }
    );
    assert_eq!(
        err.note(),
        format!(
            "Your reply looks cut off: the JSON object that starts at line 1, column 1 never closes. \
             Reply with one JSON object of this shape: {}",
            MergeReply::SHAPE
        )
    );
}

#[test]
fn the_second_try_reads_after_the_note() {
    let first = VoteReply::parse(r#"{"votes":[{"finding":"F1","vote":"+1","reason":"yes"}]}"#).unwrap_err();
    assert_eq!(
        first.note(),
        format!(
            "Your reply's JSON object did not fit: `votes[0].vote` is \"+1\"; write one of \"agree\", \"disagree\", \"better-fix\". \
             Reply with one JSON object of this shape: {}",
            VoteReply::SHAPE
        )
    );
    assert!(VoteReply::parse(r#"{"votes":[{"finding":"F1","vote":"agree","reason":"yes"}]}"#).is_ok());
}

#[test]
fn merged_severity_is_the_strongest() {
    let merge = MergeReply::parse(
        r#"{"findings":[{"members":["write-1.1","write-2.3"],"evidence":"unbounded retry"}]}"#,
    )
    .unwrap();
    assert_eq!(
        merge.findings,
        vec![MergeGroup {
            members: vec!["write-1.1".to_owned(), "write-2.3".to_owned()],
            evidence: "unbounded retry".to_owned(),
            fix: None,
        }]
    );
    // Code, not the merger, sets the group's severity.
    assert_eq!(Severity::strongest([Severity::NiceToHave, Severity::ShouldFix]), Some(Severity::ShouldFix));
}

#[test]
fn every_shape_is_itself_readable_json_prose() {
    // The shapes are shown to models; they must at least name every key.
    for (shape, keys) in [
        (ReviewReply::SHAPE, &["decision", "findings", "severity", "evidence", "fix"][..]),
        (GoalReply::SHAPE, &["requirements", "requirement", "verdict", "evidence"][..]),
        (MergeReply::SHAPE, &["findings", "members", "evidence", "fix"][..]),
        (VoteReply::SHAPE, &["votes", "finding", "vote", "reason", "fix"][..]),
        (
            gavel_domain::protocol::JudgeReply::SHAPE,
            &["answers", "findings", "finding", "decision", "reason"][..],
        ),
    ] {
        for key in keys {
            assert!(shape.contains(&format!("\"{key}\"")), "{shape} lacks {key}");
        }
    }
}
