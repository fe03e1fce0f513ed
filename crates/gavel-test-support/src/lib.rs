//! Test helpers for gavel. Dev-only: a dev-dependency of other crates, never
//! shipped in the `gavel` binary.
//!
//! - the `fake-agent` binary (see `src/bin/fake-agent.rs`), a scriptable
//!   stand-in for an agent CLI that can print, stall, ignore SIGTERM, leak a
//!   grandchild and flood output; find it with [`fake_agent_path`];
//! - [`TempWorkspace`], a temporary directory with small file helpers;
//! - [`fake_model`]: a fake model server (Anthropic, OpenAI Responses and
//!   Chat Completions, Gemini) answering from a script and logging every
//!   request; also the `fake-model` binary.

pub mod fake_model;

pub use fake_model::{
    Api, FakeModel, FakeOptions, FakeReply, FakeScript, FakeUsage, LoggedRequest, Match, Rule,
};

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

/// Environment variable that, when set, overrides where [`fake_agent_path`]
/// looks (for unusual layouts such as a custom runner).
pub const FAKE_AGENT_ENV: &str = "GAVEL_FAKE_AGENT";

fn fake_agent_file_name() -> OsString {
    let mut name = OsString::from("fake-agent");
    name.push(std::env::consts::EXE_SUFFIX);
    name
}

/// Finds the `fake-agent` binary for tests of crates other than this one.
///
/// Cargo only exposes `CARGO_BIN_EXE_fake-agent` to this package's own
/// tests, so other crates look next to their running test binary: test
/// binaries live in `target/<profile>/deps/`, and binaries in
/// `target/<profile>/`. `GAVEL_FAKE_AGENT` overrides the search.
///
/// Returns `None` when the binary was not built, which happens when only
/// another package is tested (`cargo test -p gavel-seats` does not build
/// this package's binaries); build it with
/// `cargo build -p gavel-test-support --bin fake-agent`, or test the whole
/// workspace.
pub fn fake_agent_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(FAKE_AGENT_ENV) {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    let exe = std::env::current_exe().ok()?;
    let name = fake_agent_file_name();
    exe.parent()
        .into_iter()
        .flat_map(|dir| [Some(dir), dir.parent()])
        .flatten()
        .map(|dir| dir.join(&name))
        .find(|candidate| candidate.is_file())
}

/// Like [`fake_agent_path`], but panics with instructions when the binary is
/// missing; for tests that cannot do anything useful without it.
pub fn fake_agent() -> PathBuf {
    match fake_agent_path() {
        Some(path) => path,
        None => panic!(
            "fake-agent binary not found next to {:?}; run `cargo build -p gavel-test-support --bin fake-agent` \
             or set {FAKE_AGENT_ENV}",
            std::env::current_exe().ok()
        ),
    }
}

/// A temporary directory for one test, removed on drop.
#[derive(Debug)]
pub struct TempWorkspace {
    dir: tempfile::TempDir,
}

impl TempWorkspace {
    /// Creates an empty workspace under the system temp directory.
    pub fn new() -> io::Result<Self> {
        Ok(Self { dir: tempfile::Builder::new().prefix("gavel-test-").tempdir()? })
    }

    /// The workspace root.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The absolute path of `rel` inside the workspace.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `contents` to `rel`, creating parent directories; returns the
    /// absolute path.
    pub fn write(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<PathBuf> {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, contents)?;
        Ok(path)
    }

    /// Reads `rel` as UTF-8 text.
    pub fn read(&self, rel: impl AsRef<Path>) -> io::Result<String> {
        std::fs::read_to_string(self.join(rel))
    }

    /// Whether `rel` exists.
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        self.join(rel).exists()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn workspace_round_trip() {
        let ws = TempWorkspace::new().unwrap();
        let path = ws.write("a/b.txt", "hi").unwrap();
        assert!(path.starts_with(ws.path()));
        assert!(ws.exists("a/b.txt"));
        assert_eq!(ws.read("a/b.txt").unwrap(), "hi");
        let root = ws.path().to_path_buf();
        drop(ws);
        assert!(!root.exists());
    }
}
