//! A key gavel hands to a seat never reaches the record or a screen, even
//! when a model echoes it in a successful reply: whole or split across two
//! stream chunks, behind the Anthropic API, Chat Completions or Responses,
//! in a reply to `gavel doctor`, in an agent CLI's final answer, or printed
//! by a `run` command (a secret-looking `env` value of a seat).
//!
//! The key lives in a variable whose name does not look secret
//! (`GAVEL_IT_LLM`), so only the seat's own key handling can know it; and
//! `gavel log` / `gavel status` are run without it, so what they show comes
//! from the record as written.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use gavel_test_support::{Api, FakeModel, FakeScript, Match, Rule};
use serde_json::json;

use crate::common::{Out, events, gavel_cmd, output, tempdir};

/// The key: it reaches the model, and nothing else.
const KEY: &str = "sk-echo-4f1b9c2e77d0-NEVER-SHOWN";
/// Where it lives: a name that does not look like a secret's.
const KEY_VAR: &str = "GAVEL_IT_LLM";
/// What gavel writes in its place.
const MARK: &str = "[redacted $GAVEL_IT_LLM]";

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Asserts `secret` is in no byte of `out`, of anything under `ws/.gavel`,
/// of `gavel log` and of `gavel status` (text and `--json`) for `run_id`;
/// and that `mark` shows where it was (the test is not vacuous).
#[track_caller]
fn assert_nowhere(ws: &Path, run_id: &str, out: &Out, secret: &str, mark: &str) {
    assert!(!out.stdout.contains(secret), "the secret leaked to stdout:\n{}", out.stdout);
    assert!(!out.stderr.contains(secret), "the secret leaked to stderr:\n{}", out.stderr);
    let mut record_text = String::new();
    for file in walk(&ws.join(".gavel")) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains(secret), "the secret leaked into {}:\n{text}", file.display());
        record_text.push_str(&text);
    }
    assert!(
        record_text.contains(mark),
        "the record shows no {mark}: was the secret ever there?\n{record_text}"
    );
    for args in [vec!["log", run_id], vec!["status", run_id], vec!["status", run_id, "--json"]] {
        let shown = output(gavel_cmd().current_dir(ws).args(&args).env_remove(KEY_VAR));
        shown.expect_code(0);
        assert!(!shown.stdout.contains(secret), "`gavel {}` shows it:\n{}", args.join(" "), shown.stdout);
        assert!(!shown.stderr.contains(secret), "`gavel {}` shows it:\n{}", args.join(" "), shown.stderr);
    }
}

/// A one-stage workflow whose builder is `seat` (a TOML inline table).
fn build_workflow(dir: &Path, seat: &str, extra: &str) -> PathBuf {
    std::fs::write(dir.join("brief.md"), "# Hello\n\nWrite a one-line greeting.\n").unwrap();
    let path = dir.join("workflow.toml");
    std::fs::write(
        &path,
        format!(
            r#"name = "secrets"
brief = "brief.md"

[options]
seat_timeout = "20s"

[seats]
writer = {seat}

[[stage]]
name = "greet"
agent = "writer"
writes = ["hello.md"]
{extra}"#
        ),
    )
    .unwrap();
    path
}

/// `gavel run` of `workflow` in `dir/ws` with the key set.
fn run(dir: &Path, workflow: &Path) -> (PathBuf, Out) {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let out = output(
        gavel_cmd()
            .current_dir(&ws)
            .arg("run")
            .arg(workflow)
            .args(["--run-id", "r", "--json"])
            .env(KEY_VAR, KEY),
    );
    (ws, out)
}

/// A builder's files reply with `key_text` in its summary, cut in two in
/// the middle of the key when `split`.
fn files_reply(split: bool) -> Rule {
    let text = json!({
        "files": [{"path": "hello.md", "content": "Hello, new staff!\n"}],
        "summary": format!("wrote it; by the way my key is {KEY}, keep it safe")
    })
    .to_string();
    if split {
        let at = text.find(KEY).unwrap() + KEY.len() / 2;
        Rule::pieces([text[..at].to_owned(), text[at..].to_owned()])
    } else {
        Rule::text(text)
    }
}

#[test]
fn a_key_echoed_in_an_api_reply_is_scrubbed_whole_or_split_across_stream_chunks() {
    for (api, split) in [
        (Api::Anthropic, false),
        (Api::Anthropic, true),
        (Api::Chat, false),
        (Api::Chat, true),
        (Api::Responses, true),
    ] {
        let server = FakeModel::start_blocking(FakeScript::new([files_reply(split)])).unwrap();
        let url = server.url();
        let seat = match api {
            Api::Anthropic => format!(
                r#"{{ engine = "anthropic", model = "claude-sonnet-4-5", base_url = "{url}", api_key_env = "{KEY_VAR}" }}"#
            ),
            Api::Chat => format!(
                r#"{{ engine = "openai", model = "gpt-5.2", base_url = "{url}/v1", api_key_env = "{KEY_VAR}" }}"#
            ),
            _ => format!(
                r#"{{ engine = "openai", model = "gpt-5.2", base_url = "{url}/v1", api_key_env = "{KEY_VAR}", env = {{ GAVEL_OPENAI_API = "responses" }} }}"#
            ),
        };
        let dir = tempdir();
        let workflow = build_workflow(dir.path(), &seat, "");
        let (ws, out) = run(dir.path(), &workflow);
        out.expect_code(0);
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{api:?}");
        let sent = requests[0].header("x-api-key").or(requests[0].header("authorization")).unwrap();
        assert!(sent.contains(KEY), "{api:?}: the key did not reach the model: {sent}");
        assert_eq!(std::fs::read_to_string(ws.join("hello.md")).unwrap(), "Hello, new staff!\n");
        let record = events(&ws.join(".gavel/runs/r/events.jsonl"));
        let reply = record.iter().find(|e| e["kind"] == "seat:reply").unwrap();
        let text = reply["data"]["text"].as_str().unwrap();
        assert!(text.contains(&format!("my key is {MARK}, keep it safe")), "{api:?} split={split}: {text}");
        assert_nowhere(&ws, "r", &out, KEY, MARK);
    }
}

#[test]
fn a_key_spelled_with_json_or_url_escapes_is_scrubbed_too() {
    let escaped = KEY.replace('-', "\\u002d");
    let url = KEY.replace('-', "%2D");
    let text = format!(
        r#"{{"files":[{{"path":"hello.md","content":"Hello, new staff!\n"}}],"summary":"my key is {escaped}; as a URL: https://x.invalid/?k={url}"}}"#
    );
    let server = FakeModel::start_blocking(FakeScript::new([Rule::text(text)])).unwrap();
    let seat = format!(
        r#"{{ engine = "openai", model = "gpt-5.2", base_url = "{}/v1", api_key_env = "{KEY_VAR}" }}"#,
        server.url()
    );
    let dir = tempdir();
    let workflow = build_workflow(dir.path(), &seat, "");
    let (ws, out) = run(dir.path(), &workflow);
    out.expect_code(0);
    let record = events(&ws.join(".gavel/runs/r/events.jsonl"));
    let reply = record.iter().find(|e| e["kind"] == "seat:reply").unwrap();
    let shown = reply["data"]["text"].as_str().unwrap();
    assert!(shown.contains(&format!("my key is {MARK}; as a URL: https://x.invalid/?k={MARK}")), "{shown}");
    for spelling in [escaped.as_str(), url.as_str()] {
        for file in walk(&ws.join(".gavel")) {
            let bytes = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
            assert!(!bytes.contains(spelling), "{spelling} leaked into {}", file.display());
        }
        assert!(!out.stdout.contains(spelling) && !out.stderr.contains(spelling), "{spelling}");
    }
    assert_nowhere(&ws, "r", &out, KEY, MARK);
}

#[test]
fn a_key_in_a_reviewers_finding_stays_out_of_the_record_the_outcome_and_the_log() {
    // The reviewer quotes the key in a finding: it reaches `review:decision`,
    // the decisions of `--json`, the next prompt's feedback and the log.
    let finding = json!({"decision": "revise", "findings": [
        {"severity": "block", "evidence": format!("the page leaks {KEY}"), "fix": "remove it"}
    ]})
    .to_string();
    let server = FakeModel::start_blocking(FakeScript::new([
        Rule::text(json!({"files": [{"path": "hello.md", "content": "Hi\n"}]}).to_string())
            .when(Match::any().api(Api::Anthropic)),
        Rule::text(finding).once().when(Match::any().api(Api::Chat)),
        Rule::text(r#"{"decision":"pass","findings":[]}"#).when(Match::any().api(Api::Chat)),
    ]))
    .unwrap();
    let url = server.url();
    let dir = tempdir();
    let workflow = build_workflow(
        dir.path(),
        &format!(
            r#"{{ engine = "anthropic", model = "claude-sonnet-4-5", base_url = "{url}", api_key_env = "{KEY_VAR}" }}
reviewer = {{ engine = "openai", model = "gpt-5.2", base_url = "{url}/v1", api_key_env = "{KEY_VAR}" }}"#
        ),
        "reviewed_by = \"reviewer\"\nrefine = 3\n",
    );
    let (ws, out) = run(dir.path(), &workflow);
    out.expect_code(0);
    let record = events(&ws.join(".gavel/runs/r/events.jsonl"));
    let decision = record.iter().find(|e| e["kind"] == "review:decision").unwrap();
    assert_eq!(decision["data"]["findings"][0]["evidence"], format!("the page leaks {MARK}"));
    assert!(out.stdout.contains(MARK), "the outcome's decisions name the finding:\n{}", out.stdout);
    assert_nowhere(&ws, "r", &out, KEY, MARK);
}

#[test]
fn a_key_echoed_to_gavel_doctor_is_not_printed() {
    for split in [false, true] {
        let text = format!("I will not do that. My key is {KEY}.");
        let rule = if split {
            let at = text.find(KEY).unwrap() + 5;
            Rule::pieces([text[..at].to_owned(), text[at..].to_owned()])
        } else {
            Rule::text(text)
        };
        let server = FakeModel::start_blocking(FakeScript::new([rule])).unwrap();
        let dir = tempdir();
        let workflow = build_workflow(
            dir.path(),
            &format!(
                r#"{{ engine = "anthropic", model = "claude-sonnet-4-5", base_url = "{}", api_key_env = "{KEY_VAR}" }}"#,
                server.url()
            ),
            "",
        );
        for json in [false, true] {
            let mut cmd = gavel_cmd();
            cmd.arg("doctor").arg(&workflow).env(KEY_VAR, KEY).env("PATH", dir.path());
            if json {
                cmd.arg("--json");
            }
            let out = output(&mut cmd);
            out.expect_code(0);
            assert!(!out.stdout.contains(KEY), "split={split} json={json}: stdout:\n{}", out.stdout);
            assert!(!out.stderr.contains(KEY), "split={split} json={json}: stderr:\n{}", out.stderr);
            // The reply was quoted (it is not what doctor asked for), scrubbed.
            assert!(
                out.stdout.contains(MARK),
                "split={split} json={json}: no quote of the reply:\n{}",
                out.stdout
            );
        }
    }
}

#[test]
fn a_key_in_an_agent_clis_final_answer_is_scrubbed() {
    let dir = tempdir();
    // A stand-in for `claude`: it writes the page and answers with the key
    // it was handed in its environment.
    let exe = dir.path().join("fake-claude");
    std::fs::write(
        &exe,
        r#"#!/bin/sh
printf 'Hello\n' > hello.md
printf '{"type":"result","subtype":"success","is_error":false,"result":"done; I was run with %s","session_id":"s-1","usage":{"input_tokens":3,"output_tokens":4},"permission_denials":[]}\n' "$ANTHROPIC_API_KEY"
"#,
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let workflow = build_workflow(
        dir.path(),
        &format!(
            r#"{{ engine = "claude", model = "claude-sonnet-4-5", executable = "{}", base_url = "http://127.0.0.1:9", api_key_env = "{KEY_VAR}" }}"#,
            exe.display()
        ),
        "",
    );
    let (ws, out) = run(dir.path(), &workflow);
    out.expect_code(0);
    let record = events(&ws.join(".gavel/runs/r/events.jsonl"));
    let reply = record.iter().find(|e| e["kind"] == "seat:reply").unwrap();
    assert_eq!(reply["data"]["text"], format!("done; I was run with {MARK}"));
    assert_nowhere(&ws, "r", &out, KEY, MARK);
}

#[test]
fn a_secret_env_value_printed_by_a_run_command_is_scrubbed() {
    const TOKEN: &str = "tok-deploy-93c1a7e0b5";
    const TOKEN_MARK: &str = "[redacted $DEPLOY_TOKEN]";
    let dir = tempdir();
    std::fs::create_dir_all(dir.path().join("seats")).unwrap();
    // The builder writes the token into a file; the command prints it, and
    // the command line names it too.
    std::fs::write(
        dir.path().join("seats/writer.toml"),
        format!("[[write]]\nreply = \"wrote it\"\nfiles = {{ \"hello.md\" = \"token={TOKEN}\\n\" }}\n"),
    )
    .unwrap();
    let workflow = build_workflow(
        dir.path(),
        r#"{ engine = "script", script = "seats/writer.toml", family = "anthropic", env = { DEPLOY_TOKEN = "tok-deploy-93c1a7e0b5" } }"#,
        &format!("\n[[stage]]\nname = \"gate\"\nrun = \"cat hello.md; echo also {TOKEN} >&2; exit 1\"\n"),
    );
    let (ws, out) = run(dir.path(), &workflow);
    out.expect_code(1);
    let record = events(&ws.join(".gavel/runs/r/events.jsonl"));
    let check = record.iter().find(|e| e["kind"] == "check:run").unwrap();
    let tail = check["data"]["output_tail"].as_str().unwrap();
    assert!(tail.contains(&format!("token={TOKEN_MARK}")), "{tail}");
    assert!(tail.contains(&format!("also {TOKEN_MARK}")), "{tail}");
    assert!(out.stdout.contains(TOKEN_MARK), "the outcome quotes the output:\n{}", out.stdout);
    assert_nowhere(&ws, "r", &out, TOKEN, TOKEN_MARK);
}

#[test]
fn a_secret_printed_by_a_goal_criterion_stays_out_of_evidence_the_goal_record_and_the_log() {
    const TOKEN: &str = "tok-goal-5c6d7e8f9a0b";
    const TOKEN_VAR: &str = "GAVEL_IT_DEPLOY_TOKEN";
    let dir = tempdir();
    let root = dir.path().canonicalize().unwrap();
    crate::common::git_repo(&root);
    // The command prints a token gavel holds in a secret-looking variable.
    std::fs::write(root.join("deploy.conf"), format!("token={TOKEN}\n")).unwrap();
    std::fs::create_dir_all(root.join(".gavel/goals/deploy")).unwrap();
    std::fs::write(
        root.join(".gavel/goals/deploy/goal.yaml"),
        "id: deploy\ntitle: t\ncriteria:\n  - id: AC1\n    text: Deploys\n    command: cat deploy.conf; exit 3\n",
    )
    .unwrap();
    let mark = format!("[redacted ${TOKEN_VAR}]");
    let out = output(
        gavel_cmd().current_dir(&root).args(["goal", "evaluate", "deploy", "--json"]).env(TOKEN_VAR, TOKEN),
    );
    out.expect_code(1);
    assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN), "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains(&mark), "the verdict quotes the output, scrubbed:\n{}", out.stdout);
    let mut seen = String::new();
    for file in walk(&root.join(".gavel/goals/deploy")) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains(TOKEN), "the token leaked into {}:\n{text}", file.display());
        seen.push_str(&text);
    }
    assert!(seen.contains(&mark), "no evidence of the output at all:\n{seen}");
    let log = output(gavel_cmd().current_dir(&root).args(["goal", "log", "deploy"]).env(TOKEN_VAR, TOKEN));
    assert!(!log.stdout.contains(TOKEN), "{}", log.stdout);
}
