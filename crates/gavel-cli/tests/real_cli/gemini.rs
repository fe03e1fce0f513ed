//! Gemini CLI: reviews in approval mode `default` (no write or shell tool
//! offered headless), builds in `auto_edit` with `write_file` (absolute
//! paths). Tokens, no cost. It retries a 500 for minutes whatever it is
//! told, so there the seat's timeout ends the request.

use std::time::Duration;

use gavel_domain::{Engine, RequestKind};
use gavel_seats::SeatError;
use gavel_test_support::{Api, FakeUsage, Match, Rule};
use serde_json::json;

use crate::rig::{
    PROSE_REVIEW, Workspace, ask, assert_key_sent, assert_prose_review, assert_refused_without_writing,
    assert_served, assert_within, expect_error, expect_reply, log, preflight, request, seat, serve, spec,
};

const MODEL: &str = "gemini-2.5-flash";
const TIMEOUT: Duration = Duration::from_secs(90);

/// The model calls `write_file` once, then answers after the result.
fn write_then_answer(path: &std::path::Path, content: &str, answer: &str) -> [Rule; 2] {
    let on = Match::any().api(Api::Gemini).model(MODEL);
    [
        Rule::tool_call("write_file", json!({ "file_path": path, "content": content }))
            .when(on.clone().after_tool_result(false)),
        Rule::text(answer).when(on.after_tool_result(true)),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn gemini_review_is_a_parsed_decision_with_tokens() {
    preflight();
    let server = serve([Rule::text(PROSE_REVIEW)
        .when(Match::any().api(Api::Gemini).model(MODEL))
        .usage(FakeUsage::new(700, 40, 50))]);
    let ws = Workspace::new();
    let seat = seat(&spec(Engine::Gemini, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Review, &ws, TIMEOUT)).await;
    let reply = expect_reply(result, &server);
    assert_prose_review(&reply);
    // Gemini's prompt total includes the cached part.
    assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (750, 40), "{}", log(&server));
    assert!(reply.session.is_some());
    assert_key_sent(&server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn gemini_builder_writes_the_file_with_its_own_tool() {
    preflight();
    let ws = Workspace::new();
    let file = ws.join("hello.txt");
    let server = serve(write_then_answer(&file, "Welcome aboard, new staff!\n", "Wrote hello.txt."));
    let seat = seat(&spec(Engine::Gemini, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Write, &ws, TIMEOUT)).await;
    let reply = expect_reply(result, &server);
    assert_eq!(reply.text, "Wrote hello.txt.");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "Welcome aboard, new staff!\n");
    assert!(server.requests().iter().any(|r| r.rule == Some(1)), "the answer followed the tool result");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn gemini_read_only_request_cannot_write() {
    preflight();
    let ws = Workspace::new();
    let file = ws.join("hello.txt");
    let answer = r#"{"decision":"pass","findings":[]}"#;
    let server = serve(write_then_answer(&file, "written by a reviewer\n", answer));
    let seat = seat(&spec(Engine::Gemini, MODEL, &server.url()));
    let (result, _) = ask(&seat, &request(RequestKind::Review, &ws, TIMEOUT)).await;
    // `write_file` is not offered in approval mode `default`: the call
    // fails, gemini answers anyway, and gavel refuses the answer.
    let err = expect_error(result, &server);
    assert_refused_without_writing(&err, &file, &server);
    assert!(err.to_string().contains("write_file"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the real agent CLIs inside a loopback-only network namespace; run by .ci/run"]
async fn gemini_http_401_is_an_engine_error_and_500_ends_at_the_timeout() {
    preflight();
    let ws = Workspace::new();
    let refused = serve([Rule::error(401)]);
    let failing = serve([Rule::error(500)]);
    let (seat401, seat500) = (
        seat(&spec(Engine::Gemini, MODEL, &refused.url())),
        seat(&spec(Engine::Gemini, MODEL, &failing.url())),
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

    // Gemini keeps retrying the 500 with backoff: the timeout stops it.
    let err = expect_error(r500, &failing);
    assert!(matches!(err, SeatError::Timeout(t) if t == short), "{err}");
    assert_within(t500, short);
    assert_served(&failing, 500);
}
