//! The round engine end to end: a stage that runs out of
//! rounds, a `run` gate that sends the work back, an unreadable goal check
//! that pauses the run, threshold panels with an engine error, a missing
//! file under a goal check, read-only reviewers, and findings of passing
//! reviewers kept as notes. Fixtures live under `tests/fixtures/rounds`.

use std::path::{Path, PathBuf};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{
    Out, assert_no_duplicate, assert_well_formed, copy_dir, events, fixture, gavel, record_path,
    snapshot_settings, tempdir,
};

/// SHA-256 of the empty text: the send-back fixture's builder prompt when
/// the builder gets no feedback.
const EMPTY_PROMPT_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// SHA-256 of `carries the output`: that fixture's builder prompt when one
/// feedback item carries the gate's output (`gate said no`).
const CARRIES_OUTPUT_SHA256: &str = "8e7e9c0b0df8f5ccbe70256b3fa276f1479d20d497217b98a3bf565c15b08208";

/// A fixture folder under `tests/fixtures/rounds`.
fn rounds_fixture(name: &str) -> PathBuf {
    fixture("rounds").join(name)
}

/// A writable copy of a fixture (for tests that fix a seat's script before
/// resuming) and an empty workspace next to it.
struct Copy {
    _dir: tempfile::TempDir,
    flow: PathBuf,
    ws: PathBuf,
}

fn copy_fixture(name: &str) -> Copy {
    let dir = tempdir();
    let flow = dir.path().join("flow");
    let ws = dir.path().join("ws");
    copy_dir(&rounds_fixture(name), &flow);
    std::fs::create_dir(&ws).expect("create the workspace");
    Copy { _dir: dir, flow, ws }
}

/// `gavel run WORKFLOW --workspace WS --run-id ID --json`.
fn run_json(workflow: &Path, ws: &Path, run_id: &str) -> Out {
    gavel(args!["run", workflow, "--workspace", ws, "--run-id", run_id, "--json"])
}

/// `gavel resume ID --workspace WS --json`.
fn resume_json(ws: &Path, run_id: &str) -> Out {
    gavel(args!["resume", run_id, "--workspace", ws, "--json"])
}

/// `gavel status ID --workspace WS --json`.
fn status_json(ws: &Path, run_id: &str) -> Value {
    let out = gavel(args!["status", run_id, "--workspace", ws, "--json"]);
    out.expect_code(0);
    out.json()
}

/// `gavel log ID --workspace WS`.
fn log(ws: &Path, run_id: &str) -> String {
    let out = gavel(args!["log", run_id, "--workspace", ws]);
    out.expect_code(0);
    out.stdout
}

/// The record of a run, checked well formed and free of duplicate effects.
#[track_caller]
fn record(ws: &Path, run_id: &str) -> Vec<Value> {
    let events = events(&record_path(ws, run_id));
    assert_well_formed(&events);
    assert_no_duplicate(&events, "seat:request");
    assert_no_duplicate(&events, "seat:reply");
    assert_no_duplicate(&events, "seat:error");
    events
}

/// Each event as one short word: `kind`, and for seat events
/// `kind request seat#attempt`.
fn trail(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let kind = e["kind"].as_str().unwrap_or_default();
            let d = &e["data"];
            if kind.starts_with("seat:") {
                format!(
                    "{kind} {} {}#{}",
                    d["request"].as_str().unwrap_or_default(),
                    d["seat"].as_str().unwrap_or_default(),
                    d["attempt"]
                )
            } else {
                kind.to_owned()
            }
        })
        .collect()
}

/// The events of `kind`.
fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

/// The seat events of `kind` for requests of `request`.
fn seat_events<'a>(events: &'a [Value], kind: &str, request: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind && e["data"]["request"] == request).collect()
}

/// `(round, attempt)` of each event.
fn rounds_attempts(events: &[&Value]) -> Vec<(u64, u64)> {
    events
        .iter()
        .map(|e| (e["data"]["round"].as_u64().unwrap_or(0), e["data"]["attempt"].as_u64().unwrap_or(0)))
        .collect()
}

/// `(stage, round)` of each `stage:start`.
fn stage_starts(events: &[Value]) -> Vec<(String, u64)> {
    of_kind(events, "stage:start")
        .iter()
        .map(|e| {
            (
                e["data"]["stage"].as_str().unwrap_or_default().to_owned(),
                e["data"]["round"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The summary of an outcome.
fn summary(outcome: &Value) -> &str {
    outcome["summary"].as_str().unwrap_or_default()
}

/// The `review:decision` of `reviewer`, in order.
fn decisions_of<'a>(events: &'a [Value], reviewer: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == "review:decision" && e["data"]["reviewer"] == reviewer).collect()
}

#[test]
fn a_reviewer_asking_for_a_revision_every_round_exhausts_refine_and_the_run_fails() {
    let ws = tempdir();
    let flow = rounds_fixture("refine-exhausted");
    let out = run_json(&flow.join("workflow.toml"), ws.path(), "exhausted");
    out.expect_code(1);
    let outcome = out.json();
    assert_eq!(outcome["status"], "fail");
    assert_eq!(outcome["rounds"], 2);
    let text = summary(&outcome);
    assert!(text.contains("`page`"), "the summary does not name the stage: {text}");
    assert!(text.contains("2 rounds"), "the summary does not name its 2 rounds: {text}");
    assert!(
        text.contains("Round two: page.md still never says who it is for."),
        "the summary does not carry the last findings: {text}"
    );
    assert!(!text.contains("Round one"), "the summary carries round 1's findings: {text}");
    assert_eq!(outcome["stages"][0]["status"], "fail");
    assert_eq!(outcome["stages"][0]["rounds"], 2);

    let events = record(ws.path(), "exhausted");
    assert_eq!(stage_starts(&events), [("page".to_owned(), 1), ("page".to_owned(), 2)]);
    let writes = seat_events(&events, "seat:request", "write");
    assert_eq!(rounds_attempts(&writes), [(1, 1), (2, 1)], "two builder requests, one per round");
    assert_ne!(writes[0]["data"]["prompt_sha256"], writes[1]["data"]["prompt_sha256"]);
    let reviews = decisions_of(&events, "page-1");
    assert_eq!(reviews.len(), 2);
    for (round, review) in (1..).zip(&reviews) {
        assert_eq!(review["data"]["round"], round);
        assert_eq!(review["data"]["decision"], "revise");
    }
    assert_eq!(reviews[1]["data"]["findings"][0]["severity"], "should-fix");
    assert!(of_kind(&events, "kickback").is_empty());
    let end = events.last().expect("run:end");
    assert_eq!(end["kind"], "run:end");
    assert_eq!(end["data"]["status"], "fail");
    assert_eq!(end["data"]["rounds"], 2);
    assert_eq!(end["data"]["summary"], outcome["summary"]);

    let log = log(ws.path(), "exhausted");
    snapshot_settings(&[(ws.path(), "[WORKSPACE]"), (&flow, "[FLOW]")]).bind(|| {
        insta::assert_snapshot!("rounds_refine_exhausted_outcome", out.stdout);
        insta::assert_snapshot!("rounds_refine_exhausted_log", log);
    });
}

#[test]
fn a_failing_run_gate_sends_the_output_back_and_the_second_build_passes() {
    let ws = tempdir();
    let flow = rounds_fixture("send-back");
    let out = run_json(&flow.join("workflow.toml"), ws.path(), "gate");
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 4);

    let events = record(ws.path(), "gate");
    assert_eq!(
        trail(&events),
        [
            "run:start",
            "stage:start",
            "seat:request write builder#1",
            "seat:reply write builder#1",
            "build:done",
            "stage:start",
            "check:run",
            "kickback",
            "stage:start",
            "seat:request write builder#1",
            "seat:reply write builder#1",
            "build:done",
            "stage:start",
            "check:run",
            "run:end",
        ]
    );
    assert_eq!(
        stage_starts(&events),
        [
            ("implement".to_owned(), 1),
            ("test".to_owned(), 1),
            ("implement".to_owned(), 2),
            ("test".to_owned(), 2)
        ]
    );

    let checks = of_kind(&events, "check:run");
    let (first, second) = (&checks[0]["data"], &checks[1]["data"]);
    assert_eq!((&first["stage"], &first["round"]), (&json!("test"), &json!(1)));
    assert_eq!(first["argv"], json!(["sh", "gate.sh"]));
    assert_eq!(first["exit"], 3);
    assert_eq!(first["timed_out"], false);
    let tail = first["output_tail"].as_str().unwrap_or_default();
    assert!(tail.contains("checking ok.txt"), "stdout is not in the tail: {tail:?}");
    assert!(tail.contains("gate said no: ok.txt is missing"), "stderr is not in the tail: {tail:?}");
    assert_eq!((&second["stage"], &second["round"]), (&json!("test"), &json!(2)));
    assert_eq!(second["exit"], 0);
    assert!(second["output_tail"].as_str().unwrap_or_default().contains("gate says yes"), "{second}");

    let kickbacks = of_kind(&events, "kickback");
    assert_eq!(kickbacks.len(), 1);
    let kickback = &kickbacks[0]["data"];
    assert_eq!((&kickback["from"], &kickback["to"]), (&json!("test"), &json!("implement")));
    assert_eq!(kickback["round"], 1);
    let findings = kickback["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 1);
    assert!(
        findings[0]["evidence"].as_str().unwrap_or_default().contains("gate said no: ok.txt is missing"),
        "the kickback does not carry the output: {kickback}"
    );

    // The fixture's builder template renders only whether a feedback item
    // carries the gate's output: nothing in round 1, the output in round 2.
    let writes = seat_events(&events, "seat:request", "write");
    assert_eq!(rounds_attempts(&writes), [(1, 1), (2, 1)]);
    assert_eq!(writes[0]["data"]["prompt_sha256"], EMPTY_PROMPT_SHA256, "round 1 had feedback");
    assert_eq!(
        writes[1]["data"]["prompt_sha256"], CARRIES_OUTPUT_SHA256,
        "round 2's prompt does not carry the gate's output as feedback"
    );
    let gate = std::fs::read_to_string(ws.path().join("gate.sh")).expect("gate.sh");
    assert!(gate.contains("gate says yes"), "{gate}");

    let log = log(ws.path(), "gate");
    snapshot_settings(&[(ws.path(), "[WORKSPACE]"), (&flow, "[FLOW]")]).bind(|| {
        insta::assert_snapshot!("rounds_send_back_outcome", out.stdout);
        insta::assert_snapshot!("rounds_send_back_log", log);
    });
}

#[test]
fn a_send_back_to_a_stage_with_no_round_left_fails_the_run() {
    let ws = tempdir();
    let flow = rounds_fixture("send-back");
    let out = run_json(&flow.join("one-round.toml"), ws.path(), "gate-once");
    out.expect_code(1);
    let outcome = out.json();
    assert_eq!(outcome["status"], "fail");
    assert_eq!(outcome["rounds"], 2);
    let text = summary(&outcome);
    assert!(text.contains("`implement`") && text.contains("1 round"), "{text}");
    assert!(text.contains("gate said no: ok.txt is missing"), "the summary lacks the gate's output: {text}");

    let events = record(ws.path(), "gate-once");
    assert_eq!(
        trail(&events),
        [
            "run:start",
            "stage:start",
            "seat:request write builder#1",
            "seat:reply write builder#1",
            "build:done",
            "stage:start",
            "check:run",
            "kickback",
            "run:end",
        ]
    );
    let check = of_kind(&events, "check:run")[0];
    assert_eq!(check["data"]["exit"], 3);
    let end = events.last().expect("run:end");
    assert_eq!(end["data"]["status"], "fail");
    assert_eq!(end["data"]["summary"], outcome["summary"]);
}

#[test]
fn an_unreadable_goal_check_pauses_before_the_reviewers_and_resumes_once_fixed() {
    let copy = copy_fixture("goal-pause");
    let ws = &copy.ws;
    let out = run_json(&copy.flow.join("workflow.toml"), ws, "goal");
    out.expect_code(3);
    let outcome = out.json();
    assert_eq!(outcome["status"], "paused");
    assert_eq!(outcome["waiting_for"], "readable goal check");

    let state = status_json(ws, "goal");
    assert_eq!(state["status"]["state"], "paused", "{state}");
    assert_eq!(state["status"]["waiting_for"], "readable goal check", "{state}");

    let events = record(ws, "goal");
    assert!(seat_events(&events, "seat:request", "review").is_empty(), "a reviewer ran");
    assert!(of_kind(&events, "review:decision").is_empty());
    assert!(of_kind(&events, "goal:check").is_empty(), "an unreadable goal check left a verdict");
    let goals = seat_events(&events, "seat:request", "goal");
    assert_eq!(rounds_attempts(&goals), [(1, 1), (1, 2)]);
    assert_ne!(
        goals[0]["data"]["prompt_sha256"], goals[1]["data"]["prompt_sha256"],
        "the second ask carries no note"
    );
    let pause = events.last().expect("run:pause");
    assert_eq!(pause["kind"], "run:pause");
    assert_eq!(pause["data"]["waiting_for"], "readable goal check");

    // Fix the checker: the two turns already answered, then a readable one.
    std::fs::copy(copy.flow.join("seats/checker-fixed.toml"), copy.flow.join("seats/checker.toml"))
        .expect("fix the checker");
    let resumed = resume_json(ws, "goal");
    resumed.expect_code(0);
    let outcome = resumed.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 1);

    let events = record(ws, "goal");
    assert_eq!(
        trail(&events),
        [
            "run:start",
            "stage:start",
            "seat:request write writer#1",
            "seat:reply write writer#1",
            "build:done",
            "seat:request goal checker#1",
            "seat:reply goal checker#1",
            "seat:request goal checker#2",
            "seat:reply goal checker#2",
            "run:pause",
            "run:resume",
            "seat:request goal checker#3",
            "seat:reply goal checker#3",
            "goal:check",
            "seat:request review reviewer#1",
            "seat:reply review reviewer#1",
            "review:decision",
            "run:end",
        ]
    );
    let resume = of_kind(&events, "run:resume")[0];
    assert_eq!(resume["data"]["waiting_for"], "readable goal check");
    let check = of_kind(&events, "goal:check")[0];
    assert_eq!(check["data"]["round"], 1);
    let verdicts: Vec<&Value> = check["data"]["requirements"]
        .as_array()
        .expect("requirements")
        .iter()
        .map(|r| &r["verdict"])
        .collect();
    assert_eq!(verdicts, [&json!("met"), &json!("met")]);
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass");

    let log = log(ws, "goal");
    snapshot_settings(&[(ws, "[WORKSPACE]"), (&copy.flow, "[FLOW]")]).bind(|| {
        insta::assert_snapshot!("rounds_goal_pause_resume_log", log);
    });
}

#[test]
fn a_panel_of_three_needing_two_passes_despite_one_engine_error() {
    let ws = tempdir();
    let flow = rounds_fixture("panel-error");
    let out = run_json(&flow.join("reviewed-agree-2.toml"), ws.path(), "two-of-three");
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 1);
    let reviews = outcome["stages"][0]["reviews"][0]["lines"].to_string();
    assert!(reviews.contains("build-2 engine error"), "{reviews}");

    let events = record(ws.path(), "two-of-three");
    let decided: Vec<(&Value, &Value, &Value)> = of_kind(&events, "review:decision")
        .iter()
        .map(|e| (&e["data"]["reviewer"], &e["data"]["decision"], &e["data"]["findings"]))
        .collect();
    assert_eq!(decided.len(), 3, "{decided:?}");
    for (reviewer, decision) in [("build-1", "pass"), ("build-2", "error"), ("build-3", "pass")] {
        let found = decisions_of(&events, reviewer);
        assert_eq!(found.len(), 1, "{reviewer}");
        assert_eq!(found[0]["data"]["decision"], decision, "{reviewer}");
        assert_eq!(found[0]["data"]["findings"], json!([]), "{reviewer}");
    }
    let mumbled: Vec<&Value> = seat_events(&events, "seat:request", "review")
        .into_iter()
        .filter(|e| e["data"]["seat"] == "mumbler")
        .collect();
    assert_eq!(rounds_attempts(&mumbled), [(1, 1), (1, 2)], "asked once more, then given up");
    // Nothing went back on the engine error's account.
    assert!(of_kind(&events, "kickback").is_empty());
    assert_eq!(seat_events(&events, "seat:request", "write").len(), 1, "the builder was asked again");
    assert_eq!(stage_starts(&events), [("build".to_owned(), 1)]);
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass");
}

/// A panel needing all three passes, with one engine error: the run pauses
/// for the reviewers; once the reviewer is fixed, a resume asks it alone.
fn a_panel_short_only_by_an_engine_error_pauses_and_resume_asks_only_that_reviewer(
    workflow: &str,
    stage_name: &str,
) {
    let copy = copy_fixture("panel-error");
    let ws = &copy.ws;
    let out = run_json(&copy.flow.join(workflow), ws, "all-three");
    out.expect_code(3);
    let outcome = out.json();
    assert_eq!(outcome["status"], "paused", "{workflow}");
    assert_eq!(outcome["waiting_for"], "reviewers", "{workflow}");
    let state = status_json(ws, "all-three");
    assert_eq!(state["status"]["state"], "paused", "{workflow}: {state}");
    assert_eq!(state["status"]["waiting_for"], "reviewers", "{workflow}: {state}");

    let events = record(ws, "all-three");
    let failed = format!("{stage_name}-2");
    let decisions = decisions_of(&events, &failed);
    assert_eq!(decisions.len(), 1, "{workflow}");
    assert_eq!(decisions[0]["data"]["decision"], "error", "{workflow}");
    assert!(of_kind(&events, "kickback").is_empty(), "{workflow}: an engine error was sent back");
    assert_eq!(events.last().expect("run:pause")["kind"], "run:pause", "{workflow}");
    let before = events.len();

    std::fs::copy(copy.flow.join("seats/mumbler-fixed.toml"), copy.flow.join("seats/mumbler.toml"))
        .expect("fix the reviewer");
    let resumed = resume_json(ws, "all-three");
    resumed.expect_code(0);
    let outcome = resumed.json();
    assert_eq!(outcome["status"], "pass", "{workflow}");
    // Every reply counts once, replayed or live: alpha 10, mumbler 3 × 20, gamma 30.
    assert_eq!(outcome["usage"]["input_tokens"], 100, "{workflow}");

    let events = record(ws, "all-three");
    let after = &events[before..];
    assert_eq!(after[0]["kind"], "run:resume", "{workflow}");
    assert_eq!(after[0]["data"]["waiting_for"], "reviewers", "{workflow}");
    let asked: Vec<String> = trail(after).into_iter().filter(|t| t.starts_with("seat:")).collect();
    assert_eq!(
        asked,
        ["seat:request review mumbler#3", "seat:reply review mumbler#3"],
        "{workflow}: only the failed reviewer is asked again"
    );
    let decided: Vec<(&Value, &Value, &Value)> = of_kind(after, "review:decision")
        .iter()
        .map(|e| (&e["data"]["reviewer"], &e["data"]["decision"], &e["data"]["attempt"]))
        .collect();
    assert_eq!(decided, [(&json!(failed), &json!("pass"), &json!(3))], "{workflow}");
    let everyone = seat_events(&events, "seat:request", "review");
    for seat in ["alpha", "gamma"] {
        let asked: Vec<&&Value> = everyone.iter().filter(|e| e["data"]["seat"] == seat).collect();
        assert_eq!(asked.len(), 1, "{workflow}: {seat} was asked again");
    }
    assert_eq!(seat_events(&events, "seat:request", "write").len(), 1, "{workflow}");
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass", "{workflow}");
}

#[test]
fn a_reviewed_stage_short_only_by_an_engine_error_pauses_and_resumes() {
    a_panel_short_only_by_an_engine_error_pauses_and_resume_asks_only_that_reviewer(
        "reviewed-agree-3.toml",
        "build",
    );
}

#[test]
fn a_panel_stage_short_only_by_an_engine_error_pauses_and_resumes() {
    a_panel_short_only_by_an_engine_error_pauses_and_resume_asks_only_that_reviewer(
        "panel-agree-3.toml",
        "review",
    );
}

#[test]
fn a_resume_before_the_reviewer_is_fixed_pauses_again_after_two_more_attempts() {
    let copy = copy_fixture("panel-error");
    let ws = &copy.ws;
    run_json(&copy.flow.join("reviewed-agree-3.toml"), ws, "twice").expect_code(3);
    let first = record(ws, "twice").len();

    // Nothing fixed: the failed reviewer gets two more attempts, no one else is asked.
    let again = resume_json(ws, "twice");
    again.expect_code(3);
    assert_eq!(again.json()["waiting_for"], "reviewers");
    let events = record(ws, "twice");
    let asked: Vec<String> =
        trail(&events[first..]).into_iter().filter(|t| t.starts_with("seat:request")).collect();
    assert_eq!(asked, ["seat:request review mumbler#3", "seat:request review mumbler#4"]);
    let errors: Vec<&Value> =
        decisions_of(&events, "build-2").into_iter().filter(|e| e["data"]["decision"] == "error").collect();
    assert_eq!(errors.iter().map(|e| e["data"]["attempt"].clone()).collect::<Vec<_>>(), [json!(2), json!(4)]);
    assert_eq!(events.last().expect("run:pause")["kind"], "run:pause");
    let second = events.len();

    std::fs::copy(copy.flow.join("seats/mumbler-fixed.toml"), copy.flow.join("seats/mumbler.toml"))
        .expect("fix the reviewer");
    let resumed = resume_json(ws, "twice");
    resumed.expect_code(0);
    assert_eq!(resumed.json()["status"], "pass");
    let events = record(ws, "twice");
    let asked: Vec<String> =
        trail(&events[second..]).into_iter().filter(|t| t.starts_with("seat:")).collect();
    assert_eq!(asked, ["seat:request review mumbler#5", "seat:reply review mumbler#5"]);
    assert_eq!(of_kind(&events, "run:resume").len(), 2);
    assert_eq!(seat_events(&events, "seat:request", "write").len(), 1);
}

#[test]
fn a_missing_file_still_gets_a_goal_check_but_no_review() {
    let ws = tempdir();
    let flow = rounds_fixture("missing-goal");
    let out = run_json(&flow.join("workflow.toml"), ws.path(), "missing");
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 2);
    assert_eq!(outcome["stages"][0]["rounds"], 2);

    let events = record(ws.path(), "missing");
    assert_eq!(
        trail(&events),
        [
            "run:start",
            "stage:start",
            "seat:request write writer#1",
            "seat:reply write writer#1",
            "build:done",
            "seat:request goal checker#1",
            "seat:reply goal checker#1",
            "goal:check",
            "stage:start",
            "seat:request write writer#1",
            "seat:reply write writer#1",
            "build:done",
            "seat:request goal checker#1",
            "seat:reply goal checker#1",
            "goal:check",
            "seat:request review reviewer#1",
            "seat:reply review reviewer#1",
            "review:decision",
            "run:end",
        ]
    );
    let builds = of_kind(&events, "build:done");
    assert_eq!(builds[0]["data"]["missing"], json!(["b.md"]));
    assert!(builds[1]["data"]["missing"].is_null(), "{}", builds[1]);
    let goals = of_kind(&events, "goal:check");
    assert_eq!(goals[0]["data"]["round"], 1, "no goal check in round 1");
    assert_eq!(goals[0]["data"]["requirements"][0]["verdict"], "met");
    let reviews = seat_events(&events, "seat:request", "review");
    assert_eq!(rounds_attempts(&reviews), [(2, 1)], "a reviewer read incomplete work");
    let writes = seat_events(&events, "seat:request", "write");
    assert_ne!(writes[0]["data"]["prompt_sha256"], writes[1]["data"]["prompt_sha256"]);
    let decisions: Vec<&Value> =
        outcome["stages"][0]["decisions"].as_array().expect("decisions").iter().collect();
    assert!(decisions[0].as_str().is_some_and(|d| d.contains("missing b.md")), "{decisions:?}");
}

#[test]
fn a_reviewer_that_writes_files_is_an_engine_error_and_writes_nothing() {
    let ws = tempdir();
    let flow = rounds_fixture("read-only");
    let out = run_json(&flow.join("workflow.toml"), ws.path(), "read-only");
    out.expect_code(0);
    assert_eq!(out.json()["status"], "pass");

    assert!(!ws.path().join("meddled.md").exists(), "a reviewer wrote a file");
    let page = std::fs::read_to_string(ws.path().join("page.md")).expect("page.md");
    assert_eq!(page, "# Page\nBy the builder.\n", "a reviewer changed the work");

    let events = record(ws.path(), "read-only");
    let errors: Vec<&Value> = seat_events(&events, "seat:error", "review");
    assert_eq!(rounds_attempts(&errors), [(1, 1), (1, 2)]);
    for error in &errors {
        assert_eq!(error["data"]["seat"], "meddler");
        let text = error["data"]["error"].as_str().unwrap_or_default();
        assert!(text.contains("read-only"), "the error does not say read-only: {text}");
    }
    assert!(
        !seat_events(&events, "seat:reply", "review").iter().any(|e| e["data"]["seat"] == "meddler"),
        "a writing reviewer's reply was accepted"
    );
    let meddler = decisions_of(&events, "page-2");
    assert_eq!(meddler.len(), 1);
    assert_eq!(meddler[0]["data"]["decision"], "error");
    assert_eq!(meddler[0]["data"]["attempt"], 2);
    assert_eq!(decisions_of(&events, "page-1")[0]["data"]["decision"], "pass");
    // The build's record shows the builder's bytes, not the reviewer's.
    let build = of_kind(&events, "build:done")[0];
    assert!(build["data"]["files"]["page.md"].is_string());
    assert!(build["data"]["files"].get("meddled.md").is_none());
}

#[test]
fn a_goal_check_that_writes_files_is_an_engine_error_and_the_run_pauses() {
    let ws = tempdir();
    let flow = rounds_fixture("read-only");
    let out = run_json(&flow.join("goal.toml"), ws.path(), "nosy");
    out.expect_code(3);
    assert_eq!(out.json()["waiting_for"], "readable goal check");
    let page = std::fs::read_to_string(ws.path().join("page.md")).expect("page.md");
    assert_eq!(page, "# Page\nBy the builder.\n", "the goal check changed the work");

    let events = record(ws.path(), "nosy");
    let errors = seat_events(&events, "seat:error", "goal");
    assert_eq!(rounds_attempts(&errors), [(1, 1), (1, 2)]);
    for error in &errors {
        let text = error["data"]["error"].as_str().unwrap_or_default();
        assert!(text.contains("read-only"), "the error does not say read-only: {text}");
    }
    assert!(of_kind(&events, "goal:check").is_empty());
}

#[test]
fn findings_of_a_passing_reviewer_stay_as_notes_and_nothing_goes_back() {
    let ws = tempdir();
    let flow = rounds_fixture("notes");
    let out = run_json(&flow.join("workflow.toml"), ws.path(), "notes");
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 1);

    let events = record(ws.path(), "notes");
    let kind = decisions_of(&events, "page-1");
    assert_eq!(kind.len(), 1);
    assert_eq!(kind[0]["data"]["decision"], "pass");
    assert_eq!(
        kind[0]["data"]["findings"],
        json!([{
            "id": "page-1.1",
            "severity": "nice-to-have",
            "evidence": "The title could be friendlier.",
            "fix": "Call it Welcome.",
            "raised_by": ["page-1"],
        }])
    );
    let strict = decisions_of(&events, "page-2");
    assert_eq!(strict.len(), 1);
    assert_eq!(strict[0]["data"]["decision"], "revise");
    assert_eq!(
        strict[0]["data"]["findings"],
        json!([{
            "id": "page-2.1",
            "severity": "should-fix",
            "evidence": "The page has no body.",
            "raised_by": ["page-2"],
        }])
    );
    assert!(of_kind(&events, "kickback").is_empty());
    assert_eq!(seat_events(&events, "seat:request", "write").len(), 1, "the builder was asked again");
    assert_eq!(stage_starts(&events), [("page".to_owned(), 1)]);
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass");

    snapshot_settings(&[(ws.path(), "[WORKSPACE]"), (&flow, "[FLOW]")]).bind(|| {
        insta::assert_snapshot!("rounds_notes_outcome", out.stdout);
    });
}

#[test]
fn log_is_one_line_per_event_when_the_summary_carries_command_output() {
    let ws = tempdir();
    let flow = rounds_fixture("send-back");
    run_json(&flow.join("one-round.toml"), ws.path(), "lines").expect_code(1);
    let events = record(ws.path(), "lines");
    let log = log(ws.path(), "lines");
    assert_eq!(log.lines().count(), events.len(), "`gavel log`: one readable line per event:\n{log}");
}

#[test]
fn a_run_whose_program_is_not_on_path_is_refused_before_anything_is_recorded() {
    let ws = tempdir();
    let flow = rounds_fixture("send-back");
    let out = run_json(&flow.join("missing-command.toml"), ws.path(), "no-program");
    out.expect_code(2);
    assert!(out.stderr.contains("gavel-test-no-such-program"), "{}", out.stderr);
    assert!(!ws.path().join(".gavel").exists(), "nothing may be recorded");
}

#[test]
fn a_run_command_that_cannot_start_is_not_called_killed() {
    let ws = tempdir();
    let flow = rounds_fixture("send-back");
    let out = run_json(&flow.join("missing-path.toml"), ws.path(), "no-program");
    out.expect_code(1);
    let outcome = out.json();
    let decision = outcome["stages"][1]["decisions"][0].as_str().unwrap_or_default();
    assert!(!decision.contains("killed"), "the command never started: {decision}");
    assert!(decision.contains("could not start"), "{decision}");
    assert!(!summary(&outcome).contains("was killed"), "{}", summary(&outcome));
    let events = record(ws.path(), "no-program");
    let check = of_kind(&events, "check:run")[0];
    assert_eq!(check["data"]["exit"], Value::Null);
    assert!(check["data"]["error"].as_str().unwrap_or_default().contains("no-such-gate.sh"), "{check}");
}

#[test]
fn check_refuses_a_run_stage_whose_program_does_not_exist() {
    let flow = rounds_fixture("send-back");
    let out = gavel(args!["check", flow.join("missing-command.toml")]);
    out.expect_code(2);
    assert!(out.stderr.contains("gavel-test-no-such-program"), "{}", out.stderr);
}
