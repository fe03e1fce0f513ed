//! Bounded reads of user files: every file gavel reads because a person
//! named it (a workflow, a brief, a script seat, an answers file, a goal
//! file, a prompt template, a settings file, a record) comes in here.
//!
//! A user file must be a regular file (a symbolic link to one is fine) no
//! larger than the limit of its kind ([`UserFile::limit`]). Anything else is
//! a typed [`ReadError`] in milliseconds, never an endless read of a device
//! such as `/dev/zero` nor a hang on a FIFO:
//!
//! 1. the type is checked (following links) before anything is opened, so
//!    a FIFO is never opened in blocking mode;
//! 2. the file is opened with `O_NONBLOCK`, so even a FIFO swapped in after
//!    the check cannot block the open;
//! 3. the opened handle is checked again (`fstat`), so what is read is what
//!    was checked;
//! 4. at most limit + 1 bytes are read, so a file that grows while it is
//!    read is still refused rather than read without end.

use std::fmt;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read as _};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// The largest workflow file gavel reads. A workflow is a page or two of
/// TOML; a megabyte is thousands of stages.
pub const WORKFLOW_MAX_BYTES: u64 = MIB;

/// The largest brief gavel reads. Briefs quote specs and examples, so they
/// get more room than a workflow; it all goes into prompts, where a few
/// megabytes is already more than any model reads.
pub const BRIEF_MAX_BYTES: u64 = 4 * MIB;

/// The largest script seat gavel reads. A script stands in for a model and
/// may carry whole files as its replies, so it gets the most room.
pub const SCRIPT_MAX_BYTES: u64 = 16 * MIB;

/// The largest answers file (`--answers`) gavel reads: one short table per
/// approve stage.
pub const ANSWERS_MAX_BYTES: u64 = MIB;

/// The largest goal file (`.gavel/goals/<id>/goal.yaml`) gavel reads: a
/// list of criteria and a few settings.
pub const GOAL_MAX_BYTES: u64 = MIB;

/// The largest prompt template (`prompts_dir`, a seat's `prompts`) gavel
/// reads: a template is a page of text around the brief.
pub const PROMPT_MAX_BYTES: u64 = MIB;

/// The largest agent settings file (`.claude/settings.json`) gavel reads
/// before it adds its stop hook.
pub const SETTINGS_MAX_BYTES: u64 = 4 * MIB;

/// What a user file is for: its name in messages and its size limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserFile {
    /// A workflow file ([`WORKFLOW_MAX_BYTES`]).
    Workflow,
    /// A brief ([`BRIEF_MAX_BYTES`]).
    Brief,
    /// A script seat ([`SCRIPT_MAX_BYTES`]).
    Script,
    /// An answers file for approve stages ([`ANSWERS_MAX_BYTES`]).
    Answers,
    /// A goal file ([`GOAL_MAX_BYTES`]).
    Goal,
    /// A prompt template ([`PROMPT_MAX_BYTES`]).
    Prompt,
    /// An agent's settings file ([`SETTINGS_MAX_BYTES`]).
    Settings,
    /// A file in the workspace that gavel reads to show it in a prompt or to
    /// take its digest: a regular file with no size limit, because callers
    /// read only its head ([`read_head`]) or stream it.
    WorkspaceFile,
    /// A record: it must be a regular file, but it has no size limit
    /// (records of long runs are long, and the record reader reads them
    /// in ranges).
    Record,
}

impl UserFile {
    /// The most bytes gavel reads from a file of this kind.
    pub const fn limit(self) -> u64 {
        match self {
            UserFile::Workflow => WORKFLOW_MAX_BYTES,
            UserFile::Brief => BRIEF_MAX_BYTES,
            UserFile::Script => SCRIPT_MAX_BYTES,
            UserFile::Answers => ANSWERS_MAX_BYTES,
            UserFile::Goal => GOAL_MAX_BYTES,
            UserFile::Prompt => PROMPT_MAX_BYTES,
            UserFile::Settings => SETTINGS_MAX_BYTES,
            UserFile::WorkspaceFile | UserFile::Record => u64::MAX,
        }
    }

    /// The file's name in messages ("the workflow", "the script seat").
    pub const fn noun(self) -> &'static str {
        match self {
            UserFile::Workflow => "the workflow",
            UserFile::Brief => "the brief",
            UserFile::Script => "the script seat",
            UserFile::Answers => "the answers file",
            UserFile::Goal => "the goal file",
            UserFile::Prompt => "the prompt template",
            UserFile::Settings => "the settings file",
            UserFile::WorkspaceFile => "the workspace file",
            UserFile::Record => "the record",
        }
    }
}

/// What a path is when it is not a regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A folder.
    Directory,
    /// A named pipe: reading it waits for a writer, possibly forever.
    Fifo,
    /// A character device such as `/dev/zero`: reading it may never end.
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// A Unix socket.
    Socket,
    /// Anything else the system may have.
    Other,
}

impl FileKind {
    fn of(meta: &Metadata) -> Option<Self> {
        let kind = meta.file_type();
        if kind.is_file() {
            None
        } else if kind.is_dir() {
            Some(FileKind::Directory)
        } else if kind.is_fifo() {
            Some(FileKind::Fifo)
        } else if kind.is_char_device() {
            Some(FileKind::CharDevice)
        } else if kind.is_block_device() {
            Some(FileKind::BlockDevice)
        } else if kind.is_socket() {
            Some(FileKind::Socket)
        } else {
            Some(FileKind::Other)
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO (named pipe)",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Other => "not a file gavel can read",
        })
    }
}

/// Why a user file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Nothing is at the path (or a link points at nothing).
    #[error("{}: {}", path.display(), self.message())]
    Missing {
        /// What the file is for.
        file: UserFile,
        /// The path as given.
        path: PathBuf,
    },
    /// The path is a folder, a FIFO, a device or a socket.
    #[error("{}: {}", path.display(), self.message())]
    NotRegular {
        /// What the file is for.
        file: UserFile,
        /// The path as given.
        path: PathBuf,
        /// What it is instead.
        kind: FileKind,
    },
    /// The file is larger than its kind's limit.
    #[error("{}: {}", path.display(), self.message())]
    TooLarge {
        /// What the file is for.
        file: UserFile,
        /// The path as given.
        path: PathBuf,
        /// Its size, or limit + 1 when it grew past the limit while read.
        size: u64,
        /// The limit ([`UserFile::limit`]).
        limit: u64,
    },
    /// The system refused (permissions, an I/O error).
    #[error("{}: {}", path.display(), self.message())]
    Unreadable {
        /// What the file is for.
        file: UserFile,
        /// The path as given.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
    /// The bytes are not UTF-8 text ([`read_text`] only).
    #[error("{}: {}", path.display(), self.message())]
    NotText {
        /// What the file is for.
        file: UserFile,
        /// The path as given.
        path: PathBuf,
        /// The bytes before the first that is not UTF-8.
        valid_up_to: usize,
        /// The file's text with bad bytes replaced, to point at the place.
        lossy: String,
    },
}

impl ReadError {
    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            ReadError::Missing { path, .. }
            | ReadError::NotRegular { path, .. }
            | ReadError::TooLarge { path, .. }
            | ReadError::Unreadable { path, .. }
            | ReadError::NotText { path, .. } => path,
        }
    }

    /// What the file is for.
    pub fn file(&self) -> UserFile {
        match self {
            ReadError::Missing { file, .. }
            | ReadError::NotRegular { file, .. }
            | ReadError::TooLarge { file, .. }
            | ReadError::Unreadable { file, .. }
            | ReadError::NotText { file, .. } => *file,
        }
    }

    /// What went wrong, without the path (for a message that names the
    /// file in front, such as a located error).
    pub fn message(&self) -> String {
        let noun = self.file().noun();
        match self {
            ReadError::Missing { .. } => format!("cannot read {noun}: there is no such file"),
            ReadError::NotRegular { kind, .. } => {
                format!("cannot read {noun}: it is {kind}, not a regular file")
            }
            ReadError::TooLarge { size, limit, .. } => format!(
                "cannot read {noun}: it is {}, more than the {} a file of this kind may have",
                bytes_text(*size),
                bytes_text(*limit)
            ),
            ReadError::Unreadable { source, .. } => format!("cannot read {noun}: {source}"),
            ReadError::NotText { valid_up_to, .. } => {
                format!("{noun} is not UTF-8 text (the bytes after the first {valid_up_to} are not)")
            }
        }
    }

    /// What to do instead.
    pub fn hint(&self) -> String {
        match self {
            ReadError::Missing { .. } => "check the path; it is relative to where it is named".to_owned(),
            ReadError::NotRegular { kind: FileKind::Directory, .. } => {
                "name a file inside the folder, not the folder".to_owned()
            }
            ReadError::NotRegular { .. } => {
                "gavel reads only regular files (a link to one is fine); save the content to a file and name that"
                    .to_owned()
            }
            ReadError::TooLarge { limit, .. } => {
                format!("keep the file under {}; move large material into separate files", bytes_text(*limit))
            }
            ReadError::Unreadable { .. } => "check the file's permissions".to_owned(),
            ReadError::NotText { .. } => "save the file as UTF-8 text".to_owned(),
        }
    }

    /// [`Self::hint`], but in the caller's own words when nothing is at the
    /// path (the caller knows where the path came from).
    pub fn hint_or(&self, when_missing: &str) -> String {
        if self.is_missing() { when_missing.to_owned() } else { self.hint() }
    }

    /// Whether nothing is at the path.
    pub fn is_missing(&self) -> bool {
        matches!(self, ReadError::Missing { .. })
    }
}

/// Reads a user file whole: a regular file within `file`'s size limit.
pub fn read(path: &Path, file: UserFile) -> Result<Vec<u8>, ReadError> {
    let (handle, meta) = open(path, file)?;
    let limit = file.limit();
    if meta.len() > limit {
        return Err(ReadError::TooLarge { file, path: path.to_owned(), size: meta.len(), limit });
    }
    // limit + 1: a file that grew past the limit since `fstat` shows as too
    // large instead of being read without end.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).saturating_add(1));
    handle.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(|source| ReadError::Unreadable {
        file,
        path: path.to_owned(),
        source,
    })?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > limit {
        return Err(ReadError::TooLarge { file, path: path.to_owned(), size: read, limit });
    }
    Ok(bytes)
}

/// Reads a user file whole as UTF-8 text (see [`read`]).
pub fn read_text(path: &Path, file: UserFile) -> Result<String, ReadError> {
    let bytes = read(path, file)?;
    String::from_utf8(bytes).map_err(|err| ReadError::NotText {
        file,
        path: path.to_owned(),
        valid_up_to: err.utf8_error().valid_up_to(),
        lossy: String::from_utf8_lossy(err.as_bytes()).into_owned(),
    })
}

/// Reads at most `max_bytes` from the start of a regular file, and its
/// whole size: for showing the beginning of a file of any size.
pub fn read_head(path: &Path, file: UserFile, max_bytes: u64) -> Result<(Vec<u8>, u64), ReadError> {
    let (handle, meta) = open(path, file)?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len().min(max_bytes)).unwrap_or(0));
    handle.take(max_bytes).read_to_end(&mut bytes).map_err(|source| ReadError::Unreadable {
        file,
        path: path.to_owned(),
        source,
    })?;
    Ok((bytes, meta.len()))
}

/// Opens a user file for reading, after checking that it is a regular file
/// (before the open and again on the opened handle). The size is not
/// checked: [`read`] does that, and a record has no limit.
pub fn open(path: &Path, file: UserFile) -> Result<(File, Metadata), ReadError> {
    // Follows links: a link to a regular file is a regular file.
    let before = std::fs::metadata(path).map_err(|source| io_error(path, file, source))?;
    regular(path, file, &before)?;
    open_checked(path, file)
}

/// The open and the check of the opened handle, on their own so a test can
/// play the swap of a FIFO in after the first check.
fn open_checked(path: &Path, file: UserFile) -> Result<(File, Metadata), ReadError> {
    let err = |source| io_error(path, file, source);
    // O_NONBLOCK: should a FIFO be swapped in after the check, the open
    // still returns at once (a blocking open would wait for a writer), and
    // the check below refuses it.
    let handle = OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path).map_err(err)?;
    let meta = handle.metadata().map_err(err)?;
    regular(path, file, &meta)?;
    Ok((handle, meta))
}

/// Refuses a path that exists but is not a regular file; a missing path is
/// fine. For files gavel is about to create or append to (a new record):
/// opening a FIFO for writing would wait for a reader.
pub fn check_absent_or_regular(path: &Path, file: UserFile) -> Result<(), ReadError> {
    match std::fs::metadata(path) {
        Ok(meta) => regular(path, file, &meta),
        Err(source) if source.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(ReadError::Unreadable { file, path: path.to_owned(), source }),
    }
}

fn io_error(path: &Path, file: UserFile, source: io::Error) -> ReadError {
    if source.kind() == io::ErrorKind::NotFound {
        ReadError::Missing { file, path: path.to_owned() }
    } else {
        ReadError::Unreadable { file, path: path.to_owned(), source }
    }
}

fn regular(path: &Path, file: UserFile, meta: &Metadata) -> Result<(), ReadError> {
    match FileKind::of(meta) {
        None => Ok(()),
        Some(kind) => Err(ReadError::NotRegular { file, path: path.to_owned(), kind }),
    }
}

/// A byte count for people: exact KiB, MiB or GiB where it is one, with the
/// byte count beside a rounded figure otherwise.
fn bytes_text(bytes: u64) -> String {
    const GIB: u64 = 1024 * MIB;
    for (unit, name) in [(GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")] {
        if bytes >= unit && bytes.is_multiple_of(unit) {
            return format!("{} {name}", bytes / unit);
        }
    }
    if bytes >= MIB {
        #[allow(clippy::cast_precision_loss)] // a rounded figure for people
        let mib = bytes as f64 / MIB as f64;
        return format!("{bytes} bytes ({mib:.1} MiB)");
    }
    format!("{bytes} bytes")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::os::unix::net::UnixListener;

    use pretty_assertions::assert_eq;

    use super::*;

    fn mkfifo(path: &Path) {
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
    }

    #[test]
    fn a_regular_file_and_a_link_to_one_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w.toml");
        std::fs::write(&file, "name = \"x\"\n").unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_text(&file, UserFile::Workflow).unwrap(), "name = \"x\"\n");
        assert_eq!(read_text(&link, UserFile::Workflow).unwrap(), "name = \"x\"\n");
        // Exactly at the limit is fine; one byte over is not.
        let big = dir.path().join("big.md");
        std::fs::write(&big, vec![b'a'; usize::try_from(PROMPT_MAX_BYTES).unwrap()]).unwrap();
        assert_eq!(read(&big, UserFile::Prompt).unwrap().len() as u64, PROMPT_MAX_BYTES);
        std::fs::write(&big, vec![b'a'; usize::try_from(PROMPT_MAX_BYTES + 1).unwrap()]).unwrap();
        let err = read(&big, UserFile::Prompt).unwrap_err();
        assert!(
            matches!(err, ReadError::TooLarge { size, limit, .. } if size == PROMPT_MAX_BYTES + 1 && limit == PROMPT_MAX_BYTES),
            "{err}"
        );
        assert_eq!(
            err.message(),
            "cannot read the prompt template: it is 1048577 bytes (1.0 MiB), more than the 1 MiB a file of this kind may have"
        );
    }

    #[test]
    fn what_is_not_a_regular_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let socket = dir.path().join("sock");
        let _listener = UnixListener::bind(&socket).unwrap();
        let link_to_fifo = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link_to_fifo).unwrap();
        let cases: [(&Path, FileKind); 6] = [
            (Path::new("/dev/zero"), FileKind::CharDevice),
            (Path::new("/dev/null"), FileKind::CharDevice),
            (&fifo, FileKind::Fifo),
            (&link_to_fifo, FileKind::Fifo),
            (dir.path(), FileKind::Directory),
            (&socket, FileKind::Socket),
        ];
        for (path, want) in cases {
            for file in [UserFile::Workflow, UserFile::Script, UserFile::Record] {
                let err = read(path, file).unwrap_err();
                match &err {
                    ReadError::NotRegular { kind, path: p, .. } => {
                        assert_eq!((*kind, p.as_path()), (want, path));
                    }
                    other => panic!("{path:?}: {other}"),
                }
                assert!(err.message().contains("not a regular file"), "{err}");
                assert!(err.to_string().starts_with(&path.display().to_string()), "{err}");
                assert!(open(path, file).is_err());
            }
        }
    }

    /// A FIFO swapped in between the type check and the open: the open does
    /// not wait for a writer, and the handle's own check refuses it.
    #[test]
    fn a_fifo_that_slips_past_the_first_check_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let err = open_checked(&fifo, UserFile::Answers).unwrap_err();
        assert!(matches!(err, ReadError::NotRegular { kind: FileKind::Fifo, .. }), "{err}");
        let err = open_checked(Path::new("/dev/zero"), UserFile::Script).unwrap_err();
        assert!(matches!(err, ReadError::NotRegular { kind: FileKind::CharDevice, .. }), "{err}");
    }

    #[test]
    fn missing_dangling_and_unreadable_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.toml");
        assert!(read(&missing, UserFile::Workflow).unwrap_err().is_missing());
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(&missing, &dangling).unwrap();
        assert!(read(&dangling, UserFile::Workflow).unwrap_err().is_missing());
        // A path through a file is neither missing nor readable.
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let err = read(&file.join("below"), UserFile::Brief).unwrap_err();
        assert!(matches!(err, ReadError::Unreadable { .. }), "{err}");
    }

    #[test]
    fn text_must_be_utf8_and_says_where_it_stops() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("b.md");
        std::fs::write(&file, b"ok\n\xff\xfe").unwrap();
        let err = read_text(&file, UserFile::Brief).unwrap_err();
        assert!(
            matches!(&err, ReadError::NotText { valid_up_to: 3, lossy, .. } if lossy.starts_with("ok\n")),
            "{err}"
        );
        assert_eq!(read(&file, UserFile::Brief).unwrap(), b"ok\n\xff\xfe");
    }

    #[test]
    fn a_new_file_may_be_absent_or_regular_only() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        assert!(check_absent_or_regular(&dir.path().join("new.jsonl"), UserFile::Record).is_ok());
        std::fs::write(dir.path().join("old.jsonl"), "").unwrap();
        assert!(check_absent_or_regular(&dir.path().join("old.jsonl"), UserFile::Record).is_ok());
        for path in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
            assert!(matches!(
                check_absent_or_regular(path, UserFile::Record),
                Err(ReadError::NotRegular { .. })
            ));
        }
    }

    #[test]
    fn a_head_is_bounded_and_knows_the_whole_size() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "0123456789").unwrap();
        assert_eq!(read_head(&file, UserFile::WorkspaceFile, 4).unwrap(), (b"0123".to_vec(), 10));
        assert_eq!(read_head(&file, UserFile::WorkspaceFile, 40).unwrap(), (b"0123456789".to_vec(), 10));
        assert!(matches!(
            read_head(Path::new("/dev/zero"), UserFile::WorkspaceFile, 4),
            Err(ReadError::NotRegular { kind: FileKind::CharDevice, .. })
        ));
    }

    #[test]
    fn every_kind_has_a_limit_and_a_name() {
        for (file, limit) in [
            (UserFile::Workflow, MIB),
            (UserFile::Brief, 4 * MIB),
            (UserFile::Script, 16 * MIB),
            (UserFile::Answers, MIB),
            (UserFile::Goal, MIB),
            (UserFile::Prompt, MIB),
            (UserFile::Settings, 4 * MIB),
            (UserFile::WorkspaceFile, u64::MAX),
            (UserFile::Record, u64::MAX),
        ] {
            assert_eq!(file.limit(), limit);
            assert!(file.noun().starts_with("the "));
        }
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes_text(0), "0 bytes");
        assert_eq!(bytes_text(1024), "1 KiB");
        assert_eq!(bytes_text(16 * MIB), "16 MiB");
        assert_eq!(bytes_text(3 * 1024 * MIB), "3 GiB");
        assert_eq!(bytes_text(MIB + 1), "1048577 bytes (1.0 MiB)");
        assert_eq!(bytes_text(1500), "1500 bytes");
    }
}
