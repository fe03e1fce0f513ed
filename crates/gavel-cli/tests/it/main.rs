//! End-to-end tests of the `gavel` binary: every test runs the real command
//! line against fixtures under `tests/fixtures` (or `examples/hello`), in
//! temporary workspaces, offline, with scripted seats.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;
mod crash;
mod doctor;
mod graph;

mod goals;
mod happy;
mod http_seats;
mod inputs;
mod kill_resume;
mod lock;
mod malformed;
mod outcomes;
mod output;
mod panel;
mod reasons;
mod record_damage;
mod resume_where;
mod rounds;
mod runs;
mod seat_writes;
mod secrets;
mod usage;
