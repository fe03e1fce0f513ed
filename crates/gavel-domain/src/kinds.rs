//! Request kinds, access modes and usage: the words a seat request is made of.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The kind of a request a seat answers. Each kind has its own
/// queue in a script seat and its own prompt template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestKind {
    /// A builder turn: write the files of a stage.
    Write,
    /// The goal check: mark each requirement met or unmet.
    Goal,
    /// A reviewer's decision on the work.
    Review,
    /// Group raw findings that name the same problem.
    Merge,
    /// Cross-review votes on merged findings.
    Vote,
    /// The judge's act/skip decisions and answers.
    Judge,
    /// A goal planner's first plan.
    Plan,
    /// A goal planner's change to a plan.
    Replan,
    /// A goal work task.
    Work,
    /// A goal check task.
    Check,
    /// The goal reviewer.
    Inspect,
    /// The goal judge.
    Rule,
    /// A fuzzy acceptance criterion.
    Criterion,
}

impl RequestKind {
    /// Every kind, in the order the script seat format lists its queues.
    pub const ALL: [RequestKind; 13] = [
        RequestKind::Write,
        RequestKind::Goal,
        RequestKind::Review,
        RequestKind::Merge,
        RequestKind::Vote,
        RequestKind::Judge,
        RequestKind::Plan,
        RequestKind::Replan,
        RequestKind::Work,
        RequestKind::Check,
        RequestKind::Inspect,
        RequestKind::Rule,
        RequestKind::Criterion,
    ];

    /// The kind's name as it appears in files and the record.
    pub const fn as_str(self) -> &'static str {
        match self {
            RequestKind::Write => "write",
            RequestKind::Goal => "goal",
            RequestKind::Review => "review",
            RequestKind::Merge => "merge",
            RequestKind::Vote => "vote",
            RequestKind::Judge => "judge",
            RequestKind::Plan => "plan",
            RequestKind::Replan => "replan",
            RequestKind::Work => "work",
            RequestKind::Check => "check",
            RequestKind::Inspect => "inspect",
            RequestKind::Rule => "rule",
            RequestKind::Criterion => "criterion",
        }
    }

    /// The access a request of this kind gets: builders and workers may
    /// write; every other kind reads only.
    pub const fn access(self) -> Access {
        match self {
            RequestKind::Write | RequestKind::Work | RequestKind::Check => Access::MayWrite,
            _ => Access::ReadOnly,
        }
    }
}

impl fmt::Display for RequestKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a request kind name that is not one of the script seat format's queues.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown request kind `{0}`; expected one of write, goal, review, merge, vote, judge, plan, replan, work, check, inspect, rule, criterion"
)]
pub struct UnknownRequestKind(pub String);

impl FromStr for RequestKind {
    type Err = UnknownRequestKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        RequestKind::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| UnknownRequestKind(s.to_owned()))
    }
}

/// Whether a request may change files in the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// The seat may read the workspace but must not change it.
    ReadOnly,
    /// The seat may write files inside the workspace.
    MayWrite,
}

/// Tokens and money one request (or a whole run) used.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Cost in US dollars, where the engine reports or gavel can price it.
    /// Always finite: the writer refuses anything else (see [`crate::finite`]).
    #[serde(serialize_with = "crate::finite::serialize")]
    pub cost_usd: f64,
}

impl Usage {
    /// Adds another request's usage to this total. Every sum saturates: a
    /// total too large to count stays at the largest count, never wraps
    /// nor becomes infinite, so a budget still stops the run.
    pub fn add(&mut self, other: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        let sum = crate::finite::saturating_add(self.cost_usd, other.cost_usd);
        // Rounded to a millionth of a dollar so sums of many requests print
        // as the figures a person would add up, not as float noise. Only
        // below a billion dollars: near there an f64 stops holding
        // millionths anyway, and far above it `* 1e6` would overflow.
        self.cost_usd = if sum.abs() < 1e9 { (sum * 1e6).round() / 1e6 } else { sum };
    }

    /// What is wrong with one request's usage as an engine reported it: a
    /// cost that is not a finite number, or below zero. `None` when it can
    /// be recorded and added up.
    pub fn problem(&self) -> Option<String> {
        let cost = self.cost_usd;
        if cost.is_nan() {
            Some("the request's cost (`cost_usd`, as the engine reported it or as its price gives it) is not a number (NaN)".to_owned())
        } else if cost.is_infinite() {
            Some(format!(
                "the request's cost (`cost_usd`, as the engine reported it or as its price gives it) is infinite ({cost})"
            ))
        } else if cost < 0.0 {
            Some(format!(
                "the request's cost (`cost_usd`, as the engine reported it or as its price gives it) is negative ({cost})"
            ))
        } else {
            None
        }
    }
}

#[cfg(test)]
#[allow(clippy::float_cmp)] // exact figures are the point: saturation lands on f64::MAX itself
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_through_their_names() {
        for kind in RequestKind::ALL {
            assert_eq!(kind.as_str().parse::<RequestKind>(), Ok(kind));
            let json = serde_json::to_string(&kind).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        assert!("writes".parse::<RequestKind>().is_err());
    }

    #[test]
    fn only_builders_and_workers_may_write() {
        assert_eq!(RequestKind::Write.access(), Access::MayWrite);
        assert_eq!(RequestKind::Review.access(), Access::ReadOnly);
        assert_eq!(RequestKind::Goal.access(), Access::ReadOnly);
    }

    #[test]
    fn usage_adds_up() {
        let mut total = Usage::default();
        total.add(Usage { input_tokens: 3, output_tokens: 4, cost_usd: 0.5 });
        total.add(Usage { input_tokens: 1, output_tokens: 1, cost_usd: 0.25 });
        assert_eq!(total, Usage { input_tokens: 4, output_tokens: 5, cost_usd: 0.75 });
    }

    #[test]
    fn usage_sums_saturate_and_stay_finite() {
        let huge = Usage { input_tokens: u64::MAX, output_tokens: u64::MAX - 1, cost_usd: 1e308 };
        let mut total = huge;
        total.add(huge);
        assert_eq!(total, Usage { input_tokens: u64::MAX, output_tokens: u64::MAX, cost_usd: f64::MAX });
        total.add(huge);
        assert_eq!(total.cost_usd, f64::MAX);
        // Big but representable: kept exactly (no rounding through `* 1e6`).
        let mut total = Usage { cost_usd: 1e300, ..Usage::default() };
        total.add(Usage { cost_usd: 1e300, ..Usage::default() });
        assert_eq!(total.cost_usd, 2e300);
        assert!(serde_json::to_string(&total).is_ok());
    }

    #[test]
    fn bad_figures_are_named() {
        for (cost, word) in
            [(f64::NAN, "NaN"), (f64::INFINITY, "inf"), (f64::NEG_INFINITY, "-inf"), (-0.01, "negative")]
        {
            let problem = Usage { cost_usd: cost, ..Usage::default() }.problem();
            assert!(
                problem.as_deref().is_some_and(|p| p.contains("cost_usd") && p.contains(word)),
                "{problem:?}"
            );
        }
        for cost in [0.0, -0.0, 1e-9, 1e308, f64::MAX] {
            assert_eq!(Usage { cost_usd: cost, ..Usage::default() }.problem(), None, "{cost}");
        }
    }

    #[test]
    fn usage_that_is_not_finite_is_never_written_as_null() {
        for cost in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(serde_json::to_string(&Usage { cost_usd: cost, ..Usage::default() }).is_err());
        }
    }
}
