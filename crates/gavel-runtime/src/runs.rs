//! Run ids and where records live.

use std::path::{Path, PathBuf};

use jiff::Timestamp;

/// The folder, under a workspace, where runs are kept by default.
pub const RUNS_DIR: &str = ".gavel/runs";
/// The record's file name inside a run's folder.
pub const RECORD_FILE: &str = "events.jsonl";

/// A fresh, sortable run id: the workflow's name and a UTC timestamp.
pub fn new_run_id(workflow: &str, now: Timestamp) -> String {
    format!("{workflow}-{}", now.strftime("%Y%m%dT%H%M%S%.3fZ")).replace('.', "")
}

/// The default record path of a run in a workspace.
pub fn default_record(workspace: &Path, run_id: &str) -> PathBuf {
    workspace.join(RUNS_DIR).join(run_id).join(RECORD_FILE)
}

/// Checks a run id given with `--run-id`.
pub fn check_run_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.starts_with('.');
    if ok {
        Ok(())
    } else {
        Err(format!("`{id}` is not a usable run id; use letters, digits, `-`, `_` and `.` (not first)"))
    }
}

/// Finds a run's record: `run` is a record path, or a run id under
/// `workspace/.gavel/runs`.
pub fn locate(run: &str, workspace: &Path) -> Result<PathBuf, String> {
    // A run id under the workspace wins over a same-named file here.
    if check_run_id(run).is_ok() {
        let record = default_record(workspace, run);
        if record.is_file() {
            return Ok(record);
        }
    }
    let as_path = Path::new(run);
    if as_path.is_file() {
        return Ok(as_path.to_owned());
    }
    // A FIFO or a device is named as it is, so the person learns why it is
    // refused (reading one could block or never end).
    if !as_path.is_dir()
        && let Err(err) = gavel_fs::read::check_absent_or_regular(as_path, gavel_fs::read::UserFile::Record)
    {
        return Err(format!("{err}; {}", err.hint()));
    }
    if as_path.is_dir() && as_path.join(RECORD_FILE).is_file() {
        return Ok(as_path.join(RECORD_FILE));
    }
    if check_run_id(run).is_ok() {
        let record = default_record(workspace, run);
        if record.is_file() {
            return Ok(record);
        }
        return Err(format!(
            "no run `{run}`: {} does not exist; give a run id under {} or a record path",
            record.display(),
            workspace.join(RUNS_DIR).display()
        ));
    }
    Err(format!("no record at {run}; give a run id under .gavel/runs or a record path"))
}

/// Where a resumed run goes on, and what to tell the person about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResumeFolder {
    /// The folder, absolute.
    pub workspace: PathBuf,
    /// A note for stderr when the folder is not plainly the one on record.
    pub note: Option<String>,
}

/// The folder a run continues in:
///
/// 1. `explicit` (`--workspace DIR`), which must be a folder;
/// 2. else the folder whose `.gavel/` holds the record (a record at
///    `<ws>/.gavel/runs/<id>/events.jsonl` continues in `<ws>`, wherever
///    the run started: a copied workspace resumes in the copy);
/// 3. else, for a record kept inside the workspace but outside `.gavel/`
///    (`--record records/run.jsonl`), the folder that holds it where the
///    run's start put it: the record's place relative to the workspace it
///    started in (`started`: that workspace and the record's path then) is
///    the same in a copy, so a copy resumes in the copy;
/// 4. else (a record kept elsewhere with `--record`) the folder the record
///    names (`recorded`), when it exists, with a note saying so.
///
/// Whichever it is, when it is not the recorded folder the note says so:
/// a run never silently works somewhere other than where it was.
pub fn resume_folder(
    record: &Path,
    explicit: Option<&Path>,
    recorded: &str,
    started: Option<(&str, &str)>,
) -> Result<ResumeFolder, String> {
    let recorded_path = (!recorded.is_empty()).then(|| PathBuf::from(recorded));
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_owned());
    let (workspace, mut note) = if let Some(dir) = explicit {
        if !dir.is_dir() {
            return Err(format!(
                "the workspace {} is not a folder; pass --workspace with the folder the run should go on in",
                dir.display()
            ));
        }
        (canonical(dir), None)
    } else if let Some(ws) = workspace_holding(record) {
        (canonical(&ws), None)
    } else if let Some(ws) = started.and_then(|(workspace, then)| folder_beside(record, workspace, then)) {
        (canonical(&ws), None)
    } else {
        match &recorded_path {
            Some(dir) if dir.is_dir() => {
                let dir = canonical(dir);
                let note = format!(
                    "the record {} is not inside a workspace's .gavel/ folder: the run goes on in the folder it names, {} (pass --workspace DIR to choose another)",
                    record.display(),
                    dir.display()
                );
                (dir, Some(note))
            }
            _ => {
                return Err(format!(
                    "the record {} is not inside a workspace's .gavel/ folder, and the folder it names ({}) does not exist; pass --workspace with the folder the run should go on in",
                    record.display(),
                    if recorded.is_empty() { "none" } else { recorded }
                ));
            }
        }
    };
    if let Some(recorded_path) = &recorded_path
        && canonical(recorded_path) != workspace
    {
        note = Some(format!(
            "the run goes on in {}, not in {} where its record says it worked",
            workspace.display(),
            recorded_path.display()
        ));
    }
    Ok(ResumeFolder { workspace, note })
}

/// The folder that holds `record` the way `started_in` held the record at
/// `then` when the run started: `None` when the record lay outside that
/// workspace, or `record` is not at the same place below a folder now.
fn folder_beside(record: &Path, started_in: &str, then: &str) -> Option<PathBuf> {
    if started_in.is_empty() || then.is_empty() {
        return None;
    }
    let below = Path::new(then).strip_prefix(started_in).ok()?;
    let depth = below.components().count();
    if depth == 0 {
        return None;
    }
    let record = std::path::absolute(record).ok()?;
    if !record.ends_with(below) {
        return None;
    }
    let folder = record.ancestors().nth(depth)?;
    folder.is_dir().then(|| folder.to_owned())
}

/// The folder whose `.gavel/` holds `record`, if it lies under one.
pub fn workspace_holding(record: &Path) -> Option<PathBuf> {
    let record = std::path::absolute(record).ok()?;
    record
        .ancestors()
        .skip(1)
        .find(|dir| dir.file_name().is_some_and(|n| n == ".gavel"))?
        .parent()
        .map(Path::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_under_a_gavel_folder_belongs_to_the_folder_above_it() {
        assert_eq!(
            workspace_holding(Path::new("/w/copy/.gavel/runs/r1/events.jsonl")),
            Some(PathBuf::from("/w/copy"))
        );
        assert_eq!(workspace_holding(Path::new("/w/.gavel/mine.jsonl")), Some(PathBuf::from("/w")));
        assert_eq!(workspace_holding(Path::new("/records/r1.jsonl")), None);
        assert_eq!(workspace_holding(Path::new("/w/.gavel")), None, "the folder itself holds no record");
    }

    #[test]
    fn the_resume_folder_is_explicit_else_the_records_else_the_recorded_one_with_a_note() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = std::fs::canonicalize(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let (orig, copy, other) = (root.join("orig"), root.join("copy"), root.join("other"));
        for d in [&orig, &copy, &other] {
            std::fs::create_dir_all(d.join(".gavel/runs/r")).unwrap_or_else(|e| panic!("{e}"));
        }
        let recorded = orig.display().to_string();
        let in_orig = orig.join(".gavel/runs/r/events.jsonl");
        let in_copy = copy.join(".gavel/runs/r/events.jsonl");
        let elsewhere = root.join("r.jsonl");

        // Where it started, quietly.
        let same = resume_folder(&in_orig, None, &recorded, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(same, ResumeFolder { workspace: orig.clone(), note: None });
        // A copy goes on in the copy, and says so.
        let copied = resume_folder(&in_copy, None, &recorded, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(copied.workspace, copy);
        assert!(copied.note.as_deref().is_some_and(|n| n.contains(&recorded)), "{copied:?}");
        // --workspace wins over both.
        let chosen = resume_folder(&in_copy, Some(&other), &recorded, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(chosen.workspace, other);
        assert!(chosen.note.is_some());
        assert!(resume_folder(&in_copy, Some(&root.join("nope")), &recorded, None).is_err());
        // A record kept elsewhere: the recorded folder, with a note; none, an error.
        let kept = resume_folder(&elsewhere, None, &recorded, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kept.workspace, orig);
        assert!(kept.note.as_deref().is_some_and(|n| n.contains("not inside")), "{kept:?}");
        let gone = resume_folder(&elsewhere, None, &root.join("gone").display().to_string(), None);
        assert!(gone.is_err_and(|e| e.contains("--workspace")));
    }

    #[test]
    fn a_record_kept_inside_the_workspace_outside_gavel_resumes_where_it_lies() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = std::fs::canonicalize(dir.path()).unwrap_or_else(|e| panic!("{e}"));
        let (orig, copy) = (root.join("orig"), root.join("copy"));
        for d in [&orig, &copy] {
            std::fs::create_dir_all(d.join("records")).unwrap_or_else(|e| panic!("{e}"));
        }
        let then = orig.join("records/r.jsonl").display().to_string();
        let started = orig.display().to_string();
        let in_copy = copy.join("records/r.jsonl");
        let found = resume_folder(&in_copy, None, &started, Some((&started, &then)))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(found.workspace, copy);
        assert!(found.note.as_deref().is_some_and(|n| n.contains(&started)), "{found:?}");
        // Where it started: quietly there.
        let same = resume_folder(Path::new(&then), None, &started, Some((&started, &then)))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(same, ResumeFolder { workspace: orig.clone(), note: None });
        // Moved to another place below a folder: the recorded folder, noted.
        let moved = root.join("elsewhere.jsonl");
        let fallback =
            resume_folder(&moved, None, &started, Some((&started, &then))).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(fallback.workspace, orig);
        assert!(fallback.note.is_some());
        // A record that started outside its workspace gives no such folder.
        let outside = root.join("r.jsonl").display().to_string();
        assert_eq!(folder_beside(&in_copy, &started, &outside), None);
    }

    #[test]
    fn run_ids_sort_by_time_and_are_usable() {
        let a = new_run_id("wf", "2026-11-30T08:41:54.123Z".parse().unwrap_or_default());
        let b = new_run_id("wf", "2026-11-30T08:41:55.001Z".parse().unwrap_or_default());
        assert_eq!(a, "wf-20261130T084154123Z");
        assert!(a < b);
        assert!(check_run_id(&a).is_ok());
        assert!(check_run_id("../x").is_err());
        assert!(check_run_id("").is_err());
    }

    #[test]
    fn a_record_path_that_is_not_a_file_is_named_as_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let err = locate("/dev/zero", dir.path()).unwrap_err();
        assert!(err.starts_with("/dev/zero: cannot read the record: it is a character device"), "{err}");
        let err = locate("nope/events.jsonl", dir.path()).unwrap_err();
        assert!(err.starts_with("no record at nope/events.jsonl"), "{err}");
    }
}
