//! OpenCode (`opencode run --format json`), headless.
//!
//! Its whole configuration goes inline in `OPENCODE_CONFIG_CONTENT`: with a
//! `base_url`, a provider `gavel` (`@ai-sdk/openai-compatible`, bundled)
//! serving the seat's model; without one, the model's own provider
//! (`provider/model`). Either way the key is named as `{env:VAR}` and read by
//! opencode from its environment. Permissions: read-only requests deny
//! edit, bash and webfetch (the tools are then not offered at all); requests
//! that may write allow edits, and deny bash, webfetch and anything outside
//! the workspace (`external_directory`). Output is JSONL with no summary:
//! tokens and cost are summed over `step_finish` events.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::json::{self, str_at, u64_at};
use super::{CliError, Invocation, Parsed, Plan};
use gavel_domain::Access;

/// The provider id gavel defines for a `base_url`.
const PROVIDER: &str = "gavel";

/// Environment switches that keep opencode from fetching, updating,
/// sharing, loading other tools' settings or a project's own config (which
/// could loosen the permissions gavel sets).
const SWITCHES: &[&str] = &[
    "OPENCODE_DISABLE_MODELS_FETCH",
    "OPENCODE_DISABLE_AUTOUPDATE",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS",
    "OPENCODE_DISABLE_LSP_DOWNLOAD",
    "OPENCODE_DISABLE_CLAUDE_CODE",
    "OPENCODE_DISABLE_SHARE",
    "OPENCODE_DISABLE_PROJECT_CONFIG",
    "OPENCODE_EXPERIMENTAL_DISABLE_FILEWATCHER",
];

/// Checks the seat's `model` for opencode.
pub(super) fn check_model(model: Option<&str>, base_url: Option<&str>) -> Result<(), String> {
    match (model, base_url) {
        (None, Some(_)) => {
            Err("the opencode engine needs `model`: the model name the server at `base_url` knows".into())
        }
        (None, None) => Err(
            "the opencode engine needs `model` as opencode names it, `provider/model` (e.g. \"anthropic/claude-sonnet-4-5\")"
                .into(),
        ),
        (Some(model), None) if !model.contains('/') => Err(format!(
            "opencode models are named `provider/model` (e.g. \"openai/{model}\"), or set `base_url` to use `{model}` on an OpenAI-compatible server"
        )),
        _ => Ok(()),
    }
}

/// The variable a key is read from by default, after opencode's own
/// conventions for the model's provider.
pub(super) fn default_key_env(model: Option<&str>) -> String {
    let provider = model.and_then(|m| m.split_once('/')).map_or("openai", |(p, _)| p);
    match provider {
        "google" => "GOOGLE_GENERATIVE_AI_API_KEY".to_owned(),
        other => {
            let name: String = other
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_uppercase() } else { '_' })
                .collect();
            format!("{name}_API_KEY")
        }
    }
}

/// The `-m` argument.
fn model_arg(inv: &Invocation<'_>) -> String {
    let model = inv.model.unwrap_or_default();
    if inv.base_url.is_some() { format!("{PROVIDER}/{model}") } else { model.to_owned() }
}

/// The inline configuration for one request.
pub(super) fn config(inv: &Invocation<'_>) -> Value {
    let model = inv.model.unwrap_or_default();
    let mut options = serde_json::Map::new();
    if let Some(var) = inv.key_var {
        options.insert("apiKey".into(), Value::String(format!("{{env:{var}}}")));
    }
    let provider = if let Some(url) = inv.base_url {
        options.insert("baseURL".into(), Value::String(super::codex::provider_url(Some(url))));
        let mut entry = json!({ "name": model });
        if let Some(price) = inv.price {
            entry["cost"] = json!({ "input": price.input, "output": price.output });
        }
        json!({ PROVIDER: {
            "npm": "@ai-sdk/openai-compatible",
            "name": PROVIDER,
            "options": options,
            "models": { model: entry },
        }})
    } else {
        let id = model.split_once('/').map_or(model, |(p, _)| p);
        json!({ id: { "options": options } })
    };
    let permission = match inv.access {
        Access::ReadOnly => json!({
            "edit": "deny", "bash": "deny", "webfetch": "deny",
            "external_directory": "deny", "doom_loop": "deny",
        }),
        Access::MayWrite => json!({
            "edit": "allow", "bash": "deny", "webfetch": "deny",
            "external_directory": "deny", "doom_loop": "deny",
        }),
    };
    json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "snapshot": false,
        "formatter": false,
        "lsp": false,
        "model": model_arg(inv),
        "provider": provider,
        "permission": permission,
    })
}

/// The command line for one request.
pub(super) fn plan(inv: &Invocation<'_>) -> Plan {
    let mut args: Vec<String> =
        vec!["run".into(), "--pure".into(), "--format".into(), "json".into(), "-m".into(), model_arg(inv)];
    // opencode joins its message words with spaces and wraps any word that
    // contains a space in quotes; words split at every space come back
    // exactly as the prompt was. Without words it reads stdin.
    if !inv.prompt_on_stdin {
        args.push("--".into());
        args.extend(inv.prompt.split(' ').map(str::to_owned));
    }
    let mut env: Vec<(String, String)> = SWITCHES.iter().map(|s| ((*s).to_owned(), "1".to_owned())).collect();
    env.push(("OPENCODE_CONFIG_CONTENT".into(), config(inv).to_string()));
    Plan { args, env, files: Vec::new(), secret_env: None }
}

/// Where a pre-installed `@opencode-ai/plugin` lives: `$GAVEL_OPENCODE_PLUGIN_DIR`,
/// else the newest `opencode-plugin@*` in the agent-CLI cache that
/// `ci/install-agent-clis.sh` fills (`$GAVEL_AGENT_CLIS`, default
/// `~/.cache/gavel-agent-clis`). The folder holds `node_modules`,
/// `package.json` and `package-lock.json`.
pub(super) fn plugin_dir() -> Option<PathBuf> {
    let has_plugin = |dir: &Path| dir.join("node_modules/@opencode-ai/plugin").is_dir();
    if let Some(dir) = std::env::var_os("GAVEL_OPENCODE_PLUGIN_DIR").map(PathBuf::from) {
        return has_plugin(&dir).then_some(dir);
    }
    let cache = std::env::var_os("GAVEL_AGENT_CLIS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/gavel-agent-clis")))?;
    let mut found: Vec<PathBuf> = std::fs::read_dir(&cache)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("opencode-plugin@"))
        .map(|e| e.path())
        .filter(|p| has_plugin(p))
        .collect();
    found.sort();
    found.pop()
}

/// opencode installs `@opencode-ai/plugin` into its config folder (from the
/// npm registry) whenever `node_modules` is missing there or the lock file
/// does not list it. Linking a pre-installed copy into the private home
/// keeps it from reaching out; without one it still runs, after trying.
pub(super) fn link_plugin(home: &Path) {
    let Some(dir) = plugin_dir() else { return };
    let config = home.join(".config/opencode");
    if std::fs::create_dir_all(&config).is_err() {
        return;
    }
    for file in ["package.json", "package-lock.json"] {
        let _ = std::fs::copy(dir.join(file), config.join(file));
    }
    let _ = std::os::unix::fs::symlink(dir.join("node_modules"), config.join("node_modules"));
}

/// Reads opencode's JSONL events.
pub(super) fn parse(stdout: &str, _stderr: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut cost: Option<f64> = None;
    for event in json::lines(stdout) {
        if parsed.session.is_none() {
            parsed.session = str_at(&event, &["sessionID"]).map(str::to_owned);
        }
        let Some(part) = event.get("part") else {
            if str_at(&event, &["type"]) == Some("error") {
                parsed.error = Some(error_of(&event));
            }
            continue;
        };
        match str_at(&event, &["type"]) {
            Some("text") => {
                if let Some(text) = str_at(part, &["text"]).filter(|t| !t.trim().is_empty()) {
                    parsed.text = Some(text.to_owned());
                }
            }
            Some("step_finish") => {
                let tokens = |path: &[&str]| {
                    let mut full = vec!["tokens"];
                    full.extend_from_slice(path);
                    u64_at(part, &full)
                };
                let input = [&["input"][..], &["cache", "read"], &["cache", "write"]];
                parsed.input_tokens =
                    input.iter().map(|p| tokens(p)).fold(parsed.input_tokens, u64::saturating_add);
                parsed.output_tokens = parsed
                    .output_tokens
                    .saturating_add(tokens(&["output"]))
                    .saturating_add(tokens(&["reasoning"]));
                if let Some(c) = part.get("cost").and_then(Value::as_f64) {
                    cost = Some(cost.unwrap_or(0.0) + c);
                }
            }
            Some("tool_use") => {
                if let Some(denial) = denial(part) {
                    parsed.denials.push(denial);
                }
            }
            Some("error") => parsed.error = Some(error_of(&event)),
            _ => {}
        }
    }
    parsed.cost_usd = cost;
    parsed
}

/// An `error` event's message and status.
fn error_of(event: &Value) -> CliError {
    let status = json::at(event, &["error", "data", "statusCode"])
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let message = str_at(event, &["error", "data", "message"])
        .or_else(|| str_at(event, &["error", "name"]))
        .unwrap_or("opencode reported an error");
    CliError::new(status, message)
}

/// A tool part that was denied: a permission rule or an auto-rejected
/// "ask" (status `error`), or a call to a tool the request does not offer
/// (opencode turns it into the `invalid` tool).
fn denial(part: &Value) -> Option<String> {
    let tool = str_at(part, &["tool"]).unwrap_or("a tool");
    let state = part.get("state")?;
    let target = ["filePath", "path", "command", "url"].iter().find_map(|k| str_at(state, &["input", k]));
    let named = |tool: &str| match target {
        Some(target) => format!("{tool} {target}"),
        None => tool.to_owned(),
    };
    if tool == "invalid" {
        let error = str_at(state, &["input", "error"]).unwrap_or("");
        return error.contains("unavailable tool").then(|| {
            format!("{} (not offered to this request)", str_at(state, &["input", "tool"]).unwrap_or("a tool"))
        });
    }
    let error = str_at(state, &["error"]).filter(|_| str_at(state, &["status"]) == Some("error"))?;
    (error.contains("rejected permission")
        || error.contains("prevents you from using this specific tool call"))
    .then(|| named(tool))
}
