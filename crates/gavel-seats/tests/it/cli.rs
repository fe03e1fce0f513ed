//! CLI engines through the real spawn path, with a shell-script stand-in as
//! the seat's `executable`: it dumps what it was given (environment, argv,
//! stdin, cwd, the files in its home) and prints a recorded transcript of the
//! real CLI (`tests/fixtures/cli`), so no agent CLI needs to be installed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gavel_domain::{Access, Engine, RequestKind, SeatSpec};
use gavel_seats::cli::{CliSeat, probe};
use gavel_seats::secret::Secret;
use gavel_seats::{Reply, Request, Seat, SeatError};
use gavel_test_support::TempWorkspace;

const KEY: &str = "sk-gavel-cli-test-0123456789abcdef";
const KEY_VAR: &str = "GAVEL_TEST_KEY";

/// Dumps its inputs into `$DUMP`, then prints `$OUT`/`$ERR` and exits `$CODE`
/// (or sleeps `$SLEEP` seconds).
const STAND_IN: &str = r#"#!/bin/sh
env > "$DUMP/env"
for a in "$@"; do printf '%s\0' "$a"; done > "$DUMP/argv"
readlink /proc/self/fd/0 > "$DUMP/stdin" 2>&1
cat > "$DUMP/stdin_text"
pwd > "$DUMP/cwd"
(cd "$HOME" && find . -type f | sort | while read -r f; do echo "== $f"; cat "$f"; done) > "$DUMP/files" 2>&1
if [ -n "$SLEEP" ]; then exec sleep "$SLEEP"; fi
cat "$OUT"
cat "$ERR" >&2
exit "${CODE:-0}"
"#;

struct Rig {
    dir: tempfile::TempDir,
    workspace: TempWorkspace,
}

impl Rig {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("stand-in");
        std::fs::write(&exe, STAND_IN).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(dir.path().join("dump")).unwrap();
        Self { dir, workspace: TempWorkspace::new().unwrap() }
    }

    fn dump(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.path().join("dump").join(name)).unwrap_or_default()
    }

    fn env(&self) -> BTreeMap<String, String> {
        self.dump("env")
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.into(), v.into()))
            .collect()
    }

    fn argv(&self) -> Vec<String> {
        let dump = self.dump("argv");
        // Each argument ends with NUL; empty arguments are real ones.
        dump.strip_suffix('\0').unwrap_or(&dump).split('\0').map(str::to_owned).collect()
    }

    /// A seat of `engine` running the stand-in, which prints the `case`
    /// transcript and exits with its recorded code.
    fn seat(&self, engine: Engine, model: Option<&str>, case: &str, extra: &[(&str, &str)]) -> CliSeat {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli").join(engine.as_str());
        let rc = std::fs::read_to_string(fixtures.join(format!("{case}.rc"))).unwrap();
        let mut env = BTreeMap::from([
            ("DUMP".to_owned(), self.dir.path().join("dump").to_string_lossy().into_owned()),
            ("OUT".to_owned(), fixtures.join(format!("{case}.stdout")).to_string_lossy().into_owned()),
            ("ERR".to_owned(), fixtures.join(format!("{case}.stderr")).to_string_lossy().into_owned()),
            ("CODE".to_owned(), rc.trim().to_owned()),
        ]);
        for (k, v) in extra {
            env.insert((*k).to_owned(), (*v).to_owned());
        }
        let spec = SeatSpec {
            model: model.map(str::to_owned),
            family: Some("test".into()),
            executable: Some(self.dir.path().join("stand-in").to_string_lossy().into_owned()),
            base_url: Some("http://127.0.0.1:9".into()),
            env,
            ..SeatSpec::new(engine)
        };
        CliSeat::from_spec("stand-in", &spec, self.dir.path()).unwrap().with_key(Secret::new(KEY_VAR, KEY))
    }

    fn request(&self, access: Access) -> Request {
        Request {
            kind: if access == Access::MayWrite { RequestKind::Write } else { RequestKind::Review },
            prompt: "-- Review the work  and reply with JSON.".into(),
            workspace: self.workspace.path().to_path_buf(),
            access,
            turn: 0,
            writes: Vec::new(),
            timeout: Duration::from_secs(30),
        }
    }
}

async fn ask(seat: &CliSeat, request: &Request) -> Result<Reply, SeatError> {
    seat.answer(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_runs_with_a_private_home_null_stdin_and_the_key_only_in_env() {
    let rig = Rig::new();
    let seat = rig.seat(Engine::Claude, Some("claude-sonnet-4-5"), "text", &[]);
    let request = rig.request(Access::ReadOnly);
    let reply = ask(&seat, &request).await.unwrap();
    assert_eq!(reply.text, r#"{"decision":"pass","findings":[]}"#);
    assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (123, 45));
    assert_eq!(reply.session.as_deref(), Some("86376244-59d9-49fb-980f-ed37ea0a3a96"));

    let env = rig.env();
    let home = PathBuf::from(&env["HOME"]);
    assert!(
        home.ends_with("home")
            && home.parent().unwrap().file_name().unwrap().to_string_lossy().starts_with("gavel-claude-")
    );
    assert!(!home.exists(), "the private home is removed after the request");
    assert_ne!(env.get("HOME"), std::env::var("HOME").ok().as_ref());
    assert_eq!(env["TMPDIR"], home.parent().unwrap().join("tmp").to_string_lossy());
    assert_eq!(env["ANTHROPIC_API_KEY"], KEY);
    assert_eq!(env["ANTHROPIC_BASE_URL"], "http://127.0.0.1:9");
    assert_eq!(env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"], "1");
    assert_eq!(env["CLAUDE_CODE_MAX_RETRIES"], "2");
    assert!(env.contains_key("PATH"));
    assert!(!env.contains_key(KEY_VAR), "claude reads ANTHROPIC_API_KEY only");
    assert!(env.keys().all(|k| !k.starts_with("CARGO")), "nothing leaks from gavel's environment: {env:?}");
    assert_eq!(env.values().filter(|v| v.contains(KEY)).count(), 1);

    assert_eq!(rig.dump("stdin").trim(), "/dev/null");
    assert_eq!(Path::new(rig.dump("cwd").trim()), rig.workspace.path());
    let argv = rig.argv();
    assert!(argv.iter().all(|a| !a.contains(KEY)));
    assert_eq!(argv[argv.len() - 3..], ["-p", "--", request.prompt.as_str()]);
    assert!(argv.windows(2).any(|w| w == ["--permission-mode", "plan"]), "{argv:?}");
    assert!(!rig.dump("files").contains(KEY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_reads_its_provider_from_codex_home() {
    let rig = Rig::new();
    let seat = rig.seat(Engine::Codex, Some("gpt-5"), "write", &[]);
    let reply = ask(&seat, &rig.request(Access::MayWrite)).await.unwrap();
    assert_eq!(reply.text, r#"{"decision":"pass","findings":[],"wrote":"made.txt"}"#);
    assert!(reply.usage.cost_usd > 0.0, "codex reports no cost; gavel prices gpt-5 from its table");

    let env = rig.env();
    assert_eq!(env[KEY_VAR], KEY, "codex reads the key from the provider's env_key");
    assert!(env["CODEX_HOME"].ends_with("home/.codex"));
    let files = rig.dump("files");
    assert!(files.contains("== ./.codex/config.toml"), "{files}");
    assert!(files.contains("env_key = \"GAVEL_TEST_KEY\""), "{files}");
    assert!(files.contains("base_url = \"http://127.0.0.1:9/v1\""), "{files}");
    assert!(!files.contains(KEY));
    let argv = rig.argv();
    assert!(argv.windows(2).any(|w| w == ["-s", "workspace-write"]), "{argv:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opencode_gets_its_config_inline_and_the_prompt_intact() {
    let rig = Rig::new();
    let seat = rig.seat(Engine::Opencode, Some("fake-model"), "prose", &[]);
    let request = rig.request(Access::ReadOnly);
    let reply = ask(&seat, &request).await.unwrap();
    assert!(reply.text.contains("```json"));

    let env = rig.env();
    assert_eq!(env[KEY_VAR], KEY);
    let config: serde_json::Value = serde_json::from_str(&env["OPENCODE_CONFIG_CONTENT"]).unwrap();
    assert_eq!(config["provider"]["gavel"]["options"]["apiKey"], "{env:GAVEL_TEST_KEY}");
    assert_eq!(config["permission"]["edit"], "deny");
    assert_eq!(env["OPENCODE_DISABLE_AUTOUPDATE"], "1");
    let argv = rig.argv();
    let dashdash = argv.iter().position(|a| a == "--").unwrap();
    assert_eq!(argv[dashdash + 1..].join(" "), request.prompt);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_gets_api_key_auth_settings() {
    let rig = Rig::new();
    let seat = rig.seat(Engine::Gemini, Some("gemini-2.5-flash"), "text", &[]);
    let reply = ask(&seat, &rig.request(Access::ReadOnly)).await.unwrap();
    assert_eq!(reply.text, r#"{"decision":"pass","findings":[]}"#);
    let env = rig.env();
    assert_eq!(env["GEMINI_API_KEY"], KEY);
    assert_eq!(env["GOOGLE_GEMINI_BASE_URL"], "http://127.0.0.1:9");
    let files = rig.dump("files");
    assert!(files.contains("== ./.gemini/settings.json") && files.contains("\"gemini-api-key\""), "{files}");
    let argv = rig.argv();
    assert!(
        argv.contains(&"--skip-trust".to_owned())
            && argv.windows(2).any(|w| w == ["--approval-mode", "default"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_payloads_and_denials_map_to_seat_errors() {
    let rig = Rig::new();
    let request = rig.request(Access::ReadOnly);
    let err = ask(&rig.seat(Engine::Claude, None, "401", &[]), &request).await.unwrap_err();
    assert!(
        matches!(&err, SeatError::Engine(m) if m.contains("refused the key in $GAVEL_TEST_KEY (401)")),
        "{err}"
    );
    let err = ask(&rig.seat(Engine::Gemini, Some("g"), "401", &[]), &request).await.unwrap_err();
    assert!(matches!(&err, SeatError::Engine(m) if m.contains("(401): invalid x-api-key")), "{err}");
    let err = ask(&rig.seat(Engine::Codex, None, "500", &[]), &request).await.unwrap_err();
    assert!(matches!(&err, SeatError::Engine(m) if m.starts_with("codex: We’re currently")), "{err}");
    // Exit code 0, an answer, and a denied write: refused, not accepted.
    let err = ask(&rig.seat(Engine::Claude, None, "readonly_denied", &[]), &request).await.unwrap_err();
    assert!(matches!(&err, SeatError::Refused(m) if m.contains("read-only `review` request")), "{err}");
    let err = ask(&rig.seat(Engine::Codex, None, "readonly_denied", &[]), &request).await.unwrap_err();
    assert!(matches!(&err, SeatError::Refused(m) if m.contains("patch rejected")), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_too_long_for_an_argument_comes_on_stdin() {
    let rig = Rig::new();
    let mut request = rig.request(Access::ReadOnly);
    request.prompt = format!("-- start {}end", "0123456789 ".repeat(20_000));
    for (engine, model) in [(Engine::Claude, None), (Engine::Gemini, Some("g"))] {
        let seat = rig.seat(engine, model, "text", &[]);
        let reply = ask(&seat, &request).await.unwrap();
        assert!(reply.text.contains("pass"));
        assert!(rig.dump("stdin").trim().ends_with("/prompt.txt"), "{}", rig.dump("stdin"));
        assert_eq!(rig.dump("stdin_text"), request.prompt, "{engine}");
        assert!(rig.argv().iter().all(|a| !a.contains("0123456789")), "{engine}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_cli_is_stopped_at_the_timeout() {
    let rig = Rig::new();
    let seat = rig.seat(Engine::Codex, None, "text", &[("SLEEP", "60")]);
    let mut request = rig.request(Access::ReadOnly);
    request.timeout = Duration::from_secs(1);
    let started = Instant::now();
    let err = ask(&seat, &request).await.unwrap_err();
    assert_eq!(err, SeatError::Timeout(Duration::from_secs(1)));
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_binary_or_key_is_explained() {
    let rig = Rig::new();
    let mut spec = SeatSpec {
        family: Some("anthropic".into()),
        executable: Some("/nonexistent/claude".into()),
        ..SeatSpec::new(Engine::Claude)
    };
    let seat = CliSeat::from_spec("c", &spec, Path::new("/")).unwrap().with_key(Secret::new(KEY_VAR, KEY));
    let err = ask(&seat, &rig.request(Access::ReadOnly)).await.unwrap_err();
    assert!(err.to_string().contains("npm install -g @anthropic-ai/claude-code"), "{err}");

    spec.executable = Some(rig.dir.path().join("stand-in").to_string_lossy().into_owned());
    spec.api_key_env = Some("GAVEL_TEST_SURELY_UNSET_CLI_KEY".into());
    spec.base_url = Some("https://api.example.invalid".into());
    let seat = CliSeat::from_spec("c", &spec, Path::new("/")).unwrap();
    let err = ask(&seat, &rig.request(Access::ReadOnly)).await.unwrap_err();
    assert!(err.to_string().contains("`GAVEL_TEST_SURELY_UNSET_CLI_KEY` is not set"), "{err}");
    assert_eq!(rig.dump("env"), "", "nothing was spawned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_reports_path_and_version_or_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let exe = dir.path().join("codex");
    std::fs::write(&exe, "#!/bin/sh\n[ \"$1\" = --version ] && echo 'codex-cli 9.9.9' && exit 0\nexit 2\n")
        .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let found = probe(Engine::Codex, Some(&exe.to_string_lossy())).await;
    assert!(found.ok(), "{found:?}");
    assert_eq!(found.path.as_deref(), Some(exe.as_path()));
    assert_eq!(found.version.as_deref(), Some("codex-cli 9.9.9"));

    let missing = probe(Engine::Gemini, Some("/nonexistent/gemini")).await;
    assert!(!missing.ok());
    assert!(missing.problem.unwrap().contains("npm install -g @google/gemini-cli"));
    let not_cli = probe(Engine::Script, None).await;
    assert!(not_cli.problem.is_some());
}

/// An agent CLI "builder" that goes beyond its `writes`: it writes its own
/// file, then `$MISCHIEF` (a shell snippet run in the workspace), then
/// prints the recorded `write` transcript.
const MISCHIEVOUS: &str = r#"#!/bin/sh
printf 'the new page' > page.md
eval "$MISCHIEF"
cat "$OUT"
exit "${CODE:-0}"
"#;

/// A claude seat running [`MISCHIEVOUS`] with `mischief`, and a write
/// request for `page.md` in a workspace holding `keep.md`, `gone.md` and
/// `run.sh` (mode 644).
fn mischievous(rig: &Rig, mischief: &str) -> (CliSeat, Request) {
    let exe = rig.dir.path().join("mischievous");
    std::fs::write(&exe, MISCHIEVOUS).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cli/claude");
    let spec = SeatSpec {
        model: Some("claude-sonnet-4-5".into()),
        family: Some("test".into()),
        executable: Some(exe.to_string_lossy().into_owned()),
        base_url: Some("http://127.0.0.1:9".into()),
        env: BTreeMap::from([
            ("OUT".to_owned(), fixtures.join("write.stdout").to_string_lossy().into_owned()),
            ("MISCHIEF".to_owned(), mischief.to_owned()),
        ]),
        ..SeatSpec::new(Engine::Claude)
    };
    let seat =
        CliSeat::from_spec("builder", &spec, rig.dir.path()).unwrap().with_key(Secret::new(KEY_VAR, KEY));
    let ws = &rig.workspace;
    ws.write("page.md", "the old page").unwrap();
    ws.write("keep.md", "keep these bytes").unwrap();
    ws.write("gone.md", "do not delete me").unwrap();
    ws.write("run.sh", "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(ws.join("run.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut request = rig.request(Access::MayWrite);
    request.writes = vec!["page.md".into()];
    (seat, request)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_builder_s_changes_outside_writes_are_undone_and_named() {
    let rig = Rig::new();
    let (seat, request) =
        mischievous(&rig, "printf sneaked > extra.txt; rm gone.md; chmod 755 run.sh; printf x >> keep.md");
    let err = ask(&seat, &request).await.unwrap_err();
    assert_eq!(
        err,
        SeatError::Engine(
            "claude: the seat changed files outside those this request may write (`page.md`); its answer was discarded and gavel undid what it could: `extra.txt` created (removed); `gone.md` deleted (restored); `keep.md` modified (restored); `run.sh` mode changed (restored)".into()
        )
    );
    let ws = &rig.workspace;
    assert_eq!(ws.read("page.md").unwrap(), "the new page", "the allowed change stays");
    assert!(!ws.exists("extra.txt"));
    assert_eq!(ws.read("gone.md").unwrap(), "do not delete me");
    assert_eq!(ws.read("keep.md").unwrap(), "keep these bytes");
    let mode = std::fs::metadata(ws.join("run.sh")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644);
    let mut left: Vec<String> = std::fs::read_dir(ws.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["gone.md", "keep.md", "page.md", "run.sh"], "no scratch or temp file left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_builder_whose_writes_lead_out_through_a_link_is_not_started() {
    // The snapshot sees the workspace only: a file the CLI would write
    // through a link out of it must be refused before the CLI runs.
    for shape in ["file", "folder", "dangling", "into .gavel"] {
        let rig = Rig::new();
        let outside = tempfile::tempdir().unwrap();
        let ws = &rig.workspace;
        let (link, target) = match shape {
            "file" => ("page.md", outside.path().join("page.md")),
            "folder" => ("docs", outside.path().to_owned()),
            "dangling" => ("page.md", outside.path().join("nowhere/page.md")),
            _ => {
                ws.write(".gavel/runs/r/events.jsonl", "{}\n").unwrap();
                ("docs", ws.join(".gavel/runs/r"))
            }
        };
        if shape == "file" {
            std::fs::write(&target, "outside bytes").unwrap();
        }
        let (seat, mut request) = mischievous(&rig, "");
        std::fs::remove_file(ws.join("page.md")).unwrap();
        std::os::unix::fs::symlink(&target, ws.join(link)).unwrap();
        request.writes = vec![if link == "docs" { "docs/page.md".into() } else { "page.md".into() }];
        let err = ask(&seat, &request).await.unwrap_err();
        let SeatError::Refused(message) = &err else { panic!("{shape}: {err:?}") };
        assert!(message.contains("the CLI was not started"), "{shape}: {message}");
        assert!(!outside.path().join("page.md").exists() || shape == "file", "{shape}: written outside");
        if shape == "file" {
            assert_eq!(std::fs::read_to_string(&target).unwrap(), "outside bytes", "{shape}");
        }
        if shape == "into .gavel" {
            assert_eq!(ws.read(".gavel/runs/r/events.jsonl").unwrap(), "{}\n");
            assert!(!ws.exists(".gavel/runs/r/page.md"));
        }
        // The CLI never ran: its first act would have been page.md in the workspace.
        assert!(!ws.path().join("page.md").is_file() || shape == "file", "{shape}: the CLI ran");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_builder_cannot_plant_git_hooks_or_links_out() {
    let rig = Rig::new();
    let outside = tempfile::tempdir().unwrap();
    rig.workspace.write(".git/HEAD", "ref: refs/heads/main\n").unwrap();
    let mischief = format!(
        "mkdir -p .git/hooks && printf '#!/bin/sh\\ncurl evil' > .git/hooks/pre-commit; ln -s {} out; mkdir -p docs/deep && printf x > docs/deep/x.md",
        outside.path().display()
    );
    let (seat, request) = mischievous(&rig, &mischief);
    let err = ask(&seat, &request).await.unwrap_err();
    let SeatError::Engine(message) = &err else { panic!("{err:?}") };
    for named in [
        "`.git/hooks` created (removed)",
        "`.git/hooks/pre-commit` created (removed)",
        "`out` created (removed)",
        "`docs` created (removed)",
        "`docs/deep/x.md` created (removed)",
    ] {
        assert!(message.contains(named), "{named}: {message}");
    }
    let ws = &rig.workspace;
    assert!(!ws.exists(".git/hooks") && !ws.exists("docs"));
    assert!(ws.join("out").symlink_metadata().is_err());
    assert_eq!(ws.read(".git/HEAD").unwrap(), "ref: refs/heads/main\n");
    assert_eq!(ws.read("page.md").unwrap(), "the new page");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_builder_that_stays_inside_writes_answers_as_usual() {
    let rig = Rig::new();
    // Creating and removing a scratch file leaves nothing to undo.
    let (seat, request) = mischievous(&rig, "printf t > tmp.txt; rm tmp.txt");
    let reply = ask(&seat, &request).await.unwrap();
    assert_eq!(reply.text, r#"{"decision":"pass","findings":[],"wrote":"hello.txt"}"#);
    assert_eq!(rig.workspace.read("page.md").unwrap(), "the new page");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_cli_builder_is_still_undone() {
    let rig = Rig::new();
    let (seat, request) = mischievous(&rig, "rm keep.md; exit 3");
    let err = ask(&seat, &request).await.unwrap_err();
    let SeatError::Engine(message) = &err else { panic!("{err:?}") };
    assert!(message.contains("`keep.md` deleted (restored)"), "{message}");
    assert_eq!(rig.workspace.read("keep.md").unwrap(), "keep these bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_cli_builders_in_one_workspace_are_each_blamed_for_their_own_changes() {
    // `a` keeps running until it sees `b`'s stray file (or 1 s passes): run
    // at once, `a` would finish first and be blamed for it.
    let rig = Rig::new();
    let (a, request_a) =
        mischievous(&rig, "for i in $(seq 50); do [ -e stray.txt ] && break; sleep 0.02; done");
    let (b, request_b) = mischievous(&rig, "printf stray > stray.txt; sleep 0.3");
    let (by_a, by_b) = tokio::join!(ask(&a, &request_a), ask(&b, &request_b));
    assert!(by_a.is_ok(), "a made no stray file: {by_a:?}");
    let Err(SeatError::Engine(message)) = &by_b else { panic!("{by_b:?}") };
    assert!(message.contains("`stray.txt` created (removed)"), "{message}");
    assert!(!rig.workspace.exists("stray.txt"));
}

/// Whether process `pid` is gone (or a zombie waiting to be reaped).
fn gone(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map_or(true, |stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z')))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_builder_s_background_helpers_do_not_outlive_the_request() {
    for (shape, spawn) in [
        ("subshell", "(sleep 5; echo late > late.txt) >/dev/null 2>&1 &"),
        ("nohup", "nohup sh -c 'sleep 5; echo late > late.txt' >/dev/null 2>&1 &"),
        ("holding the pipes", "(sleep 5; echo late > late.txt) &"),
    ] {
        let rig = Rig::new();
        let pids = rig.dir.path().join("pids");
        let (seat, request) = mischievous(&rig, &format!("{spawn} echo $! > '{}'", pids.display()));
        let reply = ask(&seat, &request).await;
        assert!(reply.is_ok(), "{shape}: {reply:?}");
        let pid = std::fs::read_to_string(&pids).unwrap().trim().to_owned();
        // Killed before the request returned; allow a moment for the kernel.
        let deadline = Instant::now() + Duration::from_millis(500);
        while !gone(&pid) && Instant::now() < deadline {
            tokio::task::yield_now().await;
        }
        assert!(gone(&pid), "{shape}: the helper {pid} still runs");
        assert!(!rig.workspace.exists("late.txt"), "{shape}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_builder_whose_writes_name_a_hard_link_is_not_started() {
    for shape in ["outside", "inside"] {
        let rig = Rig::new();
        let outside = tempfile::tempdir().unwrap();
        let (seat, request) = mischievous(&rig, "");
        let ws = &rig.workspace;
        std::fs::remove_file(ws.join("page.md")).unwrap();
        let other = if shape == "outside" { outside.path().join("other.md") } else { ws.join("keep.md") };
        std::fs::write(&other, "other bytes").unwrap();
        std::fs::hard_link(&other, ws.join("page.md")).unwrap();
        let err = ask(&seat, &request).await.unwrap_err();
        let SeatError::Refused(message) = &err else { panic!("{shape}: {err:?}") };
        assert!(
            message.contains("`page.md` is a hard link: writing it would change another file too"),
            "{shape}: {message}"
        );
        assert!(message.contains("the CLI was not started"), "{shape}: {message}");
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "other bytes", "{shape}: the CLI ran");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_builder_that_links_an_allowed_file_elsewhere_is_undone() {
    let outside = tempfile::tempdir().unwrap();
    for (shape, mischief, change) in [
        ("hard link inside", "ln -f keep.md page.md".to_owned(), "made a hard link to another file"),
        (
            "hard link out",
            format!("ln page.md '{}'", outside.path().join("copy").display()),
            "made a hard link to another file",
        ),
        ("symbolic link inside", "rm page.md; ln -s keep.md page.md".to_owned(), "made a symbolic link"),
        (
            "symbolic link by path",
            "rm page.md; ln -s \"$PWD/run.sh\" page.md".to_owned(),
            "made a symbolic link",
        ),
    ] {
        let rig = Rig::new();
        let (seat, request) = mischievous(&rig, &mischief);
        let err = ask(&seat, &request).await.unwrap_err();
        let SeatError::Engine(message) = &err else { panic!("{shape}: {err:?}") };
        assert!(message.contains(&format!("`page.md` {change}")), "{shape}: {message}");
        let ws = &rig.workspace;
        let meta = ws.join("page.md").symlink_metadata().unwrap();
        assert!(meta.is_file() && std::os::unix::fs::MetadataExt::nlink(&meta) == 1, "{shape}");
        assert_eq!(ws.read("page.md").unwrap(), "the old page", "{shape}");
        assert_eq!(ws.read("keep.md").unwrap(), "keep these bytes", "{shape}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_builder_whose_writes_lead_to_another_file_through_a_link_is_not_started() {
    for (shape, link, target, write) in [
        ("file", "out.txt", "src/main.rs", "out.txt"),
        ("folder", "gen", "src", "gen/main.rs"),
        ("absolute", "out.txt", "ABS", "out.txt"),
    ] {
        let rig = Rig::new();
        let (seat, mut request) = mischievous(&rig, "");
        let ws = &rig.workspace;
        ws.write("src/main.rs", "fn main() {}").unwrap();
        let target = if target == "ABS" {
            ws.path().canonicalize().unwrap().join("src/main.rs")
        } else {
            target.into()
        };
        std::os::unix::fs::symlink(&target, ws.join(link)).unwrap();
        request.writes = vec![write.into()];
        let err = ask(&seat, &request).await.unwrap_err();
        let SeatError::Refused(message) = &err else { panic!("{shape}: {err:?}") };
        assert!(
            message.contains(&format!("`{write}` leads through a symbolic link to `src/main.rs`")),
            "{shape}: {message}"
        );
        assert!(message.contains("the CLI was not started"), "{shape}: {message}");
        assert_eq!(ws.read("page.md").unwrap(), "the old page", "{shape}: the CLI ran");
        // Allowed when the file it leads to may be written too.
        request.writes = vec![write.into(), "src/main.rs".into(), "page.md".into()];
        assert!(ask(&seat, &request).await.is_ok(), "{shape}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_builder_cannot_point_git_at_other_objects() {
    let rig = Rig::new();
    rig.workspace.write(".git/objects/ab/cdef", "blob").unwrap();
    let (seat, request) = mischievous(
        &rig,
        "mkdir -p .git/objects/info && echo /tmp/evil/objects > .git/objects/info/alternates; printf o > .git/objects/ab/new",
    );
    let err = ask(&seat, &request).await.unwrap_err();
    let SeatError::Engine(message) = &err else { panic!("{err:?}") };
    assert!(message.contains("`.git/objects/info/alternates` created (removed)"), "{message}");
    assert!(!message.contains(".git/objects/ab"), "object files are not watched: {message}");
    assert!(!rig.workspace.exists(".git/objects/info/alternates"));
}
