//! Codex: `codex exec --json` against a custom Responses provider; reviews
//! in its `read-only` sandbox, builds in `workspace-write` with its
//! `apply_patch` tool (a raw patch, paths relative to the workspace; offered
//! only for a catalog model such as `gpt-5.5`). Tokens, no cost.

use std::time::Duration;

use gavel_domain::{Engine, RequestKind};
use gavel_seats::SeatError;
use gavel_test_support::{Api, FakeUsage, Match, Rule};
use serde_json::json;

use crate::rig::{
    PROSE_REVIEW, Workspace, ask, assert_key_sent, assert_prose_review, assert_refused_without_writing,
    assert_served, assert_within, expect_error, expect_reply, log, preflight, request, seat, serve, spec,
};

const MODEL: &str = "gpt-5.5";
const TIMEOUT: Duration = Duration::from_secs(60);

/// The model adds `rel` with `apply_patch`, then answers after the result.
fn patch_then_answer(rel: &str, line: &str, answer: &str) -> [Rule; 2] {
    let on = Match::any().api(Api::Responses).model(MODEL);
    let patch = format!("*** Begin Patch\n*** Add File: {rel}\n+{line}\n*** End Patch\n");
    [
        Rule::tool_call("apply_patch", json!(patch)).when(on.clone().after_tool_result(false)),
        Rule::text(answer).when(on.after_tool_result(true)),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn codex_review_is_a_parsed_decision_with_tokens() {
    preflight();
    let server = serve([Rule::text(PROSE_REVIEW)
        .when(Match::any().api(Api::Responses).model(MODEL))
        .usage(FakeUsage::new(900, 60, 100))]);
    let ws = Workspace::new();
    let seat = seat(&spec(Engine::Codex, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Review, &ws, TIMEOUT)).await;
    let reply = expect_reply(result, &server);
    assert_prose_review(&reply);
    // OpenAI counts cached tokens inside the prompt total.
    assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (1000, 60), "{}", log(&server));
    assert!(reply.session.is_some());
    assert_key_sent(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn codex_builder_writes_the_file_with_its_own_tool() {
    preflight();
    let ws = Workspace::new();
    let server = serve(patch_then_answer("hello.txt", "Welcome aboard, new staff!", "Added hello.txt."));
    let seat = seat(&spec(Engine::Codex, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Write, &ws, TIMEOUT)).await;
    let reply = expect_reply(result, &server);
    assert_eq!(reply.text, "Added hello.txt.");
    assert_eq!(std::fs::read_to_string(ws.join("hello.txt")).unwrap(), "Welcome aboard, new staff!\n");
    assert!(server.requests().iter().any(|r| r.rule == Some(1)), "the answer followed the tool result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn codex_read_only_request_cannot_write() {
    preflight();
    let ws = Workspace::new();
    let answer = r#"{"decision":"pass","findings":[]}"#;
    let server = serve(patch_then_answer("hello.txt", "written by a reviewer", answer));
    let seat = seat(&spec(Engine::Codex, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Review, &ws, TIMEOUT)).await;
    // The read-only sandbox rejects the patch; codex carries on and
    // answers, and gavel refuses the answer.
    let err = expect_error(result, &server);
    assert_refused_without_writing(&err, &ws.join("hello.txt"), &server);
    assert!(err.to_string().contains("patch rejected"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn codex_http_401_and_500_are_engine_errors_within_the_timeout() {
    preflight();
    let timeout = Duration::from_secs(30);
    let ws = Workspace::new();
    let refused = serve([Rule::error(401)]);
    let failing = serve([Rule::error(500)]);
    let (seat401, seat500) = (
        seat(&spec(Engine::Codex, MODEL, &refused.url())),
        seat(&spec(Engine::Codex, MODEL, &failing.url())),
    );
    let (req401, req500) =
        (request(RequestKind::Review, &ws, timeout), request(RequestKind::Review, &ws, timeout));
    let ((r401, t401), (r500, t500)) = tokio::join!(ask(&seat401, &req401), ask(&seat500, &req500));

    let err = expect_error(r401, &refused);
    assert!(
        matches!(&err, SeatError::Engine(m) if m.contains("refused the key") && m.contains("(401)")),
        "{err}"
    );
    assert_within(t401, timeout);
    assert_served(&refused, 401);

    // Codex words a 5xx in its own terms, without the status.
    let err = expect_error(r500, &failing);
    assert!(matches!(&err, SeatError::Engine(m) if m.starts_with("codex: ")), "{err}");
    assert_within(t500, timeout);
    assert_served(&failing, 500);
}
