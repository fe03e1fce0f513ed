//! Runs that do not simply pass: an engine error that pauses the run and a
//! resume that gets the answer; a stage that runs out of rounds; and what
//! `-q` leaves on stderr.

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::common::{
    HELLO_KINDS, assert_no_duplicate, assert_well_formed, events, fixture, gavel, hello, kinds, record_path,
    tempdir,
};

/// (kind, attempt) of each seat event, and the other kinds, in order.
fn trail(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let kind = e["kind"].as_str().unwrap_or_default();
            match e["data"]["attempt"].as_u64() {
                Some(attempt) => format!("{kind}#{attempt}"),
                None => kind.to_owned(),
            }
        })
        .collect()
}

#[test]
fn a_builder_engine_error_pauses_the_run_and_resume_gets_the_third_turn() {
    let ws = tempdir();
    let workflow = fixture("engine-error").join("workflow.toml");
    let run = gavel(args!["run", workflow, "--workspace", ws.path(), "--run-id", "flaky", "--json"]);
    run.expect_code(4);
    let outcome = run.json();
    assert_eq!(outcome["status"], "error");
    assert_eq!(outcome["waiting_for"], "seat writer");
    assert!(outcome["summary"].as_str().unwrap_or_default().contains("connection reset"), "{outcome}");
    assert!(!ws.path().join("notes.md").exists());

    let status = gavel(args!["status", "flaky", "--workspace", ws.path(), "--json"]);
    status.expect_code(0);
    let state = status.json();
    assert_eq!(state["status"]["state"], "paused", "{state}");
    let waiting = state["status"]["waiting_for"].as_str().unwrap_or_default();
    assert!(waiting.contains("writer"), "waiting_for does not name the seat: {waiting}");
    assert_eq!(state["seat_errors"], 2);
    let text = gavel(args!["status", "flaky", "--workspace", ws.path()]);
    assert!(text.stdout.contains("paused"), "{}", text.stdout);

    let resumed = gavel(args!["resume", "flaky", "--workspace", ws.path(), "--json"]);
    resumed.expect_code(0);
    let outcome = resumed.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 1);
    assert_eq!(outcome["usage"]["input_tokens"], 100);
    assert_eq!(std::fs::read_to_string(ws.path().join("notes.md")).expect("notes.md"), "# Notes\n");

    let record = record_path(ws.path(), "flaky");
    let events = events(&record);
    assert_well_formed(&events);
    assert_no_duplicate(&events, "seat:request");
    assert_eq!(
        trail(&events),
        [
            "run:start",
            "stage:start",
            "seat:request#1",
            "seat:error#1",
            "seat:request#2",
            "seat:error#2",
            "run:pause",
            "run:resume",
            "seat:request#3",
            "seat:reply#3",
            "build:done",
            "run:end",
        ]
    );
    for event in events.iter().filter(|e| e["kind"] == "seat:error") {
        assert_eq!(event["data"]["error"], "connection reset");
        assert_eq!(event["data"]["seat"], "writer");
    }
    let pause = events.iter().find(|e| e["kind"] == "run:pause").expect("run:pause");
    assert_eq!(pause["data"]["waiting_for"], "seat writer");
    let resume = events.iter().find(|e| e["kind"] == "run:resume").expect("run:resume");
    assert_eq!(resume["data"]["waiting_for"], "seat writer");
    let reply = events.iter().find(|e| e["kind"] == "seat:reply").expect("seat:reply");
    assert_eq!(reply["data"]["text"], "Wrote notes.md.");
}

#[test]
fn a_stage_out_of_rounds_with_a_missing_file_fails() {
    let ws = tempdir();
    let workflow = fixture("refine-missing").join("workflow.toml");
    let run = gavel(args!["run", workflow, "--workspace", ws.path(), "--run-id", "forgetful", "--json"]);
    run.expect_code(1);
    let outcome = run.json();
    assert_eq!(outcome["status"], "fail");
    assert_eq!(outcome["rounds"], 2);
    let summary = outcome["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("b.md"), "the summary does not name the missing file: {summary}");
    assert!(!summary.contains("a.md"), "the summary names a file that was written: {summary}");
    assert_eq!(outcome["stages"][0]["status"], "fail");
    assert_eq!(outcome["stages"][0]["rounds"], 2);

    let events = events(&record_path(ws.path(), "forgetful"));
    assert_well_formed(&events);
    let builds: Vec<&Value> = events.iter().filter(|e| e["kind"] == "build:done").collect();
    assert_eq!(builds.len(), 2);
    for (round, build) in (1..).zip(&builds) {
        assert_eq!(build["data"]["round"], round);
        assert_eq!(build["data"]["missing"], serde_json::json!(["b.md"]));
    }
    let end = events.last().expect("run:end");
    assert_eq!(end["kind"], "run:end");
    assert_eq!(end["data"]["status"], "fail");
    assert_eq!(end["data"]["rounds"], 2);
    assert_eq!(end["data"]["summary"], outcome["summary"]);

    // The second round was told what is missing: its prompt differs.
    let prompts: Vec<&Value> =
        events.iter().filter(|e| e["kind"] == "seat:request").map(|e| &e["data"]["prompt_sha256"]).collect();
    assert_eq!(prompts.len(), 2);
    assert_ne!(prompts[0], prompts[1], "round 2's prompt carries no feedback");

    // A failed run stays failed: resume reports it and writes nothing.
    let path = record_path(ws.path(), "forgetful");
    let bytes = std::fs::read(&path).expect("record");
    let resumed = gavel(args!["resume", "forgetful", "--workspace", ws.path(), "--json"]);
    resumed.expect_code(1);
    assert_eq!(resumed.json()["status"], "fail");
    assert_eq!(std::fs::read(&path).expect("record"), bytes);
}

#[test]
fn quiet_prints_nothing_on_stderr_for_a_passing_run() {
    let ws = tempdir();
    let out = gavel(args!["-q", "run", hello(), "--workspace", ws.path()]);
    out.expect_code(0);
    assert_eq!(out.stderr, "");
    assert_eq!(out.stdout, "");
    let out = gavel(args!["run", "-q", hello(), "--workspace", ws.path(), "--json"]);
    out.expect_code(0);
    assert_eq!(out.stderr, "");
    assert_eq!(out.json()["status"], "pass");
    let out = gavel(args!["check", "-q", hello()]);
    out.expect_code(0);
    assert_eq!(out.stderr, "");
}

#[test]
fn without_quiet_stderr_has_one_line_per_event() {
    let ws = tempdir();
    let out = gavel(args!["run", hello(), "--workspace", ws.path(), "--run-id", "loud"]);
    out.expect_code(0);
    assert_eq!(out.stdout, "", "progress goes to stderr");
    let progress: Vec<&str> = out.stderr.lines().filter(|l| l.starts_with('[')).collect();
    let events = events(&record_path(ws.path(), "loud"));
    assert_eq!(progress.len(), events.len(), "stderr:\n{}", out.stderr);
    for (line, kind) in progress.iter().zip(kinds(&events)) {
        let shown = line.split_once(']').map(|(_, rest)| rest.split_whitespace().next()).unwrap_or_default();
        assert_eq!(shown, Some(kind.as_str()), "{line}");
    }
    assert_eq!(kinds(&events), HELLO_KINDS);
    // Then the summary: the status word first.
    let summary: Vec<&str> = out.stderr.lines().filter(|l| !l.starts_with('[')).collect();
    assert!(summary.first().is_some_and(|l| l.starts_with("pass")), "{}", out.stderr);
    assert!(summary.iter().any(|l| l.contains("record ")), "{}", out.stderr);
    assert!(!out.stderr.contains('\x1b'), "NO_COLOR is set, yet stderr has colour codes");
}

#[test]
fn an_engine_error_run_cut_after_its_first_error_counts_its_turns_from_the_record() {
    let ws = tempdir();
    let workflow = fixture("engine-error").join("workflow.toml");
    gavel(args!["run", workflow, "--workspace", ws.path(), "--run-id", "flaky"]).expect_code(4);
    // As if killed right after the first seat:error was recorded.
    let record = record_path(ws.path(), "flaky");
    let text = std::fs::read_to_string(&record).expect("record");
    let kept: String = text.split_inclusive('\n').take(4).collect();
    assert!(kept.lines().last().is_some_and(|l| l.contains("\"seat:error\"")), "{kept}");
    std::fs::write(&record, &kept).expect("cut the record");

    // The resume asks attempt 2, which gets the script's second turn: the
    // same failure an uninterrupted run had, so the run pauses again.
    let resumed = gavel(args!["resume", "flaky", "--workspace", ws.path(), "--json"]);
    resumed.expect_code(4);
    assert_eq!(resumed.json()["waiting_for"], "seat writer");
    let resumed = gavel(args!["resume", "flaky", "--workspace", ws.path(), "--json"]);
    resumed.expect_code(0);
    assert_eq!(resumed.json()["status"], "pass");

    let events = events(&record);
    assert_well_formed(&events);
    assert_no_duplicate(&events, "seat:request");
    assert_eq!(
        trail(&events),
        [
            "run:start",
            "stage:start",
            "seat:request#1",
            "seat:error#1",
            "run:resume",
            "seat:request#2",
            "seat:error#2",
            "run:pause",
            "run:resume",
            "seat:request#3",
            "seat:reply#3",
            "build:done",
            "run:end",
        ]
    );
}
