//! The ways a person answers an approve stage: an answers file (offline
//! runs), a prompt on the terminal, or the flags of `gavel approve`.

use std::collections::BTreeMap;
use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::Path;

use gavel_domain::Located;
use gavel_runtime::{ApprovalAnswer, ApprovalAsk, Approver};
use serde::Deserialize;

/// One stage's answer in an answers file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    approved: bool,
    #[serde(default)]
    by: Option<String>,
    #[serde(default)]
    reason: String,
}

/// Answers from a file: `[<stage>] approved = true, by = "...", reason = "..."`
/// (TOML), or the same shape as JSON.
#[derive(Debug)]
pub struct AnswersFile {
    path: String,
    entries: BTreeMap<String, Entry>,
}

impl AnswersFile {
    /// Reads and checks an answers file.
    pub fn load(path: &Path) -> Result<Self, Box<Located>> {
        let text = gavel_fs::read::read_text(path, gavel_fs::read::UserFile::Answers).map_err(|err| {
            Box::new(
                Located::about_file(path, err.message())
                    .with_hint(err.hint_or("give a TOML or JSON file with one table per approve stage")),
            )
        })?;
        let hint =
            "write one table per approve stage: [approve] approved = true, by = \"name\", reason = \"...\"";
        let is_json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let entries: BTreeMap<String, Entry> = if is_json {
            serde_json::from_str(&text).map_err(|err| {
                let offset = gavel_domain::located::offset_of(&text, err.line(), err.column());
                Box::new(
                    Located::new(path, &text, offset..offset, format!("invalid answers: {err}"))
                        .with_hint(hint),
                )
            })?
        } else {
            toml::from_str(&text).map_err(|err| {
                Box::new(
                    Located::new(
                        path,
                        &text,
                        err.span().unwrap_or(0..0),
                        format!("invalid answers: {}", err.message()),
                    )
                    .with_hint(hint),
                )
            })?
        };
        Ok(Self { path: path.display().to_string(), entries })
    }
}

impl Approver for AnswersFile {
    fn decide(&self, ask: &ApprovalAsk) -> Option<ApprovalAnswer> {
        let entry = self.entries.get(&ask.stage)?;
        Some(ApprovalAnswer {
            approved: entry.approved,
            by: entry.by.clone().unwrap_or_else(|| format!("answers file {}", self.path)),
            reason: entry.reason.clone(),
        })
    }
}

/// The decision given with `gavel approve [--reject] [--reason]`. It answers
/// only the ask that was pending when the person decided: if the bytes
/// changed since, the run asks again.
#[derive(Debug)]
pub struct FlagAnswer {
    pub approved: bool,
    pub by: String,
    pub reason: String,
}

impl Approver for FlagAnswer {
    fn decide(&self, ask: &ApprovalAsk) -> Option<ApprovalAnswer> {
        if ask.asked_again {
            return None;
        }
        Some(ApprovalAnswer { approved: self.approved, by: self.by.clone(), reason: self.reason.clone() })
    }
}

/// Asks on the terminal, showing each file with its size and SHA-256.
#[derive(Debug)]
pub struct TerminalPrompt {
    pub by: String,
}

impl TerminalPrompt {
    /// A prompt, when both stdin and stderr are terminals.
    pub fn if_interactive(by: String) -> Option<Self> {
        (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()).then_some(Self { by })
    }
}

impl Approver for TerminalPrompt {
    fn decide(&self, ask: &ApprovalAsk) -> Option<ApprovalAnswer> {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "\nStage `{}` asks you to approve these exact bytes:", ask.stage);
        if ask.asked_again {
            let _ = writeln!(err, "(they changed since the approval was first asked for)");
        }
        for (file, sha) in &ask.files {
            let size = std::fs::metadata(ask.workspace.join(file)).map_or(0, |m| m.len());
            let _ = writeln!(err, "  {file}  {size} bytes  sha256 {}", sha.get(..16).unwrap_or(sha));
        }
        let _ = write!(err, "Approve? [y]es / [n]o / anything else to decide later: ");
        let _ = err.flush();
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line).ok()?;
        let approved = match line.trim().to_lowercase().as_str() {
            "y" | "yes" => true,
            "n" | "no" => false,
            _ => return None,
        };
        let mut reason = String::new();
        if !approved {
            let _ = write!(err, "Why? ");
            let _ = err.flush();
            let _ = std::io::stdin().lock().read_line(&mut reason);
        }
        Some(ApprovalAnswer { approved, by: self.by.clone(), reason: reason.trim().to_owned() })
    }
}

/// Who is deciding: `--by`, else the login name.
pub fn person(by: Option<&str>) -> String {
    by.map(str::to_owned)
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "unknown".to_owned())
}
