//! Panels, judges, approvals and budgets end to end: the review-battery and
//! judge-stops-the-loop examples, an approval
//! bound to the bytes it was asked for, the diversity rule, the loop breaker,
//! a spent budget, and the vote rules' protections (a merge that fails, a
//! voter that fails, a block). Fixtures live under `tests/fixtures/panel`.

use std::collections::BTreeSet;
use std::io::Write as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{
    Out, assert_no_duplicate, assert_well_formed, copy_dir, events, fixture, gavel, gavel_cmd, gavel_in,
    record_path, seat_key, snapshot_settings, tempdir,
};

// The review-battery example's findings, as its merger words them.
const BACKOFF: &str = r#""The client uses exponential backoff between attempts." The reader has not met "exponential backoff"."#;
const EVERY_RETRY_FAILS: &str = "The page never says what happens when every retry fails.";
const TABLE: &str = "Add a table of every client setting.";
const WORDING: &str = r#""Set max_retries to the number of extra attempts you want." could be shorter."#;
/// Why the review-battery judge skips the wording point.
const WORDING_SKIPPED: &str = "The sentence is clear as it is; a shorter one is taste.";

/// A fixture folder under `tests/fixtures/panel`.
fn panel_fixture(name: &str) -> PathBuf {
    fixture("panel").join(name)
}

/// An example folder (absolute, no `..`).
fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name).canonicalize().expect(name)
}

/// A temporary workspace, by its canonical path (the record names it so).
struct Workspace {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

fn workspace() -> Workspace {
    let dir = tempdir();
    let path = dir.path().canonicalize().expect("the workspace's path");
    Workspace { _dir: dir, path }
}

/// `gavel run WORKFLOW --workspace WS --run-id ID --json [extra...]`.
fn run_json(workflow: &Path, ws: &Path, run_id: &str, extra: &[&str]) -> Out {
    let mut args = args!["run", workflow, "--workspace", ws, "--run-id", run_id, "--json"];
    args.extend(extra.iter().map(std::ffi::OsString::from));
    gavel(args)
}

/// `gavel resume ID --workspace WS --json [extra...]`.
fn resume_json(ws: &Path, run_id: &str, extra: &[&str]) -> Out {
    let mut args = args!["resume", run_id, "--workspace", ws, "--json"];
    args.extend(extra.iter().map(std::ffi::OsString::from));
    gavel(args)
}

/// `gavel approve ID --workspace WS --json [extra...]`.
fn approve_json(ws: &Path, run_id: &str, extra: &[&str]) -> Out {
    let mut args = args!["approve", run_id, "--workspace", ws, "--json"];
    args.extend(extra.iter().map(std::ffi::OsString::from));
    gavel(args)
}

/// `gavel status ID --workspace WS --json`.
fn status_json(ws: &Path, run_id: &str) -> Value {
    let out = gavel(args!["status", run_id, "--workspace", ws, "--json"]);
    out.expect_code(0);
    out.json()
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

/// The events of `kind`.
fn of_kind<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind).collect()
}

/// The seat events of `kind` for requests of `request`.
fn seat_events<'a>(events: &'a [Value], kind: &str, request: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["kind"] == kind && e["data"]["request"] == request).collect()
}

/// `(seat, round, attempt)` of each event.
fn seats_rounds_attempts(events: &[&Value]) -> Vec<(String, u64, u64)> {
    events
        .iter()
        .map(|e| {
            let d = &e["data"];
            (
                d["seat"].as_str().unwrap_or_default().to_owned(),
                d["round"].as_u64().unwrap_or(0),
                d["attempt"].as_u64().unwrap_or(0),
            )
        })
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

/// The only `review:synthesis` event's data.
#[track_caller]
fn only_synthesis(events: &[Value]) -> &Value {
    let synthesis = of_kind(events, "review:synthesis");
    assert_eq!(synthesis.len(), 1, "one synthesis: {synthesis:?}");
    &synthesis[0]["data"]
}

/// Each entry of a `review:synthesis` event as the outcome reports it:
/// result, id, raised_by, severity, evidence and the votes as
/// `<reviewer> <vote>: <reason>`.
fn synthesis_entries(data: &Value) -> Vec<Value> {
    data["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|entry| {
            let finding = &entry["finding"];
            let votes: Vec<String> = finding["votes"]
                .as_array()
                .expect("votes")
                .iter()
                .map(|v| {
                    format!(
                        "{} {}: {}",
                        v["reviewer"].as_str().unwrap_or_default(),
                        v["vote"].as_str().unwrap_or_default(),
                        v["reason"].as_str().unwrap_or_default()
                    )
                })
                .collect();
            json!({
                "result": entry["result"],
                "id": finding["id"],
                "raised_by": finding["raised_by"],
                "severity": finding["severity"],
                "evidence": finding["evidence"],
                "votes": votes,
            })
        })
        .collect()
}

/// SHA-256 of `bytes`, hex, by `sha256sum` (gavel-cli has no hashing
/// dev-dependency).
fn sha256(bytes: &[u8]) -> String {
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum runs");
    child.stdin.take().expect("stdin").write_all(bytes).expect("feed sha256sum");
    let out = child.wait_with_output().expect("sha256sum finishes");
    assert!(out.status.success(), "sha256sum failed");
    let text = String::from_utf8(out.stdout).expect("sha256sum prints UTF-8");
    text.split_whitespace().next().expect("a digest").to_owned()
}

/// SHA-256 of a file's bytes, hex.
fn sha256_of(path: &Path) -> String {
    sha256(&std::fs::read(path).unwrap_or_else(|err| panic!("read {}: {err}", path.display())))
}

/// A diagnostic with miette's line wrapping undone (`\n  │ ` continues a line).
fn unwrapped(stderr: &str) -> String {
    stderr.replace("\n  │ ", " ")
}

// ---------------------------------------------------------------------------
// 1. The review-battery example.

#[test]
fn review_battery_merges_cross_votes_judges_and_passes_in_round_two() {
    let ws = workspace();
    let flow = example("review-battery");
    let out = run_json(&flow.join("workflow.toml"), &ws.path, "battery", &[]);
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 2);
    let stages = outcome["stages"].as_array().expect("stages");
    assert_eq!(stages.len(), 1, "{stages:?}");
    let stage = &stages[0];
    assert_eq!(stage["stage"], "write");
    assert_eq!(stage["rounds"], 2);
    assert_eq!(stage["status"], "pass");

    // Round 1's synthesis, as the outcome reports it.
    let synthesis = stage["synthesis"].as_array().expect("synthesis");
    assert_eq!(synthesis.len(), 1, "synthesis runs only when there are findings: {synthesis:?}");
    assert_eq!(synthesis[0]["round"], 1);
    assert_eq!(
        synthesis[0]["entries"],
        json!([
            {
                "result": "kept",
                "raised_by": ["write-1", "write-2"],
                "severity": "should-fix",
                "evidence": BACKOFF,
                "votes": ["write-3 agree: The term is unexplained."],
            },
            {
                "result": "kept",
                "raised_by": ["write-2"],
                "severity": "should-fix",
                "evidence": EVERY_RETRY_FAILS,
                "votes": ["write-1 agree: The reader needs to know.", "write-3 agree: A reader will ask."],
            },
            {
                "result": "dropped",
                "raised_by": ["write-3"],
                "severity": "should-fix",
                "evidence": TABLE,
                "votes": [
                    "write-1 disagree: The page covers one setting; a table is past what this reader needs.",
                    "write-2 disagree: Other settings belong on their own pages.",
                ],
            },
            {
                "result": "disputed",
                "raised_by": ["write-3"],
                "severity": "nice-to-have",
                "evidence": WORDING,
                "votes": ["write-1 agree: Shorter reads better.", "write-2 disagree: It is already one short line."],
            },
        ])
    );

    // The judge: round 1 acts on two of the three findings left, skips the
    // wording point; round 2 stops.
    let judge = stage["judge"].as_array().expect("judge");
    assert_eq!(judge.len(), 2, "{judge:?}");
    assert_eq!(judge[0]["round"], 1);
    assert_eq!(judge[0]["route"], "again");
    assert_eq!(judge[0]["reason"], "the judge acts on 2 of 3 findings");
    assert_eq!(
        judge[0]["findings"],
        json!([
            format!("act: {BACKOFF} (A reader who has not met the term cannot tell what the client does.)"),
            format!(
                "act: {EVERY_RETRY_FAILS} (A reader needs to know what the call does after the last retry.)"
            ),
            format!("skip: {WORDING} ({WORDING_SKIPPED})"),
        ])
    );
    assert_eq!(judge[1]["round"], 2);
    assert_eq!(judge[1]["route"], "pass");

    // Round 2: every reviewer passes.
    let reviews = stage["reviews"].as_array().expect("reviews");
    assert_eq!(reviews.len(), 2);
    assert_eq!(reviews[1]["round"], 2);
    assert_eq!(reviews[1]["lines"], json!(["write-1 pass", "write-2 pass", "write-3 pass"]));

    // The record says the same.
    let events = record(&ws.path, "battery");
    assert_eq!(stage_starts(&events), [("write".to_owned(), 1), ("write".to_owned(), 2)]);
    let data = only_synthesis(&events);
    assert_eq!((&data["stage"], &data["round"]), (&json!("write"), &json!(1)));
    assert_eq!(data["merge_failed"], false);
    assert_eq!(data["no_votes_from"], json!([]));
    let entries = synthesis_entries(data);
    let reported: Vec<Value> = synthesis[0]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .zip(["F1", "F2", "F3", "F4"])
        .map(|(e, id)| {
            json!({
                "result": e["result"],
                "id": id,
                "raised_by": e["raised_by"],
                "severity": e["severity"],
                "evidence": e["evidence"],
                "votes": e["votes"],
            })
        })
        .collect();
    assert_eq!(entries, reported, "the record's synthesis differs from the outcome's");
    // Code set the merged finding's fix from the merger's words.
    assert_eq!(
        data["entries"][0]["finding"]["fix"],
        "Say what backoff means: each wait is twice as long as the one before."
    );

    let judged = of_kind(&events, "refine:judge");
    assert_eq!(judged.len(), 2, "the judge is asked every round the reviews ran");
    let first = &judged[0]["data"];
    assert_eq!((&first["stage"], &first["round"]), (&json!("write"), &json!(1)));
    assert_eq!(first["route"], "again");
    assert_eq!(first["reason"], "the judge acts on 2 of 3 findings");
    assert_eq!(
        first["answers"],
        json!({"holds": 0.35, "worth_doing": 0.8, "worth_another_round": 0.75, "stop_reason": "continue"})
    );
    assert_eq!(
        first["findings"],
        json!([
            {"finding": "F1", "decision": "act", "reason": "A reader who has not met the term cannot tell what the client does."},
            {"finding": "F2", "decision": "act", "reason": "A reader needs to know what the call does after the last retry."},
            {"finding": "F4", "decision": "skip", "reason": WORDING_SKIPPED},
        ])
    );
    let second = &judged[1]["data"];
    assert_eq!(second["round"], 2);
    assert_eq!(second["route"], "pass");
    assert_eq!(second["findings"], json!([]));
    let reason = second["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("holds 0.9, worth doing 0.2, another round 0.1"), "{reason}");

    let decided: Vec<(u64, &str, &str)> = of_kind(&events, "review:decision")
        .iter()
        .map(|e| {
            let d = &e["data"];
            (
                d["round"].as_u64().unwrap_or(0),
                d["reviewer"].as_str().unwrap_or_default(),
                d["decision"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        decided,
        [
            (1, "write-1", "revise"),
            (1, "write-2", "revise"),
            (1, "write-3", "revise"),
            (2, "write-1", "pass"),
            (2, "write-2", "pass"),
            (2, "write-3", "pass"),
        ]
    );
    // The builder's round-2 prompt carries the acted findings: it differs.
    let writes = seat_events(&events, "seat:request", "write");
    assert_eq!(seats_rounds_attempts(&writes), [("writer".to_owned(), 1, 1), ("writer".to_owned(), 2, 1)]);
    assert_ne!(writes[0]["data"]["prompt_sha256"], writes[1]["data"]["prompt_sha256"]);
    // One merge, three voters, in round 1 only.
    let merges = seat_events(&events, "seat:request", "merge");
    assert_eq!(seats_rounds_attempts(&merges), [("claude".to_owned(), 1, 1)]);
    assert_eq!(seat_events(&events, "seat:request", "vote").len(), 3);
    let end = events.last().expect("run:end");
    assert_eq!(end["kind"], "run:end");
    assert_eq!(end["data"]["status"], "pass");
    assert_eq!(end["data"]["rounds"], 2);
    assert_eq!(outcome["usage"], end["data"]["usage"]);

    snapshot_settings(&[(&ws.path, "[WORKSPACE]"), (&flow, "[FLOW]")]).bind(|| {
        insta::assert_snapshot!("panel_review_battery_outcome", out.stdout);
    });
}

#[test]
fn review_battery_round_two_reviewers_are_told_the_skipped_finding() {
    // A copy of the example whose review template renders only the skipped
    // findings, one a line: each review prompt's SHA-256 proves what the
    // reviewer was told.
    let dir = tempdir();
    let flow = dir.path().join("flow");
    let ws = dir.path().join("ws");
    copy_dir(&example("review-battery"), &flow);
    copy_dir(&panel_fixture("prompts"), &flow.join("prompts"));
    std::fs::create_dir(&ws).expect("the workspace");
    let workflow = flow.join("workflow.toml");
    let text = std::fs::read_to_string(&workflow).expect("workflow.toml");
    assert!(text.contains("[options]\n"), "the example has no [options] table:\n{text}");
    std::fs::write(&workflow, text.replacen("[options]\n", "[options]\nprompts_dir = \"prompts\"\n", 1))
        .expect("set prompts_dir");

    let out = run_json(&workflow, &ws, "told", &[]);
    out.expect_code(0);
    assert_eq!(out.json()["status"], "pass");

    let events = record(&ws, "told");
    let reviews = seat_events(&events, "seat:request", "review");
    let told_nothing = sha256(b"");
    let told_skipped = sha256(format!("{WORDING} (skipped: {WORDING_SKIPPED})\n").as_bytes());
    let by_round: Vec<(String, u64, &str)> = reviews
        .iter()
        .map(|e| {
            let d = &e["data"];
            let sha = d["prompt_sha256"].as_str().unwrap_or_default();
            let told = if sha == told_nothing {
                "nothing"
            } else if sha == told_skipped {
                "the skipped finding"
            } else {
                "something else"
            };
            (d["seat"].as_str().unwrap_or_default().to_owned(), d["round"].as_u64().unwrap_or(0), told)
        })
        .collect();
    assert_eq!(
        by_round,
        [
            ("claude".to_owned(), 1, "nothing"),
            ("codex".to_owned(), 1, "nothing"),
            ("gemini".to_owned(), 1, "nothing"),
            ("claude".to_owned(), 2, "the skipped finding"),
            ("codex".to_owned(), 2, "the skipped finding"),
            ("gemini".to_owned(), 2, "the skipped finding"),
        ]
    );
}

// ---------------------------------------------------------------------------
// 2. The judge-stops-the-loop example, and approval.

#[test]
fn judge_stops_the_loop_with_a_recorded_approval() {
    let ws = workspace();
    let flow = example("judge-stops-the-loop");
    let answers = flow.join("approve.toml");
    let answers = answers.to_str().expect("a UTF-8 path");
    let out = run_json(&flow.join("workflow.toml"), &ws.path, "stops", &["--answers", answers]);
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass");
    let write = &outcome["stages"][0];
    assert_eq!(write["stage"], "write");
    assert_eq!(write["rounds"], 2);
    assert_eq!(write["status"], "pass");
    let approve = &outcome["stages"][1];
    assert_eq!(approve["stage"], "approve");
    assert_eq!(approve["status"], "pass");

    let events = record(&ws.path, "stops");
    assert_eq!(
        stage_starts(&events),
        [("write".to_owned(), 1), ("write".to_owned(), 2), ("approve".to_owned(), 1)]
    );
    let writes = seat_events(&events, "seat:request", "write");
    assert_eq!(writes.len(), 2);
    assert_ne!(
        writes[0]["data"]["prompt_sha256"], writes[1]["data"]["prompt_sha256"],
        "the blocks did not go back to the builder"
    );

    // Round 1: two blocks; the judge would stop (over_polishing), but blocks
    // always go back under the cap.
    let first = of_kind(&events, "review:decision")[0];
    let severities: Vec<&Value> =
        first["data"]["findings"].as_array().expect("findings").iter().map(|f| &f["severity"]).collect();
    assert_eq!(severities, [&json!("block"), &json!("block")]);
    let judged = of_kind(&events, "refine:judge");
    assert_eq!(judged.len(), 2);
    let round1 = &judged[0]["data"];
    assert_eq!(round1["round"], 1);
    assert_eq!(round1["answers"]["stop_reason"], "over_polishing");
    assert_eq!(round1["route"], "again", "{round1}");
    let reason = round1["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("2 block findings always go back"), "{reason}");

    // Round 2: the reader passes; the judge's stop reason holds.
    let round2 = &judged[1]["data"];
    assert_eq!(round2["round"], 2);
    assert_eq!(round2["route"], "pass");
    assert_eq!(round2["answers"]["stop_reason"], "holds");
    let reason = round2["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("holds 0.9, worth doing 0.2, another round 0.1"), "{reason}");
    let decisions = write["decisions"].to_string();
    assert!(decisions.contains("holds 0.9, worth doing 0.2, another round 0.1"), "{decisions}");

    // The approval is bound to page.md's bytes.
    let page = sha256_of(&ws.path.join("page.md"));
    let asked = of_kind(&events, "approval:request");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["data"]["stage"], "approve");
    assert_eq!(asked[0]["data"]["files"], json!({"page.md": page}));
    let approvals = of_kind(&events, "approval");
    assert_eq!(approvals.len(), 1);
    let approval = &approvals[0]["data"];
    assert_eq!(approval["stage"], "approve");
    assert_eq!(approval["approved"], true);
    assert_eq!(approval["by"], "a person (recorded answer)");
    assert_eq!(approval["reason"], "Both claims now match our CI.");
    assert_eq!(approval["files"], json!({"page.md": page}));
    assert!(of_kind(&events, "run:pause").is_empty(), "an answered approval does not pause");
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass");
}

/// Runs judge-stops-the-loop without answers (stdin is not a terminal):
/// it pauses at the approve stage.
#[track_caller]
fn judge_stops_paused_at_approval(ws: &Path, run_id: &str) {
    let flow = example("judge-stops-the-loop");
    let out = run_json(&flow.join("workflow.toml"), ws, run_id, &[]);
    out.expect_code(3);
    let outcome = out.json();
    assert_eq!(outcome["status"], "paused");
    assert_eq!(outcome["waiting_for"], "approval of stage approve");
    let state = status_json(ws, run_id);
    assert_eq!(state["status"]["state"], "paused", "{state}");
    assert_eq!(state["status"]["waiting_for"], "approval of stage approve", "{state}");

    let events = record(ws, run_id);
    let asked = of_kind(&events, "approval:request");
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0]["data"]["files"], json!({"page.md": sha256_of(&ws.join("page.md"))}));
    assert!(of_kind(&events, "approval").is_empty(), "nobody answered, yet an approval is recorded");
    let pause = events.last().expect("run:pause");
    assert_eq!(pause["kind"], "run:pause");
    assert_eq!(pause["data"]["waiting_for"], "approval of stage approve");
}

#[test]
fn judge_stops_the_loop_pauses_for_approval_and_gavel_approve_passes_it() {
    let ws = workspace();
    judge_stops_paused_at_approval(&ws.path, "waits");

    let out = approve_json(&ws.path, "waits", &["--by", "tester"]);
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["stages"][1]["status"], "pass");

    let events = record(&ws.path, "waits");
    let approvals = of_kind(&events, "approval");
    assert_eq!(approvals.len(), 1);
    let approval = &approvals[0]["data"];
    assert_eq!(approval["approved"], true);
    assert_eq!(approval["by"], "tester");
    assert_eq!(approval["files"], json!({"page.md": sha256_of(&ws.path.join("page.md"))}));
    assert_eq!(of_kind(&events, "approval:request").len(), 1, "asked again for unchanged bytes");
    // Nothing before the approval ran again.
    assert_eq!(seat_events(&events, "seat:request", "write").len(), 2);
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass");
}

#[test]
fn judge_stops_the_loop_rejected_by_gavel_approve_fails() {
    let ws = workspace();
    judge_stops_paused_at_approval(&ws.path, "rejected");

    let out = approve_json(&ws.path, "rejected", &["--reject", "--reason", "no"]);
    out.expect_code(1);
    let outcome = out.json();
    assert_eq!(outcome["status"], "fail");
    let text = summary(&outcome);
    assert!(
        text.contains("`approve`") && text.contains("rejected"),
        "the summary names no rejection: {text}"
    );
    assert!(text.ends_with(": no"), "the summary does not carry the reason: {text}");

    let events = record(&ws.path, "rejected");
    let approvals = of_kind(&events, "approval");
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["data"]["approved"], false);
    assert_eq!(approvals[0]["data"]["reason"], "no");
    let end = events.last().expect("run:end");
    assert_eq!(end["data"]["status"], "fail");
    assert_eq!(end["data"]["summary"], outcome["summary"]);
}

// ---------------------------------------------------------------------------
// 3. An approval is bound to the bytes it was asked for.

#[test]
fn an_approval_of_changed_bytes_is_refused_and_asked_again() {
    let ws = workspace();
    judge_stops_paused_at_approval(&ws.path, "bytes");
    let page = ws.path.join("page.md");
    let asked_for = sha256_of(&page);

    // One byte changes after the ask: `# When` becomes `% When`.
    let mut bytes = std::fs::read(&page).expect("page.md");
    assert_eq!(bytes[0], b'#');
    bytes[0] = b'%';
    std::fs::write(&page, &bytes).expect("change one byte");
    let changed = sha256(&bytes);
    assert_ne!(changed, asked_for);

    let refused = approve_json(&ws.path, "bytes", &["--by", "tester"]);
    refused.expect_code(3);
    let outcome = refused.json();
    assert_eq!(outcome["status"], "paused");
    assert_eq!(outcome["waiting_for"], "approval of stage approve");
    let events = record(&ws.path, "bytes");
    let asked: Vec<&Value> =
        of_kind(&events, "approval:request").iter().map(|e| &e["data"]["files"]).collect();
    assert_eq!(asked, [&json!({"page.md": asked_for}), &json!({"page.md": changed})]);
    assert!(of_kind(&events, "approval").is_empty(), "changed bytes were approved");
    assert_eq!(events.last().expect("run:pause")["kind"], "run:pause");

    let approved = approve_json(&ws.path, "bytes", &["--by", "tester"]);
    approved.expect_code(0);
    assert_eq!(approved.json()["status"], "pass");
    let events = record(&ws.path, "bytes");
    let approvals = of_kind(&events, "approval");
    assert_eq!(approvals.len(), 1);
    assert_eq!(approvals[0]["data"]["approved"], true);
    assert_eq!(approvals[0]["data"]["files"], json!({"page.md": changed}));
    assert_eq!(of_kind(&events, "approval:request").len(), 2, "asked a third time");
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass");
}

// ---------------------------------------------------------------------------
// 4. The diversity rule.

/// (workflow file, the location its error names, the seats it names, their family)
const SAME_FAMILY: [(&str, &str, [&str; 2], &str); 3] = [
    ("two-reviewers.toml", "two-reviewers.toml:17:15", ["`alpha`", "`beta`"], "openai"),
    ("reviewer-builder.toml", "reviewer-builder.toml:13:15", ["`critic`", "`writer`"], "anthropic"),
    ("goal-builder.toml", "goal-builder.toml:13:8", ["`checker`", "`writer`"], "anthropic"),
];

/// A copy of the same-family fixtures and an empty workspace beside it.
struct SameFamily {
    _dir: tempfile::TempDir,
    files: PathBuf,
    ws: PathBuf,
}

fn same_family() -> SameFamily {
    let dir = tempdir();
    let files = dir.path().join("files");
    let ws = dir.path().join("ws");
    copy_dir(&panel_fixture("same-family"), &files);
    std::fs::create_dir(&ws).expect("the workspace");
    SameFamily { _dir: dir, files, ws }
}

#[test]
fn a_team_that_shares_a_family_is_refused_before_anything_is_recorded() {
    let setup = same_family();
    for (file, location, seats, family) in SAME_FAMILY {
        let run = gavel_in(&setup.files, args!["run", file, "--workspace", setup.ws, "--run-id", "same"]);
        assert_eq!(run.code, 2, "{file}: gavel run\n{}", run.stderr);
        let message = unwrapped(&run.stderr);
        assert!(message.contains(location), "{file}: no `{location}` in\n{message}");
        for seat in seats {
            assert!(message.contains(seat), "{file}: the error does not name {seat}:\n{message}");
        }
        assert!(message.contains(&format!("family {family}")), "{file}: no family in\n{message}");
        assert!(message.contains("allow_same_family"), "{file}: the hint is missing:\n{message}");
        assert_eq!(run.stdout, "", "{file}");
        assert!(!setup.ws.join(".gavel").exists(), "{file}: a record was started in the workspace");
        assert!(
            std::fs::read_dir(&setup.ws).expect("the workspace").next().is_none(),
            "{file}: something was written into the workspace"
        );
        assert!(!setup.files.join(".gavel").exists(), "{file}: a record was started beside the workflow");

        let check = gavel_in(&setup.files, args!["check", file]);
        assert_eq!(check.code, 2, "{file}: gavel check\n{}", check.stderr);
        assert_eq!(check.stderr, run.stderr, "{file}: check and run report differently");
    }
}

#[test]
fn allow_same_family_opts_a_stage_out_and_the_run_records_it() {
    let setup = same_family();
    for (file, ..) in SAME_FAMILY {
        let text = std::fs::read_to_string(setup.files.join(file)).expect(file);
        let stage = "[[stage]]\nname = \"page\"\n";
        assert!(text.contains(stage), "{file}");
        let allowed = format!("allowed-{file}");
        std::fs::write(
            setup.files.join(&allowed),
            text.replacen(stage, &format!("{stage}allow_same_family = true\n"), 1),
        )
        .expect("write the opted-out workflow");

        let check = gavel_in(&setup.files, args!["check", allowed]);
        assert_eq!(check.code, 0, "{allowed}: gavel check\n{}", check.stderr);
        let ws = setup.ws.join(file);
        std::fs::create_dir(&ws).expect("a workspace");
        let run =
            gavel_in(&setup.files, args!["run", allowed, "--workspace", ws, "--run-id", "allowed", "--json"]);
        assert_eq!(run.code, 0, "{allowed}: gavel run\n{}", run.stderr);
        assert_eq!(run.json()["status"], "pass", "{allowed}");
        let events = record(&ws, "allowed");
        let start = &events[0];
        assert_eq!(start["kind"], "run:start");
        assert_eq!(start["data"]["allow_same_family"], json!(["page"]), "{allowed}: {start}");
    }
}

// ---------------------------------------------------------------------------
// 5. The loop breaker.

#[test]
fn the_same_finding_twice_in_a_row_stops_the_stage_as_not_converging() {
    let ws = workspace();
    let flow = panel_fixture("loop");
    let out = run_json(&flow.join("workflow.toml"), &ws.path, "loop", &[]);
    out.expect_code(1);
    let outcome = out.json();
    assert_eq!(outcome["status"], "fail");
    assert_eq!(outcome["rounds"], 2, "refine = 5, but the loop breaker stops after round 2");
    let text = summary(&outcome);
    assert!(text.contains("not_converging"), "{text}");
    assert!(
        text.contains("page.md:2 never says who the page is for."),
        "the summary lacks the finding: {text}"
    );
    assert_eq!(outcome["stages"][0]["status"], "fail");

    let events = record(&ws.path, "loop");
    assert_eq!(stage_starts(&events), [("page".to_owned(), 1), ("page".to_owned(), 2)]);
    let writes = seat_events(&events, "seat:request", "write");
    assert_eq!(seats_rounds_attempts(&writes), [("writer".to_owned(), 1, 1), ("writer".to_owned(), 2, 1)]);
    assert_eq!(seat_events(&events, "seat:request", "review").len(), 2);
    let end = events.last().expect("run:end");
    assert_eq!(end["data"]["status"], "fail");
    assert_eq!(end["data"]["summary"], outcome["summary"]);
}

#[test]
fn the_loop_breaker_with_on_cap_pass_passes_the_stage_after_round_two() {
    let ws = workspace();
    let flow = panel_fixture("loop");
    let out = run_json(&flow.join("judged.toml"), &ws.path, "judged", &[]);
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 2, "cap = 5, but the loop breaker stops after round 2");
    let stage = &outcome["stages"][0];
    assert_eq!(stage["status"], "pass");
    let decisions = stage["decisions"].to_string();
    assert!(decisions.contains("not_converging"), "{decisions}");

    let events = record(&ws.path, "judged");
    assert_eq!(seat_events(&events, "seat:request", "write").len(), 2);
    let judged = of_kind(&events, "refine:judge");
    assert_eq!(judged.len(), 2);
    for judge in &judged {
        assert_eq!(
            judge["data"]["findings"],
            json!([{"finding": "F1", "decision": "act", "reason": "New staff must know the page is for them."}]),
            "{judge}"
        );
    }
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass");
}

#[test]
fn the_loop_breaker_sees_the_same_finding_whatever_reason_the_judge_gives() {
    let ws = workspace();
    let flow = panel_fixture("loop");
    let out = run_json(&flow.join("rewording.toml"), &ws.path, "reworded", &[]);
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass");
    let decisions = outcome["stages"][0]["decisions"].to_string();
    assert!(decisions.contains("not_converging"), "{decisions}");
    let events = record(&ws.path, "reworded");
    assert_eq!(
        seat_events(&events, "seat:request", "write").len(),
        2,
        "the same finding went back in rounds 1 and 2; round 3 should not have run"
    );
}

#[test]
fn a_stage_passed_by_the_loop_breaker_records_why() {
    let ws = workspace();
    let flow = panel_fixture("loop");
    run_json(&flow.join("judged.toml"), &ws.path, "why", &[]).expect_code(0);
    let text = std::fs::read_to_string(record_path(&ws.path, "why")).expect("the record");
    assert!(text.contains("not_converging"), "the record never says why the stage passed:\n{text}");
}

#[test]
fn a_judge_names_unmerged_findings_f1_to_fn() {
    let ws = workspace();
    let flow = panel_fixture("loop");
    let out = run_json(&flow.join("skipping.toml"), &ws.path, "skips", &[]);
    out.expect_code(0);
    assert_eq!(out.json()["rounds"], 1);
    let events = record(&ws.path, "skips");
    let judged = of_kind(&events, "refine:judge");
    assert_eq!(judged.len(), 1);
    assert_eq!(judged[0]["data"]["route"], "pass");
    assert_eq!(judged[0]["data"]["reason"], "the judge skips the only finding");
    assert_eq!(seat_events(&events, "seat:request", "write").len(), 1, "a skipped finding went back");
}

// ---------------------------------------------------------------------------
// 6. A budget.

/// Asserts every `seat:request` has its `seat:reply` (no request was cut off).
#[track_caller]
fn every_request_answered(events: &[Value]) {
    let replied: BTreeSet<_> = of_kind(events, "seat:reply").into_iter().map(seat_key).collect();
    for request in of_kind(events, "seat:request") {
        assert!(replied.contains(&seat_key(request)), "a request has no reply: {request}");
    }
}

#[test]
fn a_spent_budget_pauses_between_requests_until_a_new_budget_is_given() {
    let ws = workspace();
    let flow = panel_fixture("budget");
    let out = run_json(&flow.join("workflow.toml"), &ws.path, "budget", &[]);
    out.expect_code(3);
    let outcome = out.json();
    assert_eq!(outcome["status"], "paused");
    assert_eq!(outcome["waiting_for"], "budget");
    assert!(summary(&outcome).contains("budget_limited"), "{outcome}");
    assert_eq!(outcome["usage"]["cost_usd"], 0.04);

    let state = status_json(&ws.path, "budget");
    assert_eq!(state["status"]["state"], "paused", "{state}");
    assert_eq!(state["status"]["waiting_for"], "budget", "{state}");
    let reason = state["status"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("budget_limited"), "{reason}");

    let events = record(&ws.path, "budget");
    every_request_answered(&events);
    let asked: Vec<(String, u64, u64)> = seats_rounds_attempts(&of_kind(&events, "seat:request"));
    assert_eq!(
        asked,
        [("writer".to_owned(), 1, 1), ("critic".to_owned(), 1, 1)],
        "the request that passed the budget was the last one sent"
    );
    let pause = events.last().expect("run:pause");
    assert_eq!(pause["kind"], "run:pause");
    assert_eq!(pause["data"]["waiting_for"], "budget");

    // The same budget: paused again at once, no request sent.
    let again = resume_json(&ws.path, "budget", &[]);
    again.expect_code(3);
    assert_eq!(again.json()["waiting_for"], "budget");
    let events = record(&ws.path, "budget");
    assert_eq!(of_kind(&events, "seat:request").len(), 2, "a request was sent past the budget");
    assert_eq!(events.last().expect("run:pause")["kind"], "run:pause");

    // A new budget: the run goes on and passes.
    let resumed = resume_json(&ws.path, "budget", &["--max-cost-usd", "100"]);
    resumed.expect_code(0);
    let outcome = resumed.json();
    assert_eq!(outcome["status"], "pass");
    assert_eq!(outcome["rounds"], 2);
    assert_eq!(outcome["usage"]["cost_usd"], 0.08);
    let events = record(&ws.path, "budget");
    every_request_answered(&events);
    assert_eq!(seat_events(&events, "seat:request", "write").len(), 2);
    assert_eq!(stage_starts(&events), [("page".to_owned(), 1), ("page".to_owned(), 2)]);
    assert_eq!(events.last().expect("run:end")["data"]["status"], "pass");
}

#[test]
fn a_raised_budget_survives_a_kill() {
    let ws = workspace();
    let flow = panel_fixture("budget");
    run_json(&flow.join("workflow.toml"), &ws.path, "raised", &[]).expect_code(3);
    let paused_at = record(&ws.path, "raised").len();

    // Raise the budget; the process dies right after the next request is
    // recorded (run:resume, then seat:request).
    let killed = gavel_cmd()
        .env("GAVEL_CRASH_AFTER_SEQ", (paused_at + 2).to_string())
        .args(args!["-q", "resume", "raised", "--workspace", ws.path, "--max-cost-usd", "100"])
        .output()
        .expect("gavel runs");
    assert_eq!(killed.status.signal(), Some(9), "the fault-injection hook did not fire");
    let events = record(&ws.path, "raised");
    assert_eq!(events.len(), paused_at + 2);
    assert_eq!(events.last().expect("seat:request")["kind"], "seat:request");

    let resumed = resume_json(&ws.path, "raised", &[]);
    resumed.expect_code(0);
    assert_eq!(resumed.json()["status"], "pass");
}

// ---------------------------------------------------------------------------
// 7. A merge that fails, a voter that fails; 8. a block.

#[test]
fn a_merge_that_fails_twice_leaves_the_findings_unmerged() {
    let ws = workspace();
    let flow = panel_fixture("merge-fails");
    let out = run_json(&flow.join("workflow.toml"), &ws.path, "unmerged", &[]);
    out.expect_code(1);
    let outcome = out.json();
    assert_eq!(outcome["status"], "fail");

    let events = record(&ws.path, "unmerged");
    let merges = seat_events(&events, "seat:request", "merge");
    assert_eq!(seats_rounds_attempts(&merges), [("first".to_owned(), 1, 1), ("first".to_owned(), 1, 2)]);
    assert_ne!(
        merges[0]["data"]["prompt_sha256"], merges[1]["data"]["prompt_sha256"],
        "the second ask carries no note"
    );
    let data = only_synthesis(&events);
    assert_eq!(data["merge_failed"], true);
    assert_eq!(data["no_votes_from"], json!([]));
    // One finding per raw finding, F1..F3 in reviewer order, voted on as they are.
    assert_eq!(
        synthesis_entries(data),
        [
            json!({
                "result": "kept",
                "id": "F1",
                "raised_by": ["page-1"],
                "severity": "should-fix",
                "evidence": "The page never says who it is for.",
                "votes": ["page-2 agree: Say it is for new staff."],
            }),
            json!({
                "result": "kept",
                "id": "F2",
                "raised_by": ["page-2"],
                "severity": "block",
                "evidence": "The page has no date.",
                "votes": ["page-1 agree: It needs a date."],
            }),
            json!({
                "result": "disputed",
                "id": "F3",
                "raised_by": ["page-2"],
                "severity": "nice-to-have",
                "evidence": "The title could be friendlier.",
                "votes": ["page-1 disagree: The title is fine."],
            }),
        ]
    );
    let members: Vec<&Value> =
        data["entries"].as_array().expect("entries").iter().map(|e| &e["finding"]["members"]).collect();
    assert_eq!(members, [&json!(["page-1.1"]), &json!(["page-2.1"]), &json!(["page-2.2"])]);
    assert_eq!(seat_events(&events, "seat:request", "vote").len(), 2, "each reviewer votes once");
}

#[test]
fn a_voter_that_fails_twice_keeps_what_it_was_shown_disputed() {
    let ws = workspace();
    let flow = panel_fixture("voter-fails");
    let out = run_json(&flow.join("workflow.toml"), &ws.path, "no-vote", &[]);
    out.expect_code(1);
    let outcome = out.json();
    let text = summary(&outcome);
    assert!(text.contains("The page never says who it is for."), "the disputed finding is gone: {text}");
    assert!(!text.contains("every office"), "the dropped finding went on: {text}");

    let events = record(&ws.path, "no-vote");
    let failed = seat_events(&events, "seat:error", "vote");
    assert_eq!(seats_rounds_attempts(&failed), [("d".to_owned(), 1, 1), ("d".to_owned(), 1, 2)]);
    let data = only_synthesis(&events);
    assert_eq!(data["merge_failed"], false);
    assert_eq!(data["no_votes_from"], json!(["page-4"]));
    assert_eq!(
        synthesis_entries(data),
        [
            // Two of two voters disagree and outnumber its raiser, but page-4
            // was shown it and never voted.
            json!({
                "result": "disputed",
                "id": "F1",
                "raised_by": ["page-1"],
                "severity": "should-fix",
                "evidence": "The page never says who it is for.",
                "votes": ["page-2 disagree: The title says it.", "page-3 disagree: It is obvious."],
            }),
            // page-4's own finding was not shown to it: dropped.
            json!({
                "result": "dropped",
                "id": "F2",
                "raised_by": ["page-4"],
                "severity": "should-fix",
                "evidence": "The page should list every office.",
                "votes": [
                    "page-1 disagree: One office is enough here.",
                    "page-2 disagree: Too much.",
                    "page-3 disagree: Out of scope.",
                ],
            }),
        ]
    );
}

#[test]
fn a_block_most_voters_disagree_with_stays_disputed() {
    let ws = workspace();
    let flow = panel_fixture("block-disputed");
    let out = run_json(&flow.join("workflow.toml"), &ws.path, "block", &[]);
    out.expect_code(1);
    let outcome = out.json();
    let text = summary(&outcome);
    assert!(text.contains("[block] page.md tells staff to share their password."), "{text}");
    assert!(!text.contains("no date"), "the dropped finding went on: {text}");

    let events = record(&ws.path, "block");
    let data = only_synthesis(&events);
    assert_eq!(data["merge_failed"], false);
    assert_eq!(data["no_votes_from"], json!([]));
    assert_eq!(
        synthesis_entries(data),
        [
            json!({
                "result": "disputed",
                "id": "F1",
                "raised_by": ["page-1"],
                "severity": "block",
                "evidence": "page.md tells staff to share their password.",
                "votes": ["page-2 disagree: It is a joke.", "page-3 disagree: It is a joke."],
            }),
            json!({
                "result": "dropped",
                "id": "F2",
                "raised_by": ["page-1"],
                "severity": "should-fix",
                "evidence": "The page has no date.",
                "votes": ["page-2 disagree: Pages need no date.", "page-3 disagree: Pages need no date."],
            }),
        ]
    );
}
