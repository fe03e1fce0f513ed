//! The reply reader, case by case: every shape of reply we have seen models
//! write, and the exact object (or error) each must read as.

use gavel_domain::reply::{MAX_DEPTH, Position, ReplyError, first_json_object};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// What a case must read as.
#[derive(Debug, PartialEq)]
enum Want {
    Object(Value),
    Error(ReplyError),
}

fn ok(value: Value) -> Want {
    Want::Object(value)
}

fn err(error: ReplyError) -> Want {
    Want::Error(error)
}

fn pos(offset: usize, line: usize, column: usize) -> Position {
    Position { offset, line, column }
}

fn read(text: &str) -> Want {
    match first_json_object(text) {
        Ok(map) => Want::Object(Value::Object(map)),
        Err(e) => Want::Error(e),
    }
}

fn nested(depth: usize) -> (String, Value) {
    let mut text = "0".to_owned();
    let mut value = json!(0);
    for _ in 0..depth {
        text = format!("{{\"n\":{text}}}");
        value = json!({ "n": value });
    }
    (text, value)
}

#[allow(clippy::too_many_lines)]
fn cases() -> Vec<(&'static str, String, Want)> {
    let (deep_text, deep_value) = nested(60);
    let (max_text, max_value) = nested(MAX_DEPTH);
    let (too_deep_text, _) = nested(MAX_DEPTH + 1);
    vec![
        ("bare object", r#"{"a":1}"#.into(), ok(json!({"a": 1}))),
        ("empty object", "{}".into(), ok(json!({}))),
        (
            "json fence",
            "```json\n{\"decision\": \"pass\", \"findings\": []}\n```".into(),
            ok(json!({"decision": "pass", "findings": []})),
        ),
        (
            "bare fence",
            "```\n{\"decision\": \"pass\"}\n```\n".into(),
            ok(json!({"decision": "pass"})),
        ),
        (
            "prose before and after",
            "I reviewed the work.\nHere is my verdict: {\"decision\": \"revise\"} Let me know.".into(),
            ok(json!({"decision": "revise"})),
        ),
        (
            "prose and fence around",
            "Sure! Here you go:\n\n```json\n{\n  \"votes\": []\n}\n```\n\nHope this helps.".into(),
            ok(json!({"votes": []})),
        ),
        (
            "braces inside strings",
            r#"{"evidence": "fn f() { if x { return } }", "fix": "}}}{{{"}"#.into(),
            ok(json!({"evidence": "fn f() { if x { return } }", "fix": "}}}{{{"})),
        ),
        (
            "escaped quotes in strings",
            r#"{"evidence": "he wrote \"}\" and \"{\" here", "n": 1} trailing"#.into(),
            ok(json!({"evidence": "he wrote \"}\" and \"{\" here", "n": 1})),
        ),
        (
            "escaped backslashes before a quote",
            r#"{"path": "C:\\dir\\", "next": "}"}"#.into(),
            ok(json!({"path": "C:\\dir\\", "next": "}"})),
        ),
        (
            "escaped backslash then escaped quote",
            r#"{"s": "\\\"}", "t": 2}"#.into(),
            ok(json!({"s": "\\\"}", "t": 2})),
        ),
        (
            "all the simple escapes",
            r#"{"s": "\/\b\f\n\r\t"}"#.into(),
            ok(json!({"s": "/\u{8}\u{c}\n\r\t"})),
        ),
        (
            "two objects: the first wins",
            "{\"first\": true}\n{\"second\": true}".into(),
            ok(json!({"first": true})),
        ),
        (
            "two fenced objects: the first wins",
            "```json\n{\"a\": 1}\n```\nor maybe\n```json\n{\"a\": 2}\n```".into(),
            ok(json!({"a": 1})),
        ),
        (
            "truncated mid-object",
            "Here:\n{\"decision\": \"revise\", \"findings\": [{\"severity\": \"blo".into(),
            err(ReplyError::Truncated { start: pos(6, 2, 1) }),
        ),
        (
            "truncated after a complete inner object",
            r#"{"findings": [{"evidence": "x"}, {"evid"#.into(),
            err(ReplyError::Truncated { start: pos(0, 1, 1) }),
        ),
        (
            "truncated inside an escape",
            r#"{"s": "abc\"#.into(),
            err(ReplyError::Truncated { start: pos(0, 1, 1) }),
        ),
        (
            "truncated after prose braces",
            "see {x} then {\"a\": [1, 2".into(),
            err(ReplyError::Truncated { start: pos(13, 1, 14) }),
        ),
        (
            "top-level array: its first object",
            r#"[{"a": 1}, {"b": 2}]"#.into(),
            ok(json!({"a": 1})),
        ),
        (
            "top-level array without objects",
            "[1, 2, 3]".into(),
            err(ReplyError::NoObject),
        ),
        (
            "arrays inside objects",
            r#"{"a": [1, [2, {"b": []}], "]"], "c": {"d": [[], [[]]]}}"#.into(),
            ok(json!({"a": [1, [2, {"b": []}], "]"], "c": {"d": [[], [[]]]}})),
        ),
        (
            "emoji in prose and strings",
            "🎉 done: {\"evidence\": \"works 👍🏽\", \"fix\": \"🚀\"} ✅".into(),
            ok(json!({"evidence": "works 👍🏽", "fix": "🚀"})),
        ),
        (
            "CJK text",
            "评审结果：{\"决定\": \"通过\", \"理由\": \"没有问题\"}。".into(),
            ok(json!({"决定": "通过", "理由": "没有问题"})),
        ),
        (
            "\\u escapes",
            r#"{"s": "caf\u00e9 \u4E2D \u0041"}"#.into(),
            ok(json!({"s": "café 中 A"})),
        ),
        (
            "a surrogate pair",
            r#"{"s": "\ud83d\ude00"}"#.into(),
            ok(json!({"s": "😀"})),
        ),
        (
            "a lone surrogate is refused, the next object read",
            r#"{"s": "\ud800"} {"ok": 1}"#.into(),
            ok(json!({"ok": 1})),
        ),
        (
            "braces in prose before the object",
            "Use {braces} like {this} or { that }; then {\"a\": 1}".into(),
            ok(json!({"a": 1})),
        ),
        (
            "unbalanced closing brace before the object",
            "} oops ]} {\"a\": 1}".into(),
            ok(json!({"a": 1})),
        ),
        (
            "an open brace right before the object",
            "{{\"a\": 1}}".into(),
            ok(json!({"a": 1})),
        ),
        ("empty input", String::new(), err(ReplyError::NoObject)),
        ("only whitespace", " \n\t\r\n  ".into(), err(ReplyError::NoObject)),
        ("prose only", "I think it passes.".into(), err(ReplyError::NoObject)),
        ("deeply nested object", deep_text, ok(deep_value)),
        ("nested to the limit", max_text, ok(max_value)),
        (
            "nested past the limit",
            too_deep_text,
            err(ReplyError::TooDeep { start: pos(0, 1, 1) }),
        ),
        (
            "a string containing a fence",
            "```json\n{\"fix\": \"write\\n```rust\\nfn x() {}\\n```\\n\"}\n```".into(),
            ok(json!({"fix": "write\n```rust\nfn x() {}\n```\n"})),
        ),
        (
            "windows line endings",
            "Verdict:\r\n```json\r\n{\r\n  \"decision\": \"pass\",\r\n  \"findings\": []\r\n}\r\n```\r\n".into(),
            ok(json!({"decision": "pass", "findings": []})),
        ),
        (
            "a byte order mark",
            "\u{feff}{\"a\": 1}".into(),
            ok(json!({"a": 1})),
        ),
        (
            "numbers of every form",
            r#"{"i": -12, "z": 0, "f": 0.25, "e": 1E2, "g": -2.5e-1, "big": 18446744073709551615}"#.into(),
            ok(json!({"i": -12, "z": 0, "f": 0.25, "e": 100.0, "g": -0.25, "big": 18_446_744_073_709_551_615_u64})),
        ),
        (
            "literals",
            r#"{"t": true, "f": false, "n": null}"#.into(),
            ok(json!({"t": true, "f": false, "n": null})),
        ),
        (
            "duplicate keys: the last wins",
            r#"{"a": 1, "a": 2}"#.into(),
            ok(json!({"a": 2})),
        ),
        (
            "an object inside an invalid one's string",
            r#"{"note": "see {\"b\": 2}" oops} {"c": 3}"#.into(),
            ok(json!({"c": 3})),
        ),
        (
            "a backtick brace before the object",
            "Write `{` carefully: {\"a\": 1}".into(),
            ok(json!({"a": 1})),
        ),
        (
            "prose braces only",
            "use {x} here".into(),
            err(ReplyError::Invalid {
                at: pos(5, 1, 6),
                problem: "expected a \"quoted\" key or `}`, found `x`".into(),
            }),
        ),
        (
            "trailing comma: the furthest mistake is reported",
            "{a} then {\"a\": 1,}".into(),
            err(ReplyError::Invalid {
                at: pos(17, 1, 18),
                problem: "expected a \"quoted\" key after `,`, found `}`".into(),
            }),
        ),
        (
            "single quotes",
            "{'a': 1}".into(),
            err(ReplyError::Invalid {
                at: pos(1, 1, 2),
                problem: "expected a \"quoted\" key or `}`, found `'`".into(),
            }),
        ),
        (
            "python literals",
            "{\"ok\": True}".into(),
            err(ReplyError::Invalid {
                at: pos(7, 1, 8),
                problem: "expected a value (a \"string\", a number, true, false, null, `{` or `[`), found `T`"
                    .into(),
            }),
        ),
        (
            "a raw line break in a string",
            "{\"a\": \"one\ntwo\"}".into(),
            err(ReplyError::Invalid {
                at: pos(10, 1, 11),
                problem: "expected a string without raw control characters (write \\n for a line break), found the control character U+000A"
                    .into(),
            }),
        ),
        (
            "a comment",
            "{\n  // the decision\n  \"decision\": \"pass\"\n}".into(),
            err(ReplyError::Invalid {
                at: pos(4, 2, 3),
                problem: "expected a \"quoted\" key or `}`, found `/`".into(),
            }),
        ),
        (
            "a bad escape",
            r#"{"s": "\q"}"#.into(),
            err(ReplyError::Invalid {
                at: pos(8, 1, 9),
                problem: "expected an escape after `\\` in a string (one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX), found `q`"
                    .into(),
            }),
        ),
        (
            "mismatched brackets",
            r#"{"a": [1, 2}"#.into(),
            err(ReplyError::Invalid {
                at: pos(11, 1, 12),
                problem: "expected `,` or `]` after a value, found `}`".into(),
            }),
        ),
        (
            "a number too large for serde",
            "{\"n\": 1e400}".into(),
            err(ReplyError::Invalid { at: pos(0, 1, 1), problem: "number out of range".into() }),
        ),
        (
            "a lone open brace at the end looks cut off",
            "the set {".into(),
            err(ReplyError::Truncated { start: pos(8, 1, 9) }),
        ),
        (
            "positions count characters, not bytes",
            "é€😀\n  {'x'}".into(),
            err(ReplyError::Invalid {
                at: pos(13, 2, 4),
                problem: "expected a \"quoted\" key or `}`, found `'`".into(),
            }),
        ),
    ]
}

#[test]
fn reply_reader_case_table() {
    let cases = cases();
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    let got: Vec<(&str, Want)> = cases.iter().map(|(name, text, _)| (*name, read(text))).collect();
    let want: Vec<(&str, Want)> = cases.into_iter().map(|(name, _, want)| (name, want)).collect();
    assert_eq!(got, want);
}

#[test]
fn notes_are_sentences_for_the_model() {
    let notes: Vec<String> = ["nothing here", "{\"a\": ", "{\"a\" 1}", &nested(MAX_DEPTH + 1).0]
        .iter()
        .map(|text| first_json_object(text).unwrap_err().note())
        .collect();
    assert_eq!(
        notes,
        vec![
            "Your reply had no JSON object.".to_owned(),
            "Your reply looks cut off: the JSON object that starts at line 1, column 1 never closes."
                .to_owned(),
            "Your reply had no valid JSON object: at line 1, column 6, expected `:` after a key, found `1`."
                .to_owned(),
            "Your reply's JSON object nests more than 100 levels deep.".to_owned(),
        ]
    );
}
