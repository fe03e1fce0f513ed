//! OpenCode: `opencode run --format json` with an inline config naming a
//! `gavel` provider (OpenAI Chat Completions at the seat's `base_url`, model
//! `gavel/<model>`). Reviews deny edits (the edit tools are then not
//! offered), builders may edit inside the workspace with `write` (absolute
//! `filePath`). Tokens, and a cost once the seat has a `price`. It sends a
//! title request (no tools) besides the main one, takes 8–10 s a call, and
//! retries a 500 for minutes: there the seat's timeout ends the request.

use std::time::Duration;

use gavel_domain::{Engine, RequestKind};
use gavel_seats::SeatError;
use gavel_test_support::{Api, FakeUsage, Match, Rule};
use serde_json::json;

use crate::rig::{
    PROSE_REVIEW, Workspace, ask, assert_key_sent, assert_prose_review, assert_refused_without_writing,
    assert_served, assert_within, expect_error, expect_reply, log, preflight, priced, request, seat, serve,
    spec,
};

const MODEL: &str = "qwen3-coder";
const TIMEOUT: Duration = Duration::from_secs(120);

/// Answers opencode's title request (it offers no tools).
fn title() -> Rule {
    Rule::text("Greeting review")
        .when(Match::any().api(Api::Chat).tools_offered(false))
        .usage(FakeUsage::new(7, 3, 0))
}

/// The main request, as opposed to the title request.
fn main_request() -> Match {
    Match::any().api(Api::Chat).model(MODEL).tools_offered(true)
}

/// The model calls `write` once, then answers after the result.
fn write_then_answer(path: &std::path::Path, content: &str, answer: &str) -> [Rule; 3] {
    [
        title(),
        Rule::tool_call("write", json!({ "filePath": path, "content": content }))
            .when(main_request().after_tool_result(false)),
        Rule::text(answer).when(main_request().after_tool_result(true)),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn opencode_review_is_a_parsed_decision_with_tokens_and_cost() {
    preflight();
    let server =
        serve([title(), Rule::text(PROSE_REVIEW).when(main_request()).usage(FakeUsage::new(800, 50, 200))]);
    let ws = Workspace::new();
    let seat = seat(&priced(spec(Engine::Opencode, MODEL, &server.url()), 3.0, 15.0));
    let (result, _) = ask(&seat, &request(RequestKind::Review, &ws, TIMEOUT)).await;
    let reply = expect_reply(result, &server);
    assert_prose_review(&reply);
    // opencode reports uncached input and cache reads apart; gavel adds them.
    assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (1000, 50), "{}", log(&server));
    // 1000 × $3/M + 50 × $15/M.
    assert!((reply.usage.cost_usd - 0.003_75).abs() < 1e-9, "{:?}", reply.usage);
    assert!(reply.session.is_some());
    assert_key_sent(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn opencode_builder_writes_the_file_with_its_own_tool() {
    preflight();
    let ws = Workspace::new();
    let file = ws.join("hello.txt");
    let server = serve(write_then_answer(&file, "Welcome aboard, new staff!\n", "Wrote hello.txt."));
    let seat = seat(&spec(Engine::Opencode, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Write, &ws, TIMEOUT)).await;
    let reply = expect_reply(result, &server);
    assert_eq!(reply.text, "Wrote hello.txt.");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "Welcome aboard, new staff!\n");
    assert!(server.requests().iter().any(|r| r.rule == Some(2)), "the answer followed the tool result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn opencode_read_only_request_cannot_write() {
    preflight();
    let ws = Workspace::new();
    let file = ws.join("hello.txt");
    let answer = r#"{"decision":"pass","findings":[]}"#;
    let server = serve(write_then_answer(&file, "written by a reviewer\n", answer));
    let seat = seat(&spec(Engine::Opencode, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Review, &ws, TIMEOUT)).await;
    // With edits denied, `write` is not offered: opencode turns the call
    // into its `invalid` tool, answers anyway, and gavel refuses the answer.
    let err = expect_error(result, &server);
    assert_refused_without_writing(&err, &file, &server);
    assert!(err.to_string().contains("write (not offered"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn opencode_http_401_is_an_engine_error_and_500_ends_at_the_timeout() {
    preflight();
    let ws = Workspace::new();
    let refused = serve([Rule::error(401)]);
    let failing = serve([Rule::error(500)]);
    let (seat401, seat500) = (
        seat(&spec(Engine::Opencode, MODEL, &refused.url())),
        seat(&spec(Engine::Opencode, MODEL, &failing.url())),
    );
    let short = Duration::from_secs(30);
    let (req401, req500) =
        (request(RequestKind::Review, &ws, TIMEOUT), request(RequestKind::Review, &ws, short));
    let ((r401, t401), (r500, t500)) = tokio::join!(ask(&seat401, &req401), ask(&seat500, &req500));

    let err = expect_error(r401, &refused);
    assert!(
        matches!(&err, SeatError::Engine(m) if m.contains("refused the key") && m.contains("(401)")),
        "{err}"
    );
    assert_within(t401, TIMEOUT);
    assert_served(&refused, 401);

    // opencode keeps retrying the 500: the timeout stops it.
    let err = expect_error(r500, &failing);
    assert!(matches!(err, SeatError::Timeout(t) if t == short), "{err}");
    assert_within(t500, short);
    assert_served(&failing, 500);
}
