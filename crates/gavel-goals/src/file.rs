//! The goal file: `.gavel/goals/<id>/goal.yaml`, what a person
//! wrote. Read with typed serde, then checked by hand, so every problem is
//! reported at its file, line and column with what to write instead.
//!
//! Two shapes of the same file live here: [`GoalFile`], the clean public type
//! (and the source of `gavel schema goal`), and a private raw mirror with
//! spans, used only to point at the place a check fails. A unit test keeps the
//! two in step.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use gavel_domain::{Engine, Located, SeatSpec};
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_saphyr::Spanned;

/// A command with no `timeout_seconds` may run this long (the evaluator's rule: a command
/// slower than 2 minutes must say so).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 120;
/// The longest `timeout_seconds` accepted: a day. Longer is almost surely a typo.
pub const MAX_TIMEOUT_SECONDS: u64 = 86_400;
/// Stop-hook evaluations in a row with the same passing criteria before
/// `failed` is proposed (`stuck_no_progress`).
pub const DEFAULT_STUCK_AFTER: u32 = 3;
/// Consecutive stop-hook blocks after which a re-entered hook lets the agent stop.
pub const DEFAULT_MAX_BLOCKS: u32 = 10;
/// The evidence file name the path-boundary check uses; no criterion may take it.
pub const PATH_BOUNDARY_ID: &str = "path-boundary";

/// A goal file: an outcome and the criteria that prove it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    title = "gavel goal",
    description = "A goal for gavel: .gavel/goals/<id>/goal.yaml. Commands decide the criteria they can; a judge seat decides only the criteria without a command."
)]
pub struct GoalFile {
    /// The goal's id: the name of its folder under `.gavel/goals`.
    #[schemars(regex(pattern = r"^[a-z0-9][a-z0-9._-]*$"), length(max = 64))]
    pub id: String,
    /// The outcome, in a line.
    #[schemars(length(min = 1))]
    pub title: String,
    /// The acceptance criteria, in order.
    #[schemars(length(min = 1))]
    pub criteria: Vec<Criterion>,
    /// Limits on the work.
    #[serde(default, skip_serializing_if = "Constraints::is_empty")]
    pub constraints: Constraints,
    /// Who decides: commands only, or commands and a judge seat for the
    /// criteria without a command.
    #[serde(default)]
    pub evaluator: EvaluatorKind,
    /// The seat that judges criteria without a command (`hybrid`/`judge`):
    /// any gavel seat; relative paths (a script) are relative to the goal's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<JudgeSeatSchema>")]
    pub judge_seat: Option<SeatSpec>,
    /// How the Claude Code stop hook treats this goal.
    #[serde(default, skip_serializing_if = "StopHookOptions::is_default")]
    pub stop_hook: StopHookOptions,
}

/// One acceptance criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// Its id (`AC1`); names its evidence file.
    #[schemars(regex(pattern = r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$"), length(max = 64))]
    pub id: String,
    /// What must hold, in words.
    #[schemars(length(min = 1))]
    pub text: String,
    /// A shell line run with `sh -c` in the project root; exit 0 means met.
    /// Without one the criterion is fuzzy: a judge seat decides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Whether the goal needs this criterion (default true).
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub must_pass: bool,
    /// How long the command may run (default 120); required in practice for
    /// anything slower than 2 minutes. A timeout is a failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86_400))]
    pub timeout_seconds: Option<u64>,
    /// What passing does NOT prove; copied into the evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<String>,
    /// Marks a criterion without a command as one for the judge seat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge: Option<bool>,
}

impl Criterion {
    /// Whether a judge (not a command) decides this criterion.
    pub fn is_fuzzy(&self) -> bool {
        self.command.is_none()
    }

    /// The command's time limit in seconds.
    pub fn timeout_seconds(&self) -> u64 {
        self.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS)
    }
}

fn yes() -> bool {
    true
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_true(value: &bool) -> bool {
    *value
}

/// Limits on the work.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Constraints {
    /// Globs (relative to the project root) every file changed since the
    /// goal's base commit must match; `*` stays inside a folder, `**` crosses
    /// folders, a trailing `/` means everything under that folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_paths: Option<Vec<String>>,
}

impl Constraints {
    fn is_empty(&self) -> bool {
        self.allowed_paths.is_none()
    }
}

/// Who decides the criteria.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EvaluatorKind {
    /// Commands only; a criterion without a command leaves the goal incomplete.
    #[default]
    Deterministic,
    /// Commands first; the judge seat decides the criteria without a command
    /// on every evaluation (the stop hook's too).
    Hybrid,
    /// Commands first; the judge seat decides the criteria without a command
    /// only when a person or a command asks (`--trigger manual|command`), never
    /// on the stop hook's evaluations, so an agent's loop spends no judge calls.
    Judge,
}

impl EvaluatorKind {
    /// The kind's name as written.
    pub const fn as_str(self) -> &'static str {
        match self {
            EvaluatorKind::Deterministic => "deterministic",
            EvaluatorKind::Hybrid => "hybrid",
            EvaluatorKind::Judge => "judge",
        }
    }

    /// Whether a judge seat may be asked at all.
    pub const fn uses_judge(self) -> bool {
        !matches!(self, EvaluatorKind::Deterministic)
    }
}

/// How the Claude Code stop hook treats this goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopHookOptions {
    /// Stop-hook evaluations in a row with the same passing criteria after
    /// which `failed` is proposed (`stuck_no_progress`). At least 2.
    #[serde(default = "default_stuck_after")]
    #[schemars(range(min = 2))]
    pub stuck_after: u32,
    /// Consecutive blocks after which a re-entered hook (`stop_hook_active`)
    /// lets the agent stop anyway. At least 1.
    #[serde(default = "default_max_blocks")]
    #[schemars(range(min = 1))]
    pub max_blocks: u32,
}

impl Default for StopHookOptions {
    fn default() -> Self {
        Self { stuck_after: DEFAULT_STUCK_AFTER, max_blocks: DEFAULT_MAX_BLOCKS }
    }
}

impl StopHookOptions {
    #[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

fn default_stuck_after() -> u32 {
    DEFAULT_STUCK_AFTER
}

fn default_max_blocks() -> u32 {
    DEFAULT_MAX_BLOCKS
}

/// The seat keys, for the schema only (the domain's `SeatSpec`
/// carries no schema derive).
#[derive(JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // read by the schema generator, never built
struct JudgeSeatSchema {
    /// How the seat is reached.
    engine: EngineSchema,
    /// The model it runs (not needed for `script`).
    model: Option<String>,
    /// The model family; inferred from `model` when absent.
    family: Option<String>,
    /// The CLI binary (absolute path or a name on `PATH`).
    executable: Option<String>,
    /// Where the model API lives.
    base_url: Option<String>,
    /// The name of the environment variable that holds the API key.
    api_key_env: Option<String>,
    /// Extra environment for the seat's process.
    env: Option<BTreeMap<String, String>>,
    /// Per-request timeout, e.g. "10m" (default 10 minutes).
    timeout: Option<String>,
    /// The script file, for the `script` engine (relative to the goal's folder).
    script: Option<String>,
    /// Per-seat prompt template overrides: request kind → template file.
    prompts: Option<BTreeMap<String, String>>,
}

#[derive(JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)] // read by the schema generator, never built
enum EngineSchema {
    Claude,
    Codex,
    Opencode,
    Gemini,
    Anthropic,
    Openai,
    Script,
}

/// The JSON Schema of goal files (`gavel schema goal`).
pub fn schema() -> serde_json::Value {
    let schema = schemars::schema_for!(GoalFile);
    serde_json::to_value(&schema).unwrap_or_default()
}

/// A goal file as read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedGoal {
    /// The file.
    pub path: PathBuf,
    /// Its text as read.
    pub text: String,
    /// SHA-256 of its bytes, hex.
    pub digest: String,
    /// What it says.
    pub goal: GoalFile,
    /// The allowed paths, compiled.
    pub allowed: Option<AllowedPaths>,
}

/// `constraints.allowed_paths`, compiled.
#[derive(Debug, Clone)]
pub struct AllowedPaths {
    /// The globs as written.
    pub globs: Vec<String>,
    set: GlobSet,
}

impl PartialEq for AllowedPaths {
    fn eq(&self, other: &Self) -> bool {
        self.globs == other.globs
    }
}

impl AllowedPaths {
    /// Compiles globs; the error names the first bad one and why.
    pub fn new(globs: &[String]) -> Result<Self, (usize, String)> {
        let mut builder = GlobSetBuilder::new();
        for (i, glob) in globs.iter().enumerate() {
            check_glob_path(glob).map_err(|why| (i, why))?;
            // A folder named with a trailing slash means everything under it.
            let pattern = if glob.ends_with('/') { format!("{glob}**") } else { glob.clone() };
            let compiled = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|err| (i, format!("is not a valid glob: {}", err.kind())))?;
            builder.add(compiled);
        }
        let set = builder.build().map_err(|err| (0, err.to_string()))?;
        Ok(Self { globs: globs.to_vec(), set })
    }

    /// Whether a project-relative path (with `/` separators) is allowed.
    pub fn allows(&self, path: &str) -> bool {
        self.set.is_match(path)
    }
}

fn check_glob_path(glob: &str) -> Result<(), String> {
    if glob.trim().is_empty() {
        return Err("is empty".to_owned());
    }
    if glob.starts_with('/') {
        return Err("is absolute; globs are relative to the project root".to_owned());
    }
    if glob.split('/').any(|part| part == "..") {
        return Err("climbs out with `..`; globs are relative to the project root".to_owned());
    }
    // The same folders no seat may write: gavel's own state and git's.
    if let Some(part) = glob.split('/').find(|part| gavel_fs::write::reserved(part).is_some()) {
        return Err(format!(
            "lies under `{part}/`, which holds gavel's or git's own files; the work may not change it"
        ));
    }
    Ok(())
}

/// Whether `id` can name a goal (and its folder).
pub fn check_goal_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
        && id.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{id}` is not a usable goal id; use lowercase letters, digits, `-`, `_` and `.`, starting with a letter or digit (at most 64)"
        ))
    }
}

/// Whether `id` can name a criterion (and its evidence file).
pub fn check_criterion_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.starts_with(['.', '-']);
    if !ok {
        return Err(format!(
            "`{id}` is not a usable criterion id; use letters, digits, `-`, `_` and `.` (not first), e.g. `AC1`"
        ));
    }
    if id == PATH_BOUNDARY_ID {
        return Err(format!("`{id}` is reserved for the path-boundary evidence; choose another id"));
    }
    Ok(())
}

// ---- reading ---------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGoal {
    id: Spanned<String>,
    title: Spanned<String>,
    criteria: Spanned<Vec<RawCriterion>>,
    #[serde(default)]
    constraints: Option<Spanned<RawConstraints>>,
    #[serde(default)]
    evaluator: Option<Spanned<EvaluatorKind>>,
    #[serde(default)]
    judge_seat: Option<Spanned<SeatSpec>>,
    #[serde(default)]
    stop_hook: Option<RawStopHook>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCriterion {
    id: Spanned<String>,
    text: Spanned<String>,
    #[serde(default)]
    command: Option<Spanned<String>>,
    #[serde(default)]
    must_pass: Option<bool>,
    #[serde(default)]
    timeout_seconds: Option<Spanned<u64>>,
    #[serde(default)]
    limits: Option<String>,
    #[serde(default)]
    judge: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConstraints {
    #[serde(default)]
    allowed_paths: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStopHook {
    #[serde(default)]
    stuck_after: Option<Spanned<u32>>,
    #[serde(default)]
    max_blocks: Option<Spanned<u32>>,
}

const SHAPE_HINT: &str = "a goal file has `id`, `title`, `criteria` (each `id`, `text`, and a `command` or `judge: true`), and optionally `constraints.allowed_paths`, `evaluator`, `judge_seat`, `stop_hook`; `gavel schema goal` prints the full schema";

impl LoadedGoal {
    /// Reads and checks the goal file at `path`; `folder_id` is the goal's
    /// folder name, which the file's `id` must match.
    pub fn load(path: &Path, folder_id: &str) -> Result<Self, Box<Located>> {
        let bytes = gavel_fs::read::read(path, gavel_fs::read::UserFile::Goal).map_err(|err| {
            Box::new(Located::about_file(path, err.message()).with_hint(
                err.hint_or("create it with `gavel goal new ID --title ... --criterion \"text::command\"`"),
            ))
        })?;
        let digest = crate::sha256_hex(&bytes);
        let text = String::from_utf8(bytes).map_err(|err| {
            let offset = err.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(err.as_bytes()).into_owned();
            Box::new(Located::new(path, &text, offset..offset, "the goal file is not UTF-8 text"))
        })?;
        let goal = parse(path, &text, folder_id)?;
        let allowed =
            match &goal.constraints.allowed_paths {
                // Already checked by `parse`; a failure here cannot happen, but is
                // reported rather than trusted.
                Some(globs) => Some(AllowedPaths::new(globs).map_err(|(_, why)| {
                    Box::new(Located::whole_file(path, format!("allowed_paths: {why}")))
                })?),
                None => None,
            };
        Ok(Self { path: path.to_owned(), text, digest, goal, allowed })
    }
}

/// Parses and checks a goal file's text; `path` only names it in errors.
pub fn parse(path: &Path, text: &str, folder_id: &str) -> Result<GoalFile, Box<Located>> {
    let at = |span: Range<usize>, message: String, hint: &str| {
        Box::new(Located::new(path, text, span, message).with_hint(hint))
    };
    if text.trim().is_empty() {
        return Err(at(0..0, "the goal file is empty".to_owned(), SHAPE_HINT));
    }
    let raw: RawGoal = serde_saphyr::from_str(text).map_err(|err| {
        let offset = err
            .location()
            .and_then(|loc| loc.span().byte_offset())
            .and_then(|o| usize::try_from(o).ok())
            .or_else(|| {
                err.location().map(|loc| {
                    gavel_domain::located::offset_of(
                        text,
                        usize::try_from(loc.line()).unwrap_or(1),
                        usize::try_from(loc.column()).unwrap_or(1),
                    )
                })
            })
            .unwrap_or(0);
        at(offset..offset, format!("invalid goal file: {}", yaml_message(&err.to_string())), SHAPE_HINT)
    })?;

    let id = raw.id.value.trim().to_owned();
    check_goal_id(&id)
        .map_err(|why| at(span_of(text, &raw.id.referenced), why, "the id is the goal's folder name"))?;
    if id != folder_id {
        return Err(at(
            span_of(text, &raw.id.referenced),
            format!("the goal's id is `{id}` but its folder is `{folder_id}`"),
            &format!("write `id: {folder_id}`, or move the file to .gavel/goals/{id}/goal.yaml"),
        ));
    }
    let title = raw.title.value.trim().to_owned();
    if title.is_empty() {
        return Err(at(sp(text, &raw.title), "`title` is empty".to_owned(), "say the outcome in a line"));
    }
    if raw.criteria.value.is_empty() {
        return Err(at(
            sp(text, &raw.criteria),
            "`criteria` is empty; a goal needs at least one criterion".to_owned(),
            "add `- id: AC1`, `text: ...`, `command: ...`",
        ));
    }

    let mut criteria = Vec::with_capacity(raw.criteria.value.len());
    let mut seen: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for rc in raw.criteria.value {
        let cid = rc.id.value.trim().to_owned();
        check_criterion_id(&cid)
            .map_err(|why| at(sp(text, &rc.id), why, "criterion ids name evidence files"))?;
        if !seen.insert(cid.clone()) {
            return Err(at(
                sp(text, &rc.id),
                format!("criterion id `{cid}` is used twice"),
                "give every criterion its own id",
            ));
        }
        let ctext = rc.text.value.trim().to_owned();
        if ctext.is_empty() {
            return Err(at(
                sp(text, &rc.text),
                format!("criterion `{cid}` has an empty `text`"),
                "say what must hold",
            ));
        }
        let command = match rc.command {
            Some(command) if command.value.trim().is_empty() => {
                return Err(at(
                    sp(text, &command),
                    format!("criterion `{cid}` has an empty `command`"),
                    "write the shell line whose exit 0 proves the criterion, or remove `command` and write `judge: true`",
                ));
            }
            Some(command) => Some(command),
            None => None,
        };
        match (&command, &rc.judge) {
            (Some(_), Some(judge)) if judge.value => {
                return Err(at(
                    sp(text, judge),
                    format!("criterion `{cid}` has both a `command` and `judge: true`"),
                    "a command decides its criterion and a judge is never asked what a command answers; remove `judge: true`",
                ));
            }
            (None, Some(judge)) if !judge.value => {
                return Err(at(
                    sp(text, judge),
                    format!("criterion `{cid}` has no `command` and `judge: false`: nothing can decide it"),
                    "add a `command` whose exit 0 proves it, or write `judge: true`",
                ));
            }
            _ => {}
        }
        if let Some(timeout) = &rc.timeout_seconds {
            if command.is_none() {
                return Err(at(
                    sp(text, timeout),
                    format!("criterion `{cid}` has `timeout_seconds` but no `command`"),
                    "`timeout_seconds` limits a command; remove it",
                ));
            }
            if timeout.value == 0 || timeout.value > MAX_TIMEOUT_SECONDS {
                return Err(at(
                    sp(text, timeout),
                    format!("`timeout_seconds` is {}; it must be 1 to {MAX_TIMEOUT_SECONDS}", timeout.value),
                    "write how many seconds the command may take, e.g. `timeout_seconds: 300`",
                ));
            }
        }
        criteria.push(Criterion {
            id: cid,
            text: ctext,
            command: command.map(|c| c.value.trim().to_owned()),
            must_pass: rc.must_pass.unwrap_or(true),
            timeout_seconds: rc.timeout_seconds.map(|t| t.value),
            limits: rc.limits.map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()),
            judge: rc.judge.map(|j| j.value),
        });
    }

    let mut constraints = Constraints::default();
    if let Some(raw_constraints) = raw.constraints
        && let Some(globs) = raw_constraints.value.allowed_paths
    {
        if globs.value.is_empty() {
            return Err(at(
                sp(text, &globs),
                "`allowed_paths` is empty: no file could change".to_owned(),
                "list the globs the work may touch, e.g. [\"src/**\", \"README.md\"], or remove `allowed_paths`",
            ));
        }
        let written: Vec<String> = globs.value.iter().map(|g| g.value.trim().to_owned()).collect();
        if let Err((i, why)) = AllowedPaths::new(&written) {
            let place = globs.value.get(i).map_or_else(|| sp(text, &globs), |g| sp(text, g));
            return Err(at(
                place,
                format!("allowed path `{}` {why}", written.get(i).map_or("", String::as_str)),
                "write a glob relative to the project root, e.g. \"crates/client/**\"",
            ));
        }
        constraints.allowed_paths = Some(written);
    }

    let evaluator = raw.evaluator.as_ref().map_or(EvaluatorKind::Deterministic, |e| e.value);
    let fuzzy: Vec<&str> = criteria.iter().filter(|c| c.is_fuzzy()).map(|c| c.id.as_str()).collect();
    if evaluator.uses_judge() && !fuzzy.is_empty() && raw.judge_seat.is_none() {
        let place = raw.evaluator.as_ref().map_or(0..0, |e| sp(text, e));
        return Err(at(
            place,
            format!(
                "`evaluator: {}` needs a `judge_seat` to decide {}",
                evaluator.as_str(),
                fuzzy.iter().map(|id| format!("`{id}`")).collect::<Vec<_>>().join(", ")
            ),
            "add `judge_seat: {engine: script, script: judge.toml}` (any gavel seat), or use `evaluator: deterministic`",
        ));
    }
    let judge_seat = match raw.judge_seat {
        Some(seat) => {
            if seat.value.engine == Engine::Script && seat.value.script.is_none() {
                return Err(at(
                    sp(text, &seat),
                    "the judge seat uses the script engine but names no `script`".to_owned(),
                    "add `script: judge.toml` (relative to the goal's folder)",
                ));
            }
            if let Some(timeout) = &seat.value.timeout
                && let Err(why) = gavel_runtime::workflow::parse_duration(timeout)
            {
                return Err(at(
                    sp(text, &seat),
                    format!("the judge seat's timeout `{timeout}` is not a duration: {why}"),
                    "write a duration such as \"90s\" or \"10m\"",
                ));
            }
            Some(seat.value)
        }
        None => None,
    };

    let mut stop_hook = StopHookOptions::default();
    if let Some(raw_hook) = raw.stop_hook {
        if let Some(stuck) = raw_hook.stuck_after {
            if stuck.value < 2 {
                return Err(at(
                    sp(text, &stuck),
                    format!("`stuck_after` is {}; it must be at least 2", stuck.value),
                    "it counts stop-hook evaluations in a row with the same passing criteria (default 3)",
                ));
            }
            stop_hook.stuck_after = stuck.value;
        }
        if let Some(max) = raw_hook.max_blocks {
            if max.value == 0 {
                return Err(at(
                    sp(text, &max),
                    "`max_blocks` is 0; it must be at least 1".to_owned(),
                    "it counts consecutive blocks before a re-entered hook lets the agent stop (default 10)",
                ));
            }
            stop_hook.max_blocks = max.value;
        }
    }

    Ok(GoalFile { id, title, criteria, constraints, evaluator, judge_seat, stop_hook })
}

/// The byte range a spanned value covers.
fn sp<T>(text: &str, value: &Spanned<T>) -> Range<usize> {
    span_of(text, &value.referenced)
}

/// The byte range a location covers, falling back to its line and column.
fn span_of(text: &str, loc: &serde_saphyr::Location) -> Range<usize> {
    let span = loc.span();
    if let (Some(start), Some(len)) = (span.byte_offset(), span.byte_len()) {
        let start = usize::try_from(start).unwrap_or(0);
        let len = usize::try_from(len).unwrap_or(0);
        return start..start.saturating_add(len);
    }
    let offset = gavel_domain::located::offset_of(
        text,
        usize::try_from(loc.line()).unwrap_or(1),
        usize::try_from(loc.column()).unwrap_or(1),
    );
    offset..offset
}

/// serde-saphyr's message without its own location prefix and snippet (the
/// CLI renders both), and without advice that does not apply to gavel.
fn yaml_message(rendered: &str) -> String {
    let first = rendered.lines().next().unwrap_or(rendered).trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let first = match first.strip_prefix("line ") {
        Some(rest) => rest.split_once(": ").map_or(first, |(_, message)| message),
        None => first,
    };
    first.replace(", set DuplicateKeyPolicy in Options if acceptable", "")
}

// ---- writing ---------------------------------------------------------------

/// The text of a new goal file, in the order a person reads it. Values are
/// written plain when that is unambiguous YAML, double-quoted otherwise.
pub fn render(goal: &GoalFile) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "# A gavel goal. `gavel schema goal` prints every field.");
    let _ = writeln!(out, "id: {}", scalar(&goal.id));
    let _ = writeln!(out, "title: {}", scalar(&goal.title));
    let _ = writeln!(out, "criteria:");
    for c in &goal.criteria {
        let _ = writeln!(out, "  - id: {}", scalar(&c.id));
        let _ = writeln!(out, "    text: {}", scalar(&c.text));
        match &c.command {
            Some(command) => {
                let _ = writeln!(out, "    command: {}   # exit 0 = met", scalar(command));
            }
            None => {
                let _ = writeln!(out, "    judge: true   # no command: a judge seat decides it");
            }
        }
        if !c.must_pass {
            let _ = writeln!(out, "    must_pass: false");
        }
        if let Some(timeout) = c.timeout_seconds {
            let _ = writeln!(out, "    timeout_seconds: {timeout}");
        }
        if let Some(limits) = &c.limits {
            let _ = writeln!(out, "    limits: {}", scalar(limits));
        }
    }
    if let Some(globs) = &goal.constraints.allowed_paths {
        let _ = writeln!(out, "constraints:");
        let list: Vec<String> = globs.iter().map(|g| quoted(g)).collect();
        let _ = writeln!(out, "  allowed_paths: [{}]", list.join(", "));
    }
    let _ = writeln!(
        out,
        "evaluator: {}    # deterministic | hybrid (judge fuzzy criteria) | judge",
        goal.evaluator.as_str()
    );
    if let Some(seat) = &goal.judge_seat {
        let _ = write!(out, "judge_seat: {{engine: {}", seat.engine.as_str());
        if let Some(model) = &seat.model {
            let _ = write!(out, ", model: {}", quoted(model));
        }
        if let Some(script) = &seat.script {
            let _ = write!(out, ", script: {}", quoted(script));
        }
        let _ = writeln!(out, "}}");
    }
    if !goal.stop_hook.is_default() {
        let _ = writeln!(out, "stop_hook:");
        let _ = writeln!(out, "  stuck_after: {}", goal.stop_hook.stuck_after);
        let _ = writeln!(out, "  max_blocks: {}", goal.stop_hook.max_blocks);
    }
    out
}

/// A YAML scalar: plain when it reads back as the same string, else quoted.
fn scalar(value: &str) -> String {
    let plain_safe = !value.is_empty()
        && value.trim() == value
        && !value.contains(": ")
        && !value.contains(" #")
        && !value.ends_with(':')
        && !value.chars().any(char::is_control)
        && !value.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@`~".contains(c))
        && !matches!(
            value.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        )
        && value.parse::<f64>().is_err();
    if plain_safe { value.to_owned() } else { quoted(value) }
}

/// A double-quoted YAML scalar (JSON's string escapes are YAML's too).
fn quoted(value: &str) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| format!("\"{}\"", value.replace('"', "'")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    const DOCUMENTED_EXAMPLE: &str = r#"id: retries
title: Add retries to the HTTP client
criteria:
  - id: AC1
    text: Retries on 503 with backoff
    command: cargo test -p client retries      # exit 0 = met
    must_pass: true
    timeout_seconds: 300
    limits: Does not prove behaviour under real network faults
  - id: AC2
    text: The README explains the retry setting
    judge: true                                # no command: a fuzzy criterion for a judge seat
constraints:
  allowed_paths: ["crates/client/**", "README.md"]
evaluator: deterministic    # deterministic | hybrid (judge fuzzy criteria) | judge
"#;

    fn err(text: &str) -> Located {
        *parse(Path::new("goal.yaml"), text, "retries").unwrap_err()
    }

    #[test]
    fn the_spec_example_reads() {
        let goal = parse(Path::new("goal.yaml"), DOCUMENTED_EXAMPLE, "retries").unwrap();
        assert_eq!(goal.criteria.len(), 2);
        assert_eq!(goal.criteria[0].command.as_deref(), Some("cargo test -p client retries"));
        assert_eq!(goal.criteria[0].timeout_seconds(), 300);
        assert!(goal.criteria[1].is_fuzzy());
        assert_eq!(goal.evaluator, EvaluatorKind::Deterministic);
        let allowed = AllowedPaths::new(goal.constraints.allowed_paths.as_deref().unwrap()).unwrap();
        assert!(allowed.allows("crates/client/src/lib.rs"));
        assert!(allowed.allows("README.md"));
        assert!(!allowed.allows("crates/server/src/lib.rs"));
        assert!(!allowed.allows("docs/README.md"));
    }

    #[test]
    fn render_reads_back_as_the_same_goal() {
        let goal = GoalFile {
            id: "g".into(),
            title: "yes: a title # with marks".into(),
            criteria: vec![
                Criterion {
                    id: "AC1".into(),
                    text: "true".into(),
                    command: Some("test -f a && echo 'ok: done' # c".into()),
                    must_pass: false,
                    timeout_seconds: Some(5),
                    limits: Some("- none".into()),
                    judge: None,
                },
                Criterion {
                    id: "AC2".into(),
                    text: "The README is clear".into(),
                    command: None,
                    must_pass: true,
                    timeout_seconds: None,
                    limits: None,
                    judge: Some(true),
                },
            ],
            constraints: Constraints { allowed_paths: Some(vec!["src/**".into(), "docs/".into()]) },
            evaluator: EvaluatorKind::Hybrid,
            judge_seat: Some(SeatSpec { script: Some("judge.toml".into()), ..SeatSpec::new(Engine::Script) }),
            stop_hook: StopHookOptions { stuck_after: 4, max_blocks: 2 },
        };
        let text = render(&goal);
        assert_eq!(parse(Path::new("goal.yaml"), &text, "g").unwrap(), goal, "{text}");
    }

    #[test]
    fn problems_are_located_with_a_hint() {
        let e = err("id: retries\ntitle: t\ncriteria:\n  - id: AC1\n    txt: x\n");
        assert_eq!((e.line, e.column), (5, 5), "{e}");
        assert!(e.message.contains("unknown field `txt`"), "{e}");
        assert!(!e.message.contains("line 5"), "the CLI adds the location: {e}");

        let e = err("id: retries\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n  - id: AC1\n    text: y\n");
        assert_eq!((e.line, e.column), (6, 9), "{e}");
        assert!(e.message.contains("used twice"), "{e}");

        let e = err("id: retries\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: \"  \"\n");
        assert_eq!(e.line, 6, "{e}");

        let e = err(
            "id: retries\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: c\n    judge: true\n",
        );
        assert_eq!(e.line, 7, "{e}");
        assert!(e.hint.unwrap().contains("never asked"));

        let e = err("id: other\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: c\n");
        assert_eq!((e.line, e.column), (1, 5), "{e}");

        let e = err(
            "id: retries\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: c\n    timeout_seconds: 0\n",
        );
        assert_eq!(e.line, 7, "{e}");

        let e = err(
            "id: retries\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: c\nconstraints:\n  allowed_paths: [\"ok/**\", \"../up\"]\n",
        );
        assert_eq!(e.line, 8, "{e}");
        assert!(e.message.contains("../up"), "{e}");
        for glob in [".git/hooks/**", "./.gavel/**", "sub/.GIT/config", ".gavel/"] {
            let e = err(&format!(
                "id: retries\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\n    command: c\nconstraints:\n  allowed_paths: [\"ok/**\", \"{glob}\"]\n"
            ));
            assert_eq!((e.line, e.column), (8, 28), "{glob}: {e}");
            assert!(e.message.contains("gavel's or git's own files"), "{glob}: {e}");
        }

        let e = err("id: retries\ntitle: t\ncriteria:\n  - id: AC1\n    text: x\nevaluator: hybrid\n");
        assert_eq!(e.line, 6, "{e}");
        assert!(e.message.contains("judge_seat"), "{e}");

        let e = err("id: retries\ntitle: t\ncriteria: [\n");
        assert_eq!(e.line, 3, "{e}");

        let e = err("");
        assert!(e.message.contains("empty"), "{e}");
        let e = err("- just a list\n");
        assert_eq!(e.line, 1, "{e}");
    }

    #[test]
    fn the_schema_names_every_field_the_reader_takes() {
        let schema = schema();
        let props = schema["properties"].as_object().unwrap();
        let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["constraints", "criteria", "evaluator", "id", "judge_seat", "stop_hook", "title"]);
        assert_eq!(schema["additionalProperties"], serde_json::json!(false));
        let text = schema.to_string();
        for field in ["timeout_seconds", "must_pass", "limits", "allowed_paths", "stuck_after", "max_blocks"]
        {
            assert!(text.contains(field), "{field} missing from the schema");
        }
    }
}
