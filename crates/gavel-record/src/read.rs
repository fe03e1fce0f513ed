//! The record reader: whole events in, a torn last line cut off with a
//! warning, any other bad line an error naming its number.

use std::path::{Path, PathBuf};

use crate::FORMAT_VERSION;
use crate::event::{Envelope, Event, RecordEvent};

/// A record as read from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording<E = Event> {
    /// Every whole event, in order.
    pub events: Vec<Envelope<E>>,
    /// The torn last line, when a crash cut one short.
    pub torn: Option<TornLine>,
    /// Bytes of the file that hold whole events; a resume truncates to it.
    pub valid_len: u64,
}

// By hand: a derived `Default` would ask `E: Default`, which no event type is.
impl<E> Default for Recording<E> {
    fn default() -> Self {
        Self { events: Vec::new(), torn: None, valid_len: 0 }
    }
}

/// A last line cut short by a crash mid-write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornLine {
    /// Its 1-based line number.
    pub line: usize,
    /// How many bytes it had.
    pub bytes: usize,
}

impl TornLine {
    /// The one warning a reader shows about it.
    pub fn warning(&self, path: &Path) -> String {
        format!(
            "{}:{}: the last line is incomplete ({} bytes, cut by a crash mid-write); it is ignored, and `gavel resume` removes it",
            path.display(),
            self.line,
            self.bytes
        )
    }
}

/// Why a record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("cannot read the record {path}: {source}")]
    Io {
        /// The record's path.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A line that is not a whole, valid event.
    #[error("{path}:{line}: {message}")]
    BadLine {
        /// The record's path.
        path: PathBuf,
        /// The 1-based line number.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
}

/// Reads the run record at `path`.
pub fn read_record(path: &Path) -> Result<Recording, ReadError> {
    read_record_typed(path)
}

/// Reads a record of event type `E` (a goal's record) at `path`.
pub fn read_record_typed<E: RecordEvent>(path: &Path) -> Result<Recording<E>, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io { path: path.to_owned(), source })?;
    parse_record_typed(path, &bytes)
}

/// Parses a run record's bytes; `path` only names the file in errors.
pub fn parse_record(path: &Path, bytes: &[u8]) -> Result<Recording, ReadError> {
    parse_record_typed(path, bytes)
}

/// Parses the bytes of a record of event type `E`; `path` only names the
/// file in errors.
pub fn parse_record_typed<E: RecordEvent>(path: &Path, bytes: &[u8]) -> Result<Recording<E>, ReadError> {
    let mut recording = Recording::default();
    let mut start = 0usize;
    let mut line_no = 0usize;
    while start < bytes.len() {
        line_no += 1;
        let Some(len) = bytes[start..].iter().position(|&b| b == b'\n') else {
            // No newline: the writer writes each line with its newline in one
            // call, so this line was cut short by a crash.
            recording.torn = Some(TornLine { line: line_no, bytes: bytes.len() - start });
            break;
        };
        let line = &bytes[start..start + len];
        let bad = |message: String| ReadError::BadLine { path: path.to_owned(), line: line_no, message };
        let envelope = parse_line::<E>(line).map_err(bad)?;
        let expected = recording.events.len() as u64 + 1;
        if envelope.seq != expected {
            return Err(bad(format!(
                "`seq` is {} where {expected} was expected; the record has a gap or was edited",
                envelope.seq
            )));
        }
        recording.events.push(envelope);
        start += len + 1;
        recording.valid_len = start as u64;
    }
    Ok(recording)
}

/// The fields every line must have, read before the event itself so the
/// error can say which part is wrong.
#[derive(serde::Deserialize)]
struct Header<'a> {
    v: Option<u32>,
    #[serde(borrow)]
    kind: Option<std::borrow::Cow<'a, str>>,
}

fn parse_line<E: RecordEvent>(line: &[u8]) -> Result<Envelope<E>, String> {
    let text = std::str::from_utf8(line).map_err(|e| format!("not UTF-8 ({e})"))?;
    if text.trim().is_empty() {
        return Err("an empty line; every line must be one event".to_owned());
    }
    match serde_json::from_str::<Envelope<E>>(text) {
        Ok(envelope) if envelope.v == FORMAT_VERSION => Ok(envelope),
        Ok(envelope) => Err(version_message(envelope.v)),
        Err(err) => Err(explain(text, &err, E::KINDS)),
    }
}

/// Turns a serde error into a message that says what part of the line is wrong.
fn explain(text: &str, err: &serde_json::Error, kinds: &[&str]) -> String {
    let Ok(header) = serde_json::from_str::<Header<'_>>(text) else {
        return format!("not a JSON event ({err})");
    };
    match (header.v, header.kind) {
        (None, _) => "the event has no `v` (format version)".to_owned(),
        (Some(v), _) if v != FORMAT_VERSION => version_message(v),
        (_, None) => "the event has no `kind`".to_owned(),
        (_, Some(kind)) if !kinds.contains(&kind.as_ref()) => {
            format!("unknown event kind `{kind}`; this record may have been written by a newer gavel")
        }
        (_, Some(kind)) => format!("a malformed `{kind}` event: {err}"),
    }
}

fn version_message(v: u32) -> String {
    format!(
        "record format version {v}, but this gavel reads version {FORMAT_VERSION}; use the gavel that wrote it"
    )
}
