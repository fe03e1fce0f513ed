//! HTTP engines against the fake model server: each case runs on the
//! Anthropic Messages API, OpenAI Responses and Chat Completions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use gavel_domain::{Engine, RequestKind, SeatSpec};
use gavel_seats::http::{HttpSeat, RetryPolicy, Wire};
use gavel_seats::secret::Secret;
use gavel_seats::{Reply, Request, Seat, SeatError};
use gavel_test_support::fake_model::{
    Api, FakeModel, FakeReply, FakeScript, FakeUsage, LoggedRequest, Match, Rule,
};

/// The fake key every seat here sends.
const KEY: &str = "sk-gavel-test-0123456789abcdef";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Anthropic,
    Responses,
    Chat,
}

const ALL: [Flavour; 3] = [Flavour::Anthropic, Flavour::Responses, Flavour::Chat];

impl Flavour {
    fn model(self) -> &'static str {
        match self {
            Flavour::Anthropic => "claude-sonnet-4-5",
            Flavour::Responses | Flavour::Chat => "gpt-5-mini",
        }
    }

    fn api(self) -> Api {
        match self {
            Flavour::Anthropic => Api::Anthropic,
            Flavour::Responses => Api::Responses,
            Flavour::Chat => Api::Chat,
        }
    }

    fn wire(self) -> Wire {
        match self {
            Flavour::Anthropic => Wire::Anthropic,
            Flavour::Responses => Wire::Responses,
            Flavour::Chat => Wire::Chat,
        }
    }

    fn path(self) -> &'static str {
        match self {
            Flavour::Anthropic => "/v1/messages",
            Flavour::Responses => "/v1/responses",
            Flavour::Chat => "/v1/chat/completions",
        }
    }

    /// The seat spec against the fake server at `url`.
    fn spec(self, url: &str) -> SeatSpec {
        let mut env = BTreeMap::new();
        let (engine, base_url) = match self {
            Flavour::Anthropic => (Engine::Anthropic, url.to_owned()),
            Flavour::Responses => {
                env.insert("GAVEL_OPENAI_API".to_owned(), "responses".to_owned());
                (Engine::Openai, format!("{url}/v1"))
            }
            Flavour::Chat => (Engine::Openai, format!("{url}/v1")),
        };
        SeatSpec {
            model: Some(self.model().to_owned()),
            base_url: Some(base_url),
            env,
            ..SeatSpec::new(engine)
        }
    }

    /// A seat on the fake server with the test key and fast backoff.
    fn seat(self, server: &FakeModel) -> HttpSeat {
        let seat = HttpSeat::from_spec("api", &self.spec(&server.url()), Path::new("."))
            .unwrap()
            .with_key(Secret::new("GAVEL_TEST_API_KEY", KEY))
            .with_retry(RetryPolicy {
                attempts: 4,
                base: Duration::from_millis(20),
                cap: Duration::from_millis(100),
            });
        assert_eq!(seat.wire(), self.wire());
        seat
    }
}

fn request(kind: RequestKind, workspace: &Path, writes: &[&str], timeout: Duration) -> Request {
    Request {
        kind,
        prompt: "Review the work and reply with JSON.".to_owned(),
        workspace: workspace.to_owned(),
        access: kind.access(),
        turn: 0,
        writes: writes.iter().map(|w| (*w).to_owned()).collect(),
        timeout,
    }
}

async fn serve(rules: impl IntoIterator<Item = Rule>) -> FakeModel {
    FakeModel::start(FakeScript::new(rules)).await.unwrap()
}

async fn ask(flavour: Flavour, server: &FakeModel, request: &Request) -> Result<Reply, SeatError> {
    flavour.seat(server).answer(request).await
}

fn statuses(requests: &[LoggedRequest]) -> Vec<u16> {
    requests.iter().map(|r| r.status).collect()
}

const DECISION: &str = r#"Looks fine. {"decision":"pass","findings":[]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_reply_brings_text_tokens_cost_and_session() {
    for flavour in ALL {
        let server = serve([Rule::text(DECISION)
            .when(Match::any().api(flavour.api()).model(flavour.model()))
            .usage(FakeUsage::new(1000, 300, 200))])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let reply =
            ask(flavour, &server, &request(RequestKind::Review, dir.path(), &[], Duration::from_secs(10)))
                .await
                .unwrap();
        assert_eq!(reply.text, DECISION, "{flavour:?}");
        // Cached prompt tokens count as input on every API.
        assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (1200, 300), "{flavour:?}");
        // claude-sonnet-4-5: 3 + 15 per million; gpt-5-mini: 0.25 + 2 per million.
        let cost = match flavour {
            Flavour::Anthropic => 0.0081,
            Flavour::Responses | Flavour::Chat => 0.0009,
        };
        assert!((reply.usage.cost_usd - cost).abs() < 1e-9, "{flavour:?}: {}", reply.usage.cost_usd);
        assert!(reply.session.as_deref().is_some_and(|s| !s.is_empty()), "{flavour:?}");
        let requests = server.requests();
        assert_eq!(requests.len(), 1, "{flavour:?}");
        let sent = &requests[0];
        assert_eq!((sent.method.as_str(), sent.path.as_str()), ("POST", flavour.path()), "{flavour:?}");
        assert_eq!(sent.api, Some(flavour.api()), "{flavour:?}");
        assert_eq!(sent.body["stream"], true, "{flavour:?}");
        assert_eq!(sent.body["model"], flavour.model(), "{flavour:?}");
        let body = sent.body.to_string();
        assert!(body.contains("Review the work and reply with JSON."), "{flavour:?}: {body}");
        assert!(body.contains("Reply with the JSON object the request asks for"), "{flavour:?}: {body}");
        if flavour == Flavour::Chat {
            assert_eq!(sent.body["stream_options"]["include_usage"], true);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_goes_in_the_api_s_header_only() {
    for flavour in ALL {
        let server = serve([Rule::text(DECISION)]).await;
        let dir = tempfile::tempdir().unwrap();
        ask(flavour, &server, &request(RequestKind::Review, dir.path(), &[], Duration::from_secs(10)))
            .await
            .unwrap();
        let sent = &server.requests()[0];
        match flavour {
            Flavour::Anthropic => {
                assert_eq!(sent.header("x-api-key"), Some(KEY));
                assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(sent.header("authorization"), None);
            }
            Flavour::Responses | Flavour::Chat => {
                assert_eq!(sent.header("authorization"), Some(format!("Bearer {KEY}").as_str()));
                assert_eq!(sent.header("x-api-key"), None);
            }
        }
        assert!(!sent.body.to_string().contains(KEY), "{flavour:?}: the key is never in the body");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_echoed_in_a_reply_is_scrubbed_whole_or_split_across_stream_deltas() {
    let text = format!(r#"{{"decision":"pass","findings":[]}} (sent with {KEY}, twice: {KEY})"#);
    let at = text.find(KEY).unwrap();
    for flavour in ALL {
        for cuts in [vec![], vec![at + 3], vec![at + 1, at + KEY.len() - 1], vec![at + KEY.len() / 2]] {
            let mut pieces = Vec::new();
            let mut start = 0;
            for cut in cuts.iter().copied().chain([text.len()]) {
                pieces.push(text[start..cut].to_owned());
                start = cut;
            }
            let server = serve([Rule::pieces(pieces)]).await;
            let dir = tempfile::tempdir().unwrap();
            let reply = ask(
                flavour,
                &server,
                &request(RequestKind::Review, dir.path(), &[], Duration::from_secs(10)),
            )
            .await
            .unwrap();
            assert_eq!(
                reply.text,
                r#"{"decision":"pass","findings":[]} (sent with [redacted $GAVEL_TEST_API_KEY], twice: [redacted $GAVEL_TEST_API_KEY])"#,
                "{flavour:?} cut at {cuts:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_key_is_read_from_the_variable_api_key_env_names() {
    // A variable cargo and nextest set for every test process.
    let expected = std::env::var("CARGO_PKG_NAME").unwrap();
    let server = serve([Rule::text(DECISION)]).await;
    let mut spec = Flavour::Anthropic.spec(&server.url());
    spec.api_key_env = Some("CARGO_PKG_NAME".to_owned());
    let seat = HttpSeat::from_spec("api", &spec, Path::new(".")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    seat.answer(&request(RequestKind::Review, dir.path(), &[], Duration::from_secs(10))).await.unwrap();
    assert_eq!(server.requests()[0].header("x-api-key"), Some(expected.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_server_needs_no_key_and_gets_none() {
    for flavour in ALL {
        let server = serve([Rule::text(DECISION)]).await;
        let mut spec = flavour.spec(&server.url());
        spec.api_key_env = Some("GAVEL_TEST_SURELY_UNSET_API_KEY".to_owned());
        let seat = HttpSeat::from_spec("local", &spec, Path::new(".")).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let reply = seat
            .answer(&request(RequestKind::Review, dir.path(), &[], Duration::from_secs(10)))
            .await
            .unwrap();
        assert_eq!(reply.text, DECISION);
        let sent = &server.requests()[0];
        assert_eq!(sent.header("x-api-key"), None, "{flavour:?}");
        assert_eq!(sent.header("authorization"), None, "{flavour:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_with_retry_after_is_waited_out_then_retried() {
    for flavour in ALL {
        let server = serve([
            Rule::new(FakeReply::Error { status: 429, body: None, retry_after: Some("1".to_owned()) }).once(),
            Rule::text(DECISION),
        ])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let reply =
            ask(flavour, &server, &request(RequestKind::Review, dir.path(), &[], Duration::from_secs(10)))
                .await
                .unwrap();
        let took = started.elapsed();
        assert_eq!(reply.text, DECISION, "{flavour:?}");
        assert_eq!(statuses(&server.requests()), [429, 200], "{flavour:?}");
        // The seat's own backoff is at most 100 ms: only retry-after explains a second.
        assert!(took >= Duration::from_secs(1), "{flavour:?}: retried after {took:?}");
        assert!(took < Duration::from_secs(5), "{flavour:?}: {took:?}");
        assert!(
            reply.duration >= Duration::from_secs(1),
            "{flavour:?}: the reply's duration counts the wait"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_beyond_the_timeout_gives_up_at_once() {
    for flavour in ALL {
        let server = serve([Rule::new(FakeReply::Error {
            status: 429,
            body: None,
            retry_after: Some("30".to_owned()),
        })])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let err =
            ask(flavour, &server, &request(RequestKind::Review, dir.path(), &[], Duration::from_secs(3)))
                .await
                .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(2), "{flavour:?}: did not wait 30 s");
        let SeatError::Engine(message) = &err else { panic!("{flavour:?}: {err:?}") };
        assert!(message.contains("429") && message.contains("timeout"), "{flavour:?}: {message}");
        assert_eq!(server.requests().len(), 1, "{flavour:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absurd_retry_after_gives_up_instead_of_panicking() {
    for retry_after in ["18446744073709551615", "1e30"] {
        let server = serve([Rule::new(FakeReply::Error {
            status: 503,
            body: None,
            retry_after: Some(retry_after.to_owned()),
        })])
        .await;
        let dir = tempfile::tempdir().unwrap();
        let err = ask(
            Flavour::Chat,
            &server,
            &request(RequestKind::Review, dir.path(), &[], Duration::from_secs(3)),
        )
        .await
        .unwrap_err();
        let SeatError::Engine(message) = &err else { panic!("{retry_after}: {err:?}") };
        assert!(message.contains("503") && message.contains("timeout"), "{retry_after}: {message}");
        assert_eq!(server.requests().len(), 1, "{retry_after}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_then_success_is_retried() {
    for flavour in ALL {
        let server = serve([Rule::error(500).once(), Rule::text(DECISION)]).await;
        let dir = tempfile::tempdir().unwrap();
        let reply =
            ask(flavour, &server, &request(RequestKind::Review, dir.path(), &[], Duration::from_secs(10)))
                .await
                .unwrap();
        assert_eq!(reply.text, DECISION, "{flavour:?}");
        assert_eq!(statuses(&server.requests()), [500, 200], "{flavour:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_that_persist_stop_after_four_attempts() {
    for flavour in ALL {
        let server = serve([Rule::error(503)]).await;
        let dir = tempfile::tempdir().unwrap();
        let err =
            ask(flavour, &server, &request(RequestKind::Review, dir.path(), &[], Duration::from_secs(10)))
                .await
                .unwrap_err();
        let SeatError::Engine(message) = &err else { panic!("{flavour:?}: {err:?}") };
        assert!(message.contains("503") && message.contains("4 attempts"), "{flavour:?}: {message}");
        assert_eq!(statuses(&server.requests()), [503; 4], "{flavour:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_401_is_an_engine_error_at_once_without_the_key() {
    for flavour in ALL {
        // The body echoes the key, as some servers do: it must not leak.
        let body = format!(r#"{{"error":{{"type":"authentication_error","message":"invalid key {KEY}"}}}}"#);
        let server =
            serve([Rule::new(FakeReply::Error { status: 401, body: Some(body), retry_after: None })]).await;
        let dir = tempfile::tempdir().unwrap();
        let err =
            ask(flavour, &server, &request(RequestKind::Review, dir.path(), &[], Duration::from_secs(10)))
                .await
                .unwrap_err();
        let SeatError::Engine(message) = &err else { panic!("{flavour:?}: {err:?}") };
        assert!(message.contains("401"), "{flavour:?}: {message}");
        assert!(message.contains("invalid key [redacted $GAVEL_TEST_API_KEY]"), "{flavour:?}: {message}");
        assert!(message.contains("check the key in `$GAVEL_TEST_API_KEY`"), "{flavour:?}: {message}");
        assert!(!message.contains(KEY), "{flavour:?}: {message}");
        assert!(!format!("{err:?}").contains(KEY), "{flavour:?}");
        assert_eq!(statuses(&server.requests()), [401], "{flavour:?}: not retried");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_stream_hits_the_timeout() {
    for flavour in ALL {
        let server =
            serve([Rule::new(FakeReply::Stall { after_text: Some("{\"decision\":".to_owned()) })]).await;
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let err =
            ask(flavour, &server, &request(RequestKind::Review, dir.path(), &[], Duration::from_secs(1)))
                .await
                .unwrap_err();
        let took = started.elapsed();
        assert_eq!(err, SeatError::Timeout(Duration::from_secs(1)), "{flavour:?}");
        assert!(took >= Duration::from_secs(1) && took < Duration::from_secs(3), "{flavour:?}: {took:?}");
        assert_eq!(server.requests().len(), 1, "{flavour:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_an_engine_error_after_retries() {
    // Bind a port, then free it: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut spec = Flavour::Chat.spec(&format!("http://127.0.0.1:{port}"));
    spec.api_key_env = Some("GAVEL_TEST_SURELY_UNSET_API_KEY".to_owned());
    let seat = HttpSeat::from_spec("down", &spec, Path::new(".")).unwrap().with_retry(RetryPolicy {
        attempts: 3,
        base: Duration::from_millis(10),
        cap: Duration::from_millis(20),
    });
    let dir = tempfile::tempdir().unwrap();
    let err = seat
        .answer(&request(RequestKind::Review, dir.path(), &[], Duration::from_secs(10)))
        .await
        .unwrap_err();
    let SeatError::Engine(message) = &err else { panic!("{err:?}") };
    assert!(message.contains("cannot reach") && message.contains("3 attempts"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builder_reply_writes_the_allowed_file() {
    for flavour in ALL {
        let reply = r#"Done. {"files":[{"path":"./src/out.txt","content":"new line\n"}],"summary":"rewrote out.txt"}"#;
        let server = serve([Rule::text(reply)]).await;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/out.txt"), "old line\n").unwrap();
        let answer = ask(
            flavour,
            &server,
            &request(RequestKind::Write, dir.path(), &["src/out.txt"], Duration::from_secs(10)),
        )
        .await
        .unwrap();
        assert_eq!(answer.text, reply, "{flavour:?}");
        assert_eq!(std::fs::read_to_string(dir.path().join("src/out.txt")).unwrap(), "new line\n");
        let body = server.requests()[0].body.to_string();
        assert!(body.contains("cannot run tools or edit files yourself"), "{flavour:?}: {body}");
        assert!(body.contains("old line"), "{flavour:?}: the builder sees the current file: {body}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builder_reply_outside_writes_is_refused_and_nothing_is_written() {
    for flavour in ALL {
        for bad in ["notes.txt", "../escape.txt"] {
            let reply = format!(
                r#"{{"files":[{{"path":"out.txt","content":"fine"}},{{"path":"{bad}","content":"sneaky"}}]}}"#
            );
            let server = serve([Rule::text(reply)]).await;
            let outer = tempfile::tempdir().unwrap();
            let workspace = outer.path().join("ws");
            std::fs::create_dir(&workspace).unwrap();
            let err = ask(
                flavour,
                &server,
                &request(RequestKind::Write, &workspace, &["out.txt"], Duration::from_secs(10)),
            )
            .await
            .unwrap_err();
            let SeatError::Refused(message) = &err else { panic!("{flavour:?} {bad}: {err:?}") };
            assert!(message.contains(bad) && message.contains("`out.txt`"), "{flavour:?}: {message}");
            assert!(!workspace.join("out.txt").exists(), "{flavour:?} {bad}: the allowed file waits too");
            assert!(!workspace.join("notes.txt").exists(), "{flavour:?} {bad}");
            assert!(!outer.path().join("escape.txt").exists(), "{flavour:?} {bad}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builder_reply_without_files_says_what_to_write() {
    for flavour in ALL {
        let server = serve([Rule::text("I updated the file as asked.")]).await;
        let dir = tempfile::tempdir().unwrap();
        let err = ask(
            flavour,
            &server,
            &request(RequestKind::Write, dir.path(), &["out.txt"], Duration::from_secs(10)),
        )
        .await
        .unwrap_err();
        let SeatError::Engine(message) = &err else { panic!("{flavour:?}: {err:?}") };
        assert!(message.contains(r#"{"files":[{"path""#), "{flavour:?}: {message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_request_never_writes_files() {
    for flavour in ALL {
        let reply = r#"{"decision":"pass","findings":[],"files":[{"path":"out.txt","content":"x"}]}"#;
        let server = serve([Rule::text(reply)]).await;
        let dir = tempfile::tempdir().unwrap();
        let answer = ask(
            flavour,
            &server,
            &request(RequestKind::Review, dir.path(), &["out.txt"], Duration::from_secs(10)),
        )
        .await
        .unwrap();
        assert_eq!(answer.text, reply);
        assert!(!dir.path().join("out.txt").exists(), "{flavour:?}");
    }
}
