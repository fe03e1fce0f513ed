//! The library face: build a workflow in Rust instead of a file.
//!
//! [`WorkflowBuilder`] says everything the file formats say (workflow, seats,
//! roles, stages or graph nodes and their keys, options, `max_kickbacks`),
//! plus what only code can: jobs written in Rust ([`Node::job`]), seats made in
//! code, and the brief's text. It writes the workflow's file text and
//! compiles it with the same compiler as `gavel run`, so the file formats and
//! the builder compile to the same graph, with the same checks (diversity,
//! references, cycles) and the same errors.
//!
//! ```
//! use gavel_runtime::builder::{Node, WorkflowBuilder};
//! use gavel_runtime::{fn_job, JobOutcome, Silent, StartRequest, Status};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let workspace = tempfile::tempdir()?;
//! let workflow = WorkflowBuilder::new("hello-job")
//!     .node(
//!         "write",
//!         Node::job(fn_job("write", |ctx| {
//!             std::fs::write(ctx.workspace.join("hello.txt"), "hello\n").map_err(|e| e.to_string())?;
//!             Ok(JobOutcome::Pass("wrote hello.txt".into()))
//!         })),
//!     )
//!     .node(
//!         "check",
//!         Node::job(fn_job("check", |ctx| {
//!             let ok = ctx.workspace.join("hello.txt").exists();
//!             Ok(if ok { JobOutcome::Pass("found it".into()) } else { JobOutcome::Fail("missing".into()) })
//!         }))
//!         .needs(["write"]),
//!     )
//!     .build()?;
//! let request = StartRequest {
//!     workflow,
//!     workspace: workspace.path().to_owned(),
//!     run_id: Some("doc".into()),
//!     record: None,
//!     approver: None,
//! };
//! let outcome = tokio::runtime::Builder::new_current_thread()
//!     .enable_all()
//!     .build()?
//!     .block_on(gavel_runtime::start(request, &Silent))?;
//! assert_eq!(outcome.status, Status::Pass);
//! # Ok(())
//! # }
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gavel_domain::{Located, SeatSpec};
use gavel_seats::Seat;

use crate::job::Job;
use crate::workflow::{Registry, Workflow};

/// One value of a key, written as TOML.
#[derive(Debug, Clone)]
enum Value {
    Text(String),
    List(Vec<String>),
    Int(i64),
    Float(f64),
    Bool(bool),
    /// Already TOML (an inline table).
    Raw(String),
}

impl Value {
    fn toml(&self) -> String {
        match self {
            // A JSON string literal is a valid TOML basic string.
            Value::Text(text) => quote(text),
            Value::List(items) => {
                format!("[{}]", items.iter().map(|i| quote(i)).collect::<Vec<_>>().join(", "))
            }
            Value::Int(n) => n.to_string(),
            Value::Float(x) => format!("{x:?}"),
            Value::Bool(b) => b.to_string(),
            Value::Raw(raw) => raw.clone(),
        }
    }
}

fn quote(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

/// One stage or graph node: its kind key and the keys that go with it.
#[derive(Clone, Default)]
pub struct Node {
    keys: Vec<(&'static str, Value)>,
    job: Option<Arc<dyn Job>>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node").field("keys", &self.keys).field("job", &self.job.is_some()).finish()
    }
}

impl Node {
    fn with(mut self, key: &'static str, value: Value) -> Self {
        self.keys.retain(|(k, _)| *k != key);
        self.keys.push((key, value));
        self
    }

    /// `agent = role`: a builder writes files.
    pub fn agent(role: &str) -> Self {
        Self::default().with("agent", Value::Text(role.to_owned()))
    }

    /// `run = [argv]`: a command is a gate.
    pub fn run<I: IntoIterator<Item = S>, S: Into<String>>(argv: I) -> Self {
        Self::default().with("run", Value::List(argv.into_iter().map(Into::into).collect()))
    }

    /// `run = "shell line"`, for when a pipeline is essential.
    pub fn run_shell(line: &str) -> Self {
        Self::default().with("run", Value::Text(line.to_owned()))
    }

    /// `panel = role`: reviewers read the work so far.
    pub fn panel(role: &str) -> Self {
        Self::default().with("panel", Value::Text(role.to_owned()))
    }

    /// `approve = [files]`: a person approves exact bytes (empty: every file written).
    pub fn approve<I: IntoIterator<Item = S>, S: Into<String>>(files: I) -> Self {
        Self::default().with("approve", Value::List(files.into_iter().map(Into::into).collect()))
    }

    /// `goal_check = seat`, `target = node` (graph form).
    pub fn goal_check(seat: &str, target: &str) -> Self {
        Self::default()
            .with("goal_check", Value::Text(seat.to_owned()))
            .with("target", Value::Text(target.to_owned()))
    }

    /// A node written in Rust (the seeds' `fnJob`).
    pub fn job(job: Arc<dyn Job>) -> Self {
        Self { keys: Vec::new(), job: Some(job) }
    }

    /// `needs = [...]` (graph form).
    #[must_use]
    pub fn needs<I: IntoIterator<Item = S>, S: Into<String>>(self, nodes: I) -> Self {
        self.with("needs", Value::List(nodes.into_iter().map(Into::into).collect()))
    }

    /// `writes = [...]`.
    #[must_use]
    pub fn writes<I: IntoIterator<Item = S>, S: Into<String>>(self, files: I) -> Self {
        self.with("writes", Value::List(files.into_iter().map(Into::into).collect()))
    }

    /// `desc = "..."`.
    #[must_use]
    pub fn desc(self, text: &str) -> Self {
        self.with("desc", Value::Text(text.to_owned()))
    }

    /// `gate = "..."`.
    #[must_use]
    pub fn gate(self, text: &str) -> Self {
        self.with("gate", Value::Text(text.to_owned()))
    }

    /// `goal = seat`: a goal check every round.
    #[must_use]
    pub fn goal(self, seat: &str) -> Self {
        self.with("goal", Value::Text(seat.to_owned()))
    }

    /// `reviewed_by = role`.
    #[must_use]
    pub fn reviewed_by(self, role: &str) -> Self {
        self.with("reviewed_by", Value::Text(role.to_owned()))
    }

    /// `synthesise = true` (merge with the first reviewer's seat).
    #[must_use]
    pub fn synthesise(self) -> Self {
        self.with("synthesise", Value::Bool(true))
    }

    /// `synthesise = "seat"`.
    #[must_use]
    pub fn synthesise_with(self, seat: &str) -> Self {
        self.with("synthesise", Value::Text(seat.to_owned()))
    }

    /// `refine = N`.
    #[must_use]
    pub fn refine(self, rounds: u32) -> Self {
        self.with("refine", Value::Int(i64::from(rounds)))
    }

    /// `refine = { judge, cap, on_cap, blocks }` (`on_cap`: "fail" or "pass";
    /// `blocks`: "judge" or "always-back").
    #[must_use]
    pub fn refine_judge(self, judge: &str, cap: u32, on_cap: &str, blocks: &str) -> Self {
        let table = format!(
            "{{ judge = {}, cap = {cap}, on_cap = {}, blocks = {} }}",
            quote(judge),
            quote(on_cap),
            quote(blocks)
        );
        self.with("refine", Value::Raw(table))
    }

    /// `timeout = "2m"` for a `run` node.
    #[must_use]
    pub fn timeout(self, duration: &str) -> Self {
        self.with("timeout", Value::Text(duration.to_owned()))
    }

    /// `sends_back_to = node`.
    #[must_use]
    pub fn sends_back_to(self, node: &str) -> Self {
        self.with("sends_back_to", Value::Text(node.to_owned()))
    }

    /// `agree = N`.
    #[must_use]
    pub fn agree(self, acceptances: u32) -> Self {
        self.with("agree", Value::Int(i64::from(acceptances)))
    }

    /// `allow_same_family = true` (recorded in the run).
    #[must_use]
    pub fn allow_same_family(self) -> Self {
        self.with("allow_same_family", Value::Bool(true))
    }
}

/// Builds a [`Workflow`] in code. Stages (added with [`Self::stage`]) make
/// the stages form; nodes (added with [`Self::node`]) make the graph form.
#[derive(Debug, Default)]
pub struct WorkflowBuilder {
    name: String,
    dir: Option<PathBuf>,
    brief_file: Option<String>,
    top: Vec<(&'static str, Value)>,
    options: Vec<(&'static str, Value)>,
    seats: Vec<(String, String)>,
    roles: Vec<(String, Vec<String>)>,
    stages: Vec<(String, Node)>,
    nodes: Vec<(String, Node)>,
    registry: Registry,
}

impl WorkflowBuilder {
    /// A workflow named `name`.
    pub fn new(name: &str) -> Self {
        Self { name: name.to_owned(), ..Self::default() }
    }

    /// The folder relative paths (brief, scripts, prompts) resolve against
    /// (default: the current directory).
    #[must_use]
    pub fn dir(mut self, dir: &Path) -> Self {
        self.dir = Some(dir.to_owned());
        self
    }

    /// `brief = "path"`.
    #[must_use]
    pub fn brief_file(mut self, path: &str) -> Self {
        self.brief_file = Some(path.to_owned());
        self
    }

    /// The brief's text (Markdown, front matter allowed), instead of a file.
    #[must_use]
    pub fn brief_text(mut self, text: &str) -> Self {
        self.registry.brief_text(text);
        self
    }

    /// `max_kickbacks = N` (graph form).
    #[must_use]
    pub fn max_kickbacks(mut self, count: u32) -> Self {
        self.top.push(("max_kickbacks", Value::Int(i64::from(count))));
        self
    }

    /// `max_kickbacks = { judge, cap }` (graph form).
    #[must_use]
    pub fn max_kickbacks_judge(mut self, judge: &str, cap: u32) -> Self {
        self.top.push(("max_kickbacks", Value::Raw(format!("{{ judge = {}, cap = {cap} }}", quote(judge)))));
        self
    }

    /// `[options] seat_timeout = "10m"`.
    #[must_use]
    pub fn seat_timeout(mut self, duration: &str) -> Self {
        self.options.push(("seat_timeout", Value::Text(duration.to_owned())));
        self
    }

    /// `[options] max_cost_usd = X`.
    #[must_use]
    pub fn max_cost_usd(mut self, dollars: f64) -> Self {
        self.options.push(("max_cost_usd", Value::Float(dollars)));
        self
    }

    /// `[options] max_parallel = N`.
    #[must_use]
    pub fn max_parallel(mut self, nodes: u32) -> Self {
        self.options.push(("max_parallel", Value::Int(i64::from(nodes))));
        self
    }

    /// A seat from its keys, as `[seats]` would declare it.
    #[must_use]
    pub fn seat_spec(mut self, name: &str, spec: &SeatSpec) -> Self {
        let mut parts = vec![format!("engine = {}", quote(spec.engine.as_str()))];
        let optional = [
            ("model", &spec.model),
            ("family", &spec.family),
            ("executable", &spec.executable),
            ("base_url", &spec.base_url),
            ("api_key_env", &spec.api_key_env),
            ("timeout", &spec.timeout),
            ("script", &spec.script),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                parts.push(format!("{key} = {}", quote(value)));
            }
        }
        if !spec.env.is_empty() {
            let env: Vec<String> =
                spec.env.iter().map(|(k, v)| format!("{} = {}", quote(k), quote(v))).collect();
            parts.push(format!("env = {{ {} }}", env.join(", ")));
        }
        if !spec.prompts.is_empty() {
            let prompts: Vec<String> =
                spec.prompts.iter().map(|(k, v)| format!("{} = {}", quote(k), quote(v))).collect();
            parts.push(format!("prompts = {{ {} }}", prompts.join(", ")));
        }
        self.seats.push((name.to_owned(), format!("{{ {} }}", parts.join(", "))));
        self
    }

    /// A seat made in code (any [`Seat`]: a script seat from text, your own
    /// engine). Its family is the seat's own.
    #[must_use]
    pub fn seat(mut self, name: &str, seat: Arc<dyn Seat>) -> Self {
        let declared = format!(
            "{{ engine = {}, family = {} }}",
            quote(seat.engine().as_str()),
            quote(seat.family().as_str())
        );
        self.seats.push((name.to_owned(), declared));
        self.registry.seat(name, seat);
        self
    }

    /// A role: a name for one seat or a list of seats.
    #[must_use]
    pub fn role<I: IntoIterator<Item = S>, S: Into<String>>(mut self, name: &str, seats: I) -> Self {
        self.roles.push((name.to_owned(), seats.into_iter().map(Into::into).collect()));
        self
    }

    /// A stage (the stages form: each stage runs after the one before).
    #[must_use]
    pub fn stage(mut self, name: &str, node: Node) -> Self {
        self.stages.push((name.to_owned(), node));
        self
    }

    /// A node (the graph form: it runs when its `needs` are done).
    #[must_use]
    pub fn node(mut self, name: &str, node: Node) -> Self {
        self.nodes.push((name.to_owned(), node));
        self
    }

    /// The workflow file this builder stands for. A job appears as
    /// `job = "<node name>"`; jobs and code-made seats live in the registry.
    pub fn toml(&self) -> String {
        let mut out = format!("name = {}\n", quote(&self.name));
        if let Some(brief) = &self.brief_file {
            let _ = writeln!(out, "brief = {}", quote(brief));
        }
        for (key, value) in &self.top {
            let _ = writeln!(out, "{key} = {}", value.toml());
        }
        if !self.options.is_empty() {
            out.push_str("\n[options]\n");
            for (key, value) in &self.options {
                let _ = writeln!(out, "{key} = {}", value.toml());
            }
        }
        if !self.seats.is_empty() {
            out.push_str("\n[seats]\n");
            for (name, declared) in &self.seats {
                let _ = writeln!(out, "{} = {declared}", quote(name));
            }
        }
        if !self.roles.is_empty() {
            out.push_str("\n[roles]\n");
            for (name, seats) in &self.roles {
                let _ = writeln!(out, "{} = {}", quote(name), Value::List(seats.clone()).toml());
            }
        }
        for (name, node) in &self.stages {
            let _ = writeln!(out, "\n[[stage]]\nname = {}", quote(name));
            write_keys(&mut out, name, node);
        }
        for (name, node) in &self.nodes {
            let _ = writeln!(out, "\n[node.{}]", quote(name));
            write_keys(&mut out, name, node);
        }
        out
    }

    /// Compiles the workflow, with every check a file gets.
    pub fn build(mut self) -> Result<Workflow, Box<Located>> {
        if self.brief_file.is_none() && self.registry.has_brief() {
            // The brief's text is in the registry; the compiler names it after
            // this path in its messages.
            self.brief_file = Some("brief.md".to_owned());
        }
        let text = self.toml();
        let dir = self.dir.clone().unwrap_or_else(|| PathBuf::from("."));
        let mut registry = self.registry.clone();
        for (name, node) in self.stages.iter().chain(&self.nodes) {
            if let Some(job) = &node.job {
                registry.job(name, Arc::clone(job));
            }
        }
        Workflow::parse_with(&dir.join(format!("{}.workflow.toml", self.name)), &text, &registry)
    }
}

fn write_keys(out: &mut String, name: &str, node: &Node) {
    if node.job.is_some() {
        let _ = writeln!(out, "job = {}", quote(name));
    }
    for (key, value) in &node.keys {
        let _ = writeln!(out, "{key} = {}", value.toml());
    }
}
