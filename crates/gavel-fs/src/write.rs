//! Guarded, atomic writes inside a workspace: the one path by which gavel
//! writes a file a seat or worker produced, whatever the engine.
//!
//! Three layers, each usable alone:
//!
//! - [`normalise`]: a pure check of the path as written. Refused: empty,
//!   absolute, `..` anywhere, control characters, a trailing `/`, leading or
//!   trailing spaces, and any component that is `.gavel` or `.git` (compared
//!   case-insensitively, ignoring trailing dots and spaces and the characters
//!   HFS+ ignores, the way git guards `.git`). `./` and doubled slashes
//!   normalise away.
//! - [`Workspace::check`]: resolves every component that exists with
//!   `symlink_metadata`, never following a symbolic link blindly: a link is
//!   resolved, and must land on an existing folder (or, last, a regular file)
//!   inside the canonical workspace root and outside `.gavel/` and `.git/`.
//!   A dangling link is refused, so is a file used as a folder, a folder or
//!   a FIFO as the target.
//! - [`Workspace::write`]: the bytes land in a temp file in the target's own
//!   folder, which is synced, renamed over the target, and the folder synced.
//!   A failure before the rename (full disk, the file size limit, a
//!   read-only folder) leaves the previous file byte-for-byte as it was and
//!   no temp file behind. The replaced file's permission bits are kept
//!   (setuid and setgid dropped); a new file gets `0o666` less the umask.
//!   The rename also cuts a hard link: the other names of the old inode keep
//!   the old bytes.
//!
//! What it does not do: hold the folders open while it works, so a process
//! racing it inside the workspace (swapping a checked folder for a link
//! between the check and the rename) is not stopped here; the agent CLIs
//! that could do so are compared against a [`crate::snapshot`] instead.

use std::ffi::OsString;
use std::fmt;
use std::fs::{File, Metadata, Permissions};
use std::io::{self, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};

/// The folders no seat may write into: gavel's own state and git's.
pub const RESERVED: [&str; 2] = [".gavel", ".git"];

/// What a seat may write, for the end of refusal messages.
pub const ALLOWED: &str = "a seat may write only regular files at relative paths inside the workspace, outside `.gavel/` and `.git/`, without `..` and without symbolic links that lead out (e.g. `docs/page.md`)";

/// The permission bits a new file asks for (the umask then applies).
const NEW_FILE_MODE: u32 = 0o666;

/// The permission bits kept from a replaced file: setuid and setgid are
/// dropped, as the kernel drops them when an unprivileged process writes.
const KEPT_MODE_BITS: u32 = 0o1777;

/// Why a path may not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Empty, blank, or only `./`.
    Empty,
    /// Starts at the file-system root.
    Absolute,
    /// Has a `..` component.
    ParentDir,
    /// Not in plain form; says why.
    NotNormal(&'static str),
    /// A component names `.gavel` or `.git` (the component as written).
    Reserved(String),
    /// A symbolic link on the way resolves outside the workspace.
    LeadsOutside {
        /// The link, relative to the workspace.
        link: String,
    },
    /// A symbolic link on the way points at nothing (or loops).
    Dangling {
        /// The link, relative to the workspace.
        link: String,
    },
    /// A symbolic link on the way resolves into `.gavel/` or `.git/`.
    IntoReserved {
        /// The link, relative to the workspace.
        link: String,
    },
    /// A component used as a folder is something else.
    NotAFolder {
        /// The component's path, relative to the workspace.
        part: String,
    },
    /// The target exists and is not a regular file (what it is).
    NotAFile(&'static str),
    /// The target is a file gavel itself writes while the run works (its
    /// record given with `--record` or `[options] record`, the record's lock).
    GavelsOwn,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Empty => f.write_str("names no file"),
            Refusal::Absolute => f.write_str("is absolute"),
            Refusal::ParentDir => f.write_str("climbs out with `..`"),
            Refusal::NotNormal(why) => f.write_str(why),
            Refusal::Reserved(part) => write!(f, "lies under `{part}/`, which belongs to gavel or git"),
            Refusal::LeadsOutside { link } => {
                write!(f, "leads outside the workspace through the symbolic link `{link}`")
            }
            Refusal::Dangling { link } => {
                write!(f, "goes through the symbolic link `{link}`, which points at nothing")
            }
            Refusal::IntoReserved { link } => {
                write!(f, "leads into `.gavel/` or `.git/` through the symbolic link `{link}`")
            }
            Refusal::NotAFolder { part } => write!(f, "needs `{part}` to be a folder, and it is not"),
            Refusal::NotAFile(what) => write!(f, "is {what}, not a regular file"),
            Refusal::GavelsOwn => f.write_str("is gavel's own file (the run's record or its lock)"),
        }
    }
}

/// Why a write did not happen (or did not finish).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The path may not be written; nothing was touched.
    #[error("cannot write `{path}`: it {reason}; {ALLOWED}")]
    Refused {
        /// The path as asked for.
        path: String,
        /// Why.
        reason: Refusal,
    },
    /// The file system failed.
    #[error("cannot write `{path}` ({step}): {source}; {}", step.outcome())]
    Io {
        /// The path as asked for.
        path: String,
        /// What gavel was doing.
        step: Step,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

impl WriteError {
    /// The path as asked for.
    pub fn path(&self) -> &str {
        match self {
            WriteError::Refused { path, .. } | WriteError::Io { path, .. } => path,
        }
    }

    /// Whether the path itself was refused (as opposed to the disk failing).
    pub fn is_refusal(&self) -> bool {
        matches!(self, WriteError::Refused { .. })
    }
}

/// The step of a write that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Reading the workspace or the path's existing components.
    Resolving,
    /// Creating a missing folder on the way.
    CreatingFolder,
    /// The content is larger than the process's file size limit.
    SizeLimit,
    /// Creating, filling or syncing the temp file.
    WritingTemp,
    /// Renaming the temp file over the target.
    Replacing,
    /// Syncing the folder after the rename.
    SyncingFolder,
}

impl Step {
    /// What the user should know about the file after a failure here.
    fn outcome(self) -> &'static str {
        match self {
            Step::Resolving
            | Step::CreatingFolder
            | Step::SizeLimit
            | Step::WritingTemp
            | Step::Replacing => "its previous content (if any) is unchanged",
            Step::SyncingFolder => "the new content is in place but may not survive a power cut",
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Resolving => "reading the path",
            Step::CreatingFolder => "creating its folder",
            Step::SizeLimit => "over the file size limit",
            Step::WritingTemp => "writing a temporary file beside it",
            Step::Replacing => "replacing it",
            Step::SyncingFolder => "syncing its folder",
        })
    }
}

/// `path` in plain relative form (`./a//b` → `a/b`), or why it may not be
/// written. Pure: looks at the text only.
pub fn normalise(path: &str) -> Result<String, Refusal> {
    if path.trim().is_empty() {
        return Err(Refusal::Empty);
    }
    if path.chars().any(char::is_control) {
        return Err(Refusal::NotNormal("contains a control character"));
    }
    if path.trim() != path {
        return Err(Refusal::NotNormal("starts or ends with a space"));
    }
    if path.starts_with('/') {
        return Err(Refusal::Absolute);
    }
    let mut parts: Vec<&str> = Vec::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(part) => {
                let Some(part) = part.to_str() else {
                    return Err(Refusal::NotNormal("is not valid UTF-8"));
                };
                parts.push(part);
            }
            Component::CurDir => {}
            Component::ParentDir => return Err(Refusal::ParentDir),
            Component::RootDir | Component::Prefix(_) => return Err(Refusal::Absolute),
        }
    }
    if let Some(part) = parts.iter().find(|p| reserved(p).is_some()) {
        return Err(Refusal::Reserved((*part).to_owned()));
    }
    if parts.is_empty() {
        return Err(Refusal::Empty);
    }
    if path.ends_with('/') || path.ends_with("/.") {
        return Err(Refusal::NotNormal("ends with `/`: name a file, not a folder"));
    }
    Ok(parts.join("/"))
}

/// The reserved folder a component stands for, if any: compared
/// case-insensitively, ignoring trailing dots and spaces (which some file
/// systems drop) and the zero-width characters HFS+ ignores.
pub fn reserved(component: &str) -> Option<&'static str> {
    let kept: String = component.chars().filter(|c| !hfs_ignorable(*c)).collect();
    let trimmed = kept.trim_end_matches(['.', ' ']);
    RESERVED.iter().copied().find(|name| trimmed.eq_ignore_ascii_case(name))
}

/// Code points HFS+ leaves out when it compares names.
fn hfs_ignorable(c: char) -> bool {
    matches!(c, '\u{200c}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{206a}'..='\u{206f}' | '\u{feff}')
}

/// Whether a path relative to the workspace (already resolved) lies in a
/// reserved folder.
fn under_reserved(relative: &Path) -> bool {
    relative.components().any(|c| c.as_os_str().to_str().is_some_and(|s| reserved(s).is_some()))
}

/// A workspace, by its canonical root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

/// A checked target: where the bytes go, and what is there now.
#[derive(Debug)]
pub struct Target {
    /// The path in plain form, as the caller named it.
    pub normal: String,
    /// The deepest folder that exists, canonical and inside the workspace.
    dir: PathBuf,
    /// Folders to create under `dir`, in order.
    missing: Vec<OsString>,
    /// The file's name in its folder (the link's target's, through a link).
    name: OsString,
    /// The file there now, if any.
    existing: Option<Metadata>,
}

impl Target {
    /// The file the bytes land in (through a link: the link's target).
    pub fn path(&self) -> PathBuf {
        let mut path = self.dir.clone();
        path.extend(&self.missing);
        path.push(&self.name);
        path
    }

    /// Whether the file exists now.
    pub fn exists(&self) -> bool {
        self.existing.is_some()
    }
}

/// What a resolved link must be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    Folder,
    File,
}

impl Workspace {
    /// The workspace at `dir`, which must exist.
    pub fn new(dir: &Path) -> Result<Self, WriteError> {
        let root = dir.canonicalize().map_err(|source| WriteError::Io {
            path: dir.display().to_string(),
            step: Step::Resolving,
            source,
        })?;
        Ok(Self { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Checks `relative` for a write, creating and changing nothing.
    pub fn check(&self, relative: &str) -> Result<Target, WriteError> {
        let refused = |reason| WriteError::Refused { path: relative.to_owned(), reason };
        let io = |source| WriteError::Io { path: relative.to_owned(), step: Step::Resolving, source };
        let normal = normalise(relative).map_err(refused)?;
        let parts: Vec<&str> = normal.split('/').collect();
        let Some((name, folders)) = parts.split_last() else {
            return Err(refused(Refusal::Empty));
        };
        let mut dir = self.root.clone();
        let mut missing: Vec<OsString> = Vec::new();
        for (i, part) in folders.iter().enumerate() {
            if !missing.is_empty() {
                missing.push(OsString::from(part));
                continue;
            }
            let shown = || parts[..=i].join("/");
            let probe = dir.join(part);
            match probe.symlink_metadata() {
                Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(OsString::from(part)),
                Err(e) => return Err(io(e)),
                Ok(meta) if meta.is_dir() => dir = probe,
                Ok(meta) if meta.is_symlink() => {
                    dir = self.follow(&probe, &shown(), Want::Folder).map_err(refused)?;
                }
                Ok(_) => return Err(refused(Refusal::NotAFolder { part: shown() })),
            }
        }
        let mut name = OsString::from(name);
        let mut existing = None;
        if missing.is_empty() {
            let probe = dir.join(&name);
            match probe.symlink_metadata() {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io(e)),
                Ok(meta) if meta.is_file() => existing = Some(meta),
                Ok(meta) if meta.is_symlink() => {
                    let resolved = self.follow(&probe, &normal, Want::File).map_err(refused)?;
                    existing = Some(resolved.metadata().map_err(io)?);
                    match (resolved.parent(), resolved.file_name()) {
                        (Some(parent), Some(file)) => {
                            file.clone_into(&mut name);
                            parent.clone_into(&mut dir);
                        }
                        _ => return Err(refused(Refusal::NotAFile("the workspace itself"))),
                    }
                }
                Ok(meta) if meta.is_dir() => return Err(refused(Refusal::NotAFile("a folder"))),
                Ok(_) => return Err(refused(Refusal::NotAFile("a FIFO, socket or device"))),
            }
        }
        let target = Target { normal, dir, missing, name, existing };
        // The record (and its lock) may live in the workspace: no seat
        // writes over the file every decision of the run is kept in.
        if target.missing.is_empty() && crate::scope::owned().contains(&target.path()) {
            return Err(refused(Refusal::GavelsOwn));
        }
        Ok(target)
    }

    /// Resolves the link at `link` (shown as `shown`): it must land on an
    /// existing `want` inside the workspace, outside reserved folders.
    fn follow(&self, link: &Path, shown: &str, want: Want) -> Result<PathBuf, Refusal> {
        let Ok(resolved) = link.canonicalize() else {
            return Err(Refusal::Dangling { link: shown.to_owned() });
        };
        let Ok(inside) = resolved.strip_prefix(&self.root) else {
            return Err(Refusal::LeadsOutside { link: shown.to_owned() });
        };
        if under_reserved(inside) {
            return Err(Refusal::IntoReserved { link: shown.to_owned() });
        }
        let Ok(meta) = resolved.metadata() else {
            return Err(Refusal::Dangling { link: shown.to_owned() });
        };
        match want {
            Want::Folder if meta.is_dir() => Ok(resolved),
            Want::Folder => Err(Refusal::NotAFolder { part: shown.to_owned() }),
            Want::File if meta.is_file() => Ok(resolved),
            Want::File if meta.is_dir() => Err(Refusal::NotAFile("a link to a folder")),
            Want::File => Err(Refusal::NotAFile("a link to a FIFO, socket or device")),
        }
    }

    /// Writes `bytes` to `relative` atomically after [`Workspace::check`];
    /// returns the file written (through a link: the link's target).
    pub fn write(&self, relative: &str, bytes: &[u8]) -> Result<PathBuf, WriteError> {
        let target = self.check(relative)?;
        let io = |step, source| WriteError::Io { path: relative.to_owned(), step, source };
        let dir = Self::make_folders(relative, &target)?;
        let mode = target.existing.as_ref().map(|m| m.permissions().mode() & KEPT_MODE_BITS);
        replace(&dir, &target.name, bytes, mode).map_err(|(step, e)| io(step, e))?;
        Ok(dir.join(&target.name))
    }

    /// Creates the folders `target` lacks; returns the file's folder.
    fn make_folders(relative: &str, target: &Target) -> Result<PathBuf, WriteError> {
        let io = |step, source| WriteError::Io { path: relative.to_owned(), step, source };
        let mut dir = target.dir.clone();
        for part in &target.missing {
            dir.push(part);
            match std::fs::create_dir(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    // Made by someone else since the check: only a real folder will do.
                    let meta = dir.symlink_metadata().map_err(|e| io(Step::CreatingFolder, e))?;
                    if !meta.is_dir() {
                        let part = Path::new(&target.normal)
                            .ancestors()
                            .find(|a| a.file_name() == Some(part.as_os_str()))
                            .map_or_else(|| target.normal.clone(), |a| a.display().to_string());
                        return Err(WriteError::Refused {
                            path: relative.to_owned(),
                            reason: Refusal::NotAFolder { part },
                        });
                    }
                }
                Err(e) => return Err(io(Step::CreatingFolder, e)),
            }
        }
        Ok(dir)
    }
}

impl Workspace {
    /// Writes several files all or nothing: every path is checked, every
    /// new content is written to a synced temp file beside its target, and
    /// only then are the temp files renamed over their targets. A failure
    /// before the renames (a full disk, the file size limit, a read-only
    /// folder) leaves every file as it was; a rename that fails puts the
    /// files already replaced back to their old bytes. Returns the files
    /// written.
    pub fn write_all(&self, files: &[(&str, &[u8])]) -> Result<Vec<PathBuf>, WriteError> {
        let mut staged: Vec<Staged> = Vec::with_capacity(files.len());
        for (relative, bytes) in files {
            match self.stage(relative, bytes) {
                Ok(file) => staged.push(file),
                Err(e) => {
                    // Temp files go as they drop; folders made for them go too.
                    let made: Vec<PathBuf> = staged.iter().flat_map(|f| f.made.clone()).collect();
                    drop(staged);
                    remove_empty(&made);
                    return Err(e);
                }
            }
        }
        let mut done: Vec<(PathBuf, Option<Vec<u8>>, Option<u32>)> = Vec::with_capacity(staged.len());
        for file in staged {
            let Staged { relative, temp, target, old, mode, made: _ } = file;
            if let Err(e) = temp.persist(&target) {
                for (path, old, mode) in done.iter().rev() {
                    put_back(path, old.as_deref(), *mode);
                }
                return Err(WriteError::Io { path: relative, step: Step::Replacing, source: e.error });
            }
            if let Some(dir) = target.parent() {
                File::open(dir).and_then(|d| d.sync_all()).map_err(|source| WriteError::Io {
                    path: relative.clone(),
                    step: Step::SyncingFolder,
                    source,
                })?;
            }
            done.push((target, old, mode));
        }
        Ok(done.into_iter().map(|(path, _, _)| path).collect())
    }

    /// Checks one file, creates its folders and writes its new bytes to a
    /// synced temp file beside it, keeping the old bytes to put back.
    fn stage(&self, relative: &str, bytes: &[u8]) -> Result<Staged, WriteError> {
        let target = self.check(relative)?;
        let io = |step, source| WriteError::Io { path: relative.to_owned(), step, source };
        check_size_limit(bytes.len()).map_err(|e| io(Step::SizeLimit, e))?;
        let mut made = Vec::with_capacity(target.missing.len());
        let mut dir = target.dir.clone();
        for part in &target.missing {
            dir.push(part);
            made.push(dir.clone());
        }
        let dir = Self::make_folders(relative, &target).inspect_err(|_| remove_empty(&made))?;
        let path = dir.join(&target.name);
        let mode = target.existing.as_ref().map(|m| m.permissions().mode() & KEPT_MODE_BITS);
        let temp = (|| {
            let old = match &target.existing {
                Some(_) => Some(std::fs::read(&path).map_err(|e| io(Step::Resolving, e))?),
                None => None,
            };
            let temp = synced_temp(&dir, bytes, mode).map_err(|e| io(Step::WritingTemp, e))?;
            Ok((temp, old))
        })();
        match temp {
            Ok((temp, old)) => {
                Ok(Staged { relative: relative.to_owned(), temp, target: path, old, mode, made })
            }
            Err(e) => {
                remove_empty(&made);
                Err(e)
            }
        }
    }
}

/// One file of [`Workspace::write_all`], written to its temp file.
struct Staged {
    relative: String,
    temp: tempfile::NamedTempFile,
    target: PathBuf,
    /// Its bytes before (`None`: it did not exist).
    old: Option<Vec<u8>>,
    mode: Option<u32>,
    /// Folders that did not exist before it, outermost first.
    made: Vec<PathBuf>,
}

/// Removes the folders in `made` that are empty, innermost first.
fn remove_empty(made: &[PathBuf]) {
    for dir in made.iter().rev() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// Puts a replaced file back as it was (best effort: this runs only when a
/// rename failed after others succeeded).
fn put_back(path: &Path, old: Option<&[u8]>, mode: Option<u32>) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else { return };
    match old {
        Some(bytes) => {
            let _ = replace(dir, name, bytes, mode);
        }
        None => {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Checks `relative` against the workspace at `workspace`, writing nothing.
pub fn check(workspace: &Path, relative: &str) -> Result<Target, WriteError> {
    Workspace::new(workspace)?.check(relative)
}

/// Writes `bytes` to `relative` inside `workspace`, guarded and atomic (see
/// the module docs). Returns the file written.
pub fn write_file(workspace: &Path, relative: &str, bytes: &[u8]) -> Result<PathBuf, WriteError> {
    Workspace::new(workspace)?.write(relative, bytes)
}

/// A temp file in `dir` holding `bytes`, with `mode` (or a new file's),
/// synced: ready to be renamed over its target. Removed when dropped.
fn synced_temp(dir: &Path, bytes: &[u8], mode: Option<u32>) -> io::Result<tempfile::NamedTempFile> {
    let mut temp = tempfile::Builder::new()
        .prefix(".gavel-write-")
        .suffix(".tmp")
        .permissions(Permissions::from_mode(NEW_FILE_MODE))
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    if let Some(mode) = mode {
        temp.as_file().set_permissions(Permissions::from_mode(mode))?;
    }
    temp.as_file().sync_all()?;
    Ok(temp)
}

/// Puts `bytes` at `dir/name` by temp file, sync, rename and folder sync.
/// `mode`: the permission bits to keep (`None`: a new file). Nothing is
/// left behind on failure before the rename. Shared with the snapshot's
/// restore, which writes into `.git/` as well.
pub(crate) fn replace(
    dir: &Path,
    name: &std::ffi::OsStr,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<(), (Step, io::Error)> {
    check_size_limit(bytes.len()).map_err(|e| (Step::SizeLimit, e))?;
    let temp = synced_temp(dir, bytes, mode).map_err(|e| (Step::WritingTemp, e))?;
    // On failure the temp file comes back inside the error and is removed
    // when it drops.
    temp.persist(dir.join(name)).map_err(|e| (Step::Replacing, e.error))?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| (Step::SyncingFolder, e))
}

/// Refuses content longer than the process may write to one file
/// (`RLIMIT_FSIZE`, `ulimit -f`): past it the kernel would kill gavel with
/// SIGXFSZ mid-write, leaving the temp file behind.
fn check_size_limit(len: usize) -> io::Result<()> {
    use nix::sys::resource::{RLIM_INFINITY, Resource, getrlimit};
    let Ok((soft, _)) = getrlimit(Resource::RLIMIT_FSIZE) else { return Ok(()) };
    let len = u64::try_from(len).unwrap_or(u64::MAX);
    if soft != RLIM_INFINITY && len > soft {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "{len} bytes is more than this process may write to one file ({soft} bytes, `ulimit -f`); raise the limit"
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
