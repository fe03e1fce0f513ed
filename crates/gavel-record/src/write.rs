//! The record writer: one line per event, one `write` per line, synced before
//! the step it records counts as done.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use gavel_fs::scope::{Owned, own};

use jiff::{Timestamp, Unit};

use crate::FORMAT_VERSION;
use crate::event::{Envelope, Event, RecordEvent};
use crate::lock::{LockError, RunLock};
use crate::read::Recording;

/// Whether each append waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fdatasync after every event that completes a step (see
    /// [`crate::event::RecordEvent::completes_a_step`]): a step counts as
    /// done only once its event is on disk. The only mode a real run uses.
    Synced,
    /// No sync: for benchmarks that measure the cost of durability.
    Unsynced,
}

/// Why an event could not be made durable.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// Another process holds the run.
    #[error(transparent)]
    Locked(#[from] LockError),
    /// A new run was asked for where a record already has events.
    #[error(
        "{path} already holds a record; resume it with `gavel resume {path}` or choose another --run-id/--record"
    )]
    Exists {
        /// The record's path.
        path: PathBuf,
    },
    /// The file system refused (disk full, permissions, ...).
    #[error("cannot write the record {path}: {source}")]
    Io {
        /// The record's path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The file on disk is no longer the one this writer has been appending
    /// to: deleted, replaced, truncated or appended to by another program.
    #[error(
        "the record {path} was changed by something other than gavel ({what}); gavel stopped rather than append to a damaged or deleted record. Put the record back as it was (from a backup or a copy), then `gavel resume` the run, or start a new run"
    )]
    Changed {
        /// The record's path.
        path: PathBuf,
        /// What is different.
        what: String,
    },
    /// The record's path is not a regular file (a FIFO, a device, a
    /// folder): appending to it could block or lose the events.
    #[error("{0}")]
    NotAFile(gavel_fs::read::ReadError),
    /// An event holds a value its reader would reject (a number that is not
    /// finite): refused, so the record stays one gavel can read.
    #[error("cannot write a `{kind}` event to the record {path}: {message}")]
    Unwritable {
        /// The record's path.
        path: PathBuf,
        /// The event's kind.
        kind: String,
        /// What is wrong with it.
        message: String,
    },
    /// An earlier append failed; the writer refuses more so no gap can appear.
    #[error(
        "the record {path} could not be written earlier in this process; resume the run once the cause is fixed"
    )]
    Poisoned {
        /// The record's path.
        path: PathBuf,
    },
}

/// The fault-injection hook for crash tests: with `GAVEL_CRASH_AFTER_SEQ=k`
/// in its environment, a process kills itself with SIGKILL right after the
/// event with `seq` k is durable, the way a power cut or `kill -9` would.
/// Tests use it to cut a run at every record line deterministically.
pub const CRASH_AFTER_SEQ_ENV: &str = "GAVEL_CRASH_AFTER_SEQ";

/// Appends events to one run's record, holding the run's lock.
///
/// Generic over the event type so a goal's record shares the same rules;
/// `E` defaults to the run record's [`Event`].
#[derive(Debug)]
pub struct RecordWriter<E = Event> {
    path: PathBuf,
    file: File,
    /// Bytes known to be whole events; a failed append truncates back to it.
    len: u64,
    next_seq: u64,
    durability: Durability,
    poisoned: bool,
    crash_after: Option<u64>,
    /// The record file's identity when opened: every append checks that
    /// the path still names this very file.
    identity: (u64, u64),
    /// The file's status-change time after this writer's last write (or
    /// open): any other write, even one that keeps the length, moves it.
    changed: (i64, i64),
    /// The record and its lock, registered so a workspace snapshot around
    /// an agent CLI never takes gavel's own appends for the agent's.
    _owned: [Owned; 2],
    _lock: RunLock,
    _events: std::marker::PhantomData<fn(E)>,
}

impl RecordWriter {
    /// Starts a new run record at `path`, creating its directory. Refuses a
    /// path that already holds events, and a run another process holds.
    pub fn create(path: &Path, durability: Durability) -> Result<Self, WriteError> {
        Self::create_typed(path, durability)
    }

    /// Opens an existing run record to go on appending after what
    /// `recording` read from it (see [`RecordWriter::resume_typed`]).
    pub fn resume(
        path: &Path,
        lock: RunLock,
        recording: &Recording,
        durability: Durability,
    ) -> Result<Self, WriteError> {
        Self::resume_typed(path, lock, recording, durability)
    }
}

impl<E: RecordEvent> RecordWriter<E> {
    /// Starts a new record of event type `E` at `path`, creating its
    /// directory. Refuses a path that already holds events, and a record
    /// another process holds.
    pub fn create_typed(path: &Path, durability: Durability) -> Result<Self, WriteError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| io(path, source))?;
        }
        // Before the lock and the open: opening a FIFO to append waits for a
        // reader, and a device or a folder never holds a record.
        gavel_fs::read::check_absent_or_regular(path, gavel_fs::read::UserFile::Record)
            .map_err(WriteError::NotAFile)?;
        let lock = RunLock::acquire(path)?;
        let file = open_append(path)?;
        let len = file.metadata().map_err(|source| io(path, source))?.len();
        if len > 0 {
            // A record whose only line was torn by a crash holds no event: the
            // run never started, so its id may be used again.
            let bytes = std::fs::read(path).map_err(|source| io(path, source))?;
            let empty = crate::read::parse_record_typed::<E>(path, &bytes).is_ok_and(|r| r.events.is_empty());
            if !empty {
                return Err(WriteError::Exists { path: path.to_owned() });
            }
            file.set_len(0).map_err(|source| io(path, source))?;
        }
        Ok(Self {
            path: path.to_owned(),
            identity: identity(path, &file)?,
            changed: changed_time(path, &file)?,
            _owned: owned(path),
            file,
            len: 0,
            next_seq: 1,
            durability,
            poisoned: false,
            crash_after: crash_after(),
            _lock: lock,
            _events: std::marker::PhantomData,
        })
    }

    /// Opens an existing record to go on appending after what `recording`
    /// read from it. A torn last line is cut off first (its step never
    /// counted as done). The lock must be taken before the record is read, so
    /// the caller passes the lock it holds.
    pub fn resume_typed(
        path: &Path,
        lock: RunLock,
        recording: &Recording<E>,
        durability: Durability,
    ) -> Result<Self, WriteError> {
        let file = open_append(path)?;
        let on_disk = file.metadata().map_err(|source| io(path, source))?.len();
        if on_disk != recording.valid_len {
            // `set_len` works on an O_APPEND descriptor; later appends land at the new end.
            file.set_len(recording.valid_len).map_err(|source| io(path, source))?;
            file.sync_all().map_err(|source| io(path, source))?;
        }
        Ok(Self {
            path: path.to_owned(),
            identity: identity(path, &file)?,
            changed: changed_time(path, &file)?,
            _owned: owned(path),
            file,
            len: recording.valid_len,
            next_seq: recording.events.last().map_or(1, |e| e.seq + 1),
            durability,
            poisoned: false,
            crash_after: crash_after(),
            _lock: lock,
            _events: std::marker::PhantomData,
        })
    }

    /// The record's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The `seq` the next event will get.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Appends one event, stamped now, and returns its envelope once durable.
    pub fn append(&mut self, event: E) -> Result<Envelope<E>, WriteError> {
        let at = Timestamp::now().round(Unit::Millisecond).unwrap_or_else(|_| Timestamp::now());
        self.append_at(event, at)
    }

    /// Appends one event without syncing, whatever its kind: for a batch of
    /// results that landed together, whose last append is synced with
    /// [`Self::append`] (a sync covers every earlier byte).
    pub fn append_unsynced(&mut self, event: E) -> Result<Envelope<E>, WriteError> {
        let durability = self.durability;
        self.durability = Durability::Unsynced;
        let result = self.append(event);
        self.durability = durability;
        result
    }

    /// Appends one event with a given timestamp (tests and imports).
    pub fn append_at(&mut self, event: E, at: Timestamp) -> Result<Envelope<E>, WriteError> {
        if self.poisoned {
            return Err(WriteError::Poisoned { path: self.path.clone() });
        }
        if let Some(what) = self.changed_behind_our_back() {
            self.poisoned = true;
            return Err(WriteError::Changed { path: self.path.clone(), what });
        }
        let envelope = Envelope { v: FORMAT_VERSION, seq: self.next_seq, at, event };
        // One buffer, one write: a crash leaves at most one torn line at the end.
        // A value the reader would reject (a number that is not finite) is
        // refused here, before a byte is written: the record stays readable.
        let mut line = serde_json::to_vec(&envelope).map_err(|err| WriteError::Unwritable {
            path: self.path.clone(),
            kind: envelope.event.kind_name().to_owned(),
            message: err.to_string(),
        })?;
        line.push(b'\n');
        let sync = self.durability == Durability::Synced && envelope.event.completes_a_step();
        if let Err(source) = self.write_durably(&line, sync) {
            self.poisoned = true;
            // Take back a partial line so the file still ends on a whole event;
            // if even that fails, the reader cuts the torn tail on resume.
            let _ = self.file.set_len(self.len);
            return Err(io(&self.path, source));
        }
        self.len += line.len() as u64;
        self.next_seq += 1;
        if let Ok(meta) = self.file.metadata() {
            self.changed = (meta.ctime(), meta.ctime_nsec());
        }
        if self.crash_after == Some(envelope.seq) {
            let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
        }
        Ok(envelope)
    }

    /// What is wrong with the record file, if it is no longer exactly what
    /// this writer wrote: the path gone or naming another file, the open
    /// file unlinked, or a length other than the bytes appended. Two `stat`
    /// calls, a few microseconds.
    fn changed_behind_our_back(&self) -> Option<String> {
        match std::fs::metadata(&self.path) {
            Ok(meta) if (meta.dev(), meta.ino()) == self.identity => {}
            Ok(_) => return Some("it was replaced by another file".to_owned()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Some("it was moved or deleted".to_owned());
            }
            Err(e) => return Some(format!("it cannot be examined: {e}")),
        }
        let open = match self.file.metadata() {
            Ok(meta) => meta,
            Err(e) => return Some(format!("it cannot be examined: {e}")),
        };
        if open.nlink() == 0 {
            return Some("it was deleted".to_owned());
        }
        if open.len() != self.len {
            return Some(format!(
                "it is {} bytes long, but gavel has written {} bytes to it",
                open.len(),
                self.len
            ));
        }
        if (open.ctime(), open.ctime_nsec()) != self.changed {
            return Some("it was written (or its permissions changed) since gavel last wrote it".to_owned());
        }
        None
    }

    fn write_durably(&mut self, line: &[u8], sync: bool) -> std::io::Result<()> {
        self.file.write_all(line)?;
        if sync {
            self.file.sync_data()?;
        }
        Ok(())
    }
}

fn crash_after() -> Option<u64> {
    std::env::var(CRASH_AFTER_SEQ_ENV).ok().and_then(|v| v.trim().parse().ok())
}

/// The (device, inode) of the open record file.
fn identity(path: &Path, file: &File) -> Result<(u64, u64), WriteError> {
    let meta = file.metadata().map_err(|source| io(path, source))?;
    Ok((meta.dev(), meta.ino()))
}

/// The open record's status-change time.
fn changed_time(path: &Path, file: &File) -> Result<(i64, i64), WriteError> {
    let meta = file.metadata().map_err(|source| io(path, source))?;
    Ok((meta.ctime(), meta.ctime_nsec()))
}

/// Registers the record and its lock as gavel's own files.
fn owned(path: &Path) -> [Owned; 2] {
    [own(path), own(&RunLock::path_for(path))]
}

fn open_append(path: &Path) -> Result<File, WriteError> {
    // Opening a FIFO for writing waits for a reader: refuse anything but a
    // regular file (or nothing yet) before opening.
    gavel_fs::read::check_absent_or_regular(path, gavel_fs::read::UserFile::Record)
        .map_err(WriteError::NotAFile)?;
    OpenOptions::new().create(true).append(true).open(path).map_err(|source| io(path, source))
}

fn io(path: &Path, source: std::io::Error) -> WriteError {
    WriteError::Io { path: path.to_owned(), source }
}
