//! The hello example from start to end: outcome, files, record, log.

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{
    HELLO_KINDS, assert_well_formed, events, gavel, hello, hello_dir, kinds, record_path, snapshot_settings,
    tempdir,
};

#[test]
fn hello_passes_and_records_every_step() {
    let ws = tempdir();
    let out = gavel(args!["run", hello(), "--workspace", ws.path(), "--json"]);
    out.expect_code(0);
    let outcome = out.json();

    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 3);
    assert_eq!(outcome["usage"]["input_tokens"], 2353);
    assert_eq!(outcome["usage"]["output_tokens"], 193);
    let run_id = outcome["run_id"].as_str().expect("run_id");
    assert!(run_id.starts_with("hello-"), "a generated id starts with the workflow's name: {run_id}");
    let record = record_path(ws.path(), run_id);
    assert_eq!(outcome["record"], record.display().to_string());
    assert!(outcome["summary"].as_str().is_some_and(|s| !s.is_empty()));
    // Per-stage decisions, one per round (their wording is in the snapshot).
    let stages = outcome["stages"].as_array().expect("stages");
    let names: Vec<&str> = stages.iter().map(|s| s["stage"].as_str().expect("stage")).collect();
    assert_eq!(names, ["pages", "faq"]);
    let decisions = |i: usize| -> Vec<String> {
        let list = stages[i]["decisions"].as_array().expect("decisions");
        list.iter().map(|d| d.as_str().expect("a decision is text").to_owned()).collect()
    };
    let (pages, faq) = (decisions(0), decisions(1));
    assert_eq!((pages.len(), faq.len()), (2, 1), "{pages:?} {faq:?}");
    assert_eq!((&stages[0]["rounds"], &stages[1]["rounds"]), (&json!(2), &json!(1)));
    assert!(pages[0].starts_with("round 1") && pages[0].contains("missing hours.md"), "{pages:?}");
    assert!(pages[1].starts_with("round 2") && pages[1].contains("hours.md"), "{pages:?}");
    assert!(!pages[1].contains("missing"), "{pages:?}");
    assert!(faq[0].starts_with("round 1") && faq[0].contains("faq.md"), "{faq:?}");
    assert!(stages.iter().all(|s| s["status"] == "pass"));

    // The scripted builder's files are in the workspace, byte for byte.
    let script = std::fs::read_to_string(hello_dir().join("seats/writer.toml")).expect("writer.toml");
    for (file, needle) in [
        ("welcome.md", "This page is for new staff joining the front desk."),
        ("hours.md", "Monday to Friday, 08:00 to 18:00."),
        ("faq.md", "Where do I park? Behind the building."),
    ] {
        let text = std::fs::read_to_string(ws.path().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(text.contains(needle), "{file}: {text}");
        assert!(script.contains(&text.replace('\n', "\\n")), "{file} is not the script's content");
    }

    // The record: one envelope per line, seq from 1, the expected kinds.
    let events = events(&record);
    assert_well_formed(&events);
    assert_eq!(kinds(&events), HELLO_KINDS);
    assert_eq!(events[0]["data"]["run_id"], run_id);
    assert_eq!(events[0]["data"]["workflow"], "hello");
    assert_eq!(events[0]["data"]["file"], hello().display().to_string());
    assert_eq!(events[0]["data"]["digest"].as_str().map(str::len), Some(64));
    assert_eq!(events[4]["data"]["missing"], json!(["hours.md"]));
    let end = &events[13]["data"];
    assert_eq!(end["status"], "pass");
    assert_eq!(end["rounds"], 3);
    assert_eq!(end["usage"], outcome["usage"]);

    // `gavel log`: one readable line per event.
    let log = gavel(args!["log", run_id, "--workspace", ws.path()]);
    log.expect_code(0);
    assert_eq!(log.stdout.lines().count(), events.len());
    assert_eq!(log.stderr, "");

    let settings = snapshot_settings(&[(ws.path(), "[WORKSPACE]"), (&hello_dir(), "[HELLO]")]);
    settings.bind(|| {
        insta::assert_snapshot!("hello_log", log.stdout);
        insta::assert_snapshot!("hello_outcome_json", out.stdout);
    });
}

#[test]
fn check_accepts_hello() {
    let out = gavel(args!["check", hello()]);
    out.expect_code(0);
    assert!(out.stderr.contains("ok: workflow `hello`"), "{}", out.stderr);

    let out = gavel(args!["check", hello(), "--json"]);
    out.expect_code(0);
    let value = out.json();
    assert_eq!(value["ok"], true);
    assert_eq!(value["workflow"], "hello");
}
