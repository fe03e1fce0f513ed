//! A round's *merge* step: numbering, provenance, severity and `raised_by`
//! set by code, left-out findings kept, and the notes for a merge that does
//! not fit; plus the loop breaker's fingerprints over merged findings.

use gavel_domain::protocol::{MergeGroup, MergeReply, Protocol, Severity};
use gavel_domain::rules::{
    Finding, MergeIssue, MergeProblem, RawEntry, apply_merge, fingerprint, same_findings, unmerged,
};
use pretty_assertions::assert_eq;

fn raw(id: &str, severity: Severity, fix: Option<&str>) -> RawEntry {
    RawEntry {
        id: id.to_owned(),
        reviewer: id.split('.').next().unwrap().to_owned(),
        severity,
        evidence: format!("evidence of {id}"),
        fix: fix.map(str::to_owned),
    }
}

fn raws() -> Vec<RawEntry> {
    vec![
        raw("write-1.1", Severity::NiceToHave, None),
        raw("write-1.2", Severity::ShouldFix, Some("fix 1.2")),
        raw("write-2.1", Severity::Block, None),
        raw("write-3.1", Severity::ShouldFix, Some("fix 3.1")),
    ]
}

fn group(members: &[&str], evidence: &str, fix: Option<&str>) -> MergeGroup {
    MergeGroup {
        members: members.iter().map(|m| (*m).to_owned()).collect(),
        evidence: evidence.to_owned(),
        fix: fix.map(str::to_owned),
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

fn finding(
    id: &str,
    severity: Severity,
    evidence: &str,
    fix: Option<&str>,
    raised_by: &[&str],
    members: &[&str],
) -> Finding {
    Finding {
        id: id.to_owned(),
        severity,
        evidence: evidence.to_owned(),
        fix: fix.map(str::to_owned),
        raised_by: strings(raised_by),
        members: strings(members),
    }
}

#[test]
fn unmerged_findings_are_numbered_in_reviewer_order() {
    assert_eq!(
        unmerged(&raws()[1..3]),
        vec![
            finding(
                "F1",
                Severity::ShouldFix,
                "evidence of write-1.2",
                Some("fix 1.2"),
                &["write-1"],
                &["write-1.2"]
            ),
            finding("F2", Severity::Block, "evidence of write-2.1", None, &["write-2"], &["write-2.1"]),
        ]
    );
    assert_eq!(unmerged(&[]), Vec::<Finding>::new());
}

#[test]
fn groups_first_then_left_out_findings() {
    let reply = MergeReply {
        findings: vec![
            // The merger's wording wins; code sets severity and raised_by.
            group(&["write-3.1", "write-1.1"], "the term is unexplained", Some("define it")),
            // A group of one is fine; with no fix of its own it takes the member's.
            group(&["write-1.2"], "the last retry is not described", None),
        ],
    };
    assert_eq!(
        apply_merge(&raws(), &reply),
        Ok(vec![
            finding(
                "F1",
                Severity::ShouldFix,
                "the term is unexplained",
                Some("define it"),
                &["write-1", "write-3"],
                &["write-1.1", "write-3.1"],
            ),
            finding(
                "F2",
                Severity::ShouldFix,
                "the last retry is not described",
                Some("fix 1.2"),
                &["write-1"],
                &["write-1.2"],
            ),
            finding("F3", Severity::Block, "evidence of write-2.1", None, &["write-2"], &["write-2.1"]),
        ])
    );
    // An empty merge keeps every finding, as if unmerged.
    assert_eq!(apply_merge(&raws(), &MergeReply { findings: vec![] }), Ok(unmerged(&raws())));
}

#[test]
fn a_merge_that_does_not_fit_gets_a_precise_note() {
    let reply = MergeReply::parse(
        r#"{"findings":[
            {"members":["write-1.1","write-2.1"],"evidence":"a"},
            {"members":["write-9.1"],"evidence":"b"},
            {"members":["write-3.1","write-2.1"],"evidence":"c"}
        ]}"#,
    )
    .unwrap();
    let problem = apply_merge(&raws(), &reply).unwrap_err();
    assert_eq!(
        problem,
        MergeProblem {
            issues: vec![
                MergeIssue::UnknownMember {
                    group: 1,
                    member: 0,
                    id: "write-9.1".to_owned(),
                    known: strings(&["write-1.1", "write-1.2", "write-2.1", "write-3.1"]),
                },
                MergeIssue::InTwoGroups { group: 2, member: 1, id: "write-2.1".to_owned(), first_group: 0 },
            ],
        }
    );
    assert_eq!(
        problem.to_string(),
        concat!(
            "Your merge did not fit the raw findings:",
            " `findings[1].members[0]` is \"write-9.1\", which is not one of the raw findings:",
            " write-1.1, write-1.2, write-2.1, write-3.1.",
            " `findings[2].members[1]` is \"write-2.1\", which is already in `findings[0]`;",
            " put each raw finding in one group only."
        )
    );
    assert_eq!(
        problem.note(),
        format!("{problem} Reply with one JSON object of this shape: {}", MergeReply::SHAPE)
    );

    let empty = MergeReply { findings: vec![group(&[], "nothing", None)] };
    assert_eq!(
        apply_merge(&raws(), &empty).unwrap_err().to_string(),
        "Your merge did not fit the raw findings: `findings[0].members` is empty; \
         list the ids of the raw findings in this group."
    );
    let none = MergeReply { findings: vec![group(&["write-1.1"], "x", None)] };
    assert_eq!(
        apply_merge(&[], &none).unwrap_err().to_string(),
        "Your merge did not fit the raw findings: `findings[0].members[0]` is \"write-1.1\", \
         which is not one of the raw findings: (there are none)."
    );
}

#[test]
fn findings_serialise_with_provenance_only_when_merged() {
    let merged = finding("F1", Severity::Block, "e", Some("f"), &["write-1"], &["write-1.1"]);
    assert_eq!(
        serde_json::to_string(&merged).unwrap(),
        r#"{"id":"F1","severity":"block","evidence":"e","fix":"f","raised_by":["write-1"],"members":["write-1.1"]}"#
    );
    let plain = finding("write-1.1", Severity::NiceToHave, "e", None, &["write-1"], &[]);
    let json = serde_json::to_string(&plain).unwrap();
    assert_eq!(
        json,
        r#"{"id":"write-1.1","severity":"nice-to-have","evidence":"e","raised_by":["write-1"]}"#
    );
    assert_eq!(serde_json::from_str::<Finding>(&json).unwrap(), plain);
}

#[test]
fn the_loop_breaker_compares_fingerprint_sets() {
    let round = |evidence: &[&str]| -> Vec<Finding> {
        evidence
            .iter()
            .enumerate()
            .map(|(i, e)| finding(&format!("F{}", i + 1), Severity::ShouldFix, e, None, &["write-1"], &[]))
            .collect()
    };
    let first = round(&["docs/retries.md:12 backoff is unexplained", "No word on the last retry."]);
    let again = round(&["no word on the LAST retry", "Docs/retries.md:40: Backoff is unexplained!"]);
    let moved_on = round(&["docs/retries.md:12 backoff is unexplained"]);
    assert!(same_findings(&first, &again));
    assert!(!same_findings(&first, &moved_on));
    assert!(!same_findings(&[], &[]));
    assert_eq!(fingerprint("A  b"), fingerprint("a-b"));
}
