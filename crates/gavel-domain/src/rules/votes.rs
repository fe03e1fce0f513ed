//! The vote rules, and the panel's pass rule.
//!
//! Votes are applied by plain code so that no seat can drop a finding on its
//! own say-so: the rules are counted, the protections (a `block`, a voter who
//! never answered) are absolute, and the outcome does not depend on the order
//! the votes arrived in.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::merge::Finding;
use crate::protocol::{Severity, Vote, VoteKind};

/// One reviewer's vote on one merged finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ballot {
    /// The reviewer that voted (`write-3`).
    pub voter: String,
    /// Agree, disagree or better-fix.
    pub vote: VoteKind,
    /// Why, in the voter's words; kept for the record and the judge.
    pub reason: String,
    /// The better fix, for a `better-fix` vote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Ballot {
    /// A vote from a reviewer's `vote` reply, attributed to that reviewer.
    pub fn from_vote(voter: &str, vote: &Vote) -> Ballot {
        Ballot {
            voter: voter.to_owned(),
            vote: vote.vote,
            reason: vote.reason.clone(),
            fix: vote.fix.clone(),
        }
    }
}

/// What the votes did to a merged finding (the `result` of a
/// `review:synthesis` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VoteResult {
    /// It stays as it is.
    Kept,
    /// It stays, carrying the fix most voters preferred.
    BetterFix,
    /// It stays, contested, for the judge to weigh.
    Disputed,
    /// Enough voters disagreed: it never reaches the builder or the judge.
    Dropped,
}

impl VoteResult {
    /// The word as the record spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            VoteResult::Kept => "kept",
            VoteResult::BetterFix => "better-fix",
            VoteResult::Disputed => "disputed",
            VoteResult::Dropped => "dropped",
        }
    }

    /// Whether the finding goes on to the judge or the builder.
    pub const fn stays(self) -> bool {
        !matches!(self, VoteResult::Dropped)
    }
}

impl fmt::Display for VoteResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of the votes on one finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// What the votes did.
    pub result: VoteResult,
    /// The fix the finding carries afterwards: the preferred better fix for
    /// [`VoteResult::BetterFix`], its own fix otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// Applies the vote rules to one merged finding.
///
/// `ballots` are the votes cast on this finding; `voter_order` is the
/// reviewers in role order (it decides which better fix is "first", so the
/// result does not depend on which reply arrived first);
/// `shown_to_failed_voter` says the finding was shown to a reviewer whose
/// vote request failed or stayed unreadable.
///
/// Only reviewers who voted count. A ballot from a reviewer that raised the
/// finding is ignored (it is already counted in `raised_by`, and a reviewer
/// never votes on its own finding), and a reviewer counts once (its first
/// ballot). With `n` voters, `d` disagree, `a` agree, `b` better-fix and
/// `r` raisers, the rules apply in this order:
///
/// 1. `n = 0` → **kept** (nobody voted, e.g. every reviewer raised it).
/// 2. `2d > n` (most disagree) → **dropped** when `d > r + a + b`, the
///    finding is not a `block` and it was not shown to a failed voter;
///    otherwise **disputed**. The protections only ever turn *dropped* into
///    *disputed*.
/// 3. `2d = n` (exactly half) → **disputed**.
/// 4. `2b > n` (most prefer a better fix) → **better-fix**, carrying the
///    first non-blank fix offered by a better-fix voter in `voter_order`
///    (voters missing from it come after, by name). If no better-fix voter
///    wrote a fix there is nothing to carry: **kept**.
/// 5. Otherwise → **kept**.
///
/// Rules 2–4 cannot overlap (more than half disagreeing, exactly half
/// disagreeing and more than half preferring a better fix exclude each
/// other), so the order only matters for the protections. A failed voter
/// does not turn a kept or better-fix finding into a disputed one: the rule
/// exists to stop a missing vote from *dropping* a finding, and the judge
/// still sees who did not vote through `no_votes_from`.
pub fn tally(
    finding: &Finding,
    ballots: &[Ballot],
    voter_order: &[String],
    shown_to_failed_voter: bool,
) -> Tally {
    let mut counted: Vec<&Ballot> = Vec::with_capacity(ballots.len());
    for ballot in ballots {
        let raised = finding.raised_by.contains(&ballot.voter);
        let seen = counted.iter().any(|b| b.voter == ballot.voter);
        if !raised && !seen {
            counted.push(ballot);
        }
    }
    let count = |kind: VoteKind| counted.iter().filter(|b| b.vote == kind).count();
    let (voters, agree, disagree, better) =
        (counted.len(), count(VoteKind::Agree), count(VoteKind::Disagree), count(VoteKind::BetterFix));
    // Every finding was raised by someone; a record that lost its raisers
    // must not make dropping easier than one raiser would.
    let raisers = finding.raised_by.len().max(1);
    let own = || Tally { result: VoteResult::Kept, fix: finding.fix.clone() };
    let disputed = || Tally { result: VoteResult::Disputed, fix: finding.fix.clone() };

    if voters == 0 {
        return own();
    }
    if 2 * disagree > voters {
        let outnumbered = disagree > raisers + agree + better;
        let protected = finding.severity == Severity::Block || shown_to_failed_voter;
        return if outnumbered && !protected {
            Tally { result: VoteResult::Dropped, fix: finding.fix.clone() }
        } else {
            disputed()
        };
    }
    if 2 * disagree == voters {
        return disputed();
    }
    if 2 * better > voters {
        let rank = |voter: &str| voter_order.iter().position(|v| v == voter).unwrap_or(usize::MAX);
        let first = counted
            .iter()
            .filter(|b| b.vote == VoteKind::BetterFix)
            .filter_map(|b| {
                b.fix.as_deref().filter(|f| !f.trim().is_empty()).map(|f| (rank(&b.voter), &b.voter, f))
            })
            .min();
        return match first {
            Some((_, _, fix)) => Tally { result: VoteResult::BetterFix, fix: Some(fix.to_owned()) },
            None => own(),
        };
    }
    own()
}

/// A panel's reviewers, counted (the pass rule).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PanelCount {
    /// Reviewers that passed the work.
    pub passed: usize,
    /// Reviewers that asked for a revision.
    pub revised: usize,
    /// Reviewers with no usable decision (an engine error: neither an
    /// acceptance nor a rejection).
    pub errors: usize,
    /// Acceptances needed; more than the panel has means all of them.
    pub agree: usize,
    /// Findings still standing after the votes (every finding, without
    /// synthesis).
    pub findings_left: usize,
}

/// What a panel's count means for the round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PanelOutcome {
    /// Enough acceptances, or the votes dropped every finding of a failing
    /// panel.
    Pass,
    /// A reviewer rejected the work and findings are left to send back.
    Revise,
    /// Short of `agree` only because of engine errors: nothing was rejected,
    /// so the run pauses and asks the failed reviewers again.
    ShortByErrors,
}

/// Decides a panel: at least `agree` acceptances pass it; short of that,
/// a panel nobody rejected waits for its failed reviewers; a rejecting panel
/// whose findings the votes all dropped has nothing to send back and passes;
/// anything else is a revision.
pub fn panel_outcome(count: &PanelCount) -> PanelOutcome {
    let reviewers = count.passed + count.revised + count.errors;
    if count.passed >= count.agree.min(reviewers) {
        PanelOutcome::Pass
    } else if count.revised == 0 {
        // Short, yet nobody rejected: only engine errors are missing.
        PanelOutcome::ShortByErrors
    } else if count.findings_left == 0 {
        PanelOutcome::Pass
    } else {
        PanelOutcome::Revise
    }
}

/// Whether a panel passes ([`panel_outcome`] is [`PanelOutcome::Pass`]).
pub fn panel_passes(count: &PanelCount) -> bool {
    panel_outcome(count) == PanelOutcome::Pass
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words() {
        assert_eq!(serde_json::to_string(&VoteResult::BetterFix).unwrap(), "\"better-fix\"");
        assert_eq!(VoteResult::BetterFix.to_string(), "better-fix");
        assert_eq!(serde_json::from_str::<VoteResult>("\"dropped\"").unwrap(), VoteResult::Dropped);
        assert!(!VoteResult::Dropped.stays());
        assert!(VoteResult::Disputed.stays());
    }

    #[test]
    fn panel_outcomes() {
        let count = |passed, revised, errors, agree, findings_left| PanelCount {
            passed,
            revised,
            errors,
            agree,
            findings_left,
        };
        assert_eq!(panel_outcome(&count(3, 0, 0, 3, 0)), PanelOutcome::Pass);
        assert_eq!(panel_outcome(&count(1, 1, 0, 1, 2)), PanelOutcome::Pass);
        assert_eq!(panel_outcome(&count(2, 1, 0, 3, 2)), PanelOutcome::Revise);
        assert_eq!(panel_outcome(&count(2, 1, 0, 3, 0)), PanelOutcome::Pass);
        assert_eq!(panel_outcome(&count(2, 0, 1, 3, 1)), PanelOutcome::ShortByErrors);
        // Notes of passing reviewers all dropped do not stand in for a
        // missing acceptance.
        assert_eq!(panel_outcome(&count(2, 0, 1, 3, 0)), PanelOutcome::ShortByErrors);
        assert_eq!(panel_outcome(&count(2, 0, 0, 5, 0)), PanelOutcome::Pass);
        assert!(panel_passes(&count(1, 2, 0, 3, 0)));
        assert!(!panel_passes(&count(1, 2, 0, 3, 1)));
    }
}
