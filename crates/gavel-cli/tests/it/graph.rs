//! The graph form: nodes with `needs` run when their needs are
//! done, at the same time as each other; kickbacks re-run the target and
//! everything downstream, within `max_kickbacks` (a count or a judge);
//! `gavel graph` draws it.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::{copy_dir, events, gavel, record_path, tempdir};

fn graph_fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/graph").join(name)
}

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name).join("workflow.toml")
}

fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

#[test]
fn the_welcome_page_dag_builds_twice_and_passes() {
    let ws = tempdir();
    let out = gavel(args![
        "-q",
        "run",
        example("welcome-page-dag"),
        "--workspace",
        ws.path(),
        "--run-id",
        "dag",
        "--json"
    ]);
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass");
    let events = events(&record_path(ws.path(), "dag"));
    let builds: Vec<&Value> =
        of_kind(&events, "build:done").into_iter().filter(|e| e["data"]["stage"] == "build").collect();
    assert_eq!(builds.len(), 2, "two builds in all");
    let kickbacks = of_kind(&events, "kickback");
    assert_eq!(kickbacks.len(), 1);
    assert_eq!(
        (kickbacks[0]["data"]["from"].as_str(), kickbacks[0]["data"]["to"].as_str()),
        (Some("goal"), Some("build"))
    );
    let goals = of_kind(&events, "goal:check");
    assert_eq!(goals.len(), 2);
    assert_eq!(goals[0]["data"]["requirements"][1]["verdict"], "unmet");
    assert_eq!(goals[1]["data"]["requirements"][1]["verdict"], "met");
    // The reviewer ran once, after the second goal check.
    let reviews = of_kind(&events, "review:decision");
    assert_eq!(reviews.len(), 1);
    assert!(reviews[0]["seq"].as_u64() > goals[1]["seq"].as_u64());
}

#[test]
fn nodes_whose_needs_are_done_run_at_the_same_time() {
    let ws = tempdir();
    let out = gavel(args![
        "-q",
        "run",
        graph_fixture("fan-out.toml"),
        "--workspace",
        ws.path(),
        "--run-id",
        "fan",
        "--answers",
        graph_fixture("answers.toml")
    ]);
    out.expect_code(0);
    let events = events(&record_path(ws.path(), "fan"));
    // All three reviewers were asked before any of them answered: each
    // answer takes 300 ms, so sequential nodes would interleave.
    let requests: Vec<u64> = of_kind(&events, "seat:request")
        .iter()
        .filter(|e| e["data"]["request"] == "review")
        .map(|e| e["seq"].as_u64().unwrap_or(0))
        .collect();
    let first_reply = of_kind(&events, "seat:reply")
        .iter()
        .filter(|e| e["data"]["request"] == "review")
        .map(|e| e["seq"].as_u64().unwrap_or(0))
        .min()
        .unwrap_or(0);
    assert_eq!(requests.len(), 3);
    assert!(
        requests.iter().all(|&seq| seq < first_reply),
        "requests {requests:?}, first reply {first_reply}"
    );
    // The approve node needed all three.
    let approval = of_kind(&events, "approval:request")[0]["seq"].as_u64().unwrap_or(0);
    assert!(
        approval
            > of_kind(&events, "review:decision")
                .iter()
                .map(|e| e["seq"].as_u64().unwrap_or(0))
                .max()
                .unwrap_or(0)
    );
}

#[test]
fn max_parallel_one_runs_the_fan_out_one_node_at_a_time() {
    let dir = tempdir();
    let flows = tempdir();
    copy_dir(&graph_fixture(""), flows.path());
    let source = std::fs::read_to_string(flows.path().join("fan-out.toml")).unwrap();
    let flow = flows.path().join("fan-out-serial.toml");
    let serial = source.replace("brief = \"brief.md\"", "brief = \"brief.md\"\n[options]\nmax_parallel = 1");
    std::fs::write(&flow, serial).unwrap();
    let out = gavel(args![
        "-q",
        "run",
        &flow,
        "--workspace",
        dir.path(),
        "--run-id",
        "serial",
        "--answers",
        graph_fixture("answers.toml")
    ]);
    out.expect_code(0);
    let events = events(&record_path(dir.path(), "serial"));
    let reviews: Vec<&str> = events
        .iter()
        .filter(|e| {
            (e["kind"] == "seat:request" || e["kind"] == "seat:reply") && e["data"]["request"] == "review"
        })
        .map(|e| e["kind"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        reviews,
        ["seat:request", "seat:reply", "seat:request", "seat:reply", "seat:request", "seat:reply"]
    );
}

#[test]
fn a_kickback_past_max_kickbacks_fails_the_run() {
    let ws = tempdir();
    let out = gavel(args![
        "-q",
        "run",
        graph_fixture("over-limit.toml"),
        "--workspace",
        ws.path(),
        "--run-id",
        "over",
        "--json"
    ]);
    out.expect_code(1);
    let summary = out.json()["summary"].as_str().unwrap_or_default().to_owned();
    assert!(summary.contains("max_kickbacks = 1"), "{summary}");
    let events = events(&record_path(ws.path(), "over"));
    assert_eq!(of_kind(&events, "kickback").len(), 1);
    assert_eq!(of_kind(&events, "goal:check").len(), 2);
}

#[test]
fn a_judge_that_says_stop_refuses_the_kickback_and_the_review_stands() {
    let ws = tempdir();
    let out = gavel(args![
        "-q",
        "run",
        graph_fixture("judged.toml"),
        "--workspace",
        ws.path(),
        "--run-id",
        "judged",
        "--json"
    ]);
    out.expect_code(0);
    let events = events(&record_path(ws.path(), "judged"));
    assert!(of_kind(&events, "kickback").is_empty(), "the judge refused it");
    let judged = of_kind(&events, "refine:judge");
    assert_eq!(judged.len(), 1);
    assert_eq!(judged[0]["data"]["route"], "pass");
    assert_eq!(of_kind(&events, "build:done").len(), 1);
}

#[test]
fn bad_graphs_are_located_and_nothing_is_recorded() {
    for (file, expected) in [
        ("cycle.toml", "in a cycle"),
        ("unknown-need.toml", "`needs` names `nope`"),
        ("mixed.toml", "mixes the stages"),
    ] {
        let ws = tempdir();
        let out = gavel(args!["run", graph_fixture(file), "--workspace", ws.path()]);
        out.expect_code(2);
        assert!(out.stderr.contains(expected), "{file}: {}", out.stderr);
        assert!(out.stderr.contains(&format!("{file}:")), "{file}: names the file: {}", out.stderr);
        assert!(!ws.path().join(".gavel").exists(), "{file}: nothing recorded");
    }
}

#[test]
fn gavel_graph_draws_the_welcome_page_dag() {
    let out = gavel(args!["graph", example("welcome-page-dag")]);
    out.expect_code(0);
    insta::assert_snapshot!("graph_welcome_page_dag", out.stdout);
}
