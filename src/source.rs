//! A source file as read from disk, with the style facts every edit must keep.

use crate::error::{Result, io_err};
use std::path::{Path, PathBuf};

const BOM: &str = "\u{feff}";

/// How a file writes itself: the things an inserted line must copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Style {
    pub bom: bool,
    /// `"\n"` or `"\r\n"`.
    pub eol: &'static str,
    /// One level of indentation: a tab or N spaces.
    pub indent_unit: String,
}

#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: PathBuf,
    /// Path relative to the project root, with `/` separators (used in diffs and reports).
    pub rel: String,
    /// The text without a BOM; all offsets refer to it.
    pub text: String,
    pub style: Style,
    /// False for a file a plan creates (e.g. the runtime module written beside the agent).
    pub exists: bool,
}

impl SourceFile {
    pub fn read(root: &Path, path: &Path) -> Result<Option<SourceFile>> {
        let bytes = std::fs::read(path).map_err(io_err(path))?;
        let Ok(raw) = String::from_utf8(bytes) else {
            return Ok(None); // not text we can patch; never touched
        };
        let rel = path
            .strip_prefix(root)
            .unwrap_or(path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        Ok(Some(SourceFile::from_text(path.to_path_buf(), rel, raw)))
    }

    pub fn from_text(path: PathBuf, rel: String, raw: String) -> SourceFile {
        let bom = raw.starts_with(BOM);
        let text = if bom {
            raw[BOM.len()..].to_string()
        } else {
            raw
        };
        let style = Style {
            bom,
            eol: detect_eol(&text),
            indent_unit: detect_indent_unit(&text),
        };
        SourceFile {
            path,
            rel,
            text,
            style,
            exists: true,
        }
    }

    /// A file that does not exist yet, written in `style` (usually a sibling's: the new
    /// module then reads like the agent's own files).
    pub fn new_file(path: PathBuf, rel: String, style: Style) -> SourceFile {
        SourceFile {
            path,
            rel,
            text: String::new(),
            style,
            exists: false,
        }
    }

    /// The bytes to write for a new text in this file's style (BOM restored).
    pub fn to_disk(&self, text: &str) -> String {
        if self.style.bom {
            format!("{BOM}{text}")
        } else {
            text.to_string()
        }
    }

    /// The file as it is on disk (empty for a file not yet created).
    pub fn original(&self) -> String {
        if !self.exists {
            return String::new();
        }
        self.to_disk(&self.text)
    }

    /// 1-based line of a byte offset.
    pub fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())]
            .matches('\n')
            .count()
            + 1
    }
}

fn detect_eol(text: &str) -> &'static str {
    let crlf = text.matches("\r\n").count();
    let lf = text.matches('\n').count() - crlf;
    if crlf > lf { "\r\n" } else { "\n" }
}

/// The smallest indentation step the file uses: a tab if lines are tab-indented, else the
/// most common positive difference between a line and the less-indented line it follows.
fn detect_indent_unit(text: &str) -> String {
    let mut tabs = 0usize;
    let mut spaces = 0usize;
    let mut steps = std::collections::BTreeMap::<usize, usize>::new();
    let mut prev = 0usize;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let ws: &str = &line[..line.len() - line.trim_start().len()];
        if ws.starts_with('\t') {
            tabs += 1;
            continue;
        }
        if ws.is_empty() {
            prev = 0;
            continue;
        }
        spaces += 1;
        let n = ws.len();
        if n > prev {
            *steps.entry(n - prev).or_default() += 1;
        }
        prev = n;
    }
    if tabs > spaces {
        return "\t".into();
    }
    let step = steps
        .iter()
        .filter(|(step, _)| **step >= 2 && **step <= 8)
        .max_by_key(|(step, count)| (**count, std::cmp::Reverse(**step)))
        .map(|(step, _)| *step)
        .unwrap_or(4);
    " ".repeat(step)
}

/// The leading whitespace of the line that contains `offset`.
pub fn indent_at(text: &str, offset: usize) -> &str {
    let start = line_start(text, offset);
    let line = &text[start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

pub fn line_start(text: &str, offset: usize) -> usize {
    text[..offset].rfind('\n').map(|i| i + 1).unwrap_or(0)
}

/// Offset just past the end of the line containing `offset` (past its line ending, if any).
pub fn line_end_after(text: &str, offset: usize) -> usize {
    match text[offset..].find('\n') {
        Some(i) => offset + i + 1,
        None => text.len(),
    }
}

/// The offset of the first bracket (`(`, `[`, `{`) nested deeper than `limit` in C-like
/// source (`//` and `/* */` comments, `"..."`, `r#"..."#` and `'x'` literals skipped), if
/// any: a guard for recursive-descent parsers (syn), which overflow the stack on input
/// nested thousands deep. Lexical, so it never recurses itself.
pub fn nested_deeper_than(text: &str, limit: usize) -> Option<usize> {
    let b = text.as_bytes();
    let (mut i, mut depth) = (0usize, 0usize);
    let skip_to = |from: usize, pat: &[u8]| -> usize {
        b[from..]
            .windows(pat.len())
            .position(|w| w == pat)
            .map_or(b.len(), |p| from + p + pat.len())
    };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => i = skip_to(i, b"\n"),
            b'/' if b.get(i + 1) == Some(&b'*') => {
                // block comments nest in Rust
                let mut level = 0usize;
                while i < b.len() {
                    if b[i..].starts_with(b"/*") {
                        level += 1;
                        i += 2;
                    } else if b[i..].starts_with(b"*/") {
                        level -= 1;
                        i += 2;
                        if level == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|c| **c == b'#').count();
                if b.get(i + 1 + hashes) == Some(&b'"') {
                    let mut close = vec![b'"'];
                    close.extend(std::iter::repeat_n(b'#', hashes));
                    i = skip_to(i + 2 + hashes, &close);
                } else {
                    i += 1;
                }
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'\'' => {
                // a char literal ('x', '\n', '\u{..}'); otherwise a lifetime
                let len = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..].iter().position(|c| *c == b'\'').map(|p| p + 3)
                } else {
                    let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + ch) == Some(&b'\'')).then_some(ch + 2)
                };
                i += len.unwrap_or(1);
            }
            b'(' | b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return Some(i);
                }
                i += 1;
            }
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_tabs_spaces_and_crlf() {
        let f = SourceFile::from_text("a".into(), "a".into(), "def f():\r\n\tpass\r\n".into());
        assert_eq!(f.style.eol, "\r\n");
        assert_eq!(f.style.indent_unit, "\t");
        let f = SourceFile::from_text(
            "a".into(),
            "a".into(),
            "\u{feff}class A:\n  def f(self):\n    pass\n".into(),
        );
        assert!(f.style.bom);
        assert_eq!(f.style.indent_unit, "  ");
        assert_eq!(f.original(), "\u{feff}class A:\n  def f(self):\n    pass\n");
    }

    #[test]
    fn nesting_depth_skips_comments_strings_and_chars() {
        let deep = format!("fn f() {{ {}1{} }}", "(".repeat(300), ")".repeat(300));
        assert_eq!(nested_deeper_than(&deep, 256), Some(9 + 255));
        assert_eq!(nested_deeper_than(&deep, 301), None);
        let tricky = format!(
            "// {a}\n/* /* {a} */ */ let s = \"{a}\\\"{a}\"; let r = r#\"{a}\"#; let c = '('; fn g<'a>(x: &'a u8) {{}}",
            a = "(".repeat(50)
        );
        assert_eq!(nested_deeper_than(&tricky, 2), None);
        assert_eq!(
            nested_deeper_than(&tricky, 0),
            Some(tricky.find("(x").unwrap())
        );
    }
}
