//! The one place gavel spawns processes.
//!
//! This crate owns the mechanics of running a child and always getting an
//! answer back:
//!
//! - **spawning** from an explicit [`SpawnSpec`]: the environment is cleared,
//!   then an allowlist of parent variables and the spec's own variables are
//!   applied; stdin is null; the working directory is required; the program
//!   is resolved against the `PATH` the child will see;
//! - **process groups**: every child leads its own group, so signals reach
//!   everything it started;
//! - **timeouts**: SIGTERM to the group, a grace period, then SIGKILL;
//! - **bounded output**: stdout and stderr are read concurrently and only a
//!   head and a tail of each are kept, however much the child writes;
//! - **leak detection**: when the leader exits but a descendant still holds
//!   its pipes, the group is killed instead of waiting forever;
//! - **cancellation**: dropping the future returned by [`run`] kills the
//!   group, so a cancelled caller leaves nothing running.
//! - **helpers in the background**: with [`SpawnSpec::kill_group_on_exit`]
//!   the group is killed once the leader exited, so nothing it left running
//!   acts after the run returned.
//!
//! It must not decide policy. Whether a non-zero exit, a timeout or a leak is
//! a failure, a retry or fine is for the caller; here they are plain values
//! ([`Outcome`], [`Finished::leaked`]). [`SpawnError`] is reserved for failing
//! to start at all.
//!
//! [`run`] needs a tokio runtime with IO and time drivers enabled.

mod error;
mod group;
mod output;
pub mod plain;
mod resolve;
mod spec;

use std::fmt;
use std::future::Future;
use std::os::unix::process::ExitStatusExt;
use std::pin::{Pin, pin};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;
use tokio::time::Instant;

pub use error::SpawnError;
pub use output::Output;
pub use spec::{DEFAULT_GRACE, DEFAULT_INHERIT, DEFAULT_LEAK_WAIT, OutputLimit, PLAIN_OUTPUT_ENV, SpawnSpec};

use group::GroupGuard;
use output::Capture;

/// How the process ended. A value, not an error: the caller decides what
/// each one means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The leader exited on its own with this code.
    Exited(i32),
    /// The leader was killed by this signal number (not by gavel's timeout).
    Signaled(i32),
    /// The timeout fired and gavel stopped the group.
    TimedOut {
        /// `true` if SIGTERM was not enough within the grace period and the
        /// group had to be SIGKILLed.
        killed: bool,
    },
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Outcome::Exited(code) => write!(f, "exited with code {code}"),
            Outcome::Signaled(signal) => match Signal::try_from(signal) {
                Ok(sig) => write!(f, "killed by signal {signal} ({})", sig.as_str()),
                Err(_) => write!(f, "killed by signal {signal}"),
            },
            Outcome::TimedOut { killed: false } => f.write_str("timed out (stopped by SIGTERM)"),
            Outcome::TimedOut { killed: true } => f.write_str("timed out (SIGKILL needed)"),
        }
    }
}

/// Everything known about a finished run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// How the leader ended.
    pub outcome: Outcome,
    /// What was kept of stdout.
    pub stdout: Output,
    /// What was kept of stderr.
    pub stderr: Output,
    /// Wall time from spawn to the end of output collection.
    pub duration: Duration,
    /// The pipes were still held open (e.g. by a grandchild) `leak_wait`
    /// after the leader exited; the group was killed and reading stopped, so
    /// the output may miss what the leaker would have written.
    pub leaked: bool,
}

impl Finished {
    /// Whether the leader exited with code 0. A leak does not change this:
    /// whether leaking is acceptable is the caller's policy.
    pub fn success(&self) -> bool {
        self.outcome == Outcome::Exited(0)
    }
}

/// Finds the program `spec` would run, on the `PATH` its child would see,
/// without running anything: for validating commands before a run.
pub fn locate(spec: &SpawnSpec) -> Result<std::path::PathBuf, SpawnError> {
    let env = spec.child_env(|name| std::env::var_os(name));
    resolve::resolve(spec, SpawnSpec::path_var(&env))
}

/// Runs `spec` to completion and reports how it ended.
///
/// Returns `Err` only when the process cannot be started (or, in a broken
/// runtime, waited on). Never hangs on a misbehaving child: a timeout stops
/// the group, and pipes held open after the leader exits are cut off after
/// `leak_wait`. If the returned future is dropped before completion, the
/// child's process group is sent SIGKILL.
pub async fn run(spec: SpawnSpec) -> Result<Finished, SpawnError> {
    let env = spec.child_env(|name| std::env::var_os(name));
    let resolved = resolve::resolve(&spec, SpawnSpec::path_var(&env))?;
    let program = spec.program_display();

    let mut cmd = Command::new(&resolved);
    cmd.arg0(&spec.program)
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Own group: signals for timeouts, leaks and cancellation must reach
        // everything the child started, not just the leader.
        .process_group(0);

    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|source| spawn_error(&spec, source))?;
    // Armed from here on: any early return or drop kills the group.
    let mut guard = child.id().map(GroupGuard::new);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();

    let mut out_cap = Capture::new(spec.limit);
    let mut err_cap = Capture::new(spec.limit);

    let (status, timed_out, killed, leaked) = {
        let pipes = pin!(async {
            tokio::join!(pump(stdout, &mut out_cap), pump(stderr, &mut err_cap));
        });
        let mut pipes = Pipes { fut: pipes, done: false };

        // A limit past the clock's range (centuries) is no limit, not a panic.
        let waited = match spec.timeout.and_then(|limit| start.checked_add(limit)) {
            Some(deadline) => pipes.drive(tokio::time::timeout_at(deadline, child.wait())).await.ok(),
            None => Some(pipes.drive(child.wait()).await),
        };
        let (status, timed_out, killed) = if let Some(status) = waited {
            (status, false, false)
        } else {
            group::signal(guard.as_ref(), Signal::SIGTERM);
            if let Ok(status) = pipes.drive(tokio::time::timeout(spec.grace, child.wait())).await {
                (status, true, false)
            } else {
                group::signal(guard.as_ref(), Signal::SIGKILL);
                (pipes.drive(child.wait()).await, true, true)
            }
        };
        let status = status.map_err(|source| SpawnError::Wait {
            program: program.clone(),
            cwd: spec.cwd.clone(),
            source,
        })?;

        // The leader is gone; its pipes close once every descendant holding
        // them is gone too. Give well-behaved stragglers `leak_wait`.
        let closed = pipes.done || tokio::time::timeout(spec.leak_wait, &mut pipes.fut).await.is_ok();
        if !closed {
            // Someone still holds the pipes: kill the group and stop reading
            // rather than wait for a process that may never exit.
            group::signal(guard.as_ref(), Signal::SIGKILL);
        }
        let leaked = !closed;
        if spec.kill_group_on_exit {
            // Helpers left running in the background (their output sent
            // elsewhere, so the pipes closed) must not outlive the run.
            group::signal(guard.as_ref(), Signal::SIGKILL);
        }
        (status, timed_out, killed, leaked)
    };

    // Finished normally: nothing left to clean up on drop.
    if let Some(guard) = guard.as_mut() {
        guard.disarm();
    }

    let outcome = if timed_out { Outcome::TimedOut { killed } } else { outcome_of(status) };
    Ok(Finished {
        outcome,
        stdout: out_cap.finish(),
        stderr: err_cap.finish(),
        duration: start.elapsed(),
        leaked,
    })
}

/// The pipe readers, polled alongside whatever we are waiting for so a
/// chatty child never blocks on a full pipe while we wait for it to exit.
struct Pipes<P> {
    fut: Pin<P>,
    done: bool,
}

impl<P> Pipes<P>
where
    P: std::ops::DerefMut,
    P::Target: Future<Output = ()>,
{
    /// Awaits `fut` while also pumping the pipes until they close.
    async fn drive<F: Future>(&mut self, fut: F) -> F::Output {
        let mut fut = pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => return out,
                () = self.fut.as_mut(), if !self.done => self.done = true,
            }
        }
    }
}

/// Reads `reader` to EOF into `cap`. A read error ends the stream: the child
/// is still waited on, and what was read so far is kept.
async fn pump<R: AsyncRead + Unpin>(reader: Option<R>, cap: &mut Capture) {
    let Some(mut reader) = reader else { return };
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => cap.push(&buf[..n]),
        }
    }
}

fn outcome_of(status: ExitStatus) -> Outcome {
    match (status.code(), status.signal()) {
        (Some(code), _) => Outcome::Exited(code),
        (None, Some(signal)) => Outcome::Signaled(signal),
        // wait() only reports terminated processes, which have one of the
        // two; keep a value rather than panic if that ever changes.
        (None, None) => Outcome::Exited(status.into_raw()),
    }
}

fn spawn_error(spec: &SpawnSpec, source: std::io::Error) -> SpawnError {
    let program = spec.program_display();
    let cwd = spec.cwd.clone();
    match source.kind() {
        // Resolution already found an executable file, so ENOENT here is
        // typically a missing interpreter (`#!/usr/bin/missing`).
        std::io::ErrorKind::NotFound => SpawnError::NotFound {
            program,
            cwd,
            searched: format!("exec failed: {source} (missing interpreter?)"),
        },
        std::io::ErrorKind::PermissionDenied => SpawnError::PermissionDenied { program, cwd },
        _ => SpawnError::Io { program, cwd, source },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn echo_through_sh() {
        let tmp = tempfile::tempdir().unwrap();
        let done = run(SpawnSpec::shell("echo out; echo err >&2; exit 3", tmp.path())).await.unwrap();
        assert_eq!(done.outcome, Outcome::Exited(3));
        assert_eq!(done.stdout.to_string_lossy(), "out\n");
        assert_eq!(done.stderr.to_string_lossy(), "err\n");
        assert!(!done.leaked);
        assert!(!done.success());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sigterm_timeout_without_kill() {
        let tmp = tempfile::tempdir().unwrap();
        let spec = SpawnSpec::shell("exec sleep 30", tmp.path())
            .timeout(Duration::from_millis(200))
            .grace(Duration::from_secs(5));
        let done = run(spec).await.unwrap();
        assert_eq!(done.outcome, Outcome::TimedOut { killed: false });
        assert!(done.duration < Duration::from_secs(5));
    }

    #[test]
    fn outcome_display() {
        assert_eq!(Outcome::Exited(2).to_string(), "exited with code 2");
        assert_eq!(Outcome::Signaled(9).to_string(), "killed by signal 9 (SIGKILL)");
        assert_eq!(Outcome::TimedOut { killed: true }.to_string(), "timed out (SIGKILL needed)");
    }
}
