//! Bad workflow files: exit 2, the file, line and column of the fault, a
//! hint, and nothing recorded. `gavel check` says the same.
//!
//! The faults planted in `tests/fixtures/malformed/`:
//!
//! | file | fault | where |
//! | --- | --- | --- |
//! | `syntax.toml` | `agent = writer` (an unquoted string) | 9:9 |
//! | `unknown-key.toml` | `agnet = "writer"` | 9:1 |
//! | `unknown-role.toml` | `agent = "ghost"` | 9:9 |
//! | `missing-brief.toml` | `brief = "missing.md"`, no such file | 2:9 |
//! | `bad-queue.toml` | its script seat has a `[[reveiw]]` queue | `seats/bad-queue.toml:7:3` |
//! | `two-kinds.toml` | a stage with `agent` and `run` | 7:1 (the stage) |
//! | `escape.toml` | `writes = ["../escape.md"]` | 10:11 |
//! | `gavel-state.toml` | `writes = ["./.gavel/runs/r/events.jsonl"]` | 10:11 |

use std::path::Path;

use pretty_assertions::assert_eq;

use crate::common::{copy_dir, fixture, gavel_in, snapshot_settings, tempdir};

/// (workflow file, the location its error must name, words the message must have)
const CASES: [(&str, &str, &str); 8] = [
    ("syntax.toml", "syntax.toml:9:9", "quoted"),
    ("unknown-key.toml", "unknown-key.toml:9:1", "agnet"),
    ("unknown-role.toml", "unknown-role.toml:9:9", "ghost"),
    ("missing-brief.toml", "missing-brief.toml:2:9", "missing.md"),
    ("bad-queue.toml", "bad-queue.toml:7:3", "reveiw"),
    ("two-kinds.toml", "two-kinds.toml:7:1", "kind"),
    ("escape.toml", "escape.toml:10:11", "../escape.md"),
    ("gavel-state.toml", "gavel-state.toml:10:11", "lies under `.gavel/`"),
];

/// A copy of the malformed fixtures and an empty workspace beside it.
struct Setup {
    _dir: tempfile::TempDir,
    files: std::path::PathBuf,
    workspace: std::path::PathBuf,
}

fn setup() -> Setup {
    let dir = tempdir();
    let files = dir.path().join("files");
    copy_dir(&fixture("malformed"), &files);
    let workspace = dir.path().join("ws");
    std::fs::create_dir(&workspace).expect("the workspace");
    Setup { files, workspace, _dir: dir }
}

fn is_empty(dir: &Path) -> bool {
    std::fs::read_dir(dir).expect("read the workspace").next().is_none()
}

#[test]
fn every_fault_is_located_hinted_and_nothing_is_recorded() {
    let setup = setup();
    for (file, location, words) in CASES {
        // Relative to the working directory, as a person types it.
        let run =
            gavel_in(&setup.files, args!["run", file, "--workspace", setup.workspace, "--run-id", "bad"]);
        assert_eq!(run.code, 2, "{file}: gavel run\n{}", run.stderr);
        assert!(run.stderr.contains(location), "{file}: no `{location}` in\n{}", run.stderr);
        assert!(run.stderr.contains(words), "{file}: no `{words}` in\n{}", run.stderr);
        assert!(
            run.stderr.lines().any(|l| l.trim_start().starts_with("hint:")),
            "{file}: no `hint:` line in\n{}",
            run.stderr
        );
        assert_eq!(run.stdout, "", "{file}");
        assert!(is_empty(&setup.workspace), "{file}: something was written into the workspace");
        assert!(!setup.files.join(".gavel").exists(), "{file}: a record was started beside the workflow");

        let check = gavel_in(&setup.files, args!["check", file]);
        assert_eq!(check.code, 2, "{file}: gavel check\n{}", check.stderr);
        assert_eq!(check.stderr, run.stderr, "{file}: check and run report differently");

        let json = gavel_in(&setup.files, args!["check", file, "--json"]);
        assert_eq!(json.code, 2, "{file}: gavel check --json");
        assert!(json.stderr.contains(location), "{file}: {}", json.stderr);
    }
}

#[test]
fn the_same_faults_are_located_with_an_absolute_path() {
    let setup = setup();
    for (file, location, _) in CASES {
        let path = setup.files.join(file);
        let run = gavel_in(&setup.workspace, args!["run", path, "--json"]);
        assert_eq!(run.code, 2, "{file}\n{}", run.stderr);
        assert!(run.stderr.contains(location), "{file}: no `{location}` in\n{}", run.stderr);
        assert_eq!(run.stdout, "", "{file}: --json prints nothing on an invalid file");
        assert!(is_empty(&setup.workspace), "{file}: something was written into the workspace");
    }
}

#[test]
fn a_missing_workflow_file_is_invalid_input() {
    let setup = setup();
    let out = gavel_in(&setup.files, args!["run", "nope.toml", "--workspace", setup.workspace]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("nope.toml"), "{}", out.stderr);
    assert!(is_empty(&setup.workspace));
    let out = gavel_in(&setup.files, args!["check", "nope.toml"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
}

#[test]
fn bad_flags_are_invalid_input() {
    let setup = setup();
    for args in [args!["run"], args!["run", "w.toml", "--frobnicate"], args!["status"], args!["explode"]] {
        let out = gavel_in(&setup.files, args.clone());
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
    }
    let help = gavel_in(&setup.files, args!["--help"]);
    assert_eq!(help.code, 0);
}

#[test]
fn error_messages_read_well() {
    let setup = setup();
    let settings = snapshot_settings(&[(&setup.files, "[FILES]"), (&setup.workspace, "[WS]")]);
    for (file, name) in [
        ("unknown-key.toml", "unknown_key"),
        ("bad-queue.toml", "bad_queue"),
        ("escape.toml", "escape"),
        ("gavel-state.toml", "gavel_state"),
    ] {
        let out = gavel_in(&setup.files, args!["check", file]);
        assert_eq!(out.code, 2);
        settings.bind(|| insta::assert_snapshot!(format!("malformed_{name}"), out.stderr));
    }
}

/// A workflow whose one builder stage writes `entry` (TOML-quoted as is).
fn writes_workflow(entry: &str) -> String {
    format!(
        "name = \"bad\"\nbrief = \"brief.md\"\n\n[seats]\nwriter = {{ engine = \"script\", script = \"seats/writer.toml\" }}\n\n[[stage]]\nname = \"page\"\nagent = \"writer\"\nwrites = [\"ok.md\", {entry}]\n"
    )
}

#[test]
fn check_refuses_writes_that_no_seat_may_write() {
    let setup = setup();
    // (the entry as written in TOML, the message after `file:10:COL: `)
    let cases = [
        (
            r#"".gavel/runs/r/events.jsonl""#,
            "`.gavel/runs/r/events.jsonl` lies under `.gavel/`, which holds gavel's or git's own files; no seat may write there",
        ),
        (
            r#""./.gavel/runs/r/events.jsonl""#,
            "`./.gavel/runs/r/events.jsonl` lies under `.gavel/`, which holds gavel's or git's own files; no seat may write there",
        ),
        (
            r#"".//.git/config""#,
            "`.//.git/config` lies under `.git/`, which holds gavel's or git's own files; no seat may write there",
        ),
        (
            r#"".git/hooks/pre-commit""#,
            "`.git/hooks/pre-commit` lies under `.git/`, which holds gavel's or git's own files; no seat may write there",
        ),
        (
            r#""sub/.GIT/hooks/x""#,
            "`sub/.GIT/hooks/x` lies under `.GIT/`, which holds gavel's or git's own files; no seat may write there",
        ),
        (r#""a/../.gavel/x""#, "`a/../.gavel/x` leaves the workspace with `..`"),
        (r#""/etc/passwd""#, "`/etc/passwd` is absolute; it must stay inside the workspace"),
        (r#""""#, "`` is empty: it names no file"),
        (r#""./""#, "`./` is empty: it names no file"),
        (r#""docs/""#, "`docs/` ends with `/`: name a file, not a folder"),
    ];
    for (entry, message) in cases {
        std::fs::write(setup.files.join("w.toml"), writes_workflow(entry)).expect("write the workflow");
        let out = gavel_in(&setup.files, args!["check", "w.toml"]);
        assert_eq!(out.code, 2, "{entry}: {}", out.stderr);
        // The entry's column: after `writes = ["ok.md", `.
        let first = out.stderr.lines().next().unwrap_or_default();
        assert_eq!(first, format!("  × w.toml:10:20: {message}"), "{entry}");
        assert!(
            out.stderr.contains(r#"hint: write a path relative to the workspace, outside `.gavel/` and `.git/`, e.g. "docs/page.md""#),
            "{entry}: {}",
            out.stderr
        );
        let run = gavel_in(&setup.files, args!["run", "w.toml", "--workspace", setup.workspace]);
        assert_eq!(run.code, 2, "{entry}: gavel run");
        assert!(is_empty(&setup.workspace), "{entry}: nothing ran");
    }
}

#[test]
fn check_refuses_writes_that_name_the_run_s_record_or_its_lock() {
    let setup = setup();
    for (record, entry) in [
        ("rec.jsonl", "rec.jsonl"),
        ("records/run.jsonl", "./records//run.jsonl"),
        ("./records/run.jsonl", "records/run.jsonl.lock"),
    ] {
        let workflow = format!(
            "name = \"bad\"\nbrief = \"brief.md\"\n\n[options]\nrecord = \"{record}\"\n\n[seats]\nwriter = {{ engine = \"script\", script = \"seats/writer.toml\" }}\n\n[node.x]\nagent = \"writer\"\nwrites = [\"{entry}\"]\n"
        );
        std::fs::write(setup.files.join("w.toml"), workflow).expect("write the workflow");
        let out = gavel_in(&setup.files, args!["check", "w.toml"]);
        assert_eq!(out.code, 2, "{entry}: {}", out.stderr);
        let first = out.stderr.lines().next().unwrap_or_default();
        assert_eq!(
            first,
            format!(
                "  × w.toml:12:11: `{entry}` is the run's record (`[options] record`): no seat may write it"
            ),
            "{entry}"
        );
    }
}

#[test]
fn a_brief_s_files_follow_the_same_rule() {
    let setup = setup();
    let workflow = "name = \"bad\"\nbrief = \"b.md\"\n\n[seats]\nwriter = { engine = \"script\", script = \"seats/writer.toml\" }\n\n[[stage]]\nname = \"page\"\nagent = \"writer\"\n";
    std::fs::write(setup.files.join("w.toml"), workflow).expect("write the workflow");
    for (files, location, message) in [
        ("[.gavel/x.md]", "b.md:2:9", "`.gavel/x.md` lies under `.gavel/`"),
        ("[page.md, ./.git/config]", "b.md:2:18", "`./.git/config` lies under `.git/`"),
    ] {
        std::fs::write(setup.files.join("b.md"), format!("---\nfiles: {files}\n---\nWrite it.\n"))
            .expect("brief");
        let out = gavel_in(&setup.files, args!["check", "w.toml"]);
        assert_eq!(out.code, 2, "{files}: {}", out.stderr);
        assert!(out.stderr.contains(&format!("{location}: {message}")), "{files}: {}", out.stderr);
    }
}
