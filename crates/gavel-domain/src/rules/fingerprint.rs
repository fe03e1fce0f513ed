//! Finding fingerprints, for the loop breaker: a round whose findings are the
//! same as the last round's is not converging.
//!
//! Reviewers rarely word a problem the same way twice, and a fix that moves
//! text shifts its line numbers, so the fingerprint is taken over a
//! normalised form: case, punctuation and spacing are folded, and line
//! numbers (`file.md:12`, `line 12`, `lines 3-5`, `#L12`) become `#`. Other
//! numbers stay: "retries 3 times" and "retries 5 times" are different
//! claims. The hash is FNV-1a, written out here so the value never changes
//! with a dependency's version: fingerprints are compared across a record's
//! rounds, and across resumes.

use std::collections::BTreeSet;

use super::merge::Finding;

/// The fingerprint of a finding's evidence: 16 hex digits, stable across
/// versions and platforms.
pub fn fingerprint(evidence: &str) -> String {
    format!("{:016x}", fnv1a(normalise(evidence).as_bytes()))
}

/// The set of fingerprints of some findings' evidence.
pub fn fingerprints(findings: &[Finding]) -> BTreeSet<String> {
    findings.iter().map(|f| fingerprint(&f.evidence)).collect()
}

/// Whether two rounds raised the same findings: the same non-empty set of
/// fingerprints. Two empty rounds are not "the same findings": nothing is
/// looping.
pub fn same_findings(a: &[Finding], b: &[Finding]) -> bool {
    let first = fingerprints(a);
    !first.is_empty() && first == fingerprints(b)
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(PRIME))
}

/// Lower case; line numbers as `#`; every other non-alphanumeric character
/// as a space; runs of space as one.
pub(crate) fn normalise(evidence: &str) -> String {
    let text: Vec<char> = evidence.to_lowercase().chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut last_was_line = false;
    let mut i = 0;
    while i < text.len() {
        if text[i].is_ascii_digit() {
            let start = i;
            while i < text.len() && text[i].is_ascii_digit() {
                i += 1;
            }
            last_was_line = is_line_number(&text[..start], last_was_line);
            if last_was_line {
                out.push('#');
            } else {
                out.extend(&text[start..i]);
            }
            continue;
        }
        out.push(if text[i].is_alphanumeric() { text[i] } else { ' ' });
        i += 1;
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether the digits after `before` are a line number: right after a `:`
/// (`file.md:12`, and its column), after the word `line`/`lines`/`ln` or
/// `#l`, or continuing a range or list of line numbers (`3-5`, `3, 5`).
fn is_line_number(before: &[char], last_was_line: bool) -> bool {
    if before.last() == Some(&':') {
        return true;
    }
    let trimmed = before.iter().rposition(|c| !c.is_whitespace()).map_or(&before[..0], |end| &before[..=end]);
    match trimmed.last() {
        Some('-' | '–' | ',') => return last_was_line,
        None => return false,
        Some(_) => {}
    }
    let word_start = trimmed.iter().rposition(|c| !c.is_alphabetic()).map_or(0, |p| p + 1);
    let word: String = trimmed[word_start..].iter().collect();
    match word.as_str() {
        "line" | "lines" | "ln" => true,
        // `#L12`: a web link to a line. Only right after the `l`, so that
        // "l 12" in prose is not taken for one.
        "l" => word_start > 0 && trimmed[word_start - 1] == '#' && trimmed.len() == before.len(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_case_punctuation_spacing_and_line_numbers() {
        assert_eq!(
            normalise("  Docs/Retries.md:12:  The  TERM isn't   defined! "),
            "docs retries md # the term isn t defined"
        );
        assert_eq!(normalise("file.rs:12:5 panics"), "file rs # # panics");
        assert_eq!(normalise("see line 40, and Lines 3-5"), "see line # and lines # #");
        assert_eq!(normalise("lines 3, 7 repeat"), "lines # # repeat");
        assert_eq!(normalise("https://x/a.rs#L12 is wrong"), "https x a rs l# is wrong");
        assert_eq!(normalise("retries 3 times, then 5-6 more"), "retries 3 times then 5 6 more");
        assert_eq!(normalise("l 12 is prose"), "l 12 is prose");
        assert_eq!(normalise(""), "");
    }

    #[test]
    fn fingerprints_ignore_noise_and_line_shifts() {
        let a = fingerprint("docs/retries.md:12: \"backoff\" is never explained.");
        assert_eq!(a, fingerprint("Docs/Retries.md:31 — “Backoff” is never explained"));
        assert_ne!(a, fingerprint("docs/retries.md:12: \"jitter\" is never explained."));
        assert_eq!(a.len(), 16);
        // FNV-1a's published test vectors pin the hash itself.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
