//! The writer never writes what the reader rejects: for every value of every
//! event kind, an event the real writer accepts is read back by the real
//! reader as the same value, whole; an event it refuses (a number that is
//! not finite) leaves no byte behind, never a `null`.
//!
//! The strategies build every field of every kind with struct literals, so
//! a field added to an event without a strategy here does not compile.

use std::collections::BTreeMap;

use gavel_domain::protocol::{JudgeAct, RequirementVerdict, Verdict, VoteKind};
use gavel_domain::{RequestKind, Severity, Usage};
use gavel_record::event::{
    Approval, ApprovalRequest, BuildDone, CheckRun, EndStatus, Finding, GoalCheck, JobDone, Kickback,
    RecordedJudgement, RecordedVote, RefineJudge, ReviewDecision, ReviewOutcome, ReviewSynthesis, Route,
    RunEnd, RunPause, RunResume, RunStart, SeatError, SeatKey, SeatReply, SeatRequest, StageStart,
    SynthesisEntry, SynthesisFinding, VoteResult,
};
use gavel_record::write::Durability;
use gavel_record::{Envelope, Event, RecordWriter, WriteError, read_record};
use jiff::Timestamp;
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::Value;

/// Any text: every `char` (controls, quotes, backslashes, line and
/// paragraph separators, astral planes), with the awkward ones often.
fn text() -> impl Strategy<Value = String> {
    let awkward = select(vec![
        '\0',
        '\n',
        '\r',
        '\t',
        '"',
        '\\',
        '\u{1b}',
        '\u{7f}',
        '\u{85}',
        '\u{2028}',
        '\u{2029}',
        '\u{feff}',
        '\u{10ffff}',
        'é',
        '€',
        '🦀',
    ]);
    vec(prop_oneof![3 => any::<char>(), 1 => awkward], 0..12).prop_map(String::from_iter)
}

/// Any `f64`: normal, subnormal, zeros, extremes, and the non-finite ones
/// the writer must refuse.
fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => any::<f64>(),
        1 => select(vec![
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            5e-324,
            -0.0,
            1e308,
        ]),
    ]
}

/// Counts, with the extremes often.
fn count() -> impl Strategy<Value = u64> {
    prop_oneof![3 => any::<u64>(), 1 => select(vec![0, 1, u64::MAX, u64::MAX - 1, 1 << 53, (1 << 53) + 1])]
}

fn small() -> impl Strategy<Value = u32> {
    prop_oneof![3 => 0u32..5, 1 => any::<u32>()]
}

fn timestamp() -> impl Strategy<Value = Timestamp> {
    let (min, max) = (Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
    (min..=max, 0i32..1_000_000_000).prop_map(|(s, ns)| {
        Timestamp::new(s, ns).unwrap_or_else(|_| Timestamp::from_second(s).unwrap_or(Timestamp::UNIX_EPOCH))
    })
}

fn usage() -> impl Strategy<Value = Usage> {
    (count(), count(), number()).prop_map(|(input_tokens, output_tokens, cost_usd)| Usage {
        input_tokens,
        output_tokens,
        cost_usd,
    })
}

fn key() -> impl Strategy<Value = SeatKey> {
    (text(), small(), text(), select(RequestKind::ALL.to_vec()), small())
        .prop_map(|(stage, round, seat, request, attempt)| SeatKey { stage, round, seat, request, attempt })
}

fn severity() -> impl Strategy<Value = Severity> {
    select(Severity::ALL.to_vec())
}

fn finding() -> impl Strategy<Value = Finding> {
    (text(), severity(), text(), option::of(text()), vec(text(), 0..3), vec(text(), 0..3)).prop_map(
        |(id, severity, evidence, fix, raised_by, members)| Finding {
            id,
            severity,
            evidence,
            fix,
            raised_by,
            members,
        },
    )
}

fn files() -> impl Strategy<Value = BTreeMap<String, String>> {
    btree_map(text(), text(), 0..4)
}

/// Any JSON value (a judge's answers): numbers are what JSON can carry.
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        number().prop_filter_map("JSON numbers are finite", |n| serde_json::Number::from_f64(n)
            .map(Value::Number)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(Value::Array),
            btree_map(text(), inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn run_start() -> impl Strategy<Value = Event> {
    (text(), text(), text(), text(), text(), text(), text(), vec(text(), 0..3)).prop_map(
        |(run_id, workflow, file, digest, workspace, gavel, record, allow_same_family)| {
            Event::RunStart(RunStart {
                run_id,
                workflow,
                file,
                digest,
                workspace,
                gavel,
                record,
                allow_same_family,
            })
        },
    )
}

fn check_run() -> impl Strategy<Value = Event> {
    (
        (text(), small()),
        option::of(vec(text(), 0..4)),
        option::of(text()),
        option::of(any::<i32>()),
        any::<bool>(),
        count(),
        text(),
        option::of(text()),
        any::<bool>(),
        files(),
        vec(text(), 0..3),
    )
        .prop_map(
            |(
                (stage, round),
                argv,
                shell,
                exit,
                timed_out,
                ms,
                output_tail,
                error,
                output_truncated,
                files,
                missing,
            )| {
                Event::CheckRun(CheckRun {
                    stage,
                    round,
                    argv,
                    shell,
                    exit,
                    timed_out,
                    ms,
                    output_tail,
                    error,
                    output_truncated,
                    files,
                    missing,
                })
            },
        )
}

fn synthesis() -> impl Strategy<Value = Event> {
    let vote = (text(), select(VoteKind::ALL.to_vec()), text(), option::of(text()))
        .prop_map(|(reviewer, vote, reason, fix)| RecordedVote { reviewer, vote, reason, fix });
    let result =
        select(vec![VoteResult::Kept, VoteResult::BetterFix, VoteResult::Disputed, VoteResult::Dropped]);
    let entry = (result, finding(), vec(vote, 0..3)).prop_map(|(result, finding, votes)| SynthesisEntry {
        result,
        finding: SynthesisFinding { finding, votes },
    });
    (
        text(),
        small(),
        vec(entry, 0..3),
        any::<bool>(),
        vec(text(), 0..3),
        option::of(text()),
        btree_map(text(), text(), 0..3),
    )
        .prop_map(|(stage, round, entries, merge_failed, no_votes_from, merge_error, vote_errors)| {
            Event::ReviewSynthesis(ReviewSynthesis {
                stage,
                round,
                entries,
                merge_failed,
                no_votes_from,
                merge_error,
                vote_errors,
            })
        })
}

fn refine_judge() -> impl Strategy<Value = Event> {
    let judgement = (text(), select(JudgeAct::ALL.to_vec()), text())
        .prop_map(|(finding, decision, reason)| RecordedJudgement { finding, decision, reason });
    (
        text(),
        small(),
        select(vec![Route::Again, Route::Pass, Route::Fail]),
        text(),
        btree_map(text(), json(), 0..4),
        vec(judgement, 0..3),
        option::of(text()),
    )
        .prop_map(|(stage, round, route, reason, answers, findings, error)| {
            Event::RefineJudge(RefineJudge { stage, round, route, reason, answers, findings, error })
        })
}

/// Every kind of event, each field from its strategy.
fn event() -> impl Strategy<Value = Event> {
    let outcome = select(vec![ReviewOutcome::Pass, ReviewOutcome::Revise, ReviewOutcome::Error]);
    let requirement = (text(), select(Verdict::ALL.to_vec()), text())
        .prop_map(|(requirement, verdict, evidence)| RequirementVerdict { requirement, verdict, evidence });
    prop_oneof![
        run_start(),
        (text(), small()).prop_map(|(stage, round)| Event::StageStart(StageStart { stage, round })),
        (key(), text(), option::of(text())).prop_map(|(key, prompt_sha256, note)| Event::SeatRequest(
            SeatRequest { key, prompt_sha256, note }
        )),
        (key(), text(), usage(), count(), option::of(text())).prop_map(|(key, text, usage, ms, session)| {
            Event::SeatReply(SeatReply { key, text, usage, ms, session })
        }),
        (key(), text(), count()).prop_map(|(key, error, ms)| Event::SeatError(SeatError { key, error, ms })),
        (text(), small(), files(), vec(text(), 0..3)).prop_map(|(stage, round, files, missing)| {
            Event::BuildDone(BuildDone { stage, round, files, missing })
        }),
        check_run(),
        (text(), small(), text(), text(), option::of(text()), vec(finding(), 0..3), count()).prop_map(
            |(stage, round, status, summary, to, findings, ms)| {
                Event::JobDone(JobDone { stage, round, status, summary, to, findings, ms })
            }
        ),
        (text(), small(), vec(requirement, 0..3)).prop_map(|(stage, round, requirements)| {
            Event::GoalCheck(GoalCheck { stage, round, requirements })
        }),
        (text(), small(), text(), outcome, vec(finding(), 0..3), small(), text(), option::of(text()))
            .prop_map(|(stage, round, reviewer, decision, findings, attempt, seat, error)| {
                Event::ReviewDecision(ReviewDecision {
                    stage,
                    round,
                    reviewer,
                    decision,
                    findings,
                    attempt,
                    seat,
                    error,
                })
            }),
        synthesis(),
        refine_judge(),
        (text(), small(), text(), text(), vec(finding(), 0..3)).prop_map(
            |(from, round, to, reason, findings)| {
                Event::Kickback(Kickback { from, round, to, reason, findings })
            }
        ),
        (text(), small(), files(), option::of(text())).prop_map(|(stage, round, files, reason)| {
            Event::ApprovalRequest(ApprovalRequest { stage, round, files, reason })
        }),
        (text(), small(), files(), any::<bool>(), text(), text()).prop_map(
            |(stage, round, files, approved, by, reason)| {
                Event::Approval(Approval { stage, round, files, approved, by, reason })
            }
        ),
        (text(), text()).prop_map(|(reason, waiting_for)| Event::RunPause(RunPause { reason, waiting_for })),
        (text(), text(), option::of(number()), text()).prop_map(
            |(reason, waiting_for, max_cost_usd, workspace)| {
                Event::RunResume(RunResume { reason, waiting_for, max_cost_usd, workspace })
            }
        ),
        (select(vec![EndStatus::Pass, EndStatus::Fail]), text(), small(), usage()).prop_map(
            |(status, summary, rounds, usage)| Event::RunEnd(RunEnd { status, summary, rounds, usage })
        ),
    ]
}

/// Whether an event holds a number JSON cannot carry.
fn holds_a_non_finite_number(event: &Event) -> bool {
    let bad = |n: f64| !n.is_finite();
    match event {
        Event::SeatReply(reply) => bad(reply.usage.cost_usd),
        Event::RunEnd(end) => bad(end.usage.cost_usd),
        Event::RunResume(resume) => resume.max_cost_usd.is_some_and(bad),
        _ => false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Through the real writer to a file, back through the real reader: the
    /// same envelopes, whole; a refused event leaves the file as it was and
    /// the writer still usable.
    #[test]
    fn what_the_writer_accepts_the_reader_reads_back_the_same(
        events in vec((event(), timestamp()), 1..8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut writer = RecordWriter::create(&path, Durability::Unsynced).unwrap();
        let mut written: Vec<Envelope> = Vec::new();
        for (event, at) in events {
            let before = std::fs::read(&path).unwrap();
            let refuse = holds_a_non_finite_number(&event);
            match writer.append_at(event.clone(), at) {
                Ok(envelope) => {
                    prop_assert!(!refuse, "a non-finite number was written: {event:?}");
                    prop_assert_eq!(&envelope.event, &event);
                    written.push(envelope);
                }
                Err(WriteError::Unwritable { kind, message, .. }) => {
                    prop_assert!(refuse, "refused a writable event ({message}): {event:?}");
                    prop_assert_eq!(kind, event.kind());
                    prop_assert!(message.contains("not finite"), "{}", message);
                    prop_assert_eq!(std::fs::read(&path).unwrap(), before, "a refused event left bytes behind");
                }
                Err(other) => prop_assert!(false, "unexpected write error {other}"),
            }
        }
        drop(writer);
        let recording = read_record(&path).unwrap();
        prop_assert_eq!(recording.torn, None);
        prop_assert_eq!(recording.events, written);
    }
}

/// The shapes the issue names, one by one: `inf`, `nan`, `-inf` are refused
/// with the kind named; `1e308 + 1e308` never reaches the record as `inf`
/// because sums saturate, and the saturated figure reads back.
#[test]
#[allow(clippy::float_cmp)] // saturation lands on f64::MAX itself
fn named_shapes_of_bad_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let mut writer = RecordWriter::create(&path, Durability::Unsynced).unwrap();
    let reply = |cost_usd: f64| {
        Event::SeatReply(SeatReply {
            key: SeatKey {
                stage: "s".into(),
                round: 1,
                seat: "w".into(),
                request: RequestKind::Write,
                attempt: 1,
            },
            text: "ok".into(),
            usage: Usage { input_tokens: 1, output_tokens: 1, cost_usd },
            ms: 1,
            session: None,
        })
    };
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let err = writer.append(reply(bad)).unwrap_err();
        assert!(matches!(&err, WriteError::Unwritable { kind, .. } if kind == "seat:reply"), "{err}");
        assert!(err.to_string().contains("not finite"), "{err}");
    }
    let err = writer
        .append(Event::RunResume(RunResume {
            reason: "r".into(),
            waiting_for: String::new(),
            max_cost_usd: Some(f64::NAN),
            workspace: String::new(),
        }))
        .unwrap_err();
    assert!(matches!(err, WriteError::Unwritable { .. }), "{err}");
    let mut total = Usage::default();
    total.add(Usage { cost_usd: 1e308, ..Usage::default() });
    total.add(Usage { cost_usd: 1e308, ..Usage::default() });
    writer.append(reply(1e308)).unwrap();
    writer
        .append(Event::RunEnd(RunEnd {
            status: EndStatus::Fail,
            summary: "s".into(),
            rounds: 1,
            usage: total,
        }))
        .unwrap();
    drop(writer);
    let recording = read_record(&path).unwrap();
    assert_eq!(recording.events.len(), 2);
    let Event::RunEnd(end) = &recording.events[1].event else { panic!("run:end") };
    assert_eq!(end.usage.cost_usd, f64::MAX);
    assert!(!std::fs::read_to_string(&path).unwrap().contains("null"));
}
