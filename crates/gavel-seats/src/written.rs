//! Files a seat hands to gavel to write (a script seat's `files`, an API
//! builder's `{"files":[...]}`), written through `gavel-fs`'s one guarded,
//! atomic write path.
//!
//! All or nothing: every path is checked (plain relative form, among the
//! request's `writes` when it names any, inside the workspace through any
//! symbolic link, and, through a link, landing on a file among `writes`
//! too, outside `.gavel/` and `.git/`) before the first byte is
//! written. The writes then run inside a [`WriteScope`], so an agent CLI
//! guarded at the same time in the same workspace is not blamed for them.

use std::path::PathBuf;

use gavel_fs::scope::WriteScope;
use gavel_fs::write::{Target, Workspace, WriteError, normalise};

use crate::{Request, SeatError};

/// One file to write: the path as the seat named it, and its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    /// The path as the seat wrote it.
    pub asked: String,
    /// Its plain relative form.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

/// Checks every file against the request without writing anything. `who`
/// names the seat in messages ("the builder", "script seat `w`").
pub fn check(request: &Request, files: &[(String, String)], who: &str) -> Result<Vec<Planned>, SeatError> {
    let workspace = Workspace::new(&request.workspace).map_err(|e| io_error(&e, who))?;
    let allowed: Vec<String> = request.writes.iter().filter_map(|w| normalise(w).ok()).collect();
    let refused = |err: &WriteError| {
        let may = if request.writes.is_empty() {
            String::new()
        } else {
            format!("; this request may write {}", list(&request.writes))
        };
        SeatError::Refused(format!("{who}: {err}{may}; nothing was written"))
    };
    let mut planned: Vec<Planned> = Vec::with_capacity(files.len());
    for (asked, content) in files {
        let normal = normalise(asked)
            .map_err(|reason| refused(&WriteError::Refused { path: asked.clone(), reason }))?;
        if !request.writes.is_empty() && !allowed.contains(&normal) {
            return Err(SeatError::Refused(format!(
                "{who} asked to write `{asked}`, which is not among the files this request may write ({}); nothing was written",
                list(&request.writes)
            )));
        }
        if planned.iter().any(|p| p.path == normal) {
            return Err(SeatError::Engine(format!(
                "{who} named `{normal}` twice; give each file once, with its whole content"
            )));
        }
        // Symbolic links on the way, files in the way of folders.
        let target = workspace
            .check(asked)
            .map_err(|e| if e.is_refusal() { refused(&e) } else { io_error(&e, who) })?;
        if !request.writes.is_empty()
            && let Some(lands) = lands_elsewhere(&workspace, &target, &normal, &allowed)
        {
            return Err(SeatError::Refused(format!(
                "{who} asked to write `{asked}`, which leads through a symbolic link to `{lands}`, a file this request may not write (it may write {}); remove the link or add `{lands}` to `writes`; nothing was written",
                list(&request.writes)
            )));
        }
        planned.push(Planned { asked: asked.clone(), path: normal, content: content.clone() });
    }
    Ok(planned)
}

/// Writes checked files, each atomically; returns the files written.
pub fn write(request: &Request, planned: &[Planned], who: &str) -> Result<Vec<PathBuf>, SeatError> {
    let workspace = Workspace::new(&request.workspace).map_err(|e| io_error(&e, who))?;
    let paths: Vec<String> = planned.iter().map(|p| p.path.clone()).collect();
    let _scope = WriteScope::enter(workspace.root(), &paths);
    // All or nothing: a reply whose last file cannot be written leaves the
    // first ones as they were too.
    let files: Vec<(&str, &[u8])> = planned.iter().map(|f| (f.path.as_str(), f.content.as_bytes())).collect();
    workspace.write_all(&files).map_err(|e| match e {
        // Changed since the check (a link appeared): refused all the same.
        WriteError::Refused { .. } => SeatError::Refused(format!("{who}: {e}; nothing was written")),
        WriteError::Io { .. } => SeatError::Engine(format!("{who}: {e}; no file of this reply was changed")),
    })
}

/// [`check`], then [`write`].
pub fn check_and_write(
    request: &Request,
    files: &[(String, String)],
    who: &str,
) -> Result<Vec<PathBuf>, SeatError> {
    let planned = check(request, files, who)?;
    write(request, &planned, who)
}

/// Where a write to `normal` lands when a symbolic link on the way (the
/// file itself or a folder above it) leads to another path of the
/// workspace that is not among `allowed`: that path, relative. `None` when
/// it lands on `normal` itself or on a path it may write.
pub(crate) fn lands_elsewhere(
    workspace: &Workspace,
    target: &Target,
    normal: &str,
    allowed: &[String],
) -> Option<String> {
    let path = target.path();
    let lands = path
        .strip_prefix(workspace.root())
        .map_or_else(|_| path.display().to_string(), |rel| rel.to_string_lossy().into_owned());
    (lands != normal && !allowed.contains(&lands)).then_some(lands)
}

fn io_error(err: &WriteError, who: &str) -> SeatError {
    SeatError::Engine(format!("{who}: {err}"))
}

/// `writes` for a message: `a`, `b`, or "none".
pub fn list(writes: &[String]) -> String {
    if writes.is_empty() {
        "none".to_owned()
    } else {
        writes.iter().map(|w| format!("`{w}`")).collect::<Vec<_>>().join(", ")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::os::unix::fs::symlink;
    use std::time::Duration;

    use gavel_domain::{Access, RequestKind};

    use super::*;

    fn request(root: &std::path::Path, writes: &[&str]) -> Request {
        Request {
            kind: RequestKind::Write,
            prompt: String::new(),
            workspace: root.to_owned(),
            access: Access::MayWrite,
            turn: 0,
            writes: writes.iter().map(|w| (*w).to_owned()).collect(),
            timeout: Duration::from_secs(1),
        }
    }

    fn files(path: &str) -> Vec<(String, String)> {
        vec![(path.to_owned(), "new".to_owned())]
    }

    #[test]
    fn a_write_through_a_link_to_a_file_not_in_writes_is_refused_naming_both() {
        let ws = tempfile::tempdir().unwrap();
        let root = ws.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        symlink("src/main.rs", root.join("out.txt")).unwrap();
        symlink("src", root.join("gen")).unwrap();
        symlink(root.join("src/main.rs"), root.join("abs.txt")).unwrap();
        for (path, lands) in [
            ("out.txt", "src/main.rs"),
            ("gen/main.rs", "src/main.rs"),
            ("abs.txt", "src/main.rs"),
            ("gen/new.rs", "src/new.rs"),
        ] {
            let err = check_and_write(&request(&root, &[path]), &files(path), "the builder").unwrap_err();
            let SeatError::Refused(message) = &err else { panic!("{path}: {err:?}") };
            assert!(
                message.contains(&format!("`{path}`, which leads through a symbolic link to `{lands}`")),
                "{path}: {message}"
            );
            assert!(message.ends_with("nothing was written"), "{message}");
            assert_eq!(std::fs::read_to_string(root.join("src/main.rs")).unwrap(), "fn main() {}");
            assert!(!root.join("src/new.rs").exists());
        }
        // Allowed when the file it lands on may be written too.
        let written =
            check_and_write(&request(&root, &["out.txt", "src/main.rs"]), &files("out.txt"), "b").unwrap();
        assert_eq!(written, [root.join("src/main.rs")]);
        // A link to itself-free plain path is untouched by the rule.
        check_and_write(&request(&root, &["plain.txt"]), &files("plain.txt"), "b").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("plain.txt")).unwrap(), "new");
    }
}
