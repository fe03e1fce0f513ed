//! The script engine: a scripted stand-in that answers each kind of
//! request from its own queue, in order; when a queue runs out, its last turn
//! repeats. Deterministic, so every example and test runs offline.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use gavel_domain::{Access, Engine, Family, Located, RequestKind, SeatSpec, Usage};
use serde::Deserialize;

use crate::{BoxFuture, BuildError, Reply, Request, Seat, SeatError};

/// One scripted turn.
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    /// The reply: text as is, or a table/object sent as its JSON text.
    #[serde(default)]
    pub reply: Option<ReplyValue>,
    /// Files written into the workspace (path → content) before replying.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// Simulated latency.
    #[serde(default)]
    pub delay_ms: u64,
    /// Simulate an engine failure with this message.
    #[serde(default)]
    pub error: Option<String>,
    /// The usage to report for this turn.
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// A turn's reply as written in the script.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum ReplyValue {
    /// Sent as is.
    Text(String),
    /// Sent as its JSON text.
    Json(serde_json::Value),
}

impl ReplyValue {
    /// The text the seat replies with.
    pub fn text(&self) -> String {
        match self {
            ReplyValue::Text(text) => text.clone(),
            ReplyValue::Json(value) => value.to_string(),
        }
    }
}

/// A parsed script file: a family and one queue per request kind.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Script {
    /// The family it stands in for, when the file names one.
    pub family: Option<String>,
    /// Each request kind's turns, in order.
    pub queues: BTreeMap<RequestKind, Vec<Turn>>,
}

/// The file's shape. Queues are named fields (not a flattened map) so the
/// TOML reader keeps spans: an unknown queue is reported at its line.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    #[serde(default)]
    family: Option<String>,
    #[serde(default)]
    write: Option<Vec<Turn>>,
    #[serde(default)]
    goal: Option<Vec<Turn>>,
    #[serde(default)]
    review: Option<Vec<Turn>>,
    #[serde(default)]
    merge: Option<Vec<Turn>>,
    #[serde(default)]
    vote: Option<Vec<Turn>>,
    #[serde(default)]
    judge: Option<Vec<Turn>>,
    #[serde(default)]
    plan: Option<Vec<Turn>>,
    #[serde(default)]
    replan: Option<Vec<Turn>>,
    #[serde(default)]
    work: Option<Vec<Turn>>,
    #[serde(default)]
    check: Option<Vec<Turn>>,
    #[serde(default)]
    inspect: Option<Vec<Turn>>,
    #[serde(default)]
    rule: Option<Vec<Turn>>,
    #[serde(default)]
    criterion: Option<Vec<Turn>>,
}

impl RawScript {
    fn into_queues(self) -> [(RequestKind, Option<Vec<Turn>>); 13] {
        [
            (RequestKind::Write, self.write),
            (RequestKind::Goal, self.goal),
            (RequestKind::Review, self.review),
            (RequestKind::Merge, self.merge),
            (RequestKind::Vote, self.vote),
            (RequestKind::Judge, self.judge),
            (RequestKind::Plan, self.plan),
            (RequestKind::Replan, self.replan),
            (RequestKind::Work, self.work),
            (RequestKind::Check, self.check),
            (RequestKind::Inspect, self.inspect),
            (RequestKind::Rule, self.rule),
            (RequestKind::Criterion, self.criterion),
        ]
    }
}

impl Script {
    /// Parses a script from TOML or JSON text; `path`'s extension picks the
    /// format (`.json` → JSON, anything else → TOML).
    pub fn parse(path: &Path, text: &str) -> Result<Self, Box<Located>> {
        let is_json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let raw: RawScript = if is_json {
            serde_json::from_str(text).map_err(|err| {
                let offset = gavel_domain::located::offset_of(text, err.line(), err.column());
                Box::new(
                    Located::new(path, text, offset..offset, format!("invalid script seat: {err}"))
                        .with_hint(SHAPE_HINT),
                )
            })?
        } else {
            toml::from_str(text).map_err(|err| {
                let span = err.span().unwrap_or(0..0);
                Box::new(
                    Located::new(path, text, span, format!("invalid script seat: {}", err.message()))
                        .with_hint(SHAPE_HINT),
                )
            })?
        };
        let family = raw.family.clone();
        let mut queues = BTreeMap::new();
        for (kind, turns) in raw.into_queues() {
            let Some(turns) = turns else { continue };
            if turns.is_empty() {
                let name = kind.as_str();
                let offset = find_key(text, name);
                return Err(Box::new(
                    Located::new(
                        path,
                        text,
                        offset..offset + name.len(),
                        format!("queue `{name}` has no turns"),
                    )
                    .with_hint("give it at least one turn, or leave it out"),
                ));
            }
            queues.insert(kind, turns);
        }
        Ok(Script { family, queues })
    }

    /// Reads and parses a script file.
    pub fn load(path: &Path) -> Result<Self, Box<Located>> {
        let text = gavel_fs::read::read_text(path, gavel_fs::read::UserFile::Script).map_err(|err| {
            Box::new(Located::about_file(path, err.message()).with_hint(
                err.hint_or("check the seat's `script` path; it is relative to the workflow file"),
            ))
        })?;
        Self::parse(path, &text)
    }

    /// The turn that answers the `turn`-th request of `kind` (from 0): the
    /// queue's last turn repeats once the queue runs out.
    pub fn turn(&self, kind: RequestKind, turn: u32) -> Option<&Turn> {
        let queue = self.queues.get(&kind)?;
        let index = usize::try_from(turn).unwrap_or(usize::MAX).min(queue.len().saturating_sub(1));
        queue.get(index)
    }
}

const SHAPE_HINT: &str = "a script seat is `family = \"...\"` (optional) and queues of turns, e.g. `[[review]]` with `reply`, `files`, `delay_ms`, `error`, `usage`";

/// Where a queue name first appears as a key, for error locations.
fn find_key(text: &str, name: &str) -> usize {
    [format!("[[{name}]]"), format!("\"{name}\""), format!("{name} =")]
        .iter()
        .find_map(|needle| text.find(needle.as_str()).map(|i| i + needle.find(name).unwrap_or(0)))
        .unwrap_or(0)
}

/// A seat answered by a script.
#[derive(Debug)]
pub struct ScriptSeat {
    name: String,
    family: Family,
    script: Script,
}

impl ScriptSeat {
    /// A script seat from an already parsed script.
    pub fn new(name: &str, family: Option<&str>, script: Script) -> Self {
        let family = family.or(script.family.as_deref()).map_or_else(|| Family::new("script"), Family::new);
        Self { name: name.to_owned(), family, script }
    }

    /// Builds the seat from its workflow spec; the script path is relative to `base`.
    pub fn from_spec(name: &str, spec: &SeatSpec, base: &Path) -> Result<Self, BuildError> {
        let Some(script) = &spec.script else {
            return Err(BuildError::File(Box::new(
                Located::whole_file(
                    base,
                    format!("seat `{name}` uses the script engine but names no script"),
                )
                .with_hint(format!("add `script = \"seats/{name}.toml\"` to the seat")),
            )));
        };
        let script = Script::load(&base.join(script))?;
        Ok(Self::new(name, spec.family.as_deref(), script))
    }

    /// The parsed script.
    pub fn script(&self) -> &Script {
        &self.script
    }
}

impl Seat for ScriptSeat {
    fn name(&self) -> &str {
        &self.name
    }

    fn family(&self) -> &Family {
        &self.family
    }

    fn engine(&self) -> Engine {
        Engine::Script
    }

    fn answer<'a>(&'a self, request: &'a Request) -> BoxFuture<'a, Result<Reply, SeatError>> {
        Box::pin(async move {
            let started = Instant::now();
            let Some(turn) = self.script.turn(request.kind, request.turn) else {
                return Err(SeatError::Engine(format!(
                    "script seat `{}` has no `[[{}]]` turns; add one to its script",
                    self.name, request.kind
                )));
            };
            if turn.delay_ms > 0 {
                let delay = Duration::from_millis(turn.delay_ms);
                if delay > request.timeout {
                    tokio::time::sleep(request.timeout).await;
                    return Err(SeatError::Timeout(request.timeout));
                }
                tokio::time::sleep(delay).await;
            }
            if let Some(error) = &turn.error {
                return Err(SeatError::Engine(crate::secret::scrub(error).into_owned()));
            }
            if !turn.files.is_empty() {
                if request.access == Access::ReadOnly {
                    return Err(SeatError::Refused(format!(
                        "script seat `{}` tried to write files on a read-only `{}` request",
                        self.name, request.kind
                    )));
                }
                // Checked all before any is written, like an API builder's reply.
                let files: Vec<(String, String)> =
                    turn.files.iter().map(|(path, content)| (path.clone(), content.clone())).collect();
                crate::written::check_and_write(request, &files, &format!("script seat `{}`", self.name))?;
            }
            let text = turn.reply.as_ref().map(ReplyValue::text).unwrap_or_default();
            Ok(Reply {
                text: crate::secret::scrub(&text).into_owned(),
                usage: turn.usage.unwrap_or_default(),
                duration: started.elapsed(),
                session: None,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    fn request(kind: RequestKind, turn: u32, workspace: &Path) -> Request {
        Request {
            kind,
            prompt: String::new(),
            workspace: workspace.to_owned(),
            access: kind.access(),
            turn,
            writes: Vec::new(),
            timeout: Duration::from_secs(5),
        }
    }

    const TOML_SCRIPT: &str = r##"
family = "anthropic"

[[write]]
reply = "wrote draft 1"
files = { "welcome.md" = "# Welcome\n" }

[[write]]
reply = "wrote draft 2"

[[review]]
reply = { decision = "pass", findings = [] }

[[vote]]
error = "connection reset"
"##;

    #[tokio::test]
    async fn queues_answer_in_order_and_the_last_turn_repeats() {
        let dir = tempfile::tempdir().unwrap();
        let script = Script::parse(Path::new("s.toml"), TOML_SCRIPT).unwrap();
        let seat = ScriptSeat::new("w", None, script);
        assert_eq!(seat.family().as_str(), "anthropic");
        let texts: Vec<String> = {
            let mut out = Vec::new();
            for turn in 0..4 {
                out.push(seat.answer(&request(RequestKind::Write, turn, dir.path())).await.unwrap().text);
            }
            out
        };
        assert_eq!(texts, ["wrote draft 1", "wrote draft 2", "wrote draft 2", "wrote draft 2"]);
        assert_eq!(std::fs::read_to_string(dir.path().join("welcome.md")).unwrap(), "# Welcome\n");
    }

    #[tokio::test]
    async fn a_table_reply_is_sent_as_json_text_and_errors_are_engine_errors() {
        let dir = tempfile::tempdir().unwrap();
        let seat =
            ScriptSeat::new("r", Some("google"), Script::parse(Path::new("s.toml"), TOML_SCRIPT).unwrap());
        assert_eq!(seat.family().as_str(), "google");
        let reply = seat.answer(&request(RequestKind::Review, 0, dir.path())).await.unwrap();
        let value: serde_json::Value = serde_json::from_str(&reply.text).unwrap();
        assert_eq!(value, serde_json::json!({"decision": "pass", "findings": []}));
        let err = seat.answer(&request(RequestKind::Vote, 0, dir.path())).await.unwrap_err();
        assert_eq!(err, SeatError::Engine("connection reset".into()));
        let err = seat.answer(&request(RequestKind::Judge, 0, dir.path())).await.unwrap_err();
        assert!(err.to_string().contains("no `[[judge]]` turns"), "{err}");
    }

    #[tokio::test]
    async fn files_on_a_read_only_request_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let script =
            Script::parse(Path::new("s.toml"), "[[review]]\nreply = \"x\"\nfiles = { \"a.md\" = \"x\" }\n")
                .unwrap();
        let seat = ScriptSeat::new("r", None, script);
        let err = seat.answer(&request(RequestKind::Review, 0, dir.path())).await.unwrap_err();
        assert!(matches!(err, SeatError::Refused(_)), "{err:?}");
        assert!(!dir.path().join("a.md").exists());
    }

    /// A seat whose one `write` turn writes `files`.
    fn writer(files: &[(&str, &str)]) -> ScriptSeat {
        let turn = Turn {
            reply: Some(ReplyValue::Text("done".into())),
            files: files.iter().map(|(p, c)| ((*p).to_owned(), (*c).to_owned())).collect(),
            ..Turn::default()
        };
        ScriptSeat::new(
            "w",
            None,
            Script { family: None, queues: BTreeMap::from([(RequestKind::Write, vec![turn])]) },
        )
    }

    async fn write_turn(
        files: &[(&str, &str)],
        workspace: &Path,
        writes: &[&str],
    ) -> Result<Reply, SeatError> {
        let mut req = request(RequestKind::Write, 0, workspace);
        req.writes = writes.iter().map(|w| (*w).to_owned()).collect();
        writer(files).answer(&req).await
    }

    #[tokio::test]
    async fn bad_paths_are_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        for bad in [
            "../escape.md",
            "/etc/passwd",
            "a/../../b",
            "",
            "./.gavel/runs/r/events.jsonl",
            ".gavel/runs/r/events.jsonl",
            "a/../.gavel/x",
            ".git/hooks/pre-commit",
            ".//.git/config",
            "sub/.git/hooks/x",
            ".GIT/config",
        ] {
            // `0.md` sorts first: all-or-nothing means it is not written either.
            let err = write_turn(&[("0.md", "ok"), (bad, "x")], dir.path(), &[]).await.unwrap_err();
            let SeatError::Refused(message) = &err else { panic!("{bad}: {err:?}") };
            assert!(message.contains(&format!("cannot write `{bad}`")), "{message}");
            assert!(message.contains("outside `.gavel/` and `.git/`"), "says what is allowed: {message}");
            assert!(!dir.path().join("0.md").exists(), "{bad}: nothing written");
        }
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
    }

    #[tokio::test]
    async fn links_out_of_the_workspace_or_into_gavel_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::write(outside.path().join("secret"), "keep").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.join("file-link.md")).unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.join("dir-link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("new.md"), ws.join("dangling.md")).unwrap();
        std::fs::create_dir_all(ws.join(".gavel/runs/r")).unwrap();
        std::fs::write(ws.join(".gavel/runs/r/events.jsonl"), "record\n").unwrap();
        std::os::unix::fs::symlink(".gavel", ws.join("state")).unwrap();
        for (bad, why) in [
            ("file-link.md", "leads outside the workspace"),
            ("dir-link/x.md", "leads outside the workspace"),
            ("dangling.md", "points at nothing"),
            ("state/runs/r/events.jsonl", "leads into `.gavel/` or `.git/`"),
        ] {
            let err = write_turn(&[(bad, "x")], ws, &[bad]).await.unwrap_err();
            let SeatError::Refused(message) = &err else { panic!("{bad}: {err:?}") };
            assert!(message.contains(why), "{bad}: {message}");
        }
        assert_eq!(std::fs::read_to_string(outside.path().join("secret")).unwrap(), "keep");
        assert!(!outside.path().join("x.md").exists() && !outside.path().join("new.md").exists());
        assert_eq!(std::fs::read_to_string(ws.join(".gavel/runs/r/events.jsonl")).unwrap(), "record\n");
    }

    #[tokio::test]
    async fn a_link_that_stays_inside_is_written_through_when_its_file_may_be_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("docs")).unwrap();
        // The file the link leads to is not among `writes`: refused.
        let err =
            write_turn(&[("docs/page.md", "through")], dir.path(), &["docs/page.md"]).await.unwrap_err();
        assert!(matches!(err, SeatError::Refused(_)), "{err:?}");
        assert!(!dir.path().join("real/page.md").exists());
        // Among them: written through.
        write_turn(&[("docs/page.md", "through")], dir.path(), &["docs/page.md", "real/page.md"])
            .await
            .unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("real/page.md")).unwrap(), "through");
    }

    #[tokio::test]
    async fn with_writes_a_file_outside_them_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err =
            write_turn(&[("page.md", "p"), ("other.md", "o")], dir.path(), &["./page.md"]).await.unwrap_err();
        assert_eq!(
            err,
            SeatError::Refused(
                "script seat `w` asked to write `other.md`, which is not among the files this request may write (`./page.md`); nothing was written".into()
            )
        );
        assert!(!dir.path().join("page.md").exists());
        write_turn(&[("page.md", "p")], dir.path(), &["./page.md"]).await.unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("page.md")).unwrap(), "p");
    }

    #[test]
    fn json_scripts_have_the_same_shape() {
        let json = r#"{"family":"openai","goal":[{"reply":{"requirements":[]}}],"write":[{"reply":"ok","files":{"a.md":"x"},"delay_ms":0}]}"#;
        let script = Script::parse(Path::new("s.json"), json).unwrap();
        assert_eq!(script.family.as_deref(), Some("openai"));
        assert_eq!(
            script.turn(RequestKind::Goal, 7).unwrap().reply.as_ref().unwrap().text(),
            r#"{"requirements":[]}"#
        );
        assert_eq!(script.turn(RequestKind::Write, 0).unwrap().files.len(), 1);
    }

    #[test]
    fn bad_scripts_are_located() {
        let err = Script::parse(Path::new("s.toml"), "[[reviews]]\nreply = \"x\"\n").unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.message.contains("reviews"), "{}", err.message);
        assert!(err.hint.as_deref().unwrap_or_default().contains("review"));

        let err = Script::parse(Path::new("s.toml"), "[[review]]\nreplay = \"x\"\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.message.contains("replay"), "{}", err.message);

        let err = Script::parse(Path::new("s.json"), "{\"review\": [{\"reply\": 1,}]}").unwrap_err();
        assert_eq!(err.line, 1);
    }
}
