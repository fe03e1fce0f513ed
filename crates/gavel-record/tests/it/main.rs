//! The record's contract: what is written reads back whole; a torn tail is
//! cut with a warning; any other bad line is an error naming it; one process
//! at a time.

#![allow(clippy::unwrap_used, clippy::naive_bytecount)]

use std::path::Path;

use gavel_domain::{RequestKind, Usage};
use gavel_record::event::{
    BuildDone, EndStatus, RunEnd, RunStart, SeatKey, SeatReply, SeatRequest, StageStart,
};
use gavel_record::read::parse_record;
use gavel_record::write::Durability;
use gavel_record::{Event, RecordWriter, RunLock, RunState, RunStatus, WriteError, read_record};
use pretty_assertions::assert_eq;
use proptest::prelude::*;

mod round_trip;

fn key(attempt: u32) -> SeatKey {
    SeatKey { stage: "write".into(), round: 1, seat: "writer".into(), request: RequestKind::Write, attempt }
}

fn sample_events() -> Vec<Event> {
    vec![
        Event::RunStart(RunStart {
            run_id: "hello-1".into(),
            workflow: "hello".into(),
            file: "/w/workflow.toml".into(),
            digest: "ab".repeat(32),
            workspace: "/w".into(),
            gavel: "0.1.0".into(),
            record: "/w/.gavel/runs/hello-1/events.jsonl".into(),
            allow_same_family: vec![],
        }),
        Event::StageStart(StageStart { stage: "write".into(), round: 1 }),
        Event::SeatRequest(SeatRequest { key: key(1), prompt_sha256: "cd".repeat(32), note: None }),
        Event::SeatReply(SeatReply {
            key: key(1),
            text: "wrote {\"braces\"} and ünïcode\nover lines".into(),
            usage: Usage { input_tokens: 120, output_tokens: 40, cost_usd: 0.002 },
            ms: 12,
            session: Some("ses-1".into()),
        }),
        Event::BuildDone(BuildDone {
            stage: "write".into(),
            round: 1,
            files: [("welcome.md".to_owned(), "ef".repeat(32))].into_iter().collect(),
            missing: vec![],
        }),
        Event::RunEnd(RunEnd {
            status: EndStatus::Pass,
            summary: "every stage passed".into(),
            rounds: 1,
            usage: Usage { input_tokens: 120, output_tokens: 40, cost_usd: 0.002 },
        }),
    ]
}

fn write_sample(path: &Path) -> Vec<u8> {
    let mut writer = RecordWriter::create(path, Durability::Synced).unwrap();
    for event in sample_events() {
        writer.append(event).unwrap();
    }
    drop(writer);
    std::fs::read(path).unwrap()
}

#[test]
fn written_events_read_back_whole_with_contiguous_seq() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs/r/events.jsonl");
    let bytes = write_sample(&path);
    let recording = read_record(&path).unwrap();
    let events: Vec<Event> = recording.events.iter().map(|e| e.event.clone()).collect();
    assert_eq!(events, sample_events());
    let seqs: Vec<u64> = recording.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=6).collect::<Vec<_>>());
    assert_eq!(recording.torn, None);
    assert_eq!(recording.valid_len, bytes.len() as u64);
    // One event per line, each line a JSON object with the pinned envelope.
    let text = String::from_utf8(bytes).unwrap();
    for (i, line) in text.lines().enumerate() {
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["at", "data", "kind", "seq", "v"], "line {}", i + 1);
        assert_eq!(value["v"], 1);
    }
    assert!(text.contains(r#""kind":"seat:reply","data":{"stage":"write","round":1,"seat":"writer","request":"write","attempt":1"#), "{text}");
}

#[test]
fn a_torn_last_line_is_cut_and_reported_and_resume_truncates_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let bytes = write_sample(&path);
    let last_start = bytes[..bytes.len() - 1].iter().rposition(|&b| b == b'\n').unwrap() + 1;
    let cut = last_start + (bytes.len() - last_start) / 2;
    std::fs::write(&path, &bytes[..cut]).unwrap();

    let recording = read_record(&path).unwrap();
    assert_eq!(recording.events.len(), 5);
    let torn = recording.torn.clone().unwrap();
    assert_eq!(torn.line, 6);
    assert_eq!(torn.bytes, cut - last_start);
    assert!(torn.warning(&path).contains(":6: the last line is incomplete"));

    // Resuming cuts the torn bytes and goes on at seq 6.
    let lock = RunLock::acquire(&path).unwrap();
    let mut writer = RecordWriter::resume(&path, lock, &recording, Durability::Synced).unwrap();
    assert_eq!(writer.next_seq(), 6);
    writer.append(sample_events().pop().unwrap()).unwrap();
    drop(writer);
    let again = read_record(&path).unwrap();
    assert_eq!(again.torn, None);
    assert_eq!(again.events.len(), 6);
    let text = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(text.lines().count(), 6);
    assert!(text.ends_with('\n'));
}

#[test]
fn a_corrupt_middle_line_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let bytes = write_sample(&path);
    let text = String::from_utf8(bytes).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[2] = lines[2].replacen("\"seat\"", "\"se", 1);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let err = read_record(&path).unwrap_err().to_string();
    assert!(err.contains("events.jsonl:3:"), "{err}");
}

#[test]
fn bad_lines_say_what_is_wrong() {
    let p = Path::new("r.jsonl");
    let good =
        r#"{"v":1,"seq":1,"at":"2026-11-30T08:00:00Z","kind":"stage:start","data":{"stage":"s","round":1}}"#;
    let cases = [
        (format!("{good}\n\n"), "2: an empty line"),
        (
            format!("{good}\n{}\n", good.replace("\"seq\":1", "\"seq\":3")),
            "2: `seq` is 3 where 2 was expected",
        ),
        (good.replace("\"v\":1", "\"v\":2") + "\n", "1: record format version 2"),
        (good.replace("stage:start", "stage:begin") + "\n", "1: unknown event kind `stage:begin`"),
        (good.replace("\"round\":1", "\"round\":\"one\"") + "\n", "1: a malformed `stage:start` event"),
        ("not json\n".to_owned(), "1: not a JSON event"),
        (good.replace("\"v\":1,", "") + "\n", "1: the event has no `v`"),
    ];
    for (text, expected) in cases {
        let err = parse_record(p, text.as_bytes()).unwrap_err().to_string();
        assert!(err.contains(expected), "expected {expected:?} in {err:?}");
    }
}

#[test]
fn a_second_writer_is_refused_while_the_first_holds_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let first = RecordWriter::create(&path, Durability::Synced).unwrap();
    let second = RunLock::acquire(&path).unwrap_err().to_string();
    assert!(second.contains("is locked"), "{second}");
    assert!(second.contains(&format!("pid {}", std::process::id())), "{second}");
    drop(first);
    assert!(RunLock::acquire(&path).is_ok());
}

/// What `damage` does to the record between two appends, and the words
/// the writer's refusal must hold.
type Damage = (&'static str, fn(&Path), &'static str);

#[test]
fn a_record_changed_by_something_else_is_never_appended_to() {
    let cases: [Damage; 6] = [
        ("deleted", |p| std::fs::remove_file(p).unwrap(), "it was moved or deleted"),
        (
            "replaced by a rewritten copy",
            |p| {
                let bytes = std::fs::read(p).unwrap();
                let copy = p.with_extension("copy");
                std::fs::write(&copy, &bytes[..bytes.len() / 2]).unwrap();
                std::fs::rename(&copy, p).unwrap();
            },
            "it was replaced by another file",
        ),
        (
            "truncated in place",
            |p| std::fs::File::options().write(true).open(p).unwrap().set_len(10).unwrap(),
            "it is 10 bytes long, but gavel has written",
        ),
        (
            "appended to by another program",
            |p| {
                use std::io::Write as _;
                let mut f = std::fs::File::options().append(true).open(p).unwrap();
                f.write_all(b"{\"forged\":true}\n").unwrap();
            },
            "but gavel has written",
        ),
        ("emptied", |p| std::fs::write(p, "").unwrap(), "it is 0 bytes long, but gavel has written"),
        (
            "overwritten in place, same length",
            |p| {
                use std::io::{Seek as _, Write as _};
                use std::os::unix::fs::MetadataExt as _;
                let ctime = |p: &Path| {
                    let m = std::fs::metadata(p).unwrap();
                    (m.ctime(), m.ctime_nsec())
                };
                let before = ctime(p);
                // Forge a byte; repeat the same write until the clock the
                // file system stamps with has moved on (it may be coarse).
                while ctime(p) == before {
                    let mut f = std::fs::File::options().write(true).open(p).unwrap();
                    f.seek(std::io::SeekFrom::Start(2)).unwrap();
                    f.write_all(b"9").unwrap();
                }
            },
            "it was written",
        ),
    ];
    for (what, damage, words) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.jsonl");
        let mut writer = RecordWriter::create(&path, Durability::Synced).unwrap();
        let mut events = sample_events().into_iter();
        writer.append(events.next().unwrap()).unwrap();
        writer.append(events.next().unwrap()).unwrap();
        damage(&path);
        let after = std::fs::read(&path).ok();
        let err = writer.append(events.next().unwrap()).unwrap_err();
        let message = err.to_string();
        assert!(matches!(err, WriteError::Changed { .. }), "{what}: {err:?}");
        assert!(message.contains("was changed by something other than gavel"), "{what}: {message}");
        assert!(message.contains(words), "{what}: {message}");
        assert_eq!(std::fs::read(&path).ok(), after, "{what}: nothing was appended");
        // The writer stays stopped.
        assert!(writer.append(events.next().unwrap()).is_err(), "{what}");
    }
}

#[test]
fn a_resumed_writer_checks_the_record_it_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let mut writer = RecordWriter::create(&path, Durability::Synced).unwrap();
    let mut events = sample_events().into_iter();
    writer.append(events.next().unwrap()).unwrap();
    drop(writer);
    let lock = RunLock::acquire(&path).unwrap();
    let recording = read_record(&path).unwrap();
    let mut writer = RecordWriter::resume(&path, lock, &recording, Durability::Synced).unwrap();
    writer.append(events.next().unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    let err = writer.append(events.next().unwrap()).unwrap_err();
    assert!(matches!(err, WriteError::Changed { .. }), "{err:?}");
}

#[test]
fn a_new_run_never_appends_to_an_existing_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    write_sample(&path);
    assert!(matches!(RecordWriter::create(&path, Durability::Unsynced), Err(WriteError::Exists { .. })));
}

#[test]
fn the_fold_tracks_status_usage_and_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    write_sample(&path);
    let recording = read_record(&path).unwrap();
    let partial = RunState::fold(&recording.events[..3]);
    assert_eq!(partial.status, RunStatus::Running);
    assert_eq!(partial.in_flight.as_deref(), Some("write/writer/write"));
    assert_eq!((partial.stage.as_deref(), partial.round), (Some("write"), 1));
    let state = RunState::fold(&recording.events);
    assert_eq!(state.run_id, "hello-1");
    assert_eq!(state.status.word(), "pass");
    assert_eq!(state.usage, Usage { input_tokens: 120, output_tokens: 40, cost_usd: 0.002 });
    assert_eq!((state.rounds, state.requests, state.events, state.in_flight), (1, 1, 6, None));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Cutting a record anywhere leaves the whole lines before the cut, and a
    /// torn line exactly when the cut is inside one.
    #[test]
    fn any_cut_reads_as_the_whole_lines_before_it(cut_seed in 0usize..100_000) {
        static SAMPLE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        let bytes = SAMPLE.get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            write_sample(&dir.path().join("events.jsonl"))
        });
        let path = Path::new("events.jsonl");
        let cut = cut_seed % (bytes.len() + 1);
        let recording = parse_record(path, &bytes[..cut]).unwrap();
        let whole_lines = bytes[..cut].iter().filter(|&&b| b == b'\n').count();
        prop_assert_eq!(recording.events.len(), whole_lines);
        let at_boundary = cut == 0 || bytes[cut - 1] == b'\n';
        prop_assert_eq!(recording.torn.is_none(), at_boundary);
    }

    /// The reader never panics, whatever the bytes.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = parse_record(Path::new("x"), &bytes);
    }
}
