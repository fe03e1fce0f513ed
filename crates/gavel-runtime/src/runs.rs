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

#[cfg(test)]
mod tests {
    use super::*;

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
