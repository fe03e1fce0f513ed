//! gavel-domain's integration tests: the reply reader's case table, property
//! tests over arbitrary and structured replies, the protocols end to end, and
//! the round rules (merge, votes, judge routing) with seed 001's worked example.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod judge_routing;
mod merge_rules;
mod properties;
mod protocols;
mod reply_table;
mod rules_properties;
mod seed_review_battery;
mod vote_rules;
