//! A run goes on where the user is: in the folder given with `--workspace`,
//! else in the folder whose `.gavel/` holds the record (a copied workspace
//! resumes in the copy, the original untouched), else, for a record kept
//! elsewhere, in the folder it names, with a note. Before anything is
//! performed, the files the record says were built must be there as built:
//! a changed, deleted or unexpected file stops it with exit 2, named.

use std::path::{Path, PathBuf};

use crate::common::{Out, copy_dir, events, gavel, gavel_cmd, output, read_bytes, tempdir};

/// The workflow folder (beside the workspaces, never inside one): a builder
/// writes `page.md` and `notes.md`, a person approves `page.md` and
/// `extra.md` (never built: recorded missing), then a last stage writes
/// `final.md`, after the approval.
fn flow(dir: &Path) -> PathBuf {
    let files = dir.join("flow");
    std::fs::create_dir_all(files.join("seats")).unwrap();
    std::fs::write(files.join("brief.md"), "# Page\n\nWrite a page.\n").unwrap();
    std::fs::write(
        files.join("seats/writer.toml"),
        r##"[[write]]
reply = "Wrote the page and its notes."
files = { "page.md" = "# Page\n", "notes.md" = "notes\n" }

[[write]]
reply = "Wrote the final word."
files = { "final.md" = "done\n" }
"##,
    )
    .unwrap();
    let workflow = files.join("workflow.toml");
    std::fs::write(
        &workflow,
        r#"name = "resume-where"
brief = "brief.md"

[seats]
writer = { engine = "script", script = "seats/writer.toml", family = "anthropic" }

[[stage]]
name = "page"
agent = "writer"
writes = ["page.md", "notes.md"]

[[stage]]
name = "approve"
approve = ["page.md", "extra.md"]

[[stage]]
name = "final"
agent = "writer"
writes = ["final.md"]
"#,
    )
    .unwrap();
    workflow
}

/// A workspace with run `r` paused at the approval.
fn paused(dir: &Path, name: &str) -> PathBuf {
    let ws = dir.join(name);
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let out = gavel(args!["run", flow(dir), "--workspace", ws, "--run-id", "r", "--json"]);
    out.expect_code(3);
    assert_eq!(out.json()["waiting_for"], "approval of stage approve");
    ws
}

fn record_of(ws: &Path) -> PathBuf {
    ws.join(".gavel/runs/r/events.jsonl")
}

/// `gavel approve r` run from `cwd`, with `extra` arguments.
fn approve_in(cwd: &Path, extra: &[&std::ffi::OsStr]) -> Out {
    output(gavel_cmd().current_dir(cwd).args(["approve", "r", "--json", "--by", "tester"]).args(extra))
}

#[test]
fn a_copied_workspace_resumes_in_the_copy_and_leaves_the_original_alone() {
    let dir = tempdir();
    let orig = paused(dir.path(), "orig");
    let copy = dir.path().join("copy");
    copy_dir(&orig, &copy);
    let copy = copy.canonicalize().unwrap();
    let before = read_bytes(&record_of(&orig));

    let out = approve_in(&copy, &[]);
    out.expect_code(0);
    // Writes land in the copy; the original is as it was.
    assert_eq!(std::fs::read_to_string(copy.join("final.md")).unwrap(), "done\n");
    assert!(!orig.join("final.md").exists(), "the resumed run wrote into the original folder");
    assert_eq!(read_bytes(&record_of(&orig)), before, "the original record changed");
    // Stderr says where the run goes on, and where it had been.
    let said = out.stderr.replace('\n', " ");
    assert!(said.contains(&copy.display().to_string()), "{}", out.stderr);
    assert!(said.contains(&orig.display().to_string()), "{}", out.stderr);
    // The record says so too.
    let events = events(&record_of(&copy));
    let resume = events.iter().find(|e| e["kind"] == "run:resume").unwrap();
    assert_eq!(resume["data"]["workspace"], copy.display().to_string());
    let status = output(gavel_cmd().current_dir(&copy).args(["status", "r", "--json"])).json();
    assert_eq!(status["workspace"], copy.display().to_string());
}

#[test]
fn gavel_resume_in_a_copy_goes_on_there_too() {
    let dir = tempdir();
    let orig = paused(dir.path(), "orig");
    let copy = dir.path().join("copy");
    copy_dir(&orig, &copy);
    let answers = dir.path().join("answers.toml");
    std::fs::write(&answers, "[approve]\napproved = true\nby = \"file\"\n").unwrap();
    let out = output(gavel_cmd().current_dir(&copy).arg("resume").arg("r").arg("--answers").arg(&answers));
    out.expect_code(0);
    assert!(copy.join("final.md").is_file());
    assert!(!orig.join("final.md").exists());
}

#[test]
fn workspace_given_with_the_flag_wins() {
    let dir = tempdir();
    let orig = paused(dir.path(), "orig");
    let other = dir.path().join("other");
    copy_dir(&orig, &other);
    std::fs::remove_dir_all(other.join(".gavel")).unwrap();
    let other = other.canonicalize().unwrap();
    // The record stays in `orig`; the work goes on in `other`.
    let record = record_of(&orig);
    let out = output(
        gavel_cmd().current_dir(dir.path()).arg("approve").arg(&record).arg("--workspace").arg(&other),
    );
    out.expect_code(0);
    assert!(other.join("final.md").is_file(), "{}", out.stderr);
    assert!(!orig.join("final.md").exists());
    assert!(out.stderr.contains(&other.display().to_string()), "{}", out.stderr);
    let events = events(&record);
    let resume = events.iter().find(|e| e["kind"] == "run:resume").unwrap();
    assert_eq!(resume["data"]["workspace"], other.display().to_string());
}

/// Asserts a refusal: exit 2 naming each `(file, how)`, a hint, nothing
/// written to the record or the workspace.
#[track_caller]
fn assert_refused(out: &Out, ws: &Path, before: &[u8], named: &[(&str, &str)]) {
    out.expect_code(2);
    for (file, how) in named {
        let line = out.stderr.lines().find(|l| l.trim_start().starts_with(&format!("{file}:")));
        let line = line.unwrap_or_else(|| panic!("{file} is not named:\n{}", out.stderr));
        assert!(line.contains(how), "{file}: {line}");
    }
    assert!(out.stderr.contains("hint:") && out.stderr.contains("gavel run"), "{}", out.stderr);
    assert_eq!(read_bytes(&record_of(ws)), before, "the record changed");
    assert!(!ws.join("final.md").exists(), "work went on");
    assert_eq!(out.stdout, "");
}

#[test]
fn a_built_file_edited_deleted_or_unexpected_stops_the_run_naming_each() {
    let dir = tempdir();
    let ws = paused(dir.path(), "ws");
    let before = read_bytes(&record_of(&ws));

    // One built file edited.
    std::fs::write(ws.join("notes.md"), "notes, edited\n").unwrap();
    let out = approve_in(&ws, &[]);
    assert_refused(&out, &ws, &before, &[("notes.md", "changed")]);
    let resumed = output(gavel_cmd().current_dir(&ws).args(["resume", "r"]));
    assert_refused(&resumed, &ws, &before, &[("notes.md", "changed")]);

    // A built file deleted is named; the files the waiting approval asks
    // about are not (edited, or present where the ask says missing): the
    // approve stage asks again about their new bytes once the run goes on.
    std::fs::write(ws.join("page.md"), "# Page, edited\n").unwrap();
    std::fs::remove_file(ws.join("notes.md")).unwrap();
    std::fs::write(ws.join("extra.md"), "surprise\n").unwrap();
    let out = approve_in(&ws, &[]);
    assert_refused(&out, &ws, &before, &[("notes.md", "missing")]);
    for asked in ["page.md:", "extra.md:"] {
        assert!(!out.stderr.lines().any(|l| l.trim_start().starts_with(asked)), "{}", out.stderr);
    }

    // A folder where a file was built.
    std::fs::remove_file(ws.join("extra.md")).unwrap();
    std::fs::write(ws.join("page.md"), "# Page\n").unwrap();
    std::fs::create_dir(ws.join("notes.md")).unwrap();
    let out = approve_in(&ws, &[]);
    assert_refused(&out, &ws, &before, &[("notes.md", "not a regular file")]);

    // Restored as built: it goes on.
    std::fs::remove_dir(ws.join("notes.md")).unwrap();
    std::fs::write(ws.join("notes.md"), "notes\n").unwrap();
    approve_in(&ws, &[]).expect_code(0);
    assert!(ws.join("final.md").is_file());
}

#[test]
fn a_copy_whose_built_file_differs_is_refused_and_the_original_still_resumes() {
    let dir = tempdir();
    let orig = paused(dir.path(), "orig");
    let copy = dir.path().join("copy");
    copy_dir(&orig, &copy);
    std::fs::remove_file(copy.join("notes.md")).unwrap();
    let before = read_bytes(&record_of(&copy));
    let out = approve_in(&copy, &[]);
    assert_refused(&out, &copy, &before, &[("notes.md", "missing")]);
    approve_in(&orig, &[]).expect_code(0);
}

/// Kills a run with the writer's fault-injection hook right after the
/// record's line `cut`, in a fresh workspace.
fn killed_after(dir: &Path, name: &str, workflow: &Path, cut: usize) -> PathBuf {
    let ws = dir.join(name);
    std::fs::create_dir_all(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let out = gavel_cmd()
        .env("GAVEL_CRASH_AFTER_SEQ", cut.to_string())
        .args(args!["-q", "run", workflow, "--workspace", ws, "--run-id", "r"])
        .output()
        .unwrap();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&out.status), Some(9));
    ws
}

#[test]
fn a_killed_run_resumes_in_a_copy_and_refuses_an_edited_one() {
    let dir = tempdir();
    let workflow = flow(dir.path());
    // Lines: run:start, stage:start, seat:request, seat:reply, build:done, ...
    let ws = killed_after(dir.path(), "killed", &workflow, 5);
    let last = events(&record_of(&ws)).last().unwrap()["kind"].clone();
    assert_eq!(last, "build:done");
    let copy = dir.path().join("copy");
    copy_dir(&ws, &copy);
    let edited = dir.path().join("edited");
    copy_dir(&ws, &edited);
    std::fs::write(edited.join("page.md"), "# Other\n").unwrap();

    let before = read_bytes(&record_of(&edited));
    let out = output(gavel_cmd().current_dir(&edited).args(["resume", "r"]));
    assert_refused(&out, &edited, &before, &[("page.md", "changed")]);

    // The copy goes on there, to the approval.
    let out = output(gavel_cmd().current_dir(&copy).args(["resume", "r", "--json"]));
    out.expect_code(3);
    assert!(copy.join(".gavel/runs/r/events.jsonl").is_file());
    let asked = events(&record_of(&copy));
    assert!(asked.iter().any(|e| e["kind"] == "approval:request"));
    assert!(
        !events(&record_of(&ws)).iter().any(|e| e["kind"] == "approval:request"),
        "the original moved on"
    );
}

#[test]
fn a_builder_cut_off_midway_may_have_changed_its_files() {
    let dir = tempdir();
    let workflow = flow(dir.path());
    // Killed right after the builder's request: whatever it left is not on record.
    let ws = killed_after(dir.path(), "midway", &workflow, 3);
    std::fs::write(ws.join("page.md"), "half written").unwrap();
    let out = output(gavel_cmd().current_dir(&ws).args(["resume", "r", "--json"]));
    out.expect_code(3);
    assert_eq!(std::fs::read_to_string(ws.join("page.md")).unwrap(), "# Page\n");
}

#[test]
fn only_the_latest_recorded_state_of_a_file_counts() {
    // A later stage rewrites the first one's file, and a command rewrites it
    // again (a formatter): neither is a difference.
    let dir = tempdir();
    let files = dir.path().join("flow");
    std::fs::create_dir_all(files.join("seats")).unwrap();
    std::fs::write(files.join("brief.md"), "# Page\n\nWrite a page.\n").unwrap();
    std::fs::write(
        files.join("seats/writer.toml"),
        "[[write]]\nfiles = { \"page.md\" = \"one\\n\" }\n\n[[write]]\nfiles = { \"page.md\" = \"two\\n\" }\n\n[[write]]\nfiles = { \"final.md\" = \"done\\n\" }\ndelay_ms = 50\n",
    )
    .unwrap();
    let workflow = files.join("workflow.toml");
    std::fs::write(
        &workflow,
        r#"name = "latest"
brief = "brief.md"

[seats]
writer = { engine = "script", script = "seats/writer.toml", family = "anthropic" }

[[stage]]
name = "first"
agent = "writer"
writes = ["page.md"]

[[stage]]
name = "second"
agent = "writer"
writes = ["page.md"]

[[stage]]
name = "format"
run = "printf 'formatted\n' >> page.md"

[[stage]]
name = "final"
agent = "writer"
writes = ["final.md"]
"#,
    )
    .unwrap();
    let base = dir.path().join("base");
    std::fs::create_dir(&base).unwrap();
    gavel(args!["-q", "run", &workflow, "--workspace", base, "--run-id", "r"]).expect_code(0);
    let all = events(&record_of(&base));
    let check = all.iter().position(|e| e["kind"] == "check:run").unwrap();
    let page = all[check]["data"]["files"]["page.md"].as_str().unwrap().to_owned();
    assert_eq!(page.len(), 64, "the command's run records the file it left: {}", all[check]);
    // Killed right after the command's line: page.md is "two\nformatted\n".
    let ws = killed_after(dir.path(), "ws", &workflow, check + 1);
    assert_eq!(std::fs::read_to_string(ws.join("page.md")).unwrap(), "two\nformatted\n");
    let out = output(gavel_cmd().current_dir(&ws).args(["resume", "r"]));
    out.expect_code(0);
    assert!(ws.join("final.md").is_file());
}

#[test]
fn a_record_kept_elsewhere_goes_on_in_the_folder_it_names_with_a_note() {
    let dir = tempdir();
    let workflow = flow(dir.path());
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let ws = ws.canonicalize().unwrap();
    let record = dir.path().join("records/r.jsonl");
    std::fs::create_dir_all(record.parent().unwrap()).unwrap();
    gavel(args!["run", workflow, "--workspace", ws, "--record", record]).expect_code(3);

    let out = output(gavel_cmd().current_dir(dir.path()).arg("approve").arg(&record).args(["--by", "t"]));
    out.expect_code(0);
    assert!(ws.join("final.md").is_file());
    assert!(out.stderr.contains("note:") && out.stderr.contains(&ws.display().to_string()), "{}", out.stderr);

    // Its folder gone: say what to do.
    let gone = dir.path().join("gone");
    std::fs::rename(&ws, &gone).unwrap();
    let out = output(gavel_cmd().current_dir(dir.path()).arg("resume").arg(&record));
    out.expect_code(2);
    assert!(out.stderr.contains("--workspace"), "{}", out.stderr);
    // ... and with it named, it goes on there (the run has ended: nothing to do).
    let out =
        output(gavel_cmd().current_dir(dir.path()).arg("resume").arg(&record).arg("--workspace").arg(&gone));
    out.expect_code(0);
}

#[test]
fn a_record_kept_in_the_workspace_outside_gavel_resumes_in_the_copy_that_holds_it() {
    let dir = tempdir();
    let workflow = flow(dir.path());
    let orig = dir.path().join("orig");
    std::fs::create_dir(&orig).unwrap();
    let orig = orig.canonicalize().unwrap();
    // `--record records/r.jsonl`, inside the workspace, as `[options] record` allows.
    let record = orig.join("records/r.jsonl");
    std::fs::create_dir_all(record.parent().unwrap()).unwrap();
    gavel(args!["run", workflow, "--workspace", orig, "--record", record]).expect_code(3);
    let copy = dir.path().join("copy");
    copy_dir(&orig, &copy);
    let original_files = read_bytes(&orig.join("page.md"));

    let in_copy = copy.join("records/r.jsonl");
    let out = output(gavel_cmd().current_dir(dir.path()).arg("approve").arg(&in_copy).args(["--by", "t"]));
    out.expect_code(0);
    assert!(copy.join("final.md").is_file(), "the copy went on");
    assert!(!orig.join("final.md").exists(), "nothing was written where the run started");
    assert_eq!(read_bytes(&orig.join("page.md")), original_files);
    assert!(out.stderr.contains(&orig.display().to_string()), "says where it started: {}", out.stderr);
}

#[test]
fn a_workspace_that_holds_its_workflow_resumes_from_the_copy_after_the_original_is_gone() {
    let dir = tempdir();
    // The workflow, its brief and its seats live inside the workspace.
    let orig = dir.path().join("orig");
    flow(dir.path());
    copy_dir(&dir.path().join("flow"), &orig);
    let orig = orig.canonicalize().unwrap();
    let out = output(gavel_cmd().current_dir(&orig).args(["run", "workflow.toml", "--run-id", "r"]));
    out.expect_code(3);
    let copy = dir.path().join("copy");
    copy_dir(&orig, &copy);
    std::fs::remove_dir_all(&orig).unwrap();

    let out = approve_in(&copy, &[]);
    out.expect_code(0);
    assert!(copy.join("final.md").is_file());
    assert!(!orig.exists(), "nothing was written where the run started");
}
