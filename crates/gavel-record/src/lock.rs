//! The run lock: one process works on a run at a time.
//!
//! An advisory `flock` on `<record>.lock`, which the kernel drops when the
//! holder dies, so a crashed run never stays locked. The holder's pid is
//! written into the file so the second process can say who holds it.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

/// Why a run could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process works on this run.
    #[error(
        "the run at {record} is locked: another gavel process{holder} is working on it; wait for it to finish or stop it, then run the command again"
    )]
    Held {
        /// The record's path.
        record: PathBuf,
        /// " (pid N)" when known.
        holder: String,
    },
    /// The lock file could not be opened or locked.
    #[error("cannot lock the run at {record}: {source}")]
    Io {
        /// The record's path.
        record: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// A held run lock; dropping it releases the run.
#[derive(Debug)]
pub struct RunLock {
    _file: Flock<File>,
}

impl RunLock {
    /// The lock file that guards `record`.
    pub fn path_for(record: &Path) -> PathBuf {
        let mut name = record.file_name().map(std::ffi::OsStr::to_os_string).unwrap_or_default();
        name.push(".lock");
        record.with_file_name(name)
    }

    /// The pid of a live gavel process that holds (or last held) the run's
    /// lock, read without touching the lock, so a look never gets in the way
    /// of a process about to take it.
    pub fn holder(record: &Path) -> Option<u32> {
        let pid: u32 = std::fs::read_to_string(Self::path_for(record)).ok()?.trim().parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let alive = String::from_utf8_lossy(&cmdline).contains("gavel") && pid != std::process::id();
        alive.then_some(pid)
    }

    /// Takes the run's lock without waiting; a clear error if another holds it.
    pub fn acquire(record: &Path) -> Result<Self, LockError> {
        let path = Self::path_for(record);
        let io = |source| LockError::Io { record: record.to_owned(), source };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let file =
            OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut locked) => {
                // Best effort: the pid only improves the other process's message.
                let _ = locked.set_len(0);
                let _ = locked.seek(SeekFrom::Start(0));
                let _ = write!(locked, "{}", std::process::id());
                Ok(Self { _file: locked })
            }
            Err((mut file, Errno::EWOULDBLOCK)) => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim();
                let holder = if pid.is_empty() { String::new() } else { format!(" (pid {pid})") };
                Err(LockError::Held { record: record.to_owned(), holder })
            }
            Err((_, errno)) => Err(io(std::io::Error::from(errno))),
        }
    }
}
