//! gavel-domain's integration tests: the reply reader's case table, property
//! tests over arbitrary and structured replies, and the protocols end to end.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod properties;
mod protocols;
mod reply_table;
