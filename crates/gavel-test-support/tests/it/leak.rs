//! Leaked pipes: the leader exits while a grandchild holds stdout.

use std::time::{Duration, Instant};

use gavel_process::{Outcome, run};
use gavel_test_support::TempWorkspace;
use pretty_assertions::assert_eq;

use crate::common::{agent_spec, assert_gone, cleanup, read_pid};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leaked_grandchild_is_detected_and_killed() {
    let ws = TempWorkspace::new().unwrap();
    let pid_file = ws.join("pid");
    let spec = agent_spec(
        &ws,
        &["--pid-file", pid_file.to_str().unwrap(), "--leak-grandchild", "--print", "bye", "--exit", "0"],
    );

    let begin = Instant::now();
    let done = run(spec).await.unwrap();
    let elapsed = begin.elapsed();
    let grandchild = read_pid(&ws.join("pid.grandchild")).await;
    if !done.leaked {
        cleanup(grandchild);
    }
    assert_eq!(done.outcome, Outcome::Exited(0));
    assert!(done.leaked, "leak not detected");
    // No timeout set: returning at all proves we did not wait for the
    // grandchild; the bound checks it was prompt (leak_wait is 250 ms).
    assert!(elapsed < Duration::from_secs(3), "took {elapsed:?}");
    assert_eq!(done.stdout.to_string_lossy(), "bye\n");
    assert!(done.success(), "a leak is a fact for the caller, not a failure here");
    assert_gone(grandchild, "grandchild").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_lived_grandchild_is_not_a_leak() {
    let ws = TempWorkspace::new().unwrap();
    // The background job holds stdout briefly, then exits within leak_wait.
    let spec = gavel_process::SpawnSpec::shell("(sleep 0.1; echo late) & echo early", ws.path())
        .leak_wait(Duration::from_secs(5));
    let done = run(spec).await.unwrap();
    assert_eq!(done.outcome, Outcome::Exited(0));
    assert!(!done.leaked);
    assert_eq!(done.stdout.to_string_lossy(), "early\nlate\n");
}
