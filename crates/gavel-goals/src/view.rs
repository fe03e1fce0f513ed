//! Readable views of a goal's record: `state.md` (regenerated after every
//! step; a fold of the record alone, so deleting it loses nothing) and one
//! line per event for `gavel goal log`.

use std::fmt::Write as _;

use gavel_record::Envelope;

use crate::event::{CriterionStatus, DecidedBy, GoalEvent, HookDecision};
use crate::state::GoalState;
use crate::store::GoalPaths;

/// How many recent events `state.md` lists.
const RECENT_EVENTS: usize = 12;

/// The text of `state.md`.
pub fn state_md(paths: &GoalPaths, state: &GoalState, events: &[Envelope<GoalEvent>]) -> String {
    let mut out = String::new();
    let title = if state.title.is_empty() { "(no record yet)" } else { state.title.as_str() };
    let _ = writeln!(out, "# Goal `{}`: {}", paths.id, cell(title));
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "<!-- Written by gavel from events.jsonl after every step. Deleting this file loses nothing: `gavel goal status {}` writes it again. -->",
        paths.id
    );
    let _ = writeln!(out);
    let reason =
        if state.status_reason.is_empty() { String::new() } else { format!(" ({})", state.status_reason) };
    let _ = writeln!(out, "- **Status:** {}{reason}", state.status);
    let _ = writeln!(
        out,
        "- **Base commit:** {}",
        state
            .base_commit
            .as_deref()
            .map_or_else(|| "none (created outside git)".to_owned(), |c| format!("`{c}`"))
    );
    match &state.last {
        Some(last) => {
            let e = &last.evaluation;
            let _ = writeln!(
                out,
                "- **Evaluations:** {} · last at {} ({}, run `{}`)",
                state.evaluations,
                last.at,
                e.trigger.as_str(),
                e.run_id
            );
        }
        None => {
            let _ = writeln!(out, "- **Evaluations:** none yet (`gavel goal evaluate {}`)", paths.id);
        }
    }
    match &state.proposal {
        Some(p) => {
            let _ = writeln!(
                out,
                "- **Proposed transition:** {} — {} (`{}`, by {}). `gavel goal confirm {}` applies it; `--reject` keeps the goal going.",
                p.to,
                cell(&p.summary),
                p.reason,
                actor(p.by),
                paths.id
            );
        }
        None => {
            let _ = writeln!(out, "- **Proposed transition:** none");
        }
    }
    if state.hook_blocks > 0 {
        let _ = writeln!(out, "- **Stop hook:** blocked {} time(s) in a row", state.hook_blocks);
    }

    if let Some(last) = &state.last {
        let e = &last.evaluation;
        let _ = writeln!(out);
        let _ = writeln!(out, "## Criteria (last evaluation)");
        let _ = writeln!(out);
        let _ = writeln!(out, "| id | criterion | must pass | status | decided by | evidence |");
        let _ = writeln!(out, "| --- | --- | --- | --- | --- | --- |");
        for c in &e.criteria {
            let status = match c.status {
                CriterionStatus::Pass => "✅ pass",
                CriterionStatus::Fail => "❌ fail",
                CriterionStatus::Pending => "⏳ pending",
            };
            let by = match c.decided_by {
                DecidedBy::Command => match (c.exit, c.timed_out) {
                    (_, true) => "command (timed out)".to_owned(),
                    (Some(code), false) => format!("command (exit {code})"),
                    (None, false) => "command (no exit code)".to_owned(),
                },
                DecidedBy::Judge => "judge".to_owned(),
                DecidedBy::None => cell(&c.note),
            };
            let evidence = c
                .evidence
                .as_deref()
                .map_or_else(|| "—".to_owned(), |path| format!("[{}]({})", c.id, link(paths, path)));
            let _ = writeln!(
                out,
                "| {} | {} | {} | {status} | {by} | {evidence} |",
                cell(&c.id),
                cell(&c.text),
                if c.must_pass { "yes" } else { "no" }
            );
        }
        if let Some(boundary) = &e.path_boundary {
            let _ = writeln!(out);
            let verdict = match (&boundary.error, boundary.violations.is_empty()) {
                (Some(error), _) => format!("cannot be checked: {}", cell(error)),
                (None, true) => format!("holds ({} changed file(s), all allowed)", boundary.changed.len()),
                (None, false) => format!(
                    "broken by {}",
                    boundary.violations.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
                ),
            };
            let evidence = boundary
                .evidence
                .as_deref()
                .map_or_else(String::new, |p| format!(" ([evidence]({}))", link(paths, p)));
            let _ = writeln!(
                out,
                "Path boundary ({}): {verdict}{evidence}",
                boundary.allowed.iter().map(|g| format!("`{g}`")).collect::<Vec<_>>().join(", ")
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(out, "## Last verdict");
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "**{}** (confidence {:.2}, `{}`): {}",
            e.verdict.as_str(),
            e.confidence,
            e.reason,
            cell(&e.summary)
        );
        let _ = writeln!(out);
        let _ = writeln!(out, "Next: {}", cell(&e.hint));
    }

    let _ = writeln!(out);
    let _ = writeln!(out, "## Recent events");
    let _ = writeln!(out);
    let skip = events.len().saturating_sub(RECENT_EVENTS);
    for envelope in &events[skip..] {
        let time = envelope.at.strftime("%Y-%m-%d %H:%M:%S");
        let _ = writeln!(
            out,
            "- {} {time} `{}` {}",
            envelope.seq,
            envelope.event.kind(),
            cell(&what(&envelope.event))
        );
    }
    out
}

/// One readable line for an event: `seq  time  kind  what happened`.
pub fn line(envelope: &Envelope<GoalEvent>) -> String {
    let time = envelope.at.strftime("%Y-%m-%d %H:%M:%S");
    format!("{:>3} {time} {:<15} {}", envelope.seq, envelope.event.kind(), what(&envelope.event))
}

/// What an event says, in a few words.
pub fn what(event: &GoalEvent) -> String {
    match event {
        GoalEvent::Created(e) => format!(
            "goal `{}` \"{}\", base {}{}",
            e.goal_id,
            e.title,
            e.base_commit.as_deref().map_or("none", |c| c.get(..12).unwrap_or(c)),
            if e.adopted { " (adopted)" } else { "" }
        ),
        GoalEvent::Judged(e) => {
            let result = match (&e.verdict, &e.error, &e.problem) {
                (Some(v), _, _) => format!("{v:?}").to_lowercase(),
                (None, Some(err), _) => format!("error: {err}"),
                (None, None, Some(p)) => format!("unreadable: {p}"),
                (None, None, None) => "no verdict".to_owned(),
            };
            format!("{} asked about {} (attempt {}): {result}", e.seat, e.criterion, e.attempt)
        }
        GoalEvent::Evaluated(e) => format!(
            "{} ({}) run {} [{}]: {}",
            e.verdict.as_str(),
            e.trigger.as_str(),
            e.run_id,
            e.criteria
                .iter()
                .map(|c| format!("{} {}", c.id, c.status.as_str()))
                .collect::<Vec<_>>()
                .join(", "),
            e.summary
        ),
        GoalEvent::Status(e) => format!("{} → {} ({}, by {})", e.from, e.to, e.reason, actor(e.by)),
        GoalEvent::Proposed(e) => {
            format!("proposes {} ({}, by {}): {}", e.to, e.reason, actor(e.by), e.summary)
        }
        GoalEvent::Withdrawn(e) => format!("withdraws {}: {}", e.to, e.reason),
        GoalEvent::Decided(e) => format!(
            "{} {} by {}{}",
            if e.approved { "confirmed" } else { "rejected" },
            e.to,
            e.by,
            if e.reason.is_empty() { String::new() } else { format!(": {}", e.reason) }
        ),
        GoalEvent::HookStop(e) => format!(
            "{} the stop ({}){}",
            match e.decision {
                HookDecision::Block => "blocked",
                HookDecision::Allow => "allowed",
            },
            e.reason,
            if e.stop_hook_active { ", re-entered" } else { "" }
        ),
    }
}

fn actor(actor: crate::event::Actor) -> &'static str {
    match actor {
        crate::event::Actor::Evaluator => "the evaluator",
        crate::event::Actor::Person => "a person",
        crate::event::Actor::Hook => "the stop hook",
    }
}

/// A path from the project root as a link from the goal's folder.
fn link(paths: &GoalPaths, from_root: &str) -> String {
    let prefix = format!("{}/", paths.from_root(&paths.dir));
    from_root.strip_prefix(&prefix).unwrap_or(from_root).to_owned()
}

/// Text safe inside one Markdown table cell or line.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}
