//! The HTTP side: one fallback handler that routes by path, picks a rule,
//! logs the request and renders the reply.

use std::fs::File;
use std::io::{self, Write as _};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::Response;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::watch;

use super::log::{LoggedRequest, gemini_model};
use super::request::{Content, Ctx, matches};
use super::script::{Api, FakeReply, FakeScript, FakeUsage};
use super::{NO_RULE_MESSAGE, anthropic, gemini, openai};

/// Request bodies up to this size are accepted (claude sends ~80 KB).
const BODY_LIMIT: usize = 256 * 1024 * 1024;

/// How long a shutdown waits for open connections before cutting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// The model echoed back when a request names none.
const DEFAULT_MODEL: &str = "fake-model";

/// State shared by all connections.
#[derive(Debug)]
pub(crate) struct Shared {
    inner: Mutex<Inner>,
    /// Turns `true` when the server shuts down; stalled streams end then.
    shutdown: watch::Receiver<bool>,
}

#[derive(Debug)]
struct Inner {
    script: FakeScript,
    /// Uses left per rule (`None` = unlimited).
    left: Vec<Option<u32>>,
    log: Vec<LoggedRequest>,
    log_file: Option<File>,
    seq: u64,
}

impl Shared {
    pub(crate) fn new(script: FakeScript, log_file: Option<File>, shutdown: watch::Receiver<bool>) -> Self {
        let left = script.rules.iter().map(|rule| rule.times).collect();
        Self { inner: Mutex::new(Inner { script, left, log: Vec::new(), log_file, seq: 0 }), shutdown }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn requests(&self) -> Vec<LoggedRequest> {
        self.lock().log.clone()
    }

    fn record(&self, entry: LoggedRequest) {
        self.lock().record(entry);
    }
}

impl Inner {
    fn record(&mut self, entry: LoggedRequest) {
        if let Some(file) = &mut self.log_file {
            let line = serde_json::to_string(&entry).unwrap_or_default();
            if let Err(err) = writeln!(file, "{line}") {
                eprintln!("fake-model: cannot append to the request log: {err}");
            }
        }
        self.log.push(entry);
    }

    /// The first matching rule with uses left; consumes one use.
    fn pick(&mut self, api: Api, model: &str, body: &Value) -> Option<(usize, FakeReply, FakeUsage)> {
        let index =
            self.script.rules.iter().enumerate().position(|(index, rule)| {
                self.left[index] != Some(0) && matches(&rule.when, api, model, body)
            })?;
        if let Some(left) = &mut self.left[index] {
            *left -= 1;
        }
        let rule = &self.script.rules[index];
        Some((index, rule.reply.clone(), rule.usage.unwrap_or_default()))
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
}

/// The router: everything goes to one handler.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).layer(DefaultBodyLimit::max(BODY_LIMIT)).with_state(shared)
}

/// Serves until `shutdown` turns true, then closes connections gracefully,
/// cutting any still open after a grace period.
pub(crate) async fn run(listener: tokio::net::TcpListener, shared: Arc<Shared>) {
    let mut signal = shared.shutdown.clone();
    let mut deadline = shared.shutdown.clone();
    let serve = axum::serve(listener, router(shared)).with_graceful_shutdown(async move {
        let _ = signal.wait_for(|down| *down).await;
    });
    let cut = async move {
        let _ = deadline.wait_for(|down| *down).await;
        tokio::time::sleep(SHUTDOWN_GRACE).await;
    };
    tokio::select! {
        result = serve => {
            if let Err(err) = result {
                eprintln!("fake-model: server error: {err}");
            }
        }
        () = cut => {}
    }
}

/// How a generation endpoint answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Json,
    Sse,
    /// Gemini `streamGenerateContent` without `alt=sse`.
    JsonArray,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Endpoint {
    Root,
    Generate {
        api: Api,
        model: Option<String>,
        mode: Mode,
    },
    CountTokens(Api),
    Models {
        gemini: bool,
    },
    /// `GET /v1/responses`: codex's WebSocket probe.
    ResponsesProbe,
    NotFound,
}

fn route(method: &Method, path: &str, query: &str, body: &Value) -> Endpoint {
    let path = path.trim_end_matches('/');
    let get = method == Method::GET || method == Method::HEAD;
    let post = method == Method::POST;
    if path.is_empty() {
        return if get { Endpoint::Root } else { Endpoint::NotFound };
    }
    if post && let Some(model) = gemini_model(path) {
        let operation = path.rsplit_once(':').map_or("", |(_, op)| op);
        let model = Some(model.to_owned());
        return match operation {
            "streamGenerateContent" => {
                let sse = query.split('&').any(|pair| pair == "alt=sse");
                Endpoint::Generate {
                    api: Api::Gemini,
                    model,
                    mode: if sse { Mode::Sse } else { Mode::JsonArray },
                }
            }
            "generateContent" => Endpoint::Generate { api: Api::Gemini, model, mode: Mode::Json },
            "countTokens" => Endpoint::CountTokens(Api::Gemini),
            _ => Endpoint::NotFound,
        };
    }
    let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
    let mode = if stream { Mode::Sse } else { Mode::Json };
    let model = body.get("model").and_then(Value::as_str).map(str::to_owned);
    let rest = path.strip_prefix("/v1").filter(|rest| rest.starts_with('/')).unwrap_or(path);
    match rest {
        "/messages" if post => Endpoint::Generate { api: Api::Anthropic, model, mode },
        "/messages/count_tokens" if post => Endpoint::CountTokens(Api::Anthropic),
        "/responses" if post => Endpoint::Generate { api: Api::Responses, model, mode },
        "/responses" if get => Endpoint::ResponsesProbe,
        "/chat/completions" if post => Endpoint::Generate { api: Api::Chat, model, mode },
        "/models" if get => Endpoint::Models { gemini: false },
        _ if get && (path == "/v1beta/models" || path == "/v1alpha/models") => {
            Endpoint::Models { gemini: true }
        }
        _ => Endpoint::NotFound,
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query = uri.query().unwrap_or_default().to_owned();
    let value =
        if body.is_empty() { Value::Null } else { serde_json::from_slice(&body).unwrap_or(Value::Null) };
    let endpoint = route(&method, uri.path(), &query, &value);
    let entry = LoggedRequest {
        method: method.to_string(),
        path: uri.path().to_owned(),
        query,
        headers: headers
            .iter()
            .map(|(name, value)| {
                (name.as_str().to_owned(), String::from_utf8_lossy(value.as_bytes()).into_owned())
            })
            .collect(),
        body: value,
        rule: None,
        status: 200,
        api: None,
    };
    match endpoint {
        Endpoint::Generate { api, model, mode } => generate(&shared, entry, api, model, mode),
        Endpoint::Root => fixed(&shared, entry, StatusCode::OK, None),
        Endpoint::CountTokens(api) => {
            let tokens = (body.len() as u64 / 4).max(1);
            let reply = match api {
                Api::Gemini => gemini::count_tokens(tokens),
                _ => anthropic::count_tokens(tokens),
            };
            fixed(&shared, entry, StatusCode::OK, Some(&reply))
        }
        Endpoint::Models { gemini } => {
            let names = model_names(&shared);
            fixed(&shared, entry, StatusCode::OK, Some(&models(&names, gemini)))
        }
        Endpoint::ResponsesProbe => {
            let reply = openai::error_body(404);
            fixed(&shared, entry, StatusCode::NOT_FOUND, Some(&reply))
        }
        Endpoint::NotFound => {
            let message = format!("the fake model server has no endpoint {} {}", entry.method, entry.path);
            let reply = json!({"error": {"message": message, "type": "not_found_error", "code": 404}});
            fixed(&shared, entry, StatusCode::NOT_FOUND, Some(&reply))
        }
    }
}

/// Logs and answers a request that consults no rule.
fn fixed(shared: &Shared, mut entry: LoggedRequest, status: StatusCode, reply: Option<&Value>) -> Response {
    entry.status = status.as_u16();
    shared.record(entry);
    match reply {
        Some(reply) => json_response(status, reply),
        None => bare(status, Body::empty()),
    }
}

fn model_names(shared: &Shared) -> Vec<String> {
    let inner = shared.lock();
    let mut names = vec![DEFAULT_MODEL.to_owned()];
    for rule in &inner.script.rules {
        if let Some(model) = &rule.when.model
            && !names.contains(model)
        {
            names.push(model.clone());
        }
    }
    names
}

fn models(names: &[String], gemini: bool) -> Value {
    if gemini {
        let models: Vec<Value> = names
            .iter()
            .map(|name| {
                json!({
                    "name": format!("models/{name}"),
                    "displayName": name,
                    "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
                })
            })
            .collect();
        return json!({"models": models});
    }
    let data: Vec<Value> = names
        .iter()
        .map(|name| {
            json!({
                "id": name, "object": "model", "created": 0, "owned_by": "gavel-fake",
                "type": "model", "display_name": name, "created_at": "2025-01-01T00:00:00Z",
            })
        })
        .collect();
    json!({
        "object": "list",
        "data": data,
        "has_more": false,
        "first_id": names.first(),
        "last_id": names.last(),
    })
}

fn generate(
    shared: &Shared,
    mut entry: LoggedRequest,
    api: Api,
    model: Option<String>,
    mode: Mode,
) -> Response {
    let include_usage =
        entry.body.pointer("/stream_options/include_usage").and_then(Value::as_bool).unwrap_or(false);
    let (picked, seq) = {
        let mut inner = shared.lock();
        let picked = inner.pick(api, model.as_deref().unwrap_or_default(), &entry.body);
        let seq = inner.next_seq();
        entry.api = Some(api);
        entry.rule = picked.as_ref().map(|(index, _, _)| *index);
        entry.status = match &picked {
            None => 500,
            Some((_, FakeReply::Error { status, .. }, _)) => error_status(*status).as_u16(),
            Some(_) => 200,
        };
        inner.record(entry);
        (picked, seq)
    };
    let Some((_, reply, usage)) = picked else {
        let mut body = error_body(api, 500);
        if let Some(error) = body.get_mut("error") {
            error["message"] = json!(format!("{NO_RULE_MESSAGE} this request"));
        }
        return json_response(StatusCode::INTERNAL_SERVER_ERROR, &body);
    };
    let ctx = Ctx {
        model: model.unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
        usage,
        seq,
        created: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        include_usage,
        cuts: Vec::new(),
    };
    match &reply {
        FakeReply::Text(text) => render(api, mode, Content::Text(text), &ctx),
        FakeReply::Pieces(pieces) => {
            let cuts = pieces.iter().scan(0, |at, piece| {
                *at += piece.len();
                Some(*at)
            });
            let ctx = Ctx { cuts: cuts.collect(), ..ctx };
            render(api, mode, Content::Text(&pieces.concat()), &ctx)
        }
        FakeReply::ToolCall { name, input } => render(api, mode, Content::Tool { name, input }, &ctx),
        FakeReply::Error { status, body, retry_after } => {
            let status = error_status(*status);
            let mut response = match body {
                Some(raw) => {
                    let kind = if serde_json::from_str::<Value>(raw).is_ok() {
                        "application/json"
                    } else {
                        "text/plain; charset=utf-8"
                    };
                    let mut response = bare(status, Body::from(raw.clone()));
                    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
                    response
                }
                None => json_response(status, &error_body(api, status.as_u16())),
            };
            if let Some(value) = retry_after.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            response
        }
        FakeReply::Stall { after_text } => stall(shared, api, mode, after_text.as_deref(), &ctx),
    }
}

fn error_status(status: u16) -> StatusCode {
    StatusCode::from_u16(status)
        .ok()
        .filter(|code| (200..600).contains(&code.as_u16()))
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn error_body(api: Api, status: u16) -> Value {
    match api {
        Api::Anthropic => anthropic::error_body(status),
        Api::Responses | Api::Chat => openai::error_body(status),
        Api::Gemini => gemini::error_body(status),
    }
}

fn render(api: Api, mode: Mode, content: Content<'_>, ctx: &Ctx) -> Response {
    if mode == Mode::Sse {
        let body = match api {
            Api::Anthropic => anthropic::sse(content, ctx),
            Api::Responses => openai::responses_sse(content, ctx),
            Api::Chat => openai::chat_sse(content, ctx),
            Api::Gemini => gemini::sse(content, ctx),
        };
        return sse_response(Body::from(body));
    }
    let body = match (api, mode) {
        (Api::Gemini, Mode::JsonArray) => gemini::json_array(content, ctx),
        (Api::Gemini, _) => gemini::json(content, ctx),
        (Api::Anthropic, _) => anthropic::json(content, ctx),
        (Api::Responses, _) => openai::responses_json(content, ctx),
        (Api::Chat, _) => openai::chat_json(content, ctx),
    };
    json_response(StatusCode::OK, &body)
}

/// Sends the head (and for streams the first events), then never finishes;
/// the body fails when the server shuts down.
fn stall(shared: &Shared, api: Api, mode: Mode, after_text: Option<&str>, ctx: &Ctx) -> Response {
    let prefix = if mode == Mode::Sse {
        match api {
            Api::Anthropic => anthropic::stall_prefix(after_text, ctx),
            Api::Responses => openai::responses_stall_prefix(after_text, ctx),
            Api::Chat => openai::chat_stall_prefix(after_text, ctx),
            Api::Gemini => gemini::stall_prefix(after_text, ctx),
        }
    } else {
        String::new()
    };
    let first: Vec<io::Result<Bytes>> =
        if prefix.is_empty() { Vec::new() } else { vec![Ok(Bytes::from(prefix))] };
    let mut shutdown = shared.shutdown.clone();
    let hang = futures_util::stream::once(async move {
        let _ = shutdown.wait_for(|down| *down).await;
        Err::<Bytes, _>(io::Error::other("fake model server shut down"))
    });
    let body = Body::from_stream(futures_util::stream::iter(first).chain(hang));
    if mode == Mode::Sse {
        sse_response(body)
    } else {
        let mut response = bare(StatusCode::OK, body);
        response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }
}

fn bare(status: StatusCode, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut response = bare(status, Body::from(body.to_string()));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn sse_response(body: Body) -> Response {
    let mut response = bare(StatusCode::OK, body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn gen_(api: Api, model: Option<&str>, mode: Mode) -> Endpoint {
        Endpoint::Generate { api, model: model.map(str::to_owned), mode }
    }

    #[test]
    fn routes() {
        let streaming = json!({"model": "m", "stream": true});
        let plain = json!({"model": "m"});
        assert_eq!(route(&Method::HEAD, "/", "", &Value::Null), Endpoint::Root);
        assert_eq!(route(&Method::GET, "/", "", &Value::Null), Endpoint::Root);
        assert_eq!(
            route(&Method::POST, "/v1/messages", "beta=true", &streaming),
            gen_(Api::Anthropic, Some("m"), Mode::Sse)
        );
        assert_eq!(
            route(&Method::POST, "/messages", "", &plain),
            gen_(Api::Anthropic, Some("m"), Mode::Json)
        );
        assert_eq!(
            route(&Method::POST, "/v1/messages/count_tokens", "", &plain),
            Endpoint::CountTokens(Api::Anthropic)
        );
        assert_eq!(
            route(&Method::POST, "/v1/responses", "", &streaming),
            gen_(Api::Responses, Some("m"), Mode::Sse)
        );
        assert_eq!(route(&Method::GET, "/v1/responses", "", &Value::Null), Endpoint::ResponsesProbe);
        assert_eq!(
            route(&Method::POST, "/chat/completions", "", &plain),
            gen_(Api::Chat, Some("m"), Mode::Json)
        );
        assert_eq!(route(&Method::GET, "/v1/models", "", &Value::Null), Endpoint::Models { gemini: false });
        assert_eq!(
            route(&Method::GET, "/v1beta/models", "", &Value::Null),
            Endpoint::Models { gemini: true }
        );
        assert_eq!(
            route(
                &Method::POST,
                "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                "alt=sse",
                &Value::Null
            ),
            gen_(Api::Gemini, Some("gemini-2.5-flash"), Mode::Sse)
        );
        assert_eq!(
            route(&Method::POST, "/v1beta/models/g:streamGenerateContent", "", &Value::Null),
            gen_(Api::Gemini, Some("g"), Mode::JsonArray)
        );
        assert_eq!(
            route(&Method::POST, "/v1beta/models/g:generateContent", "", &streaming),
            gen_(Api::Gemini, Some("g"), Mode::Json)
        );
        assert_eq!(
            route(&Method::POST, "/v1beta/models/g:countTokens", "", &Value::Null),
            Endpoint::CountTokens(Api::Gemini)
        );
        assert_eq!(route(&Method::POST, "/v1/other", "", &Value::Null), Endpoint::NotFound);
        assert_eq!(route(&Method::POST, "/", "", &Value::Null), Endpoint::NotFound);
    }

    #[test]
    fn times_and_order() {
        let (_tx, rx) = watch::channel(false);
        let script = FakeScript::new([
            super::super::Rule::text("first").once(),
            super::super::Rule::text("second").times(2),
        ]);
        let shared = Shared::new(script, None, rx);
        let mut inner = shared.lock();
        let picks: Vec<Option<usize>> =
            (0..4).map(|_| inner.pick(Api::Chat, "m", &Value::Null).map(|(i, _, _)| i)).collect();
        assert_eq!(picks, vec![Some(0), Some(1), Some(1), None]);
    }
}
