//! How the CLI talks to a person on stderr: progress lines, warnings, errors
//! (with file, line, column and a snippet), and the end-of-run summary.
//! `NO_COLOR` and a non-terminal stderr turn colour off; `-q` silences progress.

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::Instant;

use gavel_domain::Located;
use gavel_record::Envelope;
use gavel_runtime::{Outcome, RunError, Status};
use miette::{Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode};

use crate::describe;

/// How to write to stderr.
#[derive(Debug, Clone)]
pub struct Style {
    quiet: bool,
    color: bool,
}

impl Style {
    /// From the environment: colour only on a terminal without `NO_COLOR`.
    pub fn detect(quiet: bool) -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self { quiet, color: crate::stderr_is_terminal() && !no_color }
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

    /// A warning (always shown).
    pub fn warning(&self, message: &str) {
        say(&format!("{} {message}", self.paint("33;1", "warning:")));
    }

    /// An error, with a snippet when it is located in a file.
    pub fn error(&self, err: &RunError) {
        if let RunError::Invalid(located) = err {
            say(&self.render_located(located));
            return;
        }
        let text = err.to_string();
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
        let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
        if located.source.is_empty() || handler.render_report(&mut out, &diagnostic).is_err() {
            let (line, column) = (located.line, located.column);
            out = format!(
                "{} {}:{line}:{column}: {}",
                self.paint("31;1", "error:"),
                located.path.display(),
                located.message
            );
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
        say(&format!("{} {}", self.paint(code, word), outcome.summary));
        for stage in &outcome.stages {
            for decision in &stage.decisions {
                say(&format!("  {}: {decision}", stage.stage));
            }
        }
        if let Some(waiting) = &outcome.waiting_for {
            say(&format!("  waiting for {waiting}; `gavel resume {}` continues", outcome.run_id));
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

/// Live progress: one plain line per event on stderr.
#[derive(Debug)]
pub struct Progress<'s> {
    style: &'s Style,
    started: Instant,
}

impl<'s> Progress<'s> {
    /// Progress in `style`.
    pub fn new(style: &'s Style) -> Self {
        Self { style, started: Instant::now() }
    }

    /// An event was recorded.
    pub fn event(&self, envelope: &Envelope) {
        let elapsed = self.started.elapsed().as_secs_f64();
        self.style.note(&format!(
            "{} {:<16} {}",
            self.style.paint("2", &format!("[{elapsed:>6.1}s]")),
            envelope.event.kind(),
            describe::what(&envelope.event)
        ));
    }

    /// A warning.
    pub fn warning(&self, message: &str) {
        self.style.warning(message);
    }
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
            message: format!(
                "{}:{}:{}: {}",
                located.path.display(),
                located.line,
                located.column,
                located.message
            ),
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

fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}
