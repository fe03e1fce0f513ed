//! Failing to start a process. Everything after a successful start is an
//! [`Outcome`](crate::Outcome), not an error.

use std::io;
use std::path::PathBuf;

/// Why a process could not be started (or, rarely, could not be waited on).
///
/// Messages name the program and the working directory, because the person
/// reading them usually wrote a workflow file, not the code that spawned.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    /// The program does not exist at the given path, or is not on the
    /// `PATH` the child would see.
    #[error("program `{program}` not found ({searched}; cwd {})", cwd.display())]
    NotFound {
        /// The program as given in the spec.
        program: String,
        /// The working directory of the would-be child.
        cwd: PathBuf,
        /// Where it was looked for, e.g. "searched PATH=/usr/bin:/bin".
        searched: String,
    },
    /// The program exists but may not be executed.
    #[error("program `{program}` is not executable (permission denied; cwd {})", cwd.display())]
    PermissionDenied {
        /// The program as given in the spec.
        program: String,
        /// The working directory of the would-be child.
        cwd: PathBuf,
    },
    /// The working directory is missing or not a directory; reported on its
    /// own so it is not mistaken for a missing program.
    #[error("cannot run `{program}`: working directory {} is unusable: {source}", cwd.display())]
    Cwd {
        /// The program as given in the spec.
        program: String,
        /// The offending working directory.
        cwd: PathBuf,
        /// What the file system said.
        source: io::Error,
    },
    /// Any other failure to start the process.
    #[error("failed to start `{program}` in {}: {source}", cwd.display())]
    Io {
        /// The program as given in the spec.
        program: String,
        /// The working directory of the would-be child.
        cwd: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The process started but waiting for it failed; its group has been
    /// killed. This indicates a broken runtime, not a misbehaving child.
    #[error("failed to wait for `{program}` in {}: {source}", cwd.display())]
    Wait {
        /// The program as given in the spec.
        program: String,
        /// The working directory of the child.
        cwd: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}
