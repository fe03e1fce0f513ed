//! Custom jobs: nodes written in Rust (the seeds' `fnJob`). A job gets its
//! node's name, round, workspace and the findings sent back to it, and says
//! whether the node passes, sends work back, or fails. Its result is recorded
//! (`job:done`), so a resumed run reads it instead of running the job again.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use gavel_domain::rules::Finding;
use gavel_seats::BoxFuture;

/// What a job is given.
#[derive(Debug, Clone)]
pub struct JobContext {
    /// The node's name.
    pub node: String,
    /// The node's round, from 1.
    pub round: u32,
    /// The workspace.
    pub workspace: PathBuf,
    /// The findings sent back to this node, when a kickback started this round.
    pub feedback: Vec<Finding>,
}

/// How a job came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// The node passes.
    Pass(String),
    /// Send the work back to an earlier node with these findings.
    SendBack {
        /// The node that gets the work.
        to: String,
        /// Why, in one line.
        reason: String,
        /// What it must act on.
        findings: Vec<Finding>,
    },
    /// The run fails.
    Fail(String),
}

/// A node written in Rust.
pub trait Job: Send + Sync + fmt::Debug {
    /// Runs the job once. An `Err` fails the run with that message.
    fn run<'a>(&'a self, context: &'a JobContext) -> BoxFuture<'a, Result<JobOutcome, String>>;
}

/// A job from a closure (the seeds' `fnJob`).
pub struct FnJob<F> {
    name: String,
    f: F,
}

impl<F> fmt::Debug for FnJob<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnJob").field("name", &self.name).finish_non_exhaustive()
    }
}

impl<F> Job for FnJob<F>
where
    F: Fn(&JobContext) -> Result<JobOutcome, String> + Send + Sync,
{
    fn run<'a>(&'a self, context: &'a JobContext) -> BoxFuture<'a, Result<JobOutcome, String>> {
        Box::pin(async move { (self.f)(context) })
    }
}

/// Wraps a closure as a job.
pub fn fn_job<F>(name: &str, f: F) -> Arc<dyn Job>
where
    F: Fn(&JobContext) -> Result<JobOutcome, String> + Send + Sync + 'static,
{
    Arc::new(FnJob { name: name.to_owned(), f })
}

/// A job as a workflow holds it: compared by identity, named for messages.
#[derive(Clone)]
pub struct JobRef {
    /// The name it was registered under.
    pub name: String,
    /// The job.
    pub job: Arc<dyn Job>,
}

impl fmt::Debug for JobRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobRef").field("name", &self.name).finish_non_exhaustive()
    }
}

impl PartialEq for JobRef {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.job, &other.job)
    }
}

impl Eq for JobRef {}
