//! The library face: a workflow built in Rust compiles to the same graph as
//! its file, and runs with custom jobs.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use gavel_domain::SeatSpec;
use gavel_runtime::builder::{Node, WorkflowBuilder};
use gavel_runtime::graph::mermaid;
use gavel_runtime::{JobOutcome, Silent, StartRequest, Status, Workflow, fn_job};
use pretty_assertions::assert_eq;

fn example_dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name)
}

fn script_seat(path: &str) -> SeatSpec {
    serde_json::from_value(serde_json::json!({ "engine": "script", "script": path })).unwrap()
}

#[test]
fn the_builder_and_the_file_compile_to_the_same_graph() {
    let dir = example_dir("welcome-page-dag");
    let from_file = Workflow::load(&dir.join("workflow.toml")).unwrap();
    let built = WorkflowBuilder::new("welcome-page-dag")
        .dir(&dir)
        .brief_file("briefs/welcome.md")
        .max_kickbacks(1)
        .seat_spec("writer", &script_seat("seats/writer.toml"))
        .seat_spec("checker", &script_seat("seats/checker.toml"))
        .seat_spec("reviewer", &script_seat("seats/reviewer.toml"))
        .node("build", Node::agent("writer").writes(["welcome.md"]).desc("Write the welcome page."))
        .node("goal", Node::goal_check("checker", "build").needs(["build"]))
        .node("review", Node::panel("reviewer").needs(["goal"]).sends_back_to("build"))
        .build()
        .unwrap();
    assert_eq!(built.stages, from_file.stages);
    assert_eq!(built.max_kickbacks, from_file.max_kickbacks);
    assert_eq!(built.form, from_file.form);
    assert_eq!(mermaid(&built), mermaid(&from_file));
}

#[test]
fn the_builder_reports_the_same_errors_as_a_file() {
    let err = WorkflowBuilder::new("bad")
        .node("a", Node::run(["true"]).needs(["b"]))
        .node("b", Node::run(["true"]).needs(["a"]))
        .build()
        .unwrap_err();
    assert!(err.message.contains("in a cycle"), "{err}");
    let err =
        WorkflowBuilder::new("bad").stage("a", Node::agent("nobody").writes(["x.md"])).build().unwrap_err();
    assert!(err.message.contains("`nobody` is neither a role nor a seat"), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_custom_job_sends_work_back_and_its_result_is_recorded() {
    let workspace = tempfile::tempdir().unwrap();
    let workflow = WorkflowBuilder::new("jobs")
        .node(
            "make",
            Node::job(fn_job("make", |ctx| {
                let text = if ctx.feedback.is_empty() { "draft\n" } else { "final\n" };
                std::fs::write(ctx.workspace.join("out.txt"), text).map_err(|e| e.to_string())?;
                Ok(JobOutcome::Pass(format!("round {}", ctx.round)))
            })),
        )
        .node(
            "check",
            Node::job(fn_job("check", |ctx| {
                let text =
                    std::fs::read_to_string(ctx.workspace.join("out.txt")).map_err(|e| e.to_string())?;
                Ok(if text == "final\n" {
                    JobOutcome::Pass("final".into())
                } else {
                    JobOutcome::SendBack {
                        to: "make".into(),
                        reason: "not final yet".into(),
                        findings: vec![
                            serde_json::from_value(serde_json::json!({
                                "id": "F1", "severity": "should-fix", "evidence": "out.txt is a draft"
                            }))
                            .unwrap(),
                        ],
                    }
                })
            }))
            .needs(["make"]),
        )
        .build()
        .unwrap();
    let request = StartRequest {
        workflow,
        workspace: workspace.path().to_owned(),
        run_id: Some("jobs".into()),
        record: None,
        approver: None,
    };
    let outcome = gavel_runtime::start(request, &Silent).await.unwrap();
    assert_eq!(outcome.status, Status::Pass);
    let record = std::fs::read_to_string(workspace.path().join(".gavel/runs/jobs/events.jsonl")).unwrap();
    let kinds: Vec<String> = record
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds.iter().filter(|k| *k == "job:done").count(), 4, "make, check, make, check");
    assert_eq!(kinds.iter().filter(|k| *k == "kickback").count(), 1);
}
