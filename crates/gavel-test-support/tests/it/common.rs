//! Shared helpers: the fake agent, pid files, and "is this process gone".

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gavel_process::SpawnSpec;
use gavel_test_support::TempWorkspace;
use nix::errno::Errno;
use nix::sys::signal::kill;
use nix::unistd::Pid;

pub fn agent() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_fake-agent"))
}

/// A spec running the fake agent in `ws` with `args`.
pub fn agent_spec(ws: &TempWorkspace, args: &[&str]) -> SpawnSpec {
    SpawnSpec::new(agent(), ws.path()).args(args)
}

/// Polls for a pid file written by `fake-agent --pid-file` (written
/// atomically, so a present file is complete).
pub async fn read_pid(path: &Path) -> Pid {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            return Pid::from_raw(text.trim().parse().unwrap());
        }
        assert!(Instant::now() < deadline, "pid file {} never appeared", path.display());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Whether `pid` no longer runs. A zombie counts as gone: a killed
/// grandchild is reparented to PID 1, which in a container may never reap it.
fn gone(pid: Pid) -> bool {
    match kill(pid, None) {
        Err(Errno::ESRCH) => true,
        _ => std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
            // `pid (comm) STATE ...`; comm may hold spaces or parens.
            stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        }),
    }
}

/// Asserts `pid` is gone, polling briefly because delivery of SIGKILL and
/// the exit itself are asynchronous.
pub async fn assert_gone(pid: Pid, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone(pid) {
        assert!(Instant::now() < deadline, "{what} (pid {pid}) still running");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Kills a process left behind by a failing test so it does not outlive
/// the run; harmless when it is already gone.
pub fn cleanup(pid: Pid) {
    let _ = kill(pid, nix::sys::signal::Signal::SIGKILL);
}
