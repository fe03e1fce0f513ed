//! A builder behind an API cannot edit files itself: it replies with
//! `{"files":[{"path":"...","content":"..."}]}` and gavel writes them.
//!
//! Every file is checked before any is written: its path must be one of the
//! request's `writes` (compared after normalising `./` and doubled slashes)
//! and must stay inside the workspace, symbolic links included, outside
//! `.gavel/` and `.git/`. One bad path refuses the whole reply and nothing
//! is written. The writes go through the same guarded, atomic path as every
//! other seat's (see [`crate::written`]).

use std::fmt::Write as _;
use std::path::PathBuf;

use gavel_fs::write::{Refusal, WriteError};

use gavel_domain::reply::first_json_object;
use serde_json::Value;

use crate::written::{self, Planned};
use crate::{Request, SeatError};

/// The reply shape a builder is asked for, for messages.
pub const SHAPE: &str = r#"{"files":[{"path":"<relative path>","content":"<the whole file>"}]}"#;

/// The longest file whose current content is shown to a builder.
const SHOW_LIMIT: u64 = 256 * 1024;

/// Who writes, in messages.
const WHO: &str = "the builder";

/// `path` in its plain relative form (`./a//b` → `a/b`), or `None` when it
/// may not be written (absolute, `..`, empty, under `.gavel/` or `.git/`).
pub fn normalise(path: &str) -> Option<String> {
    gavel_fs::write::normalise(path).ok()
}

/// One file a builder asked gavel to write.
pub type PlannedFile = Planned;

/// Reads the `files` of a builder reply and checks every path against the
/// request, writing nothing.
pub fn plan(text: &str, request: &Request) -> Result<Vec<PlannedFile>, SeatError> {
    let object = first_json_object(text).map_err(|e| {
        SeatError::Engine(format!(
            "the builder's reply has no readable JSON object ({}); a builder behind an API must reply with {SHAPE}",
            e.note()
        ))
    })?;
    let Some(files) = object.get("files") else {
        return Err(SeatError::Engine(format!(
            "the builder's reply has no `files`; a builder behind an API must reply with {SHAPE}"
        )));
    };
    let Some(files) = files.as_array() else {
        return Err(SeatError::Engine(format!("the builder's `files` is not a list; write {SHAPE}")));
    };
    let mut pairs: Vec<(String, String)> = Vec::with_capacity(files.len());
    for (index, entry) in files.iter().enumerate() {
        let (Some(path), Some(content)) =
            (entry.get("path").and_then(Value::as_str), entry.get("content").and_then(Value::as_str))
        else {
            return Err(SeatError::Engine(format!(
                "entry {} of the builder's `files` needs a string `path` and a string `content`; write {SHAPE}",
                index + 1
            )));
        };
        pairs.push((path.to_owned(), content.to_owned()));
    }
    // An API builder may write only the request's files: with no `writes`,
    // nothing at all.
    if request.writes.is_empty()
        && let Some((path, _)) = pairs.first()
    {
        return Err(SeatError::Refused(format!(
            "the builder asked to write `{path}`, which is not among the files this request may write (none); nothing was written"
        )));
    }
    written::check(request, &pairs, WHO)
}

/// Reads, checks and writes a builder reply's files; nothing is written
/// unless every path passes. Returns the paths written.
pub fn apply(text: &str, request: &Request) -> Result<Vec<PathBuf>, SeatError> {
    let planned = plan(text, request)?;
    written::write(request, &planned, WHO)
}

/// The section added to a builder's prompt: the files it may write and, for
/// those that exist, their current content (it cannot read them itself).
pub fn current_files(request: &Request) -> String {
    let mut out = String::from("\n\n## The files you may write, as they are now\n");
    if request.writes.is_empty() {
        out.push_str("\nThis request lets you write no files: reply with `\"files\": []`.\n");
        return out;
    }
    for path in &request.writes {
        let _ = write!(out, "\n### `{path}`\n\n");
        let Some(normal) = normalise(path) else {
            out.push_str("(not a path this request may write)\n");
            continue;
        };
        // Never follow a link out of the workspace: its target would be sent
        // to the model API.
        let target = match gavel_fs::write::check(&request.workspace, &normal) {
            Ok(target) => target.path(),
            Err(WriteError::Refused { reason: Refusal::NotAFile(what), .. }) => {
                let _ = writeln!(out, "(is {what}, not a regular file)");
                continue;
            }
            Err(_) => {
                out.push_str("(leads outside the workspace or into `.gavel/` or `.git/`; not shown)\n");
                continue;
            }
        };
        match std::fs::metadata(&target) {
            Err(_) => out.push_str("(does not exist yet)\n"),
            Ok(meta) if !meta.is_file() => out.push_str("(not a regular file)\n"),
            Ok(meta) if meta.len() > SHOW_LIMIT => {
                let _ = writeln!(
                    out,
                    "({} bytes, too long to show; rewrite it whole if you change it)",
                    meta.len()
                );
            }
            Ok(_) => match std::fs::read_to_string(&target) {
                Ok(content) => {
                    let fence = fence_for(&content);
                    let _ = writeln!(out, "{fence}\n{content}\n{fence}");
                }
                Err(_) => out.push_str("(not text)\n"),
            },
        }
    }
    out
}

/// A code fence longer than any run of backticks in `content`.
fn fence_for(content: &str) -> String {
    let longest = content.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat(longest.max(2) + 1)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;
    use std::time::Duration;

    use gavel_domain::RequestKind;

    use super::*;

    fn request(workspace: &Path, writes: &[&str]) -> Request {
        Request {
            kind: RequestKind::Write,
            prompt: String::new(),
            workspace: workspace.to_owned(),
            access: RequestKind::Write.access(),
            turn: 0,
            writes: writes.iter().map(|w| (*w).to_owned()).collect(),
            timeout: Duration::from_secs(5),
        }
    }

    #[test]
    fn paths_are_normalised() {
        assert_eq!(normalise("./src//main.rs").as_deref(), Some("src/main.rs"));
        assert_eq!(normalise("a/./b").as_deref(), Some("a/b"));
        assert_eq!(normalise("../x"), None);
        assert_eq!(normalise("a/../../x"), None);
        assert_eq!(normalise("/etc/passwd"), None);
        assert_eq!(normalise("./"), None);
        assert_eq!(normalise(""), None);
    }

    #[test]
    fn allowed_files_are_written_from_a_reply_with_prose() {
        let dir = tempfile::tempdir().unwrap();
        let req = request(dir.path(), &["src/a.txt", "./b.txt"]);
        let text = "Here you go:\n```json\n{\"files\":[{\"path\":\"./src/a.txt\",\"content\":\"A\\n\"},{\"path\":\"b.txt\",\"content\":\"B\"}],\"summary\":\"made a and b\"}\n```";
        let written = apply(text, &req).unwrap();
        assert_eq!(written.len(), 2);
        assert_eq!(std::fs::read_to_string(dir.path().join("src/a.txt")).unwrap(), "A\n");
        assert_eq!(std::fs::read_to_string(dir.path().join("b.txt")).unwrap(), "B");
    }

    #[test]
    fn one_path_outside_writes_refuses_all_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let req = request(dir.path(), &["ok.txt"]);
        for bad in ["other.txt", "../ok.txt", "/tmp/ok.txt", "sub/../ok.txt/.."] {
            let text = format!(
                r#"{{"files":[{{"path":"ok.txt","content":"x"}},{{"path":"{bad}","content":"y"}}]}}"#
            );
            let err = apply(&text, &req).unwrap_err();
            let SeatError::Refused(message) = &err else { panic!("{err:?}") };
            assert!(message.contains(bad), "{message}");
            assert!(message.contains("`ok.txt`"), "names what is allowed: {message}");
            assert!(!dir.path().join("ok.txt").exists(), "nothing written for {bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_out_of_the_workspace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let req = request(dir.path(), &["link/x.txt"]);
        let err = apply(r#"{"files":[{"path":"link/x.txt","content":"x"}]}"#, &req).unwrap_err();
        assert!(matches!(err, SeatError::Refused(_)), "{err:?}");
        assert!(!outside.path().join("x.txt").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_dangling_symlink_out_of_the_workspace_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("new.txt");
        std::os::unix::fs::symlink(&target, dir.path().join("x.txt")).unwrap();
        let req = request(dir.path(), &["x.txt"]);
        let err = apply(r#"{"files":[{"path":"x.txt","content":"x"}]}"#, &req).unwrap_err();
        assert!(matches!(err, SeatError::Refused(_)), "{err:?}");
        assert!(!target.exists(), "written outside the workspace through a dangling link");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_linked_from_outside_is_not_shown_to_the_builder() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("credentials"), "aws_secret_access_key = hush").unwrap();
        std::os::unix::fs::symlink(outside.path().join("credentials"), dir.path().join("notes.md")).unwrap();
        let shown = current_files(&request(dir.path(), &["notes.md"]));
        assert!(!shown.contains("hush"), "{shown}");
        assert!(shown.contains("outside the workspace"), "{shown}");
    }

    #[cfg(unix)]
    #[test]
    fn gavel_and_git_are_refused_even_when_writes_names_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".gavel/runs/r")).unwrap();
        std::fs::write(dir.path().join(".gavel/runs/r/events.jsonl"), "record\n").unwrap();
        std::os::unix::fs::symlink(".gavel/runs", dir.path().join("runs")).unwrap();
        for bad in [
            "./.gavel/runs/r/events.jsonl",
            "a/../.gavel/runs/r/events.jsonl",
            "runs/r/events.jsonl",
            ".git/hooks/pre-commit",
            "sub/.git/config",
        ] {
            let req = request(dir.path(), &[bad, "ok.md"]);
            let text =
                format!(r#"{{"files":[{{"path":"ok.md","content":"x"}},{{"path":"{bad}","content":""}}]}}"#);
            let err = apply(&text, &req).unwrap_err();
            let SeatError::Refused(message) = &err else { panic!("{bad}: {err:?}") };
            assert!(message.contains(&format!("`{bad}`")), "{message}");
            assert!(message.contains("`.gavel/`"), "{message}");
            assert!(!dir.path().join("ok.md").exists(), "{bad}: nothing written");
        }
        assert_eq!(
            std::fs::read_to_string(dir.path().join(".gavel/runs/r/events.jsonl")).unwrap(),
            "record\n"
        );
        assert!(!dir.path().join(".git").exists());
        let shown = current_files(&request(dir.path(), &["runs/r/events.jsonl"]));
        assert!(!shown.contains("record"), "{shown}");
    }

    #[test]
    fn replies_without_files_say_what_to_write() {
        let dir = tempfile::tempdir().unwrap();
        let req = request(dir.path(), &["a"]);
        for text in
            ["I changed it.", r#"{"summary":"done"}"#, r#"{"files":"a"}"#, r#"{"files":[{"path":"a"}]}"#]
        {
            let err = apply(text, &req).unwrap_err();
            let SeatError::Engine(message) = &err else { panic!("{err:?}") };
            assert!(message.contains(r#"{"files":[{"path""#), "{message}");
        }
        let twice = r#"{"files":[{"path":"a","content":"1"},{"path":"./a","content":"2"}]}"#;
        assert!(matches!(apply(twice, &req), Err(SeatError::Engine(_))));
        assert!(apply(r#"{"files":[]}"#, &req).unwrap().is_empty());
    }

    #[test]
    fn current_files_show_content_and_absence() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "has ``` fence").unwrap();
        let shown = current_files(&request(dir.path(), &["a.md", "b.md"]));
        assert!(shown.contains("### `a.md`\n\n````\nhas ``` fence\n````"), "{shown}");
        assert!(shown.contains("### `b.md`\n\n(does not exist yet)"), "{shown}");
    }
}
