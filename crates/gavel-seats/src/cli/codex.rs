//! Codex CLI (`codex exec --json`), headless.
//!
//! Always talks to a custom provider `gavel` written into
//! `$CODEX_HOME/config.toml` (the seat's `base_url`, else OpenAI's API), with
//! the key's variable as its `env_key`: the built-in provider ignores
//! `OPENAI_BASE_URL` and tries WebSockets first. Read-only requests run with
//! `-s read-only`, requests that may write with `-s workspace-write`: codex's
//! own sandbox, which also holds the commands it runs. Output is JSONL; no
//! cost is reported, so gavel prices the tokens.

use serde_json::Value;

use super::json::{self, str_at, u64_at};
use super::{CLI_RETRIES, CliError, Invocation, Parsed, Plan};
use gavel_domain::Access;

/// OpenAI's API, when the seat names no `base_url`.
const OPENAI_URL: &str = "https://api.openai.com/v1";

/// A TOML basic string (JSON's string escapes are a subset of TOML's).
fn toml_str(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

/// The provider URL: a `base_url` without a path gets `/v1`, as
/// OpenAI-compatible servers serve the Responses API there.
pub(super) fn provider_url(base_url: Option<&str>) -> String {
    match base_url {
        None => OPENAI_URL.to_owned(),
        Some(url) => {
            let rest = url.split_once("://").map_or(url, |(_, r)| r);
            if rest.contains('/') { url.to_owned() } else { format!("{url}/v1") }
        }
    }
}

/// `config.toml` for one request.
fn config(inv: &Invocation<'_>) -> String {
    let mut lines = vec![
        "# Written by gavel for one request; removed afterwards.".to_owned(),
        "model_provider = \"gavel\"".to_owned(),
        "check_for_update_on_startup = false".to_owned(),
        String::new(),
        "[analytics]".to_owned(),
        "enabled = false".to_owned(),
        String::new(),
        "[features]".to_owned(),
        "plugins = false".to_owned(),
        "remote_plugin = false".to_owned(),
        "apps = false".to_owned(),
        String::new(),
        "[model_providers.gavel]".to_owned(),
        "name = \"gavel\"".to_owned(),
        format!("base_url = {}", toml_str(&provider_url(inv.base_url))),
        "wire_api = \"responses\"".to_owned(),
        format!("request_max_retries = {CLI_RETRIES}"),
        format!("stream_max_retries = {CLI_RETRIES}"),
    ];
    if let Some(var) = inv.key_var {
        // The variable's name only: codex reads the value from its env.
        lines.push(format!("env_key = {}", toml_str(var)));
    }
    lines.push(String::new());
    lines.join("\n")
}

/// The command line for one request.
pub(super) fn plan(inv: &Invocation<'_>) -> Plan {
    let sandbox = match inv.access {
        Access::MayWrite => "workspace-write",
        Access::ReadOnly => "read-only",
    };
    let mut args: Vec<String> = vec![
        "exec".into(),
        "--json".into(),
        "--ephemeral".into(),
        "--skip-git-repo-check".into(),
        "--color".into(),
        "never".into(),
        "-s".into(),
        sandbox.into(),
        "-C".into(),
        inv.workspace.to_string_lossy().into_owned(),
    ];
    if let Some(model) = inv.model {
        args.push("-m".into());
        args.push(model.into());
    }
    // `-` reads the prompt from stdin.
    let prompt = if inv.prompt_on_stdin { "-" } else { inv.prompt };
    args.extend(["--".into(), prompt.into()]);
    let codex_home = inv.home.join("home").join(".codex");
    Plan {
        args,
        env: vec![("CODEX_HOME".into(), codex_home.to_string_lossy().into_owned())],
        files: vec![("home/.codex/config.toml".into(), config(inv))],
        secret_env: None,
    }
}

/// Reads codex's JSONL events (stdout) and its log (stderr), where a patch
/// refused by the read-only sandbox shows up only as an `ERROR` line.
pub(super) fn parse(stdout: &str, stderr: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut last_error: Option<String> = None;
    for event in json::lines(stdout) {
        match str_at(&event, &["type"]) {
            Some("thread.started") => parsed.session = str_at(&event, &["thread_id"]).map(str::to_owned),
            Some("item.completed") => {
                let Some(item) = event.get("item") else { continue };
                item_completed(item, &mut parsed);
            }
            Some("turn.completed") => {
                let usage = |key: &str| u64_at(&event, &["usage", key]);
                parsed.input_tokens = parsed.input_tokens.saturating_add(usage("input_tokens"));
                parsed.output_tokens = parsed.output_tokens.saturating_add(usage("output_tokens"));
            }
            Some("turn.failed") => {
                let message = str_at(&event, &["error", "message"]).unwrap_or("the turn failed");
                parsed.error = Some(CliError::new(None, message));
            }
            Some("error") => last_error = str_at(&event, &["message"]).map(str::to_owned),
            _ => {}
        }
    }
    for line in stderr.lines() {
        if let Some(pos) = line.find("patch rejected") {
            parsed.denials.push(format!("apply_patch: {}", line[pos..].trim()));
        }
    }
    // A stream-level `error` without `turn.failed` is only fatal when no
    // answer came (the "Reconnecting..." ones are retries).
    if parsed.error.is_none()
        && parsed.text.is_none()
        && let Some(message) = last_error
    {
        parsed.error = Some(CliError::new(None, message));
    }
    parsed
}

fn item_completed(item: &Value, parsed: &mut Parsed) {
    let status = str_at(item, &["status"]);
    match str_at(item, &["type"]) {
        Some("agent_message") => parsed.text = str_at(item, &["text"]).map(str::to_owned),
        Some("file_change") if matches!(status, Some("failed" | "declined")) => {
            let paths: Vec<&str> = item
                .get("changes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| str_at(c, &["path"]))
                .collect();
            parsed.denials.push(format!("file change {}", paths.join(", ")));
        }
        Some("command_execution") => {
            let output = str_at(item, &["aggregated_output"]).unwrap_or("");
            let sandboxed =
                output.contains("Read-only file system") || output.contains("Operation not permitted");
            if status == Some("declined") || (status == Some("failed") && sandboxed) {
                parsed.denials.push(format!("command {}", str_at(item, &["command"]).unwrap_or("?")));
            }
        }
        _ => {}
    }
}
