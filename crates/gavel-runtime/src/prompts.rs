//! Prompt templates: one per request kind, shipped in the binary and
//! overridable per project with `prompts_dir` (`<kind>.md` files).
//!
//! Templates are minijinja with strict undefined variables, so a typo in an
//! override fails loudly instead of sending a prompt with a hole in it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use gavel_domain::RequestKind;
use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;
use sha2::{Digest as _, Sha256};

/// The shipped template of each kind that has one.
fn builtin(kind: RequestKind) -> Option<&'static str> {
    match kind {
        RequestKind::Write => Some(include_str!("../prompts/write.md")),
        RequestKind::Goal => Some(include_str!("../prompts/goal.md")),
        RequestKind::Review => Some(include_str!("../prompts/review.md")),
        RequestKind::Merge => Some(include_str!("../prompts/merge.md")),
        RequestKind::Vote => Some(include_str!("../prompts/vote.md")),
        RequestKind::Judge => Some(include_str!("../prompts/judge.md")),
        _ => None,
    }
}

/// A rendered prompt and its digest (recorded with each request).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The text sent to the seat.
    pub text: String,
    /// SHA-256 of the text, hex.
    pub sha256: String,
}

/// Why a prompt could not be rendered.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// No template for this kind.
    #[error("no prompt template for `{kind}` requests; add {dir}/{kind}.md")]
    Missing {
        /// The kind.
        kind: RequestKind,
        /// Where an override would go.
        dir: String,
    },
    /// An override could not be read (not a regular file, too large, not
    /// text): the person's file is at fault, not the engine.
    #[error(transparent)]
    File(Box<gavel_domain::Located>),
    /// The template (shipped or overridden) is broken.
    #[error("the `{kind}` prompt template {origin}: {message}")]
    Template {
        /// The kind.
        kind: RequestKind,
        /// Which template: `(shipped)` or its path.
        origin: String,
        /// What minijinja said.
        message: String,
    },
}

/// The override of `kind`'s template in `dir`, when there is one: a
/// bounded read of a regular file (a FIFO or a device there is an error,
/// never a hang); a missing file means the shipped template.
pub fn read_override(dir: &Path, kind: RequestKind) -> Result<Option<String>, PromptError> {
    let path = dir.join(format!("{kind}.md"));
    match gavel_fs::read::read_text(&path, gavel_fs::read::UserFile::Prompt) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.is_missing() => Ok(None),
        Err(err) => Err(PromptError::File(Box::new(
            gavel_domain::Located::about_file(&path, err.message()).with_hint(err.hint()),
        ))),
    }
}

/// The templates of one run, each compiled once on first use.
pub struct Prompts {
    dir: Option<PathBuf>,
    /// Compiled templates, and where each came from, for errors.
    env: Mutex<(Environment<'static>, HashMap<RequestKind, String>)>,
}

impl std::fmt::Debug for Prompts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompts").field("dir", &self.dir).finish_non_exhaustive()
    }
}

/// How many template instructions one prompt may take: far more than any
/// prompt needs (the shipped ones take a few thousand), far less than a
/// runaway loop.
const TEMPLATE_FUEL: u64 = 20_000_000;

/// The widest indent the `indent` filter gives.
const MAX_INDENT: usize = 1024;

/// `indent(width=4, first=false, blank=false)`, as minijinja's own, with
/// the width bounded.
fn bounded_indent(
    value: &str,
    width: Option<usize>,
    first: Option<bool>,
    blank: Option<bool>,
) -> Result<String, minijinja::Error> {
    let width = width.unwrap_or(4);
    if width > MAX_INDENT {
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            format!("indent({width}) is wider than {MAX_INDENT}"),
        ));
    }
    let pad = " ".repeat(width);
    let mut out = String::with_capacity(value.len());
    for (i, line) in value.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let indented =
            (i > 0 || first.unwrap_or(false)) && (!line.trim().is_empty() || blank.unwrap_or(false));
        if indented {
            out.push_str(&pad);
        }
        out.push_str(line);
    }
    Ok(out)
}

impl Prompts {
    /// Templates from the binary, overridden by `dir/<kind>.md` where present.
    pub fn new(dir: Option<&Path>) -> Self {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        // A template is a user's file: a loop without end or a filter asked
        // for a gigabyte of padding is an error, not a hung or crashed run.
        env.set_fuel(Some(TEMPLATE_FUEL));
        env.add_filter("indent", bounded_indent);
        // Block tags on their own lines leave no blank lines behind.
        if let Ok(syntax) =
            minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build()
        {
            env.set_syntax(syntax);
        }
        Self { dir: dir.map(Path::to_owned), env: Mutex::new((env, HashMap::new())) }
    }

    /// Renders the template of `kind` with `context`.
    pub fn render(&self, kind: RequestKind, context: &impl Serialize) -> Result<Prompt, PromptError> {
        let mut guard = self.env.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (env, origins) = &mut *guard;
        if let std::collections::hash_map::Entry::Vacant(slot) = origins.entry(kind) {
            let (source, origin) = self.source(kind)?;
            env.add_template_owned(kind.as_str(), source).map_err(|err| PromptError::Template {
                kind,
                origin: origin.clone(),
                message: err.to_string(),
            })?;
            slot.insert(origin);
        }
        let origin = || origins.get(&kind).cloned().unwrap_or_default();
        // A panic inside the template engine (a builtin asked for an absurd
        // size) is the template's fault: an error naming it, not a crash.
        let rendered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            env.get_template(kind.as_str())
                .and_then(|t| t.render(minijinja::Value::from(minijinja::value::Serde(context))))
        }))
        .map_err(|_| PromptError::Template {
            kind,
            origin: origin(),
            message: "rendering it failed (a filter or operation asked for more than can be made)".to_owned(),
        })?;
        let text = rendered.map_err(|err| PromptError::Template {
            kind,
            origin: origin(),
            message: err.to_string(),
        })?;
        let sha256 = hex::encode(Sha256::digest(text.as_bytes()));
        Ok(Prompt { text, sha256 })
    }

    fn source(&self, kind: RequestKind) -> Result<(String, String), PromptError> {
        if let Some(dir) = &self.dir
            && let Some(text) = read_override(dir, kind)?
        {
            return Ok((text, dir.join(format!("{kind}.md")).display().to_string()));
        }
        builtin(kind).map(|t| (t.to_owned(), "(shipped)".to_owned())).ok_or_else(|| PromptError::Missing {
            kind,
            dir: self.dir.as_deref().map_or_else(|| "<prompts_dir>".to_owned(), |d| d.display().to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn render_with(template: &str) -> Result<Prompt, PromptError> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("write.md"), template).unwrap();
        Prompts::new(Some(dir.path())).render(RequestKind::Write, &serde_json::json!({"name": "x"}))
    }

    #[test]
    fn a_template_that_asks_too_much_is_an_error_not_a_crash_or_a_hang() {
        for template in [
            r#"{{ "x"|indent(10000000000000000000) }}"#,
            r#"{{ "x"|indent(100000000000) }}"#,
            "{% for a in range(10000) %}{% for b in range(10000) %}{{ a }}{% endfor %}{% endfor %}",
            "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
        ] {
            let err = render_with(template).unwrap_err();
            assert!(matches!(err, PromptError::Template { .. }), "{template}: {err:?}");
            assert!(err.to_string().contains("write.md"), "{template}: {err}");
        }
    }

    #[test]
    fn indent_works_as_before_within_its_bound() {
        let text = render_with(r#"{{ "a\nb\n\nc"|indent(2) }}|{{ "a\nb"|indent(2, true) }}"#).unwrap().text;
        assert_eq!(text, "a\n  b\n\n  c|  a\n  b");
    }
}
