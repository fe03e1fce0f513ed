//! Workflow files: parse, validate and compile into a [`Workflow`].
//!
//! Every problem is reported as a [`Located`] error: the file, line and column,
//! what is wrong and what to write instead. Nothing runs and nothing is
//! recorded until a workflow compiles.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use gavel_domain::rules::{Blocks, OnCap, Question, QuestionKind, default_questions};
use gavel_domain::{Engine, Family, Located, SeatSpec};
use gavel_fs::read::UserFile;
use gavel_seats::{BuildError, Seat, build_seat, seat_family};
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use toml::Spanned;

use crate::brief::Brief;
use crate::de::{ApproveSpec, CommandSpec, KickbacksSpec, OneOrMany, RefineSpec, SynthesiseSpec};
use crate::job::JobRef;

type S<T> = Spanned<T>;

// ---------------------------------------------------------------------------
// The file as written.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileWorkflow {
    name: S<String>,
    #[serde(default)]
    brief: Option<S<String>>,
    #[serde(default)]
    options: Option<S<FileOptions>>,
    #[serde(default)]
    seats: BTreeMap<S<String>, S<SeatSpec>>,
    #[serde(default)]
    roles: BTreeMap<S<String>, S<OneOrMany>>,
    #[serde(default)]
    stage: Vec<S<FileStage>>,
    #[serde(default)]
    node: Option<S<BTreeMap<S<String>, S<FileStage>>>>,
    #[serde(default)]
    max_kickbacks: Option<S<KickbacksSpec>>,
    #[serde(default)]
    judge: Option<S<FileJudge>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileJudge {
    #[serde(default)]
    questions: BTreeMap<S<String>, S<FileQuestion>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileQuestion {
    #[serde(rename = "type")]
    kind: S<String>,
    #[serde(default)]
    instructions: String,
    #[serde(default)]
    criteria: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileOptions {
    #[serde(default)]
    seat_timeout: Option<S<String>>,
    #[serde(default)]
    record: Option<S<String>>,
    #[serde(default)]
    max_cost_usd: Option<S<f64>>,
    #[serde(default)]
    prompts_dir: Option<S<String>>,
    #[serde(default)]
    max_parallel: Option<S<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileStage {
    #[serde(default)]
    name: Option<S<String>>,
    #[serde(default)]
    needs: Option<S<OneOrMany>>,
    #[serde(default)]
    goal_check: Option<S<String>>,
    #[serde(default)]
    job: Option<S<String>>,
    #[serde(default)]
    target: Option<S<String>>,
    #[serde(default)]
    agent: Option<S<String>>,
    #[serde(default)]
    run: Option<S<CommandSpec>>,
    #[serde(default)]
    panel: Option<S<String>>,
    #[serde(default)]
    approve: Option<S<ApproveSpec>>,
    #[serde(default)]
    writes: Option<S<Vec<S<String>>>>,
    #[serde(default)]
    desc: Option<String>,
    #[serde(default)]
    gate: Option<String>,
    #[serde(default)]
    goal: Option<S<String>>,
    #[serde(default)]
    reviewed_by: Option<S<String>>,
    #[serde(default)]
    synthesise: Option<S<SynthesiseSpec>>,
    #[serde(default)]
    refine: Option<S<RefineSpec>>,
    #[serde(default)]
    timeout: Option<S<String>>,
    #[serde(default)]
    sends_back_to: Option<S<String>>,
    #[serde(default)]
    agree: Option<S<i64>>,
    #[serde(default)]
    allow_same_family: Option<bool>,
}

// ---------------------------------------------------------------------------
// The compiled workflow.

/// A seat as the workflow declares it, built and ready to answer.
#[derive(Debug, Clone)]
pub struct SeatEntry {
    /// The seat's keys as written.
    pub spec: SeatSpec,
    /// Its family (declared, inferred, or the script's).
    pub family: Family,
    /// The seat itself.
    pub seat: Arc<dyn Seat>,
}

/// Options that apply to the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOptions {
    /// How long one seat request may take.
    pub seat_timeout: Duration,
    /// Where the record goes, relative to the workspace (default
    /// `.gavel/runs/<run-id>/events.jsonl`).
    pub record: Option<PathBuf>,
    /// The budget: the run pauses once the recorded cost passes it.
    pub max_cost_usd: Option<f64>,
    /// A folder of prompt templates that override the shipped ones.
    pub prompts_dir: Option<PathBuf>,
    /// The most nodes that run at the same time (default: every ready node).
    pub max_parallel: Option<usize>,
}

/// The default `seat_timeout`.
pub const DEFAULT_SEAT_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// The default `timeout` of a `run` stage.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(2 * 60);

/// A panel of reviewers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Panel {
    /// The role (or seat) the panel was named by.
    pub role: String,
    /// The reviewer seats, in the role's order.
    pub seats: Vec<String>,
    /// Acceptances needed.
    pub agree: usize,
    /// The seat that merges findings, when synthesis is on.
    pub synthesise: Option<String>,
}

/// How many rounds a reviewed stage gets, and who decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refine {
    /// N rounds in all.
    Rounds(u32),
    /// A judge decides, within a cap.
    Judge {
        /// The judge seat.
        judge: String,
        /// The most rounds.
        cap: u32,
        /// What the cap means.
        on_cap: OnCap,
        /// How blocks are treated.
        blocks: Blocks,
    },
}

impl Refine {
    /// The most rounds the stage may take.
    pub fn max_rounds(&self) -> u32 {
        match self {
            Refine::Rounds(n) => *n,
            Refine::Judge { cap, .. } => *cap,
        }
    }
}

/// A builder stage: a seat writes files, checked every round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildStage {
    /// The role the builder was named by.
    pub role: String,
    /// The builder seat.
    pub builder: String,
    /// The files it must produce, relative to the workspace.
    pub writes: Vec<String>,
    /// What to do.
    pub desc: Option<String>,
    /// When the work counts as done.
    pub gate: Option<String>,
    /// The goal-check seat.
    pub goal: Option<String>,
    /// The review panel.
    pub review: Option<Panel>,
    /// Rounds and judge.
    pub refine: Refine,
}

/// A command stage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunStage {
    /// What to run.
    pub command: CommandSpec,
    /// Where the command is written in the workflow file, for errors.
    pub span: Range<usize>,
    /// How long it may take.
    pub timeout: Duration,
    /// The stage that gets the output as feedback when it fails.
    pub sends_back_to: Option<String>,
}

/// A standalone panel over the files written so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PanelStage {
    /// The panel.
    pub panel: Panel,
    /// What the reviewers are asked to check.
    pub desc: Option<String>,
    /// When the work counts as done.
    pub gate: Option<String>,
    /// The stage that gets the findings.
    pub sends_back_to: Option<String>,
}

/// What a stage does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StageKind {
    /// `agent`: a builder writes files.
    Build(BuildStage),
    /// `run`: a command is a gate.
    Run(RunStage),
    /// `panel`: reviewers judge the work so far.
    Panel(PanelStage),
    /// `approve`: a person approves exact bytes.
    Approve {
        /// The files, or `None` for every file written so far.
        files: Option<Vec<String>>,
    },
    /// `job`: a node written in Rust, registered with [`Registry::job`].
    Job(JobRef),
    /// `goal_check` (graph form): a seat checks the brief against a builder
    /// node's files; unmet requirements go back to that node.
    GoalCheck {
        /// The checking seat.
        seat: String,
        /// The builder node whose work is checked.
        target: String,
    },
}

impl StageKind {
    /// The kind key's name.
    pub fn key(&self) -> &'static str {
        match self {
            StageKind::Build(_) => "agent",
            StageKind::Run(_) => "run",
            StageKind::Panel(_) => "panel",
            StageKind::Approve { .. } => "approve",
            StageKind::GoalCheck { .. } => "goal_check",
            StageKind::Job(_) => "job",
        }
    }
}

/// One stage of the workflow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stage {
    /// Its name.
    pub name: String,
    /// The stages (nodes) that must be done before it runs. In the stages
    /// form, the stage before it.
    pub needs: Vec<String>,
    /// What it does.
    pub kind: StageKind,
    /// Whether it opted out of the diversity rule.
    pub allow_same_family: bool,
}

/// The two forms of a workflow file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `[[stage]]` tables; each needs the one before it.
    Stages,
    /// `[node.NAME]` tables with `needs`.
    Graph,
}

/// The limit on kickbacks to one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kickbacks {
    /// No limit of its own (the stages form: `refine` bounds the rounds).
    Unlimited,
    /// At most this many kickbacks to any one node.
    Count(u32),
    /// A judge decides whether each kickback is worth it, within a cap.
    Judge {
        /// The judge seat.
        judge: String,
        /// The most kickbacks to one node.
        cap: u32,
    },
}

/// What a workflow built in Rust brings that a file cannot say: jobs
/// written in Rust, seats made in code, and the brief's text. A file names
/// them (`job = "name"`, a seat without `script`); the registry supplies them.
#[derive(Clone, Default)]
pub struct Registry {
    jobs: BTreeMap<String, Arc<dyn crate::job::Job>>,
    seats: BTreeMap<String, Arc<dyn Seat>>,
    brief: Option<String>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("jobs", &self.jobs.keys().collect::<Vec<_>>())
            .field("seats", &self.seats.keys().collect::<Vec<_>>())
            .field("brief", &self.brief.is_some())
            .finish()
    }
}

impl Registry {
    /// Registers a job a node names with `job = "name"`.
    pub fn job(&mut self, name: &str, job: Arc<dyn crate::job::Job>) -> &mut Self {
        self.jobs.insert(name.to_owned(), job);
        self
    }

    /// Registers a seat made in code; it answers for the `[seats]` entry of
    /// the same name.
    pub fn seat(&mut self, name: &str, seat: Arc<dyn Seat>) -> &mut Self {
        self.seats.insert(name.to_owned(), seat);
        self
    }

    /// Whether the brief's text comes from here.
    pub fn has_brief(&self) -> bool {
        self.brief.is_some()
    }

    /// Gives the brief's text (front matter included) instead of a file.
    pub fn brief_text(&mut self, text: &str) -> &mut Self {
        self.brief = Some(text.to_owned());
        self
    }
}

/// A validated workflow, ready to run.
#[derive(Debug, Clone)]
pub struct Workflow {
    /// Its `name`.
    pub name: String,
    /// The workflow file, absolute.
    pub file: PathBuf,
    /// The file's directory: relative paths in the file resolve against it.
    pub dir: PathBuf,
    /// The brief, when the workflow names one.
    pub brief: Option<Brief>,
    /// Run-wide options.
    pub options: RunOptions,
    /// Every seat by name.
    pub seats: BTreeMap<String, SeatEntry>,
    /// Every role by name, as seat names.
    pub roles: BTreeMap<String, Vec<String>>,
    /// The stages (graph nodes) in an order where every node comes after
    /// the nodes it needs.
    pub stages: Vec<Stage>,
    /// Which form the file was written in.
    pub form: Form,
    /// How often one node may be sent back to (graph form).
    pub max_kickbacks: Kickbacks,
    /// The questions a judge answers each round: the default questions and the
    /// workflow's own (`[judge.questions]`).
    pub judge_questions: Vec<Question>,
    /// SHA-256 over the workflow file and the brief, hex.
    pub digest: String,
}

impl Workflow {
    /// Reads, parses and validates a workflow file.
    pub fn load(path: &Path) -> Result<Self, Box<Located>> {
        let source = gavel_fs::read::read_text(path, UserFile::Workflow).map_err(|err| {
            Box::new(
                Located::about_file(path, err.message())
                    .with_hint(err.hint_or("give the path to a workflow .toml file")),
            )
        })?;
        Self::parse(path, &source)
    }

    /// Parses and validates a workflow from its text. `file` names the file
    /// in errors as the user gave it, and anchors relative paths.
    pub fn parse(file: &Path, source: &str) -> Result<Self, Box<Located>> {
        Self::parse_with(file, source, &Registry::default())
    }

    /// Parses a workflow whose jobs, code-made seats or brief text come from
    /// `registry` (the library face: [`crate::builder::WorkflowBuilder`]
    /// writes the file text and fills the registry).
    pub fn parse_with(file: &Path, source: &str, registry: &Registry) -> Result<Self, Box<Located>> {
        let raw: FileWorkflow = toml::from_str(source).map_err(|err| {
            let span = err.span().unwrap_or(0..0);
            let message = err.message().trim_end().to_owned();
            let hint = hint_for_toml_error(&message);
            Box::new(Located::new(file, source, span, message).with_hint(hint))
        })?;
        Compiler { file, source, registry }.compile(&raw)
    }

    /// The seat a name refers to.
    pub fn seat(&self, name: &str) -> Option<&SeatEntry> {
        self.seats.get(name)
    }

    /// Checks that every `run` stage's program can be found (`gavel check`).
    /// A program named by a path relative to the workspace may be written by
    /// an earlier stage, so only programs looked up on `PATH` are required.
    pub fn check_commands(&self, workspace: &Path) -> Result<(), Box<Located>> {
        for stage in &self.stages {
            let StageKind::Run(run) = &stage.kind else { continue };
            let CommandSpec::Argv(argv) = &run.command else { continue };
            let Some(program) = argv.first() else { continue };
            if program.contains('/') {
                continue;
            }
            let spec = gavel_process::SpawnSpec::new(program, workspace);
            if let Err(err) = gavel_process::locate(&spec) {
                let source = gavel_fs::read::read_text(&self.file, UserFile::Workflow).unwrap_or_default();
                return Err(Box::new(
                    Located::new(
                        &self.file,
                        &source,
                        run.span.clone(),
                        format!("stage `{}`: {err}", stage.name),
                    )
                    .with_hint(format!("install `{program}`, or name the program by its path")),
                ));
            }
        }
        Ok(())
    }
}

fn hint_for_toml_error(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        let (unknown, expected) = rest.split_once('`').unwrap_or((rest, ""));
        let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        let nearest = known
            .iter()
            .map(|k| (strsim::damerau_levenshtein(unknown, k), *k))
            .filter(|(d, k)| *d <= 2 || k.starts_with(unknown) || unknown.starts_with(k))
            .min();
        match nearest {
            Some((_, key)) => format!("did you mean `{key}`?"),
            None => "remove the key, or rename it to one of those listed".to_owned(),
        }
    } else if message.contains("missing field") {
        "add the missing key".to_owned()
    } else {
        "the README shows a workflow file's keys and shapes, and examples/ has whole ones".to_owned()
    }
}

struct Compiler<'a> {
    file: &'a Path,
    source: &'a str,
    registry: &'a Registry,
}

impl Compiler<'_> {
    // Errors are boxed so every `Result` on the happy path stays small.
    #[allow(clippy::unnecessary_box_returns)]
    fn err(&self, span: Range<usize>, message: impl Into<String>, hint: impl Into<String>) -> Box<Located> {
        Box::new(Located::new(self.file, self.source, span, message).with_hint(hint))
    }

    fn compile(&self, raw: &FileWorkflow) -> Result<Workflow, Box<Located>> {
        let dir = self.file.parent().map(Path::to_owned).unwrap_or_default();
        let name = raw.name.get_ref().trim().to_owned();
        check_name(&name)
            .map_err(|why| self.err(raw.name.span(), format!("workflow name {why}"), NAME_HINT))?;

        let judge_questions = self.questions(raw.judge.as_ref())?;

        let options = self.options(raw.options.as_ref(), &dir)?;
        let brief = match (&raw.brief, &self.registry.brief) {
            (_, Some(text)) => {
                let path = raw.brief.as_ref().map_or_else(|| dir.join("brief.md"), |b| dir.join(b.get_ref()));
                Some(Brief::parse(&path, text.clone())?)
            }
            (Some(brief), None) => Some(self.brief(brief, &dir)?),
            (None, None) => None,
        };
        let seats = self.seats(&raw.seats, &dir)?;
        let roles = self.roles(&raw.roles, &seats)?;
        let record =
            options.record.as_ref().and_then(|r| r.to_str()).and_then(|r| gavel_fs::write::normalise(r).ok());
        let resolver = Resolver { seats: &seats, roles: &roles, record };
        let (form, stages) = if let Some(nodes) = &raw.node {
            if !raw.stage.is_empty() {
                return Err(self.err(
                    nodes.span(),
                    "this file mixes the stages form ([[stage]]) and the graph form ([node.NAME])",
                    "use one form per file",
                ));
            }
            (Form::Graph, self.graph(nodes, &resolver, brief.as_ref())?)
        } else {
            if raw.stage.is_empty() {
                return Err(self.err(
                    0..0,
                    "the workflow has no stages",
                    "add at least one [[stage]] table, or [node.NAME] tables for the graph form",
                ));
            }
            let mut stages: Vec<Stage> = Vec::new();
            let mut names: BTreeSet<String> = BTreeSet::new();
            for stage in &raw.stage {
                let Some(name) = &stage.get_ref().name else {
                    return Err(self.err(stage.span(), "this stage has no `name`", "add `name = \"...\"`"));
                };
                if !names.insert(name.get_ref().clone()) {
                    return Err(self.err(
                        name.span(),
                        format!("two stages are named `{}`", name.get_ref()),
                        "give each stage its own name",
                    ));
                }
                // The stages form is sugar for a graph: each stage needs the one before it.
                let needs = stages.last().map(|s| vec![s.name.clone()]).unwrap_or_default();
                let node = NodeName { name: name.get_ref().clone(), span: name.span(), needs };
                let compiled = self.stage(stage, node, &stages, &resolver, brief.as_ref(), Form::Stages)?;
                stages.push(compiled);
            }
            (Form::Stages, stages)
        };
        let max_kickbacks = match (&raw.max_kickbacks, form) {
            (None, Form::Stages) => Kickbacks::Unlimited,
            (None, Form::Graph) => Kickbacks::Count(DEFAULT_MAX_KICKBACKS),
            (Some(spec), Form::Stages) => {
                return Err(self.err(
                    spec.span(),
                    "`max_kickbacks` belongs to the graph form",
                    "remove it; in the stages form, a stage's `refine` bounds its rounds",
                ));
            }
            (Some(spec), Form::Graph) => match spec.get_ref() {
                KickbacksSpec::Count(n) => match u32::try_from(*n) {
                    Ok(n) => Kickbacks::Count(n),
                    Err(_) => {
                        return Err(self.err(
                            spec.span(),
                            format!("`max_kickbacks = {n}`"),
                            "write 0 or more",
                        ));
                    }
                },
                KickbacksSpec::Judge(table) => {
                    if !seats.contains_key(&table.judge) {
                        return Err(self.err(
                            spec.span(),
                            format!("`max_kickbacks.judge` names `{}`, which is not a seat", table.judge),
                            known("seats", seats.keys()),
                        ));
                    }
                    Kickbacks::Judge { judge: table.judge.clone(), cap: table.cap.unwrap_or(6) }
                }
            },
        };

        let mut hasher = Sha256::new();
        hasher.update(self.source.as_bytes());
        hasher.update([0u8]);
        if let Some(brief) = &brief {
            hasher.update(brief.text.as_bytes());
        }
        let digest = hex::encode(hasher.finalize());

        // The record keeps the absolute path, so a resume from any folder finds it.
        let file = std::path::absolute(self.file).unwrap_or_else(|_| self.file.to_owned());
        Ok(Workflow {
            name,
            file,
            dir,
            brief,
            options,
            seats,
            roles,
            stages,
            form,
            max_kickbacks,
            judge_questions,
            digest,
        })
    }

    /// The graph form: nodes by name with `needs`, checked for unknown names
    /// and cycles, compiled in an order where needs come first.
    fn graph(
        &self,
        nodes: &S<BTreeMap<S<String>, S<FileStage>>>,
        resolver: &Resolver<'_>,
        brief: Option<&Brief>,
    ) -> Result<Vec<Stage>, Box<Located>> {
        let nodes = nodes.get_ref();
        if nodes.is_empty() {
            return Err(self.err(0..0, "the graph has no nodes", "add [node.NAME] tables"));
        }
        let mut needs: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, node) in nodes {
            check_name(name.get_ref())
                .map_err(|why| self.err(name.span(), format!("node name {why}"), NAME_HINT))?;
            if let Some(extra) = &node.get_ref().name {
                return Err(self.err(extra.span(), "a node's name is its table's key", "remove `name`"));
            }
            let mut list = Vec::new();
            if let Some(raw) = &node.get_ref().needs {
                for need in &raw.get_ref().0 {
                    if need == name.get_ref() {
                        return Err(self.err(
                            raw.span(),
                            format!("node `{need}` needs itself"),
                            "remove it from `needs`",
                        ));
                    }
                    if !nodes.keys().any(|k| k.get_ref() == need) {
                        return Err(self.err(
                            raw.span(),
                            format!("`needs` names `{need}`, which is not a node"),
                            known("nodes", nodes.keys().map(Spanned::get_ref)),
                        ));
                    }
                    if !list.contains(need) {
                        list.push(need.clone());
                    }
                }
            }
            needs.insert(name.get_ref().clone(), list);
        }
        // Kahn's order, ties broken by name, so the order is stable.
        let mut order: Vec<String> = Vec::new();
        let mut left: BTreeMap<String, Vec<String>> = needs.clone();
        while !left.is_empty() {
            let ready: Vec<String> = left
                .iter()
                .filter(|(_, n)| n.iter().all(|need| order.contains(need)))
                .map(|(name, _)| name.clone())
                .collect();
            if ready.is_empty() {
                let cycle: Vec<&str> = left.keys().map(String::as_str).collect();
                let first = nodes.keys().find(|k| left.contains_key(k.get_ref())).map_or(0..0, Spanned::span);
                return Err(self.err(
                    first,
                    format!("the nodes {} need each other in a cycle", cycle.join(", ")),
                    "a graph runs each node after its needs; send work back with `sends_back_to` or `target` instead",
                ));
            }
            for name in ready {
                left.remove(&name);
                order.push(name);
            }
        }
        let mut compiled: Vec<Stage> = Vec::new();
        for name in &order {
            let Some((key, node)) = nodes.iter().find(|(k, _)| k.get_ref() == name) else { continue };
            let ancestors = ancestors_of(name, &needs);
            let before: Vec<Stage> =
                compiled.iter().filter(|s| ancestors.contains(&s.name)).cloned().collect();
            let node_name = NodeName { name: name.clone(), span: key.span(), needs: needs[name].clone() };
            compiled.push(self.stage(node, node_name, &before, resolver, brief, Form::Graph)?);
        }
        Ok(compiled)
    }

    fn questions(&self, raw: Option<&S<FileJudge>>) -> Result<Vec<Question>, Box<Located>> {
        let mut questions = default_questions();
        let Some(raw) = raw else { return Ok(questions) };
        for (name, question) in &raw.get_ref().questions {
            check_name(name.get_ref())
                .map_err(|why| self.err(name.span(), format!("question name {why}"), NAME_HINT))?;
            let q = question.get_ref();
            let kind = match q.kind.get_ref().as_str() {
                "probability" => QuestionKind::Probability,
                "choice" => QuestionKind::Choice,
                "boolean" => QuestionKind::Boolean,
                "text" => QuestionKind::Text,
                other => {
                    return Err(self.err(
                        q.kind.span(),
                        format!("question type `{other}`"),
                        "write \"probability\", \"choice\", \"boolean\" or \"text\"",
                    ));
                }
            };
            if kind == QuestionKind::Choice && q.criteria.len() < 2 {
                return Err(self.err(
                    question.span(),
                    format!("the choice question `{}` needs at least two criteria", name.get_ref()),
                    "add `criteria = { first = \"what it means\", second = \"...\" }`",
                ));
            }
            let question = Question {
                name: name.get_ref().clone(),
                kind,
                instructions: q.instructions.clone(),
                criteria: q.criteria.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            };
            match questions.iter_mut().find(|existing| existing.name == question.name) {
                Some(existing) => *existing = question,
                None => questions.push(question),
            }
        }
        Ok(questions)
    }

    fn options(&self, raw: Option<&S<FileOptions>>, dir: &Path) -> Result<RunOptions, Box<Located>> {
        let mut options = RunOptions {
            seat_timeout: DEFAULT_SEAT_TIMEOUT,
            record: None,
            max_cost_usd: None,
            prompts_dir: None,
            max_parallel: None,
        };
        let Some(raw) = raw else { return Ok(options) };
        let raw = raw.get_ref();
        if let Some(timeout) = &raw.seat_timeout {
            options.seat_timeout = self.duration(timeout)?;
        }
        if let Some(record) = &raw.record {
            let path = PathBuf::from(record.get_ref());
            if record.get_ref().trim().is_empty() {
                return Err(self.err(
                    record.span(),
                    "`record` is empty",
                    "write a path such as \"records/run.jsonl\"",
                ));
            }
            options.record = Some(path);
        }
        if let Some(cost) = &raw.max_cost_usd {
            let value = *cost.get_ref();
            if !(value.is_finite() && value > 0.0) {
                return Err(self.err(
                    cost.span(),
                    format!("`max_cost_usd` is {value}"),
                    "write a positive number of US dollars, e.g. 5.0",
                ));
            }
            options.max_cost_usd = Some(value);
        }
        if let Some(max) = &raw.max_parallel {
            match usize::try_from(*max.get_ref()) {
                Ok(n) if n >= 1 => options.max_parallel = Some(n),
                _ => {
                    return Err(self.err(
                        max.span(),
                        format!("`max_parallel = {}`", max.get_ref()),
                        "write how many nodes may run at the same time, 1 or more",
                    ));
                }
            }
        }
        if let Some(prompts) = &raw.prompts_dir {
            let path = dir.join(prompts.get_ref());
            if !path.is_dir() {
                return Err(self.err(
                    prompts.span(),
                    format!("`prompts_dir` {} is not a folder", path.display()),
                    "give a folder, relative to this file, holding <kind>.md templates (write.md, review.md, ...)",
                ));
            }
            // Each override is read now too, so a template that is a FIFO, a
            // device or too large is refused before the run starts.
            for kind in gavel_domain::RequestKind::ALL {
                if let Err(crate::prompts::PromptError::File(located)) =
                    crate::prompts::read_override(&path, kind)
                {
                    return Err(located);
                }
            }
            options.prompts_dir = Some(path);
        }
        Ok(options)
    }

    fn duration(&self, value: &S<String>) -> Result<Duration, Box<Located>> {
        parse_duration(value.get_ref()).map_err(|why| {
            self.err(
                value.span(),
                format!("`{}` is not a duration: {why}", value.get_ref()),
                "write a duration such as \"90s\", \"10m\" or \"1h 30m\"",
            )
        })
    }

    fn brief(&self, value: &S<String>, dir: &Path) -> Result<Brief, Box<Located>> {
        let path = dir.join(value.get_ref());
        match Brief::load(&path) {
            Err(_) if !path.exists() => Err(self.err(
                value.span(),
                format!("the brief {} does not exist", path.display()),
                "`brief` is a Markdown file, relative to this workflow file",
            )),
            loaded => loaded,
        }
    }

    fn seats(
        &self,
        raw: &BTreeMap<S<String>, S<SeatSpec>>,
        dir: &Path,
    ) -> Result<BTreeMap<String, SeatEntry>, Box<Located>> {
        let mut seats = BTreeMap::new();
        for (name, spec) in raw {
            let span = name.span();
            check_name(name.get_ref())
                .map_err(|why| self.err(span.clone(), format!("seat name {why}"), NAME_HINT))?;
            let spec_ref = spec.get_ref();
            if let Some(seat) = self.registry.seats.get(name.get_ref()) {
                let family = seat_family(spec_ref).unwrap_or_else(|| seat.family().clone());
                seats.insert(
                    name.get_ref().clone(),
                    SeatEntry { spec: spec_ref.clone(), family, seat: Arc::clone(seat) },
                );
                continue;
            }
            if spec_ref.engine == Engine::Script && spec_ref.script.is_none() {
                return Err(self.err(
                    spec.span(),
                    format!("seat `{}` uses the script engine but names no script", name.get_ref()),
                    format!("add `script = \"seats/{}.toml\"` (relative to this file)", name.get_ref()),
                ));
            }
            // A price is a user-given number like `max_cost_usd`: TOML reads
            // `nan` and `inf`, which would make every request's cost unusable.
            if let Some(price) = &spec_ref.price
                && [price.input, price.output].iter().any(|p| !p.is_finite() || *p < 0.0)
            {
                return Err(self.err(
                    spec.span(),
                    format!(
                        "seat `{}` has `price = {{ input = {}, output = {} }}`",
                        name.get_ref(),
                        price.input,
                        price.output
                    ),
                    "write what the model costs in US dollars per million tokens, 0 or more, e.g. price = { input = 3.0, output = 15.0 }",
                ));
            }
            if spec_ref.engine != Engine::Script && spec_ref.model.is_none() {
                return Err(self.err(
                    spec.span(),
                    format!("seat `{}` names no model", name.get_ref()),
                    "add `model = \"...\"`, e.g. model = \"claude-sonnet-4-5\"",
                ));
            }
            let built = build_seat(name.get_ref(), spec_ref, dir).map_err(|err| match err {
                BuildError::File(located) => located,
                other @ BuildError::Unsupported { .. } => self.err(
                    spec.span(),
                    other.to_string(),
                    "this build cannot run that engine; use another engine for this seat",
                ),
                BuildError::Invalid { seat, message, key } => self.err(
                    spec.span(),
                    format!("seat `{seat}`: {message}"),
                    format!("fix the seat's `{key}` key"),
                ),
            })?;
            let family = match seat_family(spec_ref) {
                Some(family) => family,
                None if spec_ref.engine == Engine::Script => built.family().clone(),
                None => {
                    return Err(self.err(
                        spec.span(),
                        format!(
                            "cannot tell the model family of seat `{}` from its model `{}`",
                            name.get_ref(),
                            spec_ref.model.as_deref().unwrap_or_default()
                        ),
                        "add `family = \"...\"` (anthropic, openai, google, meta, mistral, qwen, deepseek, or a name of yours)",
                    ));
                }
            };
            seats.insert(
                name.get_ref().clone(),
                SeatEntry { spec: spec_ref.clone(), family, seat: Arc::from(built) },
            );
        }
        Ok(seats)
    }

    fn roles(
        &self,
        raw: &BTreeMap<S<String>, S<OneOrMany>>,
        seats: &BTreeMap<String, SeatEntry>,
    ) -> Result<BTreeMap<String, Vec<String>>, Box<Located>> {
        let mut roles = BTreeMap::new();
        for (name, members) in raw {
            check_name(name.get_ref())
                .map_err(|why| self.err(name.span(), format!("role name {why}"), NAME_HINT))?;
            if seats.contains_key(name.get_ref()) {
                return Err(self.err(
                    name.span(),
                    format!("`{}` is both a seat and a role", name.get_ref()),
                    "rename the role; a seat's name already works as a role of one",
                ));
            }
            let list = &members.get_ref().0;
            if list.is_empty() {
                return Err(self.err(
                    members.span(),
                    format!("role `{}` names no seats", name.get_ref()),
                    "list at least one seat",
                ));
            }
            let mut seen = BTreeSet::new();
            for seat in list {
                if !seats.contains_key(seat) {
                    return Err(self.err(
                        members.span(),
                        format!("role `{}` names `{seat}`, which is not a seat", name.get_ref()),
                        known("seats", seats.keys()),
                    ));
                }
                if !seen.insert(seat) {
                    return Err(self.err(
                        members.span(),
                        format!("role `{}` names `{seat}` twice", name.get_ref()),
                        "list each seat once",
                    ));
                }
            }
            roles.insert(name.get_ref().clone(), list.clone());
        }
        Ok(roles)
    }

    fn stage(
        &self,
        raw: &S<FileStage>,
        node: NodeName,
        before: &[Stage],
        resolver: &Resolver<'_>,
        brief: Option<&Brief>,
        form: Form,
    ) -> Result<Stage, Box<Located>> {
        let span = raw.span();
        let raw = raw.get_ref();
        let NodeName { name, span: name_span, needs } = node;
        check_name(&name)
            .map_err(|why| self.err(name_span.clone(), format!("stage name {why}"), NAME_HINT))?;

        if form == Form::Stages {
            for (key, spanned) in [
                ("needs", raw.needs.as_ref().map(Spanned::span)),
                ("goal_check", raw.goal_check.as_ref().map(Spanned::span)),
                ("target", raw.target.as_ref().map(Spanned::span)),
            ] {
                if let Some(at) = spanned {
                    return Err(self.err(
                        at,
                        format!("`{key}` belongs to the graph form ([node.NAME])"),
                        "in the stages form each stage runs after the one before it; use `goal = \"seat\"` on a builder stage for a goal check",
                    ));
                }
            }
        }
        let kinds: Vec<&str> = [
            raw.agent.as_ref().map(|_| "agent"),
            raw.run.as_ref().map(|_| "run"),
            raw.panel.as_ref().map(|_| "panel"),
            raw.approve.as_ref().map(|_| "approve"),
            raw.goal_check.as_ref().map(|_| "goal_check"),
            raw.job.as_ref().map(|_| "job"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if kinds.len() != 1 {
            let message = if kinds.is_empty() {
                format!("stage `{name}` has no kind key")
            } else {
                format!("stage `{name}` has {} kind keys ({})", kinds.len(), kinds.join(", "))
            };
            return Err(self.err(
                span,
                message,
                "give each stage exactly one of `agent`, `run`, `panel`, `approve`, `goal_check`, `job`",
            ));
        }
        let sends_back_to = match &raw.sends_back_to {
            Some(target) => {
                if !before.iter().any(|s| &s.name == target.get_ref()) {
                    return Err(self.err(
                        target.span(),
                        format!(
                            "`sends_back_to` names `{}`, which is not an earlier stage (a node this one needs, directly or not)",
                            target.get_ref()
                        ),
                        known("earlier stages", before.iter().map(|s| &s.name)),
                    ));
                }
                Some(target.get_ref().clone())
            }
            None => None,
        };
        let kind = if let Some(agent) = &raw.agent {
            let seats = resolver.resolve(self, agent)?;
            if seats.len() != 1 {
                return Err(self.err(
                    agent.span(),
                    format!("the builder role `{}` names {} seats", agent.get_ref(), seats.len()),
                    "a builder is one seat: name a seat or a role of one",
                ));
            }
            let writes = match &raw.writes {
                Some(list) => {
                    let mut out = Vec::new();
                    for path in list.get_ref() {
                        check_relative(path.get_ref()).map_err(|why| {
                            self.err(path.span(), format!("`{}` {why}", path.get_ref()), WRITES_HINT)
                        })?;
                        if let Some(record) = &resolver.record {
                            let normal = gavel_fs::write::normalise(path.get_ref()).unwrap_or_default();
                            if normal == *record || normal == format!("{record}.lock") {
                                return Err(self.err(
                                    path.span(),
                                    format!(
                                        "`{}` is the run's record (`[options] record`): no seat may write it",
                                        path.get_ref()
                                    ),
                                    "write the stage's files elsewhere, or keep the record under another name",
                                ));
                            }
                        }
                        out.push(path.get_ref().clone());
                    }
                    out
                }
                None => brief.map(|b| b.files.clone()).unwrap_or_default(),
            };
            if writes.is_empty() {
                return Err(self.err(
                    name_span.clone(),
                    format!("stage `{name}` writes no files"),
                    "add `writes = [\"path\"]` to the stage, or `files: [path]` to the brief's front matter",
                ));
            }
            if brief.is_none() {
                return Err(self.err(
                    name_span.clone(),
                    format!("stage `{name}` builds, but the workflow has no brief"),
                    "add `brief = \"briefs/task.md\"` at the top of the file",
                ));
            }
            let goal = match &raw.goal {
                Some(goal) => Some(resolver.one_seat(self, goal, "goal check")?),
                None => None,
            };
            let review = match &raw.reviewed_by {
                Some(role) => Some(self.panel(role, raw, resolver)?),
                None => None,
            };
            let refine = self.refine(raw.refine.as_ref(), resolver)?;
            StageKind::Build(BuildStage {
                role: agent.get_ref().clone(),
                builder: seats[0].clone(),
                writes,
                desc: raw.desc.clone(),
                gate: raw.gate.clone(),
                goal,
                review,
                refine,
            })
        } else if let Some(run) = &raw.run {
            let timeout = match &raw.timeout {
                Some(t) => self.duration(t)?,
                None => DEFAULT_RUN_TIMEOUT,
            };
            StageKind::Run(RunStage {
                command: run.get_ref().clone(),
                span: run.span(),
                timeout,
                sends_back_to: sends_back_to.clone(),
            })
        } else if let Some(panel) = &raw.panel {
            StageKind::Panel(PanelStage {
                panel: self.panel(panel, raw, resolver)?,
                desc: raw.desc.clone(),
                gate: raw.gate.clone(),
                sends_back_to: sends_back_to.clone(),
            })
        } else if let Some(approve) = &raw.approve {
            let files = match approve.get_ref() {
                ApproveSpec::All => None,
                ApproveSpec::Files(files) => {
                    for file in files {
                        check_relative(file).map_err(|why| {
                            self.err(
                                approve.span(),
                                format!("`{file}` {why}"),
                                "list paths relative to the workspace",
                            )
                        })?;
                    }
                    Some(files.clone())
                }
            };
            StageKind::Approve { files }
        } else if let Some(job) = &raw.job {
            let Some(found) = self.registry.jobs.get(job.get_ref()) else {
                return Err(self.err(
                    job.span(),
                    format!("no job named `{}` is registered", job.get_ref()),
                    "jobs are written in Rust and registered with `Registry::job` (or `WorkflowBuilder::job`); a workflow file alone cannot define one",
                ));
            };
            StageKind::Job(JobRef { name: job.get_ref().clone(), job: Arc::clone(found) })
        } else if let Some(goal_check) = &raw.goal_check {
            let seat = resolver.one_seat(self, goal_check, "goal check")?;
            let Some(target) = &raw.target else {
                return Err(self.err(
                    goal_check.span(),
                    format!("the goal check `{name}` names no `target`"),
                    "add `target = \"<the builder node>\"`: unmet requirements go back to it",
                ));
            };
            let builder = match before.iter().find(|s| &s.name == target.get_ref()).map(|s| &s.kind) {
                Some(StageKind::Build(build)) => Some(build.builder.clone()),
                // A job writes what the brief names; the checker reads those.
                Some(StageKind::Job(_)) => None,
                _ => {
                    return Err(self.err(
                        target.span(),
                        format!(
                            "`target` names `{}`, which is not a builder or job node this one needs",
                            target.get_ref()
                        ),
                        known(
                            "builder and job nodes it needs",
                            before
                                .iter()
                                .filter(|s| matches!(s.kind, StageKind::Build(_) | StageKind::Job(_)))
                                .map(|s| &s.name),
                        ),
                    ));
                }
            };
            let family = |seat: &str| {
                resolver.seats.get(seat).map(|e| e.family.as_str().to_owned()).unwrap_or_default()
            };
            if let Some(builder) = &builder
                && !raw.allow_same_family.unwrap_or(false)
                && family(&seat) == family(builder)
            {
                return Err(self.err(
                    goal_check.span(),
                    format!(
                        "node `{name}`: the goal check `{seat}` and the builder `{builder}` are both of family {}; the check would not be a second opinion",
                        family(&seat)
                    ),
                    "choose a seat from another model family, or set `allow_same_family = true` on the node (the run records it)",
                ));
            }
            StageKind::GoalCheck { seat, target: target.get_ref().clone() }
        } else {
            return Err(self.err(
                span,
                format!("stage `{name}` has no kind key"),
                "give each stage exactly one of `agent`, `run`, `panel`, `approve`",
            ));
        };
        self.misplaced_keys(raw, &kind)?;
        let allow_same_family = raw.allow_same_family.unwrap_or(false);
        if !allow_same_family {
            self.diversity(raw, &name, &kind, before, resolver)?;
        }
        Ok(Stage { name, needs, kind, allow_same_family })
    }

    /// The diversity rule: a reviewer never shares a family with
    /// the seat whose work it reviews, two reviewers of one panel never
    /// share one, and the goal check never shares the builder's.
    fn diversity(
        &self,
        raw: &FileStage,
        name: &str,
        kind: &StageKind,
        before: &[Stage],
        resolver: &Resolver<'_>,
    ) -> Result<(), Box<Located>> {
        let family =
            |seat: &str| resolver.seats.get(seat).map(|e| e.family.as_str().to_owned()).unwrap_or_default();
        let hint = "choose a seat from another model family, or set `allow_same_family = true` on the stage (the run records it)";
        let (builders, panel, panel_span): (Vec<String>, Option<&Panel>, Range<usize>) = match kind {
            StageKind::Build(build) => {
                if let (Some(goal), Some(span)) = (&build.goal, raw.goal.as_ref().map(Spanned::span))
                    && family(goal) == family(&build.builder)
                {
                    return Err(self.err(
                        span,
                        format!(
                            "stage `{name}`: the goal check `{goal}` and the builder `{}` are both of family {}; the check would not be a second opinion",
                            build.builder,
                            family(goal)
                        ),
                        hint,
                    ));
                }
                let span = raw.reviewed_by.as_ref().map_or(0..0, Spanned::span);
                (vec![build.builder.clone()], build.review.as_ref(), span)
            }
            StageKind::Panel(panel) => {
                let builders = before
                    .iter()
                    .filter_map(|s| match &s.kind {
                        StageKind::Build(b) => Some(b.builder.clone()),
                        _ => None,
                    })
                    .collect();
                let span = raw.panel.as_ref().map_or(0..0, Spanned::span);
                (builders, Some(&panel.panel), span)
            }
            // A goal-check node's family was checked where it was compiled.
            StageKind::Run(_)
            | StageKind::Approve { .. }
            | StageKind::GoalCheck { .. }
            | StageKind::Job(_) => {
                return Ok(());
            }
        };
        let Some(panel) = panel else { return Ok(()) };
        for (i, reviewer) in panel.seats.iter().enumerate() {
            if let Some(builder) = builders.iter().find(|b| family(b) == family(reviewer)) {
                return Err(self.err(
                    panel_span,
                    format!(
                        "stage `{name}`: reviewer `{reviewer}` and the builder `{builder}` are both of family {}; a reviewer must not share a family with the seat whose work it reviews",
                        family(reviewer)
                    ),
                    hint,
                ));
            }
            if let Some(other) = panel.seats[..i].iter().find(|o| family(o) == family(reviewer)) {
                return Err(self.err(
                    panel_span,
                    format!(
                        "stage `{name}`: reviewers `{other}` and `{reviewer}` are both of family {}; two reviewers of one family are one opinion counted twice",
                        family(reviewer)
                    ),
                    hint,
                ));
            }
        }
        Ok(())
    }

    /// Keys that do not belong to the stage's kind are errors, not silently ignored.
    fn misplaced_keys(&self, raw: &FileStage, kind: &StageKind) -> Result<(), Box<Located>> {
        let is_build = matches!(kind, StageKind::Build(_));
        let is_run = matches!(kind, StageKind::Run(_));
        let is_panel = matches!(kind, StageKind::Panel(_));
        let is_goal_check = matches!(kind, StageKind::GoalCheck { .. });
        let checks: [(&str, Option<Range<usize>>, bool); 10] = [
            ("target", raw.target.as_ref().map(Spanned::span), is_goal_check),
            ("writes", raw.writes.as_ref().map(Spanned::span), is_build),
            ("goal", raw.goal.as_ref().map(Spanned::span), is_build),
            ("reviewed_by", raw.reviewed_by.as_ref().map(Spanned::span), is_build),
            ("refine", raw.refine.as_ref().map(Spanned::span), is_build),
            ("timeout", raw.timeout.as_ref().map(Spanned::span), is_run),
            ("sends_back_to", raw.sends_back_to.as_ref().map(Spanned::span), is_run || is_panel),
            ("agree", raw.agree.as_ref().map(Spanned::span), is_panel || raw.reviewed_by.is_some()),
            ("synthesise", raw.synthesise.as_ref().map(Spanned::span), is_panel || raw.reviewed_by.is_some()),
            ("desc", None, true),
        ];
        for (key, span, allowed) in checks {
            if let (Some(span), false) = (span, allowed) {
                return Err(self.err(
                    span,
                    format!("`{key}` does not apply to a `{}` stage", kind.key()),
                    "remove it, or move it to a stage it applies to",
                ));
            }
        }
        Ok(())
    }

    fn panel(
        &self,
        role: &S<String>,
        raw: &FileStage,
        resolver: &Resolver<'_>,
    ) -> Result<Panel, Box<Located>> {
        let seats = resolver.resolve(self, role)?;
        let agree = match &raw.agree {
            Some(agree) => {
                let n = *agree.get_ref();
                let max = seats.len();
                match usize::try_from(n) {
                    Ok(n) if (1..=max).contains(&n) => n,
                    _ => {
                        return Err(self.err(
                            agree.span(),
                            format!("`agree = {n}` with {max} reviewers"),
                            format!("write a number from 1 to {max}"),
                        ));
                    }
                }
            }
            None => seats.len(),
        };
        let synthesise = match raw.synthesise.as_ref().map(|s| (s.span(), s.get_ref())) {
            None | Some((_, SynthesiseSpec::Off)) => None,
            Some((_, SynthesiseSpec::FirstReviewer)) => seats.first().cloned(),
            Some((span, SynthesiseSpec::Seat(seat))) => {
                if !resolver.seats.contains_key(seat) {
                    return Err(self.err(
                        span,
                        format!("`synthesise` names `{seat}`, which is not a seat"),
                        known("seats", resolver.seats.keys()),
                    ));
                }
                Some(seat.clone())
            }
        };
        Ok(Panel { role: role.get_ref().clone(), seats, agree, synthesise })
    }

    fn refine(&self, raw: Option<&S<RefineSpec>>, resolver: &Resolver<'_>) -> Result<Refine, Box<Located>> {
        let Some(raw) = raw else { return Ok(Refine::Rounds(1)) };
        match raw.get_ref() {
            RefineSpec::Rounds(n) => match u32::try_from(*n) {
                Ok(n) if (1..=100).contains(&n) => Ok(Refine::Rounds(n)),
                _ => Err(self.err(
                    raw.span(),
                    format!("`refine = {n}`"),
                    "write the number of rounds in all, from 1 to 100",
                )),
            },
            RefineSpec::Judge(table) => {
                if !resolver.seats.contains_key(&table.judge) {
                    return Err(self.err(
                        raw.span(),
                        format!("`refine.judge` names `{}`, which is not a seat", table.judge),
                        known("seats", resolver.seats.keys()),
                    ));
                }
                let cap = table.cap.unwrap_or(6);
                if !(1..=100).contains(&cap) {
                    return Err(self.err(
                        raw.span(),
                        format!("`cap = {cap}`"),
                        "write the most rounds, from 1 to 100",
                    ));
                }
                let on_cap = match table.on_cap.as_deref() {
                    None | Some("fail") => OnCap::Fail,
                    Some("pass") => OnCap::Pass,
                    Some(other) => {
                        return Err(self.err(
                            raw.span(),
                            format!("`on_cap = \"{other}\"`"),
                            "write \"fail\" or \"pass\"",
                        ));
                    }
                };
                let blocks = match table.blocks.as_deref() {
                    None | Some("judge") => Blocks::Judge,
                    Some("always-back") => Blocks::AlwaysBack,
                    Some(other) => {
                        return Err(self.err(
                            raw.span(),
                            format!("`blocks = \"{other}\"`"),
                            "write \"judge\" or \"always-back\"",
                        ));
                    }
                };
                Ok(Refine::Judge { judge: table.judge.clone(), cap, on_cap, blocks })
            }
        }
    }
}

/// A stage's or node's name, where it is written, and what it needs.
struct NodeName {
    name: String,
    span: Range<usize>,
    needs: Vec<String>,
}

/// The default `max_kickbacks` of a graph.
pub const DEFAULT_MAX_KICKBACKS: u32 = 3;

/// Every node `name` needs, directly or not.
fn ancestors_of(name: &str, needs: &BTreeMap<String, Vec<String>>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&String> = needs.get(name).map(|n| n.iter().collect()).unwrap_or_default();
    while let Some(next) = stack.pop() {
        if seen.insert(next.clone()) {
            stack.extend(needs.get(next).into_iter().flatten());
        }
    }
    seen
}

struct Resolver<'a> {
    seats: &'a BTreeMap<String, SeatEntry>,
    roles: &'a BTreeMap<String, Vec<String>>,
    /// `[options] record` in plain relative form, when it lies in the
    /// workspace: no stage may write it (or its lock).
    record: Option<String>,
}

impl Resolver<'_> {
    /// A role name, or a seat's name as a role of one.
    fn resolve(&self, c: &Compiler<'_>, name: &S<String>) -> Result<Vec<String>, Box<Located>> {
        if let Some(seats) = self.roles.get(name.get_ref()) {
            return Ok(seats.clone());
        }
        if self.seats.contains_key(name.get_ref()) {
            return Ok(vec![name.get_ref().clone()]);
        }
        Err(c.err(
            name.span(),
            format!("`{}` is neither a role nor a seat", name.get_ref()),
            known("roles and seats", self.roles.keys().chain(self.seats.keys())),
        ))
    }

    fn one_seat(&self, c: &Compiler<'_>, name: &S<String>, what: &str) -> Result<String, Box<Located>> {
        let seats = self.resolve(c, name)?;
        match seats.as_slice() {
            [one] => Ok(one.clone()),
            _ => Err(c.err(
                name.span(),
                format!("the {what} `{}` names {} seats", name.get_ref(), seats.len()),
                format!("the {what} is one seat"),
            )),
        }
    }
}

const NAME_HINT: &str = "use letters, digits, `-`, `_` and `.`, starting with a letter or digit";

fn check_name(name: &str) -> Result<(), &'static str> {
    let mut chars = name.chars();
    match chars.next() {
        None => Err("is empty"),
        Some(c) if !c.is_ascii_alphanumeric() => Err("must start with a letter or digit"),
        _ if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) => {
            Err("has characters other than letters, digits, `-`, `_` and `.`")
        }
        _ if name.len() > 64 => Err("is longer than 64 characters"),
        _ => Ok(()),
    }
}

/// A workspace path must stay inside the workspace.
pub fn check_relative(path: &str) -> Result<(), String> {
    use gavel_fs::write::Refusal;
    // The same rule the write path applies when a seat's files land: a
    // `writes` entry it would refuse is refused here, before anything runs.
    gavel_fs::write::normalise(path).map(drop).map_err(|why| match why {
        Refusal::Empty => "is empty: it names no file".to_owned(),
        Refusal::Absolute => "is absolute; it must stay inside the workspace".to_owned(),
        Refusal::ParentDir => "leaves the workspace with `..`".to_owned(),
        Refusal::Reserved(part) => {
            format!("lies under `{part}/`, which holds gavel's or git's own files; no seat may write there")
        }
        other => other.to_string(),
    })
}

/// What a `writes` entry (or a brief's `files` entry) may be, for hints.
pub const WRITES_HINT: &str =
    "write a path relative to the workspace, outside `.gavel/` and `.git/`, e.g. \"docs/page.md\"";

fn known<'a>(what: &str, names: impl Iterator<Item = &'a String>) -> String {
    let names: Vec<&str> = names.map(String::as_str).collect();
    if names.is_empty() {
        format!("there are no {what} yet; declare one first")
    } else {
        format!("known {what}: {}", names.join(", "))
    }
}

/// Parses a duration such as `90s`, `10m`, `1h 30m` (or ISO 8601 `PT10M`).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let parsed: jiff::SignedDuration = text.trim().parse().map_err(|e: jiff::Error| e.to_string())?;
    if parsed.is_negative() || parsed.is_zero() {
        return Err("it must be longer than zero".to_owned());
    }
    let duration = Duration::try_from(parsed).map_err(|e| e.to_string())?;
    if duration > MAX_DURATION {
        return Err("it is longer than a year; write a shorter limit such as \"2h\"".to_owned());
    }
    Ok(duration)
}

/// The longest timeout a workflow may give: a year. Longer is a typo, and
/// past the clock's range it could not be kept at all.
const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 60 * 60);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_positive_and_at_most_a_year() {
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("8760h"), Ok(MAX_DURATION));
        for bad in ["0s", "-1s", "8761h", "9223372036854775807s", "2562047788015215h", "soon", ""] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert!(parse_duration("9223372036854775807s").is_err_and(|e| e.contains("a year")));
    }
}
