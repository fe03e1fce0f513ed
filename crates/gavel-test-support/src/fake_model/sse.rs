//! Server-sent events: framing for the fake server, and a small parser for
//! tests that read its streams.

use serde_json::Value;

/// Frames one event: an optional `event:` line, one `data:` line per line of
/// `data`, and the blank line that ends the event.
pub fn frame(event: Option<&str>, data: &str) -> String {
    let mut out = String::with_capacity(data.len() + 32);
    if let Some(event) = event {
        out.push_str("event: ");
        out.push_str(event);
        out.push('\n');
    }
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    out
}

/// Frames one event whose data is compact JSON.
pub fn json_frame(event: Option<&str>, data: &Value) -> String {
    frame(event, &data.to_string())
}

/// One parsed event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

impl SseEvent {
    /// The data parsed as JSON (`None` when it is not JSON, e.g. `[DONE]`).
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.data).ok()
    }
}

/// Parses a complete SSE body into events. Comment lines (`:`) and fields
/// other than `event` and `data` are ignored; events without data are
/// dropped, as the SSE spec says. An unterminated last event is kept.
pub fn parse(body: &str) -> Vec<SseEvent> {
    let mut events = Vec::new();
    let mut event: Option<String> = None;
    let mut data: Option<String> = None;
    let mut flush = |event: &mut Option<String>, data: &mut Option<String>| {
        if let Some(data) = data.take() {
            events.push(SseEvent { event: event.take(), data });
        }
        *event = None;
    };
    for line in body.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            flush(&mut event, &mut data);
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => event = Some(value.to_owned()),
            "data" => match &mut data {
                Some(existing) => {
                    existing.push('\n');
                    existing.push_str(value);
                }
                None => data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    flush(&mut event, &mut data);
    events
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_named_and_unnamed_events() {
        assert_eq!(frame(Some("ping"), "{}"), "event: ping\ndata: {}\n\n");
        assert_eq!(frame(None, "[DONE]"), "data: [DONE]\n\n");
        assert_eq!(json_frame(None, &json!({"a":1})), "data: {\"a\":1}\n\n");
    }

    #[test]
    fn multi_line_data_gets_one_data_line_each() {
        assert_eq!(frame(None, "a\nb\r\nc"), "data: a\ndata: b\ndata: c\n\n");
        let parsed = parse(&frame(Some("x"), "a\nb"));
        assert_eq!(parsed, vec![SseEvent { event: Some("x".into()), data: "a\nb".into() }]);
    }

    #[test]
    fn json_with_newlines_in_strings_stays_on_one_line() {
        let data = json!({"text": "line1\nline2"});
        let framed = json_frame(Some("t"), &data);
        assert_eq!(framed.matches('\n').count(), 3);
        assert_eq!(parse(&framed)[0].json().unwrap(), data);
    }

    #[test]
    fn parse_round_trips_a_stream() {
        let body = [
            frame(Some("message_start"), "{\"n\":1}"),
            ": a comment\n\n".to_owned(),
            frame(None, "{\"n\":2}"),
            "data: [DONE]\r\n\r\n".to_owned(),
            "data: tail".to_owned(),
        ]
        .concat();
        let events = parse(&body);
        assert_eq!(events.len(), 4);
        assert_eq!(events[0].event.as_deref(), Some("message_start"));
        assert_eq!(events[1].event, None);
        assert_eq!(events[1].json().unwrap(), json!({"n":2}));
        assert_eq!(events[2].data, "[DONE]");
        assert!(events[2].json().is_none());
        assert_eq!(events[3].data, "tail");
    }

    #[test]
    fn event_name_does_not_leak_into_the_next_event() {
        let events = parse("event: a\n\ndata: x\n\n");
        assert_eq!(events, vec![SseEvent { event: None, data: "x".into() }]);
    }
}
