//! Where a goal lives on disk and the one way its record is opened: the lock
//! first, then the read, then a writer that appends after what was read.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use gavel_record::write::Durability;
use gavel_record::{Envelope, LockError, RecordWriter, RunLock, read_record_typed};

use crate::GoalError;
use crate::event::GoalEvent;
use crate::file::check_goal_id;
use crate::state::GoalState;

/// The folder, under a project root, that holds the goals.
pub const GOALS_DIR: &str = ".gavel/goals";
/// The goal file's name in its folder.
pub const GOAL_FILE: &str = "goal.yaml";
/// The record's name in the goal's folder.
pub const RECORD_FILE: &str = "events.jsonl";
/// The readable view's name in the goal's folder.
pub const STATE_FILE: &str = "state.md";

/// The files of one goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoalPaths {
    /// The goal's id.
    pub id: String,
    /// The project root: the folder holding `.gavel`.
    pub root: PathBuf,
    /// `.gavel/goals/<id>`.
    pub dir: PathBuf,
    /// `goal.yaml`.
    pub file: PathBuf,
    /// `events.jsonl`.
    pub record: PathBuf,
    /// `state.md`.
    pub state_md: PathBuf,
}

impl GoalPaths {
    /// The paths of goal `id` under `root`; refuses an id that cannot name a folder.
    pub fn new(root: &Path, id: &str) -> Result<Self, GoalError> {
        check_goal_id(id).map_err(GoalError::Refused)?;
        let dir = root.join(GOALS_DIR).join(id);
        Ok(Self {
            id: id.to_owned(),
            root: root.to_owned(),
            file: dir.join(GOAL_FILE),
            record: dir.join(RECORD_FILE),
            state_md: dir.join(STATE_FILE),
            dir,
        })
    }

    /// The paths of an existing goal: a clear error when there is none.
    pub fn existing(root: &Path, id: &str) -> Result<Self, GoalError> {
        let paths = Self::new(root, id)?;
        // A goal.yaml that is there but is no regular file (a FIFO, a
        // device, a folder) is named as what it is, not as a missing goal.
        if let Err(err) = gavel_fs::read::check_absent_or_regular(&paths.file, gavel_fs::read::UserFile::Goal)
        {
            return Err(GoalError::File(Box::new(
                gavel_domain::Located::about_file(&paths.file, err.message()).with_hint(err.hint()),
            )));
        }
        if !paths.file.is_file() && !paths.record.is_file() {
            let known = list_goal_ids(root);
            let hint = if known.is_empty() {
                "create one with `gavel goal new ID --title ... --criterion \"text::command\"`".to_owned()
            } else {
                format!("goals here: {}", known.join(", "))
            };
            return Err(GoalError::Refused(format!(
                "no goal `{id}` under {}; {hint}",
                root.join(GOALS_DIR).display()
            )));
        }
        Ok(paths)
    }

    /// A run's folder.
    pub fn run_dir(&self, run_id: &str) -> PathBuf {
        self.dir.join("runs").join(run_id)
    }

    /// A run's evidence folder.
    pub fn evidence_dir(&self, run_id: &str) -> PathBuf {
        self.run_dir(run_id).join("evidence")
    }

    /// `path` relative to the project root, with `/` separators, for the
    /// record and messages.
    pub fn from_root(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
    }
}

/// The nearest folder, from `start` up, that holds `.gavel/goals`.
pub fn find_root(start: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(start).unwrap_or_else(|_| start.to_owned());
    start.ancestors().find(|dir| dir.join(GOALS_DIR).is_dir()).map(Path::to_owned)
}

/// The ids of the goals under `root`, sorted.
pub fn list_goal_ids(root: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(root.join(GOALS_DIR)) else { return Vec::new() };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().is_dir())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|id| check_goal_id(id).is_ok())
        .collect();
    ids.sort();
    ids
}

/// A goal's record as read, folded.
#[derive(Debug, Clone, PartialEq)]
pub struct GoalView {
    /// The fold.
    pub state: GoalState,
    /// Every event.
    pub events: Vec<Envelope<GoalEvent>>,
    /// A warning about a torn last line (a crash mid-write), if any.
    pub warning: Option<String>,
}

/// Refuses a goal record that exists and is not a regular file (a FIFO
/// would hang the reader and the writer, a device would never end): it is
/// not "no record yet".
fn check_record(paths: &GoalPaths) -> Result<(), GoalError> {
    gavel_fs::read::check_absent_or_regular(&paths.record, gavel_fs::read::UserFile::Record)
        .map_err(|e| GoalError::Read(gavel_record::ReadError::NotAFile(e)))
}

/// Reads a goal's record without the lock: for views that write nothing.
pub fn read_state(paths: &GoalPaths) -> Result<GoalView, GoalError> {
    check_record(paths)?;
    if !paths.record.is_file() {
        return Ok(GoalView { state: GoalState::default(), events: Vec::new(), warning: None });
    }
    let recording = read_record_typed::<GoalEvent>(&paths.record)?;
    let warning = recording.torn.as_ref().map(|t| t.warning(&paths.record));
    let state = GoalState::fold(&recording.events);
    Ok(GoalView { state, events: recording.events, warning })
}

/// A goal's record, open for appending: the lock is held until it is dropped.
#[derive(Debug)]
pub struct GoalRecord {
    /// The goal's files.
    pub paths: GoalPaths,
    writer: Writer,
    events: Vec<Envelope<GoalEvent>>,
    state: GoalState,
    /// A torn last line that was cut when the record was opened.
    pub torn_warning: Option<String>,
}

impl GoalRecord {
    /// Locks and reads the goal's record. A missing record reads as empty
    /// and is created by the first append, so a step refused before it
    /// records anything leaves no record behind.
    pub fn open(paths: &GoalPaths) -> Result<Self, GoalError> {
        std::fs::create_dir_all(&paths.dir).map_err(|source| GoalError::io(&paths.dir, source))?;
        let lock = RunLock::acquire(&paths.record).map_err(|err| busy(&paths.id, err))?;
        check_record(paths)?;
        let (writer, events, torn_warning) = if paths.record.is_file() {
            let recording = read_record_typed::<GoalEvent>(&paths.record)?;
            let torn = recording.torn.as_ref().map(|t| t.warning(&paths.record));
            let writer = RecordWriter::resume_typed(&paths.record, lock, &recording, Durability::Synced)?;
            (Writer::Open(writer), recording.events, torn)
        } else {
            (Writer::NotYet(Some(lock)), Vec::new(), None)
        };
        let state = GoalState::fold(&events);
        Ok(Self { paths: paths.clone(), writer, events, state, torn_warning })
    }

    /// The state folded so far.
    pub fn state(&self) -> &GoalState {
        &self.state
    }

    /// Every event so far.
    pub fn events(&self) -> &[Envelope<GoalEvent>] {
        &self.events
    }

    /// Appends one event (durable on return) and folds it in.
    pub fn append(&mut self, event: GoalEvent) -> Result<(), GoalError> {
        if let Writer::NotYet(lock) = &mut self.writer {
            let lock = lock.take().ok_or_else(|| {
                GoalError::Internal(format!(
                    "the record {} could not be started",
                    self.paths.record.display()
                ))
            })?;
            let empty = gavel_record::Recording::default();
            let writer = RecordWriter::resume_typed(&self.paths.record, lock, &empty, Durability::Synced)?;
            self.writer = Writer::Open(writer);
        }
        let Writer::Open(writer) = &mut self.writer else {
            return Err(GoalError::Internal("the record writer is missing".to_owned()));
        };
        // Scrubbed of every secret the process knows: the one door into a
        // goal's record.
        let envelope = writer.append(gavel_seats::secret::scrub_value(event))?;
        self.state.apply(&envelope);
        self.events.push(envelope);
        Ok(())
    }

    /// Rewrites `state.md` from the record.
    pub fn write_state_md(&self) -> Result<(), GoalError> {
        write_state_md(&self.paths, &self.state, &self.events)
    }
}

/// The record's writer, made on the first append when the record is new.
#[derive(Debug)]
enum Writer {
    /// The record exists: appending after what was read.
    Open(RecordWriter<GoalEvent>),
    /// No record yet: the lock is held, the file made on the first append.
    /// `None` only if making it failed.
    NotYet(Option<RunLock>),
}

/// Rewrites `state.md` from a folded record; the view is derived, so losing
/// it (or failing to write it) loses nothing.
pub fn write_state_md(
    paths: &GoalPaths,
    state: &GoalState,
    events: &[Envelope<GoalEvent>],
) -> Result<(), GoalError> {
    // Plain text: a record written before output was cleaned may still
    // carry escape codes in a summary or a note.
    let text = gavel_process::plain::plain_text(crate::view::state_md(paths, state, events).as_bytes());
    write_atomic(&paths.state_md, text.as_bytes())
}

fn busy(id: &str, err: LockError) -> GoalError {
    match err {
        LockError::Held { holder, .. } => GoalError::Refused(format!(
            "goal `{id}` is busy: another gavel process{holder} is working on it; wait for it to finish, then run the command again"
        )),
        LockError::Io { record, source } => GoalError::io(&record, source),
    }
}

/// Writes a file whole or not at all: a temporary file beside it, synced,
/// then renamed over it.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), GoalError> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    std::fs::create_dir_all(dir).map_err(|source| GoalError::io(dir, source))?;
    let mut name = path.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
    name.push(format!(".tmp-{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_data()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(source) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(GoalError::io(path, source));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::event::{Created, GoalStatus, StatusChange};
    use pretty_assertions::assert_eq;

    fn created() -> GoalEvent {
        GoalEvent::Created(Created {
            goal_id: "g".into(),
            title: "t".into(),
            digest: "ab".repeat(32),
            base_commit: Some("cd".repeat(20)),
            root: "/p".into(),
            gavel: "0.1.0".into(),
            adopted: false,
        })
    }

    #[test]
    fn a_goal_record_uses_the_run_records_envelope_writer_and_reader() {
        let dir = tempfile::tempdir().unwrap();
        let paths = GoalPaths::new(dir.path(), "g").unwrap();
        {
            let mut record = GoalRecord::open(&paths).unwrap();
            assert!(!paths.record.exists(), "nothing is written before the first event");
            record.append(created()).unwrap();
            record
                .append(GoalEvent::Status(StatusChange {
                    from: GoalStatus::Active,
                    to: GoalStatus::WaitingForCi,
                    reason: "ci".into(),
                    by: crate::event::Actor::Person,
                }))
                .unwrap();
            // One process at a time, with a goal-worded message.
            let err = GoalRecord::open(&paths).unwrap_err().to_string();
            assert!(err.contains("goal `g` is busy"), "{err}");
        }
        let text = std::fs::read_to_string(&paths.record).unwrap();
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["v"], 1);
        assert_eq!(first["seq"], 1);
        assert_eq!(first["kind"], "goal:created");
        assert_eq!(first["data"]["goal_id"], "g");
        let view = read_state(&paths).unwrap();
        assert_eq!(view.state.status, GoalStatus::WaitingForCi);
        assert_eq!(view.events.len(), 2);

        // A torn last line is cut when the record is opened for writing.
        let mut bytes = std::fs::read(&paths.record).unwrap();
        let whole = bytes.len();
        bytes.extend_from_slice(b"{\"v\":1,\"seq\":3,\"at\"");
        std::fs::write(&paths.record, &bytes).unwrap();
        let record = GoalRecord::open(&paths).unwrap();
        assert!(record.torn_warning.is_some());
        drop(record);
        assert_eq!(std::fs::read(&paths.record).unwrap().len(), whole);
    }

    #[test]
    fn a_run_event_in_a_goal_record_is_refused_by_line() {
        let dir = tempfile::tempdir().unwrap();
        let paths = GoalPaths::new(dir.path(), "g").unwrap();
        std::fs::create_dir_all(&paths.dir).unwrap();
        std::fs::write(
            &paths.record,
            "{\"v\":1,\"seq\":1,\"at\":\"2026-01-01T00:00:00Z\",\"kind\":\"stage:start\",\"data\":{\"stage\":\"w\",\"round\":1}}\n",
        )
        .unwrap();
        let err = read_state(&paths).unwrap_err().to_string();
        assert!(err.contains("events.jsonl:1") && err.contains("unknown event kind `stage:start`"), "{err}");
    }
}
