//! What every real-CLI test needs: the guard (loopback-only network, CLIs
//! installed), the installed CLIs, seats and requests built the way the
//! runtime builds them, and the fake model server with its log.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gavel_domain::{Engine, Price, RequestKind, ReviewReply, SeatSpec};
use gavel_seats::cli::CliSeat;
use gavel_seats::secret::Secret;
use gavel_seats::{Reply, Request, Seat, SeatError};
use gavel_test_support::{FakeModel, FakeScript, Rule};

/// The API key every seat gets. It must reach the fake server (in a
/// header) and nothing else: no reply, error message or record.
pub const KEY: &str = "sk-gavel-real-cli-5d1e0c7a-NEVER-LOGGED";
/// The variable the key is read from (`api_key_env`).
pub const KEY_VAR: &str = "GAVEL_REAL_CLI_KEY";

/// Slack between a seat's timeout and the moment its error must be in hand:
/// the process group is killed at the timeout, then reaped.
pub const GRACE: Duration = Duration::from_secs(5);

/// The script that installs the pinned CLIs, relative to the repository.
const INSTALL_SCRIPT: &str = "ci/install-agent-clis.sh";

/// Set to `1` to run the group outside a loopback-only namespace.
const ANY_NETWORK: &str = "GAVEL_REAL_CLI_ANY_NETWORK";

/// The repository's root.
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Checks that the test may run: the process is in a network namespace
/// with only loopback (unless `GAVEL_REAL_CLI_ANY_NETWORK=1`), and every
/// pinned CLI is installed. Panics with what to do otherwise: these tests
/// never skip.
pub fn preflight() {
    if std::env::var(ANY_NETWORK).as_deref() != Ok("1") {
        let interfaces = interfaces();
        assert!(
            interfaces == ["lo"],
            "the real-CLI tests run only inside a network namespace whose one interface is loopback, so \
             no agent CLI can reach the internet; this process sees {interfaces:?}. Run them as root with\n  \
             unshare -n -- sh -c 'ip link set lo up && exec cargo nextest run -p gavel-cli --test real_cli \
             --run-ignored only'\n(or set {ANY_NETWORK}=1 to run them on this network anyway)"
        );
    }
    for engine in [Engine::Claude, Engine::Codex, Engine::Opencode, Engine::Gemini] {
        cli(engine);
    }
}

/// The network interfaces of this process's network namespace.
/// `/proc/self/net/dev` follows the process's namespace; `/sys/class/net`
/// does not (it shows the namespace sysfs was mounted in, the host's after
/// a bare `unshare -n`).
fn interfaces() -> Vec<String> {
    let dev = std::fs::read_to_string("/proc/self/net/dev")
        .unwrap_or_else(|err| panic!("cannot read /proc/self/net/dev to check the network: {err}"));
    dev.lines().skip(2).filter_map(|l| l.split_once(':')).map(|(name, _)| name.trim().to_owned()).collect()
}

/// One pinned CLI of the install script.
#[derive(Debug, Clone)]
pub struct Pin {
    /// Its folder name before `@` (`claude`, `codex`, ...).
    pub name: String,
    /// The npm package.
    pub package: String,
    /// The pinned version.
    pub version: String,
    /// The binary under `node_modules/.bin`.
    pub bin: String,
}

/// The pins of `ci/install-agent-clis.sh` (its `PINS=( ... )` lines), so the
/// versions live in one place.
pub fn pins() -> Vec<Pin> {
    let path = repo_root().join(INSTALL_SCRIPT);
    let script = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let start = script.find("PINS=(").unwrap_or_else(|| panic!("{INSTALL_SCRIPT} has no PINS=( ... )"));
    let body = &script[start..];
    let body = &body[..body.find("\n)").unwrap_or(body.len())];
    let pins: Vec<Pin> = body
        .lines()
        .filter_map(|l| l.trim().strip_prefix('"')?.strip_suffix('"').map(str::to_owned))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            let [name, package, version, bin] = words[..] else { return None };
            Some(Pin { name: name.into(), package: package.into(), version: version.into(), bin: bin.into() })
        })
        .collect();
    assert!(pins.len() >= 4, "could not read the pins of {INSTALL_SCRIPT}: {pins:?}");
    pins
}

/// Where the install script puts the CLIs.
fn cache_dir() -> PathBuf {
    std::env::var_os("GAVEL_AGENT_CLIS").filter(|d| !d.is_empty()).map_or_else(
        || PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/gavel-agent-clis"),
        PathBuf::from,
    )
}

/// The installed binary of an engine's pinned CLI. Panics, naming the
/// install script, when it is not there.
pub fn cli(engine: Engine) -> PathBuf {
    let name = engine.as_str();
    let pin = pins()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{INSTALL_SCRIPT} pins no `{name}` CLI"));
    let prefix = cache_dir().join(format!("{}@{}", pin.name, pin.version));
    let bin = prefix.join("node_modules/.bin").join(&pin.bin);
    let installed = prefix.join(".gavel-installed").is_file() && bin.is_file();
    assert!(
        installed,
        "the {} CLI ({}@{}) is not installed at {}: run `bash {INSTALL_SCRIPT}` (it installs every \
         pinned CLI into ${{GAVEL_AGENT_CLIS:-$HOME/.cache/gavel-agent-clis}}); the real-CLI tests \
         never skip a missing CLI",
        pin.name,
        pin.package,
        pin.version,
        bin.display()
    );
    bin
}

/// Starts the fake model server with `rules`.
pub fn serve(rules: impl IntoIterator<Item = Rule>) -> FakeModel {
    FakeModel::start_blocking(FakeScript::new(rules)).unwrap_or_else(|err| {
        panic!("cannot start the fake model server on 127.0.0.1 ({err}); is loopback up? `ip link set lo up`")
    })
}

/// The server's log, one line per request, for failure messages.
pub fn log(server: &FakeModel) -> String {
    let mut out = String::new();
    for r in server.requests() {
        let _ = writeln!(
            out,
            "  {} {}{} -> {} (rule {:?}, model {:?})",
            r.method,
            r.path,
            if r.query.is_empty() { String::new() } else { format!("?{}", r.query) },
            r.status,
            r.rule,
            r.model()
        );
    }
    if out.is_empty() { "  (no requests)".to_owned() } else { out }
}

/// Checks that the key reached the server in a header of a generation
/// request, and that the server saw it nowhere in a body.
#[track_caller]
pub fn assert_key_sent(server: &FakeModel) {
    let requests = server.requests();
    let generation: Vec<_> = requests.iter().filter(|r| r.api.is_some()).collect();
    assert!(!generation.is_empty(), "no model request reached the server:\n{}", log(server));
    assert!(
        generation.iter().all(|r| r.headers.iter().any(|(_, v)| v.contains(KEY))),
        "every model request carries the key in a header:\n{}",
        log(server)
    );
    assert!(requests.iter().all(|r| !r.body.to_string().contains(KEY)), "the key was sent in a request body");
}

/// A seat spec for an engine's pinned CLI against `url`, with the key in
/// `api_key_env`.
pub fn spec(engine: Engine, model: &str, url: &str) -> SeatSpec {
    SeatSpec {
        model: Some(model.to_owned()),
        executable: Some(cli(engine).to_string_lossy().into_owned()),
        base_url: Some(url.to_owned()),
        api_key_env: Some(KEY_VAR.to_owned()),
        ..SeatSpec::new(engine)
    }
}

/// The same spec with a price (USD per million tokens).
pub fn priced(mut spec: SeatSpec, input: f64, output: f64) -> SeatSpec {
    spec.price = Some(Price { input, output });
    spec
}

/// A seat from a spec, holding the key.
pub fn seat(spec: &SeatSpec) -> CliSeat {
    CliSeat::from_spec("real", spec, &repo_root()).unwrap().with_key(Secret::new(KEY_VAR, KEY))
}

/// A temporary workspace under its canonical path (the CLIs resolve their
/// working directory, and claude's and gemini's write tools take absolute
/// paths inside it).
#[derive(Debug)]
pub struct Workspace {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Workspace {
    pub fn new() -> Self {
        let dir = tempfile::Builder::new().prefix("gavel-real-cli-").tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap();
        Self { _dir: dir, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn join(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }
}

/// A request as the runtime builds it (`gavel-runtime`'s exec loop): the
/// kind's access, turn 0, the stage's files, the seat's timeout.
pub fn request(kind: RequestKind, ws: &Workspace, timeout: Duration) -> Request {
    let prompt = match kind {
        RequestKind::Write => BUILD_PROMPT,
        _ => REVIEW_PROMPT,
    };
    Request {
        kind,
        prompt: prompt.to_owned(),
        workspace: ws.path().to_path_buf(),
        access: kind.access(),
        turn: 0,
        writes: vec!["hello.txt".to_owned()],
        timeout,
    }
}

/// A builder prompt in the shape of `prompts/write.md`.
const BUILD_PROMPT: &str = "You are the builder of the stage `greet` (round 1) in a gavel workflow.\n\n\
## The brief\n\nWrite a one-line greeting for new staff.\n\n\
## Files you must write\n\nWrite these files in the workspace (paths are relative to it), and nothing outside it:\n\n\
- `hello.txt`\n\nWhen you are done, reply with a short summary of what you changed.\n";

/// A review prompt in the shape of `prompts/review.md`.
const REVIEW_PROMPT: &str = "You are reviewer `greet-1` of the work of stage `greet` (round 1).\n\
You may read the workspace but must not change anything.\n\n\
## The brief\n\nWrite a one-line greeting for new staff.\n\n\
## The work\n\n### `hello.txt`\n\n```\nWelcome aboard!\n```\n\n\
Decide whether the work passes. Reply with one JSON object and nothing else:\n\n\
{\"decision\":\"pass\"|\"revise\",\"findings\":[{\"severity\":\"block\"|\"should-fix\"|\"nice-to-have\",\"evidence\":\"<what is wrong, and where>\",\"fix\":\"<what to do>\"}]}\n";

/// A review answer with prose and a code fence around the JSON, as models
/// write them.
pub const PROSE_REVIEW: &str = "I read `hello.txt` against the brief.\n\n```json\n\
{\"decision\":\"revise\",\"findings\":[{\"severity\":\"should-fix\",\"evidence\":\"hello.txt:1 does not say who it greets\",\"fix\":\"Name the new staff\"}]}\n\
```\n\nThat is my review.";

/// Reads [`PROSE_REVIEW`] back through gavel's reply protocol.
#[track_caller]
pub fn assert_prose_review(reply: &Reply) {
    let review: ReviewReply = gavel_domain::protocol::parse(&reply.text)
        .unwrap_or_else(|err| panic!("the review is not readable ({err}):\n{}", reply.text));
    assert_eq!(review.decision, gavel_domain::Decision::Revise, "{}", reply.text);
    assert_eq!(review.findings.len(), 1, "{}", reply.text);
    assert_eq!(review.findings[0].evidence, "hello.txt:1 does not say who it greets");
    assert_eq!(review.findings[0].severity, Some(gavel_domain::Severity::ShouldFix));
}

/// Asks a seat, timing the answer.
pub async fn ask(seat: &CliSeat, request: &Request) -> (Result<Reply, SeatError>, Duration) {
    let started = Instant::now();
    let result = seat.answer(request).await;
    (result, started.elapsed())
}

/// The reply, or a panic with the error and the server's log.
#[track_caller]
pub fn expect_reply(result: Result<Reply, SeatError>, server: &FakeModel) -> Reply {
    match result {
        Ok(reply) => {
            assert!(!reply.text.contains(KEY), "the key is in the reply");
            reply
        }
        Err(err) => panic!("the seat failed: {err}\nrequests:\n{}", log(server)),
    }
}

/// The error, or a panic with the reply and the server's log. The error
/// never quotes the key.
#[track_caller]
pub fn expect_error(result: Result<Reply, SeatError>, server: &FakeModel) -> SeatError {
    match result {
        Ok(reply) => panic!("the seat answered instead of failing: {reply:?}\nrequests:\n{}", log(server)),
        Err(err) => {
            assert!(!err.to_string().contains(KEY), "the key is in the error: {err}");
            err
        }
    }
}

/// Checks that a failed request ended within its timeout (plus [`GRACE`]).
#[track_caller]
pub fn assert_within(elapsed: Duration, timeout: Duration) {
    assert!(
        elapsed < timeout + GRACE,
        "the error came after {elapsed:?}, past the seat's timeout {timeout:?} (+{GRACE:?})"
    );
}

/// Checks that the server answered at least one model request with `status`.
#[track_caller]
pub fn assert_served(server: &FakeModel, status: u16) {
    assert!(
        server.requests().iter().any(|r| r.api.is_some() && r.status == status),
        "the server never answered {status} (with no request at all, the CLI did not reach the server \
         before the seat's timeout: is the machine overloaded?):\n{}",
        log(server)
    );
}

/// Checks that a read-only request that tried to write was refused and
/// wrote nothing.
#[track_caller]
pub fn assert_refused_without_writing(err: &SeatError, file: &Path, server: &FakeModel) {
    assert!(
        matches!(err, SeatError::Refused(m) if m.contains("read-only `review` request")),
        "expected a refusal, got: {err}\nrequests:\n{}",
        log(server)
    );
    assert!(!file.exists(), "the read-only request wrote {}", file.display());
}
