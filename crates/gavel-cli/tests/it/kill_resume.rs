//! Kill -9 at any point, then resume: the same outcome as an uninterrupted
//! run, nothing recorded twice, nothing lost.

use std::io::Write as _;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::common::{
    HELLO_KINDS, Out, assert_no_duplicate, assert_well_formed, events, fixture, gavel, poll_until,
    record_path, spawn_gavel, tempdir, whole_lines,
};

/// The parts of an outcome an interruption must not change.
fn essence(outcome: &Value) -> Value {
    serde_json::json!({
        "status": outcome["status"],
        "summary": outcome["summary"],
        "rounds": outcome["rounds"],
        "usage": outcome["usage"],
        "stages": outcome["stages"],
    })
}

/// Checks a finished record and workspace against the uninterrupted run.
#[track_caller]
fn assert_same_as_uninterrupted(label: &str, ws: &Path, record: &Path, resumed: &Out, reference: &Value) {
    resumed.expect_code(0);
    assert_eq!(essence(&resumed.json()), essence(reference), "{label}: the outcome differs");
    let events = events(record);
    assert_well_formed(&events);
    assert_no_duplicate(&events, "seat:request");
    assert_no_duplicate(&events, "seat:reply");
    let ends: Vec<&Value> = events.iter().filter(|e| e["kind"] == "run:end").collect();
    assert_eq!(ends.len(), 1, "{label}: run:end recorded {} times", ends.len());
    assert_eq!(ends[0]["data"]["status"], "pass", "{label}");
    assert_eq!(ends[0]["data"]["rounds"], reference["rounds"], "{label}");
    assert_eq!(ends[0]["data"]["usage"], reference["usage"], "{label}");
    assert_eq!(events.last(), Some(ends[0]), "{label}: events after run:end");
    // Every seat request has exactly one result, and every effect of the
    // uninterrupted run is there.
    let replies = events.iter().filter(|e| e["kind"] == "seat:reply").count();
    assert_eq!(replies, 3, "{label}: every builder turn answered once");
    let requests = events.iter().filter(|e| e["kind"] == "seat:request").count();
    assert_eq!(requests, 3, "{label}");
    let builds = events.iter().filter(|e| e["kind"] == "build:done").count();
    assert_eq!(builds, 3, "{label}");
    for file in ["welcome.md", "hours.md", "faq.md"] {
        assert!(ws.join(file).is_file(), "{label}: {file} is missing");
    }
}

/// Starts hello-slow, kills it once its record has `k` whole lines (for odd
/// `k`, leaves a torn line after them as a crash mid-write would), resumes.
fn kill_after_line(k: usize, reference: &Value) {
    let label = format!("killed after line {k}");
    let ws = tempdir();
    let workflow = fixture("hello-slow").join("workflow.toml");
    let record = record_path(ws.path(), "slow");
    let mut child = spawn_gavel(args!["run", workflow, "--workspace", ws.path(), "--run-id", "slow"]);
    poll_until(&format!("line {k} of the record"), &mut child, || whole_lines(&record) >= k);
    child.kill9();
    let lines = whole_lines(&record);
    assert!(lines >= k, "{label}");
    // Every other time, the crash also left half a line behind.
    let torn = k % 2 == 1;
    if torn {
        let mut file = std::fs::OpenOptions::new().append(true).open(&record).expect("open the record");
        write!(file, "{{\"v\":1,\"seq\":{},\"at\":\"2026-11-30T08:", lines + 1).expect("tear it");
    }

    let resumed = gavel(args!["resume", "slow", "--workspace", ws.path(), "--json"]);
    let warnings = resumed.stderr.matches("the last line is incomplete").count();
    assert_eq!(warnings, usize::from(torn), "{label}: torn-line warnings in\n{}", resumed.stderr);
    assert_same_as_uninterrupted(&label, ws.path(), &record, &resumed, reference);
}

/// The outcome of hello-slow run without interruption.
fn uninterrupted() -> Value {
    let ws = tempdir();
    let workflow = fixture("hello-slow").join("workflow.toml");
    let reference = gavel(args!["run", workflow, "--workspace", ws.path(), "--json"]);
    reference.expect_code(0);
    let reference = reference.json();
    assert_eq!(reference["status"], "pass");
    assert_eq!(reference["rounds"], 3);
    assert_eq!(reference["usage"]["input_tokens"], 2353);
    assert_eq!(reference["usage"]["output_tokens"], 193);
    reference
}

#[test]
fn a_run_killed_at_any_line_resumes_to_the_same_outcome() {
    let reference = uninterrupted();

    // Every cut point at once: the seats mostly sleep, so this is cheap.
    std::thread::scope(|scope| {
        for k in 1..=HELLO_KINDS.len() {
            let reference = &reference;
            std::thread::Builder::new()
                .name(format!("kill-after-{k}"))
                .spawn_scoped(scope, move || kill_after_line(k, reference))
                .expect("a thread");
        }
    });
}

#[test]
fn a_resume_killed_in_turn_resumes_again() {
    let reference = uninterrupted();
    let ws = tempdir();
    let workflow = fixture("hello-slow").join("workflow.toml");
    let record = record_path(ws.path(), "slow");

    // Killed while the first builder turn sleeps.
    let mut run = spawn_gavel(args!["run", workflow, "--workspace", ws.path(), "--run-id", "slow"]);
    poll_until("the first seat:request", &mut run, || whole_lines(&record) >= 3);
    run.kill9();
    // The resume is killed in the second round's builder turn.
    let mut resume = spawn_gavel(args!["resume", "slow", "--workspace", ws.path()]);
    let second_request = |path: &Path| {
        events_so_far(path).iter().any(|e| e["kind"] == "seat:request" && e["data"]["round"] == 2)
    };
    poll_until("round 2's seat:request", &mut resume, || second_request(&record));
    resume.kill9();

    let resumed = gavel(args!["resume", "slow", "--workspace", ws.path(), "--json"]);
    assert_same_as_uninterrupted("killed twice", ws.path(), &record, &resumed, &reference);
    let events = events(&record);
    let taken_up = events.iter().filter(|e| e["kind"] == "run:resume").count();
    assert_eq!(taken_up, 2, "every resume is recorded, the killed one too");
    let status = gavel(args!["status", "slow", "--workspace", ws.path(), "--json"]);
    assert_eq!(status.json()["resumes"], taken_up);
}

/// Whole lines of a record being written, parsed (a line still being
/// written is skipped).
fn events_so_far(path: &Path) -> Vec<Value> {
    let bytes = crate::common::read_bytes(path);
    let text = String::from_utf8_lossy(&bytes);
    let whole = text.rfind('\n').map_or("", |i| &text[..i]);
    whole.lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}
