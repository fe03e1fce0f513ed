//! Dropping the future kills the group.

use std::time::Duration;

use gavel_process::run;
use gavel_test_support::TempWorkspace;

use crate::common::{agent_spec, assert_gone, read_pid};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_future_kills_the_group() {
    let ws = TempWorkspace::new().unwrap();
    let pid_file = ws.join("pid");
    let grandchild_file = ws.join("pid.grandchild");
    // Ignores SIGTERM and leaks a grandchild: only a group SIGKILL stops both.
    let spec = agent_spec(
        &ws,
        &["--pid-file", pid_file.to_str().unwrap(), "--ignore-term", "--leak-grandchild", "--sleep-forever"],
    );

    tokio::select! {
        result = run(spec) => panic!("run finished although the agent sleeps forever: {result:?}"),
        // Both processes are running once the grandchild's pid is written.
        _ = read_pid(&grandchild_file) => {}
        () = tokio::time::sleep(Duration::from_secs(20)) => panic!("agent never started"),
    }
    // select! has dropped the run future here.
    let leader = read_pid(&pid_file).await;
    let grandchild = read_pid(&grandchild_file).await;
    assert_gone(leader, "leader").await;
    assert_gone(grandchild, "grandchild").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_the_task_kills_the_group() {
    let ws = TempWorkspace::new().unwrap();
    let pid_file = ws.join("pid");
    let spec = agent_spec(&ws, &["--pid-file", pid_file.to_str().unwrap(), "--sleep-forever"]);
    let task = tokio::spawn(run(spec));
    let leader = read_pid(&pid_file).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_gone(leader, "leader").await;
}
