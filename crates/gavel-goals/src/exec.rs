//! Running things for a goal, all through `gavel-process`: criterion
//! commands (with `sh -c`, in the project root, with a timeout) and `git`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gavel_process::{Outcome, OutputLimit, SpawnSpec};

/// How much of a command's output an evidence file keeps at its end.
pub const EVIDENCE_TAIL_BYTES: usize = 8 * 1024;
/// How much of it the record, the verdict and the stop hook's reason keep.
pub const RECORD_TAIL_BYTES: usize = 2 * 1024;

/// How one criterion command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRun {
    /// The exit code, when it exited on its own.
    pub exit: Option<i32>,
    /// Whether the timeout stopped it.
    pub timed_out: bool,
    /// How it ended, in words (`exited with code 1`, `timed out ...`).
    pub outcome: String,
    /// Why it could not start at all.
    pub error: Option<String>,
    /// Wall time in milliseconds.
    pub ms: u64,
    /// The output kept (head and tail), as bytes, for the digest.
    pub kept: Vec<u8>,
    /// Every byte it wrote, kept or not.
    pub total_bytes: u64,
    /// Whether `tail` holds less than the command printed: the capture
    /// dropped bytes between head and tail, or the text was longer than the
    /// tail keeps.
    pub truncated: bool,
    /// The end of its output, as plain text (no escape sequences).
    pub tail: String,
}

impl CommandRun {
    /// Whether the command met its criterion: exit 0, nothing else.
    pub fn passed(&self) -> bool {
        self.exit == Some(0) && !self.timed_out && self.error.is_none()
    }

    /// The last `max_bytes` of the output, starting on a line when it can.
    pub fn tail_of(&self, max_bytes: usize) -> String {
        tail_text(&self.tail, max_bytes)
    }

    /// Whether [`Self::tail_of`] `max_bytes` holds less than the command
    /// printed.
    pub fn tail_of_is_cut(&self, max_bytes: usize) -> bool {
        self.truncated || self.tail.len() > max_bytes
    }
}

/// Runs a criterion's command with `sh -c` in `root`.
///
/// stderr is merged into stdout (`exec 2>&1;` before the command, on the same
/// line so the shell's line numbers still match what the person wrote), so the
/// output tail reads in the order things happened.
pub async fn run_command(
    root: &Path,
    command: &str,
    timeout: Duration,
    env: &[(&str, String)],
) -> CommandRun {
    // Plain output: the tail goes into evidence files, the record, state.md
    // and the stop hook's reason.
    let mut spec = SpawnSpec::shell(&format!("exec 2>&1; {command}"), root).plain_output().timeout(timeout);
    for (name, value) in env {
        spec = spec.env(*name, value);
    }
    match gavel_process::run(spec).await {
        Ok(done) => {
            let (exit, timed_out) = match done.outcome {
                Outcome::Exited(code) => (Some(code), false),
                Outcome::Signaled(_) => (None, false),
                Outcome::TimedOut { .. } => (None, true),
            };
            let outcome = if timed_out {
                format!("timed out after {} s and was stopped", timeout.as_secs())
            } else {
                done.outcome.to_string()
            };
            let mut kept = done.stdout.head.clone();
            kept.extend_from_slice(&done.stdout.tail);
            let (mut tail, mut cut) = done.stdout.plain_tail(EVIDENCE_TAIL_BYTES);
            // Only a failed `exec 2>&1` leaves anything on stderr; keep it.
            if done.stderr.total > 0 {
                kept.extend_from_slice(&done.stderr.head);
                kept.extend_from_slice(&done.stderr.tail);
                let (err, err_cut) = done.stderr.plain_tail(EVIDENCE_TAIL_BYTES / 4);
                tail.push_str(&err);
                cut |= err_cut;
            }
            CommandRun {
                exit,
                timed_out,
                outcome,
                error: None,
                ms: millis(done.duration),
                kept,
                total_bytes: done.stdout.total + done.stderr.total,
                truncated: cut,
                tail,
            }
        }
        Err(err) => CommandRun {
            exit: None,
            timed_out: false,
            outcome: "could not start".to_owned(),
            error: Some(err.to_string()),
            ms: 0,
            kept: Vec::new(),
            total_bytes: 0,
            truncated: false,
            tail: String::new(),
        },
    }
}

/// The last `max_bytes` of `text`, cut at a line start when one is near and
/// always on a character boundary.
pub fn tail_text(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let mut start = text.len() - max_bytes;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let rest = &text[start..];
    match rest.find('\n') {
        Some(i) if i + 1 < rest.len() => rest[i + 1..].to_owned(),
        _ => rest.to_owned(),
    }
}

/// Milliseconds, saturating.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// What a `git` command printed, or why it failed.
async fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    // Plenty for a list of file names; a list that does not fit is reported,
    // never silently cut.
    let limit = OutputLimit::new(32 * 1024 * 1024, 0);
    let spec = SpawnSpec::new("git", dir)
        .args(["-c", "core.quotepath=off"])
        .args(args.iter().copied())
        .timeout(Duration::from_secs(60))
        .limit(limit);
    let done = gavel_process::run(spec).await.map_err(|err| err.to_string())?;
    if done.stdout.truncated() {
        return Err(format!("`git {}` printed more than gavel reads", args.join(" ")));
    }
    if !done.success() {
        let stderr = done.stderr.to_string_lossy();
        let first = stderr.lines().next().unwrap_or("").trim().to_owned();
        return Err(format!("`git {}` {}: {first}", args.join(" "), done.outcome));
    }
    let mut out = done.stdout.head;
    out.extend_from_slice(&done.stdout.tail);
    Ok(out)
}

/// `git rev-parse HEAD` in `dir`: `None` outside a repository or before the
/// first commit.
pub async fn head_commit(dir: &Path) -> Option<String> {
    let out = git(dir, &["rev-parse", "--verify", "-q", "HEAD"]).await.ok()?;
    let commit = String::from_utf8_lossy(&out).trim().to_owned();
    (!commit.is_empty()).then_some(commit)
}

/// The repository's top folder, when `dir` is inside one.
pub async fn toplevel(dir: &Path) -> Option<PathBuf> {
    let out = git(dir, &["rev-parse", "--show-toplevel"]).await.ok()?;
    let top = String::from_utf8_lossy(&out).trim().to_owned();
    (!top.is_empty()).then(|| PathBuf::from(top))
}

/// Files changed since `base` (committed, staged or not) plus untracked
/// files, relative to `root`, sorted; gavel's own `.gavel/` is left out.
pub async fn changed_files(root: &Path, base: &str) -> Result<Vec<String>, String> {
    // --no-renames lists both sides of a rename: moving a file out of the
    // allowed paths touches the old place too.
    let diff = git(root, &["diff", "--name-only", "--no-renames", "-z", "--relative", base, "--"]).await?;
    let untracked = git(root, &["ls-files", "-z", "--others", "--exclude-standard"]).await?;
    let mut files: Vec<String> = diff
        .split(|&b| b == 0)
        .chain(untracked.split(|&b| b == 0))
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .filter(|name| !name.starts_with(".gavel/"))
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_start_on_a_line_and_a_character() {
        assert_eq!(tail_text("short", 10), "short");
        assert_eq!(tail_text("line one\nline two\nline three\n", 16), "line three\n");
        let text = "ééééé";
        let tail = tail_text(text, 3);
        assert!(text.ends_with(&tail) && !tail.is_empty());
    }
}
