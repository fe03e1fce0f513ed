//! Goals end to end: `gavel goal ...`, `gavel hook ...` and
//! `gavel schema goal`, each test in its own temporary git repository.
//!
//! Here the hook is fed the exact JSON Claude Code sends. A real `claude`
//! session whose Stop hook is gavel, kept going until its criterion passes, is
//! in the real-CLI group: `tests/real_cli/stop_hook.rs`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{Out, events, fixture, gavel_cmd, gavel_in, kinds, read_bytes, tempdir};

/// A temporary git repository with one commit (a README and a src folder).
struct Repo {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Repo {
    fn new() -> Self {
        let dir = tempdir();
        // Canonical, so paths gavel prints match the ones tests build.
        let root = dir.path().canonicalize().unwrap();
        let repo = Self { _dir: dir, root };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.write("README.md", "# Client\n\nA small HTTP client.\n");
        repo.write("src/lib.rs", "pub fn get() {}\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "start"]);
        repo
    }

    fn git(&self, args: &[&str]) {
        let status = Command::new("git")
            .args([
                "-c",
                "user.name=gavel tests",
                "-c",
                "user.email=tests@gavel.invalid",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?} failed");
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn goal_dir(&self, id: &str) -> PathBuf {
        self.root.join(".gavel/goals").join(id)
    }

    /// Writes a goal file by hand (its first evaluation adopts it).
    fn goal_file(&self, id: &str, yaml: &str) {
        self.write(&format!(".gavel/goals/{id}/goal.yaml"), yaml);
    }

    fn record(&self, id: &str) -> PathBuf {
        self.goal_dir(id).join("events.jsonl")
    }

    fn gavel(&self, args: &[&str]) -> Out {
        gavel_in(&self.root, args)
    }

    fn evaluate(&self, id: &str, extra: &[&str]) -> (Out, Value) {
        let mut args = vec!["goal", "evaluate", id, "--json"];
        args.extend_from_slice(extra);
        let out = self.gavel(&args);
        let json = out.json();
        (out, json)
    }

    /// The Stop hook's input exactly as Claude Code sends it, for this repository.
    fn stop_input(&self, active: bool) -> Vec<u8> {
        let template = std::fs::read_to_string(fixture("goals").join("stop-input.json")).unwrap();
        template
            .replace("{CWD}", self.root.to_str().unwrap())
            .replace("{ACTIVE}", if active { "true" } else { "false" })
            .into_bytes()
    }
}

/// Runs `gavel hook stop` from another folder, feeding `input` on stdin.
fn hook(input: &[u8]) -> Out {
    let mut child = gavel_cmd()
        .args(["hook", "stop"])
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The goal's record as JSON values.
fn record_events(repo: &Repo, id: &str) -> Vec<Value> {
    events(&repo.record(id))
}

fn evidence(repo: &Repo, rel: &str) -> Value {
    let text = std::fs::read_to_string(repo.path(rel)).unwrap();
    // Into untyped JSON: YAML 1.1 words such as `no` must stay strings.
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    serde_saphyr::from_str_with_options(&text, options).unwrap()
}

fn criterion<'a>(verdict: &'a Value, id: &str) -> &'a Value {
    verdict["criteria"].as_array().unwrap().iter().find(|c| c["id"] == id).unwrap()
}

const ONE_COMMAND: &str = "id: retries
title: Add retries to the HTTP client
criteria:
  - id: AC1
    text: The retry marker exists
    command: test -f src/retry.rs
    limits: Does not prove behaviour under real network faults
";

#[test]
fn a_new_goal_is_written_with_its_base_commit_and_listed() {
    let repo = Repo::new();
    let out = repo.gavel(&[
        "goal",
        "new",
        "retries",
        "--title",
        "Add retries",
        "--criterion",
        "Retries on 503::grep -q retry src/lib.rs",
        "--criterion",
        "The README explains the retry setting",
        "--allowed-path",
        "src/**",
        "--json",
    ]);
    out.expect_code(0);
    let created = out.json();
    assert_eq!(created["goal"], "retries");
    assert_eq!(created["file"], ".gavel/goals/retries/goal.yaml");
    let head = Command::new("git").args(["rev-parse", "HEAD"]).current_dir(&repo.root).output().unwrap();
    let head = String::from_utf8(head.stdout).unwrap().trim().to_owned();
    assert_eq!(created["base_commit"], head);

    let yaml = std::fs::read_to_string(repo.goal_dir("retries").join("goal.yaml")).unwrap();
    assert!(yaml.contains("command: grep -q retry src/lib.rs"), "{yaml}");
    assert!(yaml.contains("judge: true"), "{yaml}");
    assert!(yaml.contains("allowed_paths: [\"src/**\"]"), "{yaml}");
    assert!(!yaml.contains(&head), "creation facts live in the record, not the goal file:\n{yaml}");

    let record = record_events(&repo, "retries");
    assert_eq!(kinds(&record), ["goal:created"]);
    assert_eq!(record[0]["data"]["base_commit"], head);
    assert!(repo.goal_dir("retries").join("state.md").is_file());

    // Twice is refused, and the first goal is untouched.
    let before = read_bytes(&repo.record("retries"));
    repo.gavel(&["goal", "new", "retries", "--title", "x", "--criterion", "a::true"]).expect_code(2);
    assert_eq!(read_bytes(&repo.record("retries")), before);
    repo.gavel(&["goal", "new", "Bad Id", "--title", "x", "--criterion", "a::true"]).expect_code(2);

    let list = repo.gavel(&["goal", "list", "--json"]);
    list.expect_code(0);
    assert_eq!(list.json()[0]["goal"], "retries");
    assert_eq!(list.json()[0]["status"], "active");
    let text = repo.gavel(&["goal", "list"]);
    assert!(text.stdout.contains("retries") && text.stdout.contains("not evaluated"), "{}", text.stdout);
}

#[test]
fn pass_writes_evidence_and_only_proposes_achieved() {
    let repo = Repo::new();
    repo.goal_file("retries", ONE_COMMAND);
    repo.write("src/retry.rs", "// retries\n");
    let (out, verdict) = repo.evaluate("retries", &["--run-id", "r1"]);
    out.expect_code(0);
    assert_eq!(verdict["verdict"], "pass");
    assert_eq!(verdict["confidence"], 1.0);
    assert_eq!(verdict["reason"], "all_criteria_pass");
    assert_eq!(verdict["run_id"], "r1");
    assert_eq!(verdict["delta"], json!([{"criterion": "AC1", "from": null, "to": "pass"}]));
    assert_eq!(verdict["proposed_transition"]["to"], "achieved");
    assert_eq!(verdict["status"], "active", "a terminal status is only proposed");
    assert!(verdict["next_step_hint"].as_str().unwrap().contains("gavel goal confirm retries"));
    assert!(out.stderr.contains("adopted"), "a hand-written goal is adopted: {}", out.stderr);

    let ac1 = criterion(&verdict, "AC1");
    assert_eq!(ac1["status"], "pass");
    assert_eq!(ac1["decided_by"], "command");
    let path = ".gavel/goals/retries/runs/r1/evidence/AC1.evidence.yaml";
    assert_eq!(ac1["evidence"], path);
    let file = evidence(&repo, path);
    assert_eq!(file["kind"], "command_result");
    assert_eq!(file["proves"], json!(["AC1"]));
    assert_eq!(file["limits"], "Does not prove behaviour under real network faults");
    assert_eq!(file["command"]["line"], "test -f src/retry.rs");
    assert_eq!(file["command"]["exit_code"], 0);
    assert_eq!(file["command"]["timed_out"], false);
    assert!(file["command"]["output_sha256"].as_str().unwrap().len() == 64);
    assert!(file["when"].as_str().unwrap().ends_with('Z'));
    let bytes = std::fs::read(repo.path(path)).unwrap();
    assert_eq!(ac1["evidence_sha256"], gavel_goals::sha256_hex(&bytes), "the record pins the evidence bytes");

    // The run id is used: a second evaluation with it is refused, unchanged record.
    let before = read_bytes(&repo.record("retries"));
    repo.gavel(&["goal", "evaluate", "retries", "--run-id", "r1"]).expect_code(2);
    assert_eq!(read_bytes(&repo.record("retries")), before);
}

#[test]
fn fail_names_the_failing_criterion_and_its_output() {
    let repo = Repo::new();
    repo.goal_file(
        "retries",
        "id: retries\ntitle: t\ncriteria:\n  - id: AC1\n    text: Tests pass\n    command: echo 'test retries ... FAILED'; echo 'oops' >&2; exit 3\n  - id: AC2\n    text: Optional lint\n    command: exit 1\n    must_pass: false\n",
    );
    let (out, verdict) = repo.evaluate("retries", &[]);
    out.expect_code(1);
    assert_eq!(verdict["verdict"], "fail");
    assert_eq!(verdict["reason"], "criteria_failed");
    assert_eq!(verdict["summary"], "1 of 1 must_pass criteria fail: AC1");
    let ac1 = criterion(&verdict, "AC1");
    assert_eq!(ac1["exit"], 3);
    let tail = ac1["output_tail"].as_str().unwrap();
    assert!(tail.contains("FAILED") && tail.contains("oops"), "stderr is merged in order: {tail}");
    assert_eq!(criterion(&verdict, "AC2")["status"], "fail", "optional criteria are reported, not needed");
    assert!(verdict["next_step_hint"].as_str().unwrap().contains("make AC1 pass"));
    assert!(verdict["proposed_transition"].is_null());
    let file = evidence(&repo, ac1["evidence"].as_str().unwrap());
    assert_eq!(file["status"], "fail");
    assert_eq!(file["command"]["exit_code"], 3);
}

#[test]
fn a_criterion_without_a_command_leaves_a_deterministic_goal_incomplete() {
    let repo = Repo::new();
    repo.goal_file(
        "docs",
        "id: docs\ntitle: Document retries\ncriteria:\n  - id: AC1\n    text: It builds\n    command: \"true\"\n  - id: AC2\n    text: The README explains the retry setting\n    judge: true\n",
    );
    let (out, verdict) = repo.evaluate("docs", &[]);
    out.expect_code(3);
    assert_eq!(verdict["verdict"], "incomplete");
    assert_eq!(verdict["confidence"], 0.0);
    assert_eq!(verdict["status"], "waiting_for_user");
    let ac2 = criterion(&verdict, "AC2");
    assert_eq!(ac2["status"], "pending");
    assert!(ac2["evidence"].is_null());
    assert!(verdict["next_step_hint"].as_str().unwrap().contains("evaluator: hybrid"));
    assert!(!kinds(&record_events(&repo, "docs")).contains(&"goal:judged".to_owned()));
}

#[test]
fn hybrid_asks_the_judge_only_about_the_fuzzy_criterion() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.goal_dir("docs")).unwrap();
    std::fs::copy(fixture("goals").join("judge.toml"), repo.goal_dir("docs").join("judge.toml")).unwrap();
    repo.goal_file(
        "docs",
        "id: docs\ntitle: Document retries\ncriteria:\n  - id: AC1\n    text: The README mentions retries\n    command: grep -qi retr README.md\n  - id: AC2\n    text: The README explains the retry setting\n    judge: true\nevaluator: hybrid\njudge_seat: {engine: script, script: judge.toml}\n",
    );
    // First with the command failing: the goal fails on the command alone and
    // the judge is not asked at all.
    let (out, verdict) = repo.evaluate("docs", &[]);
    out.expect_code(1);
    assert_eq!(criterion(&verdict, "AC2")["status"], "pending");
    assert!(!kinds(&record_events(&repo, "docs")).contains(&"goal:judged".to_owned()));

    repo.write("README.md", "# Client\n\nRetries: set `retries = 3` to retry a 503 with backoff.\n");
    let (out, verdict) = repo.evaluate("docs", &[]);
    out.expect_code(0);
    assert_eq!(verdict["verdict"], "pass");
    assert_eq!(verdict["confidence"], 0.8, "the judge's confidence");
    assert_eq!(criterion(&verdict, "AC1")["decided_by"], "command");
    let ac2 = criterion(&verdict, "AC2");
    assert_eq!(ac2["decided_by"], "judge");
    assert_eq!(ac2["status"], "pass");
    let file = evidence(&repo, ac2["evidence"].as_str().unwrap());
    assert_eq!(file["kind"], "judge_decision");
    assert_eq!(file["judge"]["evidence"], "README.md:3 explains the retry setting");

    let judged: Vec<Value> =
        record_events(&repo, "docs").into_iter().filter(|e| e["kind"] == "goal:judged").collect();
    assert_eq!(judged.len(), 1, "one request, for one criterion");
    assert_eq!(judged[0]["data"]["criterion"], "AC2");
    assert_eq!(judged[0]["data"]["verdict"], "met");
    assert!(
        judged.iter().all(|e| e["data"]["criterion"] != "AC1"),
        "a judge is never asked what a command answers"
    );
}

#[test]
fn a_timeout_is_a_failure() {
    let repo = Repo::new();
    repo.goal_file(
        "slow",
        "id: slow\ntitle: t\ncriteria:\n  - id: AC1\n    text: Finishes\n    command: sleep 5\n    timeout_seconds: 1\n",
    );
    let started = Instant::now();
    let (out, verdict) = repo.evaluate("slow", &[]);
    out.expect_code(1);
    assert!(
        started.elapsed() < Duration::from_millis(4500),
        "stopped at its timeout: {:?}",
        started.elapsed()
    );
    let ac1 = criterion(&verdict, "AC1");
    assert_eq!(ac1["status"], "fail");
    assert_eq!(ac1["timed_out"], true);
    assert!(ac1["exit"].is_null());
    assert!(ac1["note"].as_str().unwrap().contains("timed out after 1 s"), "{}", ac1["note"]);
    let file = evidence(&repo, ac1["evidence"].as_str().unwrap());
    assert_eq!(file["command"]["timed_out"], true);
    assert_eq!(file["command"]["timeout_seconds"], 1);
}

#[test]
fn files_outside_the_allowed_paths_block_the_goal_and_are_named() {
    let repo = Repo::new();
    repo.gavel(&[
        "goal",
        "new",
        "retries",
        "--title",
        "t",
        "--criterion",
        "ok::true",
        "--allowed-path",
        "src/**",
    ])
    .expect_code(0);
    repo.write("src/retry.rs", "// inside\n");
    let (out, verdict) = repo.evaluate("retries", &[]);
    out.expect_code(0);
    assert_eq!(verdict["path_boundary"]["violations"], json!([]));

    repo.write("README.md", "# changed\n");
    repo.write("notes/todo.txt", "untracked\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "work"]);
    repo.write("scratch.txt", "untracked too\n");
    let (out, verdict) = repo.evaluate("retries", &[]);
    out.expect_code(1);
    assert_eq!(verdict["verdict"], "blocked");
    assert_eq!(verdict["reason"], "path_boundary_violation");
    assert_eq!(verdict["status"], "blocked");
    assert_eq!(verdict["path_boundary"]["violations"], json!(["README.md", "notes/todo.txt", "scratch.txt"]));
    let summary = verdict["summary"].as_str().unwrap();
    assert!(summary.contains("README.md") && summary.contains("scratch.txt"), "{summary}");
    assert!(verdict["proposed_transition"].is_null(), "the pass proposal is withdrawn");
    let file = evidence(&repo, verdict["path_boundary"]["evidence"].as_str().unwrap());
    assert_eq!(file["kind"], "path_boundary_check");
    assert_eq!(file["proves"], json!([]));
}

#[test]
fn a_terminal_transition_takes_effect_only_on_confirm() {
    let repo = Repo::new();
    repo.goal_file("retries", ONE_COMMAND);
    repo.gavel(&["goal", "confirm", "retries"]).expect_code(2);
    repo.write("src/retry.rs", "// retries\n");
    repo.evaluate("retries", &[]).0.expect_code(0);
    let status = repo.gavel(&["goal", "status", "retries", "--json"]).json();
    assert_eq!(status["status"], "active");
    assert_eq!(status["proposal"]["to"], "achieved");

    // A rejection keeps the goal going; the next passing evaluation proposes again.
    repo.gavel(&["goal", "confirm", "retries", "--reject", "--reason", "not yet"]).expect_code(0);
    let status = repo.gavel(&["goal", "status", "retries", "--json"]).json();
    assert_eq!(status["status"], "active");
    assert!(status["proposal"].is_null());
    repo.evaluate("retries", &[]).0.expect_code(0);

    // goal.yaml changed since the proposal: confirming is refused until evaluated again.
    repo.goal_file("retries", &format!("{ONE_COMMAND}    must_pass: true\n"));
    let out = repo.gavel(&["goal", "confirm", "retries"]);
    out.expect_code(2);
    assert!(out.stderr.contains("changed since"), "{}", out.stderr);
    repo.evaluate("retries", &[]).0.expect_code(0);

    let out = repo.gavel(&["goal", "confirm", "retries", "--by", "ada", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["status"], "achieved");
    let record = record_events(&repo, "retries");
    let decided: Vec<&Value> = record.iter().filter(|e| e["kind"] == "goal:decided").collect();
    assert_eq!(decided.len(), 2);
    assert_eq!(decided[1]["data"], json!({"to": "achieved", "approved": true, "by": "ada", "reason": ""}));
    assert!(
        record.iter().filter(|e| e["kind"] == "goal:status").all(|e| e["data"]["to"] != "achieved"),
        "achieved is never written as a status directly"
    );

    // A finished goal is not evaluated again, and its record does not change.
    let before = read_bytes(&repo.record("retries"));
    let out = repo.gavel(&["goal", "evaluate", "retries"]);
    out.expect_code(2);
    assert!(out.stderr.contains("achieved"), "{}", out.stderr);
    assert_eq!(read_bytes(&repo.record("retries")), before);
}

#[test]
fn three_unchanged_stop_hook_evaluations_propose_failed() {
    let repo = Repo::new();
    repo.goal_file(
        "stuck",
        "id: stuck\ntitle: t\ncriteria:\n  - id: AC1\n    text: Builds\n    command: \"true\"\n  - id: AC2\n    text: Tests pass\n    command: \"false\"\n",
    );
    for round in 1..=2 {
        let (out, verdict) = repo.evaluate("stuck", &["--trigger", "stop-hook"]);
        out.expect_code(1);
        assert!(verdict["proposed_transition"].is_null(), "round {round}");
        assert_eq!(verdict["stuck"], false);
    }
    let (out, verdict) = repo.evaluate("stuck", &["--trigger", "stop-hook"]);
    out.expect_code(1);
    assert_eq!(verdict["stuck"], true);
    assert_eq!(verdict["proposed_transition"]["to"], "failed");
    assert_eq!(verdict["proposed_transition"]["reason"], "stuck_no_progress");
    assert_eq!(verdict["status"], "active", "failed is only proposed");

    // A person looking (a manual evaluation, same results) does not withdraw it.
    let (_, verdict) = repo.evaluate("stuck", &[]);
    assert_eq!(verdict["proposed_transition"]["to"], "failed");
    repo.gavel(&["goal", "confirm", "stuck"]).expect_code(0);
    assert_eq!(repo.gavel(&["goal", "status", "stuck", "--json"]).json()["status"], "failed");
}

#[test]
fn a_manual_evaluation_between_stop_hook_ones_breaks_the_row() {
    let repo = Repo::new();
    repo.goal_file("row", "id: row\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: \"false\"\n");
    repo.evaluate("row", &["--trigger", "stop-hook"]);
    repo.evaluate("row", &["--trigger", "stop-hook"]);
    repo.evaluate("row", &[]);
    let (_, verdict) = repo.evaluate("row", &["--trigger", "stop-hook"]);
    assert_eq!(verdict["stuck"], false);
}

#[test]
fn state_md_is_rebuilt_after_deletion_from_the_record_alone() {
    let repo = Repo::new();
    repo.goal_file("retries", ONE_COMMAND);
    repo.evaluate("retries", &[]);
    let state_md = repo.goal_dir("retries").join("state.md");
    let before = std::fs::read_to_string(&state_md).unwrap();
    assert!(before.contains("| AC1 | The retry marker exists | yes | ❌ fail |"), "{before}");
    assert!(before.contains("**fail**"), "{before}");
    assert!(before.contains("](runs/"), "evidence links relative to the goal folder: {before}");

    let record = read_bytes(&repo.record("retries"));
    std::fs::remove_file(&state_md).unwrap();
    let out = repo.gavel(&["goal", "status", "retries"]);
    out.expect_code(0);
    assert_eq!(std::fs::read_to_string(&state_md).unwrap(), before, "the same view, from the same record");
    assert_eq!(out.stdout, before);
    assert_eq!(read_bytes(&repo.record("retries")), record, "a view never writes the record");
}

/// What Claude Code reads from a Stop hook's stdout (exit code 0): nothing,
/// or one JSON object of these keys; `decision` is "block" with a reason.
fn hook_answer(out: &Out) -> Option<Value> {
    out.expect_code(0);
    if out.stdout.trim().is_empty() {
        return None;
    }
    let value: Value = serde_json::from_str(out.stdout.trim()).expect("one JSON object on stdout");
    let object = value.as_object().expect("an object");
    for key in object.keys() {
        assert!(
            ["decision", "reason", "continue", "stopReason", "suppressOutput", "systemMessage"]
                .contains(&key.as_str()),
            "Claude Code does not read `{key}`"
        );
    }
    if let Some(decision) = object.get("decision") {
        assert_eq!(decision, "block");
        assert!(!object["reason"].as_str().expect("a reason with a block").is_empty());
    }
    Some(value)
}

fn blocks(answer: Option<&Value>) -> bool {
    answer.is_some_and(|a| a.get("decision").is_some())
}

#[test]
fn the_stop_hook_blocks_while_failing_and_allows_once_passing() {
    let repo = Repo::new();
    repo.goal_file(
        "retries",
        "id: retries\ntitle: Add retries\ncriteria:\n  - id: AC1\n    text: The retry module exists\n    command: \"test -f src/retry.rs || { echo 'src/retry.rs: missing'; exit 1; }\"\n",
    );
    let out = hook(&repo.stop_input(false));
    let answer = hook_answer(&out).expect("a block");
    assert!(blocks(Some(&answer)));
    let reason = answer["reason"].as_str().unwrap();
    assert!(reason.contains("AC1 The retry module exists"), "{reason}");
    assert!(reason.contains("src/retry.rs: missing"), "the output tail is in the reason: {reason}");

    repo.write("src/retry.rs", "// retries\n");
    let answer = hook_answer(&hook(&repo.stop_input(true)));
    assert!(!blocks(answer.as_ref()), "{answer:?}");
    let record = record_events(&repo, "retries");
    let hooks: Vec<&Value> = record.iter().filter(|e| e["kind"] == "hook:stop").collect();
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0]["data"]["decision"], "block");
    assert_eq!(hooks[0]["data"]["session_id"], "eb5b0174-0555-4601-804e-672d68069c89");
    assert_eq!(hooks[1]["data"]["decision"], "allow");
    assert_eq!(hooks[1]["data"]["reason"], "passes");
    let evaluated: Vec<&Value> = record.iter().filter(|e| e["kind"] == "goal:evaluated").collect();
    assert!(evaluated.iter().all(|e| e["data"]["trigger"] == "stop-hook"));
    assert_eq!(repo.gavel(&["goal", "status", "retries", "--json"]).json()["proposal"]["to"], "achieved");
}

#[test]
fn a_re_entered_stop_hook_lets_go_after_max_blocks() {
    let repo = Repo::new();
    repo.goal_file(
        "stubborn",
        "id: stubborn\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: \"false\"\nstop_hook:\n  max_blocks: 2\n  stuck_after: 10\n",
    );
    assert!(blocks(hook_answer(&hook(&repo.stop_input(false))).as_ref()));
    assert!(blocks(hook_answer(&hook(&repo.stop_input(true))).as_ref()));
    let out = hook(&repo.stop_input(true));
    let answer = hook_answer(&out);
    assert!(!blocks(answer.as_ref()), "{answer:?}");
    assert!(answer.unwrap()["systemMessage"].as_str().unwrap().contains("2 blocks in a row"));
    let last = record_events(&repo, "stubborn").pop().unwrap();
    assert_eq!(last["data"]["reason"], "block_limit");

    // A new turn (not re-entered) starts counting again.
    assert!(blocks(hook_answer(&hook(&repo.stop_input(false))).as_ref()));
}

#[test]
fn the_stop_hook_lets_a_stuck_agent_stop() {
    let repo = Repo::new();
    repo.goal_file(
        "stuck",
        "id: stuck\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: \"false\"\n",
    );
    assert!(blocks(hook_answer(&hook(&repo.stop_input(false))).as_ref()));
    assert!(blocks(hook_answer(&hook(&repo.stop_input(true))).as_ref()));
    let answer = hook_answer(&hook(&repo.stop_input(true)));
    assert!(!blocks(answer.as_ref()), "stuck: {answer:?}");
    // While `failed` waits for a person, the hook does not evaluate again.
    let evaluations = record_events(&repo, "stuck").iter().filter(|e| e["kind"] == "goal:evaluated").count();
    assert!(!blocks(hook_answer(&hook(&repo.stop_input(false))).as_ref()));
    let after = record_events(&repo, "stuck").iter().filter(|e| e["kind"] == "goal:evaluated").count();
    assert_eq!(after, evaluations);
}

#[test]
fn the_stop_hook_picks_the_most_recently_evaluated_open_goal() {
    let repo = Repo::new();
    repo.goal_file(
        "alpha",
        "id: alpha\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: \"false\"\n",
    );
    repo.goal_file(
        "beta",
        "id: beta\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: \"true\"\n",
    );
    repo.evaluate("alpha", &[]);
    repo.evaluate("beta", &[]);
    let answer = hook_answer(&hook(&repo.stop_input(false)));
    assert!(!blocks(answer.as_ref()), "beta (passing) was evaluated last: {answer:?}");
    repo.evaluate("alpha", &[]);
    assert!(blocks(hook_answer(&hook(&repo.stop_input(false))).as_ref()));
}

#[test]
fn bad_hook_input_lets_the_agent_stop_and_changes_nothing() {
    let repo = Repo::new();
    repo.goal_file("retries", ONE_COMMAND);
    repo.evaluate("retries", &[]);
    let before = read_bytes(&repo.record("retries"));
    let good = String::from_utf8(repo.stop_input(false)).unwrap();
    let cases: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"not json at all".to_vec(),
        b"{\"session_id\": \"x\", \"hook_event_name\": \"Stop\"".to_vec(),
        good.replace("\"Stop\"", "\"PreToolUse\"").into_bytes(),
        good.replace("\"stop_hook_active\": false", "\"stop_hook_active\": \"nope\"").into_bytes(),
        b"[1, 2, 3]".to_vec(),
        vec![0xff, 0xfe, 0x00],
    ];
    for input in cases {
        let out = hook(&input);
        out.expect_code(0);
        assert_eq!(out.stdout, "", "no decision: the agent may stop ({})", String::from_utf8_lossy(&input));
        assert!(out.stderr.contains("gavel hook stop:"), "a clear message: {}", out.stderr);
        assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    }
    assert_eq!(read_bytes(&repo.record("retries")), before);

    // A broken goal file: the person hears of it, the agent may stop, nothing is recorded.
    repo.goal_file("retries", "id: retries\ntitle: t\ncriteria: [\n");
    let out = hook(&repo.stop_input(false));
    let answer = hook_answer(&out).expect("a message for the person");
    assert!(!blocks(Some(&answer)));
    assert!(answer["systemMessage"].as_str().unwrap().contains("goal.yaml"), "{answer}");
    assert_eq!(read_bytes(&repo.record("retries")), before);

    // Outside any project with goals the hook says nothing.
    let elsewhere = tempdir();
    let input = good.replace(repo.root.to_str().unwrap(), elsewhere.path().to_str().unwrap());
    let out = hook(input.as_bytes());
    assert_eq!(hook_answer(&out), None);
}

#[test]
fn bad_goal_files_are_located_and_never_change_the_record() {
    let repo = Repo::new();
    repo.goal_file(
        "shaky",
        "id: shaky\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: \"true\"\n",
    );
    repo.evaluate("shaky", &[]).0.expect_code(0);
    let before = read_bytes(&repo.record("shaky"));
    let runs_before = std::fs::read_dir(repo.goal_dir("shaky").join("runs")).unwrap().count();
    for (name, line_col, needle) in [
        ("bad-unknown-field.yaml", "goal.yaml:6:5", "comand"),
        ("bad-duplicate-id.yaml", "goal.yaml:7:9", "used twice"),
        ("bad-judge-and-command.yaml", "goal.yaml:7:12", "judge: true"),
        ("bad-syntax.yaml", "goal.yaml:3:", "unclosed"),
    ] {
        std::fs::copy(fixture("goals").join(name), repo.goal_dir("shaky").join("goal.yaml")).unwrap();
        let out = repo.gavel(&["goal", "evaluate", "shaky"]);
        out.expect_code(2);
        assert!(out.stderr.contains(line_col), "{name}: expected {line_col} in\n{}", out.stderr);
        assert!(out.stderr.contains(needle), "{name}: expected {needle:?} in\n{}", out.stderr);
        assert!(out.stderr.contains("hint:"), "{name}: what to write instead:\n{}", out.stderr);
        assert!(!out.stderr.contains("panicked"));
        assert_eq!(read_bytes(&repo.record("shaky")), before, "{name} changed the record");
    }
    let runs_after = std::fs::read_dir(repo.goal_dir("shaky").join("runs")).unwrap().count();
    assert_eq!(runs_after, runs_before, "no evidence folder for a goal that did not load");

    // A damaged record is refused by line, never overwritten.
    repo.goal_file(
        "shaky",
        "id: shaky\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: \"true\"\n",
    );
    let mut damaged = before.clone();
    damaged.extend_from_slice(b"{\"v\":1,\"seq\":99}\n");
    std::fs::write(repo.record("shaky"), &damaged).unwrap();
    let out = repo.gavel(&["goal", "evaluate", "shaky"]);
    out.expect_code(2);
    assert!(out.stderr.contains("events.jsonl:"), "{}", out.stderr);
    assert_eq!(read_bytes(&repo.record("shaky")), damaged);
}

#[test]
fn hook_install_merges_into_existing_settings() {
    let repo = Repo::new();
    repo.write(
        ".claude/settings.json",
        &std::fs::read_to_string(fixture("goals").join("settings.json")).unwrap(),
    );
    let before: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.path(".claude/settings.json")).unwrap()).unwrap();
    let out = repo.gavel(&["hook", "install", "--project", repo.root.to_str().unwrap()]);
    out.expect_code(0);
    let text = std::fs::read_to_string(repo.path(".claude/settings.json")).unwrap();
    let after: Value = serde_json::from_str(&text).unwrap();
    for key in ["model", "permissions", "env"] {
        assert_eq!(after[key], before[key], "{key} is kept");
    }
    assert_eq!(after["hooks"]["PostToolUse"], before["hooks"]["PostToolUse"]);
    let stop = &after["hooks"]["Stop"][0]["hooks"][0];
    assert_eq!(stop["type"], "command");
    assert_eq!(stop["command"], "gavel hook stop");
    assert!(stop["timeout"].as_u64().unwrap() >= 300, "criteria commands may take minutes");
    assert!(text.find("\"model\"").unwrap() < text.find("\"permissions\"").unwrap(), "key order kept");

    // Again: nothing changes.
    let out = repo.gavel(&["hook", "install", "--project", repo.root.to_str().unwrap()]);
    out.expect_code(0);
    assert!(out.stderr.contains("nothing changed"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(repo.path(".claude/settings.json")).unwrap(), text);

    // Settings gavel cannot read are not overwritten.
    repo.write(".claude/settings.json", "{\"hooks\": \n");
    let out = repo.gavel(&["hook", "install", "--project", repo.root.to_str().unwrap()]);
    out.expect_code(2);
    assert!(out.stderr.contains("settings.json:"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(repo.path(".claude/settings.json")).unwrap(), "{\"hooks\": \n");
}

#[test]
fn schema_goal_prints_the_json_schema() {
    let out = gavel_in(Path::new("."), ["schema", "goal"]);
    out.expect_code(0);
    let schema = out.json();
    assert_eq!(schema["title"], "gavel goal");
    assert_eq!(schema["required"], json!(["id", "title", "criteria"]));
    assert!(schema["properties"]["evaluator"].is_object());
    assert!(out.stdout.contains("timeout_seconds"));
}

#[test]
fn cancel_mark_and_log() {
    let repo = Repo::new();
    repo.gavel(&["goal", "new", "g", "--title", "t", "--criterion", "x::false"]).expect_code(0);
    repo.gavel(&["goal", "mark", "g", "waiting_for_ci", "--reason", "CI runs the slow suite"]).expect_code(0);
    assert_eq!(repo.gavel(&["goal", "status", "g", "--json"]).json()["status"], "waiting_for_ci");
    let out = repo.gavel(&["goal", "mark", "g", "achieved"]);
    out.expect_code(2);
    assert!(out.stderr.contains("only proposed"), "{}", out.stderr);
    repo.gavel(&["goal", "cancel", "g", "--reason", "superseded"]).expect_code(0);
    let status = repo.gavel(&["goal", "status", "g", "--json"]).json();
    assert_eq!(status["status"], "waiting_for_ci");
    assert_eq!(status["proposal"]["to"], "cancelled");
    // An evaluation does not replace a person's proposal.
    let (_, verdict) = repo.evaluate("g", &[]);
    assert_eq!(verdict["proposed_transition"]["to"], "cancelled");
    repo.gavel(&["goal", "confirm", "g"]).expect_code(0);
    assert_eq!(repo.gavel(&["goal", "status", "g", "--json"]).json()["status"], "cancelled");
    let log = repo.gavel(&["goal", "log", "g"]);
    log.expect_code(0);
    for kind in ["goal:created", "goal:status", "goal:proposed", "goal:evaluated", "goal:decided"] {
        assert!(log.stdout.contains(kind), "{kind} in\n{}", log.stdout);
    }
}
