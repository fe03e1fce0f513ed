//! One whole workflow through the `gavel` binary and four real CLIs: a
//! claude builder writes the file with its own tool, a codex goal check
//! marks every requirement met, and a panel of gemini and opencode passes
//! it. Four families (anthropic, openai, google, qwen), so gavel's
//! diversity rule holds. The key reaches every CLI through `api_key_env`
//! and appears nowhere gavel writes or prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use gavel_domain::Engine;
use gavel_test_support::{Api, FakeModel, FakeUsage, Match, Rule};
use serde_json::{Value, json};

use crate::rig::{KEY, KEY_VAR, Workspace, assert_key_sent, cli, log, preflight, serve};

const BUILDER_MODEL: &str = "claude-sonnet-4-5";
const CHECKER_MODEL: &str = "gpt-5.5";
const GEMINI_MODEL: &str = "gemini-2.5-flash";
const OPENCODE_MODEL: &str = "qwen3-coder";

const GREETING: &str = "Welcome aboard, new staff: ask us anything.\n";
const REQUIREMENTS: [&str; 2] = ["Greets new staff", "Fits on one line"];

/// Text unique to each prompt template (crates/gavel-runtime/prompts), so
/// every rule answers its own request kind.
const WRITE_PROMPT: &str = "You are the builder of the stage `greet`";
const GOAL_PROMPT: &str = "You check whether a piece of work meets every requirement of its brief";
const REVIEW_PROMPT: &str = "You are reviewer `greet-";

fn script(file: &Path) -> Vec<Rule> {
    let builder = Match::any().api(Api::Anthropic).model(BUILDER_MODEL).prompt_contains(WRITE_PROMPT);
    let goal = json!({"requirements": REQUIREMENTS.iter().map(|r| json!({
        "requirement": r, "verdict": "met", "evidence": "hello.md:1"
    })).collect::<Vec<_>>()});
    let pass = json!({"decision": "pass", "findings": [
        {"severity": "nice-to-have", "evidence": "hello.md:1 could name the team", "fix": "Sign it"}
    ]});
    vec![
        Rule::tool_call("Write", json!({"file_path": file, "content": GREETING}))
            .when(builder.clone().after_tool_result(false))
            .usage(FakeUsage::new(1000, 100, 0)),
        Rule::text("Wrote hello.md: a one-line greeting.")
            .when(builder.after_tool_result(true))
            .usage(FakeUsage::new(1100, 20, 0)),
        Rule::text(format!("Both requirements hold.\n{goal}"))
            .when(Match::any().api(Api::Responses).model(CHECKER_MODEL).prompt_contains(GOAL_PROMPT))
            .usage(FakeUsage::new(500, 60, 0)),
        Rule::text(format!("The greeting does the job. {pass}"))
            .when(Match::any().api(Api::Gemini).model(GEMINI_MODEL).prompt_contains(REVIEW_PROMPT))
            .usage(FakeUsage::new(400, 40, 0)),
        // opencode's title request carries no tools.
        Rule::text("Greeting review").when(Match::any().api(Api::Chat).tools_offered(false)),
        Rule::text(format!("```json\n{pass}\n```"))
            .when(
                Match::any()
                    .api(Api::Chat)
                    .model(OPENCODE_MODEL)
                    .tools_offered(true)
                    .prompt_contains(REVIEW_PROMPT),
            )
            .usage(FakeUsage::new(450, 45, 0)),
    ]
}

fn write_workflow(dir: &Path, url: &str) -> PathBuf {
    let requirements: String = REQUIREMENTS.iter().flat_map(|r| ["  - ", r, "\n"]).collect();
    std::fs::write(
        dir.join("brief.md"),
        format!("---\nfiles: [hello.md]\nrequirements:\n{requirements}---\n# Hello\n\nWrite a one-line greeting for new staff.\n"),
    )
    .unwrap();
    let seat = |engine: Engine, model: &str, extra: &str| {
        format!(
            "{{ engine = \"{engine}\", model = \"{model}\", executable = \"{}\", base_url = \"{url}\", api_key_env = \"{KEY_VAR}\"{extra} }}",
            cli(engine).display()
        )
    };
    let text = format!(
        r#"name = "real-clis"
brief = "brief.md"

[options]
seat_timeout = "2m"

[seats]
builder = {builder}
checker = {checker}
gemini = {gemini}
opencode = {opencode}

[roles]
review = ["gemini", "opencode"]

[[stage]]
name = "greet"
agent = "builder"
writes = ["hello.md"]
desc = "Write the greeting."
gate = "Every requirement is met and both reviewers pass."
goal = "checker"
reviewed_by = "review"
refine = 1
"#,
        builder = seat(Engine::Claude, BUILDER_MODEL, ""),
        checker = seat(Engine::Codex, CHECKER_MODEL, ""),
        gemini = seat(Engine::Gemini, GEMINI_MODEL, ""),
        // `qwen3-coder` infers the qwen family; the price makes opencode
        // report a cost.
        opencode = seat(Engine::Opencode, OPENCODE_MODEL, ", price = { input = 0.5, output = 2.0 }"),
    );
    let path = dir.join("workflow.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { out.extend(walk(&path)) } else { out.push(path) }
    }
    out
}

fn count(server: &FakeModel, api: Api) -> usize {
    server.requests().iter().filter(|r| r.api == Some(api) && r.status == 200).count()
}

#[test]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
fn a_claude_builder_a_codex_goal_check_and_a_gemini_opencode_panel_pass_end_to_end() {
    preflight();
    let dir = Workspace::new();
    let ws = dir.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let file = ws.join("hello.md");
    let server = serve(script(&file));
    let workflow = write_workflow(dir.path(), &server.url());

    let out = Command::new(env!("CARGO_BIN_EXE_gavel"))
        .arg("run")
        .arg(&workflow)
        .arg("--workspace")
        .arg(&ws)
        .arg("--json")
        .env(KEY_VAR, KEY)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let context = || {
        format!(
            "exit {:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n--- requests\n{}",
            out.status,
            log(&server)
        )
    };
    assert!(out.status.success(), "{}", context());
    let outcome: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {}", context()));
    assert_eq!(outcome["status"], "pass", "{}", context());

    // The builder wrote the file through claude's Write tool.
    assert_eq!(std::fs::read_to_string(&file).unwrap(), GREETING);
    // Every CLI answered: claude twice (tool call, answer), codex, gemini,
    // and opencode (its title request and its review).
    assert_eq!(count(&server, Api::Anthropic), 2, "{}", context());
    assert_eq!(count(&server, Api::Responses), 1, "{}", context());
    assert_eq!(count(&server, Api::Gemini), 1, "{}", context());
    assert!(count(&server, Api::Chat) >= 1, "{}", context());
    assert_key_sent(&server);

    // Tokens from all four, and cost (claude's own, opencode's priced).
    let usage = &outcome["usage"];
    assert!(usage["input_tokens"].as_u64().unwrap() >= 1000 + 1100 + 500 + 400 + 450, "{usage}");
    assert!(usage["output_tokens"].as_u64().unwrap() >= 100 + 20 + 60 + 40 + 45, "{usage}");
    assert!(usage["cost_usd"].as_f64().unwrap() > 0.0, "{usage}");

    // The key is nowhere gavel printed or wrote.
    assert!(!stdout.contains(KEY) && !stderr.contains(KEY), "the key leaked to stdout or stderr");
    let record = outcome["record"].as_str().unwrap_or_else(|| panic!("no record path: {outcome}"));
    assert!(std::fs::read_to_string(record).unwrap().contains("\"greet-2\""), "both reviewers are recorded");
    for path in walk(dir.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        assert!(!text.contains(KEY), "the key leaked into {}", path.display());
    }
}
