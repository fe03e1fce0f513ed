//! The pure rules of a reviewed round: merging raw findings,
//! applying the votes, routing on the judge's answers, and fingerprinting
//! findings for the loop breaker.
//!
//! Every function here is a plain fold over values the runtime recorded, so a
//! replayed record goes through the same rules and reaches the same outcome.
//! The seats only supply words (groups, votes, answers); counting, severities,
//! provenance and routes are decided here, by code.

pub mod fingerprint;
pub mod judge;
pub mod merge;
pub mod votes;

pub use fingerprint::{fingerprint, fingerprints, same_findings};
pub use judge::{
    Blocks, JudgeInput, OnCap, Question, QuestionKind, Route, RouteDecision, check_answers,
    default_questions, route,
};
pub use merge::{Finding, MergeIssue, MergeProblem, RawEntry, apply_merge, unmerged};
pub use votes::{Ballot, PanelCount, PanelOutcome, Tally, VoteResult, panel_outcome, panel_passes, tally};
