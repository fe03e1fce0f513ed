//! The fake agent itself: usage errors, ordering, and the lookup helper.

use gavel_process::{Outcome, run};
use gavel_test_support::TempWorkspace;
use pretty_assertions::assert_eq;

use crate::common::{agent, agent_spec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_flags_exit_64_with_usage_and_no_side_effects() {
    let ws = TempWorkspace::new().unwrap();
    for args in [
        &["--write", "f.txt=x", "--bogus"][..],
        &["--write", "f.txt=x", "--exit", "abc"],
        &["--write", "f.txt=x", "--sleep-ms"],
        &["--write", "no-equals-sign"],
    ] {
        let done = run(agent_spec(&ws, args)).await.unwrap();
        assert_eq!(done.outcome, Outcome::Exited(64), "{args:?}");
        assert!(done.stderr.to_string_lossy().contains("usage: fake-agent"), "{args:?}");
        assert!(!ws.exists("f.txt"), "{args:?} ran an action before failing");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_run_in_order() {
    let ws = TempWorkspace::new().unwrap();
    let done = run(agent_spec(
        &ws,
        &["--print", "one", "--sleep-ms", "10", "--print", "two", "--exit", "3", "--print", "never"],
    ))
    .await
    .unwrap();
    assert_eq!(done.outcome, Outcome::Exited(3));
    assert_eq!(done.stdout.to_string_lossy(), "one\ntwo\n");
}

#[test]
fn fake_agent_path_finds_the_built_binary() {
    let found = gavel_test_support::fake_agent_path().expect("found next to the test binary");
    assert_eq!(std::fs::canonicalize(found).unwrap(), std::fs::canonicalize(agent()).unwrap());
}
