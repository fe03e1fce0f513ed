//! Every reason is in the record: the note sent with an "ask once more",
//! why a reviewer's decision is `error`, why a merge, a vote or a judge
//! failed, why an approval was asked again; and `gavel status` counts engine
//! errors from the record, reasons included. Each is asserted on the record's
//! own lines (the JSONL parsed), not on `--json`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{Out, events, fixture, gavel, tempdir};

/// What "Your reply had no JSON object" reads like in every note.
const NO_JSON: &str = "Your reply had no JSON object";

/// A workflow folder: `workflow.toml` (a writer and whatever `stage` adds),
/// `brief.md` and the seat scripts given as `(name, text)`.
fn flow(dir: &Path, seats: &str, stage: &str, scripts: &[(&str, &str)]) -> PathBuf {
    std::fs::create_dir_all(dir.join("seats")).unwrap();
    std::fs::write(dir.join("brief.md"), "# Page\n\nWrite a short page.\n").unwrap();
    std::fs::write(
        dir.join("seats/writer.toml"),
        "[[write]]\nreply = \"Wrote page.md.\"\nfiles = { \"page.md\" = \"# Page\\n\" }\n",
    )
    .unwrap();
    for (name, text) in scripts {
        std::fs::write(dir.join("seats").join(format!("{name}.toml")), text).unwrap();
    }
    let path = dir.join("workflow.toml");
    std::fs::write(
        &path,
        format!(
            r#"name = "reasons"
brief = "brief.md"

[seats]
writer = {{ engine = "script", script = "seats/writer.toml", family = "anthropic" }}
{seats}

[[stage]]
name = "page"
agent = "writer"
writes = ["page.md"]
{stage}"#
        ),
    )
    .unwrap();
    path
}

fn run(workflow: &Path, ws: &Path, run_id: &str) -> Out {
    gavel(args!["run", workflow, "--workspace", ws, "--run-id", run_id, "--json"])
}

fn record(ws: &Path, run_id: &str) -> Vec<Value> {
    events(&ws.join(".gavel/runs").join(run_id).join("events.jsonl"))
}

fn of<'e>(events: &'e [Value], kind: &str, request: Option<&str>) -> Vec<&'e Value> {
    events.iter().filter(|e| e["kind"] == kind && request.is_none_or(|r| e["data"]["request"] == r)).collect()
}

fn status(ws: &Path, run_id: &str, json: bool) -> Out {
    let mut args = args!["status", run_id, "--workspace", ws];
    if json {
        args.push("--json".into());
    }
    let out = gavel(args);
    out.expect_code(0);
    out
}

#[test]
fn a_reviewer_answering_prose_twice_leaves_the_note_and_the_reason_in_the_record_and_status_counts_it() {
    let dir = tempdir();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let workflow = flow(
        dir.path(),
        r#"critic = { engine = "script", script = "seats/critic.toml", family = "openai" }"#,
        "reviewed_by = \"critic\"\n",
        &[("critic", "[[review]]\nreply = \"It reads well to me, nothing to add.\"\n")],
    );
    let out = run(&workflow, &ws, "prose");
    out.expect_code(3);

    let events = record(&ws, "prose");
    let requests = of(&events, "seat:request", Some("review"));
    assert_eq!(requests.len(), 2);
    assert!(requests[0]["data"].get("note").is_none(), "the first ask carries no note: {}", requests[0]);
    let note = requests[1]["data"]["note"].as_str().expect("the second ask's note is recorded");
    assert!(note.contains(NO_JSON), "{note}");
    let decisions = of(&events, "review:decision", None);
    assert_eq!(decisions.len(), 1);
    let decision = &decisions[0]["data"];
    assert_eq!(decision["decision"], "error");
    assert_eq!(decision["seat"], "critic");
    assert_eq!(decision["attempt"], 2);
    assert!(decision["error"].as_str().unwrap().contains(NO_JSON), "{decision}");
    // The pause names it too.
    let pause = of(&events, "run:pause", None);
    assert_eq!(pause.len(), 1);

    let state = status(&ws, "prose", true).json();
    assert_eq!(state["seat_errors"], 0, "{state}");
    assert_eq!(state["engine_errors"], 1, "{state}");
    let error = &state["errors"][0];
    assert_eq!(error["kind"], "review:decision");
    assert_eq!((error["stage"].as_str(), error["seat"].as_str()), (Some("page"), Some("critic")));
    assert!(error["error"].as_str().unwrap().contains(NO_JSON), "{error}");
    let text = status(&ws, "prose", false).stdout;
    assert!(text.contains("(1 engine error)"), "{text}");
    assert!(text.contains(NO_JSON), "{text}");
    let log = gavel(args!["log", "prose", "--workspace", ws]).stdout;
    assert!(log.contains(&format!("asked once more: {NO_JSON}")), "{log}");
}

#[test]
fn a_reviewer_whose_engine_fails_twice_counts_once_per_failed_request() {
    let dir = tempdir();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let workflow = flow(
        dir.path(),
        r#"critic = { engine = "script", script = "seats/critic.toml", family = "openai" }"#,
        "reviewed_by = \"critic\"\n",
        &[("critic", "[[review]]\nerror = \"connection reset by peer\"\n")],
    );
    run(&workflow, &ws, "down").expect_code(3);
    let events = record(&ws, "down");
    let requests = of(&events, "seat:request", Some("review"));
    assert!(requests[1]["data"]["note"].as_str().unwrap().contains("connection reset by peer"));
    let decision = &of(&events, "review:decision", None)[0]["data"];
    assert!(decision["error"].as_str().unwrap().contains("connection reset by peer"), "{decision}");
    let state = status(&ws, "down", true).json();
    // Two failed requests; the decision resting on the second is not a third.
    assert_eq!(
        (state["seat_errors"].as_u64(), state["engine_errors"].as_u64()),
        (Some(2), Some(2)),
        "{state}"
    );
    let kinds: Vec<&str> =
        state["errors"].as_array().unwrap().iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["seat:error", "seat:error"]);
}

#[test]
fn a_merge_answering_garbage_twice_records_why() {
    let dir = tempdir();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let workflow = fixture("panel").join("merge-fails/workflow.toml");
    run(&workflow, &ws, "merge").expect_code(1);
    let events = record(&ws, "merge");
    let merges = of(&events, "seat:request", Some("merge"));
    assert_eq!(merges.len(), 2);
    assert!(merges[1]["data"]["note"].as_str().unwrap().contains(NO_JSON), "{}", merges[1]);
    let synthesis = &of(&events, "review:synthesis", None)[0]["data"];
    assert_eq!(synthesis["merge_failed"], true);
    assert!(synthesis["merge_error"].as_str().unwrap().contains(NO_JSON), "{synthesis}");
    let log = gavel(args!["log", "merge", "--workspace", ws]).stdout;
    assert!(log.contains(&format!("(merge failed: {NO_JSON}")), "{log}");
}

#[test]
fn a_voter_that_fails_twice_records_why() {
    let dir = tempdir();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let workflow = fixture("panel").join("voter-fails/workflow.toml");
    run(&workflow, &ws, "vote").expect_code(1);
    let events = record(&ws, "vote");
    let synthesis = &of(&events, "review:synthesis", None)[0]["data"];
    assert_eq!(synthesis["no_votes_from"], serde_json::json!(["page-4"]));
    assert!(synthesis["vote_errors"]["page-4"].as_str().unwrap().contains("connection reset"), "{synthesis}");
    assert!(synthesis.get("merge_error").is_none(), "{synthesis}");
}

#[test]
fn a_judge_answering_garbage_twice_records_why_its_reply_was_unusable() {
    let dir = tempdir();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let workflow = flow(
        dir.path(),
        r#"critic = { engine = "script", script = "seats/critic.toml", family = "openai" }
judge = { engine = "script", script = "seats/judge.toml", family = "google" }"#,
        "reviewed_by = \"critic\"\nrefine = { judge = \"judge\", cap = 3 }\n",
        &[
            (
                "critic",
                "[[review]]\nreply = { decision = \"revise\", findings = [{ severity = \"should-fix\", evidence = \"No date.\" }] }\n\n[[review]]\nreply = { decision = \"pass\", findings = [] }\n",
            ),
            ("judge", "[[judge]]\nreply = \"Another round seems worth it.\"\n"),
        ],
    );
    let out = run(&workflow, &ws, "judged");
    out.expect_code(0);
    let events = record(&ws, "judged");
    // The judge is asked every round the reviews ran: twice each.
    let judges: Vec<&Value> =
        of(&events, "seat:request", Some("judge")).into_iter().filter(|e| e["data"]["round"] == 1).collect();
    assert_eq!(judges.len(), 2);
    assert!(judges[1]["data"]["note"].as_str().unwrap().contains(NO_JSON), "{}", judges[1]);
    let routes = of(&events, "refine:judge", None);
    let first = &routes[0]["data"];
    assert_eq!(first["round"], 1);
    assert!(first["error"].as_str().unwrap().contains(NO_JSON), "{first}");
    assert!(!first["reason"].as_str().unwrap().is_empty(), "{first}");
}
