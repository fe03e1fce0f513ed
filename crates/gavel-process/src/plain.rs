//! Command output as plain text, the way it is stored and shown.
//!
//! Test runners and build tools colour their output, draw progress bars with
//! carriage returns and set terminal titles. None of that belongs in a
//! record, an evidence file or a prompt. The bytes go through `vte` (the
//! escape-sequence parser of the alacritty terminal), which recognises
//! every CSI, OSC (hyperlinks and titles included), DCS and other escape
//! sequence; only printable characters, newlines and tabs come out. A line
//! redrawn with `\r` keeps what a terminal would finally show of it: the
//! text after the last carriage return. A backspace takes back the
//! character before it on the same line.

use vte::{Parser, Perform};

/// `bytes` as plain text: no escape sequences and no control characters
/// other than `\n` and `\t`; invalid UTF-8 becomes U+FFFD.
pub fn plain_text(bytes: &[u8]) -> String {
    let mut plain = Plain { out: String::with_capacity(bytes.len()), line_start: 0, return_pending: false };
    Parser::new().advance(&mut plain, bytes);
    plain.out
}

/// Whether `text` is already plain (nothing [`plain_text`] would change).
pub fn is_plain(text: &str) -> bool {
    !text.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
}

struct Plain {
    out: String,
    /// Where the current line starts in `out`.
    line_start: usize,
    /// A `\r` was seen: the next character overwrites the line from its
    /// start, unless a `\n` ends the line first (`\r\n` keeps it).
    return_pending: bool,
}

impl Plain {
    fn overwrite_after_return(&mut self) {
        if self.return_pending {
            self.out.truncate(self.line_start);
            self.return_pending = false;
        }
    }
}

impl Perform for Plain {
    fn print(&mut self, c: char) {
        // C1 controls (U+0080..U+009F) and DEL arrive as characters.
        if c.is_control() {
            return;
        }
        self.overwrite_after_return();
        self.out.push(c);
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' => {
                self.return_pending = false;
                self.out.push('\n');
                self.line_start = self.out.len();
            }
            b'\t' => {
                self.overwrite_after_return();
                self.out.push('\t');
            }
            b'\r' => self.return_pending = true,
            // Backspace: the cursor steps back over the last character.
            0x08 if !self.return_pending && self.out.len() > self.line_start => {
                self.out.pop();
            }
            // Every other control (bell, form feed, shift in/out...) is dropped.
            _ => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn colours_and_styles_go() {
        assert_eq!(plain_text(b"\x1b[31mFAIL\x1b[0m src/a.rs"), "FAIL src/a.rs");
        assert_eq!(plain_text(b"\x1b[1;38;5;196mbold red\x1b[m\n"), "bold red\n");
        assert_eq!(plain_text(b"\x1b[38;2;255;0;0mtrue\x1b[39m colour"), "true colour");
        // A C1 control, as a character or as a raw 8-bit byte, is dropped.
        assert!(is_plain(&plain_text("\u{9b}31mx".as_bytes())));
        assert_eq!(plain_text(&[0x9b, b'x']), "x");
    }

    #[test]
    fn osc_titles_and_hyperlinks_go_but_their_text_stays() {
        assert_eq!(plain_text(b"\x1b]0;my title\x07after"), "after");
        assert_eq!(plain_text(b"\x1b]8;;https://example.invalid\x1b\\link\x1b]8;;\x1b\\ text"), "link text");
        assert_eq!(plain_text(b"\x1bP1$r0m\x1b\\dcs gone"), "dcs gone");
        assert_eq!(plain_text(b"\x1b(Bcharset\x1b7saved\x1b8"), "charsetsaved");
    }

    #[test]
    fn carriage_returns_keep_what_the_terminal_last_showed() {
        assert_eq!(plain_text(b"  10%\r  50%\r 100%\ndone\n"), " 100%\ndone\n");
        assert_eq!(plain_text(b"line one\r\nline two\r\n"), "line one\nline two\n");
        assert_eq!(plain_text(b"a\nprogress 1\rprogress 2\r"), "a\nprogress 2");
        assert_eq!(plain_text(b"\x1b[2K\rok\n"), "ok\n");
    }

    #[test]
    fn other_controls_go_but_newlines_and_tabs_stay() {
        assert_eq!(plain_text(b"a\tb\x07\x0c\x0e\x0f\x00c\x7fd\n"), "a\tbcd\n");
        assert_eq!(plain_text(b"ab\x08c"), "ac");
        assert_eq!(plain_text(b"\x08\x08x"), "x");
        assert_eq!(plain_text(b"_\x08A"), "A");
        assert_eq!(plain_text(&[b'o', b'k', 0xff, 0xfe]), "ok\u{fffd}\u{fffd}");
        assert_eq!(plain_text("ünïcode ✓ 🦀".as_bytes()), "ünïcode ✓ 🦀");
    }

    #[test]
    fn a_sequence_cut_at_the_end_leaves_nothing_behind() {
        assert_eq!(plain_text(b"ok\x1b[3"), "ok");
        assert_eq!(plain_text(b"ok\x1b]8;;http://x"), "ok");
        assert_eq!(plain_text(b"ok\x1b"), "ok");
    }

    fn awkward_bytes() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            any::<u8>().prop_map(|b| vec![b]),
            Just(b"\x1b[".to_vec()),
            Just(b"\x1b]8;;".to_vec()),
            Just(b"\x1b\\".to_vec()),
            Just(b"\x07".to_vec()),
            Just(b"\r".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\t".to_vec()),
            Just(b"\x08".to_vec()),
            Just("\u{9b}".as_bytes().to_vec()),
            Just("é".as_bytes().to_vec()),
            "[a-z0-9;]{0,4}".prop_map(String::into_bytes),
        ];
        proptest::collection::vec(piece, 0..64).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

        /// Whatever the bytes, the text holds no ESC and no control
        /// character but `\n` and `\t`.
        #[test]
        fn the_result_is_always_plain(bytes in awkward_bytes()) {
            let text = plain_text(&bytes);
            prop_assert!(!text.contains('\x1b'), "ESC in {:?}", text);
            prop_assert!(is_plain(&text), "{:?} -> {:?}", bytes, text);
        }

        /// Plain text goes through unchanged, and cleaning twice is
        /// cleaning once.
        #[test]
        fn plain_text_is_a_fixed_point(bytes in awkward_bytes(), words in "[a-zA-Z0-9 .,:!\n\t]{0,80}") {
            prop_assert_eq!(plain_text(words.as_bytes()), words);
            let once = plain_text(&bytes);
            prop_assert_eq!(plain_text(once.as_bytes()), once);
        }
    }
}
