//! The workflow as a Mermaid flowchart (`gavel graph`): stages or nodes with
//! what each does, `needs` as arrows, and every way work can be sent back as
//! a dotted arrow labelled with its limit.

use std::fmt::Write as _;

use crate::de::CommandSpec;
use crate::workflow::{Form, Kickbacks, Panel, Refine, StageKind, Workflow};

/// Renders `workflow` as a Mermaid `flowchart`.
pub fn mermaid(workflow: &Workflow) -> String {
    let mut out = String::from("flowchart LR\n");
    let id = |name: &str| {
        let index = workflow.stages.iter().position(|s| s.name == name).unwrap_or(0);
        format!("n{index}")
    };
    for stage in &workflow.stages {
        let node = id(&stage.name);
        let (open, close, what) = match &stage.kind {
            StageKind::Build(build) => {
                let mut what = format!("agent: {}<br/>writes {}", build.builder, build.writes.join(", "));
                if let Some(goal) = &build.goal {
                    let _ = write!(what, "<br/>goal check: {goal}");
                }
                if let Some(panel) = &build.review {
                    let _ = write!(what, "<br/>{}", panel_text(panel));
                }
                match &build.refine {
                    Refine::Rounds(1) => {}
                    Refine::Rounds(n) => {
                        let _ = write!(what, "<br/>refine: {n} rounds");
                    }
                    Refine::Judge { judge, cap, on_cap, .. } => {
                        let _ = write!(what, "<br/>judge: {judge} (cap {cap}, on cap {})", on_cap.as_str());
                    }
                }
                ("[\"", "\"]", what)
            }
            StageKind::Run(run) => {
                let command = match &run.command {
                    CommandSpec::Argv(argv) => argv.join(" "),
                    CommandSpec::Shell(line) => line.clone(),
                };
                ("[[\"", "\"]]", format!("run: {command}"))
            }
            StageKind::Panel(panel) => ("[\"", "\"]", panel_text(&panel.panel)),
            StageKind::Approve { files } => {
                let files = files.as_ref().map_or_else(|| "every file written".to_owned(), |f| f.join(", "));
                ("([\"", "\"])", format!("a person approves {files}"))
            }
            StageKind::GoalCheck { seat, .. } => ("{\"", "\"}", format!("goal check: {seat}")),
            StageKind::Job(job) => ("[/\"", "\"/]", format!("job: {}", job.name)),
        };
        let label = escape(&format!("{}<br/>{what}", stage.name));
        let _ = writeln!(out, "  {node}{open}{label}{close}");
    }
    for stage in &workflow.stages {
        for need in &stage.needs {
            let _ = writeln!(out, "  {} --> {}", id(need), id(&stage.name));
        }
    }
    let limit = match (&workflow.max_kickbacks, workflow.form) {
        (Kickbacks::Count(n), Form::Graph) => format!(", max {n}"),
        (Kickbacks::Judge { judge, cap }, Form::Graph) => format!(", judge {judge}, cap {cap}"),
        _ => String::new(),
    };
    for stage in &workflow.stages {
        let (to, why) = match &stage.kind {
            StageKind::Run(run) => (run.sends_back_to.as_deref(), "fails"),
            StageKind::Panel(panel) => (panel.sends_back_to.as_deref(), "revise"),
            StageKind::GoalCheck { target, .. } => (Some(target.as_str()), "unmet"),
            StageKind::Build(_) | StageKind::Approve { .. } | StageKind::Job(_) => (None, ""),
        };
        if let Some(to) = to {
            let bound = match workflow.stages.iter().find(|s| s.name == to).map(|s| &s.kind) {
                Some(StageKind::Build(build)) if workflow.form == Form::Stages => {
                    format!(", within its {} round(s)", build.refine.max_rounds())
                }
                _ => limit.clone(),
            };
            let _ = writeln!(
                out,
                "  {} -. \"{}\" .-> {}",
                id(&stage.name),
                escape(&format!("{why}{bound}")),
                id(to)
            );
        }
    }
    out
}

fn panel_text(panel: &Panel) -> String {
    let mut text =
        format!("reviewed by {} (agree {} of {})", panel.seats.join(", "), panel.agree, panel.seats.len());
    if let Some(merger) = &panel.synthesise {
        let _ = write!(text, ", synthesised by {merger}");
    }
    text
}

/// Mermaid labels in quotes take HTML entities for quotes.
fn escape(text: &str) -> String {
    text.replace('"', "#quot;")
}
