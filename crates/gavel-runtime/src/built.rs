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
//! the record cannot say what it touched). The files of an approval that
//! waits for its answer are not checked either: the approve stage itself
//! compares them with the bytes asked about and asks again when they
//! changed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use gavel_domain::Access;
use gavel_record::{Envelope, Event};

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
    // Asks no person has answered yet, with their files.
    let mut pending: BTreeMap<(String, u32), Vec<String>> = BTreeMap::new();
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
                pending.insert((ask.stage.clone(), ask.round), ask.files.keys().cloned().collect());
            }
            Event::Approval(decided) => {
                pending.remove(&(decided.stage.clone(), decided.round));
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
    // The bytes of an unanswered ask may change while the run waits: a
    // person fixing what they were asked to approve is the approval's own
    // flow. The approve stage compares them with the ask and, when any byte
    // differs, refuses the old ask and asks about the new bytes.
    for files in pending.values() {
        for path in files {
            seen.insert(path.clone(), Seen::Unknown);
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
        Ok(meta) if meta.is_file() => match crate::phases::sha256_of(path) {
            Some(sha) => Now::File(sha),
            None => Now::Other,
        },
        _ => Now::Other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use gavel_domain::RequestKind;
    use gavel_record::event::{
        Approval, ApprovalRequest, BuildDone, CheckRun, SeatKey, SeatRequest, StageStart,
    };

    use sha2::{Digest as _, Sha256};

    use super::*;

    /// A workflow: `a` builds `x.md` and `y.md`, `gate` runs a command, `b`
    /// builds `x.md` again.
    fn workflow(dir: &Path) -> Workflow {
        std::fs::write(dir.join("w.toml"), "[[write]]\nreply = \"ok\"\n").unwrap();
        std::fs::write(dir.join("brief.md"), "# Brief\n\nDo it.\n").unwrap();
        let source = r#"name = "w"
brief = "brief.md"
[seats]
w = { engine = "script", script = "w.toml", family = "anthropic" }
[[stage]]
name = "a"
agent = "w"
writes = ["x.md", "y.md"]
[[stage]]
name = "gate"
run = "true"
[[stage]]
name = "b"
agent = "w"
writes = ["x.md"]
"#;
        Workflow::parse(&dir.join("workflow.toml"), source).unwrap()
    }

    fn at(events: Vec<Event>) -> Vec<Envelope> {
        events
            .into_iter()
            .enumerate()
            .map(|(i, event)| Envelope { v: 1, seq: i as u64 + 1, at: jiff::Timestamp::UNIX_EPOCH, event })
            .collect()
    }

    fn sha(text: &str) -> String {
        hex::encode(Sha256::digest(text.as_bytes()))
    }

    fn built(stage: &str, files: &[(&str, &str)], missing: &[&str]) -> Event {
        Event::BuildDone(BuildDone {
            stage: stage.into(),
            round: 1,
            files: files.iter().map(|(p, t)| ((*p).to_owned(), sha(t))).collect(),
            missing: missing.iter().map(|p| (*p).to_owned()).collect(),
        })
    }

    fn write_request(stage: &str) -> Event {
        Event::SeatRequest(SeatRequest {
            key: SeatKey {
                stage: stage.into(),
                round: 1,
                seat: "w".into(),
                request: RequestKind::Write,
                attempt: 1,
            },
            prompt_sha256: String::new(),
            note: None,
        })
    }

    fn check(files: &[(&str, &str)]) -> Event {
        Event::CheckRun(CheckRun {
            stage: "gate".into(),
            round: 1,
            argv: None,
            shell: Some("true".into()),
            exit: Some(0),
            timed_out: false,
            ms: 0,
            output_tail: String::new(),
            output_truncated: false,
            error: None,
            files: files.iter().map(|(p, t)| ((*p).to_owned(), sha(t))).collect(),
            missing: Vec::new(),
        })
    }

    fn ask(files: &[(&str, &str)]) -> Event {
        Event::ApprovalRequest(ApprovalRequest {
            stage: "ok".into(),
            round: 1,
            files: files.iter().map(|(p, t)| ((*p).to_owned(), (*t).to_owned())).collect(),
            reason: None,
        })
    }

    fn answer(files: &[(&str, &str)]) -> Event {
        Event::Approval(Approval {
            stage: "ok".into(),
            round: 1,
            files: files.iter().map(|(p, t)| ((*p).to_owned(), (*t).to_owned())).collect(),
            approved: true,
            by: "tester".into(),
            reason: String::new(),
        })
    }

    /// A record, and the files it should name: path and how.
    type Case = (Vec<Event>, Vec<(&'static str, &'static str)>);

    fn names(found: &[(String, Divergence)]) -> Vec<(&str, &str)> {
        found
            .iter()
            .map(|(p, d)| {
                let how = match d {
                    Divergence::Changed { .. } => "changed",
                    Divergence::Missing => "missing",
                    Divergence::Present => "present",
                    Divergence::NotAFile => "not a file",
                };
                (p.as_str(), how)
            })
            .collect()
    }

    #[test]
    fn only_the_latest_recorded_state_of_each_path_counts() {
        let dir = tempfile::tempdir().unwrap();
        let flow = workflow(dir.path());
        let ws = dir.path();
        std::fs::write(ws.join("x.md"), "three").unwrap();
        std::fs::write(ws.join("y.md"), "y").unwrap();
        let cases: Vec<Case> = vec![
            // As built: nothing differs.
            (vec![built("a", &[("x.md", "three"), ("y.md", "y")], &[])], vec![]),
            // Built once, rewritten by a later stage: the later state counts.
            (
                vec![
                    built("a", &[("x.md", "one"), ("y.md", "y")], &[]),
                    write_request("b"),
                    built("b", &[("x.md", "three")], &[]),
                ],
                vec![],
            ),
            // ... and the command after it rewrote it again.
            (
                vec![
                    built("a", &[("x.md", "one"), ("y.md", "y")], &[]),
                    check(&[("x.md", "three"), ("y.md", "y")]),
                ],
                vec![],
            ),
            // The latest state is an older one than the bytes there now.
            (
                vec![built("a", &[("x.md", "three"), ("y.md", "y")], &[]), check(&[("x.md", "four")])],
                vec![("x.md", "changed")],
            ),
            // An answered approval's ask is a state too ("missing" for an
            // absent file).
            (
                vec![
                    built("a", &[("x.md", "three"), ("y.md", "y")], &[]),
                    ask(&[("y.md", "missing")]),
                    answer(&[("y.md", "missing")]),
                ],
                vec![("y.md", "present")],
            ),
            // An ask still waiting for its answer is not checked: the approve
            // stage asks again about bytes that changed. Other files are.
            (
                vec![
                    built("a", &[("x.md", "one"), ("y.md", "y")], &[]),
                    ask(&[("y.md", "missing"), ("x.md", &sha("two"))]),
                ],
                vec![],
            ),
            (
                vec![built("a", &[("x.md", "one"), ("y.md", "y")], &[]), ask(&[("y.md", "y")])],
                vec![("x.md", "changed")],
            ),
            // Recorded missing, and deleted-since: both named.
            (
                vec![built("a", &[("x.md", "three"), ("z.md", "z")], &["y.md"])],
                vec![("y.md", "present"), ("z.md", "missing")],
            ),
            // A builder at work on a file (no build:done after its request):
            // whatever it left there is not checked; other files still are.
            (
                vec![built("a", &[("x.md", "one"), ("y.md", "old")], &[]), write_request("b")],
                vec![("y.md", "changed")],
            ),
            // A command cut off midway may have changed anything.
            (
                vec![
                    built("a", &[("x.md", "one"), ("y.md", "old")], &[]),
                    Event::StageStart(StageStart { stage: "gate".into(), round: 1 }),
                ],
                vec![],
            ),
            // ... but one that finished is on record.
            (
                vec![
                    built("a", &[("x.md", "one"), ("y.md", "y")], &[]),
                    Event::StageStart(StageStart { stage: "gate".into(), round: 1 }),
                    check(&[("x.md", "one")]),
                ],
                vec![("x.md", "changed")],
            ),
        ];
        for (i, (events, expected)) in cases.into_iter().enumerate() {
            let found = differences(&at(events), &flow, ws);
            assert_eq!(names(&found), expected, "case {i}");
        }
    }

    #[test]
    fn a_changed_file_names_both_digests() {
        let dir = tempfile::tempdir().unwrap();
        let flow = workflow(dir.path());
        std::fs::write(dir.path().join("x.md"), "now").unwrap();
        std::fs::write(dir.path().join("y.md"), "y").unwrap();
        let found =
            differences(&at(vec![built("a", &[("x.md", "then"), ("y.md", "y")], &[])]), &flow, dir.path());
        let [(path, Divergence::Changed { recorded, now })] = found.as_slice() else { panic!("{found:?}") };
        assert_eq!(
            (path.as_str(), recorded.as_str(), now.as_str()),
            ("x.md", sha("then").as_str(), sha("now").as_str())
        );
        let said = found[0].1.describe();
        assert!(said.contains(&sha("then")[..12]) && said.contains(&sha("now")[..12]), "{said}");
    }
}
