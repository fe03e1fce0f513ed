//! An error located in a file the user wrote: path, line, column, what is
//! wrong and what to write instead. Every crate that reads user files reports
//! through this type, so the command line renders them all the same way.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// A problem at a place in a user's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    /// The file.
    pub path: PathBuf,
    /// The file's text, for rendering a snippet (empty when unavailable).
    pub source: String,
    /// The byte range the problem is at (empty range for a point).
    pub span: Range<usize>,
    /// 1-based line of the span's start; 0 when the problem is the file as
    /// a whole and has no line (see [`Located::about_file`]).
    pub line: usize,
    /// 1-based column (in characters) of the span's start; 0 with line 0.
    pub column: usize,
    /// What is wrong.
    pub message: String,
    /// What to write instead, when gavel can say.
    pub hint: Option<String>,
}

impl Located {
    /// Locates `message` at byte range `span` of `source`.
    pub fn new(
        path: impl Into<PathBuf>,
        source: &str,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        let start = clamp_to_char_boundary(source, span.start);
        let end = clamp_to_char_boundary(source, span.end.max(start));
        let (line, column) = line_column(source, start);
        Self {
            path: path.into(),
            source: source.to_owned(),
            span: start..end,
            line,
            column,
            message: message.into(),
            hint: None,
        }
    }

    /// A problem with the file as a whole (it is missing or unreadable): line 1, column 1.
    pub fn whole_file(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self::new(path, "", 0..0, message)
    }

    /// A problem with the file itself, not with a place in it (it is a
    /// FIFO, a device, a folder, too large): shown as `path: message`,
    /// without a line and column that would point at nothing.
    pub fn about_file(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self { line: 0, column: 0, ..Self::whole_file(path, message) }
    }

    /// The `path:line:column` (or just `path`, for a problem with the file
    /// itself) that heads the message.
    pub fn place(&self) -> String {
        if self.line == 0 {
            self.path.display().to_string()
        } else {
            format!("{}:{}:{}", self.path.display(), self.line, self.column)
        }
    }

    /// Adds what to write instead.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Located {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place(), self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Located {}

/// The 1-based line and character column of byte `offset` in `source`.
pub fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let offset = clamp_to_char_boundary(source, offset);
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// The byte offset of a 1-based line and character column: the inverse of
/// [`line_column`], for parsers that report a line and column (serde_json,
/// serde-saphyr) instead of a byte offset.
pub fn offset_of(source: &str, line: usize, column: usize) -> usize {
    let line_start: usize = source.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    let rest = source.get(line_start..).unwrap_or("");
    let within: usize = rest.chars().take(column.saturating_sub(1)).map(char::len_utf8).sum();
    (line_start + within).min(source.len())
}

fn clamp_to_char_boundary(source: &str, offset: usize) -> usize {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_count_from_one_in_characters() {
        let src = "a = 1\nnäme = \"x\"\n";
        assert_eq!(line_column(src, 0), (1, 1));
        assert_eq!(line_column(src, 6), (2, 1));
        // "näme" has a two-byte 'ä' (bytes 7 and 8): byte 9 is the 'm' at column 3.
        assert_eq!(line_column(src, 9), (2, 3));
        assert_eq!(line_column(src, 1000), (3, 1));
        // Inside a multi-byte character: clamped back to its start.
        assert_eq!(line_column(src, 8), (2, 2));
    }

    #[test]
    fn offsets_and_line_columns_are_inverses() {
        let src = "a = 1\nnäme = \"x\"\n";
        for offset in [0, 6, 7, 9, src.len()] {
            let (line, column) = line_column(src, offset);
            assert_eq!(offset_of(src, line, column), offset);
        }
        assert_eq!(offset_of(src, 99, 1), src.len());
    }

    #[test]
    fn display_names_file_line_column_and_hint() {
        let err = Located::new("w.toml", "x\ny = 2\n", 2..3, "unknown key `y`").with_hint("write `z`");
        assert_eq!(err.to_string(), "w.toml:2:1: unknown key `y`\nhint: write `z`");
        let err = Located::about_file("/dev/zero", "cannot read the workflow: it is a character device");
        assert_eq!(err.to_string(), "/dev/zero: cannot read the workflow: it is a character device");
        assert_eq!(Located::whole_file("w.toml", "gone").to_string(), "w.toml:1:1: gone");
    }
}
