//! API keys: read from the environment variable a seat names (`api_key_env`),
//! handed to the seat's process or request only, and never printed.
//!
//! A [`Secret`] has no `Display` and a redacting `Debug`, so it cannot slip
//! into a message by accident.
//!
//! **One redactor for the whole process.** Every key gavel hands to a seat is
//! remembered here when it is read or given: keys read from `api_key_env` or
//! an engine's default variable ([`read_key`]), keys given with `with_key`,
//! the values of a seat's `env` whose names look secret ([`looks_secret`]:
//! `*KEY*`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`, any case),
//! and the secret-looking variables of gavel's own environment
//! ([`remember_secret_env`], called by the command line at start). [`scrub`]
//! replaces each remembered value with `[redacted $NAME]` wherever text
//! enters the record or a screen: seat replies and errors, command output,
//! `gavel doctor`, progress, `gavel log`. [`scrub_value`] does it for every
//! string of a serializable value (a record event, an evidence file).
//!
//! Values shorter than [`MIN_SECRET_LEN`] bytes are not remembered: they would
//! scrub ordinary words (`GAVEL_MAX_TOKENS = "16000"`). Streamed replies are
//! scrubbed once assembled, so a key split across two stream chunks is
//! caught; no engine shows or stores partial text before that.

use std::borrow::Cow;
use std::fmt;
use std::sync::{PoisonError, RwLock};
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
/// The key is remembered by the process-wide redactor.
pub fn read_key(var: &str) -> Result<Secret, KeyError> {
    match std::env::var(var) {
        Ok(value) if !value.trim().is_empty() => {
            let secret = Secret::new(var, value.trim());
            remember(&secret);
            Ok(secret)
        }
        _ => Err(KeyError::Missing(var.to_owned())),
    }
}

/// The shortest value the redactor scrubs: a real key is long, and short
/// values (`"16000"`, `"true"`) would scrub ordinary words.
pub const MIN_SECRET_LEN: usize = 8;

/// Every secret this process has handed to a seat, longest first (so a key
/// that contains another is replaced whole).
static KNOWN: RwLock<Vec<Secret>> = RwLock::new(Vec::new());

/// Remembers `secret`: from now on [`scrub`] replaces its value. Values
/// shorter than [`MIN_SECRET_LEN`] are ignored.
pub fn remember(secret: &Secret) {
    if secret.value.len() < MIN_SECRET_LEN {
        return;
    }
    let mut known = KNOWN.write().unwrap_or_else(PoisonError::into_inner);
    if known.iter().any(|s| s.value == secret.value) {
        return;
    }
    known.push(secret.clone());
    known.sort_by_key(|s| std::cmp::Reverse(s.value.len()));
}

/// Remembers `value` when `name` looks like it holds a secret (a seat's
/// `env` entry, a variable of gavel's own environment).
pub fn remember_env(name: &str, value: &str) {
    if looks_secret(name) {
        remember(&Secret::new(name, value.trim()));
    }
}

/// Remembers every variable of gavel's own environment whose name looks
/// secret: the engines' default key variables among them, so views of a
/// record (`gavel log`, `gavel status`) scrub them too.
pub fn remember_secret_env() {
    for (name, value) in std::env::vars_os() {
        if let (Some(name), Some(value)) = (name.to_str(), value.to_str()) {
            remember_env(name, value);
        }
    }
}

/// Whether an environment variable's name says it holds a secret: it
/// contains `KEY`, `TOKEN`, `SECRET`, `PASSWORD`, `PASSWD` or `CREDENTIAL`
/// (any case). `TOKENS` (a count, as in `GAVEL_MAX_TOKENS`) does not count.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase().replace("TOKENS", "");
    ["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"].iter().any(|word| upper.contains(word))
}

/// `text` with every remembered secret replaced by `[redacted $NAME]`;
/// borrowed when nothing was found.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let known = KNOWN.read().unwrap_or_else(PoisonError::into_inner);
    scrub_with(&known, text)
}

fn scrub_with<'t>(secrets: &[Secret], text: &'t str) -> Cow<'t, str> {
    let mut out = Cow::Borrowed(text);
    for secret in secrets {
        if out.contains(secret.value.as_str()) {
            out = Cow::Owned(out.replace(secret.value.as_str(), &format!("[redacted ${}]", secret.source)));
        }
        // The same key spelled with escapes: a JSON string (`\/`, `\u002b`)
        // or a URL (`%2F`) carries it as surely as the plain bytes.
        if (out.contains('\\') || out.contains('%'))
            && let Some(clean) = scrub_spelled(&out, &secret.value, &format!("[redacted ${}]", secret.source))
        {
            out = Cow::Owned(clean);
        }
    }
    out
}

/// `text` with every escaped spelling of `value` replaced by `mark`, or
/// `None` when it holds none. Each ASCII character of the key may be
/// written as itself, as a JSON `\uXXXX` escape or as a URL `%XX` escape;
/// one that is not a letter or digit also backslash-escaped (`\/`).
fn scrub_spelled(text: &str, value: &str, mark: &str) -> Option<String> {
    let (bytes, key) = (text.as_bytes(), value.as_bytes());
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        match matches_spelled(bytes, at, key) {
            Some(end) if text.is_char_boundary(at) && text.is_char_boundary(end) => {
                out.push_str(&text[copied..at]);
                out.push_str(mark);
                copied = end;
                at = end;
            }
            _ => at += 1,
        }
    }
    (copied > 0).then(|| {
        out.push_str(&text[copied..]);
        out
    })
}

/// Where a spelling of `key` that starts at `at` ends (see [`scrub_spelled`]).
fn matches_spelled(text: &[u8], at: usize, key: &[u8]) -> Option<usize> {
    let hex = |digits: &[u8]| std::str::from_utf8(digits).ok().and_then(|d| u32::from_str_radix(d, 16).ok());
    let mut i = at;
    for &c in key {
        if text.get(i) == Some(&c) {
            i += 1;
            continue;
        }
        if !c.is_ascii() {
            return None;
        }
        match text.get(i) {
            Some(b'\\') if text.get(i + 1) == Some(&c) && !c.is_ascii_alphanumeric() => i += 2,
            Some(b'\\')
                if text.get(i + 1) == Some(&b'u') && hex(text.get(i + 2..i + 6)?) == Some(u32::from(c)) =>
            {
                i += 6;
            }
            Some(b'%') if hex(text.get(i + 1..i + 3)?) == Some(u32::from(c)) => i += 3,
            _ => return None,
        }
    }
    Some(i)
}

/// The shortest piece of a secret [`scrub_cut`] removes at a cut edge:
/// shorter pieces of a random key say little, and would match ordinary text.
pub const MIN_PIECE_LEN: usize = 6;

/// [`scrub`] for text that was cut out of a longer one (the tail of a
/// command's output, the end of a stream): a secret the cut split in two
/// leaves a piece at the edge, which no whole-value match finds. A text
/// that starts with the end of a remembered secret (`start_cut`), or ends
/// with its beginning (`end_cut`), has that piece (at least
/// [`MIN_PIECE_LEN`] bytes) replaced too.
pub fn scrub_cut(text: &str, start_cut: bool, end_cut: bool) -> String {
    let known = KNOWN.read().unwrap_or_else(PoisonError::into_inner);
    let mut out = scrub_with(&known, text).into_owned();
    for secret in known.iter() {
        let value = secret.value.as_str();
        let mark = format!("[redacted ${}]", secret.source);
        if start_cut
            && let Some(len) = (MIN_PIECE_LEN..value.len()).rev().find(|&n| {
                value.is_char_boundary(value.len() - n) && out.starts_with(&value[value.len() - n..])
            })
        {
            out.replace_range(..len, &mark);
        }
        if end_cut
            && let Some(len) = (MIN_PIECE_LEN..value.len())
                .rev()
                .find(|&n| value.is_char_boundary(n) && out.ends_with(&value[..n]))
        {
            let at = out.len() - len;
            out.replace_range(at.., &mark);
        }
    }
    out
}

/// `value` with every string in it (map keys included) scrubbed. Values
/// without a remembered secret come back as they went in, untouched; so
/// does a value that cannot take the round trip through JSON (none of
/// gavel's record or evidence types).
pub fn scrub_value<T>(value: T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let known = KNOWN.read().unwrap_or_else(PoisonError::into_inner);
    if known.is_empty() {
        return value;
    }
    // Every event passes here: look for a secret in its JSON text first
    // (escaped spellings included), and build the tree to scrub only when
    // one is there.
    let Ok(text) = serde_json::to_string(&value) else { return value };
    if matches!(scrub_with(&known, &text), Cow::Borrowed(_)) {
        return value;
    }
    let Ok(mut tree) = serde_json::to_value(&value) else { return value };
    if !scrub_tree(&known, &mut tree) {
        return value;
    }
    serde_json::from_value(tree).unwrap_or(value)
}

/// `value` as a JSON tree with every string scrubbed, or `None` when it holds
/// no remembered secret (write `value` itself then). For types that are
/// written but never read back (an evidence file).
pub fn scrubbed_tree<T: serde::Serialize>(value: &T) -> Option<serde_json::Value> {
    let known = KNOWN.read().unwrap_or_else(PoisonError::into_inner);
    if known.is_empty() {
        return None;
    }
    let mut tree = serde_json::to_value(value).ok()?;
    scrub_tree(&known, &mut tree).then_some(tree)
}

/// Scrubs every string of a JSON tree in place; whether anything changed.
fn scrub_tree(secrets: &[Secret], tree: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match tree {
        Value::String(text) => match scrub_with(secrets, text) {
            Cow::Owned(clean) => {
                *text = clean;
                true
            }
            Cow::Borrowed(_) => false,
        },
        Value::Array(items) => {
            items.iter_mut().fold(false, |changed, item| scrub_tree(secrets, item) | changed)
        }
        Value::Object(map) => {
            let mut changed = false;
            let dirty: Vec<String> =
                map.keys().filter(|k| matches!(scrub_with(secrets, k), Cow::Owned(_))).cloned().collect();
            for key in dirty {
                if let Some(item) = map.remove(&key) {
                    map.insert(scrub_with(secrets, &key).into_owned(), item);
                    changed = true;
                }
            }
            for item in map.values_mut() {
                changed |= scrub_tree(secrets, item);
            }
            changed
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => false,
    }
}

/// Scrubs secret values out of text: its own secrets, and every secret the
/// process remembers (see [`scrub`]). Building one remembers its secrets.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<Secret>,
}

impl Redactor {
    /// A redactor for these secrets (also remembered process-wide).
    pub fn new(secrets: impl IntoIterator<Item = Secret>) -> Self {
        let mut redactor = Self::default();
        for secret in secrets {
            redactor.push(secret);
        }
        redactor
    }

    /// Adds one more secret.
    pub fn push(&mut self, secret: Secret) {
        // Short values would scrub ordinary words; a real key is long.
        if secret.value.len() >= MIN_SECRET_LEN {
            remember(&secret);
            self.secrets.push(secret);
        }
    }

    /// `text` with every secret value replaced by `[redacted $VAR]`.
    pub fn scrub(&self, text: &str) -> String {
        let own = scrub_with(&self.secrets, text);
        scrub(&own).into_owned()
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
    fn escaped_spellings_of_a_key_are_scrubbed() {
        let key = Secret::new("K", "sk-test/SECRET+KEY=1234567890abcdef");
        let secrets = [key];
        let mark = "[redacted $K]";
        for text in [
            r#"{"evidence":"sk-test\/SECRET+KEY=1234567890abcdef"}"#,
            r#"{"evidence":"sk-test\/SECRET\u002bKEY\u003D1234567890abcdef"}"#,
            r#"{"evidence":"sk\u002dtest\u002fSECRET+KEY=1234567890abcdef"}"#,
            "https://x.invalid/?k=sk-test%2FSECRET%2BKEY%3D1234567890abcdef&x=1",
            "sk-test%2fSECRET%2bKEY%3d1234567890abcdef",
        ] {
            let clean = scrub_with(&secrets, text);
            assert!(clean.contains(mark), "{text} -> {clean}");
            assert!(!clean.contains("1234567890abcdef"), "{text} -> {clean}");
        }
        // Ordinary text with escapes, and near misses, are left alone.
        for text in [r"a\/b %2F \u002b", r"sk-test\/SECRET+KEY=1234567890abcdeX", "sk-test%2FSECRET"] {
            assert_eq!(scrub_with(&secrets, text), text);
        }
        // Letters and digits escaped too.
        let plain = [Secret::new("P", "sk1234567890abcdef")];
        for text in [r"\u0073k1234567890abcdef", "%73k1234567890abcdef", r"sk12345\u00367890abcdef"] {
            assert_eq!(scrub_with(&plain, text), "[redacted $P]", "{text}");
        }
        assert_eq!(scrub_with(&plain, r"x\/y %41 \s"), r"x\/y %41 \s");
    }

    #[test]
    fn secret_looking_names_are_recognised_in_any_case() {
        for name in [
            "ANTHROPIC_API_KEY",
            "openai_api_key",
            "GITHUB_TOKEN",
            "Deploy_Secret",
            "DB_PASSWORD",
            "MYSQL_PASSWD",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "apikey",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["GAVEL_MAX_TOKENS", "PATH", "HOME", "GAVEL_OPENAI_API", "MODEL", "LANG"] {
            assert!(!looks_secret(name), "{name}");
        }
    }

    #[test]
    fn remembered_secrets_are_scrubbed_everywhere_and_short_values_are_not_remembered() {
        remember(&Secret::new("GIVEN_BY_A_TEST", "given-9b1c2d3e4f5a"));
        remember_env("SEAT_TOKEN", "tok-seat-0a1b2c3d4e");
        remember_env("PLAIN_SETTING", "plain-value-0a1b2c3d4e");
        remember_env("SHORT_TOKEN", "1234567");
        let text = "a given-9b1c2d3e4f5a b tok-seat-0a1b2c3d4e c plain-value-0a1b2c3d4e d 1234567";
        assert_eq!(
            scrub(text),
            "a [redacted $GIVEN_BY_A_TEST] b [redacted $SEAT_TOKEN] c plain-value-0a1b2c3d4e d 1234567"
        );
        assert!(matches!(scrub("nothing to see"), Cow::Borrowed(_)));
        // A redactor scrubs its own secrets and every remembered one.
        let own = Redactor::new([Secret::new("OWN", "own-5e6f7a8b9c")]);
        assert_eq!(
            own.scrub("own-5e6f7a8b9c given-9b1c2d3e4f5a"),
            "[redacted $OWN] [redacted $GIVEN_BY_A_TEST]"
        );
        // ... and remembered it for everyone.
        assert_eq!(scrub("own-5e6f7a8b9c"), "[redacted $OWN]");
    }

    #[test]
    fn a_longer_secret_that_contains_a_shorter_one_is_replaced_whole() {
        remember(&Secret::new("SHORT_ONE", "inner-7c8d9e0f"));
        remember(&Secret::new("LONG_ONE", "outer-inner-7c8d9e0f-tail"));
        assert_eq!(
            scrub("x outer-inner-7c8d9e0f-tail y inner-7c8d9e0f"),
            "x [redacted $LONG_ONE] y [redacted $SHORT_ONE]"
        );
    }

    #[test]
    fn every_string_of_a_value_is_scrubbed_map_keys_included() {
        use std::collections::BTreeMap;
        #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        struct Shape {
            text: String,
            list: Vec<String>,
            map: BTreeMap<String, String>,
            count: u64,
            cost: f64,
        }
        remember(&Secret::new("VALUE_KEY", "val-1f2e3d4c5b6a"));
        let dirty = Shape {
            text: "says val-1f2e3d4c5b6a".into(),
            list: vec!["ok".into(), "val-1f2e3d4c5b6a!".into()],
            map: BTreeMap::from([("val-1f2e3d4c5b6a".into(), "val-1f2e3d4c5b6a".into())]),
            count: 7,
            cost: 0.1,
        };
        let clean = scrub_value(dirty);
        assert_eq!(
            clean,
            Shape {
                text: "says [redacted $VALUE_KEY]".into(),
                list: vec!["ok".into(), "[redacted $VALUE_KEY]!".into()],
                map: BTreeMap::from([("[redacted $VALUE_KEY]".into(), "[redacted $VALUE_KEY]".into())]),
                count: 7,
                cost: 0.1,
            }
        );
        assert!(scrubbed_tree(&clean).is_none(), "a clean value needs no rewrite");
        assert_eq!(scrubbed_tree(&"val-1f2e3d4c5b6a"), Some(serde_json::json!("[redacted $VALUE_KEY]")));
    }

    #[test]
    fn a_piece_of_a_key_left_at_a_cut_edge_is_scrubbed() {
        remember(&Secret::new("EDGE_KEY", "edge-0a1b2c3d4e5f6a7b"));
        // The tail of an output that began inside the key.
        assert_eq!(scrub_cut("3d4e5f6a7b was printed", true, false), "[redacted $EDGE_KEY] was printed");
        // A text cut off inside the key.
        assert_eq!(scrub_cut("printed edge-0a1b2c", false, true), "printed [redacted $EDGE_KEY]");
        // Whole keys anywhere, as always; short pieces and uncut edges stay.
        assert_eq!(scrub_cut("x edge-0a1b2c3d4e5f6a7b y", true, true), "x [redacted $EDGE_KEY] y");
        assert_eq!(scrub_cut("6a7b was printed", true, false), "6a7b was printed");
        assert_eq!(scrub_cut("3d4e5f6a7b was printed", false, false), "3d4e5f6a7b was printed");
    }

    proptest::proptest! {
        /// However a text holding a key is cut, the piece on either side of
        /// the cut leaves no more than a few bytes of the key.
        #[test]
        fn a_cut_through_a_key_leaves_no_long_piece(
            key in "[a-z0-9-]{4}[0-9][a-z0-9-]{11,30}",
            before in "[ -~]{0,20}",
            after in "[ -~]{0,20}",
            cut_seed in 0usize..1000,
        ) {
            remember(&Secret::new("PROPTEST_CUT_KEY", key.clone()));
            let text = format!("{before}{key}{after}");
            let cut = before.len() + 1 + cut_seed % (key.len() - 1);
            let (head, tail) = text.split_at(cut);
            for (piece, clean) in [(head, scrub_cut(head, false, true)), (tail, scrub_cut(tail, true, false))] {
                for n in MIN_PIECE_LEN..=key.len() {
                    for window in key.as_bytes().windows(n) {
                        let window = std::str::from_utf8(window).unwrap();
                        proptest::prop_assert!(
                            !clean.contains(window) || !piece.contains(window) || before.contains(window) || after.contains(window),
                            "{} survives in {}", window, clean
                        );
                    }
                }
            }
        }
    }

    proptest::proptest! {
        /// Wherever a remembered key lands in a text, in pieces or whole,
        /// none of it survives a scrub of the assembled text, and text
        /// without it comes back unchanged.
        #[test]
        fn no_remembered_key_survives_a_scrub(
            // A digit in it: the marker (`[redacted $NAME]`) has none, so a
            // key can never be read inside the marker that replaced it.
            key in "[a-z0-9-]{4}[0-9][a-z0-9-]{3,35}",
            before in "[ -~]{0,40}",
            after in "[ -~]{0,40}",
            copies in 1usize..4,
        ) {
            let name = "PROPTEST_SCRUB_KEY";
            remember(&Secret::new(name, key.clone()));
            let text = format!("{before}{}{after}", key.repeat(copies));
            let clean = scrub(&text);
            proptest::prop_assert!(!clean.contains(&key), "{} in {}", key, clean);
            let plain = before.replace(&key, "");
            if !plain.contains(&key) && !KNOWN.read().unwrap().iter().any(|s| plain.contains(&s.value)) {
                proptest::prop_assert_eq!(scrub(&plain), plain.as_str());
            }
        }
    }

    #[test]
    fn missing_key_names_the_variable() {
        let err = read_key("GAVEL_TEST_SURELY_UNSET_VAR").unwrap_err();
        assert!(err.to_string().contains("GAVEL_TEST_SURELY_UNSET_VAR"));
    }
}
