//! The one builder every language's pieces go through: it holds the parsed files, collects
//! the [`Part`]s (each an insertion, present or not) and the placement [`Finding`]s, and
//! makes each part the same way. A language's builder adds what it renders (templates, its
//! style) on top of it.

use crate::error::Error;
use crate::lang::parts::{Finding, ParsedSource, Part};
use crate::report::Status;

/// Where revert takes a present piece out: what a language knows of where its text stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresentAt {
    /// Around its `present` line (revert searches for the text there).
    Line,
    /// Exactly at the insertion offset: the builder anchors every piece where its text starts.
    Offset,
    /// At the insertion offset when the text stands there and occurs more than once in the
    /// file (short texts such as a wrapper's `)`); a unique text is found around its line.
    Repeated,
}

/// A language's builder that holds the shared one in a field `pieces` reads and pushes
/// through it as if it were it: `extends_pieces!(Builder)`.
macro_rules! extends_pieces {
    ($builder:ident) => {
        impl<'a> std::ops::Deref for $builder<'a> {
            type Target = crate::lang::pieces::Pieces<'a, crate::lang::parts::Parsed>;
            fn deref(&self) -> &Self::Target {
                &self.pieces
            }
        }

        impl std::ops::DerefMut for $builder<'_> {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.pieces
            }
        }
    };
}
pub(crate) use extends_pieces;

/// An insertion at the end of a file without a final newline starts on a new line and ends
/// without one, so the file keeps having none.
pub fn at_end_of_file(src: &str, offset: usize, text: String, eol: &str) -> String {
    if offset == src.len() && !src.is_empty() && !src.ends_with('\n') {
        format!("{eol}{}", text.trim_end_matches(['\r', '\n']))
    } else {
        text
    }
}

pub struct Pieces<'a, P> {
    pub files: &'a [P],
    pub parts: Vec<Part>,
    /// Placement facts established while building (e.g. where the connection comes from).
    pub findings: Vec<Finding>,
    present_at: PresentAt,
}

impl<'a, P: ParsedSource> Pieces<'a, P> {
    pub fn new(files: &'a [P], present_at: PresentAt) -> Self {
        Pieces {
            files,
            parts: Vec::new(),
            findings: Vec::new(),
            present_at,
        }
    }

    /// The text of file `file`.
    pub fn src(&self, file: usize) -> &'a str {
        &self.files[file].source().text
    }

    /// The line ending of file `file`.
    pub fn eol(&self, file: usize) -> &'static str {
        self.files[file].source().style().eol
    }

    /// `text` inserted at `offset` of file `file`, already there at line `present` when the
    /// tree holds it.
    pub fn push(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        file: usize,
        offset: usize,
        text: String,
        present: Option<usize>,
    ) {
        let at = present.and_then(|_| match self.present_at {
            PresentAt::Line => None,
            PresentAt::Offset => Some(offset),
            PresentAt::Repeated => repeated_at(self.src(file), offset, &text),
        });
        let source = self.files[file].source();
        let part = Part::insertion(source, file, checks, label, offset, text, present);
        self.parts.push(part.present_at(at));
    }

    /// A placement fact of `check` at a 1-based line of file `file`.
    pub fn finding(
        &mut self,
        check: &'static str,
        status: Status,
        file: usize,
        line: usize,
        detail: String,
    ) {
        self.findings.push(Finding {
            check,
            status,
            file,
            line,
            detail,
        });
    }

    /// The refusal of a shape apply cannot patch, at a 1-based line of file `file`.
    pub fn unsupported(&self, file: usize, line: usize, message: impl Into<String>) -> Error {
        Error::Unsupported {
            file: self.files[file].source().rel.clone(),
            line,
            message: message.into(),
        }
    }
}

/// Where a present piece's text stands, when it is exactly at `offset` and occurs more than
/// once in the file (`.acp_progress()` on every send, a wrapper's `}).await`, the ` }` closing
/// braces around an expression body): revert takes it out there. A unique text is found by
/// searching around its line.
fn repeated_at(src: &str, offset: usize, text: &str) -> Option<usize> {
    let here = !text.is_empty() && src.get(offset..).is_some_and(|rest| rest.starts_with(text));
    (here && src.matches(text).nth(1).is_some()).then_some(offset)
}

#[cfg(test)]
mod tests {
    use super::repeated_at;

    #[test]
    fn a_present_piece_is_pinned_to_its_offset_only_where_its_text_recurs() {
        let src = "a.acp_progress().x(); b.acp_progress().y(); c.unique();";
        let second = src.rfind(".acp_progress()").unwrap();
        assert_eq!(repeated_at(src, 1, ".acp_progress()"), Some(1));
        assert_eq!(repeated_at(src, second, ".acp_progress()"), Some(second));
        // not where it is said to be: revert searches around its line instead
        assert_eq!(repeated_at(src, 0, ".acp_progress()"), None);
        // unique in the file
        assert_eq!(
            repeated_at(src, src.find(".unique").unwrap(), ".unique()"),
            None
        );
        assert_eq!(repeated_at(src, 3, ""), None);
    }
}
