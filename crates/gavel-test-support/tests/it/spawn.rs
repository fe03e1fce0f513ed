//! Starting processes: exit codes, captured streams, env, cwd, stdin,
//! program resolution, signal deaths.

use std::ffi::OsString;

use gavel_process::{DEFAULT_INHERIT, Outcome, SpawnError, SpawnSpec, run};
use gavel_test_support::TempWorkspace;
use pretty_assertions::assert_eq;

use crate::common::{agent, agent_spec};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_code_and_both_streams_are_captured() {
    let ws = TempWorkspace::new().unwrap();
    let done = run(agent_spec(&ws, &["--print", "hello", "--stderr", "oops", "--exit", "7"])).await.unwrap();
    assert_eq!(done.outcome, Outcome::Exited(7));
    assert_eq!(done.stdout.to_string_lossy(), "hello\n");
    assert_eq!(done.stderr.to_string_lossy(), "oops\n");
    assert!(!done.leaked);
    assert!(!done.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_zero_is_success() {
    let ws = TempWorkspace::new().unwrap();
    let done = run(agent_spec(&ws, &["--print", "ok"])).await.unwrap();
    assert_eq!(done.outcome, Outcome::Exited(0));
    assert!(done.success());
    assert_eq!(done.stderr.total, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_is_cleared_then_allowlisted() {
    let ws = TempWorkspace::new().unwrap();
    // A variable present in this process but not on the allowlist. Cargo and
    // nextest set CARGO_MANIFEST_DIR for test runs; fall back to any other.
    let secret = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(|_| "CARGO_MANIFEST_DIR".to_owned())
        .or_else(|| {
            std::env::vars_os()
                .filter_map(|(k, _)| k.into_string().ok())
                .find(|k| !DEFAULT_INHERIT.contains(&k.as_str()))
        })
        .expect("the test process has some non-allowlisted variable");
    let parent_path = std::env::var("PATH").unwrap();

    let spec = agent_spec(
        &ws,
        &[
            "--print-env",
            &secret,
            "--print-env",
            "GAVEL_EXPLICIT",
            "--print-env",
            "PATH",
            "--print-env",
            "HOME",
        ],
    )
    .env("GAVEL_EXPLICIT", "yes")
    // Explicit variables win over inherited ones.
    .env("HOME", "/explicit/home");
    let done = run(spec).await.unwrap();
    assert_eq!(
        done.stdout.to_string_lossy(),
        format!("{secret} unset\nGAVEL_EXPLICIT=yes\nPATH={parent_path}\nHOME=/explicit/home\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_allowlist_gives_an_empty_environment() {
    let ws = TempWorkspace::new().unwrap();
    let spec = agent_spec(&ws, &["--print-env", "PATH", "--print-env", "ONLY"])
        .inherit(Vec::<String>::new())
        .env("ONLY", "1");
    let done = run(spec).await.unwrap();
    assert_eq!(done.stdout.to_string_lossy(), "PATH unset\nONLY=1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cwd_is_honoured() {
    let ws = TempWorkspace::new().unwrap();
    let sub = ws.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let spec = SpawnSpec::new(agent(), &sub).args(["--print-cwd", "--write", "made.txt=content"]);
    let done = run(spec).await.unwrap();
    assert_eq!(done.outcome, Outcome::Exited(0));
    let printed = done.stdout.to_string_lossy();
    assert_eq!(std::fs::canonicalize(printed.trim_end()).unwrap(), std::fs::canonicalize(&sub).unwrap());
    assert_eq!(ws.read("sub/made.txt").unwrap(), "content");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_is_null() {
    let ws = TempWorkspace::new().unwrap();
    let done = run(agent_spec(&ws, &["--read-stdin"])).await.unwrap();
    assert_eq!(done.stdout.to_string_lossy(), "stdin-bytes=0\n");
    let done = run(SpawnSpec::shell("readlink /proc/$$/fd/0", ws.path())).await.unwrap();
    assert_eq!(done.stdout.to_string_lossy(), "/dev/null\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_program_is_not_found_naming_it() {
    let ws = TempWorkspace::new().unwrap();
    let err = run(SpawnSpec::new("gavel-no-such-program", ws.path())).await.unwrap_err();
    assert!(
        matches!(err, SpawnError::NotFound { ref program, .. } if program == "gavel-no-such-program"),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("`gavel-no-such-program`"), "{msg}");
    assert!(msg.contains(&ws.path().display().to_string()), "message names the cwd: {msg}");

    let missing = ws.join("nope/agent");
    let err = run(SpawnSpec::new(&missing, ws.path())).await.unwrap_err();
    assert!(matches!(err, SpawnError::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains(&missing.display().to_string()), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn program_is_resolved_on_the_childs_path() {
    let ws = TempWorkspace::new().unwrap();
    let agent_dir = agent().parent().unwrap().to_path_buf();
    // Found: on the child's PATH, even though not on the parent's.
    let spec = SpawnSpec::new("fake-agent", ws.path()).arg("--print").arg("via path").env("PATH", &agent_dir);
    let done = run(spec).await.unwrap();
    assert_eq!(done.stdout.to_string_lossy(), "via path\n");
    // Not found: `sh` is on the parent's PATH but not on the child's.
    let spec = SpawnSpec::new("sh", ws.path()).env("PATH", ws.join("empty"));
    let err = run(spec).await.unwrap_err();
    assert!(matches!(err, SpawnError::NotFound { .. }), "{err:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_executable_is_permission_denied() {
    let ws = TempWorkspace::new().unwrap();
    let script = ws.write("script.sh", "#!/bin/sh\necho hi\n").unwrap();
    let err = run(SpawnSpec::new(&script, ws.path())).await.unwrap_err();
    assert!(matches!(err, SpawnError::PermissionDenied { .. }), "{err:?}");
    assert!(err.to_string().contains("script.sh"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_cwd_is_reported_as_such() {
    let ws = TempWorkspace::new().unwrap();
    let err = run(SpawnSpec::new(agent(), ws.join("gone"))).await.unwrap_err();
    assert!(matches!(err, SpawnError::Cwd { .. }), "{err:?}");
    assert!(err.to_string().contains("gone"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signal_death_is_signaled() {
    let ws = TempWorkspace::new().unwrap();
    for (line, signal) in [("kill -9 $$", 9), ("kill -TERM $$", 15)] {
        let done = run(SpawnSpec::shell(line, ws.path())).await.unwrap();
        assert_eq!(done.outcome, Outcome::Signaled(signal), "{line}");
        assert!(!done.success());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn args_are_passed_verbatim() {
    let ws = TempWorkspace::new().unwrap();
    let spec = SpawnSpec::new(agent(), ws.path())
        .args([OsString::from("--print"), OsString::from("a  b $HOME 'q'")]);
    let done = run(spec).await.unwrap();
    assert_eq!(done.stdout.to_string_lossy(), "a  b $HOME 'q'\n");
}
