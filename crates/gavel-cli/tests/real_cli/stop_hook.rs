//! A headless Claude Code session whose Stop hook is gavel (issue 7): the
//! real `claude -p`, in a git repository with a goal and `gavel hook install`'s
//! Stop hook, keeps going until the goal's criterion passes.
//!
//! The fake model first claims to be done without writing anything. The Stop
//! hook (`gavel hook stop`) evaluates the goal, the criterion fails, and the
//! hook blocks the stop; Claude Code sends the block reason back to the model
//! ("Stop hook feedback: ..."), and only a request carrying gavel's reason
//! gets the `Write` tool call that creates the file. After the final answer
//! the hook runs again, the criterion passes, the stop is allowed and claude
//! exits 0.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use gavel_domain::Engine;
use gavel_test_support::{Api, FakeModel, FakeUsage, LoggedRequest, Match, Rule};
use serde_json::{Value, json};

use crate::rig::{KEY, Workspace, assert_key_sent, cli, log, preflight, serve};

const MODEL: &str = "claude-sonnet-4-5";
const GOAL: &str = "ship";
/// The goal's one criterion (`text::command`); its output on failure is
/// [`TAIL`].
const CRITERION: &str =
    "done.txt says shipped::grep -qx shipped done.txt || { echo 'done.txt does not say shipped'; exit 1; }";
const TAIL: &str = "done.txt does not say shipped";
/// The first line of gavel's block reason (`gavel_goals::hook::block_reason`).
const BLOCKED: &str = "gavel: goal `ship` is not achieved yet";
/// How Claude Code hands a Stop hook's block reason to the model.
const FEEDBACK: &str = "Stop hook feedback:";

const PROMPT: &str = "Write done.txt in this repository, containing the one line `shipped`.";
const CLAIM: &str = "Done: done.txt is shipped.";
const FINAL: &str = "Wrote done.txt; it says shipped.";

/// The whole session, both hook runs included, must end within this.
const LIMIT: Duration = Duration::from_secs(120);

/// The rules, in the order the server tries them. Only a conversation that
/// carries gavel's block reason gets the write.
fn script(file: &Path) -> [Rule; 3] {
    let on = Match::any().api(Api::Anthropic).model(MODEL);
    [
        Rule::text(FINAL).when(on.clone().after_tool_result(true)).once().usage(FakeUsage::new(900, 20, 0)),
        Rule::tool_call("Write", json!({"file_path": file, "content": "shipped\n"}))
            .when(on.clone().prompt_contains(BLOCKED).after_tool_result(false))
            .once()
            .usage(FakeUsage::new(800, 40, 0)),
        Rule::text(CLAIM).when(on.after_tool_result(false)).once().usage(FakeUsage::new(700, 10, 0)),
    ]
}

/// Indexes of [`script`]'s rules.
const FINAL_RULE: usize = 0;
const WRITE_RULE: usize = 1;
const CLAIM_RULE: usize = 2;

fn git(repo: &Path, args: &[&str]) {
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
        .current_dir(repo)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?} failed");
}

/// Runs the `gavel` binary under test in `repo`.
fn gavel(repo: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .args(args)
        .current_dir(repo)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gavel {args:?}: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `word` for `sh -c`, quoted only when it needs to be.
fn sh_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c)) {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// Runs claude headlessly in `repo` against `url`, in its own process group,
/// killing the group if it has not ended within [`LIMIT`].
fn run_claude(repo: &Path, home: &Path, url: &str) -> (Output, Duration) {
    use std::os::unix::process::CommandExt as _;

    let mut command = Command::new(cli(Engine::Claude));
    command
        .args(["--output-format", "json", "--permission-mode", "acceptEdits", "--max-turns", "10"])
        .args(["--model", MODEL, "-p", "--", PROMPT])
        .current_dir(repo)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").expect("PATH"))
        .env("HOME", home)
        .env("ANTHROPIC_BASE_URL", url)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        // For the hook: gavel's messages on stderr without colour.
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let child = command.spawn().unwrap();
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    if let Ok(out) = rx.recv_timeout(LIMIT) {
        return (out.unwrap(), started.elapsed());
    }
    let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
    let out = rx.recv_timeout(Duration::from_secs(10)).ok().and_then(Result::ok);
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    let (stdout, stderr) = out.map_or_else(Default::default, |o| (text(&o.stdout), text(&o.stderr)));
    panic!(
        "claude did not end within {LIMIT:?}; killed its process group\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
}

/// The goal's record, one JSON value per event.
fn record(repo: &Path) -> Vec<Value> {
    let path = repo.join(".gavel/goals").join(GOAL).join("events.jsonl");
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The model requests the server answered, in order.
fn model_requests(server: &FakeModel) -> Vec<LoggedRequest> {
    server.requests().into_iter().filter(|r| r.api.is_some()).collect()
}

#[test]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
fn a_claude_session_whose_stop_hook_is_gavel_keeps_going_until_the_criterion_passes() {
    preflight();
    let dir = Workspace::new();
    let repo = dir.join("repo");
    let home = dir.join("home");
    std::fs::create_dir(&repo).unwrap();
    std::fs::create_dir(&home).unwrap();
    std::fs::write(repo.join("README.md"), "# Shipping\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "start"]);

    gavel(&repo, &["goal", "new", GOAL, "--title", "Ship it", "--criterion", CRITERION]);
    // The hook runs this very binary: `gavel` is not on claude's PATH.
    let command = format!("{} hook stop", sh_word(env!("CARGO_BIN_EXE_gavel")));
    gavel(&repo, &["hook", "install", "--command", &command]);
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(".claude/settings.json")).unwrap()).unwrap();
    assert_eq!(settings["hooks"]["Stop"][0]["hooks"][0]["command"], command.as_str(), "{settings}");

    let file = repo.join("done.txt");
    let server = serve(script(&file));
    let (out, elapsed) = run_claude(&repo, &home, &server.url());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let events = record(&repo);
    let context = || {
        let events: Vec<String> = events.iter().map(Value::to_string).collect();
        format!(
            "claude: {:?} after {elapsed:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- requests\n{}--- goal record\n{}",
            out.status,
            log(&server),
            events.join("\n")
        )
    };

    // Claude ended well, with the answer that followed the write.
    assert!(out.status.success(), "{}", context());
    let result: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", context()));
    assert_eq!(result["type"], "result", "{}", context());
    assert_eq!(result["is_error"], false, "{}", context());
    assert_eq!(result["result"], FINAL, "{}", context());
    assert_eq!(std::fs::read_to_string(&file).ok().as_deref(), Some("shipped\n"), "{}", context());

    // Three model requests: the false claim, the write (only for a
    // conversation carrying gavel's block reason), the final answer.
    let requests = model_requests(&server);
    let rules: Vec<Option<usize>> = requests.iter().map(|r| r.rule).collect();
    assert_eq!(rules, [Some(CLAIM_RULE), Some(WRITE_RULE), Some(FINAL_RULE)], "{}", context());
    assert!(requests.iter().all(|r| r.status == 200), "{}", context());
    let body = |i: usize| requests[i].body.to_string();
    assert!(!body(0).contains(BLOCKED), "the first request comes before any hook ran");
    for needle in [FEEDBACK, BLOCKED, "AC1 done.txt says shipped", TAIL, CLAIM] {
        assert!(body(1).contains(needle), "the request after the block carries `{needle}`:\n{}", body(1));
    }
    assert_key_sent(&server);

    // The goal's record: the hook evaluated twice (fail, then pass), blocked
    // the first stop and allowed the second, in claude's session.
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["goal:created", "goal:evaluated", "hook:stop", "goal:evaluated", "goal:proposed", "hook:stop"],
        "{}",
        context()
    );
    let (first, second) = (&events[1]["data"], &events[3]["data"]);
    for (evaluation, verdict) in [(first, "fail"), (second, "pass")] {
        assert_eq!(evaluation["trigger"], "stop-hook", "{evaluation}");
        assert_eq!(evaluation["verdict"], verdict, "{evaluation}");
        assert_eq!(evaluation["criteria"][0]["id"], "AC1", "{evaluation}");
        assert_eq!(evaluation["criteria"][0]["status"], verdict, "{evaluation}");
        let run = evaluation["run_id"].as_str().unwrap();
        let evidence =
            repo.join(".gavel/goals").join(GOAL).join("runs").join(run).join("evidence/AC1.evidence.yaml");
        assert!(evidence.is_file(), "no evidence at {}", evidence.display());
    }
    let session = result["session_id"].as_str().unwrap();
    let (block, allow) = (&events[2]["data"], &events[5]["data"]);
    assert_eq!(
        (&block["decision"], &block["reason"], &block["stop_hook_active"], &block["run_id"]),
        (&json!("block"), &json!("criteria_failed"), &json!(false), &first["run_id"]),
        "{block}"
    );
    assert_eq!(
        (&allow["decision"], &allow["reason"], &allow["stop_hook_active"], &allow["run_id"]),
        (&json!("allow"), &json!("passes"), &json!(true), &second["run_id"]),
        "{allow}"
    );
    assert!(block["session_id"] == session && allow["session_id"] == session, "{}", context());
    assert_eq!(events[4]["data"]["to"], "achieved");

    // Achieved is only proposed: the goal stays active until a person confirms.
    let status: Value =
        serde_json::from_slice(&gavel(&repo, &["goal", "status", GOAL, "--json"]).stdout).unwrap();
    assert_eq!(
        (&status["status"], &status["evaluations"], &status["last"]["verdict"], &status["proposal"]["to"]),
        (&json!("active"), &json!(2), &json!("pass"), &json!("achieved")),
        "{status}"
    );
}
