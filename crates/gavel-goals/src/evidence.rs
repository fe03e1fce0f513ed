//! Evidence files: one per criterion per evaluation, at
//! `.gavel/goals/<id>/runs/<run-id>/evidence/<criterion>.evidence.yaml`
//!, plus one for the path-boundary check. Written before the
//! evaluation's event, and named in it with their digest, so the record never
//! points at a file that is not there and a changed file is detectable.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::GoalError;
use crate::event::{CriterionStatus, JudgeVerdict, Trigger};
use crate::store::write_atomic;

/// What kind of evidence a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceKind {
    /// A command's exit code and output.
    CommandResult,
    /// A judge seat's decision on a fuzzy criterion.
    JudgeDecision,
    /// Files changed since the base, against `allowed_paths`.
    PathBoundaryCheck,
}

/// One evidence file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The goal's id.
    pub goal: String,
    /// The evaluation's run id.
    pub run_id: String,
    /// What asked for the evaluation.
    pub trigger: Trigger,
    /// What kind of evidence this is.
    pub kind: EvidenceKind,
    /// The criteria this evidence proves (empty for the path-boundary check).
    pub proves: Vec<String>,
    /// The criterion's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub criterion: Option<String>,
    /// What the result was.
    pub status: CriterionStatus,
    /// What passing does NOT prove (the criterion's `limits`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limits: Option<String>,
    /// When the evidence was taken, RFC 3339 UTC.
    pub when: String,
    /// The command evidence, for a command result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandEvidence>,
    /// The judge evidence, for a judge decision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeEvidence>,
    /// The path-boundary evidence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_boundary: Option<BoundaryEvidence>,
}

/// A command's run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandEvidence {
    /// The shell line, as written in goal.yaml.
    pub line: String,
    /// Where it ran (the project root).
    pub cwd: String,
    /// Its exit code (`null` when a signal or the timeout ended it).
    pub exit_code: Option<i32>,
    /// Whether the timeout stopped it.
    pub timed_out: bool,
    /// The limit it ran under.
    pub timeout_seconds: u64,
    /// How it ended, in words.
    pub outcome: String,
    /// Why it could not start, when it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// SHA-256 of the output gavel kept (all of it unless `output_truncated`).
    pub output_sha256: String,
    /// Every byte it wrote.
    pub output_bytes: u64,
    /// Whether the middle of a very long output was dropped.
    pub output_truncated: bool,
    /// The end of its output (stderr merged into stdout).
    pub output_tail: String,
}

/// A judge seat's decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeEvidence {
    /// The seat's name.
    pub seat: String,
    /// Its engine.
    pub engine: String,
    /// Its verdict, when readable.
    pub verdict: Option<JudgeVerdict>,
    /// Its confidence, 0 to 1.
    pub confidence: Option<f64>,
    /// Its evidence, in its words.
    pub evidence: String,
    /// Requests it took (2 when the first reply was unreadable).
    pub attempts: u32,
    /// What went wrong, when it could not decide.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The path-boundary check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BoundaryEvidence {
    /// The globs.
    pub allowed_paths: Vec<String>,
    /// The commit the changes were taken against.
    pub base_commit: Option<String>,
    /// Files changed since the base, and untracked files.
    pub changed: Vec<String>,
    /// The changed files no glob allows.
    pub violations: Vec<String>,
    /// Why the check could not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// An evidence file written: where, and the SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The file.
    pub path: PathBuf,
    /// SHA-256 of its bytes, hex.
    pub sha256: String,
}

/// Writes `evidence` as `<name>.evidence.yaml` in `dir`.
pub fn write(dir: &Path, name: &str, evidence: &Evidence) -> Result<Written, GoalError> {
    let path = dir.join(format!("{name}.evidence.yaml"));
    let mut text = String::from("# gavel evidence; the goal's record holds this file's SHA-256.\n");
    // A command's output may print a key a seat was handed: never in a file.
    let yaml = match gavel_seats::secret::scrubbed_tree(evidence) {
        Some(scrubbed) => serde_saphyr::to_string(&scrubbed),
        None => serde_saphyr::to_string(evidence),
    };
    text.push_str(
        &yaml
            .map_err(|err| GoalError::Internal(format!("cannot write evidence {}: {err}", path.display())))?,
    );
    write_atomic(&path, text.as_bytes())?;
    Ok(Written { path, sha256: crate::sha256_hex(text.as_bytes()) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn evidence_is_readable_yaml_with_multiline_tails() {
        let dir = tempfile::tempdir().unwrap();
        let evidence = Evidence {
            goal: "g".into(),
            run_id: "r1".into(),
            trigger: Trigger::Manual,
            kind: EvidenceKind::CommandResult,
            proves: vec!["AC1".into()],
            criterion: Some("Tests pass".into()),
            status: CriterionStatus::Fail,
            limits: Some("Does not prove: real network".into()),
            when: "2026-01-01T00:00:00Z".into(),
            command: Some(CommandEvidence {
                line: "cargo test: all".into(),
                cwd: "/p".into(),
                exit_code: Some(1),
                timed_out: false,
                timeout_seconds: 120,
                outcome: "exited with code 1".into(),
                error: None,
                duration_ms: 5,
                output_sha256: "ab".into(),
                output_bytes: 30,
                output_truncated: false,
                output_tail: "line 1\n  indented: yes\n# not a comment\n".into(),
            }),
            judge: None,
            path_boundary: None,
        };
        let written = write(dir.path(), "AC1", &evidence).unwrap();
        let text = std::fs::read_to_string(&written.path).unwrap();
        let back: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back["command"]["output_tail"], "line 1\n  indented: yes\n# not a comment\n", "{text}");
        assert_eq!(back["proves"][0], "AC1");
        assert_eq!(back["command"]["exit_code"], 1);
        assert_eq!(written.sha256, crate::sha256_hex(text.as_bytes()));
    }
}
