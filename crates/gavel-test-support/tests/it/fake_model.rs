//! The fake model server over real HTTP on loopback: every API in JSON and
//! SSE, tool calls, errors, rule selection, stalls, the request log, and the
//! `fake-model` binary.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gavel_test_support::TempWorkspace;
use gavel_test_support::fake_model::sse::{self, SseEvent};
use gavel_test_support::fake_model::{
    Api, FakeModel, FakeReply, FakeScript, FakeUsage, Match, NO_RULE_MESSAGE, Rule,
};
use pretty_assertions::assert_eq;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

const SHORT: Duration = Duration::from_millis(300);
const LONG: Duration = Duration::from_secs(10);

fn client() -> reqwest::Client {
    // Plain http only, but reqwest builds its TLS config eagerly.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

struct Reply {
    status: u16,
    headers: HeaderMap,
    text: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text))
    }

    fn events(&self) -> Vec<SseEvent> {
        assert_eq!(self.header("content-type"), Some("text/event-stream"), "{}", self.text);
        sse::parse(&self.text)
    }

    fn data(&self) -> Vec<Value> {
        self.events().iter().filter_map(SseEvent::json).collect()
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

async fn post(server: &FakeModel, path: &str, body: &Value) -> Reply {
    post_with(server, path, body, &[]).await
}

async fn post_with(server: &FakeModel, path: &str, body: &Value, headers: &[(&str, &str)]) -> Reply {
    let mut request = client().post(format!("{}{path}", server.url())).body(body.to_string());
    request = request.header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = tokio::time::timeout(LONG, request.send()).await.unwrap().unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = tokio::time::timeout(LONG, response.text()).await.unwrap().unwrap();
    Reply { status, headers, text }
}

async fn start(rules: impl IntoIterator<Item = Rule>) -> FakeModel {
    FakeModel::start(FakeScript::new(rules)).await.unwrap()
}

fn write_input() -> Value {
    json!({"file_path": "/tmp/work/hello.txt", "content": "hi\n"})
}

// ------------------------------------------------------------------ Anthropic

fn anthropic_body(stream: bool) -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 64000,
        "stream": stream,
        "system": [{"type": "text", "text": "You are a reviewer."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Review this repo"}]},
            {"role": "system", "content": "a mid-conversation system message"}
        ],
        "tools": [{"name": "Write", "input_schema": {"type": "object"}}],
        "thinking": {"type": "adaptive"},
        "some_future_field": {"x": 1},
    })
}

#[tokio::test]
async fn anthropic_json_text() {
    let server = start([Rule::text("{\"decision\":\"pass\"}").usage(FakeUsage::new(123, 45, 7))]).await;
    let reply =
        post_with(&server, "/v1/messages", &anthropic_body(false), &[("x-api-key", "sk-ant-test")]).await;
    assert_eq!(reply.status, 200);
    let body = reply.json();
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["content"], json!([{"type": "text", "text": "{\"decision\":\"pass\"}"}]));
    assert_eq!(body["stop_reason"], "end_turn");
    assert_eq!(body["usage"]["input_tokens"], 123);
    assert_eq!(body["usage"]["output_tokens"], 45);
    assert_eq!(body["usage"]["cache_read_input_tokens"], 7);

    let log = server.requests();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].method, "POST");
    assert_eq!(log[0].path, "/v1/messages");
    assert_eq!(log[0].header("X-Api-Key"), Some("sk-ant-test"));
    assert_eq!(log[0].body, anthropic_body(false));
    assert_eq!(log[0].rule, Some(0));
    assert_eq!(log[0].status, 200);
    assert_eq!(log[0].api, Some(Api::Anthropic));
}

#[tokio::test]
async fn anthropic_sse_text() {
    let server = start([Rule::text("hello there")]).await;
    let reply = post(&server, "/v1/messages?beta=true", &anthropic_body(true)).await;
    assert_eq!(reply.status, 200);
    let events = reply.events();
    let names: Vec<&str> = events.iter().map(|e| e.event.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    let data: Vec<Value> = events.iter().map(|e| e.json().unwrap()).collect();
    for (event, data) in events.iter().zip(&data) {
        assert_eq!(data["type"].as_str(), event.event.as_deref());
    }
    assert_eq!(data[0]["message"]["usage"]["input_tokens"], 100);
    assert_eq!(data[0]["message"]["model"], "claude-test");
    assert_eq!(data[1]["content_block"], json!({"type": "text", "text": ""}));
    assert_eq!(data[2]["delta"], json!({"type": "text_delta", "text": "hello there"}));
    assert_eq!(data[4]["delta"]["stop_reason"], "end_turn");
    assert_eq!(data[4]["usage"]["output_tokens"], 20);
    assert_eq!(server.requests()[0].query, "beta=true");
}

#[tokio::test]
async fn anthropic_tool_call_json_and_sse() {
    let server = start([Rule::tool_call("Write", write_input())]).await;
    let body = post(&server, "/v1/messages", &anthropic_body(false)).await.json();
    assert_eq!(body["stop_reason"], "tool_use");
    let block = &body["content"][0];
    assert_eq!(block["type"], "tool_use");
    assert_eq!(block["name"], "Write");
    assert_eq!(block["input"], write_input());
    assert!(block["id"].as_str().unwrap().starts_with("toolu_"));

    let data = post(&server, "/v1/messages", &anthropic_body(true)).await.data();
    assert_eq!(data[1]["content_block"]["type"], "tool_use");
    assert_eq!(data[1]["content_block"]["name"], "Write");
    assert_eq!(data[2]["delta"]["type"], "input_json_delta");
    let partial: Value = serde_json::from_str(data[2]["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(partial, write_input());
    assert_eq!(data[4]["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn anthropic_probe_and_count_tokens() {
    let server = start([]).await;
    let head = client().head(server.url()).send().await.unwrap();
    assert_eq!(head.status().as_u16(), 200);
    let get = client().get(format!("{}/", server.url())).send().await.unwrap();
    assert_eq!(get.status().as_u16(), 200);
    let count = post(&server, "/v1/messages/count_tokens?beta=true", &anthropic_body(false)).await;
    assert_eq!(count.status, 200);
    assert!(count.json()["input_tokens"].as_u64().unwrap() > 0);
    let log = server.requests();
    assert_eq!(log.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(), ["HEAD", "GET", "POST"]);
    assert!(log.iter().all(|r| r.rule.is_none() && r.status == 200 && r.api.is_none()));
}

// ------------------------------------------------------------- OpenAI Responses

fn responses_body(input: &Value) -> Value {
    json!({
        "model": "gpt-5.5",
        "stream": true,
        "input": input,
        "tools": [{"type": "custom", "name": "apply_patch"}, {"type": "function", "name": "exec_command"}],
        "store": false,
    })
}

fn user_input() -> Value {
    json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}])
}

fn types(data: &[Value]) -> Vec<&str> {
    data.iter().map(|d| d["type"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn responses_sse_text() {
    let server = start([Rule::text("done").usage(FakeUsage::new(200, 30, 50))]).await;
    let reply =
        post_with(&server, "/v1/responses", &responses_body(&user_input()), &[("authorization", "Bearer k")])
            .await;
    let events = reply.events();
    let data = reply.data();
    assert_eq!(
        types(&data),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    for (i, (event, data)) in events.iter().zip(&data).enumerate() {
        assert_eq!(data["type"].as_str(), event.event.as_deref());
        assert_eq!(data["sequence_number"], i);
    }
    assert_eq!(data[4]["delta"], "done");
    let item = &data[7]["item"];
    assert_eq!(item["type"], "message");
    assert_eq!(item["content"][0], json!({"type": "output_text", "text": "done", "annotations": []}));
    let response = &data[8]["response"];
    assert_eq!(response["status"], "completed");
    assert!(response["id"].as_str().unwrap().starts_with("resp_"));
    assert_eq!(response["output"][0], *item);
    assert_eq!(
        response["usage"],
        json!({
            "input_tokens": 250,
            "input_tokens_details": {"cached_tokens": 50},
            "output_tokens": 30,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 280,
        })
    );
    assert_eq!(server.requests()[0].header("authorization"), Some("Bearer k"));
}

#[tokio::test]
async fn responses_function_and_custom_tool_calls() {
    let patch = "*** Begin Patch\n*** Add File: made.txt\n+hi\n*** End Patch\n";
    let server = start([
        Rule::tool_call("exec_command", json!({"cmd": "echo hi > f"})).once(),
        Rule::tool_call("apply_patch", json!(patch)).once(),
    ])
    .await;
    let data = post(&server, "/v1/responses", &responses_body(&user_input())).await.data();
    assert_eq!(data[2]["item"]["type"], "function_call");
    assert!(types(&data).contains(&"response.function_call_arguments.delta"));
    let item = &data[data.len() - 2]["item"];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "exec_command");
    assert!(item["call_id"].as_str().unwrap().starts_with("call_"));
    let args: Value = serde_json::from_str(item["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"cmd": "echo hi > f"}));

    let data = post(&server, "/v1/responses", &responses_body(&user_input())).await.data();
    assert!(types(&data).contains(&"response.custom_tool_call_input.delta"));
    let item = &data[data.len() - 2]["item"];
    assert_eq!(item["type"], "custom_tool_call");
    assert_eq!(item["name"], "apply_patch");
    assert_eq!(item["input"], patch);
    assert_eq!(data[data.len() - 1]["response"]["output"][0], *item);
}

#[tokio::test]
async fn responses_json_probe_and_models() {
    let server = start([Rule::text("plain").when(Match::any().model("gpt-5.5"))]).await;
    let mut body = responses_body(&json!("a string input"));
    body["stream"] = json!(false);
    let reply = post(&server, "/v1/responses", &body).await.json();
    assert_eq!(reply["object"], "response");
    assert_eq!(reply["status"], "completed");
    assert_eq!(reply["output"][0]["content"][0]["text"], "plain");
    assert_eq!(reply["usage"]["input_tokens"], 100);

    let probe = client().get(format!("{}/v1/responses", server.url())).send().await.unwrap();
    assert_eq!(probe.status().as_u16(), 404);
    let models: Value = serde_json::from_str(
        &client().get(format!("{}/v1/models", server.url())).send().await.unwrap().text().await.unwrap(),
    )
    .unwrap();
    let ids: Vec<&str> =
        models["data"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["fake-model", "gpt-5.5"]);
}

// ------------------------------------------------------- OpenAI Chat Completions

fn chat_body(stream: bool, tools: bool, messages: &Value) -> Value {
    let mut body =
        json!({"model": "fake-model", "max_tokens": 32000, "messages": messages, "stream": stream});
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if tools {
        body["tools"] = json!([{"type": "function", "function": {"name": "write", "parameters": {}}}]);
    }
    body
}

fn chat_user() -> Value {
    json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "go"}])
}

#[tokio::test]
async fn chat_sse_text_with_usage_chunk() {
    let server = start([Rule::text("hi").usage(FakeUsage::new(100, 30, 50))]).await;
    let reply = post(&server, "/v1/chat/completions", &chat_body(true, true, &chat_user())).await;
    let events = reply.events();
    assert!(events.iter().all(|e| e.event.is_none()));
    assert_eq!(events.last().unwrap().data, "[DONE]");
    let data = reply.data();
    assert_eq!(data.len(), 4);
    assert!(data.iter().all(|d| d["object"] == "chat.completion.chunk"));
    assert_eq!(data[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(data[1]["choices"][0]["delta"]["content"], "hi");
    assert_eq!(data[2]["choices"][0]["finish_reason"], "stop");
    assert_eq!(data[3]["choices"], json!([]));
    assert_eq!(
        data[3]["usage"],
        json!({
            "prompt_tokens": 150,
            "completion_tokens": 30,
            "total_tokens": 180,
            "prompt_tokens_details": {"cached_tokens": 50},
            "completion_tokens_details": {"reasoning_tokens": 0},
        })
    );

    // Without include_usage there is no usage chunk.
    let mut body = chat_body(true, true, &chat_user());
    body.as_object_mut().unwrap().remove("stream_options");
    let data = post(&server, "/chat/completions", &body).await.data();
    assert_eq!(data.len(), 3);
    assert!(data.iter().all(|d| d.get("usage").is_none()));
}

#[tokio::test]
async fn chat_tool_call_sse_and_json() {
    let input = json!({"filePath": "/w/a.txt", "content": "x"});
    let server = start([Rule::tool_call("write", input.clone())]).await;
    let data = post(&server, "/v1/chat/completions", &chat_body(true, true, &chat_user())).await.data();
    let call = &data[1]["choices"][0]["delta"]["tool_calls"][0];
    assert_eq!(call["index"], 0);
    assert_eq!(call["type"], "function");
    assert_eq!(call["function"]["name"], "write");
    assert!(call["id"].as_str().unwrap().starts_with("call_"));
    let args: Value = serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args, input);
    assert_eq!(data[2]["choices"][0]["finish_reason"], "tool_calls");

    let body = post(&server, "/v1/chat/completions", &chat_body(false, true, &chat_user())).await.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(body["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "write");
    assert_eq!(body["usage"]["prompt_tokens"], 100);
    assert_eq!(body["usage"]["completion_tokens"], 20);
    assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
}

#[tokio::test]
async fn chat_json_text_and_tools_offered() {
    // opencode's title request carries no tools; the main request does.
    let server = start([
        Rule::text("A title").when(Match::any().tools_offered(false)),
        Rule::text("main answer").when(Match::any().api(Api::Chat)),
    ])
    .await;
    let title = post(&server, "/v1/chat/completions", &chat_body(false, false, &chat_user())).await.json();
    assert_eq!(title["choices"][0]["message"]["content"], "A title");
    assert_eq!(title["choices"][0]["finish_reason"], "stop");
    let main = post(&server, "/v1/chat/completions", &chat_body(false, true, &chat_user())).await.json();
    assert_eq!(main["choices"][0]["message"]["content"], "main answer");
    let rules: Vec<Option<usize>> = server.requests().iter().map(|r| r.rule).collect();
    assert_eq!(rules, [Some(0), Some(1)]);
}

// ------------------------------------------------------------------- Gemini

fn gemini_body(contents: &Value) -> Value {
    json!({
        "contents": contents,
        "systemInstruction": {"parts": [{"text": "be a reviewer"}]},
        "tools": [{"functionDeclarations": [{"name": "write_file"}]}],
        "generationConfig": {"temperature": 0},
    })
}

fn gemini_user() -> Value {
    json!([{"role": "user", "parts": [{"text": "review"}]}])
}

const GEMINI_STREAM: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";

#[tokio::test]
async fn gemini_sse_text_and_tool_call() {
    let server = start([
        Rule::tool_call("write_file", json!({"file_path": "/w/x", "content": "y"}))
            .when(Match::any().after_tool_result(false)),
        Rule::text("final").when(Match::any().api(Api::Gemini).model("gemini-2.5-flash")),
    ])
    .await;
    let reply =
        post_with(&server, GEMINI_STREAM, &gemini_body(&gemini_user()), &[("x-goog-api-key", "g-key")]).await;
    let data = reply.data();
    assert_eq!(data.len(), 1);
    let candidate = &data[0]["candidates"][0];
    assert_eq!(candidate["content"]["role"], "model");
    assert_eq!(
        candidate["content"]["parts"][0],
        json!({"functionCall": {"name": "write_file", "args": {"file_path": "/w/x", "content": "y"}}})
    );
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(data[0]["modelVersion"], "gemini-2.5-flash");
    assert_eq!(
        data[0]["usageMetadata"],
        json!({"promptTokenCount": 100, "candidatesTokenCount": 20, "totalTokenCount": 120, "cachedContentTokenCount": 0})
    );

    let after = json!([
        {"role": "user", "parts": [{"text": "review"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "write_file", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "write_file", "id": "1", "response": {"output": "ok"}}}]}
    ]);
    let data = post(&server, GEMINI_STREAM, &gemini_body(&after)).await.data();
    assert_eq!(data[0]["candidates"][0]["content"]["parts"][0], json!({"text": "final"}));

    let log = server.requests();
    assert_eq!(log[0].header("x-goog-api-key"), Some("g-key"));
    assert_eq!(log[0].query, "alt=sse");
    assert_eq!(log[0].model(), Some("gemini-2.5-flash"));
    assert_eq!(log.iter().map(|r| r.rule).collect::<Vec<_>>(), [Some(0), Some(1)]);
}

#[tokio::test]
async fn gemini_json_forms_and_count_tokens() {
    let server = start([Rule::text("routed")]).await;
    let one =
        post(&server, "/v1beta/models/gemini-3.5-flash-lite:generateContent", &gemini_body(&gemini_user()))
            .await;
    assert_eq!(one.json()["candidates"][0]["content"]["parts"][0]["text"], "routed");
    let array =
        post(&server, "/v1beta/models/g:streamGenerateContent", &gemini_body(&gemini_user())).await.json();
    assert_eq!(array[0]["candidates"][0]["content"]["parts"][0]["text"], "routed");
    let count = post(&server, "/v1beta/models/g:countTokens", &gemini_body(&gemini_user())).await.json();
    assert!(count["totalTokens"].as_u64().unwrap() > 0);
    let statuses: Vec<(Option<usize>, u16)> = server.requests().iter().map(|r| (r.rule, r.status)).collect();
    assert_eq!(statuses, [(Some(0), 200), (Some(0), 200), (None, 200)]);
}

// ------------------------------------------------------------ rules, errors

#[tokio::test]
async fn errors_carry_retry_after_and_api_shaped_bodies() {
    let rate_limited = FakeReply::Error { status: 429, body: None, retry_after: Some("2".into()) };
    let server = start([Rule::new(rate_limited)]).await;

    let anthropic = post(&server, "/v1/messages", &anthropic_body(true)).await;
    assert_eq!(anthropic.status, 429);
    assert_eq!(anthropic.header("retry-after"), Some("2"));
    assert_eq!(anthropic.header("content-type"), Some("application/json"));
    let body = anthropic.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "rate_limit_error");

    let responses = post(&server, "/v1/responses", &responses_body(&user_input())).await;
    assert_eq!(responses.status, 429);
    assert_eq!(responses.header("retry-after"), Some("2"));
    assert_eq!(responses.json()["error"]["code"], "rate_limit_exceeded");

    let chat = post(&server, "/v1/chat/completions", &chat_body(true, true, &chat_user())).await;
    assert_eq!(chat.status, 429);
    assert!(chat.json()["error"]["message"].is_string());

    let gemini = post(&server, GEMINI_STREAM, &gemini_body(&gemini_user())).await;
    assert_eq!(gemini.status, 429);
    assert_eq!(gemini.json()["error"]["status"], "RESOURCE_EXHAUSTED");

    assert!(server.requests().iter().all(|r| r.status == 429 && r.rule == Some(0)));
}

#[tokio::test]
async fn custom_error_bodies_and_401() {
    let server = start([
        Rule::new(FakeReply::Error { status: 500, body: Some("boom".into()), retry_after: None }).once(),
        Rule::error(401).once(),
    ])
    .await;
    let boom = post(&server, "/v1/messages", &anthropic_body(false)).await;
    assert_eq!(boom.status, 500);
    assert_eq!(boom.text, "boom");
    assert!(boom.header("content-type").unwrap().starts_with("text/plain"));
    assert_eq!(boom.header("retry-after"), None);
    let unauthorized = post(&server, "/v1/messages", &anthropic_body(false)).await;
    assert_eq!(unauthorized.status, 401);
    assert_eq!(unauthorized.json()["error"]["type"], "authentication_error");
}

#[tokio::test]
async fn rules_are_tried_in_order_and_times_are_consumed() {
    let server = start([
        Rule::text("first").once(),
        Rule::text("second").times(2),
        Rule::text("never").when(Match::any().api(Api::Gemini)),
        Rule::text("rest"),
    ])
    .await;
    let mut texts = Vec::new();
    for _ in 0..5 {
        let body = post(&server, "/v1/messages", &anthropic_body(false)).await.json();
        texts.push(body["content"][0]["text"].as_str().unwrap().to_owned());
    }
    assert_eq!(texts, ["first", "second", "second", "rest", "rest"]);
    let rules: Vec<Option<usize>> = server.requests().iter().map(|r| r.rule).collect();
    assert_eq!(rules, [Some(0), Some(1), Some(1), Some(3), Some(3)]);
}

#[tokio::test]
async fn after_tool_result_drives_a_round_trip() {
    let server = start([
        Rule::tool_call("Write", write_input()).when(Match::any().after_tool_result(false)),
        Rule::text("{\"decision\":\"pass\"}").when(Match::any().after_tool_result(true)),
    ])
    .await;
    let first = post(&server, "/v1/messages", &anthropic_body(false)).await.json();
    assert_eq!(first["stop_reason"], "tool_use");
    let mut second = anthropic_body(false);
    second["messages"] = json!([
        {"role": "user", "content": "Review this repo"},
        {"role": "assistant", "content": [first["content"][0].clone()]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first["content"][0]["id"], "content": "File created"}]},
    ]);
    let second = post(&server, "/v1/messages", &second).await.json();
    assert_eq!(second["stop_reason"], "end_turn");
    assert_eq!(second["content"][0]["text"], "{\"decision\":\"pass\"}");

    // Responses: custom_tool_call_output counts as a tool result.
    let mut input = user_input();
    input
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "custom_tool_call_output", "call_id": "c", "output": "ok"}));
    let data = post(&server, "/v1/responses", &responses_body(&input)).await.data();
    assert_eq!(data.last().unwrap()["response"]["output"][0]["type"], "message");
    // Chat: a role "tool" message does.
    let messages =
        json!([{"role": "user", "content": "go"}, {"role": "tool", "tool_call_id": "c", "content": "ok"}]);
    let body = post(&server, "/v1/chat/completions", &chat_body(false, true, &messages)).await.json();
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
}

#[tokio::test]
async fn prompt_contains_selects_a_rule() {
    let server = start([
        Rule::text("title").when(Match::any().prompt_contains("You are a title generator")),
        Rule::text("main"),
    ])
    .await;
    let title = chat_body(
        false,
        false,
        &json!([{"role": "system", "content": "You are a title generator.\nBe short"}]),
    );
    let reply = post(&server, "/v1/chat/completions", &title).await.json();
    assert_eq!(reply["choices"][0]["message"]["content"], "title");
    let reply = post(&server, "/v1/chat/completions", &chat_body(false, true, &chat_user())).await.json();
    assert_eq!(reply["choices"][0]["message"]["content"], "main");
}

#[tokio::test]
async fn no_matching_rule_is_a_logged_500() {
    let server = start([Rule::text("only gemini").when(Match::any().api(Api::Gemini))]).await;
    let reply = post(&server, "/v1/messages", &anthropic_body(true)).await;
    assert_eq!(reply.status, 500);
    let body = reply.json();
    assert_eq!(body["type"], "error");
    assert!(body["error"]["message"].as_str().unwrap().contains(NO_RULE_MESSAGE), "{body}");
    let chat = post(&server, "/v1/chat/completions", &chat_body(false, true, &chat_user())).await;
    assert_eq!(chat.status, 500);
    assert!(chat.text.contains(NO_RULE_MESSAGE));
    let log = server.requests();
    assert_eq!(log.len(), 2);
    assert!(log.iter().all(|r| r.rule.is_none() && r.status == 500));
    assert_eq!(log[0].api, Some(Api::Anthropic));
}

#[tokio::test]
async fn unknown_paths_are_logged_404s() {
    let server = start([Rule::text("x")]).await;
    let reply = post(&server, "/v2/whatever", &json!({})).await;
    assert_eq!(reply.status, 404);
    let log = server.requests();
    assert_eq!((log[0].path.as_str(), log[0].status, log[0].rule), ("/v2/whatever", 404, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_consume_each_use_once() {
    let server = start([Rule::text("limited").times(4), Rule::text("fallback")]).await;
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let url = format!("{}/v1/messages", server.url());
            tokio::spawn(async move {
                let body = anthropic_body(false).to_string();
                let text = client().post(url).body(body).send().await.unwrap().text().await.unwrap();
                let reply: Value = serde_json::from_str(&text).unwrap();
                reply["content"][0]["text"].as_str().unwrap().to_owned()
            })
        })
        .collect();
    let mut limited = 0;
    for task in tasks {
        if task.await.unwrap() == "limited" {
            limited += 1;
        }
    }
    assert_eq!(limited, 4);
    assert_eq!(server.requests().len(), 10);
}

// ------------------------------------------------------------------- stalls

/// Reads chunks until the body so far contains `needle`.
async fn read_until(response: &mut reqwest::Response, needle: &str) -> String {
    let mut seen = String::new();
    while !seen.contains(needle) {
        let chunk = tokio::time::timeout(LONG, response.chunk()).await.unwrap().unwrap();
        let chunk = chunk.unwrap_or_else(|| panic!("stream ended before {needle:?}: {seen}"));
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    seen
}

#[tokio::test]
async fn stalled_stream_sends_head_and_partial_text_then_hangs() {
    let server = start([Rule::new(FakeReply::Stall { after_text: Some("partial".into()) })]).await;
    let url = format!("{}/v1/messages", server.url());
    let request = client().post(url).body(anthropic_body(true).to_string());
    let mut response = tokio::time::timeout(LONG, request.send()).await.unwrap().unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let seen = read_until(&mut response, "partial").await;
    assert!(seen.contains("message_start"), "{seen}");
    assert!(tokio::time::timeout(SHORT, response.chunk()).await.is_err(), "the stream should hang");
    assert_eq!(server.requests()[0].status, 200);

    // Dropping the server cuts the stalled stream.
    drop(server);
    let end = tokio::time::timeout(LONG, response.chunk()).await.unwrap();
    assert!(end.is_err() || end.unwrap().is_none());
}

#[tokio::test]
async fn stalled_streams_for_other_apis() {
    let server = start([Rule::new(FakeReply::Stall { after_text: Some("partial".into()) })]).await;
    for (path, body) in [
        ("/v1/responses", responses_body(&user_input())),
        ("/v1/chat/completions", chat_body(true, true, &chat_user())),
        (GEMINI_STREAM, gemini_body(&gemini_user())),
    ] {
        let request = client().post(format!("{}{path}", server.url())).body(body.to_string());
        let mut response = tokio::time::timeout(LONG, request.send()).await.unwrap().unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        read_until(&mut response, "partial").await;
        assert!(tokio::time::timeout(SHORT, response.chunk()).await.is_err(), "{path} should hang");
    }
}

#[tokio::test]
async fn stalled_json_reply_sends_only_the_head() {
    let server = start([Rule::stall()]).await;
    let request = client().post(format!("{}/v1/chat/completions", server.url()));
    let request = request.body(chat_body(false, true, &chat_user()).to_string());
    let mut response = tokio::time::timeout(LONG, request.send()).await.unwrap().unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert!(tokio::time::timeout(SHORT, response.chunk()).await.is_err());
}

#[tokio::test]
async fn a_client_timeout_fires_on_a_stall() {
    let server = start([Rule::stall()]).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder().no_proxy().timeout(SHORT).build().unwrap();
    let started = Instant::now();
    let result = async {
        let response = client
            .post(format!("{}/v1/messages", server.url()))
            .body(anthropic_body(true).to_string())
            .send()
            .await?;
        response.text().await
    }
    .await;
    let err = result.unwrap_err();
    assert!(err.is_timeout(), "{err:?}");
    assert!(started.elapsed() < LONG);
}

// ------------------------------------------------------- blocking + shutdown

/// A raw HTTP/1.1 exchange, to test without a runtime.
fn raw_request(port: u16, request: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(LONG)).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap();
    reply
}

#[test]
fn start_blocking_serves_sync_callers_and_stops_on_drop() {
    let server = FakeModel::start_blocking(FakeScript::new([Rule::text("sync hello")])).unwrap();
    let url = server.url();
    assert_eq!(url, format!("http://127.0.0.1:{}", server.port()));
    assert!(!url.ends_with('/'));

    let head = raw_request(server.port(), "HEAD / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    let body = json!({"model": "m", "messages": []}).to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let reply = raw_request(server.port(), &request);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("sync hello"), "{reply}");
    assert_eq!(server.requests().len(), 2);

    let port = server.port();
    drop(server);
    // start_blocking's drop joins the server thread: the port is closed now.
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[tokio::test]
async fn dropping_an_async_server_stops_it() {
    let server = start([]).await;
    let port = server.port();
    drop(server);
    let deadline = Instant::now() + LONG;
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
        assert!(Instant::now() < deadline, "server still accepting after drop");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// ------------------------------------------------------------------- binary

fn fake_model_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_fake-model"))
}

#[test]
fn binary_prints_url_writes_port_file_logs_and_stops_on_sigterm() {
    let ws = TempWorkspace::new().unwrap();
    let script = FakeScript::new([Rule::text("from the binary")]);
    let script_path = ws.write("script.json", script.to_json()).unwrap();
    let port_file = ws.join("port");
    let log_file = ws.join("requests.jsonl");
    let mut child = fake_model_bin()
        .arg("--script")
        .arg(&script_path)
        .arg("--port-file")
        .arg(&port_file)
        .arg("--log")
        .arg(&log_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let url = first.trim();
    let port: u16 = url.strip_prefix("http://127.0.0.1:").unwrap().parse().unwrap();
    // The port file is written right after the URL is printed.
    let deadline = Instant::now() + LONG;
    let from_file = loop {
        if let Ok(text) = std::fs::read_to_string(&port_file) {
            break text;
        }
        assert!(Instant::now() < deadline, "port file never appeared");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(from_file.trim(), port.to_string());

    let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\nconnection: close\r\nauthorization: Bearer bin-key\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let reply = raw_request(port, &request);
    assert!(reply.contains("from the binary"), "{reply}");

    let log = std::fs::read_to_string(&log_file).unwrap();
    let lines: Vec<gavel_test_support::LoggedRequest> =
        log.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].path, "/v1/chat/completions");
    assert_eq!(lines[0].header("authorization"), Some("Bearer bin-key"));
    assert_eq!(lines[0].rule, Some(0));

    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let deadline = Instant::now() + LONG;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "fake-model did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status:?}");
}

#[test]
fn binary_rejects_bad_usage() {
    let output = fake_model_bin().arg("--port").arg("1").stdin(Stdio::null()).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--script is required") && stderr.contains("usage:"), "{stderr}");

    let ws = TempWorkspace::new().unwrap();
    let bad = ws.write("bad.json", "{\"rules\":[{\"reply\":{\"txt\":\"x\"}}]}").unwrap();
    let output = fake_model_bin().arg("--script").arg(&bad).stdin(Stdio::null()).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("bad.json"));
}
