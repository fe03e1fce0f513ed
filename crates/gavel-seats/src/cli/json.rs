//! Reading JSON out of a CLI's output, which may carry prose, warnings and
//! stack traces around it.

use serde_json::Value;

/// Every JSON object that stands alone on a line of `text` (JSONL output),
/// in order. Lines that are not a whole object are skipped.
pub(super) fn lines(text: &str) -> impl Iterator<Item = Value> + '_ {
    text.lines().filter_map(|line| {
        let line = line.trim();
        if !line.starts_with('{') {
            return None;
        }
        serde_json::from_str::<Value>(line).ok().filter(Value::is_object)
    })
}

/// Every JSON object in `text` that starts at the beginning of a line and
/// may span several lines (pretty-printed output), in order.
pub(super) fn objects(text: &str) -> Vec<Value> {
    let mut found = Vec::new();
    let mut offset = 0;
    while offset < text.len() {
        let rest = &text[offset..];
        let line_len = rest.find('\n').map_or(rest.len(), |n| n + 1);
        if rest.trim_start_matches([' ', '\t']).starts_with('{') {
            let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
            if let Some(Ok(value)) = stream.next()
                && value.is_object()
            {
                found.push(value);
                offset += stream.byte_offset().max(1);
                continue;
            }
        }
        offset += line_len;
    }
    found
}

/// The string at `path`, if there is one.
pub(super) fn str_at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(value, path).and_then(Value::as_str)
}

/// The non-negative integer at `path`, or 0.
pub(super) fn u64_at(value: &Value, path: &[&str]) -> u64 {
    at(value, path).and_then(Value::as_u64).unwrap_or(0)
}

/// The value at `path`.
pub(super) fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn lines_skip_prose_and_broken_lines() {
        let text = "warning: hi\n{\"a\":1}\n{\"b\":\n[1]\n  {\"c\":2}  \n";
        let got: Vec<Value> = lines(text).collect();
        assert_eq!(got, vec![serde_json::json!({"a":1}), serde_json::json!({"c":2})]);
    }

    #[test]
    fn objects_span_lines_and_skip_prose() {
        let text =
            "Error: boom\n    at x (y.js:1)\n{\n  \"error\": {\"code\": 401}\n}\ntrailing words\n{\"b\": 2}";
        let got = objects(text);
        assert_eq!(got, vec![serde_json::json!({"error":{"code":401}}), serde_json::json!({"b":2})]);
    }

    #[test]
    fn paths_read_nested_values() {
        let v = serde_json::json!({"a":{"b":"x","n":3}});
        assert_eq!(str_at(&v, &["a", "b"]), Some("x"));
        assert_eq!(u64_at(&v, &["a", "n"]), 3);
        assert_eq!(u64_at(&v, &["a", "missing"]), 0);
    }
}
