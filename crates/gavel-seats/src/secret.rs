//! API keys: read from the environment variable a seat names (`api_key_env`),
//! handed to the seat's process or request only, and never printed.
//!
//! A [`Secret`] has no `Display` and a redacting `Debug`, so it cannot slip
//! into a message by accident; [`Redactor`] scrubs the value out of any text
//! that leaves an engine (error messages, reply bodies quoted in errors).

use std::fmt;

/// A key's value. Read it with [`Secret::expose`] only where it is sent.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    value: String,
    /// The environment variable it came from (safe to show).
    source: String,
}

impl Secret {
    /// Wraps a value read from `source`.
    pub fn new(source: impl Into<String>, value: impl Into<String>) -> Self {
        Self { value: value.into(), source: source.into() }
    }

    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// The name of the variable it was read from.
    pub fn source(&self) -> &str {
        &self.source
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(${} = [redacted])", self.source)
    }
}

/// Why a key could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The variable is not set (or empty) in gavel's environment.
    #[error(
        "no API key: the environment variable `{0}` is not set; export it before running, or name another with `api_key_env`"
    )]
    Missing(String),
}

/// Reads the key from `var` in the current process environment.
pub fn read_key(var: &str) -> Result<Secret, KeyError> {
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => Ok(Secret::new(var, value.trim())),
        _ => Err(KeyError::Missing(var.to_owned())),
    }
}

/// Scrubs secret values out of text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<Secret>,
}

impl Redactor {
    /// A redactor for these secrets.
    pub fn new(secrets: impl IntoIterator<Item = Secret>) -> Self {
        // Short values would scrub ordinary words; a real key is long.
        Self { secrets: secrets.into_iter().filter(|s| s.value.len() >= 4).collect() }
    }

    /// Adds one more secret.
    pub fn push(&mut self, secret: Secret) {
        if secret.value.len() >= 4 {
            self.secrets.push(secret);
        }
    }

    /// `text` with every secret value replaced by `[redacted $VAR]`.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.secrets {
            if out.contains(&secret.value) {
                out = out.replace(&secret.value, &format!("[redacted ${}]", secret.source));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::new("MY_KEY", "sk-very-secret-123");
        let shown = format!("{secret:?}");
        assert!(!shown.contains("sk-very-secret-123"), "{shown}");
        assert!(shown.contains("MY_KEY"));
    }

    #[test]
    fn scrub_replaces_every_occurrence() {
        let r = Redactor::new([Secret::new("K", "abcd1234")]);
        assert_eq!(r.scrub("x abcd1234 y abcd1234"), "x [redacted $K] y [redacted $K]");
        assert_eq!(r.scrub("nothing here"), "nothing here");
    }

    #[test]
    fn missing_key_names_the_variable() {
        let err = read_key("GAVEL_TEST_SURELY_UNSET_VAR").unwrap_err();
        assert!(err.to_string().contains("GAVEL_TEST_SURELY_UNSET_VAR"));
    }
}
