//! Run ids and record paths: `--run-id`, `--record`, and finding a run again.

use pretty_assertions::assert_eq;

use crate::common::{
    HELLO_KINDS, assert_well_formed, copy_dir, events, gavel, gavel_in, hello, kinds, read_bytes,
    record_path, tempdir,
};

#[test]
fn run_id_is_used_and_a_second_run_with_it_is_refused() {
    let ws = tempdir();
    let first = gavel(args!["run", hello(), "--workspace", ws.path(), "--run-id", "same", "--json"]);
    first.expect_code(0);
    let outcome = first.json();
    assert_eq!(outcome["run_id"], "same");
    let record = record_path(ws.path(), "same");
    assert_eq!(outcome["record"], record.display().to_string());
    let events = events(&record);
    assert_eq!(events[0]["data"]["run_id"], "same");
    let bytes = read_bytes(&record);

    let second = gavel(args!["run", hello(), "--workspace", ws.path(), "--run-id", "same", "--json"]);
    assert_eq!(second.code, 2, "{}", second.stderr);
    assert!(second.stderr.contains("already holds a record"), "{}", second.stderr);
    assert_eq!(second.stdout, "");
    assert_eq!(read_bytes(&record), bytes, "the first record changed");
}

#[test]
fn a_second_run_with_the_same_id_exits_2() {
    let ws = tempdir();
    gavel(args!["run", hello(), "--workspace", ws.path(), "--run-id", "same"]).expect_code(0);
    let second = gavel(args!["run", hello(), "--workspace", ws.path(), "--run-id", "same"]);
    second.expect_code(2);
    assert!(second.stderr.contains("already holds a record"), "{}", second.stderr);
}

#[test]
fn a_workspace_that_is_not_a_folder_is_refused() {
    let dir = tempdir();
    let missing = dir.path().join("no-such-folder");
    let out = gavel(args!["run", hello(), "--workspace", missing, "--run-id", "x"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("no-such-folder"), "{}", out.stderr);
    assert!(!missing.exists(), "the workspace was created");
    assert!(std::fs::read_dir(dir.path()).expect("dir").next().is_none());
}

#[test]
fn unusable_run_ids_are_refused_before_anything_is_recorded() {
    let ws = tempdir();
    for id in ["../escape", ".hidden", "a b", ""] {
        let out = gavel(args!["run", hello(), "--workspace", ws.path(), "--run-id", id]);
        assert_eq!(out.code, 2, "run id {id:?}: {}", out.stderr);
        assert!(out.stderr.contains("run id"), "{}", out.stderr);
    }
    assert!(std::fs::read_dir(ws.path()).expect("ws").next().is_none(), "something was written");
}

#[test]
fn record_writes_where_it_is_told_and_status_and_log_take_a_path() {
    let ws = tempdir();
    let elsewhere = tempdir();
    let path = elsewhere.path().join("records/hello.jsonl");
    let out = gavel(args!["run", hello(), "--workspace", ws.path(), "--record", path, "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["record"], path.display().to_string());
    assert!(!ws.path().join(".gavel/runs").exists(), "the default record was written as well");
    let events = events(&path);
    assert_well_formed(&events);
    assert_eq!(kinds(&events), HELLO_KINDS);

    // From any folder, by path.
    let status = gavel_in(elsewhere.path(), args!["status", path, "--json"]);
    status.expect_code(0);
    let state = status.json();
    assert_eq!(state["status"]["state"], "ended");
    assert_eq!(state["status"]["status"], "pass");
    assert_eq!(state["events"], HELLO_KINDS.len());
    let status = gavel_in(elsewhere.path(), args!["status", "records/hello.jsonl"]);
    status.expect_code(0);
    assert!(status.stdout.contains("pass"), "{}", status.stdout);
    let log = gavel_in(elsewhere.path(), args!["log", path]);
    log.expect_code(0);
    assert_eq!(log.stdout.lines().count(), HELLO_KINDS.len());
    let resumed = gavel_in(elsewhere.path(), args!["resume", "records/hello.jsonl", "--json"]);
    resumed.expect_code(0);
    assert_eq!(resumed.json()["status"], "pass");
}

#[test]
fn a_run_folder_is_a_record_path_too() {
    let ws = tempdir();
    gavel(args!["run", hello(), "--workspace", ws.path(), "--run-id", "r1"]).expect_code(0);
    let folder = ws.path().join(".gavel/runs/r1");
    let status = gavel(args!["status", folder, "--json"]);
    status.expect_code(0);
    assert_eq!(status.json()["run_id"], "r1");
    // And a run id resolves against the working directory by default.
    let status = gavel_in(ws.path(), args!["status", "r1", "--json"]);
    status.expect_code(0);
    assert_eq!(status.json()["run_id"], "r1");
}

#[test]
fn an_unknown_run_is_a_clear_error() {
    let ws = tempdir();
    for command in ["status", "log", "resume"] {
        let out = gavel(args![command, "nope", "--workspace", ws.path()]);
        assert_eq!(out.code, 2, "gavel {command}: {}", out.stderr);
        assert!(out.stderr.contains("no run `nope`"), "gavel {command}: {}", out.stderr);
        assert_eq!(out.stdout, "");
    }
    let out = gavel(args!["status", ws.path().join("missing/events.jsonl")]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("missing/events.jsonl"), "{}", out.stderr);
    assert!(std::fs::read_dir(ws.path()).expect("ws").next().is_none(), "something was written");
}

#[test]
fn a_run_whose_workflow_changed_is_not_resumed() {
    let dir = tempdir();
    let files = dir.path().join("hello");
    copy_dir(&crate::common::hello_dir(), &files);
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("ws");
    gavel(args!["run", files.join("workflow.toml"), "--workspace", ws, "--run-id", "r1"]).expect_code(0);
    let record = record_path(&ws, "r1");
    // Interrupt it (drop run:end), then change the brief.
    let whole = read_bytes(&record);
    let cut = whole[..whole.len() - 1].iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    std::fs::write(&record, &whole[..cut]).expect("drop run:end");
    let brief = files.join("brief.md");
    let text = std::fs::read_to_string(&brief).expect("brief");
    std::fs::write(&brief, format!("{text}\nAlso a map.\n")).expect("edit the brief");

    let cut_bytes = read_bytes(&record);
    let out = gavel(args!["resume", "r1", "--workspace", ws]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("changed"), "{}", out.stderr);
    assert_eq!(read_bytes(&record), cut_bytes, "a refused resume wrote to the record");
}

#[test]
fn a_run_id_under_the_workspace_wins_over_a_same_named_file_in_the_working_directory() {
    let cwd = tempdir();
    let ws = tempdir();
    gavel(args!["run", hello(), "--workspace", ws.path(), "--run-id", "notes"]).expect_code(0);
    std::fs::write(cwd.path().join("notes"), "my own notes, not a record\n").expect("a file named notes");

    for command in ["status", "log"] {
        let out = gavel_in(cwd.path(), args![command, "notes", "--workspace", ws.path()]);
        out.expect_code(0);
    }
    let status = gavel_in(cwd.path(), args!["status", "notes", "--workspace", ws.path(), "--json"]);
    assert_eq!(status.json()["run_id"], "notes");
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("notes")).expect("notes"),
        "my own notes, not a record\n"
    );
}
