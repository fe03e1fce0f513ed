//! The file boundary: every byte gavel writes for a seat and every user file
//! it reads goes through here.
//!
//! - [`write`]: one guarded write path for files any seat or worker
//!   produces: paths are resolved component by component without following
//!   a symbolic link out of the workspace; gavel's own state (`.gavel/`) and
//!   git's (`.git/`) are refused; bytes land by temp file, fsync, rename and
//!   a sync of the folder, so a failed write never leaves a truncated file.
//! - [`snapshot`]: for agent CLIs, which edit files with their own tools:
//!   a snapshot of the workspace before a request, compared after it; what
//!   changed outside the request's `writes` is undone and named.
//! - [`scope`]: the process-wide register of requests writing right now
//!   (parallel nodes) and of gavel's own files, which snapshots leave alone.
//! - [`read`]: bounded reads of user files (workflows, briefs, scripts,
//!   answers, goal files, prompts): a regular file under a documented size
//!   limit, or a clear error in milliseconds, never an endless read of a
//!   device or a hang on a FIFO.
//!
//! It must not know about seats, stages or the record: callers turn its
//! errors into their own.

pub mod read;
pub mod scope;
pub mod snapshot;
pub mod write;
