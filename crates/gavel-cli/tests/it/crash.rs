//! Crash safety: every example is killed with SIGKILL right after each line
//! of its record (through the writer's fault-injection hook), then resumed.
//! The resumed run must reach the uninterrupted run's outcome, with `seq`
//! contiguous, no effect recorded twice and nothing lost.

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn gavel() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gavel"));
    cmd.env("NO_COLOR", "1").env_remove("GAVEL_CRASH_AFTER_SEQ");
    cmd
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name).join("workflow.toml")
}

fn example_file(name: &str, file: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name).join(file).display().to_string()
}

fn record_of(workspace: &Path, run_id: &str) -> Vec<Value> {
    let path = workspace.join(".gavel/runs").join(run_id).join("events.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.ends_with('\n'), "the record must end on a whole line");
    text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
}

/// The outcome without what differs between two runs of the same work.
fn comparable(mut outcome: Value) -> Value {
    let object = outcome.as_object_mut().unwrap();
    object.remove("run_id");
    object.remove("record");
    outcome
}

/// Each event's identity: its kind and the fields that key it. Session
/// markers (run:resume) are left out: they are what a crash adds.
fn identities(events: &[Value]) -> Vec<String> {
    let mut ids: Vec<String> = events
        .iter()
        .filter(|e| e["kind"] != "run:resume")
        .map(|e| {
            let d = &e["data"];
            let key = ["stage", "round", "seat", "request", "attempt", "reviewer", "from", "to"]
                .iter()
                .filter_map(|k| d.get(*k).map(|v| format!("{k}={v}")))
                .collect::<Vec<_>>()
                .join(",");
            format!("{} {key}", e["kind"].as_str().unwrap())
        })
        .collect();
    ids.sort();
    ids
}

fn run_json(cmd: &mut Command) -> (Option<i32>, Option<i32>, Value) {
    let output = cmd.output().unwrap();
    let json = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    (output.status.code(), output.status.signal(), json)
}

fn check_example(name: &str, extra: &[&str]) -> usize {
    let workflow = example(name);
    // Files named in the extra arguments live beside the example.
    let extra: Vec<String> = extra
        .iter()
        .map(|a| if *a == "approve.toml" { example_file(name, a) } else { (*a).to_owned() })
        .collect();
    let base = tempfile::tempdir().unwrap();
    let (code, _, expected) = run_json(
        gavel()
            .args(["-q", "run", "--json", "--run-id", "base", "--workspace"])
            .arg(base.path())
            .args(&extra)
            .arg(&workflow),
    );
    assert_eq!(code, Some(0), "{name}: the uninterrupted run passes");
    let base_events = record_of(base.path(), "base");
    let expected_ids = identities(&base_events);
    let lines = base_events.len();

    for cut in 1..=lines {
        let ws = tempfile::tempdir().unwrap();
        let (code, signal, _) = run_json(
            gavel()
                .env("GAVEL_CRASH_AFTER_SEQ", cut.to_string())
                .args(["-q", "run", "--json", "--run-id", "cut", "--workspace"])
                .arg(ws.path())
                .args(&extra)
                .arg(&workflow),
        );
        assert_eq!((code, signal), (None, Some(9)), "{name}: the run dies by SIGKILL after line {cut}");
        assert_eq!(record_of(ws.path(), "cut").len(), cut, "{name}: line {cut} is the last one written");

        let (code, _, outcome) = run_json(
            gavel().args(["-q", "resume", "--json", "cut", "--workspace"]).arg(ws.path()).args(&extra),
        );
        assert_eq!(code, Some(0), "{name}: resume after line {cut} passes");
        assert_eq!(
            comparable(outcome),
            comparable(expected.clone()),
            "{name}: same outcome after a cut at {cut}"
        );

        let events = record_of(ws.path(), "cut");
        let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert_eq!(
            seqs,
            (1..=events.len() as u64).collect::<Vec<_>>(),
            "{name}: seq contiguous after a cut at {cut}"
        );
        assert_eq!(identities(&events), expected_ids, "{name}: nothing doubled or lost after a cut at {cut}");
        let mut effects: BTreeMap<String, usize> = BTreeMap::new();
        for e in events.iter().filter(|e| e["kind"] == "seat:request" || e["kind"] == "check:run") {
            *effects.entry(e["data"].to_string()).or_default() += 1;
        }
        assert!(effects.values().all(|&n| n == 1), "{name}: an effect recorded twice after a cut at {cut}");
    }
    lines
}

#[test]
fn hello_survives_a_kill_at_every_record_line() {
    assert!(check_example("hello", &[]) >= 14);
}

#[test]
fn goal_check_survives_a_kill_at_every_record_line() {
    assert!(check_example("goal-check", &[]) >= 19);
}

#[test]
fn threshold_panel_survives_a_kill_at_every_record_line() {
    assert!(check_example("threshold-panel", &[]) >= 16);
}

#[test]
fn welcome_page_dag_survives_a_kill_at_every_record_line() {
    assert!(check_example("welcome-page-dag", &[]) >= 20);
}

#[test]
fn review_battery_survives_a_kill_at_every_record_line() {
    assert!(check_example("review-battery", &[]) >= 40);
}

#[test]
fn judge_stops_the_loop_survives_a_kill_at_every_record_line() {
    assert!(check_example("judge-stops-the-loop", &["--answers", "approve.toml"]) >= 20);
}
