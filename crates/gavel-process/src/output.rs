//! Bounded capture of one output stream.

use std::collections::VecDeque;
use std::fmt::Write as _;

use crate::spec::OutputLimit;

/// What was kept of one output stream.
///
/// `head` holds the first bytes, `tail` the last bytes that are not already
/// in `head`; `total` counts every byte the child wrote, kept or not. When
/// nothing was dropped, `head` followed by `tail` is the whole stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// The first bytes of the stream (at most `OutputLimit::head`).
    pub head: Vec<u8>,
    /// The last bytes of the stream after `head` (at most `OutputLimit::tail`).
    pub tail: Vec<u8>,
    /// Every byte read from the stream, including those dropped.
    pub total: u64,
}

impl Output {
    /// Number of bytes counted but not kept.
    pub fn cut(&self) -> u64 {
        self.total.saturating_sub(self.kept())
    }

    /// Whether bytes were dropped between `head` and `tail`.
    pub fn truncated(&self) -> bool {
        self.cut() > 0
    }

    /// The stream as text, with a marker where bytes were dropped:
    /// `head + "\n… N bytes cut …\n" + tail`. Invalid UTF-8 is replaced.
    pub fn to_string_lossy(&self) -> String {
        if !self.truncated() {
            // Decode as one buffer so a character split between head and
            // tail is not turned into two replacement characters.
            return String::from_utf8_lossy(&self.contiguous()).into_owned();
        }
        let mut text = String::from_utf8_lossy(&self.head).into_owned();
        let _ = write!(text, "\n… {} bytes cut …\n", self.cut());
        text.push_str(&String::from_utf8_lossy(&self.tail));
        text
    }

    /// The last `max_bytes` bytes that are known to be contiguous with the
    /// end of the stream, as text. Starts on a character boundary, so the
    /// result may be a few bytes shorter than `max_bytes`. Useful for error
    /// messages that quote the end of an agent's stderr.
    pub fn tail_text(&self, max_bytes: usize) -> String {
        // When bytes were cut, only `tail` is known to end the stream
        // without a gap; otherwise head and tail join seamlessly.
        let source = if self.truncated() { self.tail.clone() } else { self.contiguous() };
        let mut start = source.len().saturating_sub(max_bytes);
        // Skip UTF-8 continuation bytes (0b10xx_xxxx) so the text does not
        // begin with a replacement character.
        while start < source.len() && start > 0 && (source[start] & 0xC0) == 0x80 {
            start += 1;
        }
        String::from_utf8_lossy(&source[start..]).into_owned()
    }

    /// The end of the stream as plain text (see [`crate::plain`]), at most
    /// `max_bytes` long, and whether that is less than the stream held: the
    /// capture dropped bytes, or the plain text was longer than `max_bytes`.
    ///
    /// The whole kept end is cleaned before it is cut, so a colour code
    /// that straddles the cut cannot leave half a sequence behind.
    pub fn plain_tail(&self, max_bytes: usize) -> (String, bool) {
        let text = if self.truncated() {
            // The kept tail starts wherever the capture cut, perhaps inside
            // an escape sequence whose start is gone: its rest would read as
            // text (`5;255m`, half a hyperlink). Start where the stream is
            // known to be in step: after the first line break, else at the
            // first escape.
            let tail = &self.tail[..];
            let start = tail
                .iter()
                .position(|&b| b == b'\n')
                .map(|i| i + 1)
                .or_else(|| tail.iter().position(|&b| b == 0x1b))
                .unwrap_or(0);
            crate::plain::plain_text(&tail[start..])
        } else {
            crate::plain::plain_text(&self.contiguous())
        };
        let mut start = text.len().saturating_sub(max_bytes);
        while !text.is_char_boundary(start) {
            start += 1;
        }
        (text[start..].to_owned(), self.truncated() || start > 0)
    }

    fn kept(&self) -> u64 {
        u64::try_from(self.head.len() + self.tail.len()).unwrap_or(u64::MAX)
    }

    fn contiguous(&self) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.head.len() + self.tail.len());
        all.extend_from_slice(&self.head);
        all.extend_from_slice(&self.tail);
        all
    }
}

/// Accumulates a stream chunk by chunk in bounded memory.
#[derive(Debug)]
pub(crate) struct Capture {
    limit: OutputLimit,
    head: Vec<u8>,
    // A deque so dropping the oldest tail bytes is cheap.
    tail: VecDeque<u8>,
    total: u64,
}

impl Capture {
    pub(crate) fn new(limit: OutputLimit) -> Self {
        Self {
            limit,
            // Grow on demand: most children print little, and a large
            // preallocation per stream per seat would add up.
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
        }
    }

    pub(crate) fn push(&mut self, mut chunk: &[u8]) {
        self.total = self.total.saturating_add(u64::try_from(chunk.len()).unwrap_or(u64::MAX));
        let room = self.limit.head.saturating_sub(self.head.len());
        if room > 0 {
            let take = room.min(chunk.len());
            self.head.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
        }
        if chunk.is_empty() || self.limit.tail == 0 {
            return;
        }
        if chunk.len() >= self.limit.tail {
            self.tail.clear();
            self.tail.extend(&chunk[chunk.len() - self.limit.tail..]);
        } else {
            let overflow = (self.tail.len() + chunk.len()).saturating_sub(self.limit.tail);
            self.tail.drain(..overflow);
            self.tail.extend(chunk);
        }
    }

    pub(crate) fn finish(self) -> Output {
        Output { head: self.head, tail: self.tail.into_iter().collect(), total: self.total }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// What any chunking of `input` must produce: computed on the whole
    /// input at once, independently of `Capture`.
    fn reference(input: &[u8], limit: OutputLimit) -> Output {
        let head_len = limit.head.min(input.len());
        let rest = &input[head_len..];
        let tail_len = limit.tail.min(rest.len());
        Output {
            head: input[..head_len].to_vec(),
            tail: rest[rest.len() - tail_len..].to_vec(),
            total: input.len() as u64,
        }
    }

    /// Splits `input` by repeating `sizes` cyclically (a zero size is an
    /// empty read, which must be harmless).
    fn split<'a>(input: &'a [u8], sizes: &[usize]) -> Vec<&'a [u8]> {
        let mut chunks = Vec::new();
        let mut at = 0;
        let mut i = 0;
        while at < input.len() {
            let size = sizes[i % sizes.len()];
            let end = (at + size).min(input.len());
            chunks.push(&input[at..end]);
            at = end;
            i += 1;
            if i > 10_000 {
                break;
            }
        }
        chunks
    }

    fn capture(chunks: &[&[u8]], limit: OutputLimit) -> Output {
        let mut cap = Capture::new(limit);
        for chunk in chunks {
            cap.push(chunk);
        }
        cap.finish()
    }

    #[test]
    fn every_chunking_matches_the_reference() {
        let inputs: Vec<Vec<u8>> = vec![
            Vec::new(),
            b"a".to_vec(),
            b"abcd".to_vec(),
            b"abcdefgh".to_vec(),
            b"abcdefghi".to_vec(),
            (0..=255u8).cycle().take(1000).collect(),
        ];
        let limits = [
            OutputLimit::new(4, 4),
            OutputLimit::new(0, 4),
            OutputLimit::new(4, 0),
            OutputLimit::new(0, 0),
            OutputLimit::new(1, 7),
            OutputLimit::new(100, 3),
        ];
        let splits: [&[usize]; 9] =
            [&[1], &[2], &[3], &[4], &[5], &[1_000_000], &[1, 5, 2], &[0, 3, 0, 7], &[9, 1, 1, 13]];
        for input in &inputs {
            for limit in limits {
                let want = reference(input, limit);
                for sizes in splits {
                    let got = capture(&split(input, sizes), limit);
                    assert_eq!(got, want, "input len {} limit {limit:?} sizes {sizes:?}", input.len());
                }
            }
        }
    }

    #[test]
    fn small_stream_is_whole_and_not_truncated() {
        let out = capture(&[b"hello ", b"world"], OutputLimit::new(4, 100));
        assert_eq!(out.head, b"hell");
        assert_eq!(out.tail, b"o world");
        assert!(!out.truncated());
        assert_eq!(out.to_string_lossy(), "hello world");
        assert_eq!(out.tail_text(5), "world");
        assert_eq!(out.tail_text(100), "hello world");
    }

    #[test]
    fn a_tail_cut_inside_an_escape_sequence_leaves_none_of_it() {
        // Long enough that the capture keeps only the end of each.
        let colour = "\x1b[38;2;255;255;255mX\x1b[0m".repeat(3000);
        let link = "\x1b]8;;https://example.com/aaaaaaaaaaaaaaaaaaaaaaaa\x1b\\X\x1b]8;;\x1b\\".repeat(3000);
        let lines = "\x1b[31mred line\x1b[0m\n".repeat(3000);
        for (name, stream) in [("colour", colour), ("hyperlink", link), ("lines", lines)] {
            for keep in [100, 101, 102, 103, 104, 105, 106, 107] {
                let mut cap = Capture::new(OutputLimit::new(16, keep));
                cap.push(stream.as_bytes());
                let out = cap.finish();
                assert!(out.truncated(), "{name}");
                let (text, cut) = out.plain_tail(4096);
                assert!(cut, "{name}");
                let expected = if name == "lines" { "red line\n" } else { "X" };
                assert!(!text.is_empty(), "{name}/{keep}");
                assert!(
                    text.split_inclusive(expected).all(|piece| piece == expected)
                        || text.replace(expected, "").is_empty(),
                    "{name}/{keep}: a piece of a sequence was left: {text:?}"
                );
            }
        }
    }

    #[test]
    fn truncated_stream_marks_the_cut() {
        let out = capture(&[b"0123456789"], OutputLimit::new(3, 2));
        assert!(out.truncated());
        assert_eq!(out.cut(), 5);
        assert_eq!(out.to_string_lossy(), "012\n… 5 bytes cut …\n89");
        // Only the tail is known to be contiguous with the end.
        assert_eq!(out.tail_text(100), "89");
        assert_eq!(out.tail_text(1), "9");
    }

    #[test]
    fn tail_text_starts_on_a_char_boundary() {
        let out = capture(&["aé€".as_bytes()], OutputLimit::new(0, 64));
        // "€" is 3 bytes; asking for 4 would start inside "é".
        assert_eq!(out.tail_text(4), "€");
        assert_eq!(out.tail_text(5), "é€");
        assert_eq!(out.tail_text(0), "");
    }

    #[test]
    fn char_split_between_head_and_tail_survives_when_whole() {
        let out = capture(&["€".as_bytes()], OutputLimit::new(1, 10));
        assert_eq!(out.head.len(), 1);
        assert_eq!(out.to_string_lossy(), "€");
    }

    #[test]
    fn plain_tails_are_clean_and_say_when_they_are_cut() {
        let out = capture(&[b"\x1b[32mok\x1b[0m\n"], OutputLimit::new(64, 64));
        assert_eq!(out.plain_tail(100), ("ok\n".to_owned(), false));
        // Cut to fit: the tail is the end, and says so.
        assert_eq!(out.plain_tail(2), ("k\n".to_owned(), true));
        // The capture dropped bytes: cut, even when the tail fits.
        let out = capture(&[b"0123456789"], OutputLimit::new(3, 2));
        assert_eq!(out.plain_tail(100), ("89".to_owned(), true));
        // Escape codes do not count against the bound: 4 bytes of text fit in 4.
        let out = capture(&[b"\x1b[31mabcd\x1b[0m"], OutputLimit::new(64, 64));
        assert_eq!(out.plain_tail(4), ("abcd".to_owned(), false));
        // Never starts inside a character.
        let out = capture(&["aé€".as_bytes()], OutputLimit::new(0, 64));
        assert_eq!(out.plain_tail(4), ("€".to_owned(), true));
        assert_eq!(Output::default().plain_tail(10), (String::new(), false));
    }

    #[test]
    fn empty_output() {
        let out = Output::default();
        assert!(!out.truncated());
        assert_eq!(out.to_string_lossy(), "");
        assert_eq!(out.tail_text(10), "");
    }
}
