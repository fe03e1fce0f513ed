//! The welcome-page dag built in code: a custom job builds the page (its
//! first draft leaves the opening hours out), a goal-check node sends it
//! back, the second build passes, and a reviewer passes the page. The same
//! graph as `examples/welcome-page-dag/workflow.toml`, with the build node
//! written in Rust, and an event callback printing progress.
//!
//! `cargo run -p gavel-runtime --example welcome_dag`

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gavel_record::Envelope;
use gavel_runtime::builder::{Node, WorkflowBuilder};
use gavel_runtime::{JobOutcome, Observer, StartRequest, fn_job};
use gavel_seats::ScriptSeat;
use gavel_seats::script::Script;

/// Live progress: one line per recorded event.
struct Print;

impl Observer for Print {
    fn on_event(&self, envelope: &Envelope) {
        eprintln!("{:>3} {}", envelope.seq, envelope.event.kind());
    }
}

const BRIEF: &str = "---\nfiles: [welcome.md]\nrequirements:\n  - Says who it is for\n  - Lists the opening hours\n---\n# Welcome page\nWrite the welcome page for new staff.\n";

const CHECKER: &str = r#"
[[goal]]
reply = '{"requirements":[{"requirement":"Says who it is for","verdict":"met","evidence":"welcome.md:2"},{"requirement":"Lists the opening hours","verdict":"unmet","evidence":"welcome.md has no opening hours"}]}'
[[goal]]
reply = '{"requirements":[{"requirement":"Says who it is for","verdict":"met","evidence":"welcome.md:2"},{"requirement":"Lists the opening hours","verdict":"met","evidence":"welcome.md:3"}]}'
"#;

const REVIEWER: &str = r#"
[[review]]
reply = { decision = "pass", findings = [] }
"#;

fn script(name: &str, family: &str, text: &str) -> Result<Arc<ScriptSeat>, Box<dyn std::error::Error>> {
    let script = Script::parse(Path::new(name), text)?;
    Ok(Arc::new(ScriptSeat::new(name, Some(family), script)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let builds = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&builds);
    let build = fn_job("build", move |ctx| {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        let hours = if n > 1 { "Open 9:00 to 17:00, Monday to Friday.\n" } else { "" };
        std::fs::write(
            ctx.workspace.join("welcome.md"),
            format!("# Welcome\nThis page is for new staff.\n{hours}"),
        )
        .map_err(|e| e.to_string())?;
        Ok(JobOutcome::Pass(format!("wrote draft {n}")))
    });

    let workflow = WorkflowBuilder::new("welcome-page-dag")
        .brief_text(BRIEF)
        .max_kickbacks(1)
        .seat("checker", script("checker", "openai", CHECKER)?)
        .seat("reviewer", script("reviewer", "google", REVIEWER)?)
        .node("build", Node::job(build))
        .node("goal", Node::goal_check("checker", "build").needs(["build"]))
        .node("review", Node::panel("reviewer").needs(["goal"]).sends_back_to("build"))
        .build()?;

    let workspace = tempfile::tempdir()?;
    let request = StartRequest {
        workflow,
        workspace: workspace.path().to_owned(),
        run_id: Some("welcome".into()),
        record: None,
        approver: None,
    };
    let outcome = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(gavel_runtime::start(request, &Print))?;
    println!(
        "status {:?}, builds {}, rounds {}",
        outcome.status,
        builds.load(Ordering::SeqCst),
        outcome.rounds
    );
    Ok(())
}
