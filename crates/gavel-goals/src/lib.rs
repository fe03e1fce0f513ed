//! gavel's goals: outcomes with acceptance criteria that
//! commands prove.
//!
//! This crate owns the goal file (`.gavel/goals/<id>/goal.yaml`: reading,
//! checking with file/line/column errors, its JSON Schema), the evaluator
//! (deterministic checks first: every criterion command runs, an evidence file
//! per criterion, the path boundary against the goal's base commit, and a
//! judge seat only for criteria without a command), the lifecycle (non-terminal
//! statuses written directly, terminal ones only proposed until a person
//! confirms, stuck detection), the goal's record and its fold, the `state.md`
//! view, and the Claude Code stop hook (deciding, and installing it).
//!
//! It must not bypass `gavel-record` for state: every fact lands in the goal's
//! `events.jsonl` through the record writer, under the record's rules, and every
//! view (status, list, `state.md`, the hook's choices) is a fold of it. It
//! must not print: the command line shows what these functions return. It
//! spawns nothing itself: commands and `git` go through `gavel-process`, judge
//! requests through `gavel-seats`.

pub mod evaluate;
pub mod event;
pub mod evidence;
pub mod exec;
pub mod file;
pub mod hook;
pub mod judge;
pub mod lifecycle;
pub mod state;
pub mod store;
pub mod view;

use std::path::Path;

use gavel_domain::Located;
use gavel_record::{ReadError, WriteError};
use sha2::{Digest as _, Sha256};

pub use evaluate::{EvaluateRequest, Evaluation, evaluate};
pub use event::{GoalEvent, GoalStatus, Trigger, Verdict};
pub use file::{GoalFile, LoadedGoal};
pub use state::GoalState;
pub use store::{GoalPaths, GoalRecord, find_root};

/// Why a goal command could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum GoalError {
    /// A file the user wrote is wrong (goal.yaml, a judge's script).
    #[error(transparent)]
    File(Box<Located>),
    /// Something the user must change (an unknown goal, a finished goal, a
    /// run id already used, a busy goal).
    #[error("{0}")]
    Refused(String),
    /// The goal's record cannot be read (damaged, or from a newer gavel).
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The goal's record cannot be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// Another file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Anything else that is gavel's fault, not the user's.
    #[error("{0}")]
    Internal(String),
}

impl GoalError {
    /// An IO error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        GoalError::Io { path: path.to_owned(), source }
    }
}

impl From<Box<Located>> for GoalError {
    fn from(located: Box<Located>) -> Self {
        GoalError::File(located)
    }
}

/// SHA-256 of `bytes`, as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
