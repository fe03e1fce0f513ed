//! A damaged record: a torn last line is read around with one warning and
//! cut by resume; any other bad line is an error naming it, and nothing
//! touches the file.

use std::path::Path;

use pretty_assertions::assert_eq;

use crate::common::{
    HELLO_KINDS, assert_no_duplicate, assert_well_formed, events, gavel, hello, kinds, read_bytes,
    record_path, tempdir,
};

const TORN_WARNING: &str = "the last line is incomplete";

/// Runs hello to the end with run id `hello-1` and returns its record.
fn finished_hello(ws: &Path) -> std::path::PathBuf {
    gavel(args!["run", hello(), "--workspace", ws, "--run-id", "hello-1"]).expect_code(0);
    record_path(ws, "hello-1")
}

/// The record's lines, each with its newline.
fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.split_inclusive(|&b| b == b'\n').collect()
}

#[test]
fn a_torn_last_line_is_read_around_and_cut_by_resume() {
    let ws = tempdir();
    let record = finished_hello(ws.path());
    let whole = read_bytes(&record);
    let lines = lines(&whole);
    assert_eq!(lines.len(), HELLO_KINDS.len());
    // Keep the first half of the last line's bytes, no newline: a crash mid-write.
    let last = lines[lines.len() - 1];
    let kept = whole.len() - last.len() + last.len() / 2;
    std::fs::write(&record, &whole[..kept]).expect("tear the record");
    let torn = read_bytes(&record);

    for command in ["status", "log"] {
        let out = gavel(args![command, "hello-1", "--workspace", ws.path()]);
        out.expect_code(0);
        assert_eq!(out.stderr.matches(TORN_WARNING).count(), 1, "{command} stderr:\n{}", out.stderr);
        assert!(out.stderr.contains(&format!("events.jsonl:{}", lines.len())), "{}", out.stderr);
        assert_eq!(read_bytes(&record), torn, "`gavel {command}` changed the record");
    }
    let status = gavel(args!["status", "hello-1", "--workspace", ws.path(), "--json"]);
    status.expect_code(0);
    assert_eq!(status.stderr.matches(TORN_WARNING).count(), 1, "{}", status.stderr);
    let state = status.json();
    assert_eq!(state["events"], HELLO_KINDS.len() - 1);
    assert_eq!(state["torn_tail"], true);
    assert_eq!(read_bytes(&record), torn);
    let log = gavel(args!["log", "hello-1", "--workspace", ws.path()]);
    assert_eq!(log.stdout.lines().count(), HELLO_KINDS.len() - 1, "{}", log.stdout);
    assert!(log.stdout.contains("build:done"), "{}", log.stdout);

    let resumed = gavel(args!["resume", "hello-1", "--workspace", ws.path(), "--json"]);
    resumed.expect_code(0);
    assert_eq!(resumed.stderr.matches(TORN_WARNING).count(), 1, "{}", resumed.stderr);
    let outcome = resumed.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 3);
    assert_eq!(outcome["usage"]["input_tokens"], 2353);
    assert_eq!(outcome["usage"]["output_tokens"], 193);

    let after = read_bytes(&record);
    assert!(after.ends_with(b"\n"));
    assert!(after.starts_with(&whole[..whole.len() - last.len()]), "resume rewrote whole events");
    let events = events(&record);
    assert_well_formed(&events);
    let mut expected: Vec<&str> = HELLO_KINDS[..HELLO_KINDS.len() - 1].to_vec();
    expected.extend(["run:resume", "run:end"]);
    assert_eq!(kinds(&events), expected);
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass");
    assert_no_duplicate(&events, "seat:request");
    assert_no_duplicate(&events, "seat:reply");

    // Now whole again: no warning, and a resume of the ended run writes nothing.
    let status = gavel(args!["status", "hello-1", "--workspace", ws.path()]);
    status.expect_code(0);
    assert!(!status.stderr.contains(TORN_WARNING), "{}", status.stderr);
    let again = gavel(args!["resume", "hello-1", "--workspace", ws.path(), "--json"]);
    again.expect_code(0);
    assert_eq!(again.json()["status"], "pass");
    assert_eq!(read_bytes(&record), after, "resuming an ended run wrote to its record");
}

#[test]
fn a_run_cut_right_before_run_end_resumes_to_pass() {
    let ws = tempdir();
    let record = finished_hello(ws.path());
    let whole = read_bytes(&record);
    let last = lines(&whole).last().map_or(0, |l| l.len());
    std::fs::write(&record, &whole[..whole.len() - last]).expect("drop run:end");

    let status = gavel(args!["status", "hello-1", "--workspace", ws.path(), "--json"]);
    status.expect_code(0);
    assert_eq!(status.json()["status"]["state"], "running");
    assert!(!status.stderr.contains(TORN_WARNING), "{}", status.stderr);

    let resumed = gavel(args!["resume", "hello-1", "--workspace", ws.path(), "--json"]);
    resumed.expect_code(0);
    assert!(!resumed.stderr.contains(TORN_WARNING), "{}", resumed.stderr);
    let outcome = resumed.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 3);
    let events = events(&record);
    assert_well_formed(&events);
    assert_eq!(&kinds(&events)[HELLO_KINDS.len() - 1..], ["run:resume", "run:end"]);
    assert_eq!(events.iter().filter(|e| e["kind"] == "run:end").count(), 1);
    assert_eq!(events.last().expect("run:end")["data"]["usage"], outcome["usage"]);
}

#[test]
fn a_corrupt_middle_line_is_an_error_naming_it() {
    let ws = tempdir();
    let record = finished_hello(ws.path());
    let whole = read_bytes(&record);
    let mut corrupt: Vec<u8> = Vec::new();
    for (i, line) in lines(&whole).into_iter().enumerate() {
        if i == 2 {
            corrupt.extend_from_slice(b"this is not {an event\n");
        } else {
            corrupt.extend_from_slice(line);
        }
    }
    std::fs::write(&record, &corrupt).expect("corrupt line 3");

    for command in ["status", "log", "resume"] {
        let out = gavel(args![command, "hello-1", "--workspace", ws.path()]);
        out.expect_code(2);
        assert!(out.stderr.contains("events.jsonl:3"), "`gavel {command}` stderr:\n{}", out.stderr);
        assert!(!out.stderr.contains(TORN_WARNING), "{}", out.stderr);
        assert_eq!(read_bytes(&record), corrupt, "`gavel {command}` changed the record");
    }
    // By path too.
    let out = gavel(args!["status", record]);
    out.expect_code(2);
    assert!(out.stderr.contains("events.jsonl:3"), "{}", out.stderr);
}

#[test]
fn a_gap_in_seq_is_an_error_naming_the_line() {
    let ws = tempdir();
    let record = finished_hello(ws.path());
    let whole = read_bytes(&record);
    let dropped: Vec<u8> = lines(&whole)
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != 4)
        .flat_map(|(_, l)| l.to_vec())
        .collect();
    std::fs::write(&record, &dropped).expect("drop line 5");

    for command in ["status", "log", "resume"] {
        let out = gavel(args![command, "hello-1", "--workspace", ws.path()]);
        out.expect_code(2);
        assert!(out.stderr.contains("events.jsonl:5"), "`gavel {command}` stderr:\n{}", out.stderr);
        assert_eq!(read_bytes(&record), dropped, "`gavel {command}` changed the record");
    }
}
