//! Gemini CLI (`gemini --output-format json`), headless.
//!
//! `~/.gemini/settings.json` selects API-key auth (without it a custom base
//! URL makes the CLI pick "gateway" auth and refuse), and switches usage
//! statistics, telemetry and updates off. `--skip-trust` (else it refuses an
//! untrusted folder) and `-m` always (else it first asks a router model).
//! Read-only requests run in approval mode `default`, where write and shell
//! tools are not offered headless; requests that may write in `auto_edit`
//! (edits approved, still no shell). The answer is one JSON object on stdout;
//! errors come as a JSON object on stderr. No cost is reported.

use serde_json::{Value, json};

use super::json::{self, str_at, u64_at};
use super::{CliError, Invocation, Parsed, Plan};
use gavel_domain::Access;

/// The variable the CLI reads its API key from.
pub(super) const KEY_VAR: &str = "GEMINI_API_KEY";

/// Tools that change files.
const EDIT_TOOLS: &[&str] = &["write_file", "replace", "edit"];

/// Tools that run commands.
const SHELL_TOOLS: &[&str] = &["run_shell_command"];

/// `settings.json` for one request.
fn settings() -> Value {
    json!({
        "security": { "auth": { "selectedType": "gemini-api-key" } },
        "privacy": { "usageStatisticsEnabled": false },
        "telemetry": { "enabled": false },
        "general": { "disableAutoUpdate": true, "disableUpdateNag": true },
    })
}

/// The command line for one request.
pub(super) fn plan(inv: &Invocation<'_>) -> Plan {
    let mode = match inv.access {
        Access::MayWrite => "auto_edit",
        Access::ReadOnly => "default",
    };
    let mut args: Vec<String> = vec!["--skip-trust".into()];
    if let Some(model) = inv.model {
        args.push("-m".into());
        args.push(model.into());
    }
    args.extend(["--approval-mode".into(), mode.into(), "--output-format".into(), "json".into()]);
    if !inv.prompt_on_stdin {
        // `=` form: a prompt starting with `-` is still the option's value.
        // Without `--prompt`, a non-terminal stdin is the prompt.
        args.push(format!("--prompt={}", inv.prompt));
    }
    let mut env = Vec::new();
    if let Some(url) = inv.base_url {
        env.push(("GOOGLE_GEMINI_BASE_URL".to_owned(), url.to_owned()));
    }
    Plan {
        args,
        env,
        files: vec![("home/.gemini/settings.json".into(), format!("{:#}\n", settings()))],
        secret_env: None,
    }
}

/// Reads gemini's JSON answer (stdout) or error object (stderr, after any
/// stack trace). Tool calls the request's mode does not allow show up as
/// failures in `stats.tools.byName`.
pub(super) fn parse(stdout: &str, stderr: &str, access: Access) -> Parsed {
    let mut parsed = Parsed::default();
    let answer = json::objects(stdout)
        .into_iter()
        .rev()
        .find(|v| v.get("response").is_some() || v.get("error").is_some());
    if let Some(answer) = &answer {
        parsed.text = str_at(answer, &["response"]).map(str::to_owned);
        parsed.session = str_at(answer, &["session_id"]).map(str::to_owned);
        if let Some(models) = json::at(answer, &["stats", "models"]).and_then(Value::as_object) {
            for model in models.values() {
                let tokens = |key: &str| u64_at(model, &["tokens", key]);
                parsed.input_tokens = parsed.input_tokens.saturating_add(tokens("prompt"));
                parsed.output_tokens = parsed
                    .output_tokens
                    .saturating_add(tokens("candidates"))
                    .saturating_add(tokens("thoughts"));
            }
        }
        parsed.denials = denials(answer, access);
    }
    let error = answer
        .as_ref()
        .filter(|a| a.get("error").is_some())
        .cloned()
        .or_else(|| json::objects(stderr).into_iter().rev().find(|v| v.get("error").is_some()));
    if let Some(error) = error {
        if parsed.session.is_none() {
            parsed.session = str_at(&error, &["session_id"]).map(str::to_owned);
        }
        parsed.error = Some(error_of(&error));
    }
    parsed
}

/// An error object's message and status. The message is often the API's
/// own JSON error as a string; its inner message is the readable part.
fn error_of(error: &Value) -> CliError {
    let raw = str_at(error, &["error", "message"]).unwrap_or("gemini reported an error");
    let inner: Option<Value> = serde_json::from_str(raw).ok();
    let message = inner.as_ref().and_then(|v| str_at(v, &["error", "message"])).unwrap_or(raw);
    let status = inner
        .as_ref()
        .and_then(|v| json::at(v, &["error", "code"]))
        .or_else(|| json::at(error, &["error", "code"]))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (100..600).contains(c));
    let message = match status {
        // Exit-code style codes (41: bad auth setting, 55: untrusted folder).
        None => match json::at(error, &["error", "code"]).and_then(Value::as_u64) {
            Some(code) => format!("{message} (code {code})"),
            None => message.to_owned(),
        },
        Some(_) => message.to_owned(),
    };
    CliError::new(status, message)
}

/// Failed calls of tools the request's mode does not offer.
fn denials(answer: &Value, access: Access) -> Vec<String> {
    let Some(by_name) = json::at(answer, &["stats", "tools", "byName"]).and_then(Value::as_object) else {
        return Vec::new();
    };
    by_name
        .iter()
        .filter(|(name, stats)| {
            let refused = SHELL_TOOLS.contains(&name.as_str())
                || (access == Access::ReadOnly && EDIT_TOOLS.contains(&name.as_str()));
            refused && u64_at(stats, &["fail"]) > 0
        })
        .map(|(name, stats)| format!("{name} ×{}", u64_at(stats, &["fail"])))
        .collect()
}
