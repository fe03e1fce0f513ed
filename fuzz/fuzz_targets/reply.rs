//! Fuzzes the reply reader and every reply protocol: no input may panic, and
//! whatever the reader finds must be a `{...}` span that parses on its own.

#![no_main]

use gavel_domain::protocol::{GoalReply, JudgeReply, MergeReply, Protocol, ReviewReply, VoteReply};
use gavel_domain::reply::find_first_json_object;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);

    if let Ok(found) = find_first_json_object(&text) {
        let span = &text[found.span];
        assert!(span.starts_with('{') && span.ends_with('}'));
        let again: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(span).unwrap_or_default();
        assert_eq!(again, found.object);
    }

    // Notes are built for every error: exercise them too.
    if let Err(err) = ReviewReply::parse(&text) {
        let _ = err.note();
    }
    if let Err(err) = GoalReply::parse(&text) {
        let _ = err.note();
    }
    if let Err(err) = MergeReply::parse(&text) {
        let _ = err.note();
    }
    if let Err(err) = VoteReply::parse(&text) {
        let _ = err.note();
    }
    if let Err(err) = JudgeReply::parse(&text) {
        let _ = err.note();
    }
});
