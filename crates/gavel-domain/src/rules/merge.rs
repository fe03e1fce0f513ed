//! A round's *merge* step: raw findings become merged findings `F1..Fn`.
//!
//! The merging seat only says which raw findings name the same problem and
//! words each group. Everything that decides what happens to a finding later
//! (its severity, who raised it, that nothing was lost) is set here, by code,
//! so a merger cannot soften a `block` or drop a finding by leaving it out.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::protocol::{MergeReply, Protocol, ReviewReply, Severity};

/// A finding as the runtime records it: a reviewer's raw finding, or a merged
/// one (the vocabulary's finding: `{id, severity, evidence, fix?, raised_by}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// `write-2.1` for a raw finding, `F1` for a merged one.
    pub id: String,
    /// How much it matters; for a merged finding, the strongest of its members.
    pub severity: Severity,
    /// What is wrong, and where.
    pub evidence: String,
    /// What to do about it, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// Every reviewer that raised it, in reviewer order.
    #[serde(default)]
    pub raised_by: Vec<String>,
    /// Provenance: the raw finding ids this finding stands for, in raw
    /// (reviewer) order. Empty for a finding that is itself raw.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
}

/// One raw finding as the merge step reads it: numbered and attributed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawEntry {
    /// `<reviewer>.<n>`, counting from 1 (`write-2.1`).
    pub id: String,
    /// The reviewer that raised it (`write-2`).
    pub reviewer: String,
    /// Its severity, with the reviewer's default already applied.
    pub severity: Severity,
    /// What is wrong, and where.
    pub evidence: String,
    /// What to do about it, when offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl RawEntry {
    /// Numbers one reviewer's findings `<reviewer>.1..` and applies
    /// the default severity for its decision, so every caller numbers alike.
    pub fn from_review(reviewer: &str, reply: &ReviewReply) -> Vec<RawEntry> {
        reply
            .findings
            .iter()
            .enumerate()
            .map(|(i, finding)| RawEntry {
                id: format!("{reviewer}.{}", i + 1),
                reviewer: reviewer.to_owned(),
                severity: finding.severity_or_default(reply.decision),
                evidence: finding.evidence.clone(),
                fix: finding.fix.clone(),
            })
            .collect()
    }

    /// This raw finding standing alone as merged finding `id`.
    fn alone(&self, id: String) -> Finding {
        Finding {
            id,
            severity: self.severity,
            evidence: self.evidence.clone(),
            fix: self.fix.clone(),
            raised_by: vec![self.reviewer.clone()],
            members: vec![self.id.clone()],
        }
    }
}

/// Merged finding ids count from 1 in merge order.
fn merged_id(index: usize) -> String {
    format!("F{}", index + 1)
}

/// Without a merge (one reviewer, no `synthesise`, or a failed merge), each
/// raw finding becomes its own finding, `F1..Fn` in the given order; the
/// caller passes them in reviewer order.
pub fn unmerged(raw: &[RawEntry]) -> Vec<Finding> {
    raw.iter().enumerate().map(|(i, entry)| entry.alone(merged_id(i))).collect()
}

/// One way a merger's reply does not fit the raw findings it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeIssue {
    /// A member id names no raw finding.
    UnknownMember {
        /// The group's index in the reply.
        group: usize,
        /// The member's index in the group.
        member: usize,
        /// The id as the merger wrote it.
        id: String,
        /// Every raw finding id, in order, so the note can list them.
        known: Vec<String>,
    },
    /// A raw finding was put in a second group.
    InTwoGroups {
        /// The later group's index in the reply.
        group: usize,
        /// The member's index in that group.
        member: usize,
        /// The raw finding's id.
        id: String,
        /// The group it is already in.
        first_group: usize,
    },
    /// A group lists no members (the protocol reader refuses this, but a
    /// reply built by other code might not have gone through it).
    EmptyGroup {
        /// The group's index in the reply.
        group: usize,
    },
}

impl fmt::Display for MergeIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeIssue::UnknownMember { group, member, id, known } => {
                let known = if known.is_empty() { "(there are none)".to_owned() } else { known.join(", ") };
                write!(
                    f,
                    "`findings[{group}].members[{member}]` is {}, which is not one of the raw findings: {known}",
                    quoted(id)
                )
            }
            MergeIssue::InTwoGroups { group, member, id, first_group } => write!(
                f,
                "`findings[{group}].members[{member}]` is {}, which is already in `findings[{first_group}]`; \
                 put each raw finding in one group only",
                quoted(id)
            ),
            MergeIssue::EmptyGroup { group } => write!(
                f,
                "`findings[{group}].members` is empty; list the ids of the raw findings in this group"
            ),
        }
    }
}

/// A string as notes quote it: JSON, so quotes and escapes read as the model
/// wrote them.
fn quoted(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("\"{text}\""))
}

/// A merge reply that does not fit the raw findings; never empty.
///
/// `Display` is a sentence for logs and the record; [`MergeProblem::note`]
/// adds the shape to reply with, for the one "ask once more" turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeProblem {
    /// Every issue found, in reply order, so one note can fix them all.
    pub issues: Vec<MergeIssue>,
}

impl fmt::Display for MergeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Your merge did not fit the raw findings:")?;
        for issue in &self.issues {
            write!(f, " {issue}.")?;
        }
        Ok(())
    }
}

impl std::error::Error for MergeProblem {}

impl MergeProblem {
    /// The note for the "ask once more" turn: what was wrong, then the shape.
    pub fn note(&self) -> String {
        format!("{self} Reply with one JSON object of this shape: {}", MergeReply::SHAPE)
    }
}

/// Applies a merger's reply to the raw findings (given in reviewer order).
///
/// Code, not the seat, sets each group's severity (the strongest member's)
/// and `raised_by` (every distinct reviewer of its members, in reviewer
/// order). The group's evidence is the merger's (the first member's if it is
/// blank); its fix is the merger's, else the first member's that has one.
/// Groups become `F1..` in merge order; a raw finding the merger left out
/// stays as its own finding, numbered on after the groups in raw order.
///
/// Ids are matched exactly, then ignoring ASCII case (a model may write
/// `Write-1.1`), and the same id twice in one group counts once: both cost
/// nothing to forgive. An id that names no raw finding, or a raw finding in
/// two groups, is a [`MergeProblem`] listing every such issue.
pub fn apply_merge(raw: &[RawEntry], reply: &MergeReply) -> Result<Vec<Finding>, MergeProblem> {
    // For each raw finding, the group it was placed in (first placement).
    let mut placed: Vec<Option<usize>> = vec![None; raw.len()];
    // For each group, its members as raw indices.
    let mut groups: Vec<Vec<usize>> = Vec::with_capacity(reply.findings.len());
    let mut issues = Vec::new();

    for (g, group) in reply.findings.iter().enumerate() {
        if group.members.is_empty() {
            issues.push(MergeIssue::EmptyGroup { group: g });
        }
        let mut members = Vec::new();
        for (m, id) in group.members.iter().enumerate() {
            let Some(index) = find_raw(raw, id) else {
                issues.push(MergeIssue::UnknownMember {
                    group: g,
                    member: m,
                    id: id.clone(),
                    known: raw.iter().map(|r| r.id.clone()).collect(),
                });
                continue;
            };
            match placed[index] {
                None => {
                    placed[index] = Some(g);
                    members.push(index);
                }
                Some(first) if first == g => {} // listed twice in one group
                Some(first) => issues.push(MergeIssue::InTwoGroups {
                    group: g,
                    member: m,
                    id: raw[index].id.clone(),
                    first_group: first,
                }),
            }
        }
        // Raw order makes provenance, raised_by and the fallback fix
        // independent of how the merger happened to list the members.
        members.sort_unstable();
        groups.push(members);
    }
    if !issues.is_empty() {
        return Err(MergeProblem { issues });
    }

    let mut merged: Vec<Finding> = Vec::with_capacity(groups.len() + raw.len());
    for (group, members) in reply.findings.iter().zip(&groups) {
        let entries: Vec<&RawEntry> = members.iter().map(|&i| &raw[i]).collect();
        let Some(severity) = Severity::strongest(entries.iter().map(|e| e.severity)) else {
            continue; // unreachable: empty groups were refused above
        };
        let mut raised_by: Vec<String> = Vec::new();
        for entry in &entries {
            if !raised_by.contains(&entry.reviewer) {
                raised_by.push(entry.reviewer.clone());
            }
        }
        let evidence = if group.evidence.trim().is_empty() {
            entries.first().map(|e| e.evidence.clone()).unwrap_or_default()
        } else {
            group.evidence.clone()
        };
        let fix = present(group.fix.as_deref())
            .or_else(|| entries.iter().find_map(|e| present(e.fix.as_deref())))
            .map(str::to_owned);
        merged.push(Finding {
            id: merged_id(merged.len()),
            severity,
            evidence,
            fix,
            raised_by,
            members: entries.iter().map(|e| e.id.clone()).collect(),
        });
    }
    for (entry, _) in raw.iter().zip(&placed).filter(|(_, group)| group.is_none()) {
        let id = merged_id(merged.len());
        merged.push(entry.alone(id));
    }
    Ok(merged)
}

/// The raw finding an id names: exactly, else ignoring ASCII case.
fn find_raw(raw: &[RawEntry], id: &str) -> Option<usize> {
    raw.iter().position(|r| r.id == id).or_else(|| raw.iter().position(|r| r.id.eq_ignore_ascii_case(id)))
}

/// A fix that says something; a blank one is no fix.
fn present(fix: Option<&str>) -> Option<&str> {
    fix.filter(|f| !f.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Decision, MergeGroup, RawFinding};

    fn raw(id: &str, severity: Severity, fix: Option<&str>) -> RawEntry {
        let reviewer = id.split('.').next().unwrap_or(id).to_owned();
        RawEntry {
            id: id.to_owned(),
            reviewer,
            severity,
            evidence: format!("evidence of {id}"),
            fix: fix.map(str::to_owned),
        }
    }

    fn group(members: &[&str], evidence: &str, fix: Option<&str>) -> MergeGroup {
        MergeGroup {
            members: members.iter().map(|m| (*m).to_owned()).collect(),
            evidence: evidence.to_owned(),
            fix: fix.map(str::to_owned),
        }
    }

    #[test]
    fn from_review_numbers_and_defaults() {
        let reply = ReviewReply {
            decision: Decision::Pass,
            findings: vec![
                RawFinding { severity: None, evidence: "a".to_owned(), fix: None },
                RawFinding {
                    severity: Some(Severity::Block),
                    evidence: "b".to_owned(),
                    fix: Some("f".to_owned()),
                },
            ],
        };
        assert_eq!(
            RawEntry::from_review("write-2", &reply),
            vec![
                RawEntry {
                    id: "write-2.1".to_owned(),
                    reviewer: "write-2".to_owned(),
                    severity: Severity::NiceToHave,
                    evidence: "a".to_owned(),
                    fix: None,
                },
                RawEntry {
                    id: "write-2.2".to_owned(),
                    reviewer: "write-2".to_owned(),
                    severity: Severity::Block,
                    evidence: "b".to_owned(),
                    fix: Some("f".to_owned()),
                },
            ]
        );
    }

    #[test]
    fn strongest_severity_and_fallback_fix() {
        let raws = [
            raw("write-1.1", Severity::NiceToHave, None),
            raw("write-2.1", Severity::Block, Some("  ")),
            raw("write-3.1", Severity::ShouldFix, Some("third's fix")),
        ];
        // Members listed out of order, and one listed twice: both forgiven.
        let reply = MergeReply {
            findings: vec![group(&["write-3.1", "WRITE-1.1", "write-2.1", "write-3.1"], "merged", None)],
        };
        assert_eq!(
            apply_merge(&raws, &reply),
            Ok(vec![Finding {
                id: "F1".to_owned(),
                severity: Severity::Block,
                evidence: "merged".to_owned(),
                fix: Some("third's fix".to_owned()),
                raised_by: vec!["write-1".to_owned(), "write-2".to_owned(), "write-3".to_owned()],
                members: vec!["write-1.1".to_owned(), "write-2.1".to_owned(), "write-3.1".to_owned()],
            }])
        );
    }

    #[test]
    fn blank_group_evidence_falls_back_to_the_first_member() {
        let raws = [raw("write-1.1", Severity::ShouldFix, None)];
        let reply = MergeReply { findings: vec![group(&["write-1.1"], " ", Some("do it"))] };
        let merged = apply_merge(&raws, &reply).unwrap();
        assert_eq!(merged[0].evidence, "evidence of write-1.1");
        assert_eq!(merged[0].fix.as_deref(), Some("do it"));
    }
}
