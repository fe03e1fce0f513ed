//! What to run: the explicit spawn request.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Environment variables copied from gavel's own environment by default.
///
/// Kept short on purpose: an agent should see a usable shell environment
/// (where programs live, who it runs as, how to print text) and nothing that
/// happens to be lying around in the parent, such as API keys or CI tokens.
pub const DEFAULT_INHERIT: &[&str] = &["PATH", "HOME", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ", "USER"];

/// What [`SpawnSpec::plain_output`] sets, so tools print no colour:
///
/// - `NO_COLOR=1`: the common convention (no-color.org), read by most tools;
/// - `CLICOLOR=0`: the BSD/macOS convention (`ls`, CMake, ...);
/// - `TERM=dumb`: a terminal without colours or cursor movement, for tools
///   that look at the terminal type (and in place of an inherited `TERM`);
/// - `FORCE_COLOR=0`: what node's own colour detection and chalk's
///   `supports-color` read (the latter ignores `NO_COLOR`); `0` turns colour
///   off there. Some tools (Python's `rich`) take any `FORCE_COLOR` as
///   "force a terminal"; `TERM=dumb` still keeps them colourless.
///
/// Whatever escape codes still come out are stripped from what gavel
/// stores ([`crate::plain`]).
pub const PLAIN_OUTPUT_ENV: &[(&str, &str)] =
    &[("NO_COLOR", "1"), ("CLICOLOR", "0"), ("TERM", "dumb"), ("FORCE_COLOR", "0")];

/// Default grace period between SIGTERM and SIGKILL.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// Default time to keep reading after the leader exits before the pipes are
/// declared leaked.
pub const DEFAULT_LEAK_WAIT: Duration = Duration::from_millis(250);

/// How many bytes of each output stream are kept.
///
/// The first `head` bytes and the last `tail` bytes survive; everything in
/// between is counted but dropped, so a child that floods its output cannot
/// grow gavel's memory beyond `head + tail` per stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputLimit {
    /// Bytes kept from the start of the stream.
    pub head: usize,
    /// Bytes kept from the end of the stream (not overlapping `head`).
    pub tail: usize,
}

impl OutputLimit {
    /// A limit keeping `head` leading and `tail` trailing bytes.
    pub const fn new(head: usize, tail: usize) -> Self {
        Self { head, tail }
    }
}

impl Default for OutputLimit {
    /// 64 KiB of head and 64 KiB of tail: enough for an agent's final reply
    /// and the start of its log, small enough to hold many of them at once.
    fn default() -> Self {
        Self::new(64 * 1024, 64 * 1024)
    }
}

/// A complete, explicit description of one process to run.
///
/// Nothing is implied from gavel's own state except the variables named in
/// `inherit`: the working directory is required, the environment starts
/// empty, and stdin is always null. Build one with [`SpawnSpec::new`] or
/// [`SpawnSpec::shell`] and the builder methods, or set the public fields.
///
/// Its `Debug` shows the names of `env` but never the values: engines put
/// API keys there.
#[derive(Clone, PartialEq, Eq)]
pub struct SpawnSpec {
    /// The program: a path (absolute, or relative to `cwd` when it contains a
    /// `/`) or a bare name looked up on the `PATH` the child will see.
    pub program: OsString,
    /// Arguments, not including the program name.
    pub args: Vec<OsString>,
    /// Working directory of the child. Required so a run never depends on
    /// where gavel happened to be started.
    pub cwd: PathBuf,
    /// Variables set for the child; they override inherited ones.
    pub env: Vec<(OsString, OsString)>,
    /// Names copied from gavel's environment when present there.
    /// Defaults to [`DEFAULT_INHERIT`].
    pub inherit: Vec<String>,
    /// Wall-clock limit for the leader; `None` waits forever.
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL of the group on timeout.
    pub grace: Duration,
    /// After the leader exits, how long to keep reading before deciding a
    /// descendant leaked the pipes.
    pub leak_wait: Duration,
    /// Bytes kept per output stream.
    pub limit: OutputLimit,
    /// Whether the whole process group is killed once the leader exited,
    /// so nothing it left running in the background (`cmd &`) acts after
    /// the run returned: for agent CLIs whose file changes gavel checks
    /// right after. Off by default.
    pub kill_group_on_exit: bool,
}

impl std::fmt::Debug for SpawnSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<String> =
            self.env.iter().map(|(name, _)| format!("{}=[hidden]", name.to_string_lossy())).collect();
        f.debug_struct("SpawnSpec")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("env", &env)
            .field("inherit", &self.inherit)
            .field("timeout", &self.timeout)
            .field("grace", &self.grace)
            .field("leak_wait", &self.leak_wait)
            .field("limit", &self.limit)
            .field("kill_group_on_exit", &self.kill_group_on_exit)
            .finish()
    }
}

impl SpawnSpec {
    /// A spec running `program` in `cwd` with the default allowlist, no
    /// timeout, the default grace, leak wait and output limit.
    pub fn new(program: impl Into<OsString>, cwd: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            inherit: DEFAULT_INHERIT.iter().map(|name| (*name).to_owned()).collect(),
            timeout: None,
            grace: DEFAULT_GRACE,
            leak_wait: DEFAULT_LEAK_WAIT,
            limit: OutputLimit::default(),
            kill_group_on_exit: false,
        }
    }

    /// A spec running `line` with `/bin/sh -c`, for user-written commands.
    pub fn shell(line: &str, cwd: impl Into<PathBuf>) -> Self {
        Self::new("/bin/sh", cwd).arg("-c").arg(line)
    }

    /// Appends one argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends several arguments.
    #[must_use]
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets one variable for the child (overriding an inherited one).
    #[must_use]
    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Asks the child for plain output, overriding what it would inherit:
    /// [`PLAIN_OUTPUT_ENV`]. For commands whose output gavel stores (run
    /// stages, goal criteria), not for agent CLIs.
    #[must_use]
    pub fn plain_output(mut self) -> Self {
        for (name, value) in PLAIN_OUTPUT_ENV {
            self = self.env(*name, *value);
        }
        self
    }

    /// Replaces the inherit allowlist.
    #[must_use]
    pub fn inherit<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.inherit = names.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the wall-clock limit.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets the SIGTERM → SIGKILL grace period.
    #[must_use]
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Sets how long to read after the leader exits.
    #[must_use]
    pub fn leak_wait(mut self, leak_wait: Duration) -> Self {
        self.leak_wait = leak_wait;
        self
    }

    /// Kills the whole process group once the leader exited (see
    /// [`SpawnSpec::kill_group_on_exit`]).
    #[must_use]
    pub fn kill_group_on_exit(mut self) -> Self {
        self.kill_group_on_exit = true;
        self
    }

    /// Sets the per-stream output limit.
    #[must_use]
    pub fn limit(mut self, limit: OutputLimit) -> Self {
        self.limit = limit;
        self
    }

    /// The environment the child will receive, in order: allowlisted
    /// variables from `parent`, then `env` (later entries win).
    pub(crate) fn child_env<F>(&self, parent: F) -> Vec<(OsString, OsString)>
    where
        F: Fn(&str) -> Option<OsString>,
    {
        let mut out: Vec<(OsString, OsString)> = Vec::new();
        let mut set = |name: OsString, value: OsString| {
            if let Some(slot) = out.iter_mut().find(|(n, _)| *n == name) {
                slot.1 = value;
            } else {
                out.push((name, value));
            }
        };
        for name in &self.inherit {
            if let Some(value) = parent(name) {
                set(OsString::from(name), value);
            }
        }
        for (name, value) in &self.env {
            set(name.clone(), value.clone());
        }
        out
    }

    /// The program as text for messages.
    pub(crate) fn program_display(&self) -> String {
        Path::new(&self.program).display().to_string()
    }

    /// Whether `program` names a path rather than a name to look up.
    pub(crate) fn program_is_path(&self) -> bool {
        self.program.as_encoded_bytes().contains(&b'/')
    }

    /// The child's `PATH`, if it will have one.
    pub(crate) fn path_var(env: &[(OsString, OsString)]) -> Option<&OsStr> {
        env.iter().find(|(n, _)| n == "PATH").map(|(_, v)| v.as_os_str())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn debug_names_env_variables_but_hides_their_values() {
        let spec = SpawnSpec::new("claude", "/ws").env("ANTHROPIC_API_KEY", "sk-ant-very-secret");
        let shown = format!("{spec:?}");
        assert!(shown.contains("ANTHROPIC_API_KEY=[hidden]"), "{shown}");
        assert!(!shown.contains("sk-ant-very-secret"), "{shown}");
        assert!(shown.contains("claude") && shown.contains("/ws"), "{shown}");
    }

    fn parent(name: &str) -> Option<OsString> {
        match name {
            "PATH" => Some("/usr/bin".into()),
            "HOME" => Some("/home/parent".into()),
            "SECRET" => Some("hunter2".into()),
            _ => None,
        }
    }

    #[test]
    fn child_env_takes_allowlist_then_explicit() {
        let spec = SpawnSpec::new("x", "/").env("HOME", "/home/child").env("EXTRA", "1");
        let env = spec.child_env(parent);
        assert_eq!(
            env,
            vec![
                ("PATH".into(), "/usr/bin".into()),
                ("HOME".into(), "/home/child".into()),
                ("EXTRA".into(), "1".into()),
            ]
        );
    }

    #[test]
    fn plain_output_overrides_an_inherited_terminal() {
        let parent = |name: &str| (name == "TERM").then(|| OsString::from("xterm-256color"));
        let env = SpawnSpec::new("x", "/").plain_output().child_env(parent);
        let get = |name: &str| env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
        assert_eq!(get("TERM"), Some("dumb".into()));
        assert_eq!(get("NO_COLOR"), Some("1".into()));
        assert_eq!(get("CLICOLOR"), Some("0".into()));
        assert_eq!(get("FORCE_COLOR"), Some("0".into()));
        // Without it, the parent's terminal type is passed on as before.
        let env = SpawnSpec::new("x", "/").child_env(parent);
        assert!(env.contains(&("TERM".into(), "xterm-256color".into())));
    }

    #[test]
    fn child_env_never_copies_unlisted() {
        let spec = SpawnSpec::new("x", "/").inherit(["SECRET"]);
        assert_eq!(spec.child_env(parent), vec![("SECRET".into(), "hunter2".into())]);
        let spec = SpawnSpec::new("x", "/");
        assert!(spec.child_env(parent).iter().all(|(n, _)| n != "SECRET"));
    }

    #[test]
    fn shell_wraps_in_sh_c() {
        let spec = SpawnSpec::shell("echo hi", "/tmp");
        assert_eq!(spec.program, OsString::from("/bin/sh"));
        assert_eq!(spec.args, vec![OsString::from("-c"), OsString::from("echo hi")]);
        assert_eq!(spec.cwd, PathBuf::from("/tmp"));
    }

    #[test]
    fn defaults_match_documented_values() {
        let spec = SpawnSpec::new("x", "/");
        assert_eq!(spec.grace, Duration::from_secs(2));
        assert_eq!(spec.leak_wait, Duration::from_millis(250));
        assert_eq!(spec.limit, OutputLimit::new(65536, 65536));
        assert_eq!(spec.timeout, None);
        assert_eq!(spec.inherit.len(), DEFAULT_INHERIT.len());
    }
}
