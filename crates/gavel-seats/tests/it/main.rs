//! gavel-seats integration tests: engines against the fake model server.

mod cli;
mod http;
