//! `cargo bench -p gavel-domain`: the pure rules on a round's hot path.
//!
//! - `tally/*`: the vote rules over a realistic panel: five reviewers,
//!   twelve merged findings, each voted on by the reviewers that did not raise
//!   it (one round's synthesis), and one finding alone.
//! - `reply/*`: reading a reviewer's reply of a few KB, with prose before and
//!   after a fenced JSON object whose strings hold braces and escaped quotes:
//!   the first-object reader alone, then the whole `review` protocol.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;

use divan::black_box;
use gavel_domain::first_json_object;
use gavel_domain::protocol::{Protocol, ReviewReply, Severity, VoteKind};
use gavel_domain::rules::{Ballot, Finding, Tally, tally};

fn main() {
    divan::main();
}

const REVIEWERS: [&str; 5] = ["write-1", "write-2", "write-3", "write-4", "write-5"];

/// A merged finding, the ballots cast on it, and whether it was shown to a
/// reviewer whose vote request failed.
type Voted = (Finding, Vec<Ballot>, bool);

/// One round's merged findings, with the ballots each got.
fn panel() -> (Vec<Voted>, Vec<String>) {
    let order: Vec<String> = REVIEWERS.iter().map(|&r| r.to_owned()).collect();
    let votes = [VoteKind::Agree, VoteKind::Disagree, VoteKind::BetterFix];
    let mut round = Vec::new();
    for n in 0..12_usize {
        let raisers: Vec<String> = order.iter().skip(n % 5).take(1 + n % 2).cloned().collect();
        let finding = Finding {
            id: format!("F{}", n + 1),
            severity: if n % 4 == 0 { Severity::Block } else { Severity::ShouldFix },
            evidence: format!(
                "src/retry.rs:{}: the backoff doubles without a cap, so a long outage waits hours",
                40 + n
            ),
            fix: Some("Cap the delay at `max_delay` and say so in the doc comment.".to_owned()),
            raised_by: raisers.clone(),
            members: raisers.iter().map(|r| format!("{r}.{}", n + 1)).collect(),
        };
        let ballots: Vec<Ballot> = order
            .iter()
            .filter(|r| !raisers.contains(r))
            .enumerate()
            .map(|(i, voter)| {
                let vote = votes[(n + i) % 3];
                Ballot {
                    voter: voter.clone(),
                    vote,
                    reason: "The cap is in the brief; without it the retry loop never gives up.".to_owned(),
                    fix: (vote == VoteKind::BetterFix).then(|| "Use `min(delay * 2, max_delay)`.".to_owned()),
                }
            })
            .collect();
        round.push((finding, ballots, n == 7));
    }
    (round, order)
}

#[divan::bench_group]
mod tally_votes {
    use super::{Tally, black_box, panel, tally};

    /// Every merged finding of a five-reviewer round.
    #[divan::bench]
    fn round_of_12(bencher: divan::Bencher<'_, '_>) {
        let (round, order) = panel();
        bencher.bench_local(|| {
            round
                .iter()
                .map(|(finding, ballots, failed)| {
                    tally(black_box(finding), black_box(ballots), &order, *failed)
                })
                .collect::<Vec<Tally>>()
        });
    }

    /// One finding with four ballots.
    #[divan::bench]
    fn one_finding(bencher: divan::Bencher<'_, '_>) {
        let (round, order) = panel();
        let (finding, ballots, _) = &round[1];
        bencher.bench_local(|| tally(black_box(finding), black_box(ballots), &order, false));
    }
}

/// A reviewer's reply of a few KB: prose, a fenced JSON object with braces
/// and quotes inside its strings, and prose after it.
fn reply_text() -> String {
    let mut text = String::from(
        "I read docs/retries.md against the brief twice, once as a new operator and once as the on-call \
         engineer. Overall the page is much clearer than the last round: the table of defaults comes first, \
         and each knob says what it trades. A few things still get in the way.\n\n",
    );
    for i in 1..=8 {
        let _ = writeln!(
            text,
            "{i}. In section {i}, the example `retry {{ max = {i} }}` reads as if `max` counts attempts, but the \
             code counts retries after the first attempt; a reader sets it one too high. The sentence after it \
             repeats the default from the table, which is fine, but says \"about a minute\" where the table says 45 s."
        );
    }
    text.push_str("\nHere is my decision:\n\n```json\n{\"decision\": \"revise\", \"findings\": [");
    for i in 1..=6 {
        if i > 1 {
            text.push_str(", ");
        }
        let _ = write!(
            text,
            "{{\"severity\": \"{}\", \"evidence\": \"docs/retries.md:{}: `retry {{ max = {i} }}` is read as attempts, not retries; \\\"about a minute\\\" contradicts the table's 45 s\", \"fix\": \"Say `max` counts retries after the first attempt, and quote the table's value {{45 s}}.\"}}",
            if i == 1 { "block" } else { "should-fix" },
            10 * i
        );
    }
    text.push_str(
        "]}\n```\n\nI would pass it once the first finding is fixed; the others are small. {not json}\n",
    );
    text
}

#[divan::bench_group]
mod reply {
    use super::{Protocol, ReviewReply, black_box, first_json_object, reply_text};

    /// The first JSON object in the reply text.
    #[divan::bench]
    fn first_object(bencher: divan::Bencher<'_, '_>) {
        let text = reply_text();
        assert!(first_json_object(&text).is_ok());
        bencher
            .counter(divan::counter::BytesCount::of_str(&text))
            .bench_local(|| first_json_object(black_box(&text)));
    }

    /// The whole `review` protocol: the object, then every field checked.
    #[divan::bench]
    fn review_protocol(bencher: divan::Bencher<'_, '_>) {
        let text = reply_text();
        assert_eq!(ReviewReply::parse(&text).unwrap().findings.len(), 6);
        bencher
            .counter(divan::counter::BytesCount::of_str(&text))
            .bench_local(|| ReviewReply::parse(black_box(&text)));
    }
}
