//! Briefs: Markdown with optional front matter between `---`
//! lines (YAML) or `+++` lines (TOML) giving `files` and `requirements`.

use std::path::{Path, PathBuf};

use gavel_domain::Located;
use serde::Deserialize;

/// A brief, read and split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Brief {
    /// The file.
    pub path: PathBuf,
    /// The whole file as written (the digest covers it).
    pub text: String,
    /// The Markdown after the front matter.
    pub body: String,
    /// The files the work must produce, from the front matter.
    pub files: Vec<String>,
    /// The requirements the goal check uses, from the front matter.
    pub requirements: Vec<String>,
}

/// The front matter's keys. Other keys are allowed (briefs carry their own
/// metadata) and ignored.
#[derive(Debug, Default, Deserialize)]
struct FrontMatter {
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    requirements: Vec<String>,
}

impl Brief {
    /// Reads and splits a brief.
    pub fn load(path: &Path) -> Result<Self, Box<Located>> {
        let text = gavel_fs::read::read_text(path, gavel_fs::read::UserFile::Brief).map_err(|err| {
            Box::new(
                Located::about_file(path, err.message()).with_hint(err.hint_or("check the brief's path")),
            )
        })?;
        Self::parse(path, text)
    }

    /// Splits a brief's text into front matter and body.
    pub fn parse(path: &Path, text: String) -> Result<Self, Box<Located>> {
        let (front, body) = match split_front_matter(&text) {
            Some(split) => split,
            None => (None, text.as_str()),
        };
        let matter = match front {
            None => FrontMatter::default(),
            Some(Front { fence: Fence::Yaml, start, content }) => {
                serde_saphyr::from_str::<FrontMatter>(content).map_err(|err| {
                    let offset = err.location().map_or(start, |loc| {
                        start + gavel_domain::located::offset_of(content, usize::try_from(loc.line()).unwrap_or(1), usize::try_from(loc.column()).unwrap_or(1))
                    });
                    Box::new(
                        Located::new(path, &text, offset..offset, format!("invalid front matter: {}", first_line(&err.to_string())))
                            .with_hint("front matter is YAML: `files: [page.md]` and `requirements:` as a list of strings"),
                    )
                })?
            }
            Some(Front { fence: Fence::Toml, start, content }) => toml::from_str::<FrontMatter>(content).map_err(|err| {
                let span = err.span().map_or(start..start, |s| start + s.start..start + s.end);
                Box::new(
                    Located::new(path, &text, span, format!("invalid front matter: {}", err.message()))
                        .with_hint("front matter between +++ lines is TOML: `files = [\"page.md\"]`, `requirements = [\"...\"]`"),
                )
            })?,
        };
        for file in &matter.files {
            if let Err(why) = crate::workflow::check_relative(file) {
                let offset = text.find(file.as_str()).unwrap_or(0);
                return Err(Box::new(
                    Located::new(path, &text, offset..offset + file.len(), format!("`{file}` {why}"))
                        .with_hint(crate::workflow::WRITES_HINT),
                ));
            }
        }
        Ok(Brief {
            path: path.to_owned(),
            body: body.to_owned(),
            files: matter.files,
            requirements: matter
                .requirements
                .into_iter()
                .map(|r| r.trim().to_owned())
                .filter(|r| !r.is_empty())
                .collect(),
            text,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fence {
    Yaml,
    Toml,
}

struct Front<'a> {
    fence: Fence,
    /// Byte offset of `content` in the file.
    start: usize,
    content: &'a str,
}

/// Finds front matter at the very top of the file: a fence line, content,
/// the same fence line. Returns the front matter and the body after it.
fn split_front_matter(text: &str) -> Option<(Option<Front<'_>>, &str)> {
    let text_no_bom = text.strip_prefix('\u{feff}').unwrap_or(text);
    let bom = text.len() - text_no_bom.len();
    let (fence, marker) = if text_no_bom.starts_with("---") {
        (Fence::Yaml, "---")
    } else if text_no_bom.starts_with("+++") {
        (Fence::Toml, "+++")
    } else {
        return None;
    };
    let first_end = text_no_bom.find('\n')?;
    if text_no_bom[..first_end].trim_end() != marker {
        return None;
    }
    let content_start = bom + first_end + 1;
    let mut offset = content_start;
    for line in text[content_start..].split_inclusive('\n') {
        if line.trim_end() == marker {
            let content = &text[content_start..offset];
            let body = &text[offset + line.len()..];
            return Some((Some(Front { fence, start: content_start, content }), body));
        }
        offset += line.len();
    }
    None
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn yaml_front_matter_gives_files_and_requirements() {
        let text = "---\nfiles: [welcome.md]\nrequirements:\n  - Says who it is for\n  - Lists the opening hours\ntitle: extra keys are fine\n---\n# Welcome page\nWrite it.\n";
        let brief = Brief::parse(Path::new("b.md"), text.to_owned()).unwrap();
        assert_eq!(brief.files, ["welcome.md"]);
        assert_eq!(brief.requirements, ["Says who it is for", "Lists the opening hours"]);
        assert_eq!(brief.body, "# Welcome page\nWrite it.\n");
    }

    #[test]
    fn toml_front_matter_works_too() {
        let text = "+++\nfiles = [\"a.md\"]\nrequirements = [\"x\"]\n+++\nbody\n";
        let brief = Brief::parse(Path::new("b.md"), text.to_owned()).unwrap();
        assert_eq!(
            (brief.files.as_slice(), brief.requirements.as_slice(), brief.body.as_str()),
            (&["a.md".to_owned()][..], &["x".to_owned()][..], "body\n")
        );
    }

    #[test]
    fn no_front_matter_is_all_body() {
        let brief = Brief::parse(Path::new("b.md"), "# Title\n---\nnot front matter\n".to_owned()).unwrap();
        assert!(brief.files.is_empty());
        assert_eq!(brief.body, "# Title\n---\nnot front matter\n");
    }

    #[test]
    fn bad_front_matter_is_located() {
        let err = Brief::parse(Path::new("b.md"), "---\nfiles: [a.md\n---\nbody\n".to_owned()).unwrap_err();
        assert!(err.line >= 2, "{err}");
        let err = Brief::parse(Path::new("b.md"), "+++\nfiles = 3\n+++\n".to_owned()).unwrap_err();
        assert_eq!(err.line, 2, "{err}");
        let err = Brief::parse(Path::new("b.md"), "---\nfiles: [../x.md]\n---\n".to_owned()).unwrap_err();
        assert!(err.message.contains("leaves the workspace"), "{err}");
    }
}
