//! gavel's run record: the append-only JSONL event log that is the only source
//! of truth for a run.
//!
//! This crate owns the on-disk format and nothing else: the envelope
//! (`{"v","seq","at","kind","data"}`), the event kinds as types, the writer that
//! syncs every event before the step it records counts as done, the reader that
//! cuts a torn last line and rejects any other bad line by number, the lock that
//! keeps two processes off one run, the fold from events to run state, and the
//! documented exit codes.
//!
//! It must not know about seats, workflows or rounds beyond the event types:
//! the runtime decides what to record, this crate only makes it durable.
//!
//! Other logs with the same rules (a goal's record, `gavel-goals`) bring their
//! own event enum through [`RecordEvent`] and use the same envelope, writer
//! and reader (`RecordWriter::<E>::create_typed`, `read_record_typed::<E>`);
//! the run record's types are the defaults, so run code never names `E`.
//!
//! ## Format-change checklist
//!
//! The record is a persisted, pinned format. Before changing anything here:
//! 1. Adding a field: make it `#[serde(default)]` so older records still read.
//! 2. Adding an event kind: add a variant; older gavel versions will refuse the
//!    record with a clear "written by a newer gavel" message, never misread it.
//! 3. Removing or renaming a field or kind, or changing a meaning: bump
//!    [`FORMAT_VERSION`] and keep reading the old version or refuse it clearly.

pub mod event;
pub mod exit;
pub mod fold;
pub mod lock;
pub mod read;
pub mod write;

pub use event::{Envelope, Event, RecordEvent};
pub use fold::{RunState, RunStatus};
pub use lock::{LockError, RunLock};
pub use read::{ReadError, Recording, read_record, read_record_typed};
pub use write::{RecordWriter, WriteError};

/// The record format's major version, written as `v` on every line.
pub const FORMAT_VERSION: u32 = 1;
