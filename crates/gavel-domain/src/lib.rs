//! gavel's vocabulary as types, and the pure rules that act on them.
//!
//! This crate owns the product's vocabulary (request kinds, usage, families,
//! seats, severities, findings, decisions, verdicts) and the rules that need no
//! IO: reading the first JSON object of a reply, parsing each reply protocol
//! with a precise note of what was wrong, inferring a model's family, and
//! locating an error in a user's file by line and column.
//!
//! It must not do IO, spawn processes, read clocks or use tokio: every function
//! here is deterministic, so the record can be replayed through it.

pub mod family;
pub mod finite;
pub mod kinds;
pub mod located;
pub mod protocol;
pub mod reply;
pub mod rules;
pub mod seat;

pub use family::{Family, infer_family};
pub use kinds::{Access, RequestKind, Usage};
pub use located::Located;
pub use protocol::{
    AnswerValue, Decision, FieldProblem, GoalReply, JudgeAct, JudgeDecision, JudgeReply, MergeGroup,
    MergeReply, Protocol, ProtocolError, ProtocolProblem, RawFinding, RequirementVerdict, ReviewReply,
    Severity, Verdict, Vote, VoteKind, VoteReply,
};
pub use reply::{FoundObject, ReplyError, find_first_json_object, first_json_object};
pub use seat::{Engine, Price, SeatSpec};
