//! Deserialize helpers for workflow values that take more than one shape
//! (`run = [argv]` or `run = "shell"`, `refine = 3` or a table, ...).
//!
//! Written as visitors rather than `#[serde(untagged)]` so the TOML reader
//! keeps its spans and the error says which shapes are allowed.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

/// A string or a list of strings (`review = "claude"` or `["claude", "codex"]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OneOrMany(pub Vec<String>);

impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OneOrMany;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a seat name or a list of seat names, e.g. \"claude\" or [\"claude\", \"codex\"]")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OneOrMany, E> {
                Ok(OneOrMany(vec![v.to_owned()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<OneOrMany, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    out.push(item);
                }
                Ok(OneOrMany(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// A command: argv as a list, or one shell line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum CommandSpec {
    /// Run directly, no shell.
    Argv(Vec<String>),
    /// Run with `/bin/sh -c`, for when a pipeline is essential.
    Shell(String),
}

impl<'de> Deserialize<'de> for CommandSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CommandSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a command as a list (argv), e.g. [\"node\", \"--test\"], or one shell line as a string",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CommandSpec, E> {
                if v.trim().is_empty() {
                    return Err(E::custom("the command is empty; write the command to run"));
                }
                Ok(CommandSpec::Shell(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CommandSpec, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    out.push(item);
                }
                if out.first().is_none_or(String::is_empty) {
                    return Err(de::Error::custom(
                        "the command list is empty; its first item is the program to run",
                    ));
                }
                Ok(CommandSpec::Argv(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// `approve = ["file", ...]` or `approve = true` (every file written so far).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApproveSpec {
    /// Every file written so far.
    All,
    /// These files.
    Files(Vec<String>),
}

impl<'de> Deserialize<'de> for ApproveSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ApproveSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of files to approve, or true for every file written so far")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<ApproveSpec, E> {
                if v {
                    Ok(ApproveSpec::All)
                } else {
                    Err(E::custom("`approve = false` approves nothing; remove the stage instead"))
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ApproveSpec, A::Error> {
                let mut out = Vec::new();
                while let Some(item) = seq.next_element::<String>()? {
                    out.push(item);
                }
                Ok(if out.is_empty() { ApproveSpec::All } else { ApproveSpec::Files(out) })
            }
        }
        d.deserialize_any(V)
    }
}

/// `synthesise = true | false | "seat"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SynthesiseSpec {
    /// Off.
    Off,
    /// Merge with the first reviewer's seat.
    FirstReviewer,
    /// Merge with this seat.
    Seat(String),
}

impl<'de> Deserialize<'de> for SynthesiseSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = SynthesiseSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false, or the name of the seat that merges findings")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<SynthesiseSpec, E> {
                Ok(if v { SynthesiseSpec::FirstReviewer } else { SynthesiseSpec::Off })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SynthesiseSpec, E> {
                Ok(SynthesiseSpec::Seat(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

/// The table form of `refine`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefineTable {
    /// The judge seat.
    pub judge: String,
    /// The most rounds.
    #[serde(default)]
    pub cap: Option<u32>,
    /// What reaching the cap means: `fail` (default) or `pass`.
    #[serde(default)]
    pub on_cap: Option<String>,
    /// `judge` (default) or `always-back`.
    #[serde(default)]
    pub blocks: Option<String>,
}

/// `refine = N` or `refine = { judge, cap, on_cap, blocks }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefineSpec {
    /// N rounds in all.
    Rounds(i64),
    /// A judge decides.
    Judge(RefineTable),
}

impl<'de> Deserialize<'de> for RefineSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RefineSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number of rounds (refine = 3) or a judge table (refine = { judge = \"judge\", cap = 6 })")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RefineSpec, E> {
                Ok(RefineSpec::Rounds(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RefineSpec, E> {
                Ok(RefineSpec::Rounds(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RefineSpec, A::Error> {
                RefineTable::deserialize(de::value::MapAccessDeserializer::new(map)).map(RefineSpec::Judge)
            }
        }
        d.deserialize_any(V)
    }
}

/// The table form of `max_kickbacks`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KickbacksTable {
    /// The judge seat.
    pub judge: String,
    /// The most kickbacks to one node.
    #[serde(default)]
    pub cap: Option<u32>,
}

/// `max_kickbacks = N` or `max_kickbacks = { judge, cap }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KickbacksSpec {
    /// At most N kickbacks to one node.
    Count(i64),
    /// A judge decides.
    Judge(KickbacksTable),
}

impl<'de> Deserialize<'de> for KickbacksSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = KickbacksSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a number (max_kickbacks = 2) or a judge table (max_kickbacks = { judge = \"judge\", cap = 6 })")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<KickbacksSpec, E> {
                Ok(KickbacksSpec::Count(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<KickbacksSpec, E> {
                Ok(KickbacksSpec::Count(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<KickbacksSpec, A::Error> {
                KickbacksTable::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(KickbacksSpec::Judge)
            }
        }
        d.deserialize_any(V)
    }
}
