//! Who in this process expects a workspace to change right now.
//!
//! Graph workflows run ready nodes at once, so two seats may write in one
//! workspace at the same time. A [`crate::snapshot::Guard`] watching one
//! agent CLI must not blame it for, or undo, what another request wrote
//! inside its own `writes`: every request that writes holds a
//! [`WriteScope`] while it does, and a guard leaves alone what a scope that
//! overlapped it in time may write. Files gavel itself keeps open in a
//! workspace (a record given with `--record`, its lock) are registered with
//! [`own`] and never looked at.
//!
//! Process-wide on purpose: the requests share nothing else.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// One request's write scope.
#[derive(Debug, Clone)]
struct Entry {
    id: u64,
    root: PathBuf,
    writes: Vec<String>,
    /// May write anything in the workspace (a command gavel runs).
    anywhere: bool,
    start: u64,
    /// `None` while active.
    end: Option<u64>,
}

#[derive(Debug, Default)]
struct Registry {
    /// A logical clock: every enter and leave ticks it.
    clock: u64,
    next_id: u64,
    scopes: Vec<Entry>,
    owned: Vec<(u64, PathBuf)>,
}

static REGISTRY: Mutex<Registry> =
    Mutex::new(Registry { clock: 0, next_id: 0, scopes: Vec::new(), owned: Vec::new() });

fn registry() -> MutexGuard<'static, Registry> {
    // A panic elsewhere while holding the lock leaves plain data behind.
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The canonical form of `path` when it exists, else `path` itself.
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_owned())
}

/// A request that may write `writes` (relative, normalised) in a workspace,
/// active until dropped.
#[derive(Debug)]
pub struct WriteScope {
    id: u64,
    root: PathBuf,
    start: u64,
}

impl WriteScope {
    /// Registers a scope for `writes` in the workspace at `root`.
    pub fn enter(root: &Path, writes: &[String]) -> Self {
        Self::register(root, writes.to_vec(), false)
    }

    /// Registers a scope that may write anything in the workspace at
    /// `root`: a command gavel runs there (a `run` stage, a criterion),
    /// whose files no list names.
    pub fn enter_anywhere(root: &Path) -> Self {
        Self::register(root, Vec::new(), true)
    }

    fn register(root: &Path, writes: Vec<String>, anywhere: bool) -> Self {
        let root = canonical(root);
        let mut reg = registry();
        reg.clock += 1;
        reg.next_id += 1;
        let (id, start) = (reg.next_id, reg.clock);
        reg.scopes.push(Entry { id, root: root.clone(), writes, anywhere, start, end: None });
        Self { id, root, start }
    }

    fn overlapping<'r>(&self, reg: &'r Registry) -> impl Iterator<Item = &'r Entry> {
        let (id, root, start) = (self.id, self.root.clone(), self.start);
        reg.scopes
            .iter()
            .filter(move |e| e.id != id && e.root == root && e.end.is_none_or(|end| end >= start))
    }

    /// What other scopes in the same workspace that were active at any
    /// time since this one entered may write.
    pub fn others(&self) -> Vec<String> {
        let reg = registry();
        self.overlapping(&reg).flat_map(|e| e.writes.iter().cloned()).collect()
    }

    /// Whether a scope that may write anything (a command) was active in the
    /// same workspace at any time since this one entered: then a change
    /// outside this scope's `writes` cannot be told apart from the
    /// command's own work.
    pub fn overlapped_anywhere(&self) -> bool {
        let reg = registry();
        self.overlapping(&reg).any(|e| e.anywhere)
    }
}

impl Drop for WriteScope {
    fn drop(&mut self) {
        let mut reg = registry();
        reg.clock += 1;
        let now = reg.clock;
        if let Some(entry) = reg.scopes.iter_mut().find(|e| e.id == self.id) {
            entry.end = Some(now);
        }
        // An ended scope matters only to scopes that started before it ended.
        let oldest_active = reg.scopes.iter().filter(|e| e.end.is_none()).map(|e| e.start).min();
        reg.scopes.retain(|e| match (e.end, oldest_active) {
            (None, _) => true,
            (Some(end), Some(oldest)) => end >= oldest,
            (Some(_), None) => false,
        });
    }
}

/// A file gavel itself writes while seats run (a record, a lock): snapshot
/// guards skip it. Registered until dropped.
#[derive(Debug)]
pub struct Owned {
    id: u64,
}

/// Registers `path` as gavel's own.
pub fn own(path: &Path) -> Owned {
    let path = canonical(path);
    let mut reg = registry();
    reg.next_id += 1;
    let id = reg.next_id;
    reg.owned.push((id, path));
    Owned { id }
}

impl Drop for Owned {
    fn drop(&mut self) {
        registry().owned.retain(|(id, _)| *id != self.id);
    }
}

/// The files registered with [`own`], canonical.
pub fn owned() -> Vec<PathBuf> {
    registry().owned.iter().map(|(_, p)| p.clone()).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_scope_sees_what_overlapped_it_and_not_what_ended_before() {
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        let before = WriteScope::enter(dir.path(), &["before.md".into()]);
        drop(before);
        let mine = WriteScope::enter(dir.path(), &["mine.md".into()]);
        let during = WriteScope::enter(dir.path(), &["during.md".into()]);
        let elsewhere = WriteScope::enter(other.path(), &["elsewhere.md".into()]);
        drop(during);
        let still = WriteScope::enter(dir.path(), &["still.md".into()]);
        let mut seen = mine.others();
        seen.sort();
        assert_eq!(seen, ["during.md", "still.md"]);
        assert!(!mine.overlapped_anywhere());
        drop((still, elsewhere, mine));
    }

    #[test]
    fn a_command_s_scope_is_seen_by_what_overlapped_it_only() {
        let dir = tempfile::tempdir().unwrap();
        let other = tempfile::tempdir().unwrap();
        drop(WriteScope::enter_anywhere(dir.path()));
        let mine = WriteScope::enter(dir.path(), &["mine.md".into()]);
        assert!(!mine.overlapped_anywhere(), "a command that ended before");
        let elsewhere = WriteScope::enter_anywhere(other.path());
        assert!(!mine.overlapped_anywhere(), "a command in another workspace");
        let command = WriteScope::enter_anywhere(dir.path());
        drop(command);
        assert!(mine.overlapped_anywhere(), "a command that ran while it was active");
        drop((elsewhere, mine));
    }

    #[test]
    fn owned_files_are_listed_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("record.jsonl");
        std::fs::write(&file, "").unwrap();
        let canonical = file.canonicalize().unwrap();
        let owned_now = own(&file);
        assert!(owned().contains(&canonical));
        drop(owned_now);
        assert!(!owned().contains(&canonical));
    }
}
