//! Unit tests: command lines per access, seat keys, and every parser on the
//! recorded transcripts in `tests/fixtures/cli/<engine>/<case>.{stdout,stderr,rc}`
//! (real output of the pinned CLIs against a fake model API on loopback).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use gavel_domain::RequestKind;
use gavel_process::Output;
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::*;

const KEY: &str = "sk-unit-test-SECRET-0123456789";

/// A recorded transcript: stdout, stderr and exit code.
struct Fixture {
    stdout: String,
    stderr: String,
    rc: i32,
}

fn fixture(engine: &str, case: &str) -> Fixture {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli").join(engine);
    let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{case}.{ext}"))).unwrap();
    Fixture { stdout: read("stdout"), stderr: read("stderr"), rc: read("rc").trim().parse().unwrap() }
}

fn output(text: &str) -> Output {
    Output { head: text.as_bytes().to_vec(), tail: Vec::new(), total: text.len() as u64 }
}

fn finished(f: &Fixture) -> Finished {
    Finished {
        outcome: Outcome::Exited(f.rc),
        stdout: output(&f.stdout),
        stderr: output(&f.stderr),
        duration: Duration::from_millis(1500),
        leaked: false,
    }
}

fn spec(engine: Engine, model: Option<&str>) -> SeatSpec {
    SeatSpec { model: model.map(str::to_owned), family: Some("test".into()), ..SeatSpec::new(engine) }
}

fn seat(engine: Engine, model: Option<&str>) -> CliSeat {
    CliSeat::from_spec("s", &spec(engine, model), Path::new("/flows")).unwrap()
}

fn request(access: Access) -> Request {
    Request {
        kind: if access == Access::MayWrite { RequestKind::Write } else { RequestKind::Review },
        prompt: "--- Review the work.\nReply with JSON  (two spaces).".into(),
        workspace: PathBuf::from("/tmp/ws"),
        access,
        turn: 0,
        writes: Vec::new(),
        timeout: Duration::from_secs(60),
    }
}

fn inv<'a>(req: &'a Request, base_url: Option<&'a str>, model: Option<&'a str>) -> Invocation<'a> {
    Invocation {
        model,
        prompt: &req.prompt,
        prompt_on_stdin: false,
        access: req.access,
        workspace: &req.workspace,
        home: Path::new("/scratch"),
        base_url,
        key_var: Some("MY_KEY"),
        price: None,
    }
}

fn judge(seat: &CliSeat, f: &Fixture, access: Access) -> Result<Reply, SeatError> {
    let redactor = Redactor::new([Secret::new("MY_KEY", KEY)]);
    seat.judge(&finished(f), &request(access), Some("MY_KEY"), &redactor)
}

fn env_of<'a>(plan: &'a Plan, name: &str) -> Option<&'a str> {
    plan.env.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
}

fn has_args(args: &[String], want: &[&str]) -> bool {
    args.windows(want.len()).any(|w| w.iter().zip(want).all(|(a, b)| a == b))
}

// ---------------------------------------------------------------- claude

#[test]
fn claude_text_reply() {
    let p = claude::parse(&fixture("claude", "text").stdout, "");
    assert_eq!(p.text.as_deref(), Some(r#"{"decision":"pass","findings":[]}"#));
    assert_eq!((p.input_tokens, p.output_tokens), (123, 45));
    assert_eq!(p.cost_usd, Some(0.001_740_000_000_000_000_2));
    assert_eq!(p.session.as_deref(), Some("86376244-59d9-49fb-980f-ed37ea0a3a96"));
    assert_eq!((p.error, p.denials.len()), (None, 0));
}

#[test]
fn claude_prose_around_json_is_kept_whole() {
    let p = claude::parse(&fixture("claude", "prose").stdout, "");
    let text = p.text.unwrap();
    assert!(
        text.starts_with("Here is my review of the change.\n\n```json\n{\"decision\":\"revise\""),
        "{text}"
    );
    assert!(text.ends_with("Let me know if you need more."));
    // 200 uncached + 20 read from the cache.
    assert_eq!((p.input_tokens, p.output_tokens), (220, 60));
}

#[test]
fn claude_tool_round_trip_sums_turns() {
    let p = claude::parse(&fixture("claude", "write").stdout, "");
    assert_eq!(p.text.as_deref(), Some(r#"{"decision":"pass","findings":[],"wrote":"hello.txt"}"#));
    assert_eq!((p.input_tokens, p.output_tokens), (300, 50));
    assert_eq!(p.cost_usd, Some(0.002_525_000_000_000_000_3));
    assert!(p.denials.is_empty());
}

#[test]
fn claude_denied_write_in_plan_mode_is_listed() {
    let f = fixture("claude", "readonly_denied");
    assert_eq!(f.rc, 0);
    let p = claude::parse(&f.stdout, &f.stderr);
    assert_eq!(p.denials, vec!["Write /tmp/ws/hello.txt".to_owned()]);
    assert_eq!(p.error, None);
}

#[test]
fn claude_401_and_500_are_errors_with_status() {
    let p = claude::parse(&fixture("claude", "401").stdout, "");
    assert_eq!(p.error, Some(CliError::new(Some(401), "Invalid API key · Fix external API key")));
    assert_eq!(p.text, None);
    let p = claude::parse(&fixture("claude", "500").stdout, "");
    let error = p.error.unwrap();
    assert_eq!(error.status, Some(500));
    assert!(error.message.starts_with("API Error: 500 boom: upstream exploded"), "{}", error.message);
}

#[test]
fn claude_max_turns_is_an_error() {
    let p = claude::parse(&fixture("claude", "max_turns").stdout, "");
    let error = p.error.unwrap();
    assert_eq!(error.status, None);
    assert_eq!(error.message, "stopped at its turn limit (Reached maximum number of turns (1))");
}

#[test]
fn claude_command_per_access() {
    let ro = request(Access::ReadOnly);
    let plan = claude::plan(&inv(&ro, Some("http://127.0.0.1:9"), Some("claude-sonnet-4-5")));
    assert!(has_args(&plan.args, &["--permission-mode", "plan"]), "{:?}", plan.args);
    assert!(has_args(&plan.args, &["--output-format", "json"]));
    assert!(has_args(&plan.args, &["--model", "claude-sonnet-4-5"]));
    assert!(plan.args.contains(&"--disallowedTools=Bash,EnterWorktree".to_owned()));
    assert_eq!(plan.args[plan.args.len() - 3..], ["-p".to_owned(), "--".to_owned(), ro.prompt.clone()]);
    assert_eq!(env_of(&plan, "ANTHROPIC_BASE_URL"), Some("http://127.0.0.1:9"));
    assert_eq!(env_of(&plan, "CLAUDE_CODE_MAX_RETRIES"), Some("2"));
    assert_eq!(env_of(&plan, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"), Some("1"));
    assert_eq!(env_of(&plan, "DISABLE_AUTOUPDATER"), Some("1"));
    assert_eq!(env_of(&plan, "DISABLE_TELEMETRY"), Some("1"));
    assert!(plan.files.is_empty());

    let rw = request(Access::MayWrite);
    let plan = claude::plan(&inv(&rw, None, None));
    assert!(has_args(&plan.args, &["--permission-mode", "acceptEdits"]));
    assert!(!plan.args.contains(&"--model".to_owned()));
    assert_eq!(env_of(&plan, "ANTHROPIC_BASE_URL"), None);
}

#[test]
fn claude_key_goes_under_a_variable_it_reads() {
    assert_eq!(claude::key_var("CLAUDE_CODE_OAUTH_TOKEN"), "CLAUDE_CODE_OAUTH_TOKEN");
    assert_eq!(claude::key_var("ANTHROPIC_AUTH_TOKEN"), "ANTHROPIC_AUTH_TOKEN");
    assert_eq!(claude::key_var("MY_KEY"), "ANTHROPIC_API_KEY");
}

// ---------------------------------------------------------------- codex

#[test]
fn codex_text_reply_has_no_cost() {
    let p = codex::parse(&fixture("codex", "text").stdout, &fixture("codex", "text").stderr);
    assert_eq!(p.text.as_deref(), Some(r#"{"decision":"pass","findings":[]}"#));
    assert_eq!((p.input_tokens, p.output_tokens, p.cost_usd), (123, 45, None));
    assert_eq!(p.session.as_deref(), Some("01a22c3c-672d-70f0-bf2b-447d060583dc"));
    assert_eq!((p.error, p.denials.len()), (None, 0));
}

#[test]
fn codex_prose_and_tool_round_trips() {
    let p = codex::parse(&fixture("codex", "prose").stdout, "");
    assert!(p.text.unwrap().contains("```json\n{\"decision\":\"revise\""));
    // codex's input_tokens already include the cached ones.
    assert_eq!((p.input_tokens, p.output_tokens), (200, 60));
    for case in ["write", "write_shell"] {
        let f = fixture("codex", case);
        let p = codex::parse(&f.stdout, &f.stderr);
        assert!(p.text.is_some(), "{case}");
        assert_eq!((p.input_tokens, p.output_tokens), (250, 50), "{case}");
        assert!(p.denials.is_empty() && p.error.is_none(), "{case}: {p:?}");
    }
}

#[test]
fn codex_patch_refused_by_read_only_sandbox_is_a_denial() {
    let f = fixture("codex", "readonly_denied");
    assert_eq!(f.rc, 0);
    let p = codex::parse(&f.stdout, &f.stderr);
    assert_eq!(
        p.denials,
        vec![
            "apply_patch: patch rejected: writing is blocked by read-only sandbox; rejected by user approval settings"
                .to_owned()
        ]
    );
    assert!(p.text.is_some());
}

#[test]
fn codex_failed_turns_are_errors() {
    let p = codex::parse(&fixture("codex", "401").stdout, "");
    let error = p.error.unwrap();
    assert_eq!(error.status, Some(401));
    assert!(error.message.starts_with("unexpected status 401 Unauthorized: invalid x-api-key"));
    let p = codex::parse(&fixture("codex", "500").stdout, "");
    assert_eq!(
        p.error.unwrap().message,
        "We’re currently experiencing high demand, which may cause temporary errors."
    );
}

#[test]
fn codex_warning_items_are_not_errors() {
    let p = codex::parse(&fixture("codex", "unknown_model").stdout, "");
    assert_eq!(p.error, None);
    assert_eq!(p.text.as_deref(), Some(r#"{"decision":"pass","findings":[]}"#));
}

#[test]
fn codex_command_per_access_and_provider_config() {
    let ro = request(Access::ReadOnly);
    let plan = codex::plan(&inv(&ro, Some("http://127.0.0.1:9"), Some("gpt-5")));
    assert!(
        has_args(&plan.args, &["exec", "--json", "--ephemeral", "--skip-git-repo-check"]),
        "{:?}",
        plan.args
    );
    assert!(has_args(&plan.args, &["-s", "read-only"]));
    assert!(has_args(&plan.args, &["-C", "/tmp/ws"]));
    assert!(has_args(&plan.args, &["-m", "gpt-5"]));
    assert_eq!(plan.args[plan.args.len() - 2..], ["--".to_owned(), ro.prompt.clone()]);
    assert_eq!(env_of(&plan, "CODEX_HOME"), Some("/scratch/home/.codex"));
    let (path, config) = &plan.files[0];
    assert_eq!(path, Path::new("home/.codex/config.toml"));
    let table: toml::Table = toml::from_str(config).unwrap();
    assert_eq!(table["model_provider"].as_str(), Some("gavel"));
    assert_eq!(table["check_for_update_on_startup"].as_bool(), Some(false));
    assert_eq!(table["analytics"]["enabled"].as_bool(), Some(false));
    assert_eq!(table["features"]["plugins"].as_bool(), Some(false));
    let provider = &table["model_providers"]["gavel"];
    assert_eq!(provider["base_url"].as_str(), Some("http://127.0.0.1:9/v1"));
    assert_eq!(provider["env_key"].as_str(), Some("MY_KEY"));
    assert_eq!(provider["wire_api"].as_str(), Some("responses"));
    assert_eq!(provider["request_max_retries"].as_integer(), Some(2));
    assert_eq!(provider["stream_max_retries"].as_integer(), Some(2));

    let rw = request(Access::MayWrite);
    let plan = codex::plan(&inv(&rw, None, None));
    assert!(has_args(&plan.args, &["-s", "workspace-write"]));
    assert!(!plan.args.contains(&"-m".to_owned()));
    let table: toml::Table = toml::from_str(&plan.files[0].1).unwrap();
    assert_eq!(table["model_providers"]["gavel"]["base_url"].as_str(), Some("https://api.openai.com/v1"));
}

#[test]
fn codex_keeps_a_base_url_path() {
    assert_eq!(codex::provider_url(Some("http://h:1/api/v2")), "http://h:1/api/v2");
    assert_eq!(codex::provider_url(Some("https://h")), "https://h/v1");
}

// ---------------------------------------------------------------- opencode

#[test]
fn opencode_text_reply() {
    let p = opencode::parse(&fixture("opencode", "text").stdout, "");
    assert_eq!(p.text.as_deref(), Some(r#"{"decision":"pass","findings":[]}"#));
    assert_eq!((p.input_tokens, p.output_tokens, p.cost_usd), (123, 45, Some(0.0)));
    assert_eq!(p.session.as_deref(), Some("ses_dd3c31862ffeWzFjTJAF7WsJsX"));
    let p = opencode::parse(&fixture("opencode", "prose").stdout, "");
    assert!(p.text.unwrap().ends_with("Let me know if you need more."));
}

#[test]
fn opencode_tool_round_trip_sums_steps() {
    let p = opencode::parse(&fixture("opencode", "write").stdout, "");
    assert_eq!(p.text.as_deref(), Some(r#"{"decision":"pass","findings":[],"wrote":"hello_oc.txt"}"#));
    // Steps: 100 in / 20 out, then 150 + 50 cached in / 30 out.
    assert_eq!((p.input_tokens, p.output_tokens), (300, 50));
    assert!(p.denials.is_empty());
}

#[test]
fn opencode_denials_in_every_shape() {
    let p = opencode::parse(&fixture("opencode", "readonly_denied").stdout, "");
    assert_eq!(p.denials, vec!["write (not offered to this request)".to_owned()]);
    let p = opencode::parse(&fixture("opencode", "outside_denied").stdout, "");
    assert_eq!(p.denials, vec!["write /tmp/outside_oc.txt".to_owned()]);
    // An auto-rejected "ask" ends the run with no answer at all.
    let p = opencode::parse(&fixture("opencode", "ask_rejected").stdout, "");
    assert_eq!(p.denials, vec!["write /tmp/ws/hello_oc.txt".to_owned()]);
    assert_eq!(p.text, None);
}

#[test]
fn opencode_error_events() {
    let p = opencode::parse(&fixture("opencode", "401").stdout, "");
    assert_eq!(p.error, Some(CliError::new(Some(401), "invalid x-api-key")));
    let p = opencode::parse(&fixture("opencode", "500").stdout, "");
    assert_eq!(p.error, Some(CliError::new(Some(500), "boom: upstream exploded")));
}

#[test]
fn opencode_config_per_access_names_the_key_variable_only() {
    let ro = request(Access::ReadOnly);
    let mut i = inv(&ro, Some("http://127.0.0.1:9"), Some("qwen/qwen3-coder"));
    i.price = Some(Price { input: 3.0, output: 15.0 });
    let plan = opencode::plan(&i);
    assert!(has_args(
        &plan.args,
        &["run", "--pure", "--format", "json", "-m", "gavel/qwen/qwen3-coder", "--"]
    ));
    let words = &plan.args[plan.args.iter().position(|a| a == "--").unwrap() + 1..];
    assert_eq!(words.join(" "), ro.prompt, "the words join back into the prompt");
    assert!(words.iter().all(|w| !w.contains(' ')));
    assert_eq!(env_of(&plan, "OPENCODE_DISABLE_AUTOUPDATE"), Some("1"));
    assert_eq!(env_of(&plan, "OPENCODE_DISABLE_PROJECT_CONFIG"), Some("1"));
    let config: Value = serde_json::from_str(env_of(&plan, "OPENCODE_CONFIG_CONTENT").unwrap()).unwrap();
    assert_eq!(config["autoupdate"], false);
    assert_eq!(config["share"], "disabled");
    let provider = &config["provider"]["gavel"];
    assert_eq!(provider["npm"], "@ai-sdk/openai-compatible");
    assert_eq!(provider["options"]["baseURL"], "http://127.0.0.1:9/v1");
    assert_eq!(provider["options"]["apiKey"], "{env:MY_KEY}");
    assert_eq!(provider["models"]["qwen/qwen3-coder"]["cost"]["output"], 15.0);
    assert_eq!(config["permission"]["edit"], "deny");
    assert_eq!(config["permission"]["bash"], "deny");
    assert_eq!(config["permission"]["webfetch"], "deny");

    let rw = request(Access::MayWrite);
    let plan = opencode::plan(&inv(&rw, None, Some("anthropic/claude-sonnet-4-5")));
    assert!(has_args(&plan.args, &["-m", "anthropic/claude-sonnet-4-5"]));
    let config: Value = serde_json::from_str(env_of(&plan, "OPENCODE_CONFIG_CONTENT").unwrap()).unwrap();
    assert_eq!(config["provider"]["anthropic"]["options"]["apiKey"], "{env:MY_KEY}");
    assert_eq!(config["permission"]["edit"], "allow");
    assert_eq!(config["permission"]["bash"], "deny");
    assert_eq!(config["permission"]["external_directory"], "deny");
}

#[test]
fn opencode_models_and_default_keys() {
    assert!(opencode::check_model(Some("fake-model"), Some("http://h")).is_ok());
    assert!(opencode::check_model(Some("openai/gpt-5"), None).is_ok());
    assert!(opencode::check_model(Some("gpt-5"), None).unwrap_err().contains("openai/gpt-5"));
    assert!(opencode::check_model(None, None).is_err());
    assert_eq!(opencode::default_key_env(Some("anthropic/claude")), "ANTHROPIC_API_KEY");
    assert_eq!(opencode::default_key_env(Some("google/gemini-2.5-pro")), "GOOGLE_GENERATIVE_AI_API_KEY");
    assert_eq!(opencode::default_key_env(Some("github-copilot/x")), "GITHUB_COPILOT_API_KEY");
}

// ---------------------------------------------------------------- gemini

#[test]
fn gemini_text_and_prose_replies() {
    let f = fixture("gemini", "text");
    let p = gemini::parse(&f.stdout, &f.stderr, Access::ReadOnly);
    assert_eq!(p.text.as_deref(), Some(r#"{"decision":"pass","findings":[]}"#));
    assert_eq!((p.input_tokens, p.output_tokens, p.cost_usd), (123, 45, None));
    assert_eq!(p.session.as_deref(), Some("499d2210-1c01-40c9-bbc9-09824918b5f5"));
    assert_eq!((p.error, p.denials.len()), (None, 0));
    let p = gemini::parse(&fixture("gemini", "prose").stdout, "", Access::ReadOnly);
    assert!(p.text.unwrap().contains("```json"));
    assert_eq!((p.input_tokens, p.output_tokens), (220, 60));
}

#[test]
fn gemini_tool_round_trip_and_read_only_denial() {
    let p = gemini::parse(&fixture("gemini", "write").stdout, "", Access::MayWrite);
    assert_eq!(p.text.as_deref(), Some(r#"{"decision":"pass","findings":[],"wrote":"hello_gem.txt"}"#));
    assert_eq!((p.input_tokens, p.output_tokens), (300, 50));
    assert!(p.denials.is_empty());
    let f = fixture("gemini", "readonly_denied");
    assert_eq!(f.rc, 0);
    assert_eq!(
        gemini::parse(&f.stdout, &f.stderr, Access::ReadOnly).denials,
        vec!["write_file ×1".to_owned()]
    );
}

#[test]
fn gemini_errors_come_from_stderr_after_a_stack_trace() {
    let f = fixture("gemini", "401");
    assert_eq!(f.rc, 145);
    let p = gemini::parse(&f.stdout, &f.stderr, Access::ReadOnly);
    assert_eq!(p.error, Some(CliError::new(Some(401), "invalid x-api-key")));
    assert_eq!(p.session.as_deref(), Some("913d08f6-2e79-48ec-92f7-fbc6ed21e142"));
    let f = fixture("gemini", "500");
    let p = gemini::parse(&f.stdout, &f.stderr, Access::ReadOnly);
    assert_eq!(p.error, Some(CliError::new(Some(500), "boom: upstream exploded")));
}

#[test]
fn gemini_exit_style_codes_are_kept_in_the_message() {
    let stderr = "{\"session_id\":\"x\",\"error\":{\"type\":\"Error\",\"message\":\"Invalid auth method selected.\",\"code\":41}}";
    let p = gemini::parse("", stderr, Access::ReadOnly);
    assert_eq!(p.error, Some(CliError::new(None, "Invalid auth method selected. (code 41)")));
}

#[test]
fn gemini_command_per_access() {
    let ro = request(Access::ReadOnly);
    let plan = gemini::plan(&inv(&ro, Some("http://127.0.0.1:9"), Some("gemini-2.5-flash")));
    assert!(has_args(&plan.args, &["--skip-trust", "-m", "gemini-2.5-flash", "--approval-mode", "default"]));
    assert!(has_args(&plan.args, &["--output-format", "json"]));
    assert_eq!(plan.args.last().unwrap(), &format!("--prompt={}", ro.prompt));
    assert_eq!(env_of(&plan, "GOOGLE_GEMINI_BASE_URL"), Some("http://127.0.0.1:9"));
    let (path, settings) = &plan.files[0];
    assert_eq!(path, Path::new("home/.gemini/settings.json"));
    let settings: Value = serde_json::from_str(settings).unwrap();
    assert_eq!(settings["security"]["auth"]["selectedType"], "gemini-api-key");
    assert_eq!(settings["privacy"]["usageStatisticsEnabled"], false);
    assert_eq!(settings["telemetry"]["enabled"], false);
    assert_eq!(settings["general"]["disableAutoUpdate"], true);
    let rw = request(Access::MayWrite);
    let plan = gemini::plan(&inv(&rw, None, Some("gemini-2.5-pro")));
    assert!(has_args(&plan.args, &["--approval-mode", "auto_edit"]));
    assert_eq!(env_of(&plan, "GOOGLE_GEMINI_BASE_URL"), None);
}

// ---------------------------------------------------------------- shared

#[test]
fn the_key_is_only_ever_in_the_process_environment() {
    let secret = Secret::new("MY_KEY", KEY);
    let cases = [
        (Engine::Claude, Some("claude-sonnet-4-5"), "ANTHROPIC_API_KEY"),
        (Engine::Codex, Some("gpt-5"), "MY_KEY"),
        (Engine::Opencode, Some("fake"), "MY_KEY"),
        (Engine::Gemini, Some("gemini-2.5-pro"), "GEMINI_API_KEY"),
    ];
    for (engine, model, var) in cases {
        let mut spec = spec(engine, model);
        spec.base_url = Some("http://127.0.0.1:9".into());
        let seat = CliSeat::from_spec("s", &spec, Path::new("/")).unwrap();
        for access in [Access::ReadOnly, Access::MayWrite] {
            let req = request(access);
            let plan = seat.plan(&req, Path::new("/scratch"), Some(&secret));
            let visible = format!("{:?} {:?} {:?}", plan.args, plan.env, plan.files);
            assert!(!visible.contains(KEY), "{engine}: key leaked into {visible}");
            assert!(!format!("{plan:?}").contains(KEY), "{engine}: key in Debug");
            let spawn = seat.spawn_spec(&req, Path::new("/scratch"), &plan);
            let holders: Vec<_> =
                spawn.env.iter().filter(|(_, v)| v == KEY).map(|(n, _)| n.clone()).collect();
            assert_eq!(holders, vec![OsString::from(var)], "{engine}");
            assert!(spawn.args.iter().all(|a| !a.to_string_lossy().contains(KEY)));
        }
    }
}

#[test]
fn spawn_spec_sets_a_private_home_and_the_seat_env_last() {
    let mut spec = spec(Engine::Claude, None);
    spec.env.insert("CLAUDE_CODE_MAX_RETRIES".into(), "0".into());
    spec.env.insert("EXTRA".into(), "1".into());
    let seat = CliSeat::from_spec("s", &spec, Path::new("/")).unwrap();
    let req = request(Access::ReadOnly);
    let plan = seat.plan(&req, Path::new("/scratch"), None);
    let spawn = seat.spawn_spec(&req, Path::new("/scratch"), &plan);
    let get = |name: &str| {
        spawn.env.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.to_string_lossy().into_owned())
    };
    assert_eq!(get("HOME").as_deref(), Some("/scratch/home"));
    assert_eq!(get("TMPDIR").as_deref(), Some("/scratch/tmp"));
    assert_eq!(get("CLAUDE_CODE_MAX_RETRIES").as_deref(), Some("0"), "the seat's env wins");
    assert_eq!(get("EXTRA").as_deref(), Some("1"));
    assert!(spawn.inherit.iter().any(|n| n == "PATH"));
    assert!(!spawn.inherit.iter().any(|n| n == "HOME" || n == "TMPDIR"));
    assert_eq!(spawn.timeout, Some(req.timeout));
    assert_eq!(spawn.cwd, req.workspace);
    assert_eq!(spawn.program, OsString::from("claude"));
}

#[test]
fn judged_reply_carries_text_usage_cost_and_session() {
    let reply =
        judge(&seat(Engine::Claude, Some("fake-model")), &fixture("claude", "text"), Access::ReadOnly)
            .unwrap();
    assert_eq!(reply.text, r#"{"decision":"pass","findings":[]}"#);
    assert_eq!(
        reply.usage,
        Usage { input_tokens: 123, output_tokens: 45, cost_usd: 0.001_740_000_000_000_000_2 }
    );
    assert_eq!(reply.session.as_deref(), Some("86376244-59d9-49fb-980f-ed37ea0a3a96"));
}

#[test]
fn a_seat_price_overrides_the_cli_cost_and_prices_codex() {
    let mut spec = spec(Engine::Claude, Some("fake-model"));
    spec.price = Some(Price { input: 1.0, output: 2.0 });
    let seat = CliSeat::from_spec("s", &spec, Path::new("/")).unwrap();
    let reply = judge(&seat, &fixture("claude", "text"), Access::ReadOnly).unwrap();
    assert!((reply.usage.cost_usd - (123.0 + 90.0) / 1e6).abs() < 1e-12, "{}", reply.usage.cost_usd);

    let reply = judge(&seat_codex("gpt-5"), &fixture("codex", "text"), Access::ReadOnly).unwrap();
    let expected = crate::price::cost_usd(None, "gpt-5", 123, 45).unwrap();
    assert!(expected > 0.0);
    assert!((reply.usage.cost_usd - expected).abs() < 1e-12);
    let reply = judge(&seat_codex("fake-model"), &fixture("codex", "text"), Access::ReadOnly).unwrap();
    assert!(reply.usage.cost_usd.abs() < f64::EPSILON, "an unknown model has no cost");
}

fn seat_codex(model: &str) -> CliSeat {
    seat(Engine::Codex, Some(model))
}

#[test]
fn error_payloads_become_engine_errors_with_a_hint() {
    let err = judge(&seat(Engine::Claude, None), &fixture("claude", "401"), Access::ReadOnly).unwrap_err();
    assert_eq!(
        err,
        SeatError::Engine(
            "claude: the API refused the key in $MY_KEY (401): Invalid API key · Fix external API key; check the key, or name the right variable with `api_key_env`".into()
        )
    );
    let err =
        judge(&seat(Engine::Gemini, Some("g")), &fixture("gemini", "500"), Access::ReadOnly).unwrap_err();
    assert_eq!(
        err,
        SeatError::Engine(
            "gemini: the model API failed (500): boom: upstream exploded; usually temporary, try again"
                .into()
        )
    );
    let err = judge(&seat(Engine::Codex, None), &fixture("codex", "401"), Access::ReadOnly).unwrap_err();
    assert!(err.to_string().contains("refused the key in $MY_KEY (401)"), "{err}");
    let err = judge(&seat(Engine::Opencode, Some("a/b")), &fixture("opencode", "401"), Access::ReadOnly)
        .unwrap_err();
    assert!(
        err.to_string().starts_with("opencode: the API refused the key in $MY_KEY (401): invalid x-api-key")
    );
}

#[test]
fn an_error_payload_with_exit_zero_is_still_an_error() {
    let mut f = fixture("claude", "401");
    f.rc = 0;
    let err = judge(&seat(Engine::Claude, None), &f, Access::ReadOnly).unwrap_err();
    assert!(matches!(err, SeatError::Engine(ref m) if m.contains("(401)")), "{err}");
}

#[test]
fn denied_tools_are_refusals_that_say_what_happened() {
    let err = judge(&seat(Engine::Claude, None), &fixture("claude", "readonly_denied"), Access::ReadOnly)
        .unwrap_err();
    assert_eq!(
        err,
        SeatError::Refused(
            "claude: the seat tried to change files or run commands in a read-only `review` request and was denied (Write /tmp/ws/hello.txt); its answer was not used".into()
        )
    );
    let err =
        judge(&seat(Engine::Opencode, Some("a/b")), &fixture("opencode", "outside_denied"), Access::MayWrite)
            .unwrap_err();
    assert!(matches!(err, SeatError::Refused(ref m) if m.contains("inside the workspace only")), "{err}");
    for (engine, model, case) in [
        (Engine::Codex, None, "readonly_denied"),
        (Engine::Gemini, Some("g"), "readonly_denied"),
        (Engine::Opencode, Some("a/b"), "readonly_denied"),
        (Engine::Opencode, Some("a/b"), "ask_rejected"),
    ] {
        let err = judge(&seat(engine, model), &fixture(engine.as_str(), case), Access::ReadOnly).unwrap_err();
        assert!(matches!(err, SeatError::Refused(_)), "{engine} {case}: {err}");
    }
}

#[test]
fn non_zero_exit_without_payload_quotes_stderr_scrubbed() {
    let f = Fixture {
        stdout: String::new(),
        stderr: format!("boom: bad key {KEY}\n    at frame (x.js:1)\n"),
        rc: 3,
    };
    let err = judge(&seat(Engine::Gemini, Some("g")), &f, Access::ReadOnly).unwrap_err();
    assert_eq!(err, SeatError::Engine("gemini exited with code 3: boom: bad key [redacted $MY_KEY]".into()));
}

#[test]
fn exit_zero_without_an_answer_is_an_error() {
    let f = Fixture { stdout: "not json\n".into(), stderr: "some warning".into(), rc: 0 };
    let err = judge(&seat(Engine::Claude, None), &f, Access::ReadOnly).unwrap_err();
    assert_eq!(
        err,
        SeatError::Engine(
            "claude: the CLI exited 0 but its output held no final answer; stderr: some warning".into()
        )
    );
}

#[test]
fn a_timeout_is_a_timeout() {
    let seat = seat(Engine::Codex, None);
    let mut done = finished(&fixture("codex", "text"));
    done.outcome = Outcome::TimedOut { killed: true };
    let req = request(Access::ReadOnly);
    assert_eq!(seat.judge(&done, &req, None, &Redactor::default()), Err(SeatError::Timeout(req.timeout)));
}

#[test]
fn from_spec_checks_seat_keys() {
    let err = |spec: &SeatSpec| match CliSeat::from_spec("s", spec, Path::new("/flows")) {
        Err(BuildError::Invalid { key, message, .. }) => (key, message),
        other => panic!("{other:?}"),
    };
    let mut s = spec(Engine::Claude, None);
    s.api_key_env = Some("sk-ant-123".into());
    assert_eq!(err(&s).0, "api_key_env");
    let mut s = spec(Engine::Claude, None);
    s.base_url = Some("ftp://x".into());
    assert_eq!(err(&s).0, "base_url");
    assert_eq!(err(&spec(Engine::Gemini, None)).0, "model");
    assert_eq!(err(&spec(Engine::Opencode, Some("gpt-5"))).0, "model");
    assert_eq!(err(&spec(Engine::Script, None)).0, "engine");
    let mut s = spec(Engine::Codex, None);
    s.env.insert("BAD NAME".into(), "x".into());
    assert_eq!(err(&s).0, "env");
}

#[test]
fn from_spec_defaults_and_resolution() {
    assert_eq!(seat(Engine::Claude, None).key_env(), Some("ANTHROPIC_API_KEY"));
    assert_eq!(seat(Engine::Codex, None).key_env(), Some("OPENAI_API_KEY"));
    assert_eq!(seat(Engine::Gemini, Some("g")).key_env(), Some("GEMINI_API_KEY"));
    assert_eq!(seat(Engine::Opencode, Some("anthropic/x")).key_env(), Some("ANTHROPIC_API_KEY"));
    assert_eq!(seat(Engine::Claude, None).executable(), "claude");
    let mut s = spec(Engine::Codex, None);
    s.executable = Some("./bin/codex".into());
    s.api_key_env = Some(String::new());
    let built = CliSeat::from_spec("s", &s, Path::new("/flows")).unwrap();
    assert_eq!(built.executable(), "/flows/./bin/codex");
    assert_eq!(built.key_env(), None);
    assert_eq!(built.key(), Ok(None), "api_key_env = \"\" passes no key");
    let given = seat(Engine::Claude, None).with_key(Secret::new("V", KEY));
    assert_eq!(given.key_env(), None);
    assert_eq!(given.key().unwrap().unwrap().expose(), KEY);
}

#[test]
fn a_missing_key_fails_unless_the_api_is_local() {
    let mut s = spec(Engine::Claude, None);
    s.api_key_env = Some("GAVEL_TEST_SURELY_UNSET_KEY_VAR".into());
    let remote = CliSeat::from_spec("s", &s, Path::new("/")).unwrap();
    let err = remote.key().unwrap_err();
    assert!(err.to_string().contains("`GAVEL_TEST_SURELY_UNSET_KEY_VAR` is not set"), "{err}");
    s.base_url = Some("http://localhost:8080/".into());
    let local = CliSeat::from_spec("s", &s, Path::new("/")).unwrap();
    assert_eq!(local.key().unwrap().unwrap().expose(), PLACEHOLDER_KEY);
}

#[test]
fn a_long_prompt_is_left_out_of_the_arguments() {
    let mut req = request(Access::ReadOnly);
    req.prompt = format!("-x {}", "word ".repeat(PROMPT_ARG_LIMIT / 5));
    for (engine, model, tail) in [
        (Engine::Claude, None, vec!["-p"]),
        (Engine::Codex, None, vec!["--", "-"]),
        (Engine::Opencode, Some("fake"), vec!["-m", "gavel/fake"]),
        (Engine::Gemini, Some("g"), vec!["--output-format", "json"]),
    ] {
        let mut s = spec(engine, model);
        s.base_url = Some("http://127.0.0.1:9".into());
        let seat = CliSeat::from_spec("s", &s, Path::new("/")).unwrap();
        let plan = seat.plan(&req, Path::new("/scratch"), None);
        assert!(plan.args.iter().all(|a| !a.contains("word word")), "{engine}");
        assert!(
            plan.args.ends_with(&tail.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>()),
            "{engine}: {:?}",
            plan.args
        );
    }
}

#[test]
fn the_stdin_wrapper_runs_the_resolved_cli_with_its_arguments() {
    let spec = SpawnSpec::new("sh", "/tmp").arg("a b").env("HOME", "/h").timeout(Duration::from_secs(5));
    let wrapped = CliSeat::via_stdin(spec, Path::new("/scratch/prompt.txt")).unwrap();
    assert_eq!(wrapped.program, OsString::from("/bin/sh"));
    let args: Vec<String> = wrapped.args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    assert_eq!(args[0], "-c");
    assert_eq!(args[1], STDIN_WRAPPER);
    assert!(args[2].ends_with("/sh") && Path::new(&args[2]).is_absolute(), "{args:?}");
    assert_eq!(args[3], "a b");
    assert_eq!(wrapped.timeout, Some(Duration::from_secs(5)));
    let env: Vec<(String, String)> = wrapped
        .env
        .iter()
        .map(|(k, v)| (k.to_string_lossy().into_owned(), v.to_string_lossy().into_owned()))
        .collect();
    assert!(env.contains(&("HOME".into(), "/h".into())));
    assert!(env.contains(&("GAVEL_PROMPT_FILE".into(), "/scratch/prompt.txt".into())));
    let missing = SpawnSpec::new("/nonexistent/cli", "/tmp");
    assert!(matches!(CliSeat::via_stdin(missing, Path::new("/p")), Err(SpawnError::NotFound { .. })));
}

#[test]
fn helpers() {
    assert_eq!(status_in("unexpected status 401 Unauthorized: invalid x-api-key"), Some(401));
    assert_eq!(status_in("API Error: 500 boom"), Some(500));
    assert_eq!(status_in("nothing here"), None);
    assert!(
        is_loopback("http://127.0.0.1:9/v1")
            && is_loopback("http://[::1]:9")
            && is_loopback("http://localhost")
    );
    assert!(!is_loopback("https://api.openai.com/v1") && !is_loopback("http://127.example.com"));
    assert_eq!(check_base_url("http://h:1/"), Ok("http://h:1".to_owned()));
    assert!(check_base_url("h:1").is_err() && check_base_url("http://").is_err());
    // A key in the URL would be written into codex's and opencode's config
    // files: refused, and the message does not repeat it.
    let err = check_base_url("http://user:sk-SECRET-123@127.0.0.1:9/v1").unwrap_err();
    assert!(err.contains("credentials") && !err.contains("sk-SECRET-123"), "{err}");
    assert!(check_base_url("http://127.0.0.1:9/path@v1").is_ok(), "an @ in the path is not a credential");
    assert_eq!(stderr_tail("a\n\n  at x (y)\nb\n"), "a | b");
    assert_eq!(shorten("héllo", 2), "h…");
    assert!(is_env_name("_A1") && !is_env_name("1A") && !is_env_name("A-B") && !is_env_name(""));
}

#[test]
fn absurd_token_counts_saturate_instead_of_panicking() {
    let max = u64::MAX;
    let claude = format!(
        r#"{{"type":"result","subtype":"success","is_error":false,"result":"ok","usage":{{"input_tokens":{max},"cache_read_input_tokens":{max},"cache_creation_input_tokens":1,"output_tokens":1}}}}"#
    );
    assert_eq!(claude::parse(&claude, "").input_tokens, max);
    let codex = format!(
        "{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":{max},\"output_tokens\":{max}}}}}\n{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}\n"
    );
    let p = codex::parse(&codex, "");
    assert_eq!((p.input_tokens, p.output_tokens), (max, max));
    let step = format!(
        r#"{{"type":"step_finish","part":{{"tokens":{{"input":{max},"output":{max},"reasoning":1,"cache":{{"read":1,"write":0}}}}}}}}"#
    );
    let p = opencode::parse(&format!("{step}\n{step}\n"), "");
    assert_eq!((p.input_tokens, p.output_tokens), (max, max));
    let gemini = format!(
        r#"{{"response":"ok","stats":{{"models":{{"a":{{"tokens":{{"prompt":{max},"candidates":{max},"thoughts":1}}}},"b":{{"tokens":{{"prompt":1,"candidates":0,"thoughts":0}}}}}}}}}}"#
    );
    let p = gemini::parse(&gemini, "", Access::ReadOnly);
    assert_eq!((p.input_tokens, p.output_tokens), (max, max));
}

#[test]
fn one_long_stderr_line_is_quoted_not_dropped() {
    let long = format!("ERROR: unexpected status 401 Unauthorized: {}", "x".repeat(STDERR_QUOTE * 2));
    let tail = stderr_tail(&format!("starting\n{long}\n"));
    assert!(tail.starts_with("ERROR: unexpected status 401"), "{tail}");
    assert!(tail.len() <= STDERR_QUOTE + '…'.len_utf8(), "{}", tail.len());
}
