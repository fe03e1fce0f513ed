//! `gavel doctor`: the engines found on this machine, and one short request
//! to each seat of a workflow with a result, a time, tokens and a hint per
//! seat. Agent CLIs are kept out of reach by giving the child a `PATH` of an
//! empty folder, so the results do not depend on what this machine has.

use std::path::{Path, PathBuf};

use gavel_test_support::{Api, FakeModel, FakeScript, Match, Rule};
use serde_json::{Value, json};

use crate::common::{Out, gavel_cmd, output, tempdir};

/// A key that must never be printed.
const KEY: &str = "sk-test-doctor-5b0e2a77-NEVER-PRINTED";
const KEY_VAR: &str = "GAVEL_IT_DOCTOR_KEY";
/// A variable no test sets.
const UNSET_VAR: &str = "GAVEL_IT_DOCTOR_SURELY_UNSET_KEY";

/// `gavel doctor ARGS` with `PATH` set to `path_dir` only, and no key
/// variables of gavel's defaults inherited.
fn doctor(path_dir: &Path, args: &[&std::ffi::OsStr], envs: &[(&str, &str)]) -> Out {
    let mut cmd = gavel_cmd();
    cmd.arg("doctor")
        .args(args)
        .env("PATH", path_dir)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove(UNSET_VAR);
    for (name, value) in envs {
        cmd.env(name, value);
    }
    output(&mut cmd)
}

fn engine<'v>(report: &'v Value, name: &str) -> &'v Value {
    report["engines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["engine"] == name)
        .unwrap_or_else(|| panic!("no engine {name} in {report:#}"))
}

fn seat<'v>(report: &'v Value, name: &str) -> &'v Value {
    report["seats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["seat"] == name)
        .unwrap_or_else(|| panic!("no seat {name} in {report:#}"))
}

fn assert_no_key(out: &Out) {
    assert!(!out.stdout.contains(KEY), "the key leaked to stdout:\n{}", out.stdout);
    assert!(!out.stderr.contains(KEY), "the key leaked to stderr:\n{}", out.stderr);
}

/// A port on loopback where nothing listens (bound, then released).
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Writes `workflow.toml` with `seats` (TOML lines) and a script seat
/// `scripted` whose script is `script`, plus one stage so it compiles.
fn workflow(dir: &Path, seats: &str, script: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("seats")).unwrap();
    std::fs::write(dir.join("seats/scripted.toml"), script).unwrap();
    std::fs::write(dir.join("brief.md"), "# Draft\n\nWrite a draft.\n").unwrap();
    let text = format!(
        r#"name = "doctor-seats"
brief = "brief.md"

[options]
seat_timeout = "30s"

[seats]
scripted = {{ engine = "script", script = "seats/scripted.toml", family = "anthropic" }}
{seats}

[[stage]]
name = "draft"
agent = "scripted"
writes = ["draft.md"]
"#
    );
    let path = dir.join("workflow.toml");
    std::fs::write(&path, text).unwrap();
    path
}

const REVIEW_SCRIPT: &str = r##"
[[write]]
reply = "Wrote draft.md."
files = { "draft.md" = "# Draft\n" }

[[review]]
reply = { decision = "pass", findings = [] }
usage = { input_tokens = 40, output_tokens = 8, cost_usd = 0.0002 }
"##;

#[test]
fn without_a_workflow_every_engine_is_listed_with_what_to_do() {
    let empty = tempdir();
    let out = doctor(empty.path(), &["--json".as_ref()], &[("OPENAI_API_KEY", KEY)]);
    out.expect_code(0);
    let report = out.json();
    let names: Vec<&str> =
        report["engines"].as_array().unwrap().iter().map(|e| e["engine"].as_str().unwrap()).collect();
    assert_eq!(names, ["claude", "codex", "opencode", "gemini", "anthropic", "openai", "script"]);
    assert_eq!(report["seats"], json!([]));
    assert_eq!(report["ok"], true);
    assert_eq!(report["workflow"], Value::Null);

    for (cli, package, version) in [
        ("claude", "@anthropic-ai/claude-code", "2.1.197"),
        ("codex", "@openai/codex", "0.171.0"),
        ("opencode", "opencode-ai", "1.18.33"),
        ("gemini", "@google/gemini-cli", "0.61.0"),
    ] {
        let line = engine(&report, cli);
        assert_eq!(line["kind"], "cli");
        assert_eq!(line["status"], "missing", "{line:#}");
        assert_eq!(line["available"], false);
        assert_eq!(line["program"], cli);
        assert_eq!(line["path"], Value::Null);
        assert_eq!(line["tested_version"], version);
        let problem = line["problem"].as_str().unwrap();
        assert!(problem.contains("not found"), "{problem}");
        let hint = line["hint"].as_str().unwrap();
        assert!(hint.contains(&format!("npm install -g {package}")), "{hint}");
        assert!(hint.contains("`executable`"), "{hint}");
    }

    let anthropic = engine(&report, "anthropic");
    assert_eq!(anthropic["kind"], "http");
    assert_eq!(anthropic["status"], "no_key");
    assert_eq!(anthropic["endpoint"], "https://api.anthropic.com/v1/messages");
    assert_eq!(anthropic["key_env"], "ANTHROPIC_API_KEY");
    assert_eq!(anthropic["key_set"], false);
    assert!(anthropic["hint"].as_str().unwrap().contains("export ANTHROPIC_API_KEY="));
    let openai = engine(&report, "openai");
    assert_eq!(openai["status"], "ready");
    assert_eq!(openai["endpoint"], "https://api.openai.com/v1/responses");
    assert_eq!(openai["key_env"], "OPENAI_API_KEY");
    assert_eq!(openai["key_set"], true);
    let script = engine(&report, "script");
    assert_eq!((script["kind"].as_str(), script["status"].as_str()), (Some("script"), Some("built_in")));
    assert_eq!(script["available"], true);
    assert!(out.stderr.contains("looking for the agent CLIs"), "progress goes to stderr:\n{}", out.stderr);
    assert_no_key(&out);
}

#[test]
fn the_engine_list_reads_as_aligned_text() {
    let empty = tempdir();
    let out = doctor(empty.path(), &[], &[("OPENAI_API_KEY", KEY)]);
    out.expect_code(0);
    let text = out.stdout.replace(&empty.path().display().to_string(), "[EMPTY]");
    insta::assert_snapshot!(text);
    assert!(!out.stdout.contains('\x1b'), "no colour with NO_COLOR or off a terminal");
    assert_no_key(&out);
}

#[test]
fn a_found_cli_shows_its_path_and_version() {
    // A stand-in `codex` that answers `--version` like the real one.
    let bin = tempdir();
    let codex = bin.path().join("codex");
    std::fs::write(&codex, "#!/bin/sh\necho 'codex-cli 0.171.0'\n").unwrap();
    std::fs::set_permissions(&codex, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let broken = bin.path().join("gemini");
    std::fs::write(&broken, "#!/bin/sh\necho 'gemini: cannot start' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = doctor(bin.path(), &["--json".as_ref()], &[]);
    out.expect_code(0);
    let report = out.json();
    let line = engine(&report, "codex");
    assert_eq!(line["status"], "found", "{line:#}");
    assert_eq!(line["available"], true);
    assert_eq!(line["path"], codex.display().to_string());
    assert_eq!(line["version"], "codex-cli 0.171.0");
    assert_eq!(line["problem"], Value::Null);
    let line = engine(&report, "gemini");
    assert_eq!(line["status"], "broken", "{line:#}");
    assert!(line["problem"].as_str().unwrap().contains("cannot start"), "{line:#}");
    assert!(line["hint"].as_str().unwrap().contains("reinstall it: npm install -g @google/gemini-cli"));
}

#[test]
fn each_seat_is_asked_once_and_every_failure_says_what_to_do() {
    let server = FakeModel::start_blocking(FakeScript::new([Rule::text(
        r#"{"decision":"pass","findings":[]}"#.to_owned(),
    )
    .when(Match::any().api(Api::Anthropic))]))
    .unwrap();
    let dir = tempdir();
    let closed = closed_port();
    let seats = format!(
        r#"api = {{ engine = "anthropic", model = "claude-sonnet-4-5", base_url = "{url}", api_key_env = "{KEY_VAR}" }}
local = {{ engine = "openai", model = "gpt-5", base_url = "http://127.0.0.1:{closed}/v1" }}
cli = {{ engine = "claude", model = "claude-sonnet-4-5", executable = "/nonexistent/gavel-doctor/claude" }}
nokey = {{ engine = "anthropic", model = "claude-haiku-4-5", api_key_env = "{UNSET_VAR}" }}"#,
        url = server.url()
    );
    let wf = workflow(dir.path(), &seats, REVIEW_SCRIPT);
    let empty = tempdir();
    let out = doctor(empty.path(), &[wf.as_os_str(), "--json".as_ref()], &[(KEY_VAR, KEY)]);
    out.expect_code(4);
    let report = out.json();
    assert_eq!(report["ok"], false);
    assert_eq!(report["workflow"], wf.display().to_string());
    let names: Vec<&str> =
        report["seats"].as_array().unwrap().iter().map(|s| s["seat"].as_str().unwrap()).collect();
    assert_eq!(names, ["api", "cli", "local", "nokey", "scripted"]);

    // The script seat answered from turn 0 of its review queue.
    let scripted = seat(&report, "scripted");
    assert_eq!(scripted["status"], "scripted", "{scripted:#}");
    assert_eq!((scripted["ok"].as_bool(), scripted["asked"].as_bool()), (Some(true), Some(true)));
    assert_eq!(scripted["usage"], json!({"input_tokens": 40, "output_tokens": 8, "cost_usd": 0.0002}));
    assert_eq!(scripted["replied_as_asked"], true);

    // The API seat answered through the fake server, with tokens and cost.
    let api = seat(&report, "api");
    assert_eq!(api["status"], "ok", "{api:#}");
    assert_eq!(api["engine"], "anthropic");
    assert_eq!(api["model"], "claude-sonnet-4-5");
    assert_eq!(api["family"], "anthropic");
    assert_eq!(api["usage"]["input_tokens"], 100);
    assert_eq!(api["usage"]["output_tokens"], 20);
    assert!(api["usage"]["cost_usd"].as_f64().unwrap() > 0.0, "{api:#}");
    assert!(api["ms"].as_u64().is_some());
    assert_eq!(api["replied_as_asked"], true);
    assert_eq!(api["key_env"], KEY_VAR);
    assert_eq!(api["key_set"], true);
    assert_eq!(api["error"], Value::Null);

    // Nothing listens at the local seat's base_url.
    let local = seat(&report, "local");
    assert_eq!(local["status"], "failed", "{local:#}");
    assert_eq!(local["problem"], "unreachable");
    assert!(local["error"].as_str().unwrap().contains(&format!("127.0.0.1:{closed}")), "{local:#}");
    let hint = local["hint"].as_str().unwrap();
    assert!(hint.contains(&format!("http://127.0.0.1:{closed}/v1")) && hint.contains("`base_url`"), "{hint}");

    // The claude seat's binary is not there: it is not asked.
    let cli = seat(&report, "cli");
    assert_eq!(cli["status"], "failed", "{cli:#}");
    assert_eq!(cli["asked"], false);
    assert_eq!(cli["problem"], "missing_binary");
    assert_eq!(cli["program"], "/nonexistent/gavel-doctor/claude");
    assert!(cli["error"].as_str().unwrap().contains("/nonexistent/gavel-doctor/claude"), "{cli:#}");
    assert!(cli["hint"].as_str().unwrap().contains("npm install -g @anthropic-ai/claude-code"), "{cli:#}");

    // The seat whose key variable is unset says which variable to export.
    let nokey = seat(&report, "nokey");
    assert_eq!(nokey["status"], "failed", "{nokey:#}");
    assert_eq!(nokey["problem"], "no_key");
    assert_eq!(nokey["key_set"], false);
    assert!(nokey["hint"].as_str().unwrap().contains(&format!("export {UNSET_VAR}=")), "{nokey:#}");

    // One request reached the server: the API seat's, read-only, with the key in its header only.
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:#?}");
    assert!(requests[0].path.ends_with("/v1/messages"), "{}", requests[0].path);
    assert_eq!(requests[0].header("x-api-key"), Some(KEY));
    let body = requests[0].body.to_string();
    assert!(body.contains("gavel doctor"), "{body}");
    assert!(body.contains("cannot run tools"), "a read-only request: {body}");
    assert_no_key(&out);
}

#[test]
fn the_seat_table_shows_results_errors_and_hints() {
    let dir = tempdir();
    let seats =
        r#"cli = { engine = "codex", model = "gpt-5", executable = "/nonexistent/gavel-doctor/codex" }"#;
    let wf = workflow(dir.path(), seats, REVIEW_SCRIPT);
    let empty = tempdir();
    let out = doctor(empty.path(), &[wf.as_os_str()], &[]);
    out.expect_code(4);
    let seats_part = out.stdout.split_once("\nseats of ").map(|(_, s)| format!("seats of {s}")).unwrap();
    let text = seats_part.replace(&dir.path().display().to_string(), "[DIR]");
    // Times vary with the machine's load.
    insta::with_settings!({filters => vec![(r"\b\d+\.\ds\b", "#.#s")]}, {
        insta::assert_snapshot!(text);
    });
    assert!(out.stderr.contains("asking 2 seats"), "{}", out.stderr);
    assert!(out.stderr.contains("cli: not asked"), "{}", out.stderr);
}

#[test]
fn a_refused_key_and_a_timeout_are_explained() {
    let server = crate::common::server_refusing_key(KEY);
    let dir = tempdir();
    let seats = format!(
        r#"api = {{ engine = "anthropic", model = "claude-sonnet-4-5", base_url = "{}", api_key_env = "{KEY_VAR}" }}"#,
        server.url()
    );
    let slow = "[[review]]\nreply = \"late\"\ndelay_ms = 5000\n";
    let wf = workflow(dir.path(), &seats, slow);
    let empty = tempdir();
    let out = doctor(
        empty.path(),
        &[wf.as_os_str(), "--json".as_ref(), "--timeout".as_ref(), "1s".as_ref()],
        &[(KEY_VAR, KEY)],
    );
    out.expect_code(4);
    let report = out.json();
    let api = seat(&report, "api");
    assert_eq!(api["problem"], "key_refused", "{api:#}");
    assert!(api["error"].as_str().unwrap().contains("401"), "{api:#}");
    assert!(api["hint"].as_str().unwrap().contains(&format!("${KEY_VAR}")), "{api:#}");
    let scripted = seat(&report, "scripted");
    assert_eq!(scripted["problem"], "timeout", "{scripted:#}");
    assert!(scripted["hint"].as_str().unwrap().contains("1.0s"), "{scripted:#}");
    assert_eq!(server.requests().len(), 1, "a refused key is not retried");
    assert_no_key(&out);
}

#[test]
fn a_script_without_review_turns_and_a_scripted_error_are_not_failures() {
    let dir = tempdir();
    let erring = "[[review]]\nerror = \"scripted outage\"\n";
    std::fs::create_dir_all(dir.path().join("seats")).unwrap();
    std::fs::write(dir.path().join("seats/erring.toml"), erring).unwrap();
    let seats = r#"erring = { engine = "script", script = "seats/erring.toml", family = "openai" }"#;
    let writer_only = "[[write]]\nreply = \"done\"\n";
    let wf = workflow(dir.path(), seats, writer_only);
    let empty = tempdir();
    let out = doctor(empty.path(), &[wf.as_os_str(), "--json".as_ref()], &[]);
    out.expect_code(0);
    let report = out.json();
    let scripted = seat(&report, "scripted");
    assert_eq!((scripted["status"].as_str(), scripted["asked"].as_bool()), (Some("scripted"), Some(false)));
    assert!(scripted["note"].as_str().unwrap().contains("no [[review]] turns"), "{scripted:#}");
    let erring = seat(&report, "erring");
    assert_eq!((erring["status"].as_str(), erring["ok"].as_bool()), (Some("scripted"), Some(true)));
    assert!(erring["note"].as_str().unwrap().contains("scripted outage"), "{erring:#}");
}

#[test]
fn a_bad_workflow_is_invalid_input_located_in_the_file() {
    let dir = tempdir();
    let seats = r#"typo = { enigne = "claude", model = "claude-sonnet-4-5" }"#;
    let wf = workflow(dir.path(), seats, REVIEW_SCRIPT);
    let empty = tempdir();
    let out = doctor(empty.path(), &[wf.as_os_str()], &[]);
    out.expect_code(2);
    assert!(out.stdout.is_empty(), "nothing is reported for a bad file:\n{}", out.stdout);
    assert!(out.stderr.contains(&format!("{}:9:", wf.display())), "file:line:col:\n{}", out.stderr);
    assert!(out.stderr.contains("enigne"), "{}", out.stderr);
    assert!(out.stderr.contains("hint:"), "{}", out.stderr);

    let out = doctor(empty.path(), &[wf.as_os_str(), "--timeout".as_ref(), "soon".as_ref()], &[]);
    out.expect_code(2);
    assert!(out.stderr.contains("--timeout 90s"), "{}", out.stderr);
}
