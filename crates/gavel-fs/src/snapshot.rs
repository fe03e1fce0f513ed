//! Watching a workspace around a request gavel cannot guard file by file:
//! an agent CLI edits files with its own tools. A [`Guard`] takes a
//! snapshot before the request and, after it, undoes every change outside
//! the request's `writes` and says which.
//!
//! - **Detection is by metadata**: file type, inode, length, mtime and ctime
//!   (ns) and mode, taken with `symlink_metadata`. A file whose metadata
//!   moved is compared by bytes with its saved copy, so a `touch` or a
//!   rewrite with the same bytes is no change. Symbolic links are compared
//!   as links (their target text) and never followed; folders by type and
//!   mode.
//! - **Old bytes** of regular files are copied into a scratch folder in
//!   the system's temp folder, outside the workspace (`std::fs::copy`, which
//!   reflinks where the file system can), within a
//!   [`Budget`]: at most [`Budget::per_file`] for one file and
//!   [`Budget::total`] in all, smallest files first (most files restorable
//!   per byte). A changed file that was over budget is reported as changed
//!   and not restorable; so is a changed FIFO, socket or device.
//! - **Skipped**: `.gavel/` at the root (gavel appends its own record there
//!   while seats run; the record writer checks its own file instead),
//!   `.git/objects` (but its small `info/`, where `alternates` lives) and
//!   `.git/lfs` at any depth (content-addressed, only ever added to, and
//!   large), files gavel registered as its own
//!   ([`crate::scope::own`]), and the contents of folders gavel cannot read.
//!   The rest of `.git/` (config, hooks, refs, index) is watched.
//! - **Parallel requests**: what another request's [`WriteScope`] may write,
//!   when it overlapped this one in time, is neither blamed nor undone.
//! - **Allowed files stay files**: a file the request may write that it
//!   turned into a symbolic link leading out of the workspace (or into
//!   `.gavel/` or `.git/`, or to a file it may not write), into a hard link
//!   (a write through it changes another file), or into a FIFO or device,
//!   is undone too: gavel reads the built files next, and a later write
//!   through such a path would land elsewhere.
//! - **Undoing**: created entries are removed (deepest first), deleted and
//!   retyped ones recreated (parents first) with their old mode, modified
//!   files rewritten atomically from the saved bytes with their old mode,
//!   modes set back. Restored files get new inodes and times. Nothing is
//!   recreated through a symbolic link: a path whose folder is no longer a
//!   real folder is reported as not restorable.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::fs::{Metadata, Permissions};
use std::io::{self, Read as _};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::scope::{self, WriteScope};
use crate::write::normalise;

/// How many old bytes a snapshot keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Bytes kept in all.
    pub total: u64,
    /// Bytes kept of one file: a larger file is watched but not restorable.
    pub per_file: u64,
}

impl Budget {
    /// 256 MiB in all, 64 MiB per file.
    pub const DEFAULT: Budget = Budget { total: 256 * 1024 * 1024, per_file: 64 * 1024 * 1024 };
}

impl Default for Budget {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What kind of entry a path is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    File,
    Dir,
    /// A symbolic link and its target text.
    Link(PathBuf),
    /// A FIFO, socket or device.
    Other,
}

impl Kind {
    fn same_type(&self, other: &Kind) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

/// One path as it was seen.
#[derive(Debug, Clone)]
struct Entry {
    kind: Kind,
    ino: u64,
    len: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    mode: u32,
    /// How many names the file has (a hard link has more than one).
    nlink: u64,
    /// Where its old bytes were kept, for a regular file within budget.
    saved: Option<PathBuf>,
}

impl Entry {
    fn from_meta(meta: &Metadata, path: &Path) -> io::Result<Self> {
        let ft = meta.file_type();
        let kind = if ft.is_symlink() {
            Kind::Link(std::fs::read_link(path)?)
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        Ok(Self {
            kind,
            ino: meta.ino(),
            len: meta.len(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            mode: meta.mode() & 0o7777,
            nlink: meta.nlink(),
            saved: None,
        })
    }

    fn same_meta(&self, other: &Entry) -> bool {
        self.ino == other.ino
            && self.len == other.len
            && self.mtime == other.mtime
            && self.ctime == other.ctime
            && self.mode == other.mode
    }
}

/// A change outside `writes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// A new file, folder or link.
    Created,
    /// Different bytes (or link target).
    Modified,
    /// Gone.
    Deleted,
    /// Same bytes, different permission bits.
    ModeChanged,
    /// A file became a folder, a link, ... or the other way round.
    TypeChanged,
    /// A file it may write became a symbolic link that leads out of the
    /// workspace (or into `.gavel/` or `.git/`, or to a file it may not
    /// write), or a FIFO or device.
    LinkedOut,
    /// A file it may write became a hard link: writing it changes another
    /// file too.
    HardLinked,
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Change::Created => "created",
            Change::Modified => "modified",
            Change::Deleted => "deleted",
            Change::ModeChanged => "mode changed",
            Change::TypeChanged => "replaced by another kind of entry",
            Change::LinkedOut => {
                "made a symbolic link out of the workspace or to a file it may not write, or a special file"
            }
            Change::HardLinked => "made a hard link to another file",
        })
    }
}

/// What became of one change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undo {
    /// Put back as it was (a created entry: removed).
    Restored,
    /// Could not be put back; why.
    NotRestorable(String),
}

/// One change outside the request's `writes`, and what gavel did about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undone {
    /// The path, relative to the workspace.
    pub path: String,
    /// What the request did.
    pub change: Change,
    /// What gavel did.
    pub undo: Undo,
}

/// The outcome of [`Guard::finish`]: every change outside `writes`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The changes, by path.
    pub changes: Vec<Undone>,
}

/// How many changes a message names before "and N more".
const NAMED_IN_MESSAGE: usize = 20;

impl Report {
    /// Whether nothing outside `writes` changed.
    pub fn is_clean(&self) -> bool {
        self.changes.is_empty()
    }

    /// One line naming each change and its outcome, e.g.
    /// "`x.txt` created (removed); `b.md` deleted (restored)".
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for (i, c) in self.changes.iter().take(NAMED_IN_MESSAGE).enumerate() {
            if i > 0 {
                out.push_str("; ");
            }
            let undo = match (&c.undo, c.change) {
                (Undo::Restored, Change::Created) => "removed".to_owned(),
                (Undo::Restored, _) => "restored".to_owned(),
                (Undo::NotRestorable(why), _) => format!("NOT restored: {why}"),
            };
            let _ = write!(out, "`{}` {} ({undo})", c.path, c.change);
        }
        if self.changes.len() > NAMED_IN_MESSAGE {
            let _ = write!(out, "; and {} more", self.changes.len() - NAMED_IN_MESSAGE);
        }
        out
    }
}

/// A snapshot of a workspace, taken before a request; [`Guard::finish`]
/// compares and undoes.
#[derive(Debug)]
pub struct Guard {
    root: PathBuf,
    writes: Vec<String>,
    entries: BTreeMap<PathBuf, Entry>,
    budget: Budget,
    scratch: tempfile::TempDir,
    scope: WriteScope,
}

impl Guard {
    /// Takes a snapshot of the workspace at `workspace` for a request that
    /// may write `writes` (relative paths; ones that do not normalise are
    /// ignored: they can never be written).
    pub fn take(workspace: &Path, writes: &[String], budget: Budget) -> io::Result<Guard> {
        let root = workspace.canonicalize()?;
        let writes: Vec<String> = writes.iter().filter_map(|w| normalise(w).ok()).collect();
        let scope = WriteScope::enter(&root, &writes);
        // Outside the workspace, where an agent confined to it (codex's
        // sandbox, claude's edit rules) cannot reach the copies it would be
        // restored from.
        let scratch = tempfile::Builder::new().prefix("gavel-snapshot-").tempdir()?;
        let mut entries = walk(&root, scratch.path())?;
        save(&root, &mut entries, scratch.path(), budget);
        Ok(Guard { root, writes, entries, budget, scratch, scope })
    }

    /// How many paths the snapshot holds (for tests and progress).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the snapshot holds no path.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Compares the workspace with the snapshot and undoes every change
    /// outside `writes` (and outside what overlapping requests may write).
    pub fn finish(self) -> io::Result<Report> {
        let now = walk(&self.root, self.scratch.path())?;
        let workspace = crate::write::Workspace::new(&self.root).ok();
        let mut allowed: BTreeSet<String> = self.writes.iter().cloned().collect();
        allowed.extend(self.scope.others());
        // A command gavel ran in this workspace meanwhile may have written
        // anything: what changed outside `writes` cannot be blamed on this
        // request, so it is left as it is (the sandbox rules commands).
        let command_ran = self.scope.overlapped_anywhere();
        let is_allowed = |rel: &Path, dir_now: bool| {
            let Some(rel) = rel.to_str() else { return false };
            command_ran
                || allowed.contains(rel)
                || (dir_now
                    && allowed.iter().any(|w| w.strip_prefix(rel).is_some_and(|rest| rest.starts_with('/'))))
        };

        let mut found: Vec<(PathBuf, Change)> = Vec::new();
        let paths: BTreeSet<&PathBuf> = self.entries.keys().chain(now.keys()).collect();
        for path in paths {
            let change = match (self.entries.get(path), now.get(path)) {
                (Some(_), None) => Change::Deleted,
                (None, Some(_)) => Change::Created,
                (Some(old), Some(new)) => match self.compare(path, old, new) {
                    Some(change) => change,
                    None => continue,
                },
                (None, None) => continue,
            };
            let dir_now = now.get(path).is_some_and(|e| e.kind == Kind::Dir);
            if !is_allowed(path, dir_now) {
                found.push((path.clone(), change));
            } else if let Some(change) = self.misshapen(path, now.get(path), workspace.as_ref()) {
                found.push((path.clone(), change));
            }
        }
        // A file among `writes` made a hard link (or a symbolic link) without
        // its own metadata moving (`ln a.txt elsewhere`) is caught too.
        for w in &self.writes {
            let path = Path::new(w);
            let unchanged = self.entries.get(path).zip(now.get(path)).is_some_and(|(old, new)| {
                old.kind == new.kind && old.same_meta(new) && old.nlink == new.nlink
            });
            if unchanged || found.iter().any(|(p, _)| p == path) {
                continue;
            }
            if let Some(change) = self.misshapen(path, now.get(path), workspace.as_ref()) {
                found.push((path.to_owned(), change));
            }
        }
        found.sort();
        Ok(Report { changes: self.undo(&found, &now) })
    }

    /// Whether an allowed path is now something the request may not leave
    /// there: a symbolic link out of the workspace or (for one of its own
    /// `writes`) to a file it may not write, a FIFO or device, or a file
    /// that became a hard link. Gavel reads the built files next, and a later
    /// write through such a path would land elsewhere.
    fn misshapen(
        &self,
        path: &Path,
        now: Option<&Entry>,
        ws: Option<&crate::write::Workspace>,
    ) -> Option<Change> {
        let now = now?;
        let own = path.to_str().is_some_and(|p| self.writes.iter().any(|w| w == p));
        match &now.kind {
            Kind::Other => Some(Change::LinkedOut),
            Kind::Link(_) => {
                let Some((ws, p)) = ws.zip(path.to_str()) else { return Some(Change::LinkedOut) };
                let Ok(target) = ws.check(p) else { return Some(Change::LinkedOut) };
                let lands = target.path();
                let rel = lands.strip_prefix(ws.root()).ok().and_then(Path::to_str);
                (own && rel.is_none_or(|r| !self.writes.iter().any(|w| w == r))).then_some(Change::LinkedOut)
            }
            Kind::File => {
                let before =
                    self.entries.get(path).map_or(1, |e| if e.kind == Kind::File { e.nlink } else { 1 });
                (own && now.nlink > 1 && before <= 1).then_some(Change::HardLinked)
            }
            Kind::Dir => None,
        }
    }

    /// How `old` became `new`, or `None` for no change.
    fn compare(&self, path: &Path, old: &Entry, new: &Entry) -> Option<Change> {
        if !old.kind.same_type(&new.kind) {
            return Some(Change::TypeChanged);
        }
        match &old.kind {
            Kind::Link(_) => (old.kind != new.kind).then_some(Change::Modified),
            Kind::Dir => (old.mode != new.mode).then_some(Change::ModeChanged),
            Kind::Other => (!old.same_meta(new)).then_some(Change::Modified),
            Kind::File => {
                if old.same_meta(new) {
                    return None;
                }
                let same_bytes = match &old.saved {
                    Some(saved) => old.len == new.len && same_bytes(saved, &self.root.join(path)),
                    // Unsaved: only the metadata speaks. A process can set
                    // mtime back (`touch -d`) after an in-place edit, never
                    // ctime: a moved ctime counts as a change (a chmod back
                    // or a new hard link too, which cannot be told apart).
                    None => {
                        old.ino == new.ino
                            && old.len == new.len
                            && old.mtime == new.mtime
                            && old.ctime == new.ctime
                    }
                };
                match (same_bytes, old.mode == new.mode) {
                    (true, true) => None,
                    (true, false) => Some(Change::ModeChanged),
                    (false, _) => Some(Change::Modified),
                }
            }
        }
    }

    /// Undoes `found` (paths in ascending order) and says what became of each.
    fn undo(&self, found: &[(PathBuf, Change)], now: &BTreeMap<PathBuf, Entry>) -> Vec<Undone> {
        let mut result: BTreeMap<PathBuf, Undo> = BTreeMap::new();
        // 1. Remove what is there and should not be: deepest first.
        for (path, change) in found.iter().rev() {
            if matches!(
                change,
                Change::Created | Change::TypeChanged | Change::LinkedOut | Change::HardLinked
            ) {
                let kind = now.get(path).map(|e| &e.kind);
                if let Err(why) = self.remove(path, kind) {
                    result.insert(path.clone(), Undo::NotRestorable(why));
                }
            }
        }
        // 2. Put back what should be there: parents first.
        for (path, change) in found {
            if result.contains_key(path) {
                continue;
            }
            let outcome = match change {
                Change::Created => Ok(()),
                Change::Deleted
                | Change::TypeChanged
                | Change::Modified
                | Change::LinkedOut
                | Change::HardLinked => self.recreate(path),
                Change::ModeChanged => self.set_mode(path),
            };
            result.insert(path.clone(), outcome.map_or_else(Undo::NotRestorable, |()| Undo::Restored));
        }
        found
            .iter()
            .map(|(path, change)| Undone {
                path: path.to_string_lossy().into_owned(),
                change: *change,
                undo: result.remove(path).unwrap_or(Undo::Restored),
            })
            .collect()
    }

    /// The absolute path of `rel`, once every folder on the way is a real
    /// folder (no link) inside the root.
    fn safe(&self, rel: &Path) -> Result<PathBuf, String> {
        let mut at = self.root.clone();
        if let Some(parent) = rel.parent() {
            for part in parent.components() {
                at.push(part);
                match at.symlink_metadata() {
                    Ok(meta) if meta.is_dir() => {}
                    _ => {
                        return Err(format!(
                            "`{}` is no longer a folder",
                            part.as_os_str().to_string_lossy()
                        ));
                    }
                }
            }
        }
        Ok(self.root.join(rel))
    }

    fn remove(&self, rel: &Path, kind: Option<&Kind>) -> Result<(), String> {
        let path = self.safe(rel)?;
        let removed = match kind {
            Some(Kind::Dir) => std::fs::remove_dir(&path),
            _ => std::fs::remove_file(&path),
        };
        match removed {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("cannot remove it: {e}")),
        }
    }

    /// Puts `rel` back as the snapshot saw it (the current entry, if of the
    /// same type, is replaced).
    fn recreate(&self, rel: &Path) -> Result<(), String> {
        let Some(old) = self.entries.get(rel) else { return Ok(()) };
        let path = self.safe(rel)?;
        match &old.kind {
            Kind::Dir => {
                match std::fs::create_dir(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(format!("cannot create the folder: {e}")),
                }
                self.set_mode(rel)
            }
            Kind::File => {
                let Some(saved) = &old.saved else {
                    return Err(format!(
                        "its old bytes were not kept ({} bytes; gavel keeps up to {} MiB per file and {} MiB in all)",
                        old.len,
                        self.budget.per_file >> 20,
                        self.budget.total >> 20
                    ));
                };
                let bytes = std::fs::read(saved).map_err(|e| format!("cannot read the kept copy: {e}"))?;
                let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                    return Err("not a file name".to_owned());
                };
                crate::write::replace(dir, name, &bytes, Some(old.mode))
                    .map_err(|(step, e)| format!("{step}: {e}"))
            }
            Kind::Link(target) => {
                match std::fs::remove_file(&path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(format!("cannot remove the new link: {e}")),
                }
                std::os::unix::fs::symlink(target, &path)
                    .map_err(|e| format!("cannot recreate the link: {e}"))
            }
            Kind::Other => Err("a FIFO, socket or device is not recreated".to_owned()),
        }
    }

    fn set_mode(&self, rel: &Path) -> Result<(), String> {
        let Some(old) = self.entries.get(rel) else { return Ok(()) };
        let path = self.safe(rel)?;
        match path.symlink_metadata() {
            Ok(meta) if !meta.is_symlink() => {}
            _ => return Err("it is no longer there as it was".to_owned()),
        }
        std::fs::set_permissions(&path, Permissions::from_mode(old.mode))
            .map_err(|e| format!("cannot set its mode back: {e}"))
    }
}

/// Whether a path (relative) is skipped by every snapshot: `.gavel/` at the
/// root, `.git/lfs` and what is in `.git/objects` (at any depth) but its
/// small `info/` folder, where `alternates` would point git at objects
/// elsewhere.
fn skipped(rel: &Path) -> bool {
    if rel.as_os_str() == ".gavel" {
        return true;
    }
    let mut parts = rel.components().rev().map(std::path::Component::as_os_str);
    let last = parts.next();
    let before = parts.next();
    let third = parts.next();
    let in_git = before.is_some_and(|b| b == ".git");
    if in_git && last.is_some_and(|l| l == "lfs") {
        return true;
    }
    let in_objects = third.is_some_and(|t| t == ".git") && before.is_some_and(|b| b == "objects");
    in_objects && last.is_some_and(|l| l != "info")
}

/// Every path under `root` (relative), with its metadata; never follows a
/// link. `scratch` (the snapshot's own copies) is left out wherever it is.
fn walk(root: &Path, scratch: &Path) -> io::Result<BTreeMap<PathBuf, Entry>> {
    let mut owned = scope::owned();
    owned.push(scratch.canonicalize().unwrap_or_else(|_| scratch.to_owned()));
    let mut entries = BTreeMap::new();
    let mut folders = vec![PathBuf::new()];
    while let Some(folder) = folders.pop() {
        let read = match std::fs::read_dir(root.join(&folder)) {
            Ok(read) => read,
            // The root must be readable; a folder that is not is watched as
            // an entry, its contents are not.
            Err(e) if folder.as_os_str().is_empty() => return Err(e),
            Err(_) => continue,
        };
        for item in read {
            let Ok(item) = item else { continue };
            let rel = folder.join(item.file_name());
            let abs = root.join(&rel);
            if skipped(&rel) || owned.contains(&abs) {
                continue;
            }
            let Ok(meta) = abs.symlink_metadata() else { continue };
            let Ok(entry) = Entry::from_meta(&meta, &abs) else { continue };
            if entry.kind == Kind::Dir {
                folders.push(rel.clone());
            }
            entries.insert(rel, entry);
        }
    }
    Ok(entries)
}

/// Copies regular files' bytes into `scratch`, smallest first, within budget.
fn save(root: &Path, entries: &mut BTreeMap<PathBuf, Entry>, scratch: &Path, budget: Budget) {
    let mut files: Vec<(u64, PathBuf)> = entries
        .iter()
        .filter(|(_, e)| e.kind == Kind::File && e.len <= budget.per_file)
        .map(|(p, e)| (e.len, p.clone()))
        .collect();
    files.sort();
    let mut used: u64 = 0;
    for (n, (len, rel)) in files.into_iter().enumerate() {
        if used.saturating_add(len) > budget.total {
            break;
        }
        let copy = scratch.join(n.to_string());
        let Ok(copied) = std::fs::copy(root.join(&rel), &copy) else { continue };
        used = used.saturating_add(copied);
        if let Some(entry) = entries.get_mut(&rel) {
            // The copy holds the bytes as they are after it; a file that moved
            // meanwhile is compared against those.
            if let Ok(meta) = root.join(&rel).symlink_metadata()
                && let Ok(fresh) = Entry::from_meta(&meta, &root.join(&rel))
                && fresh.len == copied
            {
                *entry = Entry { saved: Some(copy), ..fresh };
            }
        }
    }
}

/// Whether two files hold the same bytes.
fn same_bytes(a: &Path, b: &Path) -> bool {
    let (Ok(mut a), Ok(mut b)) = (std::fs::File::open(a), std::fs::File::open(b)) else { return false };
    let mut buf_a = vec![0u8; 64 * 1024];
    let mut buf_b = vec![0u8; 64 * 1024];
    loop {
        let Ok(n) = read_full(&mut a, &mut buf_a) else { return false };
        let Ok(m) = read_full(&mut b, &mut buf_b) else { return false };
        if n != m || buf_a[..n] != buf_b[..m] {
            return false;
        }
        if n == 0 {
            return true;
        }
    }
}

/// Reads until `buf` is full or the file ends.
fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..])? {
            0 => break,
            n => filled += n,
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests;
