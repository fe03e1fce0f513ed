//! Property tests: the reader and the protocols never panic on any input, find
//! an embedded object exactly, and agree with a slow but obvious reference.
//!
//! Case counts add up to 100,000 (see each `ProptestConfig`).

use gavel_domain::protocol::{GoalReply, JudgeReply, MergeReply, Protocol, ReviewReply, VoteReply};
use gavel_domain::reply::{FoundObject, MAX_DEPTH, ReplyError, find_first_json_object};
use proptest::prelude::*;
use proptest::sample::select;
use serde::Deserialize;
use serde_json::{Map, Value};

const OPEN: char = '{';
const CLOSE: char = '}';

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, ..ProptestConfig::default() }
}

/// The obvious reader: try serde's streaming parser from every `{`, left to
/// right. Quadratic on crafted input, but easy to trust.
fn reference(text: &str) -> Option<(usize, Map<String, Value>)> {
    text.match_indices('{').find_map(|(start, _)| {
        let mut de = serde_json::Deserializer::from_str(&text[start..]);
        Map::<String, Value>::deserialize(&mut de).ok().map(|map| (start, map))
    })
}

/// Characters that make JSON and break it, plus prose and unicode.
fn json_soup() -> impl Strategy<Value = String> {
    soup(48)
}

fn soup(max_pieces: usize) -> impl Strategy<Value = String> {
    let pieces = select(vec![
        "{", "}", "[", "]", "\"", ":", ",", "\\", " ", "\n", "\r\n", "a", "k", "0", "1", "-", ".", "e",
        "true", "null", "fa", "\\\"", "\\u00e9", "\\ud83d", "é", "😀", "中", "```", "{\"k\":", "\"x\"",
        "[1,", "}]", "\t", "\u{1}",
    ]);
    prop::collection::vec(pieces, 0..max_pieces).prop_map(|v| v.concat())
}

/// A JSON string's content: braces, quotes, backslashes, fences, unicode.
fn json_text() -> impl Strategy<Value = String> {
    let pieces = select(vec![
        "a",
        "Z",
        " ",
        "{",
        "}",
        "[",
        "]",
        "\"",
        "\\",
        "\\\\\"",
        "```",
        "```json\n",
        "\n",
        "\r\n",
        "\t",
        "\u{0}",
        "\u{1f}",
        "é",
        "中文",
        "😀",
        "👍🏽",
        "\u{feff}",
        "\u{2028}",
        ":",
        ",",
        "//",
    ]);
    prop::collection::vec(pieces, 0..6).prop_map(|v| v.concat())
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Eighths are exact in binary, so they survive a round trip.
        (-100_000i32..100_000).prop_map(|n| Value::from(f64::from(n) / 8.0)),
        json_text().prop_map(Value::String),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(json_text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn json_object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(json_text(), json_value(), 0..5).prop_map(|m| m.into_iter().collect())
}

/// Prose that cannot begin an object: every `{` in it is followed by a
/// letter. (A bare `{` may end the prose before the object; see below.)
fn prose() -> impl Strategy<Value = String> {
    let pieces = select(vec![
        "Here is my review.",
        " ",
        "\n",
        "\r\n",
        "use {x} here",
        "}",
        "]",
        "[",
        "a } stray",
        "\"quoted\"",
        ":",
        ",",
        "emoji 😀 ",
        "中文",
        "\u{feff}",
        "{not json}",
        "\\",
        "`{code}`",
        "{{x",
        "```",
        "1.5",
        "null",
        "I'd say: ",
    ]);
    prop::collection::vec(pieces, 0..10).prop_map(|v| v.concat())
}

fn fence() -> impl Strategy<Value = (&'static str, &'static str)> {
    select(vec![("", ""), ("```json\n", "\n```"), ("```\n", "\n```\n"), ("```JSON\r\n", "\r\n```")])
}

/// Anything after the object: even text that would be JSON.
fn after() -> impl Strategy<Value = String> {
    prop_oneof![prose(), soup(12)]
}

fn parse_all(text: &str) {
    let _ = ReviewReply::parse(text);
    let _ = GoalReply::parse(text);
    let _ = MergeReply::parse(text);
    let _ = VoteReply::parse(text);
    let _ = JudgeReply::parse(text);
}

/// A parsed reply, written back as JSON, reads as itself.
fn round_trips<P>(text: &str)
where
    P: Protocol + serde::Serialize + PartialEq + std::fmt::Debug,
{
    if let Ok(reply) = P::parse(text) {
        let again = serde_json::to_string(&reply).unwrap();
        assert_eq!(P::parse(&again), Ok(reply), "{again}");
    }
}

/// JSON shaped like the protocols: their keys and words, and wrong values.
fn protocol_value() -> impl Strategy<Value = Value> {
    let word = select(vec![
        "pass",
        "revise",
        "block",
        "should-fix",
        "Nice_To_Have",
        "major",
        "met",
        "unmet",
        "agree",
        "disagree",
        "better fix",
        "act",
        "skip",
        "",
        " ",
        "F1",
        "write-1.1",
        "holds",
        "x",
    ]);
    let key = select(vec![
        "decision",
        "findings",
        "severity",
        "evidence",
        "fix",
        "requirements",
        "requirement",
        "verdict",
        "votes",
        "finding",
        "vote",
        "reason",
        "answers",
        "members",
        "holds",
        "extra",
    ]);
    let leaf = prop_oneof![
        4 => word.prop_map(Value::from),
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => (-4i32..12).prop_map(|n| Value::from(f64::from(n) / 8.0)),
        // Integers a f64 holds exactly: serde_json (without its
        // `float_roundtrip` feature) may re-read a large float 1 ULP off.
        1 => any::<i32>().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ]
    })
}

proptest! {
    #![proptest_config(config(40_000))]

    #[test]
    fn reader_never_panics_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(found) = find_first_json_object(&text) {
            prop_assert!(text[found.span.clone()].starts_with(OPEN), "{}", text);
            prop_assert!(text[found.span].ends_with(CLOSE), "{}", text);
        }
    }
}

proptest! {
    #![proptest_config(config(32_000))]

    #[test]
    fn reader_agrees_with_the_reference(text in json_soup()) {
        let ours = find_first_json_object(&text);
        match &ours {
            Ok(FoundObject { span, object }) => {
                prop_assert_eq!(reference(&text), Some((span.start, object.clone())));
                let reparsed: Map<String, Value> = serde_json::from_str(&text[span.clone()]).unwrap();
                prop_assert_eq!(&reparsed, object);
            }
            // A cut-off object ends the search; the reference may go on to
            // an object nested in it, and may nest deeper than we allow.
            Err(ReplyError::Truncated { .. } | ReplyError::TooDeep { .. }) => {}
            Err(ReplyError::NoObject) => {
                prop_assert!(!text.contains(OPEN), "{}", text);
            }
            Err(_) => prop_assert_eq!(reference(&text), None),
        }
    }
}

proptest! {
    #![proptest_config(config(12_000))]

    #[test]
    fn reader_finds_an_embedded_object_exactly(
        object in json_object(),
        pretty in any::<bool>(),
        before in prose(),
        open_brace in any::<bool>(),
        (open, close) in fence(),
        after in after(),
    ) {
        let json = if pretty {
            serde_json::to_string_pretty(&object).unwrap()
        } else {
            serde_json::to_string(&object).unwrap()
        };
        let before = format!("{before}{}{open}", if open_brace { "{" } else { "" });
        let text = format!("{before}{json}{close}{after}");
        let start = before.len();
        prop_assert_eq!(
            find_first_json_object(&text),
            Ok(FoundObject { span: start..start + json.len(), object })
        );
    }
}

proptest! {
    #![proptest_config(config(10_000))]

    #[test]
    fn protocols_never_panic_on_arbitrary_text(text in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
        json_soup(),
    ]) {
        parse_all(&text);
    }
}

proptest! {
    #![proptest_config(config(6_000))]

    #[test]
    fn protocols_read_protocol_shaped_json_and_round_trip(value in protocol_value(), before in prose()) {
        let text = format!("{before}{value}");
        parse_all(&text);
        round_trips::<ReviewReply>(&text);
        round_trips::<GoalReply>(&text);
        round_trips::<MergeReply>(&text);
        round_trips::<VoteReply>(&text);
        round_trips::<JudgeReply>(&text);
    }
}

#[test]
fn deep_nesting_within_the_limit_is_read() {
    let text = format!("{}{}", "{\"a\":[".repeat(MAX_DEPTH / 2), "]}".repeat(MAX_DEPTH / 2));
    assert!(find_first_json_object(&text).is_ok());
}
