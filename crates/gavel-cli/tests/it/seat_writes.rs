//! A seat's files in a real `gavel run`: a builder that aims at gavel's own
//! record (directly or through a link) is refused and the record stays
//! whole; a write cut short by the file size limit leaves the user's file
//! as it was, with no temp file beside it.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::common::{GAVEL, assert_well_formed, events, gavel, output, record_path, tempdir};

/// A workflow folder whose builder `writes` `writes` and whose script seat
/// writes `files` (TOML inline-table entries) on every turn.
fn workflow(dir: &Path, writes: &str, files: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("seats")).unwrap();
    std::fs::write(
        dir.join("workflow.toml"),
        format!(
            "name = \"aim\"\nbrief = \"brief.md\"\n\n[seats]\nwriter = {{ engine = \"script\", script = \"seats/writer.toml\", family = \"anthropic\" }}\n\n[[stage]]\nname = \"page\"\nagent = \"writer\"\nwrites = [{writes}]\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("brief.md"), "# Page\n\nWrite the page.\n").unwrap();
    std::fs::write(
        dir.join("seats/writer.toml"),
        format!("[[write]]\nreply = \"done\"\nfiles = {{ {files} }}\n"),
    )
    .unwrap();
    dir.join("workflow.toml")
}

/// Every file under `dir` outside `.gavel/`, relative and sorted.
fn user_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            if rel == ".gavel" {
                continue;
            }
            if path.symlink_metadata().unwrap().is_dir() {
                stack.push(path);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

fn seat_errors(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["kind"] == "seat:error")
        .map(|e| e["data"]["error"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_builder_aiming_at_the_record_is_refused_and_the_record_stays_readable() {
    // (writes, the file the script writes as well, a link to make first, words of the error)
    type Case = (&'static str, &'static str, Option<(&'static str, &'static str)>, &'static str);
    let cases: [Case; 5] = [
        (r#""page.md""#, ".gavel/runs/aim/events.jsonl", None, "it lies under `.gavel/`"),
        (r#""page.md""#, "./.gavel/runs/aim/events.jsonl", None, "it lies under `.gavel/`"),
        (r#""page.md""#, "a/../.gavel/runs/aim/events.jsonl", None, "it climbs out with `..`"),
        (
            r#""page.md", "state/runs/aim/events.jsonl""#,
            "state/runs/aim/events.jsonl",
            Some((".gavel", "state")),
            "leads into `.gavel/` or `.git/` through the symbolic link `state`",
        ),
        (
            r#""page.md", "log.jsonl""#,
            "log.jsonl",
            Some((".gavel/runs/aim/events.jsonl", "log.jsonl")),
            "leads into `.gavel/` or `.git/` through the symbolic link `log.jsonl`",
        ),
    ];
    for (writes, aim, link, words) in cases {
        let ws = tempdir();
        let files = tempdir();
        if let Some((target, name)) = link {
            std::os::unix::fs::symlink(target, ws.path().join(name)).unwrap();
        }
        let wf = workflow(files.path(), writes, &format!(r#""page.md" = "the page", "{aim}" = "WIPED""#));
        let run = gavel(args!["run", wf, "--workspace", ws.path(), "--run-id", "aim", "--json"]);
        run.expect_code(4);
        assert!(!ws.path().join("page.md").exists(), "{aim}: all or nothing");

        let record = record_path(ws.path(), "aim");
        let text = std::fs::read_to_string(&record).unwrap();
        assert!(!text.starts_with("WIPED"), "{aim}: the record was overwritten");
        let events = events(&record);
        assert_well_formed(&events);
        let errors = seat_errors(&events);
        assert_eq!(errors.len(), 2, "{aim}: {errors:?}");
        assert!(errors.iter().all(|e| e.contains(aim) && e.contains(words)), "{aim}: {errors:?}");

        let status = gavel(args!["status", "aim", "--workspace", ws.path(), "--json"]);
        status.expect_code(0);
        assert_eq!(status.json()["status"]["state"], "paused", "{aim}");
    }
}

#[test]
fn a_builder_aiming_at_a_record_kept_in_the_workspace_is_refused() {
    // `--record` inside the workspace (not under `.gavel/`): the record and
    // its lock are gavel's own, by their path or through a link.
    for (aim, link) in [
        ("rec.jsonl", None),
        ("records/../rec.jsonl", None),
        ("alias.jsonl", Some("rec.jsonl")),
        ("rec.jsonl.lock", None),
    ] {
        let ws = tempdir();
        let files = tempdir();
        if let Some(target) = link {
            std::os::unix::fs::symlink(target, ws.path().join(aim)).unwrap();
        }
        let writes = format!(r#""page.md", "{aim}""#);
        let wf = workflow(files.path(), &writes, &format!(r#""page.md" = "the page", "{aim}" = "WIPED""#));
        let record = ws.path().join("rec.jsonl");
        let run = gavel(args!["run", wf, "--workspace", ws.path(), "--record", record, "--json"]);
        if aim.contains("..") {
            // Refused before anything runs.
            run.expect_code(2);
            continue;
        }
        run.expect_code(4);
        assert!(!ws.path().join("page.md").exists(), "{aim}: all or nothing");
        let events = events(&record);
        assert_well_formed(&events);
        let errors = seat_errors(&events);
        assert_eq!(errors.len(), 2, "{aim}: {errors:?}");
        assert!(errors.iter().all(|e| e.contains("gavel's own file")), "{aim}: {errors:?}");
        let status = gavel(args!["status", record, "--json"]);
        status.expect_code(0);
        assert_eq!(status.json()["status"]["state"], "paused", "{aim}");
    }
}

#[test]
fn a_write_over_the_file_size_limit_keeps_the_old_bytes_and_leaves_no_temp_file() {
    let ws = tempdir();
    let files = tempdir();
    let old: String = (0..200).map(|i| format!("line {i} of the user's page")).collect::<Vec<_>>().join("\n");
    assert!(old.len() > 4096 && old.len() < 8192);
    std::fs::write(ws.path().join("page.md"), &old).unwrap();
    let big = "x".repeat(20_000);
    let wf = workflow(files.path(), r#""page.md""#, &format!(r#""page.md" = "{big}""#));
    // 8 KiB per file: the record and the old page fit, the new page does not.
    let out = output(
        std::process::Command::new("bash")
            .arg("-c")
            .arg("ulimit -f 8; exec \"$0\" \"$@\"")
            .arg(GAVEL)
            .args(["run", &wf.display().to_string(), "--run-id", "big", "--json"])
            .arg("--workspace")
            .arg(ws.path())
            .env("NO_COLOR", "1"),
    );
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(ws.path().join("page.md")).unwrap(), old, "the user's bytes survive");
    assert_eq!(user_files(ws.path()), ["page.md"], "no temp file left");
    let errors = seat_errors(&events(&record_path(ws.path(), "big")));
    assert_eq!(errors.len(), 2, "{errors:?}");
    for error in errors {
        assert!(error.contains("cannot write `page.md` (over the file size limit)"), "{error}");
        assert!(error.contains("its previous content (if any) is unchanged"), "{error}");
    }
}
