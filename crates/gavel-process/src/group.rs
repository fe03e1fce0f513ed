//! Signalling the child's process group, and killing it on drop.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// Kills the child's process group when dropped while armed.
///
/// This is what makes cancellation safe: if the future returned by
/// [`run`](crate::run) is dropped (a `select!` lost, a task aborted, a
/// caller's own timeout), the group receives SIGKILL instead of running on
/// unobserved.
#[derive(Debug)]
pub(crate) struct GroupGuard {
    pgid: Pid,
    armed: bool,
}

impl GroupGuard {
    /// Guards the group led by `pid` (the child was spawned with
    /// `process_group(0)`, so its pid is its group id).
    pub(crate) fn new(pid: u32) -> Self {
        Self { pgid: Pid::from_raw(i32::try_from(pid).unwrap_or(i32::MAX)), armed: true }
    }

    /// Stops the guard from killing on drop, once the run finished normally.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            // ESRCH (group already gone) is the common, harmless case.
            let _ = killpg(self.pgid, Signal::SIGKILL);
        }
    }
}

/// Sends `signal` to the guarded group. Errors are ignored: the only
/// expected one is ESRCH, meaning every member has already exited.
pub(crate) fn signal(guard: Option<&GroupGuard>, signal: Signal) {
    if let Some(guard) = guard {
        let _ = killpg(guard.pgid, signal);
    }
}
