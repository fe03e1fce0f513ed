//! Claude Code: reviews in `--permission-mode plan`, builds in
//! `acceptEdits` with its `Write` tool (absolute paths), reports tokens and
//! its own cost; retries capped at 2 (`CLAUDE_CODE_MAX_RETRIES`).

use std::time::Duration;

use gavel_domain::{Engine, RequestKind};
use gavel_seats::SeatError;
use gavel_test_support::{Api, FakeUsage, Match, Rule};
use serde_json::json;

use crate::rig::{
    PROSE_REVIEW, Workspace, ask, assert_key_sent, assert_prose_review, assert_refused_without_writing,
    assert_served, assert_within, expect_error, expect_reply, log, preflight, request, seat, serve, spec,
};

const MODEL: &str = "claude-sonnet-4-5";
const TIMEOUT: Duration = Duration::from_secs(60);

/// The model calls `Write` once, then answers after the tool result.
fn write_then_answer(path: &std::path::Path, content: &str, answer: &str) -> [Rule; 2] {
    let on = Match::any().api(Api::Anthropic).model(MODEL);
    [
        Rule::tool_call("Write", json!({ "file_path": path, "content": content }))
            .when(on.clone().after_tool_result(false)),
        Rule::text(answer).when(on.after_tool_result(true)),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn claude_review_is_a_parsed_decision_with_tokens_and_cost() {
    preflight();
    let server = serve([Rule::text(PROSE_REVIEW)
        .when(Match::any().api(Api::Anthropic).model(MODEL))
        .usage(FakeUsage::new(1200, 80, 300))]);
    let ws = Workspace::new();
    let seat = seat(&spec(Engine::Claude, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Review, &ws, TIMEOUT)).await;
    let reply = expect_reply(result, &server);
    assert_prose_review(&reply);
    // Anthropic reports uncached and cache-read input apart; gavel adds them.
    assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (1500, 80), "{}", log(&server));
    // Claude's own figure (cache reads at a tenth of the input price):
    // 1200 × $3/M + 300 × $0.30/M + 80 × $15/M, not gavel's table price
    // of the summed tokens (1500 × $3/M + 80 × $15/M = $0.0057).
    assert!((reply.usage.cost_usd - 0.004_89).abs() < 1e-9, "claude reports its cost: {:?}", reply.usage);
    assert!(reply.session.is_some());
    assert_key_sent(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn claude_builder_writes_the_file_with_its_own_tool() {
    preflight();
    let ws = Workspace::new();
    let file = ws.join("hello.txt");
    let server = serve(write_then_answer(&file, "Welcome aboard, new staff!\n", "Wrote hello.txt."));
    let seat = seat(&spec(Engine::Claude, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Write, &ws, TIMEOUT)).await;
    let reply = expect_reply(result, &server);
    assert_eq!(reply.text, "Wrote hello.txt.");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "Welcome aboard, new staff!\n");
    assert_served(&server, 200);
    assert!(server.requests().iter().any(|r| r.rule == Some(1)), "the answer followed the tool result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn claude_read_only_request_cannot_write() {
    preflight();
    let ws = Workspace::new();
    let file = ws.join("hello.txt");
    let answer = r#"{"decision":"pass","findings":[]}"#;
    let server = serve(write_then_answer(&file, "written by a reviewer\n", answer));
    let seat = seat(&spec(Engine::Claude, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Review, &ws, TIMEOUT)).await;
    // Plan mode denies the write; claude still answers (exit 0) and lists
    // the denial, which gavel turns into a refusal.
    let err = expect_error(result, &server);
    assert_refused_without_writing(&err, &file, &server);
    assert!(err.to_string().contains("Write"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn claude_http_401_and_500_are_engine_errors_within_the_timeout() {
    preflight();
    let timeout = Duration::from_secs(30);
    let ws = Workspace::new();
    let refused = serve([Rule::error(401)]);
    let failing = serve([Rule::error(500)]);
    let (seat401, seat500) = (
        seat(&spec(Engine::Claude, MODEL, &refused.url())),
        seat(&spec(Engine::Claude, MODEL, &failing.url())),
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

    let err = expect_error(r500, &failing);
    assert!(matches!(&err, SeatError::Engine(m) if m.contains("(500)")), "{err}");
    assert_within(t500, timeout);
    assert_served(&failing, 500);
}
