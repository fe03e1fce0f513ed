//! Claude Code (`claude`), headless: `claude --output-format json -p -- PROMPT`.
//!
//! Read-only requests run in `--permission-mode plan` (writes are denied and
//! listed in `permission_denials`); requests that may write run in
//! `acceptEdits`, which lets Write/Edit through inside the working directory
//! only. Bash is disallowed in both: it cannot be limited to the workspace.
//! Output: one `type:"result"` object; `is_error` (not `subtype`) tells an
//! error, `total_cost_usd` the cost, `usage` the tokens summed over turns.

use serde_json::Value;

use super::json::{self, str_at, u64_at};
use super::{CLI_RETRIES, CliError, Invocation, Parsed, Plan};
use gavel_domain::Access;

/// Variables claude reads a credential from itself; any other `api_key_env`
/// is handed over as `ANTHROPIC_API_KEY`.
const OWN_KEY_VARS: &[&str] = &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"];

/// Tools no request gets: a shell cannot be held inside the workspace, and
/// worktrees are created outside it.
const DISALLOWED: &str = "Bash,EnterWorktree";

/// The variable claude gets the key under, for a key read from `source`.
pub(super) fn key_var(source: &str) -> &str {
    if OWN_KEY_VARS.contains(&source) { source } else { "ANTHROPIC_API_KEY" }
}

/// The command line for one request.
pub(super) fn plan(inv: &Invocation<'_>) -> Plan {
    let mode = match inv.access {
        Access::MayWrite => "acceptEdits",
        Access::ReadOnly => "plan",
    };
    let mut args: Vec<String> = vec![
        "--output-format".into(),
        "json".into(),
        "--no-session-persistence".into(),
        "--permission-mode".into(),
        mode.into(),
        format!("--disallowedTools={DISALLOWED}"),
    ];
    if let Some(model) = inv.model {
        args.push("--model".into());
        args.push(model.into());
    }
    // The prompt last, after `--`, so a prompt starting with `-` is not read
    // as an option and no variadic option swallows it. Without one, `-p`
    // reads the prompt from stdin.
    args.push("-p".into());
    if !inv.prompt_on_stdin {
        args.extend(["--".into(), inv.prompt.into()]);
    }

    let mut env: Vec<(String, String)> = vec![
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(), "1".into()),
        ("DISABLE_AUTOUPDATER".into(), "1".into()),
        ("DISABLE_TELEMETRY".into(), "1".into()),
        ("DISABLE_ERROR_REPORTING".into(), "1".into()),
        ("CLAUDE_CODE_MAX_RETRIES".into(), CLI_RETRIES.to_string()),
    ];
    if let Some(url) = inv.base_url {
        env.push(("ANTHROPIC_BASE_URL".into(), url.into()));
    }
    Plan { args, env, files: Vec::new(), secret_env: None }
}

/// Reads claude's `json` output.
pub(super) fn parse(stdout: &str, _stderr: &str) -> Parsed {
    let Some(result) =
        json::objects(stdout).into_iter().rev().find(|v| str_at(v, &["type"]) == Some("result"))
    else {
        return Parsed::default();
    };
    let usage = |key: &str| u64_at(&result, &["usage", key]);
    let mut parsed = Parsed {
        text: str_at(&result, &["result"]).map(str::to_owned),
        input_tokens: usage("input_tokens")
            .saturating_add(usage("cache_read_input_tokens"))
            .saturating_add(usage("cache_creation_input_tokens")),
        output_tokens: usage("output_tokens"),
        cost_usd: result.get("total_cost_usd").and_then(Value::as_f64),
        session: str_at(&result, &["session_id"]).map(str::to_owned),
        error: None,
        denials: denials(&result),
    };
    if result.get("is_error").and_then(Value::as_bool) == Some(true) {
        let status =
            result.get("api_error_status").and_then(Value::as_u64).and_then(|s| u16::try_from(s).ok());
        let errors: Vec<&str> = result
            .get("errors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let subtype = str_at(&result, &["subtype"]).unwrap_or("error");
        let message = match (subtype, parsed.text.as_deref()) {
            ("error_max_turns", _) => format!("stopped at its turn limit ({})", errors.join("; ")),
            (_, Some(text)) if !text.trim().is_empty() => text.to_owned(),
            _ if !errors.is_empty() => errors.join("; "),
            _ => format!("the run ended with `{subtype}`"),
        };
        parsed.error = Some(CliError::new(status, message));
        parsed.text = None;
    }
    parsed
}

/// `permission_denials[]` as "Write /path" descriptions.
fn denials(result: &Value) -> Vec<String> {
    let Some(list) = result.get("permission_denials").and_then(Value::as_array) else { return Vec::new() };
    list.iter()
        .map(|d| {
            let tool = str_at(d, &["tool_name"]).unwrap_or("a tool");
            let target = ["file_path", "notebook_path", "path", "command", "url"]
                .iter()
                .find_map(|k| str_at(d, &["tool_input", k]));
            match target {
                Some(target) => format!("{tool} {target}"),
                None => tool.to_owned(),
            }
        })
        .collect()
}
