//! Bounded output under a flood.

use gavel_process::{OutputLimit, run};
use gavel_test_support::TempWorkspace;
use pretty_assertions::assert_eq;

use crate::common::agent_spec;

const FLOOD: u64 = 50 * 1024 * 1024;

/// Peak resident set of this test process, in KiB (Linux only).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flood_is_counted_but_bounded() {
    let ws = TempWorkspace::new().unwrap();
    let before = peak_rss_kib();
    let done = run(agent_spec(&ws, &["--flood", &FLOOD.to_string(), "--stderr", "done"])).await.unwrap();
    let after = peak_rss_kib();

    assert!(done.success(), "{:?}", done.outcome);
    let limit = OutputLimit::default();
    assert_eq!(done.stdout.total, FLOOD);
    assert_eq!(done.stdout.head.len(), limit.head);
    assert_eq!(done.stdout.tail.len(), limit.tail);
    assert!(done.stdout.truncated());
    assert!(done.stdout.head.starts_with(b"flood flood"));
    assert!(done.stdout.tail.ends_with(b"...\n"));
    let text = done.stdout.to_string_lossy();
    assert!(text.contains(&format!("… {} bytes cut …", FLOOD - (limit.head + limit.tail) as u64)));
    // stderr is read concurrently and intact.
    assert_eq!(done.stderr.to_string_lossy(), "done\n");

    // Memory stayed bounded: nowhere near the 50 MB written.
    if let (Some(before), Some(after)) = (before, after) {
        assert!(after.saturating_sub(before) < 20 * 1024, "peak RSS grew from {before} KiB to {after} KiB");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_limit_is_respected() {
    let ws = TempWorkspace::new().unwrap();
    let spec = agent_spec(&ws, &["--flood", "64000"]).limit(OutputLimit::new(10, 20));
    let done = run(spec).await.unwrap();
    assert_eq!(done.stdout.total, 64_000);
    assert_eq!(done.stdout.head.len(), 10);
    assert_eq!(done.stdout.tail.len(), 20);
    // The flood is whole 64-byte lines ending in " ...\n".
    assert_eq!(done.stdout.tail_text(5), " ...\n");
}
