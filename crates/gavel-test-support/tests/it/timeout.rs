//! Timeouts: SIGTERM the group, grace, SIGKILL the group.

use std::time::{Duration, Instant};

use gavel_process::{Outcome, run};
use gavel_test_support::TempWorkspace;
use pretty_assertions::assert_eq;

use crate::common::{agent_spec, assert_gone, cleanup, read_pid};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_is_enough_for_a_polite_child() {
    let ws = TempWorkspace::new().unwrap();
    let spec = agent_spec(&ws, &["--print", "started", "--sleep-forever"])
        .timeout(Duration::from_millis(300))
        .grace(Duration::from_secs(10));
    let begin = Instant::now();
    let done = run(spec).await.unwrap();
    assert_eq!(done.outcome, Outcome::TimedOut { killed: false });
    assert_eq!(done.stdout.to_string_lossy(), "started\n");
    // Well under the 10 s grace: SIGTERM worked.
    assert!(begin.elapsed() < Duration::from_secs(5), "{:?}", begin.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stubborn_child_with_leaked_grandchild_is_killed() {
    let ws = TempWorkspace::new().unwrap();
    let pid_file = ws.join("pid");
    let spec = agent_spec(
        &ws,
        &[
            "--pid-file",
            pid_file.to_str().unwrap(),
            "--ignore-term",
            "--leak-grandchild",
            "--print",
            "started",
            "--sleep-forever",
        ],
    )
    .timeout(Duration::from_secs(1))
    .grace(Duration::from_secs(1));

    let begin = Instant::now();
    let done = run(spec).await.unwrap();
    let elapsed = begin.elapsed();
    let leader = read_pid(&pid_file).await;
    let grandchild = read_pid(&ws.join("pid.grandchild")).await;
    cleanup_on_failure(leader, grandchild, || {
        assert_eq!(done.outcome, Outcome::TimedOut { killed: true });
        // timeout + grace + a generous margin for a loaded 2-core machine.
        assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
        assert!(elapsed >= Duration::from_secs(2), "returned before timeout + grace: {elapsed:?}");
        assert_eq!(done.stdout.to_string_lossy(), "started\n");
    });
    assert_gone(leader, "leader").await;
    assert_gone(grandchild, "grandchild").await;
}

/// Runs `checks`; if they panic, kills the processes first so a failing
/// test leaves nothing behind.
fn cleanup_on_failure(leader: nix::unistd::Pid, grandchild: nix::unistd::Pid, checks: impl FnOnce()) {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(checks));
    if let Err(panic) = result {
        cleanup(leader);
        cleanup(grandchild);
        std::panic::resume_unwind(panic);
    }
}
