//! How the CLI talks to a person on stderr: progress lines, warnings, errors
//! (with file, line, column and a snippet), and the end-of-run summary.
//! `NO_COLOR` and a non-terminal stderr turn colour off; `-q` silences progress.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use gavel_domain::Located;
use gavel_domain::Usage;
use gavel_record::event::SeatKey;
use gavel_record::{Envelope, Event};
use gavel_runtime::{Outcome, RunError, Status};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode};

use crate::describe;

/// How to write to stderr.
#[derive(Debug, Clone)]
pub struct Style {
    quiet: bool,
    color: bool,
    terminal: bool,
}

impl Style {
    /// From the environment: colour only on a terminal without `NO_COLOR`.
    pub fn detect(quiet: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let terminal = crate::stderr_is_terminal();
        Self { quiet, color: terminal && !no_color, terminal }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color { format!("\x1b[{code}m{text}\x1b[0m") } else { text.to_owned() }
    }

    /// A note (suppressed by `-q`).
    pub fn note(&self, message: &str) {
        if !self.quiet {
            say(message);
        }
    }

    /// Something the person must not miss that needs no action, such as
    /// which folder a resumed run works in (always shown, even with `-q`).
    pub fn notice(&self, message: &str) {
        say(&format!("{} {message}", self.paint("36;1", "note:")));
    }

    /// A warning (always shown).
    pub fn warning(&self, message: &str) {
        say(&format!("{} {message}", self.paint("33;1", "warning:")));
    }

    /// An error, with a snippet when it is located in a file.
    pub fn error(&self, err: &RunError) {
        if let RunError::Invalid(located)
        | RunError::Prompt(gavel_runtime::prompts::PromptError::File(located)) = err
        {
            say(&self.render_located(located));
            return;
        }
        let text = err.to_string();
        // Its last line says how to go on.
        if let RunError::Diverged { .. } = err
            && let Some((message, hint)) = text.rsplit_once('\n')
        {
            say(&format!("{} {message}", self.paint("31;1", "error:")));
            say(&format!("{} {hint}", self.paint("36", "hint:")));
            return;
        }
        let (message, hint) = match text.split_once("; ") {
            Some((m, h)) if matches!(err, RunError::Refused(_) | RunError::Locked(_)) => {
                (m.to_owned(), Some(h.to_owned()))
            }
            _ => (text, None),
        };
        say(&format!("{} {message}", self.paint("31;1", "error:")));
        if let Some(hint) = hint {
            say(&format!("{} {hint}", self.paint("36", "hint:")));
        }
    }

    fn render_located(&self, located: &Located) -> String {
        let diagnostic = FileDiagnostic::from(located);
        let theme = if self.color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
        let mut out = String::new();
        // Wide enough that the `file:line:column: message` headline never wraps:
        // people and scripts grep it.
        let handler = GraphicalReportHandler::new_themed(theme).with_width(400);
        if located.source.is_empty() || handler.render_report(&mut out, &diagnostic).is_err() {
            out = format!("{} {}: {}", self.paint("31;1", "error:"), located.place(), located.message);
        }
        let mut out = out.trim_end().to_owned();
        if let Some(hint) = &located.hint {
            let _ = write!(out, "\n{} {hint}", self.paint("36", "hint:"));
        }
        out
    }

    /// The end-of-run summary (suppressed by `-q`).
    pub fn summary(&self, outcome: &Outcome) {
        if self.quiet {
            return;
        }
        let (word, code) = match outcome.status {
            Status::Pass => ("pass", "32;1"),
            Status::Fail => ("fail", "31;1"),
            Status::Paused => ("paused", "33;1"),
            Status::Error => ("engine error", "31;1"),
        };
        // Summaries and decisions quote replies and answers: their control
        // characters are shown, never sent to the terminal.
        let visible = describe::visible;
        say(&format!("{} {}", self.paint(code, word), visible(&outcome.summary)));
        for stage in &outcome.stages {
            for decision in &stage.decisions {
                say(&format!("  {}: {}", stage.stage, visible(decision)));
            }
        }
        if let Some(waiting) = &outcome.waiting_for {
            let waiting = &visible(waiting);
            let next = if waiting.starts_with("approval") {
                format!("`gavel approve {}` (or `--reject --reason ...`) decides", outcome.run_id)
            } else {
                format!("`gavel resume {}` continues", outcome.run_id)
            };
            say(&format!("  waiting for {waiting}; {next}"));
        }
        say(&format!(
            "  run {} · {} round{} · {}",
            outcome.run_id,
            outcome.rounds,
            if outcome.rounds == 1 { "" } else { "s" },
            describe::usage_text(outcome.usage)
        ));
        say(&format!("  record {}", outcome.record.display()));
    }
}

/// Live progress while a run works: one line per recorded event, with the
/// tokens and cost so far; on a terminal, a spinner per seat at work showing
/// its stage, round, request kind and elapsed time.
#[derive(Debug)]
pub struct Progress<'s> {
    style: &'s Style,
    started: Instant,
    state: Mutex<ProgressState>,
}

#[derive(Debug, Default)]
struct ProgressState {
    usage: Usage,
    /// Spinners of the seats at work, by `stage/round/seat/kind/attempt`.
    spinners: HashMap<String, ProgressBar>,
    multi: Option<MultiProgress>,
}

impl<'s> Progress<'s> {
    /// Progress in `style`: spinners only when stderr is a terminal.
    pub fn new(style: &'s Style) -> Self {
        let multi = (!style.quiet && style.terminal).then(MultiProgress::new);
        Self {
            style,
            started: Instant::now(),
            state: Mutex::new(ProgressState { multi, ..ProgressState::default() }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ProgressState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// An event was recorded.
    pub fn event(&self, envelope: &Envelope) {
        let mut state = self.lock();
        let key = match &envelope.event {
            Event::SeatReply(reply) => {
                state.usage.add(reply.usage);
                Some(spinner_key(&reply.key))
            }
            Event::SeatError(error) => Some(spinner_key(&error.key)),
            _ => None,
        };
        if let Some(spinner) = key.and_then(|k| state.spinners.remove(&k)) {
            spinner.finish_and_clear();
        }
        if self.style.quiet {
            return;
        }
        let elapsed = self.started.elapsed().as_secs_f64();
        let mut line = format!(
            "{} {:<16} {}",
            self.style.paint("2", &format!("[{elapsed:>6.1}s]")),
            envelope.event.kind(),
            describe::what(&envelope.event)
        );
        if matches!(envelope.event, Event::SeatReply(_)) {
            let _ = write!(
                line,
                " {}",
                self.style.paint("2", &format!("· so far {}", describe::usage_text(state.usage)))
            );
        }
        match &state.multi {
            Some(multi) => {
                let _ = multi.println(gavel_seats::secret::scrub(&line));
            }
            None => say(&line),
        }
    }

    /// A seat starts working: on a terminal, a spinner until it answers.
    pub fn seat_start(&self, key: &SeatKey) {
        let mut state = self.lock();
        let Some(multi) = state.multi.clone() else { return };
        let spinner = multi.add(ProgressBar::new_spinner());
        let template = if self.style.color {
            "{spinner:.cyan} {msg} {elapsed:.dim}"
        } else {
            "{spinner} {msg} {elapsed}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            spinner.set_style(style);
        }
        spinner.set_message(format!(
            "{} r{} · {} ← {} (attempt {}) · so far {}",
            key.stage,
            key.round,
            key.seat,
            key.request,
            key.attempt,
            describe::usage_text(state.usage)
        ));
        spinner.enable_steady_tick(Duration::from_millis(120));
        state.spinners.insert(spinner_key(key), spinner);
    }

    /// A warning.
    pub fn warning(&self, message: &str) {
        let state = self.lock();
        match &state.multi {
            Some(multi) => {
                multi.suspend(|| self.style.warning(message));
            }
            None => self.style.warning(message),
        }
    }

    /// A note that is always shown.
    pub fn notice(&self, message: &str) {
        let state = self.lock();
        match &state.multi {
            Some(multi) => {
                multi.suspend(|| self.style.notice(message));
            }
            None => self.style.notice(message),
        }
    }
}

fn spinner_key(key: &SeatKey) -> String {
    format!("{}/{}/{}/{}/{}", key.stage, key.round, key.seat, key.request, key.attempt)
}

/// A located error as a miette diagnostic.
#[derive(Debug)]
struct FileDiagnostic {
    message: String,
    source: NamedSource<String>,
    span: miette::SourceSpan,
    label: String,
}

impl From<&Located> for FileDiagnostic {
    fn from(located: &Located) -> Self {
        let len = located.span.end.saturating_sub(located.span.start);
        Self {
            message: format!("{}: {}", located.place(), located.message),
            source: NamedSource::new(located.path.display().to_string(), located.source.clone()),
            span: (located.span.start, len).into(),
            label: "here".to_owned(),
        }
    }
}

impl std::fmt::Display for FileDiagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FileDiagnostic {}

impl Diagnostic for FileDiagnostic {
    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(std::iter::once(LabeledSpan::new_with_span(Some(self.label.clone()), self.span))))
    }
}

/// Writes one line to stderr, scrubbed of every secret the process knows
/// (the record is scrubbed already; this guards what never went through it).
fn say(line: &str) {
    let line = gavel_seats::secret::scrub(line);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}
