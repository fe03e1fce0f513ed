//! Whole runs through the HTTP engines against the fake model server: a
//! builder behind the Anthropic API writes through a `files` reply, a
//! reviewer behind an OpenAI-compatible server passes it, and the API key
//! given through `api_key_env` reaches the server but never the record,
//! standard error or standard output.

use std::path::Path;

use gavel_test_support::{FakeModel, FakeScript, Match, Rule};
use serde_json::json;

use crate::common::{gavel_cmd, output};

/// A key that must never be seen outside the requests themselves.
const KEY: &str = "sk-test-7f3c91d2-NEVER-IN-THE-RECORD";
const KEY_VAR: &str = "GAVEL_IT_SECRET_KEY";

fn workflow(dir: &Path, url: &str) -> std::path::PathBuf {
    std::fs::write(
        dir.join("brief.md"),
        "---\nfiles: [hello.md]\n---\n# Hello\n\nWrite a one-line greeting for new staff.\n",
    )
    .unwrap();
    let text = format!(
        r#"name = "http-seats"
brief = "brief.md"

[options]
seat_timeout = "20s"

[seats]
writer = {{ engine = "anthropic", model = "claude-sonnet-4-5", base_url = "{url}", api_key_env = "{KEY_VAR}" }}
reviewer = {{ engine = "openai", model = "gpt-5.2", base_url = "{url}/v1", api_key_env = "{KEY_VAR}" }}

[[stage]]
name = "greet"
agent = "writer"
writes = ["hello.md"]
desc = "Write the greeting."
reviewed_by = "reviewer"
refine = 2
"#
    );
    let path = dir.join("workflow.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn run(dir: &Path, workflow: &Path) -> crate::common::Out {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    output(
        gavel_cmd()
            .args([
                "run".as_ref(),
                workflow.as_os_str(),
                "--workspace".as_ref(),
                ws.as_os_str(),
                "--json".as_ref(),
            ])
            .env(KEY_VAR, KEY),
    )
}

fn assert_no_key(out: &crate::common::Out) {
    assert!(!out.stderr.contains(KEY), "the key leaked to stderr:\n{}", out.stderr);
    assert!(!out.stdout.contains(KEY), "the key leaked to stdout:\n{}", out.stdout);
    let record = out.json()["record"].as_str().unwrap().to_owned();
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(!text.contains(KEY), "the key leaked into the record {record}");
    // Nor anywhere else gavel wrote under the workspace (.gavel/...).
    let ws = Path::new(&record).ancestors().find(|p| p.ends_with("ws")).unwrap().to_owned();
    for entry in walk(&ws) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(KEY), "the key leaked into {}", entry.display());
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
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

#[test]
fn api_seats_build_and_review_and_keep_the_key_out_of_everything() {
    let files =
        json!({"files": [{"path": "hello.md", "content": "Welcome aboard, new staff!\n"}]}).to_string();
    let server = FakeModel::start_blocking(FakeScript::new([
        Rule::text(files).when(Match::any().api(gavel_test_support::Api::Anthropic)),
        Rule::text(r#"Looks right. {"decision":"pass","findings":[]}"#.to_owned())
            .when(Match::any().api(gavel_test_support::Api::Chat)),
    ]))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow(dir.path(), &server.url());
    let out = run(dir.path(), &wf);
    out.expect_code(0);
    let outcome = out.json();
    assert_eq!(outcome["status"], "pass", "{outcome}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("ws/hello.md")).unwrap(),
        "Welcome aboard, new staff!\n"
    );
    // Tokens and cost came back from the APIs (fake usage: 100 in, 20 out each).
    assert_eq!(outcome["usage"]["input_tokens"], 200, "{outcome}");
    assert_eq!(outcome["usage"]["output_tokens"], 40, "{outcome}");
    assert!(outcome["usage"]["cost_usd"].as_f64().unwrap() > 0.0, "{outcome}");
    // The key went where each API wants it, and only there.
    let requests = server.requests();
    let anthropic = requests.iter().find(|r| r.path.ends_with("/messages")).unwrap();
    assert_eq!(anthropic.header("x-api-key"), Some(KEY));
    let chat = requests.iter().find(|r| r.path.ends_with("/chat/completions")).unwrap();
    assert_eq!(chat.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
    assert_no_key(&out);
}

#[test]
fn a_refused_key_is_an_engine_error_that_does_not_repeat_the_key() {
    let server = crate::common::server_refusing_key(KEY);
    let dir = tempfile::tempdir().unwrap();
    let wf = workflow(dir.path(), &server.url());
    let out = run(dir.path(), &wf);
    assert_ne!(out.code, 0, "a refused key cannot pass:\n{}", out.stderr);
    assert!(out.stderr.contains("401"), "the error names the status:\n{}", out.stderr);
    assert!(out.stderr.contains(KEY_VAR), "the error names the variable to fix:\n{}", out.stderr);
    assert_no_key(&out);
}
