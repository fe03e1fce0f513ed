//! Reading the first JSON object of a reply.
//!
//! Models wrap their JSON in prose and code fences, mention braces in their
//! prose, and get cut off mid-object. The reader finds **the first `{`, left
//! to right, that begins a complete, valid JSON object** and returns that
//! object, ignoring everything around it.
//!
//! How it reads, and why:
//!
//! - Each `{` is a candidate. From it, a small JSON validator (a state
//!   machine that knows strings, escapes, numbers and literals, so braces and
//!   quotes inside strings do not confuse it) walks forward until the object
//!   closes or the text stops being JSON. Prose such as `use {x} here` fails
//!   on its second character, so a failed candidate costs little; only a
//!   span the validator accepted is handed to `serde_json`, once.
//! - A candidate that is not a valid object does not end the search: the
//!   reader moves on to the next `{`. So in a top-level array such as
//!   `[{"a":1}]` the reader returns `{"a":1}` (an array is not an object,
//!   but the first object in the text is the one inside it), and in
//!   `{"a": 1 oops {"b": 2}` it returns `{"b": 2}`.
//! - A candidate that stays valid JSON up to the end of the text is an object
//!   cut off mid-way, and ends the search with [`ReplyError::Truncated`]:
//!   everything after it is part of it, so a complete object nested inside
//!   (`{"findings": [{"evidence": "x"}, {"ev`) is a fragment, not the answer.
//! - Of two objects, the first wins, even when the first is prose: `{}` in
//!   "empty blocks `{}` are fine" is a JSON object, and the protocol layer
//!   then asks once more, naming what the object lacks.
//! - Objects nest at most [`MAX_DEPTH`] levels (below `serde_json`'s own
//!   limit); deeper JSON is refused outright rather than read from some
//!   inner level.
//! - The total work is bounded: each candidate walks only as far as the text
//!   stays valid JSON from that `{`, and a budget proportional to the text's
//!   length stops crafted inputs ([`ReplyError::TooComplex`]). The reader
//!   never panics.
//!
//! When no object is found the error says why, as a short sentence meant for
//! the model ([`ReplyError::note`]): no `{` at all, an object that never
//! closes (the reply looks cut off), or the most JSON-like candidate's first
//! mistake.

use std::fmt;
use std::ops::Range;

use serde_json::{Map, Value};

/// How deep objects and arrays may nest in a reply.
pub const MAX_DEPTH: usize = 100;

/// Bytes the validator may walk, per byte of reply, over all candidates.
/// Real replies walk each byte about once (a candidate inside a failed one
/// re-walks at most up to where the outer one failed); only crafted text,
/// valid JSON from many different starting braces at once, comes near this.
const BUDGET_PER_BYTE: usize = 2 * MAX_DEPTH;

/// A place in the reply text, for notes a model can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Position {
    /// Byte offset from the start of the text.
    pub offset: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl Position {
    /// The line and column of a byte offset in `text`.
    pub fn of(text: &str, offset: usize) -> Position {
        let offset = offset.min(text.len());
        let before = &text.as_bytes()[..offset];
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let line = before.split(|&b| b == b'\n').count();
        // Count characters, not bytes: skip UTF-8 continuation bytes.
        let column = 1 + before[line_start..].iter().filter(|&&b| b & 0xC0 != 0x80).count();
        Position { offset, line, column }
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// Why no JSON object could be read from a reply.
///
/// `Display` is the note sent back to the model for its one more try: a short
/// sentence saying what was wrong. The protocol layer appends the shape it
/// expects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    /// The reply has no `{` at all (this includes an empty reply).
    #[error("Your reply had no JSON object.")]
    NoObject,
    /// An object began but the text ended before it closed.
    #[error("Your reply looks cut off: the JSON object that starts at {start} never closes.")]
    Truncated {
        /// Where the unclosed object begins.
        start: Position,
    },
    /// Every `{` failed to begin a valid object; this is the first mistake of
    /// the candidate that read furthest.
    #[error("Your reply had no valid JSON object: at {at}, {problem}.")]
    Invalid {
        /// Where the mistake is.
        at: Position,
        /// What is wrong there, e.g. "expected `:` after a key, found `=`".
        problem: String,
    },
    /// An object nests deeper than [`MAX_DEPTH`] levels.
    #[error("Your reply's JSON object nests more than 100 levels deep.")]
    TooDeep {
        /// Where the object that nests too deep begins.
        start: Position,
    },
    /// The text has so many `{` that do not begin an object that reading it
    /// would take too long.
    #[error("Your reply was too tangled to read: it has many `{{` that do not begin a JSON object.")]
    TooComplex,
}

impl ReplyError {
    /// The sentence to send back to the model (the same as `Display`).
    pub fn note(&self) -> String {
        self.to_string()
    }
}

/// The object a reply's text was read as, and where it was.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundObject {
    /// The byte range of the object in the reply text.
    pub span: Range<usize>,
    /// The object.
    pub object: Map<String, Value>,
}

/// Reads the first JSON object in a reply (see the module docs for the rules).
pub fn first_json_object(text: &str) -> Result<Map<String, Value>, ReplyError> {
    find_first_json_object(text).map(|found| found.object)
}

/// Like [`first_json_object`], also saying where in the text the object is.
pub fn find_first_json_object(text: &str) -> Result<FoundObject, ReplyError> {
    let bytes = text.as_bytes();
    let mut budget = bytes.len().saturating_mul(BUDGET_PER_BYTE).saturating_add(1 << 16);
    // (how far the candidate read, where it failed, what was wrong)
    let mut best_invalid: Option<(usize, usize, String)> = None;
    let mut from = 0;

    while let Some(start) =
        bytes.get(from..).and_then(|rest| rest.iter().position(|&b| b == b'{')).map(|i| from + i)
    {
        from = start + 1;
        let (walked_to, failure) = match scan_object(bytes, start) {
            Scan::Complete(end) => {
                match text.get(start..end).map(serde_json::from_str::<Map<String, Value>>) {
                    Some(Ok(object)) => {
                        return Ok(FoundObject { span: start..end, object });
                    }
                    // Valid syntax serde still refuses: a number out of range,
                    // a lone surrogate in a \u escape.
                    Some(Err(err)) => (end, Some((start, serde_problem(&err)))),
                    None => (end, Some((start, "the object could not be read".to_owned()))),
                }
            }
            Scan::Invalid { at, problem } => (at, Some((at, problem))),
            Scan::Eof => {
                return Err(ReplyError::Truncated { start: Position::of(text, start) });
            }
            Scan::TooDeep => {
                return Err(ReplyError::TooDeep { start: Position::of(text, start) });
            }
        };
        if let Some((at, problem)) = failure {
            let reach = walked_to.saturating_sub(start);
            if best_invalid.as_ref().is_none_or(|(best, _, _)| reach > *best) {
                best_invalid = Some((reach, at, problem));
            }
        }
        budget = budget.saturating_sub(walked_to.saturating_sub(start) + 1);
        if budget == 0 {
            return Err(ReplyError::TooComplex);
        }
    }

    match best_invalid {
        Some((_, at, problem)) => Err(ReplyError::Invalid { at: Position::of(text, at), problem }),
        None => Err(ReplyError::NoObject),
    }
}

/// serde's message without its "at line L column C" (which would count from
/// the object, not the reply).
fn serde_problem(err: &serde_json::Error) -> String {
    let message = err.to_string();
    match message.rsplit_once(" at line ") {
        Some((what, _)) => what.to_owned(),
        None => message,
    }
}

/// What walking from one `{` found.
#[derive(Debug, PartialEq, Eq)]
enum Scan {
    /// A valid object ends just before this byte offset.
    Complete(usize),
    /// Not JSON from here on.
    Invalid { at: usize, problem: String },
    /// Valid so far, but the text ended first.
    Eof,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Object,
    Array,
}

/// What the validator expects next (after skipping whitespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// Just after `{`: a key or `}`.
    KeyOrClose,
    /// After `,` in an object.
    Key,
    /// After a key.
    Colon,
    /// Just after `[`: a value or `]`.
    ValueOrClose,
    /// After `:` or `,` in an array.
    Value,
    /// After a value: `,` or the container's close.
    CommaOrClose,
}

/// A step that could not go on.
enum Stop {
    Eof,
    Invalid { at: usize, problem: String },
}

fn invalid(bytes: &[u8], at: usize, expected: &str) -> Stop {
    Stop::Invalid { at, problem: format!("expected {expected}, found {}", found(bytes, at)) }
}

/// Names the character at `at` for a note.
fn found(bytes: &[u8], at: usize) -> String {
    let rest = bytes.get(at..).unwrap_or_default();
    let len = match rest.first() {
        None => return "the end of the text".to_owned(),
        Some(b) if *b < 0x80 => 1,
        Some(b) if *b >= 0xF0 => 4,
        Some(b) if *b >= 0xE0 => 3,
        Some(_) => 2,
    };
    let ch = rest.get(..len).and_then(|s| std::str::from_utf8(s).ok()).and_then(|s| s.chars().next());
    match ch {
        Some('`') => "a backtick".to_owned(),
        Some(c) if c.is_control() => format!("the control character U+{:04X}", u32::from(c)),
        Some(c) => format!("`{c}`"),
        None => "a broken character".to_owned(),
    }
}

const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// Validates the JSON object that begins at `bytes[start] == b'{'`.
fn scan_object(bytes: &[u8], start: usize) -> Scan {
    match walk(bytes, start) {
        Ok(Some(end)) => Scan::Complete(end),
        Ok(None) => Scan::TooDeep,
        Err(Stop::Eof) => Scan::Eof,
        Err(Stop::Invalid { at, problem }) => Scan::Invalid { at, problem },
    }
}

/// The validator proper: `Ok(Some(end))` for a complete object, `Ok(None)`
/// when it nests too deep.
fn walk(bytes: &[u8], start: usize) -> Result<Option<usize>, Stop> {
    let mut stack = vec![Container::Object];
    let mut want = Want::KeyOrClose;
    let mut i = start + 1;
    loop {
        while bytes.get(i).copied().is_some_and(is_ws) {
            i += 1;
        }
        let Some(&c) = bytes.get(i) else {
            return Err(Stop::Eof);
        };
        let top = stack.last().copied().unwrap_or(Container::Object);
        match want {
            Want::KeyOrClose | Want::Key => match c {
                b'"' => {
                    i = string_end(bytes, i)?;
                    want = Want::Colon;
                }
                b'}' if want == Want::KeyOrClose => {
                    stack.pop();
                    i += 1;
                    if stack.is_empty() {
                        return Ok(Some(i));
                    }
                    want = Want::CommaOrClose;
                }
                _ if want == Want::KeyOrClose => {
                    return Err(invalid(bytes, i, "a \"quoted\" key or `}`"));
                }
                _ => return Err(invalid(bytes, i, "a \"quoted\" key after `,`")),
            },
            Want::Colon => {
                if c != b':' {
                    return Err(invalid(bytes, i, "`:` after a key"));
                }
                i += 1;
                want = Want::Value;
            }
            Want::Value | Want::ValueOrClose => match c {
                b'{' | b'[' => {
                    if stack.len() >= MAX_DEPTH {
                        return Ok(None);
                    }
                    if c == b'{' {
                        stack.push(Container::Object);
                        want = Want::KeyOrClose;
                    } else {
                        stack.push(Container::Array);
                        want = Want::ValueOrClose;
                    }
                    i += 1;
                }
                b']' if want == Want::ValueOrClose => {
                    stack.pop();
                    i += 1;
                    want = Want::CommaOrClose;
                }
                b'"' => {
                    i = string_end(bytes, i)?;
                    want = Want::CommaOrClose;
                }
                b'-' | b'0'..=b'9' => {
                    i = number_end(bytes, i)?;
                    want = Want::CommaOrClose;
                }
                b't' | b'f' | b'n' => {
                    i = literal_end(bytes, i)?;
                    want = Want::CommaOrClose;
                }
                _ => {
                    return Err(invalid(
                        bytes,
                        i,
                        "a value (a \"string\", a number, true, false, null, `{` or `[`)",
                    ));
                }
            },
            Want::CommaOrClose => match (c, top) {
                (b',', Container::Object) => {
                    i += 1;
                    want = Want::Key;
                }
                (b',', Container::Array) => {
                    i += 1;
                    want = Want::Value;
                }
                (b'}', Container::Object) | (b']', Container::Array) => {
                    stack.pop();
                    i += 1;
                    if stack.is_empty() {
                        return Ok(Some(i));
                    }
                }
                (_, Container::Object) => {
                    return Err(invalid(bytes, i, "`,` or `}` after a value"));
                }
                (_, Container::Array) => return Err(invalid(bytes, i, "`,` or `]` after a value")),
            },
        }
    }
}

/// The end of the string whose opening quote is at `open`.
fn string_end(bytes: &[u8], open: usize) -> Result<usize, Stop> {
    let mut i = open + 1;
    loop {
        let Some(&c) = bytes.get(i) else {
            return Err(Stop::Eof);
        };
        match c {
            b'"' => return Ok(i + 1),
            b'\\' => {
                let Some(&e) = bytes.get(i + 1) else {
                    return Err(Stop::Eof);
                };
                match e {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                    b'u' => {
                        for k in 2..6 {
                            match bytes.get(i + k) {
                                None => return Err(Stop::Eof),
                                Some(h) if h.is_ascii_hexdigit() => {}
                                Some(_) => {
                                    return Err(invalid(bytes, i + k, "four hex digits after `\\u`"));
                                }
                            }
                        }
                        i += 6;
                    }
                    _ => {
                        return Err(invalid(
                            bytes,
                            i + 1,
                            "an escape after `\\` in a string (one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)",
                        ));
                    }
                }
            }
            0x00..=0x1F => {
                return Err(invalid(
                    bytes,
                    i,
                    "a string without raw control characters (write \\n for a line break)",
                ));
            }
            _ => i += 1,
        }
    }
}

/// The end of the number that begins at `begin` (`-` or a digit).
fn number_end(bytes: &[u8], begin: usize) -> Result<usize, Stop> {
    let at = |i: usize| bytes.get(i).copied();
    let digits_from = |mut i: usize| {
        while at(i).is_some_and(|b| b.is_ascii_digit()) {
            i += 1;
        }
        i
    };
    let need_digit = |i: usize, after: &str| match at(i) {
        None => Err(Stop::Eof),
        Some(b) if b.is_ascii_digit() => Ok(()),
        Some(_) => Err(invalid(bytes, i, &format!("a digit after {after}"))),
    };

    let mut i = begin;
    if at(i) == Some(b'-') {
        i += 1;
        need_digit(i, "`-`")?;
    }
    // One 0, or digits not starting with 0.
    i = if at(i) == Some(b'0') { i + 1 } else { digits_from(i) };
    if at(i) == Some(b'.') {
        i += 1;
        need_digit(i, "`.`")?;
        i = digits_from(i);
    }
    if matches!(at(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(at(i), Some(b'+' | b'-')) {
            i += 1;
        }
        need_digit(i, "the exponent's `e`")?;
        i = digits_from(i);
    }
    // A number that runs into the end of the text may have been cut.
    if i >= bytes.len() { Err(Stop::Eof) } else { Ok(i) }
}

/// The end of `true`, `false` or `null` beginning at `begin`.
fn literal_end(bytes: &[u8], begin: usize) -> Result<usize, Stop> {
    let word: &[u8] = match bytes.get(begin) {
        Some(b't') => b"true",
        Some(b'f') => b"false",
        _ => b"null",
    };
    for (k, want) in word.iter().enumerate() {
        match bytes.get(begin + k) {
            None => return Err(Stop::Eof),
            Some(b) if b == want => {}
            Some(_) => {
                return Err(invalid(
                    bytes,
                    begin,
                    "a value (a \"string\", a number, true, false, null, `{` or `[`)",
                ));
            }
        }
    }
    Ok(begin + word.len())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn obj(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn reads_an_object_inside_prose_and_fences() {
        let text = "Sure.\n```json\n{\"decision\": \"pass\", \"findings\": []}\n```\nDone.";
        let found = find_first_json_object(text).unwrap();
        assert_eq!(found.object, obj(json!({"decision": "pass", "findings": []})));
        assert_eq!(&text[found.span], "{\"decision\": \"pass\", \"findings\": []}");
    }

    #[test]
    fn skips_prose_braces() {
        let text = "use {x} here, then {\"a\": 1}";
        assert_eq!(first_json_object(text), Ok(obj(json!({"a": 1}))));
    }

    #[test]
    fn says_where_the_mistake_is() {
        let text = "{\"decision\" = \"pass\"}";
        assert_eq!(
            first_json_object(text),
            Err(ReplyError::Invalid {
                at: Position { offset: 12, line: 1, column: 13 },
                problem: "expected `:` after a key, found `=`".to_owned(),
            })
        );
        assert_eq!(
            first_json_object(text).unwrap_err().note(),
            "Your reply had no valid JSON object: at line 1, column 13, expected `:` after a key, found `=`."
        );
    }

    #[test]
    fn reports_a_cut_off_object() {
        let text = "ok:\n  {\"decision\": \"revise\", \"findings\": [{\"evid";
        assert_eq!(
            first_json_object(text),
            Err(ReplyError::Truncated { start: Position { offset: 6, line: 2, column: 3 } })
        );
    }

    #[test]
    fn numbers_at_the_end_are_cut_off() {
        assert!(matches!(first_json_object("{\"a\": 12"), Err(ReplyError::Truncated { .. })));
        assert!(matches!(first_json_object("{\"a\": tr"), Err(ReplyError::Truncated { .. })));
        assert!(matches!(first_json_object("{\"a\": \"\\u12"), Err(ReplyError::Truncated { .. })));
    }

    #[test]
    fn numbers_follow_the_json_grammar() {
        assert_eq!(first_json_object("{\"a\": -0.5e+3}"), Ok(obj(json!({"a": -500.0}))));
        assert!(matches!(first_json_object("{\"a\": 01}"), Err(ReplyError::Invalid { .. })));
        assert!(matches!(first_json_object("{\"a\": 1.}"), Err(ReplyError::Invalid { .. })));
        assert!(matches!(first_json_object("{\"a\": -}"), Err(ReplyError::Invalid { .. })));
        assert!(matches!(first_json_object("{\"a\": .5}"), Err(ReplyError::Invalid { .. })));
        assert!(matches!(first_json_object("{\"a\": 1e}"), Err(ReplyError::Invalid { .. })));
    }

    #[test]
    fn what_serde_refuses_moves_on() {
        // Syntax is fine but the number does not fit an f64.
        let text = "{\"a\": 1e999} {\"b\": 2}";
        assert_eq!(first_json_object(text), Ok(obj(json!({"b": 2}))));
        let err = first_json_object("{\"a\": 1e999}").unwrap_err();
        assert_eq!(
            err,
            ReplyError::Invalid {
                at: Position { offset: 0, line: 1, column: 1 },
                problem: "number out of range".to_owned(),
            }
        );
    }

    #[test]
    fn refuses_too_deep_nesting() {
        let deep =
            format!("{}{}", "{\"a\":".repeat(MAX_DEPTH + 1), "1".to_owned() + &"}".repeat(MAX_DEPTH + 1));
        assert_eq!(
            first_json_object(&deep),
            Err(ReplyError::TooDeep { start: Position { offset: 0, line: 1, column: 1 } })
        );
        let ok = format!("{}1{}", "{\"a\":".repeat(MAX_DEPTH), "}".repeat(MAX_DEPTH));
        assert!(first_json_object(&ok).is_ok());
    }

    #[test]
    fn many_open_braces_stay_cheap() {
        // Each `{` fails at the next one: linear.
        let text = "{ ".repeat(100_000) + ".";
        assert!(matches!(first_json_object(&text), Err(ReplyError::Invalid { .. })));
        // Each `{` begins a valid prefix that runs to the end, but nesting
        // stops at MAX_DEPTH.
        let text = "{\"a\":[".repeat(50_000);
        assert_eq!(first_json_object(&text), Err(ReplyError::TooDeep { start: Position::of(&text, 0) }));
        // Each `{` begins an object that fails only at the very end: every
        // candidate re-walks the rest, but nesting bounds how many there are.
        let text = format!("{}[{}x", "{\"a\":".repeat(MAX_DEPTH - 1), " 1,".repeat(20_000));
        assert!(matches!(first_json_object(&text), Err(ReplyError::Invalid { .. })));
        // A cut-off object ends the search at once.
        let text = format!("{}[{}", "{\"a\":".repeat(40), " 1,".repeat(20_000));
        assert_eq!(first_json_object(&text), Err(ReplyError::Truncated { start: Position::of(&text, 0) }));
    }

    #[test]
    fn positions_count_characters() {
        let text = "é\nab€c";
        assert_eq!(Position::of(text, 0), Position { offset: 0, line: 1, column: 1 });
        assert_eq!(Position::of(text, 2), Position { offset: 2, line: 1, column: 2 });
        assert_eq!(Position::of(text, 8), Position { offset: 8, line: 2, column: 4 });
        assert_eq!(Position::of(text, 999).offset, text.len());
    }

    #[test]
    fn names_what_it_found() {
        assert_eq!(found(b"{`", 1), "a backtick");
        assert_eq!(found(b"{", 1), "the end of the text");
        assert_eq!(found("{é".as_bytes(), 1), "`é`");
        assert_eq!(found(b"{\x01", 1), "the control character U+0001");
        assert_eq!(found(b"{\xff", 1), "a broken character");
    }
}
