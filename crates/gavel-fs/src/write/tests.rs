#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{PermissionsExt as _, symlink};
use std::path::Path;

use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::*;

fn refusal(workspace: &Path, path: &str) -> Refusal {
    match write_file(workspace, path, b"x") {
        Err(WriteError::Refused { reason, .. }) => reason,
        other => panic!("`{path}` was not refused: {other:?}"),
    }
}

/// Every file under `dir`, relative, sorted: proves nothing else was made.
fn files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = e.path().symlink_metadata().unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn plain_paths_normalise() {
    for (given, want) in [
        ("a.md", "a.md"),
        ("./a.md", "a.md"),
        ("docs//page.md", "docs/page.md"),
        (".//docs/./page.md", "docs/page.md"),
        ("gavel/.gitignore", "gavel/.gitignore"),
        (".github/workflows/ci.yml", ".github/workflows/ci.yml"),
        (".gavelrc", ".gavelrc"),
        ("my.git/x", "my.git/x"),
    ] {
        assert_eq!(normalise(given).as_deref(), Ok(want), "{given}");
    }
}

#[test]
fn bad_paths_are_refused_with_their_reason() {
    let cases: [(&str, Refusal); 22] = [
        ("", Refusal::Empty),
        ("   ", Refusal::Empty),
        ("./", Refusal::Empty),
        (".", Refusal::Empty),
        ("/etc/passwd", Refusal::Absolute),
        ("//etc/passwd", Refusal::Absolute),
        ("../x", Refusal::ParentDir),
        ("a/../b", Refusal::ParentDir),
        ("a/../.gavel", Refusal::ParentDir),
        ("docs/", Refusal::NotNormal("ends with `/`: name a file, not a folder")),
        ("a\nb", Refusal::NotNormal("contains a control character")),
        ("a\0b", Refusal::NotNormal("contains a control character")),
        (" a.md", Refusal::NotNormal("starts or ends with a space")),
        (".gavel/runs/r/events.jsonl", Refusal::Reserved(".gavel".into())),
        ("./.gavel/x", Refusal::Reserved(".gavel".into())),
        (".//.git/config", Refusal::Reserved(".git".into())),
        (".git/hooks/pre-commit", Refusal::Reserved(".git".into())),
        ("sub/.git/hooks/x", Refusal::Reserved(".git".into())),
        (".GIT/config", Refusal::Reserved(".GIT".into())),
        (".Gavel/x", Refusal::Reserved(".Gavel".into())),
        (".git./config", Refusal::Reserved(".git.".into())),
        (".g\u{200c}it/config", Refusal::Reserved(".g\u{200c}it".into())),
    ];
    for (path, want) in cases {
        assert_eq!(normalise(path), Err(want), "{path:?}");
    }
}

/// A path component: plain names, look-alikes of the reserved names, and
/// the reserved names in other cases.
fn component() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_-]{1,8}",
        "\\.[a-z]{1,6}",
        Just(".gavel".to_owned()),
        Just(".git".to_owned()),
        Just(".GiT".to_owned()),
        Just(".gAVEL".to_owned()),
        Just(".git ".to_owned()),
        Just("..".to_owned()),
        Just(".".to_owned()),
        Just(String::new()),
    ]
}

proptest! {
    /// Whatever is accepted is plain, relative, reserved-free and a fixed
    /// point; whatever holds `..` or a reserved component is refused.
    #[test]
    fn normalise_accepts_only_plain_paths(parts in prop::collection::vec(component(), 1..6), lead in 0..3usize) {
        let mut path = ["", "./", ".//"][lead].to_owned();
        path.push_str(&parts.join("/"));
        path.push_str("/f.txt");
        let has_parent = parts.iter().any(|p| p == "..");
        let has_reserved = parts.iter().any(|p| reserved(p).is_some());
        match normalise(&path) {
            Ok(normal) => {
                prop_assert!(!has_parent && !has_reserved && !path.starts_with('/'), "{path} accepted as {normal}");
                prop_assert!(!normal.starts_with('/'));
                prop_assert!(normal.split('/').all(|c| !c.is_empty() && c != "." && c != ".." && reserved(c).is_none()));
                prop_assert_eq!(normalise(&normal), Ok(normal.clone()));
                let expected: Vec<&str> = parts.iter().map(String::as_str).filter(|p| !p.is_empty() && *p != ".").chain(["f.txt"]).collect();
                prop_assert_eq!(normal, expected.join("/"));
            }
            Err(_) => prop_assert!(has_parent || has_reserved || path.starts_with('/'), "{path} refused"),
        }
    }

    /// Any string at all: no panic, and an accepted path never escapes.
    #[test]
    fn normalise_never_lets_an_escape_through(path in ".{0,40}") {
        if let Ok(normal) = normalise(&path) {
            prop_assert!(!normal.starts_with('/'));
            prop_assert!(!normal.split('/').any(|c| c == ".." || c.is_empty() || reserved(c).is_some()));
        }
    }
}

#[test]
fn a_plain_write_creates_folders_and_a_rewrite_keeps_the_mode() {
    let ws = tempfile::tempdir().unwrap();
    let written = write_file(ws.path(), "./docs//a/page.md", b"one").unwrap();
    assert_eq!(written, ws.path().canonicalize().unwrap().join("docs/a/page.md"));
    assert_eq!(std::fs::read(&written).unwrap(), b"one");
    std::fs::set_permissions(&written, Permissions::from_mode(0o751)).unwrap();
    write_file(ws.path(), "docs/a/page.md", b"two").unwrap();
    assert_eq!(std::fs::read(&written).unwrap(), b"two");
    assert_eq!(written.metadata().unwrap().permissions().mode() & 0o7777, 0o751);
    std::fs::set_permissions(&written, Permissions::from_mode(0o4755)).unwrap();
    write_file(ws.path(), "docs/a/page.md", b"three").unwrap();
    assert_eq!(written.metadata().unwrap().permissions().mode() & 0o7777, 0o755, "setuid is dropped");
    assert_eq!(files(ws.path()), ["docs/a/page.md"], "no temp file left");
}

#[test]
fn a_rewrite_cuts_a_hard_link_to_a_file_outside() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir_in(ws.path().parent().unwrap()).unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "keep me").unwrap();
    std::fs::hard_link(&secret, ws.path().join("linked.txt")).unwrap();
    write_file(ws.path(), "linked.txt", b"new").unwrap();
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "keep me");
    assert_eq!(std::fs::read_to_string(ws.path().join("linked.txt")).unwrap(), "new");
}

#[test]
fn symlinked_files_out_of_the_workspace_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "keep me").unwrap();
    symlink(&secret, ws.path().join("notes.md")).unwrap();
    symlink("../../../../../../../../../../../../etc/hostname", ws.path().join("rel.md")).unwrap();
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    symlink(&secret, ws.path().join("sub/deep.md")).unwrap();
    for path in ["notes.md", "./notes.md", "rel.md", "sub/deep.md", "sub//deep.md"] {
        let link = path.trim_start_matches("./").replace("//", "/");
        assert_eq!(refusal(ws.path(), path), Refusal::LeadsOutside { link }, "{path}");
    }
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "keep me");
}

#[test]
fn symlinked_folders_out_of_the_workspace_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path(), ws.path().join("out")).unwrap();
    std::fs::create_dir_all(ws.path().join("a/b")).unwrap();
    symlink(outside.path(), ws.path().join("a/b/out")).unwrap();
    symlink("/", ws.path().join("root")).unwrap();
    for (path, link) in [
        ("out/x.txt", "out"),
        ("out/new/dir/x.txt", "out"),
        ("a/b/out/x.txt", "a/b/out"),
        ("./a//b/out/x.txt", "a/b/out"),
        ("root/tmp/x.txt", "root"),
    ] {
        assert_eq!(refusal(ws.path(), path), Refusal::LeadsOutside { link: link.into() }, "{path}");
    }
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none(), "nothing written outside");
}

#[test]
fn dangling_links_are_refused_even_when_they_point_inside() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    symlink(outside.path().join("new.txt"), ws.path().join("out.txt")).unwrap();
    symlink("missing.txt", ws.path().join("in.txt")).unwrap();
    symlink("missing-dir", ws.path().join("dir")).unwrap();
    symlink("loop", ws.path().join("loop")).unwrap();
    for (path, link) in [("out.txt", "out.txt"), ("in.txt", "in.txt"), ("dir/x.txt", "dir"), ("loop", "loop")]
    {
        assert_eq!(refusal(ws.path(), path), Refusal::Dangling { link: link.into() }, "{path}");
    }
    assert!(!outside.path().join("new.txt").exists());
    assert!(!ws.path().join("missing.txt").exists());
}

#[test]
fn links_into_gavel_or_git_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join(".gavel/runs/r1")).unwrap();
    std::fs::write(ws.path().join(".gavel/runs/r1/events.jsonl"), "record\n").unwrap();
    std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
    symlink(".gavel", ws.path().join("state")).unwrap();
    symlink(".gavel/runs/r1/events.jsonl", ws.path().join("log.jsonl")).unwrap();
    symlink(ws.path().join(".git/hooks"), ws.path().join("hooks")).unwrap();
    std::fs::create_dir(ws.path().join("sub")).unwrap();
    symlink("../.gavel/runs", ws.path().join("sub/runs")).unwrap();
    for (path, link) in [
        ("state/runs/r1/events.jsonl", "state"),
        ("log.jsonl", "log.jsonl"),
        ("hooks/pre-commit", "hooks"),
        ("sub/runs/r1/events.jsonl", "sub/runs"),
    ] {
        assert_eq!(refusal(ws.path(), path), Refusal::IntoReserved { link: link.into() }, "{path}");
    }
    for path in [".gavel/runs/r1/events.jsonl", "./.gavel/x", ".git/hooks/pre-commit", "a/../.gavel/x"] {
        assert!(matches!(refusal(ws.path(), path), Refusal::Reserved(_) | Refusal::ParentDir), "{path}");
    }
    assert_eq!(std::fs::read_to_string(ws.path().join(".gavel/runs/r1/events.jsonl")).unwrap(), "record\n");
    assert!(!ws.path().join(".git/hooks/pre-commit").exists());
}

#[test]
fn links_that_stay_inside_are_written_through() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(ws.path().join("real/docs")).unwrap();
    std::fs::write(ws.path().join("real/docs/page.md"), "old").unwrap();
    symlink("real/docs", ws.path().join("docs")).unwrap();
    symlink("real/docs/page.md", ws.path().join("page.md")).unwrap();
    let root = ws.path().canonicalize().unwrap();

    let written = write_file(ws.path(), "page.md", b"through the file link").unwrap();
    assert_eq!(written, root.join("real/docs/page.md"));
    assert!(ws.path().join("page.md").symlink_metadata().unwrap().is_symlink(), "the link stays a link");
    assert_eq!(
        std::fs::read_to_string(ws.path().join("real/docs/page.md")).unwrap(),
        "through the file link"
    );

    let written = write_file(ws.path(), "docs/new/n.md", b"through the folder link").unwrap();
    assert_eq!(written, root.join("real/docs/new/n.md"));
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "through the folder link");
}

#[test]
fn files_and_special_entries_in_the_way_are_refused() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("file"), "x").unwrap();
    std::fs::create_dir(ws.path().join("dir")).unwrap();
    nix::unistd::mkfifo(&ws.path().join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    assert_eq!(refusal(ws.path(), "file/x.md"), Refusal::NotAFolder { part: "file".into() });
    assert_eq!(refusal(ws.path(), "dir"), Refusal::NotAFile("a folder"));
    assert_eq!(refusal(ws.path(), "fifo"), Refusal::NotAFile("a FIFO, socket or device"));
}

#[test]
fn refusal_messages_name_the_path_and_what_is_allowed() {
    let ws = tempfile::tempdir().unwrap();
    let err = write_file(ws.path(), "./.gavel/runs/r/events.jsonl", b"x").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "cannot write `./.gavel/runs/r/events.jsonl`: it lies under `.gavel/`, which belongs to gavel or git; {ALLOWED}"
        )
    );
    assert!(err.is_refusal());
    assert_eq!(err.path(), "./.gavel/runs/r/events.jsonl");
    assert!(!ws.path().join(".gavel").exists());
}

/// The environment variable that makes [`helper_write_under_a_size_limit`]
/// act: it names the workspace.
const HELPER_ENV: &str = "GAVEL_FS_TEST_SIZE_LIMIT_WORKSPACE";

/// Not a test on its own: run by [`a_size_limited_write_keeps_the_old_bytes`]
/// in a child process under `ulimit -f`, where it writes 8 KiB over
/// `keep.md` and prints the error.
#[test]
fn helper_write_under_a_size_limit() {
    let Ok(dir) = std::env::var(HELPER_ENV) else { return };
    match write_file(Path::new(&dir), "keep.md", &[b'x'; 8192]) {
        Ok(_) => println!("HELPER: written"),
        Err(err) => println!("HELPER: {err}"),
    }
}

/// Runs this test binary's `helper` test in a child under the shell
/// `prelude` (a `ulimit`), with `env` naming `ws`; its stdout.
fn run_helper(prelude: &str, helper: &str, env: &str, ws: &Path) -> String {
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!("{prelude}; exec \"$0\" \"$@\""))
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", &format!("write::tests::{helper}"), "--nocapture", "--test-threads=1"])
        .env(env, ws)
        .output()
        .unwrap();
    assert!(out.status.success(), "{prelude}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_size_limited_write_keeps_the_old_bytes() {
    // Plain `ulimit -f` (the kernel would kill a writer past it with
    // SIGXFSZ) and with SIGXFSZ ignored (the write would fail with EFBIG).
    for prelude in ["ulimit -f 4", "trap '' XFSZ; ulimit -f 4"] {
        let ws = tempfile::tempdir().unwrap();
        let old: Vec<u8> = (0..3000u32).map(|i| u8::try_from(i % 251).unwrap()).collect();
        std::fs::write(ws.path().join("keep.md"), &old).unwrap();
        let stdout = run_helper(prelude, "helper_write_under_a_size_limit", HELPER_ENV, ws.path());
        assert!(
            stdout.contains("HELPER: cannot write `keep.md` (over the file size limit): 8192 bytes is more than this process may write to one file (4096 bytes, `ulimit -f`); raise the limit; its previous content (if any) is unchanged"),
            "{prelude}: {stdout}"
        );
        assert_eq!(std::fs::read(ws.path().join("keep.md")).unwrap(), old, "{prelude}");
        assert_eq!(files(ws.path()), ["keep.md"], "{prelude}: no temp file left");
    }
}

#[test]
fn a_read_only_folder_fails_cleanly() {
    if nix::unistd::geteuid().is_root() {
        // Root writes into read-only folders; the size-limit test covers a
        // failing write then.
        return;
    }
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("ro")).unwrap();
    std::fs::write(ws.path().join("ro/keep.md"), "precious").unwrap();
    std::fs::set_permissions(ws.path().join("ro"), Permissions::from_mode(0o555)).unwrap();
    let err = write_file(ws.path(), "ro/keep.md", b"new").unwrap_err();
    std::fs::set_permissions(ws.path().join("ro"), Permissions::from_mode(0o755)).unwrap();
    assert!(matches!(err, WriteError::Io { step: Step::WritingTemp, .. }), "{err}");
    assert!(err.to_string().contains("`ro/keep.md`"), "{err}");
    assert_eq!(std::fs::read_to_string(ws.path().join("ro/keep.md")).unwrap(), "precious");
    assert_eq!(files(ws.path()), ["ro/keep.md"]);
}

/// The environment variable that makes [`helper_write_all_under_a_size_limit`]
/// act: it names the workspace.
const HELPER_ALL_ENV: &str = "GAVEL_FS_TEST_SIZE_LIMIT_WRITE_ALL";

/// Not a test on its own: run by [`a_reply_cut_by_the_size_limit_changes_no_file`]
/// in a child process under `ulimit -f`: a small file first, then one over
/// the limit in new folders, written all or nothing.
#[test]
fn helper_write_all_under_a_size_limit() {
    let Ok(dir) = std::env::var(HELPER_ALL_ENV) else { return };
    let ws = Workspace::new(Path::new(&dir)).unwrap();
    let big = [b'x'; 8192];
    match ws.write_all(&[("keep.md", b"NEW".as_slice()), ("sub.md", b"new too"), ("new/deep/big.md", &big)]) {
        Ok(_) => println!("HELPER: written"),
        Err(err) => println!("HELPER: {err}"),
    }
}

#[test]
fn a_reply_cut_by_the_size_limit_changes_no_file() {
    for prelude in ["ulimit -f 4", "trap '' XFSZ; ulimit -f 4"] {
        let ws = tempfile::tempdir().unwrap();
        std::fs::write(ws.path().join("keep.md"), "OLD").unwrap();
        let stdout = run_helper(prelude, "helper_write_all_under_a_size_limit", HELPER_ALL_ENV, ws.path());
        assert!(stdout.contains("HELPER: cannot write `new/deep/big.md`"), "{prelude}: {stdout}");
        assert_eq!(std::fs::read_to_string(ws.path().join("keep.md")).unwrap(), "OLD", "{prelude}");
        assert_eq!(files(ws.path()), ["keep.md"], "{prelude}: no other file, no temp file left");
        assert!(!ws.path().join("new").exists(), "{prelude}: no folder left behind");
    }
}

#[test]
fn write_all_writes_every_file_or_none() {
    let ws = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("a.md"), "old a").unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.path().join("out")).unwrap();
    let workspace = Workspace::new(ws.path()).unwrap();
    // The last path is refused: the first is not written.
    for bad in ["out/x.md", ".gavel/x", "../x", "a.md/x"] {
        let err =
            workspace.write_all(&[("a.md", b"new a".as_slice()), ("b/c.md", b"c"), (bad, b"x")]).unwrap_err();
        assert!(err.to_string().contains(bad), "{bad}: {err}");
        assert_eq!(std::fs::read_to_string(ws.path().join("a.md")).unwrap(), "old a", "{bad}");
        assert!(!ws.path().join("b").exists(), "{bad}: a folder was left");
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    let written = workspace.write_all(&[("a.md", b"new a".as_slice()), ("b/c.md", b"c")]).unwrap();
    assert_eq!(written.len(), 2);
    assert_eq!(std::fs::read_to_string(ws.path().join("a.md")).unwrap(), "new a");
    assert_eq!(std::fs::read_to_string(ws.path().join("b/c.md")).unwrap(), "c");
    assert_eq!(files(ws.path()), ["a.md", "b/c.md", "out"]);
}

#[test]
fn gavel_s_own_files_are_never_written() {
    let ws = tempfile::tempdir().unwrap();
    std::fs::create_dir(ws.path().join("records")).unwrap();
    let record = ws.path().join("records/run.jsonl");
    std::fs::write(&record, "{\"v\":1}\n").unwrap();
    std::os::unix::fs::symlink("records/run.jsonl", ws.path().join("alias.jsonl")).unwrap();
    let owned = crate::scope::own(&record);
    for path in ["records/run.jsonl", "./records//run.jsonl", "alias.jsonl"] {
        assert_eq!(refusal(ws.path(), path), Refusal::GavelsOwn, "{path}");
    }
    assert_eq!(std::fs::read_to_string(&record).unwrap(), "{\"v\":1}\n");
    drop(owned);
    assert!(write_file(ws.path(), "records/run.jsonl", b"x").is_ok(), "once gavel is done with it");
}
