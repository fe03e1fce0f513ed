//! `cargo bench -p gavel-record`: the record's hot paths.
//!
//! - `append/synced` and `append/unsynced`: one `seat:reply` event (a line of
//!   about 300 bytes) through [`RecordWriter::append`], with and without the
//!   fdatasync a real run pays for every event. The synced figure is this
//!   disk's durable-append floor as gavel sees it.
//! - `replay_100k/*`: a realistic 100,000-event record (review rounds of a
//!   builder and three reviewers, command checks and kickbacks), generated in
//!   memory, read with [`parse_record`] and folded with [`RunState::fold`]:
//!   the work `gavel status` and the first step of `gavel resume` do.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;

use divan::Bencher;
use gavel_domain::protocol::{Severity, VoteKind};
use gavel_domain::{RequestKind, Usage};
use gavel_record::event::{
    BuildDone, CheckRun, EndStatus, Finding, Kickback, RecordedVote, ReviewDecision, ReviewOutcome,
    ReviewSynthesis, RunEnd, RunStart, SeatKey, SeatReply, SeatRequest, StageStart, SynthesisEntry,
    SynthesisFinding, VoteResult,
};
use gavel_record::read::parse_record;
use gavel_record::write::Durability;
use gavel_record::{Envelope, Event, RecordWriter, RunState};

fn main() {
    divan::main();
}

const SHA: &str = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn key(stage: &str, round: u32, seat: &str, request: RequestKind) -> SeatKey {
    SeatKey { stage: stage.to_owned(), round, seat: seat.to_owned(), request, attempt: 1 }
}

/// A builder's reply as a record holds it: about 300 bytes once enveloped.
fn reply_event(round: u32) -> Event {
    Event::SeatReply(SeatReply {
        key: key("write", round, "writer", RequestKind::Write),
        text: "Wrote docs/retries.md: rewrote the opening so the reader knows what to set, \
               and moved the table of defaults up."
            .to_owned(),
        usage: Usage { input_tokens: 1812, output_tokens: 264, cost_usd: 0.0131 },
        ms: 2417,
        session: None,
    })
}

#[divan::bench_group(sample_count = 200)]
mod append {
    use super::{Bencher, Durability, RecordWriter, bench_dir, reply_event};

    fn bench_append(bencher: Bencher<'_, '_>, durability: Durability) {
        let dir = tempfile::tempdir_in(bench_dir()).unwrap();
        let mut writer = RecordWriter::create(&dir.path().join("events.jsonl"), durability).unwrap();
        let event = reply_event(1);
        bencher.bench_local(|| writer.append(divan::black_box(event.clone())).unwrap());
    }

    /// fdatasync after the line, as every real run does.
    #[divan::bench]
    fn synced(bencher: Bencher<'_, '_>) {
        bench_append(bencher, Durability::Synced);
    }

    /// The same line, left in the page cache.
    #[divan::bench]
    fn unsynced(bencher: Bencher<'_, '_>) {
        bench_append(bencher, Durability::Unsynced);
    }
}

/// Where the append benches write: `GAVEL_BENCH_DIR` (to measure another
/// disk), else the system's temporary folder.
fn bench_dir() -> std::path::PathBuf {
    std::env::var_os("GAVEL_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into)
}

/// Events of one review round of stage `write`: the builder's turn, three
/// reviewers, a synthesis, a command check and a kickback (18 events).
fn round_events(round: u32, out: &mut Vec<Event>) {
    let reviewers = ["claude", "codex", "gemini"];
    out.push(Event::StageStart(StageStart { stage: "write".to_owned(), round }));
    out.push(Event::SeatRequest(SeatRequest {
        key: key("write", round, "writer", RequestKind::Write),
        prompt_sha256: SHA.to_owned(),
        note: None,
    }));
    out.push(reply_event(round));
    out.push(Event::BuildDone(BuildDone {
        stage: "write".to_owned(),
        round,
        files: BTreeMap::from([("docs/retries.md".to_owned(), SHA.to_owned())]),
        missing: Vec::new(),
    }));
    let finding = |reviewer: &str, n: u32| Finding {
        id: format!("{reviewer}.{n}"),
        severity: Severity::ShouldFix,
        evidence: format!(
            "docs/retries.md:{}: the default for `max_retries` is stated twice with different values",
            10 + n
        ),
        fix: Some("Keep the table's value and drop the sentence.".to_owned()),
        raised_by: vec![reviewer.to_owned()],
        members: Vec::new(),
    };
    for (i, seat) in reviewers.iter().enumerate() {
        out.push(Event::SeatRequest(SeatRequest {
            key: key("write", round, seat, RequestKind::Review),
            prompt_sha256: SHA.to_owned(),
            note: None,
        }));
        out.push(Event::SeatReply(SeatReply {
            key: key("write", round, seat, RequestKind::Review),
            text: r#"{"decision":"revise","findings":[{"severity":"should-fix","evidence":"docs/retries.md:12: the default for max_retries is stated twice","fix":"Keep the table's value."}]}"#.to_owned(),
            usage: Usage { input_tokens: 3100, output_tokens: 180, cost_usd: 0.0094 },
            ms: 5120,
            session: None,
        }));
        out.push(Event::ReviewDecision(ReviewDecision {
            stage: "write".to_owned(),
            round,
            reviewer: format!("write-{}", i + 1),
            decision: ReviewOutcome::Revise,
            findings: vec![finding(&format!("write-{}", i + 1), 1)],
            attempt: 1,
            seat: (*seat).to_owned(),
            error: None,
        }));
    }
    out.push(Event::ReviewSynthesis(ReviewSynthesis {
        stage: "write".to_owned(),
        round,
        entries: vec![SynthesisEntry {
            result: VoteResult::Kept,
            finding: SynthesisFinding {
                finding: Finding {
                    id: "F1".to_owned(),
                    members: vec!["write-1.1".to_owned(), "write-2.1".to_owned()],
                    raised_by: vec!["write-1".to_owned(), "write-2".to_owned()],
                    ..finding("write-1", 1)
                },
                votes: vec![RecordedVote {
                    reviewer: "write-3".to_owned(),
                    vote: VoteKind::Agree,
                    reason: "Two values for one default will be misread.".to_owned(),
                    fix: None,
                }],
            },
        }],
        merge_failed: false,
        no_votes_from: Vec::new(),
        merge_error: None,
        vote_errors: BTreeMap::new(),
    }));
    out.push(Event::StageStart(StageStart { stage: "test".to_owned(), round }));
    out.push(Event::CheckRun(CheckRun {
        stage: "test".to_owned(),
        round,
        argv: Some(vec!["node".to_owned(), "--test".to_owned(), "test/double.test.mjs".to_owned()]),
        shell: None,
        exit: Some(1),
        timed_out: false,
        ms: 212,
        output_tail: "not ok 1 - doubles a number\n  expected: 4\n  actual: 5\n# pass 0\n# fail 1\n"
            .to_owned(),
        output_truncated: false,
        error: None,
        files: BTreeMap::new(),
        missing: Vec::new(),
    }));
    out.push(Event::Kickback(Kickback {
        from: "test".to_owned(),
        round,
        to: "write".to_owned(),
        reason: "stage `test`: `node --test test/double.test.mjs` exited 1".to_owned(),
        findings: vec![finding("test", 1)],
    }));
}

/// A realistic record of `events` events, serialised exactly as the writer
/// writes it (one JSON line per envelope).
fn record_bytes(events: usize) -> Vec<u8> {
    let mut list = vec![Event::RunStart(RunStart {
        run_id: "bench-20261130T000000Z".to_owned(),
        workflow: "bench".to_owned(),
        file: "/work/bench/workflow.toml".to_owned(),
        digest: SHA.to_owned(),
        workspace: "/work/bench".to_owned(),
        gavel: "0.1.0".to_owned(),
        record: "/work/bench/.gavel/runs/bench-20261130T000000Z/events.jsonl".to_owned(),
        allow_same_family: Vec::new(),
    })];
    let mut round = 1;
    while list.len() < events - 1 {
        round_events(round, &mut list);
        round += 1;
    }
    list.truncate(events - 1);
    list.push(Event::RunEnd(RunEnd {
        status: EndStatus::Pass,
        summary: "every stage passed (2 in all)".to_owned(),
        rounds: round * 2,
        usage: Usage { input_tokens: 1, output_tokens: 1, cost_usd: 0.0 },
    }));
    let start = jiff::Timestamp::from_second(1_795_000_000).unwrap();
    let mut bytes = Vec::new();
    for (i, event) in list.into_iter().enumerate() {
        let seq = i as u64 + 1;
        let at = start + jiff::SignedDuration::from_millis(i64::try_from(seq).unwrap() * 37);
        let envelope = Envelope { v: gavel_record::FORMAT_VERSION, seq, at, event };
        serde_json::to_writer(&mut bytes, &envelope).unwrap();
        bytes.push(b'\n');
    }
    bytes
}

const EVENTS: usize = 100_000;

#[divan::bench_group(sample_count = 10, sample_size = 1)]
mod replay_100k {
    use super::{Bencher, EVENTS, Path, RunState, parse_record, record_bytes};

    /// Read and fold: what `gavel status` does with a 100,000-event record.
    #[divan::bench]
    fn parse_and_fold(bencher: Bencher<'_, '_>) {
        let bytes = record_bytes(EVENTS);
        bencher.counter(divan::counter::BytesCount::new(bytes.len())).bench_local(|| {
            let recording = parse_record(Path::new("events.jsonl"), divan::black_box(&bytes)).unwrap();
            let state = RunState::fold(&recording.events);
            assert_eq!(state.events, EVENTS as u64);
            state
        });
    }

    /// Only the fold, over events already read.
    #[divan::bench]
    fn fold_only(bencher: Bencher<'_, '_>) {
        let recording = parse_record(Path::new("events.jsonl"), &record_bytes(EVENTS)).unwrap();
        bencher.bench_local(|| RunState::fold(divan::black_box(&recording.events)));
    }
}
