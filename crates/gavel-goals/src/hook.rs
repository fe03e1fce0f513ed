//! The Claude Code Stop hook: `gavel hook stop` and `gavel hook install`.
//!
//! Claude Code runs a Stop hook when its agent is about to end its turn, with
//! a JSON object on stdin:
//! `{"session_id", "transcript_path", "cwd", "permission_mode",
//! "hook_event_name": "Stop", "stop_hook_active"}` (newer versions add fields
//! such as `last_assistant_message`; unknown fields are ignored).
//! The hook answers on stdout with exit code 0: `{"decision": "block",
//! "reason": "..."}` keeps the agent working with the reason as its next
//! instruction; no `decision` lets it stop. `stop_hook_active` is true when
//! the agent is already continuing because a stop hook blocked.
//!
//! The hook finds the goal for the session's folder (the nearest `.gavel/goals`
//! from `cwd` up; of several open goals, the one evaluated most recently),
//! evaluates it with trigger `stop-hook`, and blocks while it fails or breaks
//! its path boundary, naming the failing criteria and their output tails. It
//! lets the agent stop when the goal passes (achieved is then proposed), is
//! stuck, is incomplete (only a judge or a person can move it), has a proposal
//! waiting for a person, or when a re-entered hook has blocked `max_blocks`
//! times in a row.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

use gavel_domain::Located;

use crate::GoalError;
use crate::evaluate::{Evaluation, evaluate_in};
use crate::event::{CriterionStatus, GoalEvent, GoalStatus, HookDecision, HookStop, Trigger, Verdict};
use crate::file::LoadedGoal;
use crate::store::{GoalPaths, GoalRecord, find_root, list_goal_ids, read_state, write_atomic};

/// The most hook input read from stdin; Claude Code sends well under a kilobyte.
pub const MAX_INPUT_BYTES: usize = 1024 * 1024;
/// How much of each failing criterion's output the block reason quotes.
const REASON_TAIL_BYTES: usize = 1500;
/// How many lines of it, at most.
const REASON_TAIL_LINES: usize = 25;

/// The Stop hook's input, as Claude Code sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct StopInput {
    /// The session's id.
    #[serde(default)]
    pub session_id: String,
    /// The session transcript (JSONL).
    #[serde(default)]
    pub transcript_path: String,
    /// The session's working folder.
    #[serde(default)]
    pub cwd: Option<String>,
    /// `Stop`.
    pub hook_event_name: String,
    /// Whether the agent already continues because a stop hook blocked.
    #[serde(default)]
    pub stop_hook_active: bool,
}

/// Reads the hook's input; the error is a sentence for a person.
pub fn parse_input(bytes: &[u8]) -> Result<StopInput, String> {
    let text =
        std::str::from_utf8(bytes).map_err(|_| "the hook input on stdin is not UTF-8 text".to_owned())?;
    if text.trim().is_empty() {
        return Err(
            "no hook input on stdin; Claude Code sends a JSON object with `hook_event_name: \"Stop\"`"
                .to_owned(),
        );
    }
    let input: StopInput = serde_json::from_str(text).map_err(|err| {
        if err.is_data() {
            format!("the hook input does not have the Stop hook's shape: {err}")
        } else {
            format!("the hook input is not a JSON object: {err}")
        }
    })?;
    if input.hook_event_name != "Stop" {
        return Err(format!(
            "the hook input is for `{}`, not `Stop`; install `gavel hook stop` as a Stop hook (`gavel hook install`)",
            input.hook_event_name
        ));
    }
    Ok(input)
}

/// What the hook tells Claude Code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookOutcome {
    /// Keep working.
    Block {
        /// The goal.
        goal: String,
        /// The instruction the agent gets.
        reason: String,
    },
    /// The agent may stop.
    Allow {
        /// The goal, when there is one.
        goal: Option<String>,
        /// A line for the person, when there is something to say.
        message: Option<String>,
    },
}

impl HookOutcome {
    /// The JSON to print on stdout (exit code 0), or nothing: an allow with
    /// nothing to say prints nothing, which lets the agent stop.
    pub fn stdout_json(&self) -> Option<String> {
        let value = match self {
            HookOutcome::Block { reason, .. } => serde_json::json!({"decision": "block", "reason": reason}),
            HookOutcome::Allow { message: Some(message), .. } => {
                serde_json::json!({"systemMessage": message})
            }
            HookOutcome::Allow { message: None, .. } => return None,
        };
        Some(value.to_string())
    }

    /// An allow with a message for the person, for when the hook itself
    /// cannot work (bad input, a broken goal file): a broken hook must never
    /// keep an agent from stopping.
    pub fn allow_because(message: String) -> Self {
        HookOutcome::Allow { goal: None, message: Some(message) }
    }
}

/// Runs the Stop hook for `input`; `fallback_cwd` is used when the input
/// names no folder.
pub async fn stop(input: &StopInput, fallback_cwd: &Path) -> Result<HookOutcome, GoalError> {
    let cwd =
        input.cwd.as_deref().filter(|c| !c.is_empty()).map_or_else(|| fallback_cwd.to_owned(), PathBuf::from);
    let Some(root) = find_root(&cwd) else {
        return Ok(HookOutcome::Allow { goal: None, message: None });
    };
    let Some(paths) = pick_goal(&root) else {
        return Ok(HookOutcome::Allow { goal: None, message: None });
    };
    let goal = LoadedGoal::load(&paths.file, &paths.id)?;
    let mut record = GoalRecord::open(&paths)?;
    let id = paths.id.clone();
    let state = record.state().clone();
    if state.status.is_terminal() {
        return Ok(HookOutcome::Allow { goal: Some(id), message: None });
    }

    let early = if let Some(p) = state.proposal.as_ref().filter(|p| p.to != GoalStatus::Achieved) {
        Some((
            "proposal_pending",
            format!(
                "gavel: goal `{id}`: {} is proposed ({}); waiting for a person: `gavel goal confirm {id}` (or `--reject`)",
                p.to, p.summary
            ),
        ))
    } else if input.stop_hook_active && state.hook_blocks >= goal.goal.stop_hook.max_blocks {
        Some((
            "block_limit",
            format!(
                "gavel: goal `{id}` is still not achieved after {} blocks in a row; letting the agent stop. `gavel goal status {id}` shows where it stands",
                state.hook_blocks
            ),
        ))
    } else {
        None
    };
    if let Some((reason, message)) = early {
        record.append(GoalEvent::HookStop(HookStop {
            session_id: input.session_id.clone(),
            stop_hook_active: input.stop_hook_active,
            decision: HookDecision::Allow,
            reason: reason.to_owned(),
            run_id: None,
        }))?;
        record.write_state_md()?;
        return Ok(HookOutcome::Allow { goal: Some(id), message: Some(message) });
    }

    let evaluation = evaluate_in(&mut record, &goal, None, Trigger::StopHook).await?;
    let (decision, reason, outcome) = decide(&id, &evaluation);
    record.append(GoalEvent::HookStop(HookStop {
        session_id: input.session_id.clone(),
        stop_hook_active: input.stop_hook_active,
        decision,
        reason: reason.to_owned(),
        run_id: Some(evaluation.run_id.clone()),
    }))?;
    record.write_state_md()?;
    Ok(outcome)
}

/// The open goal the hook works on: of the goals that are not finished, the
/// one evaluated (or created) most recently. Goals whose record cannot be
/// read are passed over.
fn pick_goal(root: &Path) -> Option<GoalPaths> {
    let mut open: Vec<(Option<jiff::Timestamp>, GoalPaths)> = Vec::new();
    for id in list_goal_ids(root) {
        let Ok(paths) = GoalPaths::new(root, &id) else { continue };
        // A goal.yaml that is there but no regular file (a FIFO, a device)
        // is not skipped: loading it says what is wrong, so the person hears.
        if !paths.file.exists() {
            continue;
        }
        let Ok(view) = read_state(&paths) else { continue };
        let state = view.state;
        if state.status.is_terminal() {
            continue;
        }
        open.push((state.last_touched(), paths));
    }
    // Most recent first; a goal never evaluated nor created sorts last.
    open.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.id.cmp(&b.1.id)));
    open.into_iter().next().map(|(_, paths)| paths)
}

fn decide(id: &str, e: &Evaluation) -> (HookDecision, &'static str, HookOutcome) {
    let allow = |reason: &'static str, message: String| {
        (
            HookDecision::Allow,
            reason,
            HookOutcome::Allow { goal: Some(id.to_owned()), message: Some(message) },
        )
    };
    if e.stuck {
        return allow(
            "stuck_no_progress",
            format!(
                "gavel: goal `{id}` made no progress over several stop-hook evaluations; `failed` is proposed. {}",
                e.next_step_hint
            ),
        );
    }
    match e.verdict {
        Verdict::Pass => allow(
            "passes",
            format!("gavel: goal `{id}` passes ({}); `gavel goal confirm {id}` marks it achieved", e.summary),
        ),
        Verdict::Incomplete => allow(
            "incomplete",
            format!("gavel: goal `{id}` is incomplete ({}). {}", e.summary, e.next_step_hint),
        ),
        Verdict::Fail | Verdict::Blocked => {
            let code = if e.verdict == Verdict::Fail { "criteria_failed" } else { "path_boundary_violation" };
            (
                HookDecision::Block,
                code,
                HookOutcome::Block { goal: id.to_owned(), reason: block_reason(id, e) },
            )
        }
    }
}

/// The instruction the agent gets while the goal is not achieved.
pub fn block_reason(id: &str, e: &Evaluation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "gavel: goal `{id}` is not achieved yet: {}.", e.summary);
    if let Some(boundary) = e.path_boundary.as_ref().filter(|b| !b.holds()) {
        let _ = writeln!(out);
        match &boundary.error {
            Some(error) => {
                let _ = writeln!(out, "The path boundary cannot be checked: {error}.");
            }
            None => {
                let _ = writeln!(
                    out,
                    "These files changed outside the allowed paths ({}): {}. Revert or move those changes.",
                    boundary.allowed.join(", "),
                    boundary.violations.join(", ")
                );
            }
        }
    }
    for c in e.criteria.iter().filter(|c| c.must_pass && c.status == CriterionStatus::Fail) {
        let _ = writeln!(out);
        let _ = writeln!(out, "✗ {} {}", c.id, c.text);
        let _ = writeln!(out, "  {}", c.note);
        let tail = last_lines(&c.output_tail, REASON_TAIL_BYTES, REASON_TAIL_LINES);
        if !tail.trim().is_empty() {
            let _ = writeln!(out, "  output (last lines):");
            for line in tail.lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
    }
    let _ = writeln!(out);
    let _ = write!(
        out,
        "Keep working until these pass; gavel checks again when you stop. Evidence: {}",
        e.evidence_dir
    );
    // The agent reads this as text: no escape codes, even from a record
    // written before command output was cleaned.
    gavel_process::plain::plain_text(out.as_bytes())
}

fn last_lines(text: &str, max_bytes: usize, max_lines: usize) -> String {
    let tail = crate::exec::tail_text(text.trim_end(), max_bytes);
    let lines: Vec<&str> = tail.lines().collect();
    lines[lines.len().saturating_sub(max_lines)..].join("\n")
}

// ---- install -----------------------------------------------------------------

/// The hook command `gavel hook install` writes by default.
pub const DEFAULT_COMMAND: &str = "gavel hook stop";
/// Seconds Claude Code lets the hook run: criteria commands may take minutes.
pub const HOOK_TIMEOUT_SECONDS: u64 = 900;

/// What `install` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The settings file.
    pub path: PathBuf,
    /// False when the hook was there already.
    pub changed: bool,
}

/// Adds a Stop hook running `command` to `<project>/.claude/settings.json`,
/// keeping every other setting (and the order of keys) as it was. Running it
/// again changes nothing.
pub fn install(project: &Path, command: &str) -> Result<Installed, GoalError> {
    let path = project.join(".claude").join("settings.json");
    let text = match gavel_fs::read::read_text(&path, gavel_fs::read::UserFile::Settings) {
        Ok(text) => Some(text),
        Err(err) if err.is_missing() => None,
        Err(err) => {
            return Err(GoalError::File(Box::new(
                Located::about_file(&path, err.message()).with_hint(err.hint()),
            )));
        }
    };
    let merged = merge_settings(&path, text.as_deref(), command)?;
    match merged {
        None => Ok(Installed { path, changed: false }),
        Some(new_text) => {
            write_atomic(&path, new_text.as_bytes())?;
            Ok(Installed { path, changed: true })
        }
    }
}

/// The settings text with the hook added, or `None` when it is there already.
pub fn merge_settings(path: &Path, text: Option<&str>, command: &str) -> Result<Option<String>, GoalError> {
    let located = |text: &str, line: usize, column: usize, message: String| {
        let offset = text
            .split_inclusive('\n')
            .take(line.saturating_sub(1))
            .map(str::len)
            .sum::<usize>()
            .saturating_add(column.saturating_sub(1))
            .min(text.len());
        GoalError::File(Box::new(
            Located::new(path, text, offset..offset, message)
                .with_hint("fix the file by hand first; gavel will not overwrite settings it cannot read"),
        ))
    };
    let mut root = match text {
        Some(text) if !text.trim().is_empty() => serde_json::from_str::<Json>(text)
            .map_err(|err| located(text, err.line(), err.column(), format!("not valid JSON: {err}")))?,
        _ => Json::Object(Vec::new()),
    };
    let shape = |what: &str| {
        GoalError::File(Box::new(
            Located::whole_file(path, format!("{what}; gavel will not overwrite it"))
                .with_hint("Claude Code expects {\"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"...\"}]}]}}"),
        ))
    };
    let Json::Object(top) = &mut root else { return Err(shape("the settings are not a JSON object")) };
    let hooks = entry(top, "hooks", || Json::Object(Vec::new()));
    let Json::Object(hooks) = hooks else { return Err(shape("`hooks` is not an object")) };
    let stop = entry(hooks, "Stop", || Json::Array(Vec::new()));
    let Json::Array(groups) = stop else { return Err(shape("`hooks.Stop` is not a list")) };
    let present = groups.iter().any(|group| {
        group.get("hooks").and_then(Json::as_array).is_some_and(|list| {
            list.iter().any(|h| {
                h.get("command")
                    .and_then(Json::as_str)
                    .is_some_and(|c| c.contains("gavel hook stop") || c == command)
            })
        })
    });
    if present {
        return Ok(None);
    }
    groups.push(Json::Object(vec![(
        "hooks".to_owned(),
        Json::Array(vec![Json::Object(vec![
            ("type".to_owned(), Json::String("command".to_owned())),
            ("command".to_owned(), Json::String(command.to_owned())),
            ("timeout".to_owned(), Json::Number(HOOK_TIMEOUT_SECONDS.into())),
        ])]),
    )]));
    let mut out = serde_json::to_string_pretty(&root).map_err(|err| GoalError::Internal(err.to_string()))?;
    out.push('\n');
    Ok(Some(out))
}

fn entry<'a>(object: &'a mut Vec<(String, Json)>, key: &str, make: impl FnOnce() -> Json) -> &'a mut Json {
    let index = if let Some(i) = object.iter().position(|(k, _)| k == key) {
        i
    } else {
        object.push((key.to_owned(), make()));
        object.len() - 1
    };
    &mut object[index].1
}

/// JSON that keeps its keys in the order they were written, so editing a
/// person's settings file changes only what gavel adds.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Number(serde_json::Number),
    /// A string.
    String(String),
    /// A list.
    Array(Vec<Json>),
    /// An object, keys in file order.
    Object(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<&Vec<Json>> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Json;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Json, E> {
                Ok(Json::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Json, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
                serde_json::Number::from_f64(v)
                    .map(Json::Number)
                    .ok_or_else(|| E::custom("a number JSON cannot hold"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Json, E> {
                Ok(Json::String(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Json, E> {
                Ok(Json::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, Json>()? {
                    entries.push((key, value));
                }
                Ok(Json::Object(entries))
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(text) => s.serialize_str(text),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_input_claude_code_sends_reads() {
        let input = parse_input(
            br#"{"session_id":"abc123","transcript_path":"/home/u/.claude/projects/p/abc123.jsonl","cwd":"/work/p","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false,"last_assistant_message":"Done."}"#,
        )
        .unwrap();
        assert_eq!(input.session_id, "abc123");
        assert_eq!(input.cwd.as_deref(), Some("/work/p"));
        assert!(!input.stop_hook_active);
    }

    #[test]
    fn bad_input_gets_a_sentence() {
        for (bytes, needle) in [
            (&b""[..], "no hook input"),
            (b"not json", "not a JSON object"),
            (b"[1,2]", "shape"),
            (br#"{"hook_event_name":"PreToolUse"}"#, "not `Stop`"),
            (br#"{"hook_event_name":"Stop","stop_hook_active":"yes"}"#, "shape"),
            (b"\xff\xfe", "UTF-8"),
        ] {
            let err = parse_input(bytes).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }

    #[test]
    fn outputs_follow_the_hook_protocol() {
        let block = HookOutcome::Block { goal: "g".into(), reason: "AC1 fails".into() };
        let v: serde_json::Value = serde_json::from_str(&block.stdout_json().unwrap()).unwrap();
        assert_eq!(v, serde_json::json!({"decision": "block", "reason": "AC1 fails"}));
        assert_eq!(HookOutcome::Allow { goal: None, message: None }.stdout_json(), None);
        let v: serde_json::Value =
            serde_json::from_str(&HookOutcome::allow_because("x".into()).stdout_json().unwrap()).unwrap();
        assert!(v.get("decision").is_none());
    }

    #[test]
    fn install_merges_keeps_order_and_is_idempotent() {
        let path = Path::new(".claude/settings.json");
        let before = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"lint\"}]}]\n  },\n  \"env\": {\"A\": \"1\"},\n  \"n\": 1.5\n}\n";
        let after = merge_settings(path, Some(before), DEFAULT_COMMAND).unwrap().unwrap();
        let v: serde_json::Value = serde_json::from_str(&after).unwrap();
        assert_eq!(v["model"], "opus");
        assert_eq!(v["env"]["A"], "1");
        assert_eq!(v["n"], 1.5);
        assert_eq!(v["hooks"]["PreToolUse"][0]["hooks"][0]["command"], "lint");
        assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], "gavel hook stop");
        assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["type"], "command");
        let keys: Vec<usize> =
            ["\"model\"", "\"hooks\"", "\"env\"", "\"n\""].iter().map(|k| after.find(k).unwrap()).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "key order kept: {after}");
        assert_eq!(merge_settings(path, Some(&after), DEFAULT_COMMAND).unwrap(), None);
        assert!(merge_settings(path, None, DEFAULT_COMMAND).unwrap().is_some());
        assert!(matches!(
            merge_settings(path, Some("{\"hooks\": []}"), DEFAULT_COMMAND),
            Err(GoalError::File(_))
        ));
        let err = merge_settings(path, Some("{\n  \"a\": 1,\n}"), DEFAULT_COMMAND).unwrap_err();
        let GoalError::File(located) = err else { panic!("{err:?}") };
        assert_eq!(located.line, 3);
    }
}
