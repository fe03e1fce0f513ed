//! One process per run: a second one is refused with "locked" and writes
//! nothing; a killed holder releases the run.

use pretty_assertions::assert_eq;

use crate::common::{
    assert_no_duplicate, assert_well_formed, events, fixture, gavel, kinds, poll_until, read_bytes,
    record_path, spawn_gavel, spawn_gavel_piped, tempdir,
};

/// Whether the record at `path` has a whole line of `kind`.
fn has_kind(path: &std::path::Path, kind: &str) -> bool {
    let needle = format!("\"kind\":\"{kind}\"");
    String::from_utf8_lossy(&read_bytes(path)).lines().any(|l| l.contains(&needle))
}

#[test]
fn a_second_process_is_refused_while_a_run_works_and_after_a_kill_one_resume_wins() {
    let ws = tempdir();
    let workflow = fixture("lock").join("workflow.toml");
    let record = record_path(ws.path(), "slow");

    // The builder sleeps 3 s in its seat: the run holds the lock meanwhile.
    let mut first = spawn_gavel(args!["run", workflow, "--workspace", ws.path(), "--run-id", "slow"]);
    poll_until("the run's seat:request", &mut first, || has_kind(&record, "seat:request"));
    let before = read_bytes(&record);

    let second = gavel(args!["resume", "slow", "--workspace", ws.path()]);
    let after = read_bytes(&record);
    second.expect_code(2);
    assert!(second.stderr.contains("locked"), "{}", second.stderr);
    assert_eq!(after, before, "the refused process changed the record");

    // A new run with the same id is refused too, as invalid input.
    let third = gavel(args!["run", workflow, "--workspace", ws.path(), "--run-id", "slow"]);
    assert_eq!(third.code, 2, "{}", third.stderr);
    assert!(third.stderr.contains("locked"), "{}", third.stderr);
    assert_eq!(read_bytes(&record), before);

    // `gavel status` sees a live run and does not disturb it.
    let status = gavel(args!["status", "slow", "--workspace", ws.path(), "--json"]);
    status.expect_code(0);
    let state = status.json();
    assert_eq!(state["status"]["state"], "running");
    assert_eq!(state["live"], true, "{state}");

    first.kill9();
    let killed = read_bytes(&record);
    assert!(killed.ends_with(b"\n"));
    assert!(!has_kind(&record, "seat:reply"), "the kill landed after the seat answered");
    let status = gavel(args!["status", "slow", "--workspace", ws.path(), "--json"]);
    assert_eq!(status.json()["live"], false, "a killed run must not look live");

    // Two resumes: the first takes the run (and sleeps in the seat again), the
    // second is refused.
    let mut resumer = spawn_gavel_piped(args!["resume", "slow", "--workspace", ws.path(), "--json"]);
    poll_until("the resume's run:resume", &mut resumer, || has_kind(&record, "run:resume"));
    let before = read_bytes(&record);
    let loser = gavel(args!["resume", "slow", "--workspace", ws.path(), "--json"]);
    let after = read_bytes(&record);
    loser.expect_code(2);
    assert!(loser.stderr.contains("locked"), "{}", loser.stderr);
    assert_eq!(loser.stdout, "");
    assert_eq!(after, before, "the refused resume changed the record");

    let winner = resumer.wait_out();
    winner.expect_code(0);
    assert_eq!(winner.json()["status"], "pass");

    let events = events(&record);
    assert_well_formed(&events);
    let kinds = kinds(&events);
    assert_eq!(kinds.iter().filter(|k| *k == "run:resume").count(), 1, "{kinds:?}");
    assert_eq!(
        kinds,
        ["run:start", "stage:start", "seat:request", "run:resume", "seat:reply", "build:done", "run:end"]
    );
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass");
    assert_no_duplicate(&events, "seat:request");
    assert_eq!(std::fs::read_to_string(ws.path().join("slow.md")).expect("slow.md"), "# Slow\n");
}

#[test]
fn a_new_run_on_a_locked_run_id_exits_2() {
    let ws = tempdir();
    let workflow = fixture("lock").join("workflow.toml");
    let record = record_path(ws.path(), "slow");
    let mut first = spawn_gavel(args!["run", workflow, "--workspace", ws.path(), "--run-id", "slow"]);
    poll_until("the run's seat:request", &mut first, || has_kind(&record, "seat:request"));
    let second = gavel(args!["run", workflow, "--workspace", ws.path(), "--run-id", "slow"]);
    first.kill9();
    second.expect_code(2);
    assert!(second.stderr.contains("locked"), "{}", second.stderr);
}
