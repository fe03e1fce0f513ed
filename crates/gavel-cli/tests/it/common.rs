//! Helpers shared by the end-to-end tests: running the `gavel` binary,
//! reading records, polling for a background process, and snapshot filters.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Command-line arguments of mixed types (`&str`, `Path`, `PathBuf`) as
/// `Vec<OsString>`.
macro_rules! args {
    ($($arg:expr),* $(,)?) => {
        vec![$(::std::ffi::OsString::from(&$arg)),*]
    };
}

/// The `gavel` binary under test.
pub const GAVEL: &str = env!("CARGO_BIN_EXE_gavel");

/// How long a poll waits for a background process before the test fails.
/// Generous: the condition normally holds within milliseconds.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// What one `gavel` invocation did.
#[derive(Debug)]
pub struct Out {
    /// The exit code (`-1` when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Out {
    /// Standard output as one JSON value.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("stdout is not one JSON value ({err}):\n{}", self.stdout))
    }

    /// Panics with both streams unless the exit code is `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "expected exit {code}, got {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.stdout, self.stderr
        );
        self
    }
}

/// A `gavel` command with a clean, colourless environment.
pub fn gavel_cmd() -> Command {
    let mut cmd = Command::new(GAVEL);
    cmd.env("NO_COLOR", "1")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("RUST_LOG")
        // The record writer's fault-injection hook: never inherited here.
        .env_remove("GAVEL_CRASH_AFTER_SEQ")
        .stdin(Stdio::null());
    cmd
}

/// Runs `gavel` with `args` and waits for it.
pub fn gavel<I, S>(args: I) -> Out
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    output(gavel_cmd().args(args))
}

/// Runs `gavel` with `args` in `dir` and waits for it.
pub fn gavel_in<I, S>(dir: &Path, args: I) -> Out
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    output(gavel_cmd().current_dir(dir).args(args))
}

pub fn output(cmd: &mut Command) -> Out {
    let out = cmd.output().expect("gavel runs");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
    }
}

/// A `gavel` process in the background. Dropping it kills it, so a failing
/// test leaves no process behind writing into a removed temp dir.
#[derive(Debug)]
pub struct Background {
    child: Option<Child>,
}

impl Background {
    fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("the process is still held")
    }

    /// Whether it exited, with how.
    pub fn try_wait(&mut self) -> Option<std::process::ExitStatus> {
        self.child().try_wait().expect("try_wait")
    }

    /// SIGKILLs it (it may have exited already) and reaps it.
    pub fn kill9(&mut self) {
        let child = self.child();
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
        // ESRCH (gone, not yet reaped) is fine: it is reaped below.
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
        child.wait().expect("the killed process is reaped");
    }

    /// Waits for it and collects what it printed (when started piped).
    pub fn wait_out(mut self) -> Out {
        let child = self.child.take().expect("the process is still held");
        let out = child.wait_with_output().expect("gavel finishes");
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(out.stderr).expect("stderr is UTF-8"),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Starts `gavel` with `args` in the background, output discarded.
pub fn spawn_gavel<I, S>(args: I) -> Background
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let child =
        gavel_cmd().args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("gavel starts");
    Background { child: Some(child) }
}

/// Starts `gavel` with `args` in the background, output captured.
pub fn spawn_gavel_piped<I, S>(args: I) -> Background
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let child =
        gavel_cmd().args(args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("gavel starts");
    Background { child: Some(child) }
}

/// Polls until `ready` holds, failing the test at [`DEADLINE`]. The process
/// must not exit before the condition holds.
#[track_caller]
pub fn poll_until(what: &str, process: &mut Background, mut ready: impl FnMut() -> bool) {
    let started = Instant::now();
    loop {
        if ready() {
            return;
        }
        if let Some(status) = process.try_wait() {
            // It may have made the condition true just before exiting.
            assert!(ready(), "the process exited ({status}) before {what}");
            return;
        }
        assert!(started.elapsed() < DEADLINE, "timed out after {DEADLINE:?} waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The workspace's copy of the hello example (absolute, no `..`).
pub fn hello_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/hello").canonicalize().expect("examples/hello")
}

/// The hello example's workflow file.
pub fn hello() -> PathBuf {
    hello_dir().join("workflow.toml")
}

/// A fixture folder under `tests/fixtures` (absolute, no `..`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name).canonicalize().expect(name)
}

/// Copies a folder tree (fixtures are small).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy's folder");
    for entry in std::fs::read_dir(from).expect("read the fixture") {
        let entry = entry.expect("fixture entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a fixture file");
        }
    }
}

/// A fresh temporary folder.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("gavel-it-").tempdir().expect("a temp dir")
}

/// The default record of `run_id` in `workspace`.
pub fn record_path(workspace: &Path, run_id: &str) -> PathBuf {
    workspace.join(".gavel/runs").join(run_id).join("events.jsonl")
}

/// The record's bytes, or nothing when it does not exist yet.
pub fn read_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_default()
}

/// How many whole lines (ending in a newline) the file has now.
pub fn whole_lines(path: &Path) -> usize {
    read_bytes(path).split_inclusive(|&b| b == b'\n').filter(|l| l.ends_with(b"\n")).count()
}

/// Every line of a record as a JSON value; panics on a line that does not
/// parse or a record that does not end in a newline.
#[track_caller]
pub fn events(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("the record is UTF-8");
    assert!(text.is_empty() || text.ends_with('\n'), "the record does not end in a newline:\n{text}");
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("line {} is not JSON ({err}): {line}", i + 1))
        })
        .collect()
}

/// The `kind` of each event.
pub fn kinds(events: &[Value]) -> Vec<String> {
    events.iter().map(|e| e["kind"].as_str().expect("kind is a string").to_owned()).collect()
}

/// Asserts one JSON object per line, with exactly the envelope keys and
/// `seq` counting from 1 without gaps.
#[track_caller]
pub fn assert_well_formed(events: &[Value]) {
    for (i, event) in events.iter().enumerate() {
        let object = event.as_object().unwrap_or_else(|| panic!("line {} is not an object", i + 1));
        let mut keys: Vec<&str> = object.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["at", "data", "kind", "seq", "v"], "line {}", i + 1);
        assert_eq!(event["v"], 1, "line {}", i + 1);
        assert_eq!(event["seq"].as_u64(), Some(i as u64 + 1), "seq of line {}", i + 1);
        assert!(event["data"].is_object(), "line {}: data is not an object", i + 1);
        let at = event["at"].as_str().unwrap_or_default();
        assert!(at.ends_with('Z') && at.contains('T'), "line {}: `at` is not RFC 3339 UTC: {at}", i + 1);
    }
}

/// The seat effect key of a `seat:*` event: stage, round, seat, request, attempt.
pub fn seat_key(event: &Value) -> (String, u64, String, String, u64) {
    let d = &event["data"];
    (
        d["stage"].as_str().unwrap_or_default().to_owned(),
        d["round"].as_u64().unwrap_or_default(),
        d["seat"].as_str().unwrap_or_default().to_owned(),
        d["request"].as_str().unwrap_or_default().to_owned(),
        d["attempt"].as_u64().unwrap_or_default(),
    )
}

/// Asserts that no seat effect of `kind` is recorded twice.
#[track_caller]
pub fn assert_no_duplicate(events: &[Value], kind: &str) {
    let mut seen = std::collections::BTreeSet::new();
    for event in events.iter().filter(|e| e["kind"] == kind) {
        let key = seat_key(event);
        assert!(seen.insert(key.clone()), "{kind} {key:?} is recorded twice");
    }
}

/// The hello example's event kinds, in order.
pub const HELLO_KINDS: [&str; 14] = [
    "run:start",
    "stage:start",
    "seat:request",
    "seat:reply",
    "build:done",
    "stage:start",
    "seat:request",
    "seat:reply",
    "build:done",
    "stage:start",
    "seat:request",
    "seat:reply",
    "build:done",
    "run:end",
];

/// Regex-escapes a literal for a snapshot filter.
pub fn escape(literal: &str) -> String {
    let mut out = String::with_capacity(literal.len());
    for c in literal.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Snapshot settings that hide what changes between runs: the given
/// folders (first, longest first), timestamps, durations, generated run ids,
/// SHA-256 digests and pids.
pub fn snapshot_settings(dirs: &[(&Path, &str)]) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_prepend_module_to_snapshot(false);
    let mut dirs: Vec<(String, &str)> = dirs.iter().map(|(d, n)| (d.display().to_string(), *n)).collect();
    dirs.sort_by_key(|(d, _)| std::cmp::Reverse(d.len()));
    for (dir, name) in dirs {
        settings.add_filter(&escape(&dir), name);
    }
    for (regex, replacement) in [
        (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "[AT]"),
        (r"\b\d{2}:\d{2}:\d{2}\.\d{3}\b", "[TIME]"),
        (r"\b\d+ ms\b", "[MS]"),
        (r"\b\d+\.\d s\b", "[MS]"),
        (r"\[\s*\d+\.\ds\]", "[ELAPSED]"),
        (r"\b[A-Za-z0-9_.-]+-\d{8}T\d{9}Z\b", "[RUN_ID]"),
        (r"\b[0-9a-f]{64}\b", "[SHA256]"),
        (r"prompt [0-9a-f]{12}\b", "prompt [SHA]"),
        (r"\(pid \d+\)", "(pid [PID])"),
    ] {
        settings.add_filter(regex, replacement);
    }
    settings
}

/// A fake model server that refuses every request with a 401 whose body
/// echoes `key`, as some proxies do: errors must not repeat it.
pub fn server_refusing_key(key: &str) -> gavel_test_support::FakeModel {
    let body = serde_json::json!({
        "type": "error",
        "error": {"type": "authentication_error", "message": format!("invalid x-api-key {key}")}
    })
    .to_string();
    let refuse = gavel_test_support::FakeReply::Error { status: 401, body: Some(body), retry_after: None };
    gavel_test_support::FakeModel::start_blocking(gavel_test_support::FakeScript::new([
        gavel_test_support::Rule::new(refuse),
    ]))
    .unwrap()
}

/// Runs `git ARGS` in `root` (a fixed author, no signing), asserting it works.
pub fn git(root: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@gavel.invalid", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    assert!(ok, "git {args:?}");
}

/// A git repository at `root` with one commit holding `README.md`.
pub fn git_repo(root: &Path) {
    git(root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("README.md"), "x\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "start"]);
}
