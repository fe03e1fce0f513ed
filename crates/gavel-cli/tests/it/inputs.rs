//! Bounded, regular inputs: every file gavel reads from a person (workflow,
//! brief, script seat, answers, prompt template, goal file, record, hook
//! stdin) that is `/dev/zero`, a FIFO, a folder or larger than its limit is
//! refused at once with exit 2 and a message naming the file. Never an
//! endless read, never a hang.
//!
//! Each command runs under a generous `assert_cmd` timeout: a hang fails the
//! test (no exit code) instead of hanging the suite. Nothing here asserts
//! on time.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use gavel_fs::read::{
    ANSWERS_MAX_BYTES, BRIEF_MAX_BYTES, GOAL_MAX_BYTES, PROMPT_MAX_BYTES, SCRIPT_MAX_BYTES,
    WORKFLOW_MAX_BYTES,
};

use crate::common::{Out, gavel_cmd, hello, tempdir};

/// Far longer than any of these commands takes; only a hang reaches it.
const HANG: Duration = Duration::from_secs(60);

/// Runs `gavel` in `dir` with `args` (and `stdin` from a file, if given),
/// killed at [`HANG`].
fn gavel(dir: &Path, args: &[&std::ffi::OsStr], stdin: Option<&Path>) -> Out {
    let mut std_cmd = gavel_cmd();
    std_cmd.current_dir(dir).args(args);
    let out = match stdin {
        None => assert_cmd::Command::from_std(std_cmd).timeout(HANG).output().unwrap(),
        // assert_cmd feeds stdin from memory, and `/dev/zero` never ends:
        // the file itself becomes stdin, under a watchdog of our own.
        Some(path) => {
            let child = std_cmd
                .stdin(Stdio::from(std::fs::File::open(path).unwrap()))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || tx.send(child.wait_with_output()));
            let Ok(out) = rx.recv_timeout(HANG) else {
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                panic!("gavel {args:?} < {} hung", path.display());
            };
            out.unwrap()
        }
    };
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

macro_rules! os {
    ($($arg:expr),* $(,)?) => {
        &[$(::std::ffi::OsStr::new(&$arg)),*]
    };
}

/// One shape of bad input: its name, the path, and words its message has.
struct Bad {
    shape: &'static str,
    path: PathBuf,
    words: &'static str,
}

/// The four shapes at `dir/<stem>`: a link to `/dev/zero` and `/dev/zero`
/// itself (a character device), a FIFO, a folder, and a sparse regular file
/// one byte over `limit`.
fn bad_inputs(dir: &Path, stem: &str, limit: u64) -> Vec<Bad> {
    let fifo = dir.join(format!("{stem}.fifo"));
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success(), "mkfifo");
    let folder = dir.join(format!("{stem}.dir"));
    std::fs::create_dir(&folder).unwrap();
    let zero_link = dir.join(format!("{stem}.zero"));
    std::os::unix::fs::symlink("/dev/zero", &zero_link).unwrap();
    let big = dir.join(format!("{stem}.big"));
    // Sparse: the size is what counts, no disk is used.
    std::fs::File::create(&big).unwrap().set_len(limit + 1).unwrap();
    vec![
        Bad {
            shape: "/dev/zero",
            path: PathBuf::from("/dev/zero"),
            words: "character device, not a regular file",
        },
        Bad { shape: "a link to /dev/zero", path: zero_link, words: "character device, not a regular file" },
        Bad { shape: "a FIFO", path: fifo, words: "FIFO (named pipe), not a regular file" },
        Bad { shape: "a folder", path: folder, words: "directory, not a regular file" },
        Bad { shape: "an oversized file", path: big, words: "more than the" },
    ]
}

#[track_caller]
fn assert_refused(out: &Out, bad: &Bad, what: &str) {
    assert_eq!(out.code, 2, "{what} at {}: expected exit 2\n{}", bad.shape, out.stderr);
    assert!(
        out.stderr.contains(&bad.path.display().to_string()),
        "{what} at {}: the message names the file\n{}",
        bad.shape,
        out.stderr
    );
    assert!(out.stderr.contains(bad.words), "{what} at {}: says `{}`\n{}", bad.shape, bad.words, out.stderr);
    assert!(out.stderr.contains("hint:"), "{what} at {}: a hint\n{}", bad.shape, out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

/// A workflow file whose brief, script seat and prompts folder are given.
fn workflow(dir: &Path, brief: &Path, script: &Path, prompts: Option<&Path>) -> PathBuf {
    let options = prompts
        .map_or_else(String::new, |p| format!("[options]\nprompts_dir = {:?}\n", p.display().to_string()));
    let text = format!(
        "name = \"inputs\"\nbrief = {:?}\n{options}\n[seats]\nwriter = {{ engine = \"script\", script = {:?} }}\n\n[roles]\nwrite = \"writer\"\n\n[[stage]]\nname = \"pages\"\nagent = \"write\"\nwrites = [\"welcome.md\"]\n",
        brief.display().to_string(),
        script.display().to_string(),
    );
    let path = dir.join(format!("workflow-{}.toml", std::fs::read_dir(dir).unwrap().count()));
    std::fs::write(&path, text).unwrap();
    path
}

/// A folder with a good brief, a good script seat and an empty workspace.
struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    brief: PathBuf,
    script: PathBuf,
    workspace: PathBuf,
}

fn setup() -> Setup {
    let dir = tempdir();
    let root = dir.path().canonicalize().unwrap();
    let brief = root.join("brief.md");
    std::fs::write(&brief, "# Welcome page\n\nWrite welcome.md.\n").unwrap();
    let script = root.join("writer.toml");
    std::fs::write(
        &script,
        "[[write]]\nreply = \"Wrote it.\"\nfiles = { \"welcome.md\" = \"# Welcome\\n\" }\n",
    )
    .unwrap();
    let workspace = root.join("ws");
    std::fs::create_dir(&workspace).unwrap();
    Setup { _dir: dir, root, brief, script, workspace }
}

#[test]
fn the_good_inputs_run() {
    let s = setup();
    let wf = workflow(&s.root, &s.brief, &s.script, None);
    let out = gavel(&s.root, os!["run", wf, "--workspace", s.workspace], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn a_workflow_that_is_not_a_regular_file_is_refused_by_run_check_and_graph() {
    let s = setup();
    for bad in bad_inputs(&s.root, "workflow", WORKFLOW_MAX_BYTES) {
        assert_refused(&gavel(&s.root, os!["run", bad.path, "--workspace", s.workspace], None), &bad, "run");
        assert_refused(&gavel(&s.root, os!["check", bad.path], None), &bad, "check");
        assert_refused(&gavel(&s.root, os!["graph", bad.path], None), &bad, "graph");
    }
    assert!(std::fs::read_dir(&s.workspace).unwrap().next().is_none(), "nothing was recorded");
}

#[test]
fn a_brief_that_is_not_a_regular_file_is_refused() {
    let s = setup();
    for bad in bad_inputs(&s.root, "brief", BRIEF_MAX_BYTES) {
        let wf = workflow(&s.root, &bad.path, &s.script, None);
        assert_refused(&gavel(&s.root, os!["run", wf, "--workspace", s.workspace], None), &bad, "run");
        assert_refused(&gavel(&s.root, os!["check", wf], None), &bad, "check");
    }
}

#[test]
fn a_script_seat_that_is_not_a_regular_file_is_refused() {
    let s = setup();
    for bad in bad_inputs(&s.root, "script", SCRIPT_MAX_BYTES) {
        let wf = workflow(&s.root, &s.brief, &bad.path, None);
        assert_refused(&gavel(&s.root, os!["run", wf, "--workspace", s.workspace], None), &bad, "run");
        assert_refused(&gavel(&s.root, os!["check", wf], None), &bad, "check");
    }
}

#[test]
fn an_answers_file_that_is_not_a_regular_file_is_refused() {
    let s = setup();
    for bad in bad_inputs(&s.root, "answers", ANSWERS_MAX_BYTES) {
        let out =
            gavel(&s.root, os!["run", hello(), "--workspace", s.workspace, "--answers", bad.path], None);
        assert_refused(&out, &bad, "run --answers");
    }
    assert!(std::fs::read_dir(&s.workspace).unwrap().next().is_none(), "nothing was recorded");
}

#[test]
fn a_prompt_template_that_is_not_a_regular_file_is_refused_before_the_run() {
    let s = setup();
    for (i, bad) in bad_inputs(&s.root, "prompt", PROMPT_MAX_BYTES).into_iter().enumerate() {
        // The template sits in the prompts folder under its kind's name.
        let prompts = s.root.join(format!("prompts-{i}"));
        std::fs::create_dir(&prompts).unwrap();
        let template = prompts.join("write.md");
        if bad.path.is_dir() {
            std::fs::create_dir(&template).unwrap();
        } else {
            std::os::unix::fs::symlink(&bad.path, &template).unwrap();
        }
        let named = Bad { shape: bad.shape, path: template, words: bad.words };
        let wf = workflow(&s.root, &s.brief, &s.script, Some(&prompts));
        assert_refused(&gavel(&s.root, os!["run", wf, "--workspace", s.workspace], None), &named, "run");
        assert_refused(&gavel(&s.root, os!["check", wf], None), &named, "check");
    }
}

#[test]
fn a_record_path_that_is_not_a_regular_file_is_refused() {
    let s = setup();
    let wf = workflow(&s.root, &s.brief, &s.script, None);
    for bad in bad_inputs(&s.root, "record", 0) {
        if bad.shape == "an oversized file" {
            continue; // records have no size limit
        }
        for command in ["status", "log", "resume"] {
            let out = gavel(&s.root, os![command, bad.path], None);
            assert_eq!(out.code, 2, "{command} {}: {}", bad.shape, out.stderr);
            assert!(out.stderr.contains(&bad.path.display().to_string()), "{}", out.stderr);
            // A folder is where a run's record may be: without one, it holds no record.
            let words = if bad.shape == "a folder" { "no record" } else { "not a regular file" };
            assert!(out.stderr.contains(words), "{command} {}: {}", bad.shape, out.stderr);
        }
        let out = gavel(&s.root, os!["run", wf, "--workspace", s.workspace, "--record", bad.path], None);
        assert_eq!(out.code, 2, "run --record {}: {}", bad.shape, out.stderr);
        assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
    }
}

#[test]
fn a_record_that_does_not_start_like_one_is_refused_before_it_is_read() {
    let s = setup();
    // Sparse and huge: reading it whole would take seconds and gigabytes.
    let zeros = s.root.join("zeros.jsonl");
    std::fs::File::create(&zeros).unwrap().set_len(2 << 30).unwrap();
    let binary = s.root.join("binary.jsonl");
    std::fs::write(&binary, b"\x7fELF\x02\x01\x01\0\0\0").unwrap();
    for record in [&zeros, &binary] {
        for command in ["status", "log", "resume", "approve"] {
            let out = gavel(&s.root, os![command, record], None);
            assert_eq!(out.code, 2, "{command} {}: {}", record.display(), out.stderr);
            assert!(out.stderr.contains("not a gavel record"), "{command}: {}", out.stderr);
            assert!(out.stderr.contains(&record.display().to_string()), "{}", out.stderr);
        }
    }
}

#[test]
fn a_goal_record_that_is_not_a_regular_file_is_refused_and_the_hook_still_lets_go() {
    let s = setup();
    for bad in bad_inputs(&s.root, "goal-record", 0) {
        if bad.shape == "an oversized file" || bad.shape == "a folder" {
            continue; // records have no size limit; a folder is checked below
        }
        let dir = tempdir();
        let root = dir.path().canonicalize().unwrap();
        crate::common::git_repo(&root);
        let new = gavel(&root, os!["goal", "new", "g1", "--title", "T", "--criterion", "ok::true"], None);
        assert_eq!(new.code, 0, "{}", new.stderr);
        let record = root.join(".gavel/goals/g1/events.jsonl");
        let _ = std::fs::remove_file(&record);
        std::os::unix::fs::symlink(&bad.path, &record).unwrap();
        for command in [&["goal", "evaluate", "g1"][..], &["goal", "status", "g1"], &["goal", "log", "g1"]] {
            let args: Vec<&std::ffi::OsStr> = command.iter().map(std::ffi::OsStr::new).collect();
            let out = gavel(&root, &args, None);
            assert_eq!(out.code, 2, "{command:?} at {}: {}", bad.shape, out.stderr);
            assert!(out.stderr.contains("events.jsonl"), "{command:?}: {}", out.stderr);
            assert!(out.stderr.contains("not a regular file"), "{command:?}: {}", out.stderr);
        }
        let input = root.join("stop.json");
        std::fs::write(
            &input,
            format!(
                "{{\"session_id\":\"s\",\"transcript_path\":\"/dev/null\",\"cwd\":{:?},\"hook_event_name\":\"Stop\",\"stop_hook_active\":false}}",
                root.display().to_string()
            ),
        )
        .unwrap();
        let out = gavel(&root, os!["hook", "stop"], Some(&input));
        assert_eq!(out.code, 0, "hook stop at {}: {}", bad.shape, out.stderr);
        assert!(!out.stdout.contains("\"block\""), "the agent may stop: {}", out.stdout);
    }
}

/// A git repository with one goal whose goal.yaml is `bad`.
fn goal_repo(bad: &Path) -> (tempfile::TempDir, PathBuf) {
    let dir = tempdir();
    let root = dir.path().canonicalize().unwrap();
    crate::common::git_repo(&root);
    let goal = root.join(".gavel/goals/g1");
    std::fs::create_dir_all(&goal).unwrap();
    if bad.is_dir() {
        std::fs::create_dir(goal.join("goal.yaml")).unwrap();
    } else {
        std::os::unix::fs::symlink(bad, goal.join("goal.yaml")).unwrap();
    }
    (dir, root)
}

#[test]
fn a_goal_file_that_is_not_a_regular_file_is_refused_and_the_hook_still_lets_go() {
    let s = setup();
    for bad in bad_inputs(&s.root, "goal", GOAL_MAX_BYTES) {
        let (_dir, root) = goal_repo(&bad.path);
        let goal_file = root.join(".gavel/goals/g1/goal.yaml");
        let named = Bad { shape: bad.shape, path: goal_file, words: bad.words };
        assert_refused(&gavel(&root, os!["goal", "evaluate", "g1"], None), &named, "goal evaluate");
        // The stop hook never exits 2: it tells the person and lets the agent stop.
        let input = root.join("stop.json");
        std::fs::write(
            &input,
            format!(
                "{{\"session_id\":\"s\",\"transcript_path\":\"/dev/null\",\"cwd\":{:?},\"hook_event_name\":\"Stop\",\"stop_hook_active\":false}}",
                root.display().to_string()
            ),
        )
        .unwrap();
        let out = gavel(&root, os!["hook", "stop"], Some(&input));
        assert_eq!(out.code, 0, "hook stop with a goal file at {}: {}", bad.shape, out.stderr);
        assert!(out.stderr.contains("goal.yaml"), "{}", out.stderr);
        assert!(!out.stdout.contains("\"block\""), "the agent may stop: {}", out.stdout);
    }
}

#[test]
fn hook_stdin_that_never_ends_or_is_too_large_lets_the_agent_stop() {
    let s = setup();
    let big = s.root.join("big.json");
    std::fs::write(&big, vec![b' '; 2 << 20]).unwrap();
    for stdin in [Path::new("/dev/zero"), Path::new("/dev/urandom"), big.as_path()] {
        let out = gavel(&s.root, os!["hook", "stop"], Some(stdin));
        assert_eq!(out.code, 0, "hook stop < {}: {}", stdin.display(), out.stderr);
        assert_eq!(out.stdout, "", "no decision");
        assert!(
            out.stderr.contains("gavel hook stop:") && out.stderr.contains("larger than"),
            "{}",
            out.stderr
        );
    }
}
