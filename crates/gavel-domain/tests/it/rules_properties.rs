//! Property tests of the round rules: the tally does not depend on ballot
//! order and its protections always hold; a merge never loses a raw finding
//! and code sets its severity; the route never runs past the cap.
//!
//! 1,000 to 2,000 cases each (see each `ProptestConfig`).

use std::collections::{BTreeMap, BTreeSet};

use gavel_domain::protocol::{
    AnswerValue, JudgeAct, JudgeDecision, JudgeReply, MergeGroup, MergeReply, Severity, VoteKind,
};
use gavel_domain::rules::judge::{HOLDS, STOP_REASON, WORTH_ANOTHER_ROUND, WORTH_DOING};
use gavel_domain::rules::{
    Ballot, Blocks, Finding, JudgeInput, OnCap, RawEntry, Route, VoteResult, apply_merge, route, tally,
};
use proptest::prelude::*;
use proptest::sample::select;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, ..ProptestConfig::default() }
}

const VOTERS: usize = 5;

fn voter(i: usize) -> String {
    format!("write-{}", i + 1)
}

fn voter_order() -> Vec<String> {
    (0..VOTERS).map(voter).collect()
}

fn severity() -> impl Strategy<Value = Severity> {
    select(Severity::ALL.to_vec())
}

/// A finding raised by a non-empty subset of the voters, and up to one
/// ballot per voter (raisers included: their ballots must be ignored).
fn vote_case() -> impl Strategy<Value = (Finding, Vec<Ballot>)> {
    let ballot =
        prop::option::of((select(VoteKind::ALL.to_vec()), prop::option::of(select(vec!["x", "y", " "]))));
    (
        severity(),
        prop::collection::vec(prop::bool::weighted(0.3), VOTERS),
        prop::collection::vec(ballot, VOTERS),
        prop::option::of(select(vec!["own"])),
    )
        .prop_map(|(severity, raised, ballots, fix)| {
            let mut raised_by: Vec<String> = (0..VOTERS).filter(|&i| raised[i]).map(voter).collect();
            if raised_by.is_empty() {
                raised_by.push(voter(0));
            }
            let finding = Finding {
                id: "F1".to_owned(),
                severity,
                evidence: "e".to_owned(),
                fix: fix.map(str::to_owned),
                raised_by,
                members: Vec::new(),
            };
            let ballots = ballots
                .into_iter()
                .enumerate()
                .filter_map(|(i, b)| {
                    b.map(|(vote, fix)| Ballot {
                        voter: voter(i),
                        vote,
                        reason: format!("reason {i}"),
                        fix: fix.map(str::to_owned),
                    })
                })
                .collect();
            (finding, ballots)
        })
}

/// A vote case with the same ballots shuffled.
fn shuffled_case() -> impl Strategy<Value = (Finding, Vec<Ballot>, Vec<Ballot>)> {
    vote_case().prop_flat_map(|(finding, ballots)| {
        let shuffled = Just(ballots.clone()).prop_shuffle();
        (Just(finding), Just(ballots), shuffled)
    })
}

proptest! {
    #![proptest_config(config(2_000))]

    #[test]
    fn tally_does_not_depend_on_ballot_order((finding, ballots, shuffled) in shuffled_case(), failed in any::<bool>()) {
        prop_assert_eq!(
            tally(&finding, &ballots, &voter_order(), failed),
            tally(&finding, &shuffled, &voter_order(), failed)
        );
    }

    #[test]
    fn a_block_is_never_dropped((mut finding, ballots) in vote_case(), failed in any::<bool>()) {
        finding.severity = Severity::Block;
        prop_assert_ne!(tally(&finding, &ballots, &voter_order(), failed).result, VoteResult::Dropped);
    }

    #[test]
    fn a_finding_shown_to_a_failed_voter_is_never_dropped((finding, ballots) in vote_case()) {
        prop_assert_ne!(tally(&finding, &ballots, &voter_order(), true).result, VoteResult::Dropped);
    }

    #[test]
    fn only_better_fix_changes_the_fix((finding, ballots) in vote_case(), failed in any::<bool>()) {
        let outcome = tally(&finding, &ballots, &voter_order(), failed);
        if outcome.result == VoteResult::BetterFix {
            let fix = outcome.fix.unwrap();
            prop_assert!(ballots.iter().any(|b| b.vote == VoteKind::BetterFix && b.fix.as_deref() == Some(fix.as_str())));
        } else {
            prop_assert_eq!(outcome.fix, finding.fix);
        }
    }
}

/// Raw findings from up to four reviewers, in reviewer order.
fn raw_findings() -> impl Strategy<Value = Vec<RawEntry>> {
    prop::collection::vec(
        prop::collection::vec((severity(), prop::option::of(select(vec!["f", "g"]))), 0..4),
        1..5,
    )
    .prop_map(|reviewers| {
        reviewers
            .into_iter()
            .enumerate()
            .flat_map(|(r, findings)| {
                findings.into_iter().enumerate().map(move |(n, (severity, fix))| RawEntry {
                    id: format!("write-{}.{}", r + 1, n + 1),
                    reviewer: format!("write-{}", r + 1),
                    severity,
                    evidence: format!("raw {}.{}", r + 1, n + 1),
                    fix: fix.map(str::to_owned),
                })
            })
            .collect()
    })
}

/// Raw findings and a merge over them: each raw finding goes in one of up to
/// four groups or is left out; members are listed in any order; and now and
/// then the merger invents an id or puts a finding in a second group.
fn merge_case() -> impl Strategy<Value = (Vec<RawEntry>, MergeReply)> {
    raw_findings().prop_flat_map(|raw| {
        let n = raw.len();
        (
            Just(raw),
            prop::collection::vec(prop::option::of(0..4usize), n),
            prop::collection::vec(prop::option::of((0..4usize, 0..n.max(1) + 1)), 0..2),
            any::<prop::sample::Index>(),
        )
            .prop_map(|(raw, placement, extra, seed)| {
                let mut groups: Vec<Vec<String>> = vec![Vec::new(); 4];
                for (entry, group) in raw.iter().zip(&placement) {
                    if let Some(g) = group {
                        groups[*g].push(entry.id.clone());
                    }
                }
                // Mistakes: an id past the end of `raw` is invented.
                for (g, pick) in extra.into_iter().flatten() {
                    let id = raw.get(pick).map_or_else(|| "write-9.9".to_owned(), |e| e.id.clone());
                    groups[g].push(id);
                }
                let findings = groups
                    .into_iter()
                    .filter(|members| !members.is_empty())
                    .enumerate()
                    .map(|(i, mut members)| {
                        let len = members.len();
                        members.rotate_left(seed.index(len));
                        MergeGroup { members, evidence: format!("group {i}"), fix: None }
                    })
                    .collect();
                (raw, MergeReply { findings })
            })
    })
}

proptest! {
    #![proptest_config(config(2_000))]

    #[test]
    fn a_merge_never_loses_a_raw_finding((raw, reply) in merge_case()) {
        let Ok(merged) = apply_merge(&raw, &reply) else {
            // A refused merge loses nothing either: the runtime asks again,
            // then goes on unmerged.
            return Ok(());
        };
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        for finding in &merged {
            for member in &finding.members {
                *seen.entry(member.as_str()).or_default() += 1;
            }
        }
        let ids: BTreeSet<&str> = raw.iter().map(|r| r.id.as_str()).collect();
        prop_assert_eq!(seen.keys().copied().collect::<BTreeSet<_>>(), ids);
        prop_assert!(seen.values().all(|&count| count == 1));

        for (i, finding) in merged.iter().enumerate() {
            prop_assert_eq!(&finding.id, &format!("F{}", i + 1));
            let members: Vec<&RawEntry> =
                raw.iter().filter(|r| finding.members.contains(&r.id)).collect();
            prop_assert_eq!(Some(finding.severity), Severity::strongest(members.iter().map(|m| m.severity)));
            let mut reviewers: Vec<String> = members.iter().map(|m| m.reviewer.clone()).collect();
            reviewers.dedup();
            prop_assert_eq!(&finding.raised_by, &reviewers);
        }
    }

    #[test]
    fn a_valid_merge_is_never_refused((raw, reply) in merge_case()) {
        // Valid: every member names a raw finding, and no raw finding is in
        // two groups (the same id twice in one group is forgiven).
        let ids: BTreeSet<&str> = raw.iter().map(|r| r.id.as_str()).collect();
        let groups: Vec<BTreeSet<&str>> =
            reply.findings.iter().map(|g| g.members.iter().map(String::as_str).collect()).collect();
        let placed: usize = groups.iter().map(BTreeSet::len).sum();
        let union: BTreeSet<&str> = groups.iter().flatten().copied().collect();
        let valid = union.len() == placed && union.is_subset(&ids);
        prop_assert_eq!(apply_merge(&raw, &reply).is_ok(), valid);
    }
}

fn probability() -> impl Strategy<Value = Option<AnswerValue>> {
    prop::option::of(prop_oneof![
        (-0.5f64..1.5).prop_map(AnswerValue::Number),
        select(vec![0.0, 0.49, 0.5, 1.0]).prop_map(AnswerValue::Number),
        Just(AnswerValue::Text("high".to_owned())),
    ])
}

fn judge_reply(ids: Vec<String>) -> impl Strategy<Value = JudgeReply> {
    let n = ids.len();
    (
        probability(),
        probability(),
        probability(),
        prop::option::of(select(vec![
            "continue",
            "holds",
            "over_polishing",
            "not_converging",
            "Continue",
            "",
        ])),
        prop::collection::vec(prop::option::of(select(JudgeAct::ALL.to_vec())), n),
        any::<bool>(),
    )
        .prop_map(move |(holds, doing, another, stop, acts, stray)| {
            let mut answers = BTreeMap::new();
            for (name, answer) in [(HOLDS, holds), (WORTH_DOING, doing), (WORTH_ANOTHER_ROUND, another)] {
                if let Some(answer) = answer {
                    answers.insert(name.to_owned(), answer);
                }
            }
            if let Some(stop) = stop {
                answers.insert(STOP_REASON.to_owned(), AnswerValue::Text(stop.to_owned()));
            }
            let mut findings: Vec<JudgeDecision> = ids
                .iter()
                .zip(acts)
                .filter_map(|(id, act)| {
                    act.map(|decision| JudgeDecision {
                        finding: id.clone(),
                        decision,
                        reason: "r".to_owned(),
                    })
                })
                .collect();
            if stray {
                findings.push(JudgeDecision {
                    finding: "F99".to_owned(),
                    decision: JudgeAct::Skip,
                    reason: "r".to_owned(),
                });
            }
            JudgeReply { answers, findings }
        })
}

#[derive(Debug, Clone)]
struct RouteCase {
    round: u32,
    cap: u32,
    on_cap: OnCap,
    blocks: Blocks,
    findings: Vec<Finding>,
    reply: Option<JudgeReply>,
}

fn route_case() -> impl Strategy<Value = RouteCase> {
    (
        0u32..10,
        0u32..10,
        select(vec![OnCap::Fail, OnCap::Pass]),
        select(vec![Blocks::Judge, Blocks::AlwaysBack]),
        prop::collection::vec(severity(), 0..5),
    )
        .prop_flat_map(|(round, cap, on_cap, blocks, severities)| {
            let findings: Vec<Finding> = severities
                .into_iter()
                .enumerate()
                .map(|(i, severity)| Finding {
                    id: format!("F{}", i + 1),
                    severity,
                    evidence: format!("e{i}"),
                    fix: None,
                    raised_by: vec!["write-1".to_owned()],
                    members: Vec::new(),
                })
                .collect();
            let ids = findings.iter().map(|f| f.id.clone()).collect();
            let reply = prop::option::weighted(0.85, judge_reply(ids));
            (Just(RouteCase { round, cap, on_cap, blocks, findings, reply: None }), reply)
                .prop_map(|(case, reply)| RouteCase { reply, ..case })
        })
}

proptest! {
    #![proptest_config(config(2_000))]

    #[test]
    fn route_never_goes_again_at_or_past_the_cap(case in route_case()) {
        let decision = route(&JudgeInput {
            round: case.round,
            cap: case.cap,
            on_cap: case.on_cap,
            blocks: case.blocks,
            findings: &case.findings,
            reply: case.reply.as_ref(),
        });
        if case.round >= case.cap {
            prop_assert_ne!(decision.route, Route::Again, "{}", decision.reason);
        }
        // Every finding is either acted on or skipped, once, in order.
        let mut decided: Vec<&str> = decision.acted.iter().map(String::as_str).collect();
        decided.extend(decision.skipped.iter().map(|(id, _)| id.as_str()));
        decided.sort_unstable();
        let mut all: Vec<&str> = case.findings.iter().map(|f| f.id.as_str()).collect();
        all.sort_unstable();
        prop_assert_eq!(decided, all);
        // Under always-back, a block under the cap always goes back.
        if case.blocks == Blocks::AlwaysBack && case.round < case.cap {
            for block in case.findings.iter().filter(|f| f.severity == Severity::Block) {
                prop_assert_eq!(decision.route, Route::Again);
                prop_assert!(decision.acted.contains(&block.id));
            }
        }
    }
}
