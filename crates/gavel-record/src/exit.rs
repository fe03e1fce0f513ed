//! gavel's exit codes, as documented constants every command shares.

/// The work passed (or the command did what was asked).
pub const PASS: i32 = 0;
/// The work was not accepted: a stage failed, a goal check or panel rejected it.
pub const FAIL: i32 = 1;
/// Invalid input: a bad file, a bad flag, a refused team, a corrupt record.
pub const INVALID: i32 = 2;
/// Paused: waiting for a person or for a readable reply; resume continues it.
pub const PAUSED: i32 = 3;
/// An engine or internal failure: a seat could not be reached, IO failed.
pub const INTERNAL: i32 = 4;
