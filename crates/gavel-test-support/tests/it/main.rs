//! Integration tests for `gavel-process`, run against the real `fake-agent`
//! binary (only this package's tests get `CARGO_BIN_EXE_fake-agent`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cancel;
mod common;
mod fake_agent;
mod fake_model;
mod leak;
mod output;
mod spawn;
mod timeout;
