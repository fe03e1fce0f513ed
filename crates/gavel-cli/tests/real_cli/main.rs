//! The real agent CLIs (claude, codex, opencode, gemini), at the versions
//! `ci/install-agent-clis.sh` pins, driven by gavel against the fake model
//! server on loopback (issue 6, item 5).
//!
//! For each CLI, single requests through [`gavel_seats::cli::CliSeat`] built
//! the way the runtime builds them: a review comes back as a parsed decision
//! with its tokens (and cost where the CLI reports one); a builder request
//! makes the CLI write a file with its own tool; a read-only request whose
//! model asks to write cannot; an HTTP 401 and a 500 end as seat errors
//! within the seat's timeout. Then one whole workflow through the `gavel`
//! binary: a claude builder, a codex goal check and a gemini + opencode
//! panel.
//!
//! Every test is ignored by default: it needs the installed CLIs and must run
//! inside a network namespace with nothing but loopback, so no CLI can reach
//! out. `.ci/run` runs them; tests/real_cli/README.md says how to by hand.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod rig;

mod claude;
mod codex;
mod gemini;
mod opencode;
mod stop_hook;
mod workflow;
