//! Readable views of the record: one line per event for `gavel log` and
//! progress, and the `gavel status` block.

use std::fmt::Write as _;
use std::path::Path;

use gavel_domain::Usage;
use gavel_record::event::ReviewOutcome;
use gavel_record::{Envelope, Event, RunState, RunStatus};

/// One readable line for an event: `seq  time  kind  what happened`.
pub fn line(envelope: &Envelope) -> String {
    let time = envelope.at.strftime("%H:%M:%S%.3f");
    format!("{:>4}  {time}  {:<16} {}", envelope.seq, envelope.event.kind(), what(&envelope.event))
}

/// What an event says, in a few words, on one line: text that carries line
/// breaks (a command's output in a summary) is folded with `⏎`.
pub fn what(event: &Event) -> String {
    let text = visible(&what_raw(event));
    if text.contains('\n') { one_line(&text) } else { text }
}

/// `text` with every control character but line breaks and tabs made
/// visible (`␛` for escape, `�` for the rest): a reply, a reason or a name
/// from an answers file may carry escape sequences that would retitle,
/// clear or recolour the person's terminal.
pub fn visible(text: &str) -> String {
    if !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return text.to_owned();
    }
    text.chars()
        .map(|c| match c {
            '\n' | '\t' => c,
            '\u{1b}' => '\u{241b}',
            c if c.is_control() => '\u{fffd}',
            c => c,
        })
        .collect()
}

fn what_raw(event: &Event) -> String {
    match event {
        Event::RunStart(e) => {
            format!("run {} of workflow `{}` ({}) in {}", e.run_id, e.workflow, e.file, e.workspace)
        }
        Event::StageStart(e) => format!("{} round {}", e.stage, e.round),
        Event::SeatRequest(e) => {
            let k = &e.key;
            let mut s = format!(
                "{} r{}: {} ← {} (attempt {}), prompt {}",
                k.stage,
                k.round,
                k.seat,
                k.request,
                k.attempt,
                short(&e.prompt_sha256)
            );
            if let Some(note) = &e.note {
                // The first sentence says what was wrong; the record has the rest.
                let first = note.split_once(". ").map_or(note.as_str(), |(first, _)| first);
                let _ = write!(s, "; asked once more: {}", first.trim_end_matches('.'));
            }
            s
        }
        Event::SeatReply(e) => {
            let k = &e.key;
            format!(
                "{} r{}: {} → {} (attempt {}) in {}: {}{}",
                k.stage,
                k.round,
                k.seat,
                k.request,
                k.attempt,
                millis(e.ms),
                quote(&e.text, 60),
                usage_suffix(e.usage)
            )
        }
        Event::SeatError(e) => {
            let k = &e.key;
            format!(
                "{} r{}: {} ✗ {} (attempt {}): {}",
                k.stage, k.round, k.seat, k.request, k.attempt, e.error
            )
        }
        Event::BuildDone(e) => {
            let mut s = format!("{} r{}: {} file{}", e.stage, e.round, e.files.len(), plural(e.files.len()));
            if !e.files.is_empty() {
                let _ = write!(s, " ({})", e.files.keys().cloned().collect::<Vec<_>>().join(", "));
            }
            if !e.missing.is_empty() {
                let _ = write!(s, "; missing {}", e.missing.join(", "));
            }
            s
        }
        Event::CheckRun(e) => {
            let command =
                e.argv.as_ref().map_or_else(|| e.shell.clone().unwrap_or_default(), |a| a.join(" "));
            let result = if e.timed_out {
                "timed out".to_owned()
            } else if let Some(error) = &e.error {
                format!("could not start: {error}")
            } else {
                e.exit.map_or_else(|| "killed".to_owned(), |c| format!("exit {c}"))
            };
            format!("{} r{}: `{command}` {result} in {}", e.stage, e.round, millis(e.ms))
        }
        Event::JobDone(e) => {
            let to = e.to.as_ref().map_or_else(String::new, |to| format!(" → {to}"));
            format!("{} r{}: job {}{to}: {}", e.stage, e.round, e.status, e.summary)
        }
        Event::GoalCheck(e) => {
            let unmet =
                e.requirements.iter().filter(|r| r.verdict == gavel_domain::protocol::Verdict::Unmet).count();
            format!(
                "{} r{}: {} requirement{}, {unmet} unmet",
                e.stage,
                e.round,
                e.requirements.len(),
                plural(e.requirements.len())
            )
        }
        Event::ReviewDecision(e) => {
            let decision = match e.decision {
                ReviewOutcome::Pass => "pass",
                ReviewOutcome::Revise => "revise",
                ReviewOutcome::Error => "engine error",
            };
            let mut s = format!(
                "{} r{}: {} {decision}, {} finding{}",
                e.stage,
                e.round,
                e.reviewer,
                e.findings.len(),
                plural(e.findings.len())
            );
            if let Some(error) = &e.error {
                let _ = write!(s, ": {error}");
            }
            s
        }
        Event::ReviewSynthesis(e) => {
            let mut s = format!(
                "{} r{}: {} merged finding{}",
                e.stage,
                e.round,
                e.entries.len(),
                plural(e.entries.len()),
            );
            match (&e.merge_error, e.merge_failed) {
                (Some(error), _) => {
                    let _ = write!(s, " (merge failed: {error})");
                }
                (None, true) => s.push_str(" (merge failed)"),
                (None, false) => {}
            }
            for (reviewer, error) in &e.vote_errors {
                let _ = write!(s, "; no votes from {reviewer}: {error}");
            }
            s
        }
        Event::RefineJudge(e) => {
            let mut s = format!("{} r{}: route {:?}: {}", e.stage, e.round, e.route, e.reason).to_lowercase();
            if let Some(error) = &e.error {
                let _ = write!(s, "; the judge's reply could not be used: {error}");
            }
            s
        }
        Event::Kickback(e) => format!(
            "{} → {}: {} ({} finding{})",
            e.from,
            e.to,
            e.reason,
            e.findings.len(),
            plural(e.findings.len())
        ),
        Event::ApprovalRequest(e) => {
            let mut s = format!("{}: {} file{} to approve", e.stage, e.files.len(), plural(e.files.len()));
            if let Some(reason) = &e.reason {
                let _ = write!(s, " ({reason})");
            }
            s
        }
        Event::Approval(e) => format!(
            "{}: {} by {}{}",
            e.stage,
            if e.approved { "approved" } else { "rejected" },
            e.by,
            if e.reason.is_empty() { String::new() } else { format!(": {}", e.reason) }
        ),
        Event::RunPause(e) => format!("waiting for {}: {}", e.waiting_for, e.reason),
        Event::RunResume(e) => {
            if e.waiting_for.is_empty() {
                e.reason.clone()
            } else {
                format!("{} (was waiting for {})", e.reason, e.waiting_for)
            }
        }
        Event::RunEnd(e) => format!(
            "{}: {} ({} round{}{})",
            e.status.as_str(),
            e.summary,
            e.rounds,
            plural(e.rounds),
            usage_suffix(e.usage)
        ),
    }
}

/// The `gavel status` block.
pub fn status(state: &RunState, record: &Path, live: Option<&str>) -> String {
    let mut s = String::new();
    let status = match &state.status {
        RunStatus::Empty => "empty (no run:start)".to_owned(),
        RunStatus::Running => match live {
            Some("") => "running".to_owned(),
            Some(holder) => format!("running {holder}"),
            None => "interrupted (`gavel resume` takes it up)".to_owned(),
        },
        RunStatus::Paused { reason, waiting_for } => {
            format!("paused, waiting for {waiting_for}: {}", one_line(reason))
        }
        RunStatus::Ended { status, summary } => format!("{}: {}", status.as_str(), one_line(summary)),
    };
    let _ = writeln!(s, "run       {}", state.run_id);
    let _ = writeln!(s, "workflow  {} ({})", state.workflow, state.file);
    let _ = writeln!(s, "status    {status}");
    if let Some(stage) = &state.stage {
        let _ = writeln!(s, "stage     {stage}, round {}", state.round);
    }
    if let Some(in_flight) = &state.in_flight {
        let _ = writeln!(s, "asking    {in_flight}");
    }
    let _ = writeln!(s, "rounds    {}", state.rounds);
    let _ = writeln!(
        s,
        "requests  {} ({} engine error{})",
        state.requests,
        state.engine_errors,
        plural(state.engine_errors)
    );
    // The latest few reasons; `gavel status --json` has them all.
    let shown = state.errors.len().saturating_sub(ERRORS_SHOWN);
    if shown > 0 {
        let _ = writeln!(s, "          … {shown} earlier (see --json)");
    }
    for error in &state.errors[shown..] {
        let _ = writeln!(
            s,
            "          ✗ {} r{}: {} {} (attempt {}): {}",
            error.stage,
            error.round,
            error.seat,
            error.request,
            error.attempt,
            cut(&one_line(&error.error), 200)
        );
    }
    let _ = writeln!(s, "usage     {}", usage_text(state.usage));
    let _ = writeln!(s, "events    {}", state.events);
    if let (Some(start), Some(last)) = (state.started_at, state.last_at) {
        let _ = writeln!(s, "time      {start} → {last}");
    }
    let _ = writeln!(s, "record    {}", record.display());
    // Reasons and names come from replies and files: shown, never obeyed
    // by the terminal.
    visible(&s)
}

/// How many engine errors `gavel status` lists (the latest).
const ERRORS_SHOWN: usize = 5;

/// `text` cut to `max` characters, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(max).collect::<String>())
    }
}

/// Text on one line: line breaks folded with `⏎`.
pub fn one_line(text: &str) -> String {
    text.trim_end().replace("\r\n", "\n").replace('\n', " ⏎ ")
}

/// Tokens and cost, in words.
pub fn usage_text(usage: Usage) -> String {
    format!("{} in / {} out tokens, ${:.4}", usage.input_tokens, usage.output_tokens, usage.cost_usd)
}

fn usage_suffix(usage: Usage) -> String {
    if usage == Usage::default() { String::new() } else { format!(" [{}]", usage_text(usage)) }
}

fn millis(ms: u64) -> String {
    if ms < 1000 { format!("{ms} ms") } else { format!("{}.{} s", ms / 1000, (ms % 1000) / 100) }
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

fn plural<N: PartialEq + From<u8> + Copy>(n: N) -> &'static str {
    if n == N::from(1) { "" } else { "s" }
}

/// The text on one line, cut to `max` characters.
fn quote(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        format!("\"{flat}\"")
    } else {
        format!("\"{}…\"", flat.chars().take(max).collect::<String>())
    }
}
