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
    /// The path is not a regular file (a FIFO, a device, a folder): reading
    /// it could block or never end, so it is refused before it is opened.
    #[error("{0}")]
    NotAFile(gavel_fs::read::ReadError),
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
///
/// A long record is read as well as parsed in ranges, one per core: each
/// thread reads its own byte range of the file, and the few lines that
/// straddle two ranges are put together afterwards.
pub fn read_record_typed<E: RecordEvent>(path: &Path) -> Result<Recording<E>, ReadError> {
    let (file, meta) = open_record(path)?;
    let len = meta.len();
    // Every record starts with an event's `{`: a file that does not (a
    // sparse file of zeros, a binary) is refused before gigabytes are read.
    if len > 0 {
        use std::os::unix::fs::FileExt as _;
        let mut first = [0u8; 1];
        file.read_exact_at(&mut first, 0)
            .map_err(|source| ReadError::Io { path: path.to_owned(), source })?;
        if first[0] != b'{' {
            return Err(ReadError::BadLine {
                path: path.to_owned(),
                line: 1,
                message: "this is not a gavel record: a record's every line is one JSON event, `{\"v\":1,\"seq\":1,...}`"
                    .to_owned(),
            });
        }
    }
    read_in_pieces(path, &file, len, usize::try_from(len).map_or(1, parallelism))
}

/// Opens a record for reading: a regular file (a link to one is fine), and
/// never a FIFO or a device, which could block the reader or never end.
pub(crate) fn open_record(path: &Path) -> Result<(std::fs::File, std::fs::Metadata), ReadError> {
    use gavel_fs::read::ReadError as FileError;
    gavel_fs::read::open(path, gavel_fs::read::UserFile::Record).map_err(|err| match err {
        FileError::Missing { .. } => ReadError::Io {
            path: path.to_owned(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        },
        FileError::Unreadable { source, .. } => ReadError::Io { path: path.to_owned(), source },
        other => ReadError::NotAFile(other),
    })
}

/// [`read_record_typed`] with the file's `len` bytes read in `n` ranges.
fn read_in_pieces<E: RecordEvent>(
    path: &Path,
    file: &std::fs::File,
    len: u64,
    n: usize,
) -> Result<Recording<E>, ReadError> {
    use std::os::unix::fs::FileExt as _;

    if n > 1 {
        let bounds = bounds(len, n);
        let read = |i: usize| -> std::io::Result<Option<Range<E>>> {
            let size = usize::try_from(bounds[i + 1] - bounds[i]).map_err(std::io::Error::other)?;
            let mut buf = vec![0u8; size];
            file.read_exact_at(&mut buf, bounds[i])?;
            Ok(Range::parse(&buf, i == 0))
        };
        if let Some(recording) = in_ranges(path, n, read)? {
            return Ok(recording);
        }
    }
    // From the handle that was checked to be a regular file, from its start.
    let mut bytes = Vec::new();
    let mut handle = file;
    std::io::Seek::seek(&mut handle, std::io::SeekFrom::Start(0))
        .and_then(|_| std::io::Read::read_to_end(&mut handle, &mut bytes))
        .map_err(|source| ReadError::Io { path: path.to_owned(), source })?;
    parse_in_pieces(path, &bytes, 1)
}

/// Parses a run record's bytes; `path` only names the file in errors.
pub fn parse_record(path: &Path, bytes: &[u8]) -> Result<Recording, ReadError> {
    parse_record_typed(path, bytes)
}

/// Parses the bytes of a record of event type `E` (a goal's record); `path`
/// only names the file in errors. A long record is parsed in ranges, one
/// per core, as [`read_record_typed`] does.
pub fn parse_record_typed<E: RecordEvent>(path: &Path, bytes: &[u8]) -> Result<Recording<E>, ReadError> {
    parse_in_pieces(path, bytes, parallelism(bytes.len()))
}

/// [`parse_record_typed`] with the bytes cut into `n` ranges.
fn parse_in_pieces<E: RecordEvent>(path: &Path, bytes: &[u8], n: usize) -> Result<Recording<E>, ReadError> {
    let bounds = bounds(bytes.len() as u64, n);
    let slice = |i: usize| {
        let at = |b: u64| usize::try_from(b).unwrap_or(bytes.len());
        &bytes[at(bounds[i])..at(bounds[i + 1])]
    };
    if n > 1
        && let Some(recording) = in_ranges(path, n, |i| Ok(Range::parse(slice(i), i == 0)))?
    {
        return Ok(recording);
    }
    // One range: the first never asks for a newline, so it always parses.
    let whole = |_| Ok(Range::parse(bytes, true));
    in_ranges(path, 1, whole)?.ok_or_else(|| ReadError::BadLine {
        path: path.to_owned(),
        line: 1,
        message: "the reader failed".to_owned(),
    })
}

/// How many ranges to read a record of `len` bytes in.
fn parallelism(len: usize) -> usize {
    // Below a few MB a thread costs more than it saves.
    const PER_THREAD: usize = 4 << 20;
    if len < PER_THREAD {
        return 1;
    }
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    cores.min(len / PER_THREAD).clamp(1, 8)
}

/// Where `n` equal byte ranges of `len` bytes begin, and the end.
fn bounds(len: u64, n: usize) -> Vec<u64> {
    (0..=n as u64).map(|i| len * i / n as u64).collect()
}

/// One byte range of a record, parsed on its own.
struct Range<E> {
    /// The bytes before the range's first newline: the end of a line that
    /// began in the range before (or a whole line, when the range begins
    /// with one). Empty in the first range.
    head: Vec<u8>,
    /// The whole lines after the head.
    body: Result<Piece<E>, (usize, String)>,
    /// The bytes after the last newline: the start of a line the next range
    /// ends (or the torn last line, in the last range).
    tail: Vec<u8>,
}

impl<E: RecordEvent> Range<E> {
    /// Splits and parses one range. `None` when a range other than the
    /// first holds no newline at all (a line longer than a range).
    fn parse(buf: &[u8], first: bool) -> Option<Self> {
        let (head_end, body_start) = if first {
            (0, 0)
        } else {
            let nl = buf.iter().position(|&b| b == b'\n')?;
            (nl, nl + 1)
        };
        // A range with no newline after its head holds no whole line: all
        // of it is the tail, continued by the next range (or torn, if last).
        let body_end =
            buf[body_start..].iter().rposition(|&b| b == b'\n').map_or(body_start, |nl| body_start + nl + 1);
        Some(Range {
            head: buf[..head_end].to_vec(),
            body: parse_piece(&buf[body_start..body_end]),
            tail: buf[body_end..].to_vec(),
        })
    }
}

/// Gets `n` ranges from `range` (at the same time when there are several)
/// and puts their events together in order, joining the lines that straddle
/// two ranges. `None` when a range could not be cut at a newline.
fn in_ranges<E: RecordEvent>(
    path: &Path,
    n: usize,
    range: impl Fn(usize) -> std::io::Result<Option<Range<E>>> + Sync,
) -> Result<Option<Recording<E>>, ReadError> {
    let ranges: Vec<std::io::Result<Option<Range<E>>>> = if n == 1 {
        vec![range(0)]
    } else {
        std::thread::scope(|scope| {
            let range = &range;
            let handles: Vec<_> = (0..n).map(|i| scope.spawn(move || range(i))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(std::io::Error::other("a reader thread failed"))))
                .collect()
        })
    };
    let mut recording = Recording::default();
    let mut carry: Vec<u8> = Vec::new();
    for (i, range) in ranges.into_iter().enumerate() {
        let Some(range) = range.map_err(|source| ReadError::Io { path: path.to_owned(), source })? else {
            return Ok(None);
        };
        if i > 0 {
            // The line that straddles this range's start.
            carry.extend_from_slice(&range.head);
            let line = recording.events.len() + 1;
            let envelope = parse_line::<E>(&carry).map_err(|message| ReadError::BadLine {
                path: path.to_owned(),
                line,
                message,
            })?;
            push_in_order(path, &mut recording, envelope)?;
            recording.valid_len += carry.len() as u64 + 1;
            carry.clear();
        }
        let before = recording.events.len();
        let piece = range.body.map_err(|(line, message)| ReadError::BadLine {
            path: path.to_owned(),
            line: before + line,
            message,
        })?;
        for envelope in piece.events {
            push_in_order(path, &mut recording, envelope)?;
        }
        recording.valid_len += piece.whole_bytes as u64;
        carry = range.tail;
    }
    if !carry.is_empty() {
        // No newline at the end: the writer writes each line with its
        // newline in one call, so this one was cut short by a crash.
        recording.torn = Some(TornLine { line: recording.events.len() + 1, bytes: carry.len() });
    }
    Ok(Some(recording))
}

/// Appends an event, insisting that `seq` counts on without a gap.
fn push_in_order<E>(
    path: &Path,
    recording: &mut Recording<E>,
    envelope: Envelope<E>,
) -> Result<(), ReadError> {
    let expected = recording.events.len() as u64 + 1;
    if envelope.seq != expected {
        return Err(ReadError::BadLine {
            path: path.to_owned(),
            line: recording.events.len() + 1,
            message: format!(
                "`seq` is {} where {expected} was expected; the record has a gap or was edited",
                envelope.seq
            ),
        });
    }
    recording.events.push(envelope);
    Ok(())
}

/// One range's whole lines, read without looking at `seq` (the caller
/// checks it across ranges).
struct Piece<E> {
    events: Vec<Envelope<E>>,
    whole_bytes: usize,
}

/// Reads whole lines (`bytes` ends with a newline, or is empty); an error
/// carries the piece's 1-based line.
fn parse_piece<E: RecordEvent>(bytes: &[u8]) -> Result<Piece<E>, (usize, String)> {
    let mut piece = Piece { events: Vec::new(), whole_bytes: 0 };
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let envelope = parse_line::<E>(text).map_err(|message| (piece.events.len() + 1, message))?;
        piece.events.push(envelope);
        piece.whole_bytes += line.len();
    }
    Ok(piece)
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::event::{RunPause, StageStart};

    fn record(events: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        let at = jiff::Timestamp::from_second(1_795_000_000).unwrap();
        for seq in 1..=events as u64 {
            let event = if seq % 3 == 0 {
                Event::RunPause(RunPause { reason: format!("r{seq}"), waiting_for: "x".into() })
            } else {
                Event::StageStart(StageStart { stage: format!("s{seq}"), round: 1 })
            };
            serde_json::to_writer(&mut bytes, &Envelope { v: FORMAT_VERSION, seq, at, event }).unwrap();
            bytes.push(b'\n');
        }
        bytes
    }

    fn summary(r: Result<Recording, ReadError>) -> String {
        match r {
            Ok(rec) => format!("{} events, torn {:?}, valid {}", rec.events.len(), rec.torn, rec.valid_len),
            Err(err) => err.to_string(),
        }
    }

    /// Reading in pieces gives exactly what reading in one piece gives: the
    /// same events, the same torn line, the same error on the same line.
    #[test]
    fn pieces_read_the_same_as_one() {
        let whole = record(50);
        let mut torn = whole.clone();
        torn.extend_from_slice(br#"{"v":1,"seq":51,"at":"#);
        let mut bad = whole.clone();
        let line_37 = bad.split(|&b| b == b'\n').take(36).map(|l| l.len() + 1).sum::<usize>();
        bad[line_37] = b'X';
        let mut gap = record(20);
        gap.extend_from_slice(&record(25)[record(21).len()..]);
        let path = Path::new("events.jsonl");
        for bytes in [&whole, &torn, &bad, &gap] {
            let one = summary(parse_in_pieces(path, bytes, 1));
            for n in 2..=7 {
                assert_eq!(summary(parse_in_pieces(path, bytes, n)), one, "{n} pieces");
            }
        }
        assert!(summary(parse_in_pieces(path, &bad, 4)).starts_with("events.jsonl:37:"));
        // Read from a file in ranges: the same again, for every cut.
        let dir = tempfile::tempdir().unwrap();
        let file_path = dir.path().join("events.jsonl");
        for bytes in [&whole, &torn, &bad, &gap] {
            std::fs::write(&file_path, bytes).unwrap();
            let one = summary(parse_in_pieces(&file_path, bytes, 1));
            let file = std::fs::File::open(&file_path).unwrap();
            for n in 2..=7 {
                let read = read_in_pieces::<Event>(&file_path, &file, bytes.len() as u64, n);
                assert_eq!(summary(read), one, "{n} ranges");
            }
        }
        assert!(summary(parse_in_pieces(path, &gap, 3)).starts_with("events.jsonl:21:"));
        assert_eq!(
            summary(parse_in_pieces(path, &torn, 5)).split(", valid").next().unwrap(),
            "50 events, torn Some(TornLine { line: 51, bytes: 21 })"
        );
    }
}
