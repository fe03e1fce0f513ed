//! The vote rules as a table: every vote rule, its protections and the panel's
//! pass rule, asserted as whole values.

use gavel_domain::protocol::{Severity, VoteKind};
use gavel_domain::rules::{
    Ballot, Finding, PanelCount, PanelOutcome, Tally, VoteResult, panel_outcome, panel_passes, tally,
};
use pretty_assertions::assert_eq;

fn order() -> Vec<String> {
    (1..=5).map(|i| format!("write-{i}")).collect()
}

fn finding(severity: Severity, raised_by: &[&str]) -> Finding {
    Finding {
        id: "F1".to_owned(),
        severity,
        evidence: "the page never says what backoff is".to_owned(),
        fix: Some("own fix".to_owned()),
        raised_by: raised_by.iter().map(|r| (*r).to_owned()).collect(),
        members: Vec::new(),
    }
}

/// `("write-2", "d")`: a for agree, d for disagree, b for better-fix with
/// the fix `fix from write-2`, B for a better-fix vote without a fix.
fn ballots(votes: &[(&str, &str)]) -> Vec<Ballot> {
    votes
        .iter()
        .map(|(voter, vote)| {
            let (vote, fix) = match *vote {
                "a" => (VoteKind::Agree, None),
                "d" => (VoteKind::Disagree, None),
                "b" => (VoteKind::BetterFix, Some(format!("fix from {voter}"))),
                "B" => (VoteKind::BetterFix, None),
                other => panic!("unknown vote {other}"),
            };
            Ballot { voter: (*voter).to_owned(), vote, reason: format!("{voter} says so"), fix }
        })
        .collect()
}

fn own(result: VoteResult) -> Tally {
    Tally { result, fix: Some("own fix".to_owned()) }
}

struct Row {
    name: &'static str,
    severity: Severity,
    raised_by: &'static [&'static str],
    votes: &'static [(&'static str, &'static str)],
    failed_voter: bool,
    expected: Tally,
}

#[test]
fn vote_rules_table() {
    use Severity::{Block, NiceToHave, ShouldFix};
    let better =
        |voter: &str| Tally { result: VoteResult::BetterFix, fix: Some(format!("fix from {voter}")) };
    let rows = [
        Row {
            name: "nobody voted (raised by every reviewer): kept",
            severity: ShouldFix,
            raised_by: &["write-1", "write-2", "write-3"],
            votes: &[],
            failed_voter: false,
            expected: own(VoteResult::Kept),
        },
        Row {
            name: "nobody voted, shown to a failed voter: still kept",
            severity: ShouldFix,
            raised_by: &["write-1"],
            votes: &[],
            failed_voter: true,
            expected: own(VoteResult::Kept),
        },
        Row {
            name: "all agree: kept",
            severity: NiceToHave,
            raised_by: &["write-1"],
            votes: &[("write-2", "a"), ("write-3", "a")],
            failed_voter: false,
            expected: own(VoteResult::Kept),
        },
        Row {
            name: "two raisers, one disagree: most disagree but do not outnumber, disputed",
            severity: ShouldFix,
            raised_by: &["write-1", "write-2"],
            votes: &[("write-3", "d")],
            failed_voter: false,
            expected: own(VoteResult::Disputed),
        },
        Row {
            name: "one raiser, two disagree: dropped",
            severity: ShouldFix,
            raised_by: &["write-3"],
            votes: &[("write-1", "d"), ("write-2", "d")],
            failed_voter: false,
            expected: own(VoteResult::Dropped),
        },
        Row {
            name: "most disagree, tied with raiser plus agree: disputed",
            severity: ShouldFix,
            raised_by: &["write-1"],
            votes: &[("write-2", "d"), ("write-3", "d"), ("write-4", "a")],
            failed_voter: false,
            expected: own(VoteResult::Disputed),
        },
        Row {
            name: "most disagree, outnumbering raiser, agree and better-fix: dropped",
            severity: NiceToHave,
            raised_by: &["write-1"],
            votes: &[("write-2", "d"), ("write-3", "d"), ("write-4", "d"), ("write-5", "a")],
            failed_voter: false,
            expected: own(VoteResult::Dropped),
        },
        Row {
            name: "better-fix voters count against dropping: disputed",
            severity: ShouldFix,
            raised_by: &["write-1"],
            votes: &[("write-2", "d"), ("write-3", "d"), ("write-4", "b")],
            failed_voter: false,
            expected: own(VoteResult::Disputed),
        },
        Row {
            name: "a block most disagree with: disputed, never dropped",
            severity: Block,
            raised_by: &["write-3"],
            votes: &[("write-1", "d"), ("write-2", "d")],
            failed_voter: false,
            expected: own(VoteResult::Disputed),
        },
        Row {
            name: "shown to a failed voter: disputed instead of dropped",
            severity: ShouldFix,
            raised_by: &["write-3"],
            votes: &[("write-1", "d"), ("write-2", "d")],
            failed_voter: true,
            expected: own(VoteResult::Disputed),
        },
        Row {
            name: "a block shown to a failed voter: disputed",
            severity: Block,
            raised_by: &["write-3"],
            votes: &[("write-1", "d"), ("write-2", "d")],
            failed_voter: true,
            expected: own(VoteResult::Disputed),
        },
        Row {
            name: "exactly half disagree: disputed",
            severity: NiceToHave,
            raised_by: &["write-3"],
            votes: &[("write-1", "a"), ("write-2", "d")],
            failed_voter: false,
            expected: own(VoteResult::Disputed),
        },
        Row {
            name: "exactly half disagree, the other half better-fix: disputed, own fix",
            severity: ShouldFix,
            raised_by: &["write-1"],
            votes: &[("write-2", "b"), ("write-3", "d")],
            failed_voter: false,
            expected: own(VoteResult::Disputed),
        },
        Row {
            name: "better-fix majority: the first fix offered in reviewer order, not ballot order",
            severity: ShouldFix,
            raised_by: &["write-1"],
            votes: &[("write-4", "b"), ("write-2", "b"), ("write-3", "a")],
            failed_voter: false,
            expected: better("write-2"),
        },
        Row {
            name: "better-fix majority skips a better-fix vote without a fix",
            severity: ShouldFix,
            raised_by: &["write-1"],
            votes: &[("write-2", "B"), ("write-3", "b")],
            failed_voter: false,
            expected: better("write-3"),
        },
        Row {
            name: "better-fix majority with no fix written: kept, own fix",
            severity: ShouldFix,
            raised_by: &["write-1"],
            votes: &[("write-2", "B"), ("write-3", "B")],
            failed_voter: false,
            expected: own(VoteResult::Kept),
        },
        Row {
            name: "better-fix at exactly half: kept",
            severity: ShouldFix,
            raised_by: &["write-1"],
            votes: &[("write-2", "b"), ("write-3", "a")],
            failed_voter: false,
            expected: own(VoteResult::Kept),
        },
        Row {
            name: "better-fix majority, shown to a failed voter: better-fix (the rule only stops drops)",
            severity: Block,
            raised_by: &["write-1"],
            votes: &[("write-3", "b"), ("write-2", "b")],
            failed_voter: true,
            expected: better("write-2"),
        },
        Row {
            name: "a raiser's own ballot is not counted",
            severity: ShouldFix,
            raised_by: &["write-1"],
            votes: &[("write-1", "d"), ("write-2", "a")],
            failed_voter: false,
            expected: own(VoteResult::Kept),
        },
        Row {
            name: "a voter counts once, with its first ballot",
            severity: ShouldFix,
            raised_by: &["write-1"],
            votes: &[("write-2", "d"), ("write-2", "a"), ("write-3", "a")],
            failed_voter: false,
            expected: own(VoteResult::Disputed),
        },
    ];
    for row in rows {
        let finding = finding(row.severity, row.raised_by);
        let got = tally(&finding, &ballots(row.votes), &order(), row.failed_voter);
        assert_eq!(got, row.expected, "{}", row.name);
    }
}

#[test]
fn a_finding_without_a_fix_keeps_none() {
    let mut bare = finding(Severity::ShouldFix, &["write-1"]);
    bare.fix = None;
    assert_eq!(
        tally(&bare, &ballots(&[("write-2", "a")]), &order(), false),
        Tally { result: VoteResult::Kept, fix: None }
    );
}

#[test]
fn panel_pass_rule() {
    let count = |passed, revised, errors, agree, findings_left| PanelCount {
        passed,
        revised,
        errors,
        agree,
        findings_left,
    };
    let rows = [
        ("every reviewer passed", count(3, 0, 0, 3, 0), PanelOutcome::Pass),
        ("passes at agree, findings and all", count(2, 1, 0, 2, 3), PanelOutcome::Pass),
        ("one short, findings left: revise", count(2, 1, 0, 3, 1), PanelOutcome::Revise),
        ("votes dropped every finding of a failing panel: pass", count(0, 3, 0, 3, 0), PanelOutcome::Pass),
        ("short only by engine errors: wait", count(2, 0, 1, 3, 0), PanelOutcome::ShortByErrors),
        ("an engine error is no acceptance", count(1, 0, 1, 2, 2), PanelOutcome::ShortByErrors),
        ("a rejection and an error, findings left: revise", count(1, 1, 1, 3, 2), PanelOutcome::Revise),
        ("agree above the panel means all", count(2, 0, 0, 9, 0), PanelOutcome::Pass),
    ];
    for (name, count, expected) in rows {
        assert_eq!(panel_outcome(&count), expected, "{name}");
        assert_eq!(panel_passes(&count), expected == PanelOutcome::Pass, "{name}");
    }
}
