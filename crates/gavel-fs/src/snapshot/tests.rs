#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{PermissionsExt as _, symlink};

use pretty_assertions::assert_eq;

use super::*;

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn read(root: &Path, rel: &str) -> String {
    std::fs::read_to_string(root.join(rel)).unwrap()
}

fn mode(root: &Path, rel: &str) -> u32 {
    root.join(rel).symlink_metadata().unwrap().permissions().mode() & 0o7777
}

fn writes(list: &[&str]) -> Vec<String> {
    list.iter().map(|w| (*w).to_owned()).collect()
}

/// The changes as `(path, change, restored)`, for whole-value assertions.
fn summary(report: &Report) -> Vec<(String, Change, bool)> {
    report.changes.iter().map(|c| (c.path.clone(), c.change, c.undo == Undo::Restored)).collect()
}

#[test]
fn changes_outside_writes_are_undone_and_the_allowed_one_stays() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "page.md", "old page");
    write(root, "keep.md", "keep");
    write(root, "gone.md", "gone");
    write(root, "run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(root.join("run.sh"), Permissions::from_mode(0o644)).unwrap();
    let guard = Guard::take(root, &writes(&["./page.md"]), Budget::DEFAULT).unwrap();

    write(root, "page.md", "new page");
    write(root, "keep.md", "changed!");
    write(root, "extra.txt", "sneaked in");
    std::fs::remove_file(root.join("gone.md")).unwrap();
    std::fs::set_permissions(root.join("run.sh"), Permissions::from_mode(0o755)).unwrap();

    let report = guard.finish().unwrap();
    assert_eq!(
        summary(&report),
        [
            ("extra.txt".into(), Change::Created, true),
            ("gone.md".into(), Change::Deleted, true),
            ("keep.md".into(), Change::Modified, true),
            ("run.sh".into(), Change::ModeChanged, true),
        ]
    );
    assert_eq!(
        report.describe(),
        "`extra.txt` created (removed); `gone.md` deleted (restored); `keep.md` modified (restored); `run.sh` mode changed (restored)"
    );
    assert_eq!(read(root, "page.md"), "new page");
    assert_eq!(read(root, "keep.md"), "keep");
    assert_eq!(read(root, "gone.md"), "gone");
    assert!(!root.join("extra.txt").exists());
    assert_eq!(mode(root, "run.sh"), 0o644);
}

#[test]
fn touching_or_rewriting_the_same_bytes_is_no_change() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "a.md", "same");
    write(root, "b.md", "same");
    let guard = Guard::take(root, &[], Budget::DEFAULT).unwrap();
    let file = std::fs::File::options().write(true).open(root.join("a.md")).unwrap();
    file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
    std::fs::remove_file(root.join("b.md")).unwrap();
    write(root, "b.md", "same");
    assert_eq!(guard.finish().unwrap(), Report::default());
}

#[test]
fn links_are_compared_as_links_and_never_followed() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(outside.path(), "secret", "outside");
    write(root, "target.md", "inside");
    symlink("target.md", root.join("link.md")).unwrap();
    let guard = Guard::take(root, &[], Budget::DEFAULT).unwrap();

    std::fs::remove_file(root.join("link.md")).unwrap();
    symlink(outside.path().join("secret"), root.join("link.md")).unwrap();
    symlink(outside.path(), root.join("escape")).unwrap();

    let report = guard.finish().unwrap();
    assert_eq!(
        summary(&report),
        [("escape".into(), Change::Created, true), ("link.md".into(), Change::Modified, true)]
    );
    assert_eq!(std::fs::read_link(root.join("link.md")).unwrap(), Path::new("target.md"));
    assert!(root.join("escape").symlink_metadata().is_err());
    assert_eq!(read(outside.path(), "secret"), "outside", "the outside file was never touched");
}

#[test]
fn folders_created_deleted_and_retyped_are_put_back() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "src/lib.rs", "lib");
    write(root, "src/deep/mod.rs", "deep");
    write(root, "notes", "a file");
    let guard = Guard::take(root, &writes(&["out/new/page.md"]), Budget::DEFAULT).unwrap();

    std::fs::remove_dir_all(root.join("src")).unwrap();
    write(root, "junk/a/b.txt", "junk");
    std::fs::remove_file(root.join("notes")).unwrap();
    write(root, "notes/inside.txt", "now a folder");
    write(root, "out/new/page.md", "allowed, with its new folders");

    let report = guard.finish().unwrap();
    assert_eq!(
        summary(&report),
        [
            ("junk".into(), Change::Created, true),
            ("junk/a".into(), Change::Created, true),
            ("junk/a/b.txt".into(), Change::Created, true),
            ("notes".into(), Change::TypeChanged, true),
            ("notes/inside.txt".into(), Change::Created, true),
            ("src".into(), Change::Deleted, true),
            ("src/deep".into(), Change::Deleted, true),
            ("src/deep/mod.rs".into(), Change::Deleted, true),
            ("src/lib.rs".into(), Change::Deleted, true),
        ]
    );
    assert_eq!(read(root, "src/lib.rs"), "lib");
    assert_eq!(read(root, "src/deep/mod.rs"), "deep");
    assert_eq!(read(root, "notes"), "a file");
    assert!(!root.join("junk").exists());
    assert_eq!(read(root, "out/new/page.md"), "allowed, with its new folders");
}

#[test]
fn git_is_watched_but_its_objects_and_gavel_are_skipped() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, ".git/config", "[core]\n");
    write(root, ".git/objects/ab/cdef", "blob");
    write(root, ".gavel/runs/r/events.jsonl", "record\n");
    let guard = Guard::take(root, &[], Budget::DEFAULT).unwrap();
    assert!(guard.entries.keys().all(|p| !p.starts_with(".gavel") && !p.starts_with(".git/objects/ab")));

    write(root, ".git/hooks/pre-commit", "#!/bin/sh\ncurl evil\n");
    write(root, ".git/config", "[core]\nhooksPath = /tmp\n");
    write(root, ".git/objects/12/3456", "a new object");
    write(root, ".git/objects/info/alternates", "/tmp/evil/objects\n");
    write(root, "sub/.git/objects/info/http-alternates", "http://evil\n");
    write(root, ".git/objects/pack/p.pack", "a pack");
    write(root, ".gavel/runs/r/events.jsonl", "record\nappended by gavel\n");

    let report = guard.finish().unwrap();
    assert_eq!(
        summary(&report),
        [
            (".git/config".into(), Change::Modified, true),
            (".git/hooks".into(), Change::Created, true),
            (".git/hooks/pre-commit".into(), Change::Created, true),
            (".git/objects/info".into(), Change::Created, true),
            (".git/objects/info/alternates".into(), Change::Created, true),
            ("sub".into(), Change::Created, true),
            ("sub/.git".into(), Change::Created, true),
            ("sub/.git/objects".into(), Change::Created, true),
            ("sub/.git/objects/info".into(), Change::Created, true),
            ("sub/.git/objects/info/http-alternates".into(), Change::Created, true),
        ]
    );
    assert!(!root.join(".git/objects/info").exists());
    assert!(root.join(".git/objects/12/3456").exists(), "object files are not watched");
    assert_eq!(read(root, ".git/config"), "[core]\n");
    assert!(!root.join(".git/hooks").exists());
    assert_eq!(read(root, ".gavel/runs/r/events.jsonl"), "record\nappended by gavel\n");
}

#[test]
fn files_over_budget_are_reported_as_not_restorable() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "small.txt", "s");
    write(root, "big.bin", &"b".repeat(100));
    write(root, "mid.bin", &"m".repeat(40));
    write(root, "mid2.bin", &"n".repeat(40));
    let budget = Budget { total: 50, per_file: 60 };
    let guard = Guard::take(root, &[], budget).unwrap();
    for (name, text) in [("small.txt", "S"), ("big.bin", "B"), ("mid.bin", "M"), ("mid2.bin", "N")] {
        write(root, name, text);
    }
    let report = guard.finish().unwrap();
    assert_eq!(
        summary(&report),
        [
            ("big.bin".into(), Change::Modified, false),
            // Smallest first: small.txt and one of the 40-byte files fit in 50.
            ("mid.bin".into(), Change::Modified, true),
            ("mid2.bin".into(), Change::Modified, false),
            ("small.txt".into(), Change::Modified, true),
        ]
    );
    let Undo::NotRestorable(why) = &report.changes[0].undo else { panic!() };
    assert_eq!(
        why,
        "its old bytes were not kept (100 bytes; gavel keeps up to 0 MiB per file and 0 MiB in all)"
    );
    assert_eq!(read(root, "small.txt"), "s");
    assert_eq!(read(root, "big.bin"), "B");
    assert!(report.describe().contains("`big.bin` modified (NOT restored: its old bytes were not kept"));
}

#[test]
fn what_an_overlapping_request_may_write_is_not_blamed() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    let guard = Guard::take(root, &writes(&["mine.md"]), Budget::DEFAULT).unwrap();
    {
        // Another node's request, active during this one and done before it.
        let _other = WriteScope::enter(root, &writes(&["theirs/page.md"]));
        write(root, "theirs/page.md", "theirs");
    }
    write(root, "mine.md", "mine");
    write(root, "stray.md", "nobody's");
    let report = guard.finish().unwrap();
    assert_eq!(summary(&report), [("stray.md".into(), Change::Created, true)]);
    assert_eq!(read(root, "theirs/page.md"), "theirs");
}

#[test]
fn what_changed_while_a_command_ran_in_the_workspace_is_not_blamed() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "coverage.txt", "old");
    let guard = Guard::take(root, &writes(&["mine.md"]), Budget::DEFAULT).unwrap();
    {
        // A `run` node at the same time: it may write anything.
        let _command = WriteScope::enter_anywhere(root);
        write(root, "coverage.txt", "new");
        write(root, "out/report.txt", "made by the command");
    }
    write(root, "mine.md", "mine");
    assert_eq!(summary(&guard.finish().unwrap()), []);
    assert_eq!(read(root, "coverage.txt"), "new");
    assert_eq!(read(root, "out/report.txt"), "made by the command");

    // Without a command meanwhile, the same changes are undone.
    let guard = Guard::take(root, &writes(&["mine.md"]), Budget::DEFAULT).unwrap();
    write(root, "coverage.txt", "newer");
    assert_eq!(summary(&guard.finish().unwrap()), [("coverage.txt".into(), Change::Modified, true)]);
    assert_eq!(read(root, "coverage.txt"), "new");
}

#[test]
fn a_request_that_ended_before_the_snapshot_is_blamed_on_no_one_else() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    drop(WriteScope::enter(root, &writes(&["early.md"])));
    let guard = Guard::take(root, &[], Budget::DEFAULT).unwrap();
    write(root, "early.md", "written during this request");
    assert_eq!(summary(&guard.finish().unwrap()), [("early.md".into(), Change::Created, true)]);
}

#[test]
fn gavel_s_own_files_are_skipped() {
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "custom-record.jsonl", "one\n");
    let owned = scope::own(&root.join("custom-record.jsonl"));
    let guard = Guard::take(root, &[], Budget::DEFAULT).unwrap();
    write(root, "custom-record.jsonl", "one\ntwo\n");
    assert_eq!(guard.finish().unwrap(), Report::default());
    assert_eq!(read(root, "custom-record.jsonl"), "one\ntwo\n");
    drop(owned);
}

#[test]
fn a_restore_never_writes_through_a_folder_turned_link() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "docs/a.md", "a");
    let guard = Guard::take(root, &[], Budget::DEFAULT).unwrap();
    std::fs::remove_dir_all(root.join("docs")).unwrap();
    symlink(outside.path(), root.join("docs")).unwrap();
    let report = guard.finish().unwrap();
    assert_eq!(
        summary(&report),
        [("docs".into(), Change::TypeChanged, true), ("docs/a.md".into(), Change::Deleted, true)]
    );
    assert!(root.join("docs").symlink_metadata().unwrap().is_dir());
    assert_eq!(read(root, "docs/a.md"), "a");
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
}

#[test]
fn an_allowed_file_turned_into_a_link_out_is_undone() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(outside.path(), "secret", "outside");
    write(root, "page.md", "old page");
    write(root, "other.md", "inside");
    write(root, ".gavel/runs/r/events.jsonl", "record\n");
    let allowed = writes(&["page.md", "new.md", "inside.md", "state.md", "pipe", "alias.md", "real.md"]);
    let guard = Guard::take(root, &allowed, Budget::DEFAULT).unwrap();

    std::fs::remove_file(root.join("page.md")).unwrap();
    symlink(outside.path().join("secret"), root.join("page.md")).unwrap();
    symlink("/etc/hostname", root.join("new.md")).unwrap();
    symlink(".gavel/runs/r/events.jsonl", root.join("state.md")).unwrap();
    symlink("other.md", root.join("inside.md")).unwrap();
    write(root, "real.md", "built");
    symlink("real.md", root.join("alias.md")).unwrap();
    nix::unistd::mkfifo(&root.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();

    let report = guard.finish().unwrap();
    assert_eq!(
        summary(&report),
        [
            ("inside.md".into(), Change::LinkedOut, true),
            ("new.md".into(), Change::LinkedOut, true),
            ("page.md".into(), Change::LinkedOut, true),
            ("pipe".into(), Change::LinkedOut, true),
            ("state.md".into(), Change::LinkedOut, true),
        ]
    );
    assert_eq!(read(root, "page.md"), "old page");
    assert!(root.join("page.md").symlink_metadata().unwrap().is_file());
    for gone in ["new.md", "state.md", "pipe", "inside.md"] {
        assert!(root.join(gone).symlink_metadata().is_err(), "{gone}");
    }
    assert_eq!(read(root, "other.md"), "inside");
    assert_eq!(
        std::fs::read_link(root.join("alias.md")).unwrap(),
        Path::new("real.md"),
        "a link to another file it may write stays"
    );
}

#[test]
fn an_allowed_path_linked_to_a_file_it_may_not_write_is_undone() {
    // Links through a folder, to a nested file, by an absolute path inside.
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path().canonicalize().unwrap();
    write(&root, "src/main.rs", "fn main() {}");
    write(&root, "out.txt", "old out");
    let allowed = writes(&["out.txt", "deep/x.rs", "abs.txt"]);
    let guard = Guard::take(&root, &allowed, Budget::DEFAULT).unwrap();
    std::fs::remove_file(root.join("out.txt")).unwrap();
    symlink("src/main.rs", root.join("out.txt")).unwrap();
    symlink("src", root.join("deep")).unwrap();
    symlink(root.join("src/main.rs"), root.join("abs.txt")).unwrap();
    let report = guard.finish().unwrap();
    assert_eq!(
        summary(&report),
        [
            ("abs.txt".into(), Change::LinkedOut, true),
            ("deep".into(), Change::Created, true),
            ("out.txt".into(), Change::LinkedOut, true),
        ]
    );
    assert_eq!(read(&root, "out.txt"), "old out");
    assert!(root.join("out.txt").symlink_metadata().unwrap().is_file());
    assert!(root.join("abs.txt").symlink_metadata().is_err());
    assert_eq!(read(&root, "src/main.rs"), "fn main() {}");
}

#[test]
fn an_allowed_file_turned_into_a_hard_link_is_undone() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "page.md", "old page");
    write(root, "src.rs", "source");
    write(outside.path(), "secret", "outside");
    let allowed = writes(&["page.md", "new.md", "twin.md", "plain.md"]);
    let guard = Guard::take(root, &allowed, Budget::DEFAULT).unwrap();
    // An existing allowed file given a second name elsewhere (its own
    // metadata moves only by ctime and link count).
    std::fs::hard_link(root.join("page.md"), outside.path().join("elsewhere")).unwrap();
    // A new allowed path made a hard link to a file outside and to one inside.
    std::fs::hard_link(outside.path().join("secret"), root.join("new.md")).unwrap();
    std::fs::hard_link(root.join("src.rs"), root.join("twin.md")).unwrap();
    write(root, "plain.md", "a plain new file");
    let report = guard.finish().unwrap();
    assert_eq!(
        summary(&report),
        [
            ("new.md".into(), Change::HardLinked, true),
            ("page.md".into(), Change::HardLinked, true),
            ("twin.md".into(), Change::HardLinked, true),
        ]
    );
    assert_eq!(read(root, "page.md"), "old page");
    assert_eq!(root.join("page.md").metadata().unwrap().nlink(), 1);
    assert!(!root.join("new.md").exists() && !root.join("twin.md").exists());
    assert_eq!(read(root, "src.rs"), "source");
    assert_eq!(read(root, "plain.md"), "a plain new file");
    assert!(report.describe().contains("`page.md` made a hard link to another file (restored)"));
}

#[test]
fn an_unsaved_file_edited_in_place_with_its_mtime_set_back_is_seen() {
    use std::io::{Seek as _, Write as _};
    let ws = tempfile::tempdir().unwrap();
    let root = ws.path();
    write(root, "big.bin", &"b".repeat(100));
    write(root, "big2.bin", &"c".repeat(100));
    write(root, "untouched.bin", &"d".repeat(100));
    let budget = Budget { total: 10, per_file: 10 };
    let guard = Guard::take(root, &[], budget).unwrap();
    for name in ["big.bin", "big2.bin"] {
        let before = root.join(name).metadata().unwrap().modified().unwrap();
        let mut file = std::fs::File::options().write(true).open(root.join(name)).unwrap();
        if name == "big.bin" {
            file.seek(std::io::SeekFrom::Start(50)).unwrap();
            file.write_all(b"X").unwrap();
        } else {
            // Same length, same mtime: only ctime tells.
            file.write_all(b"ZZ").unwrap();
        }
        file.set_modified(before).unwrap();
        assert_eq!(root.join(name).metadata().unwrap().modified().unwrap(), before);
    }
    let report = guard.finish().unwrap();
    assert_eq!(
        summary(&report),
        [("big.bin".into(), Change::Modified, false), ("big2.bin".into(), Change::Modified, false)]
    );
}
