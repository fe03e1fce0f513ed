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

/// A record that cannot grow (a full disk; here a file-size limit) fails the
/// run cleanly: exit 4, whole lines only, and once space is back the run
/// resumes to the uninterrupted outcome.
#[test]
fn a_full_disk_fails_the_run_cleanly_and_it_resumes_once_space_is_back() {
    let workflow = example("hello");
    let base = tempfile::tempdir().unwrap();
    let (code, _, expected) = run_json(
        gavel()
            .args(["-q", "run", "--json", "--run-id", "base", "--workspace"])
            .arg(base.path())
            .arg(&workflow),
    );
    assert_eq!(code, Some(0));
    let size = std::fs::metadata(base.path().join(".gavel/runs/base/events.jsonl")).unwrap().len();
    // Cut the record's room at a quarter, half and three quarters of what it needs.
    for limit in [size / 4, size / 2, size * 3 / 4] {
        let ws = tempfile::tempdir().unwrap();
        let output = Command::new("prlimit")
            .arg(format!("--fsize={limit}"))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_gavel"))
            .env("NO_COLOR", "1")
            .args(["-q", "run", "--json", "--run-id", "full", "--workspace"])
            .arg(ws.path())
            .arg(&workflow)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(4),
            "limit {limit}: exit 4 for a record that cannot grow: {stderr}"
        );
        assert!(stderr.contains("cannot write the record"), "limit {limit}: {stderr}");
        let path = ws.path().join(".gavel/runs/full/events.jsonl");
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() as u64 <= limit && bytes.ends_with(b"\n"), "limit {limit}: whole lines only");

        let (code, _, outcome) =
            run_json(gavel().args(["-q", "resume", "--json", "full", "--workspace"]).arg(ws.path()));
        assert_eq!(code, Some(0), "limit {limit}: resumes once space is back");
        assert_eq!(comparable(outcome), comparable(expected.clone()), "limit {limit}: same outcome");
        let events = record_of(ws.path(), "full");
        let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    }
}

/// Kills at pseudo-random moments, most of them inside a seat call or a
/// command run, then a resume: the same outcome, and a `run` stage that
/// completed (its `check:run` is recorded) never runs again — its side-effect
/// file has one line per recorded run, plus at most the one the kill cut short.
#[test]
fn a_kill_inside_a_seat_call_or_a_command_resumes_without_redoing_finished_steps() {
    let flow = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/crash/workflow.toml");
    let base = tempfile::tempdir().unwrap();
    let (code, _, expected) = run_json(
        gavel().args(["-q", "run", "--json", "--run-id", "base", "--workspace"]).arg(base.path()).arg(&flow),
    );
    assert_eq!(code, Some(0));
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for trial in 0..8 {
        // A small LCG: reproducible "random" kill times between 20 and 800 ms.
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let wait = std::time::Duration::from_millis(20 + (seed >> 33) % 780);
        let ws = tempfile::tempdir().unwrap();
        let mut child = gavel()
            .args(["-q", "run", "--json", "--run-id", "cut", "--workspace"])
            .arg(ws.path())
            .arg(&flow)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(wait);
        let _ = child.kill();
        let _ = child.wait();
        let record = ws.path().join(".gavel/runs/cut/events.jsonl");
        if !record.exists() {
            continue; // killed before the run began: nothing to resume
        }
        let (code, _, outcome) =
            run_json(gavel().args(["-q", "resume", "--json", "cut", "--workspace"]).arg(ws.path()));
        assert_eq!(code, Some(0), "trial {trial} (kill after {wait:?}): resume passes");
        assert_eq!(comparable(outcome), comparable(expected.clone()), "trial {trial}: same outcome");
        let events = record_of(ws.path(), "cut");
        let checks = events.iter().filter(|e| e["kind"] == "check:run").count();
        let runs =
            std::fs::read_to_string(ws.path().join("gate-runs.log")).unwrap_or_default().lines().count();
        assert!(
            runs == checks || runs == checks + 1,
            "trial {trial}: {runs} command runs for {checks} recorded"
        );
        let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    }
}
