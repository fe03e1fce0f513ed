//! What the record says was built, checked against a workspace before a run
//! continues there (resume, approve).
//!
//! Resume is replay: every decision on record was made about files with the
//! recorded SHA-256. Going on with other bytes (a copy edited since, a file
//! deleted, a folder that is not the one the run worked in) would let later
//! steps rest on decisions about bytes nobody checked, so a run continues
//! only where the files match.
//!
//! **Only the latest recorded state of each path counts.** The record is
//! walked in order and each event that observes files sets their state:
//! `build:done` (its `files` and `missing`), `approval:request` (the bytes a
//! person was asked about) and `check:run` (the files after a command, which
//! may legitimately rewrite them, e.g. a formatter). A later stage that
//! rewrote a file therefore replaces its earlier state. A step that was cut
//! off before its result was recorded may have changed files legitimately,
//! and replay performs it again, so its files are not checked: a builder
//! whose request has no later `build:done` (its `writes`), and a command or
//! job whose stage started without a `check:run` / `job:done` (every file:
//! the record cannot say what it touched).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gavel_domain::Access;
use gavel_record::{Envelope, Event};
use sha2::{Digest as _, Sha256};

use crate::workflow::{StageKind, Workflow};

/// How a file differs from what the record says was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Divergence {
    /// Its bytes changed: the recorded SHA-256 and the current one.
    Changed {
        /// The SHA-256 on record.
        recorded: String,
        /// The SHA-256 of the bytes there now.
        now: String,
    },
    /// It was built, and is gone.
    Missing,
    /// The record says it was missing, and it is there.
    Present,
    /// Something other than a regular file is there now (a folder, a FIFO).
    NotAFile,
}

impl Divergence {
    /// In a few words, for the message that names the file.
    pub fn describe(&self) -> String {
        match self {
            Divergence::Changed { recorded, now } => format!(
                "changed since it was recorded (SHA-256 {} on record, {} now)",
                short(recorded),
                short(now)
            ),
            Divergence::Missing => "missing (the record says it was built)".to_owned(),
            Divergence::Present => "present (the record says it was missing)".to_owned(),
            Divergence::NotAFile => "not a regular file now".to_owned(),
        }
    }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// What the record last saw of one path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// These bytes.
    Sha(String),
    /// No file.
    Missing,
    /// A step that may have changed it was cut off: not checked.
    Unknown,
}

/// Every file whose latest recorded state differs from `workspace`, by path.
pub fn differences(events: &[Envelope], workflow: &Workflow, workspace: &Path) -> Vec<(String, Divergence)> {
    let seen = latest_states(events, workflow);
    let mut out = Vec::new();
    for (path, seen) in seen {
        if seen == Seen::Unknown {
            continue;
        }
        let divergence = match (seen, observe(&workspace.join(&path))) {
            (Seen::Sha(recorded), Now::File(now)) if recorded != now => Divergence::Changed { recorded, now },
            (Seen::Sha(_), Now::Absent) => Divergence::Missing,
            (Seen::Missing, Now::File(_)) => Divergence::Present,
            (_, Now::Other) => Divergence::NotAFile,
            _ => continue,
        };
        out.push((path, divergence));
    }
    out
}

/// The latest recorded state of each path (see the module docs).
fn latest_states(events: &[Envelope], workflow: &Workflow) -> BTreeMap<String, Seen> {
    let writes_of = |stage: &str| -> &[String] {
        match workflow.stages.iter().find(|s| s.name == stage).map(|s| &s.kind) {
            Some(StageKind::Build(build)) => &build.writes,
            _ => &[],
        }
    };
    let acts_on_files = |stage: &str| {
        matches!(
            workflow.stages.iter().find(|s| s.name == stage).map(|s| &s.kind),
            Some(StageKind::Run(_) | StageKind::Job(_))
        )
    };
    let mut seen: BTreeMap<String, Seen> = BTreeMap::new();
    // Commands and jobs that started and have no recorded result.
    let mut cut_off: BTreeSet<(String, u32)> = BTreeSet::new();
    for envelope in events {
        match &envelope.event {
            Event::BuildDone(build) => {
                for (path, sha) in &build.files {
                    seen.insert(path.clone(), Seen::Sha(sha.clone()));
                }
                for path in &build.missing {
                    seen.insert(path.clone(), Seen::Missing);
                }
            }
            Event::ApprovalRequest(ask) => {
                for (path, sha) in &ask.files {
                    let state = if sha == "missing" { Seen::Missing } else { Seen::Sha(sha.clone()) };
                    seen.insert(path.clone(), state);
                }
            }
            Event::CheckRun(check) => {
                cut_off.remove(&(check.stage.clone(), check.round));
                for (path, sha) in &check.files {
                    seen.insert(path.clone(), Seen::Sha(sha.clone()));
                }
                for path in &check.missing {
                    seen.insert(path.clone(), Seen::Missing);
                }
            }
            Event::JobDone(job) => {
                cut_off.remove(&(job.stage.clone(), job.round));
            }
            Event::StageStart(start) if acts_on_files(&start.stage) => {
                cut_off.insert((start.stage.clone(), start.round));
            }
            Event::SeatRequest(request) if request.key.request.access() == Access::MayWrite => {
                for path in writes_of(&request.key.stage) {
                    seen.insert(path.clone(), Seen::Unknown);
                }
            }
            _ => {}
        }
    }
    if !cut_off.is_empty() {
        for state in seen.values_mut() {
            *state = Seen::Unknown;
        }
    }
    seen
}

/// What is at a path now.
enum Now {
    /// A regular file with this SHA-256.
    File(String),
    /// Nothing.
    Absent,
    /// Something that is not a regular file (never read: a FIFO would hang).
    Other,
}

fn observe(path: &Path) -> Now {
    match std::fs::metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Now::Absent,
        Ok(meta) if meta.is_file() => match std::fs::read(path) {
            Ok(bytes) => Now::File(hex::encode(Sha256::digest(&bytes))),
            Err(_) => Now::Other,
        },
        _ => Now::Other,
    }
}
