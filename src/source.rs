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
    /// Old Mac line endings (CR only, no LF anywhere): the text is held with LF, so every
    /// parser sees lines, and written back with CR.
    pub cr_only: bool,
}

#[derive(Debug, Clone)]
pub struct SourceFile {
    pub path: PathBuf,
    /// Path relative to the project root, with `/` separators (used in diffs and reports).
    pub rel: String,
    /// The text without a BOM; all offsets refer to it. Shared by the file's copies (each
    /// tree state a plan leaves holds every file it did not change).
    pub text: std::sync::Arc<str>,
    /// Detected when first asked for: most files read are never patched.
    style: std::sync::OnceLock<Style>,
    bom: bool,
    cr_only: bool,
    /// False for a file a plan creates (e.g. the runtime module written beside the agent).
    pub exists: bool,
}

impl SourceFile {
    pub fn read(root: &Path, path: &Path) -> Result<Option<SourceFile>> {
        let bytes = std::fs::read(path).map_err(io_err(path))?;
        Ok(SourceFile::decode(path.to_path_buf(), rel_path(root, path), bytes).ok())
    }

    /// A file's bytes as text; what they are instead when they are not UTF-8 (such a file
    /// is never patched, and named when it matters).
    pub fn decode(
        path: PathBuf,
        rel: String,
        bytes: Vec<u8>,
    ) -> std::result::Result<SourceFile, NotUtf8> {
        match String::from_utf8(bytes) {
            Ok(raw) => Ok(SourceFile::from_text(path, rel, raw)),
            Err(e) => {
                let bytes = e.as_bytes();
                let at = e.utf8_error().valid_up_to();
                Err(NotUtf8 {
                    line: bytes[..at].iter().filter(|b| **b == b'\n').count() + 1,
                    encoding: guess_encoding(bytes),
                    lossy: String::from_utf8_lossy(bytes).into_owned(),
                    rel,
                })
            }
        }
    }

    pub fn from_text(path: PathBuf, rel: String, raw: String) -> SourceFile {
        SourceFile::from_str(path, rel, &raw)
    }

    /// [`SourceFile::from_text`] of a borrowed text (copied once, into the shared text).
    pub fn from_str(path: PathBuf, rel: String, raw: &str) -> SourceFile {
        let bom = raw.starts_with(BOM);
        let text = if bom { &raw[BOM.len()..] } else { raw };
        // (a `\n` is found within the first line of almost every file: looked for first)
        let cr_only = !text.contains('\n') && text.contains('\r');
        let text: std::sync::Arc<str> = if cr_only {
            text.replace('\r', "\n").into()
        } else {
            text.into()
        };
        SourceFile {
            path,
            rel,
            text,
            style: std::sync::OnceLock::new(),
            bom,
            cr_only,
            exists: true,
        }
    }

    /// A file that does not exist yet, written in `style` (usually a sibling's: the new
    /// module then reads like the agent's own files).
    pub fn new_file(path: PathBuf, rel: String, style: Style) -> SourceFile {
        SourceFile {
            path,
            rel,
            text: "".into(),
            bom: style.bom,
            cr_only: style.cr_only,
            style: style.into(),
            exists: false,
        }
    }

    /// How the file writes itself (its text as read: a planned text keeps its original's).
    pub fn style(&self) -> &Style {
        self.style.get_or_init(|| Style {
            bom: self.bom,
            eol: detect_eol(&self.text),
            indent_unit: detect_indent_unit(&self.text),
            cr_only: self.cr_only,
        })
    }

    /// The same file holding `text` instead, in the style the original was written in.
    pub fn with_text(&self, text: String, exists: bool) -> SourceFile {
        SourceFile {
            path: self.path.clone(),
            rel: self.rel.clone(),
            text: text.into(),
            style: self.style().clone().into(),
            bom: self.bom,
            cr_only: self.cr_only,
            exists,
        }
    }

    /// The bytes to write for a new text in this file's style (BOM and CR-only line
    /// endings restored).
    pub fn to_disk(&self, text: &str) -> String {
        let text = if self.cr_only {
            std::borrow::Cow::Owned(text.replace('\n', "\r"))
        } else {
            std::borrow::Cow::Borrowed(text)
        };
        if self.bom {
            format!("{BOM}{text}")
        } else {
            text.into_owned()
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

/// A path below `root` with `/` separators, as diffs and reports show it.
pub fn rel_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// A file that is not UTF-8: where the first bad byte is and what it probably is.
#[derive(Debug, Clone)]
pub struct NotUtf8 {
    pub rel: String,
    /// 1-based line of the first byte that is not UTF-8.
    pub line: usize,
    /// e.g. `Latin-1 (declared: # -*- coding: latin-1 -*-)`, `UTF-16`.
    pub encoding: String,
    /// The text with bad bytes replaced, for cheap literal tests (never written).
    pub lossy: String,
}

/// What a non-UTF-8 file most likely is: a UTF-16 BOM, a Python coding declaration in
/// the first two lines (PEP 263), else a single-byte encoding such as Latin-1.
fn guess_encoding(bytes: &[u8]) -> String {
    if bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]) {
        return "UTF-16".into();
    }
    let head = String::from_utf8_lossy(&bytes[..bytes.len().min(400)]).into_owned();
    for line in head.lines().take(2) {
        if let Some(at) = line.find("coding")
            && line.trim_start().starts_with('#')
            && matches!(line[at + 6..].chars().next(), Some(':' | '='))
        {
            let name: String = line[at + 7..]
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
                .collect();
            if !name.is_empty() {
                return format!(
                    "{name} (declared on its line {})",
                    head.lines().position(|l| l == line).unwrap_or(0) + 1
                );
            }
        }
    }
    if bytes.contains(&0) {
        return "binary or UTF-16 (NUL bytes)".into();
    }
    "Latin-1 or Windows-1252".into()
}

fn detect_eol(text: &str) -> &'static str {
    // byte counts the compiler vectorises (a `\r\n` never overlaps another)
    let b = text.as_bytes();
    let all = b.iter().filter(|&&c| c == b'\n').count();
    let crlf = b.windows(2).filter(|w| w == b"\r\n").count();
    if crlf > all - crlf { "\r\n" } else { "\n" }
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
        assert_eq!(f.style().eol, "\r\n");
        assert_eq!(f.style().indent_unit, "\t");
        let f = SourceFile::from_text(
            "a".into(),
            "a".into(),
            "\u{feff}class A:\n  def f(self):\n    pass\n".into(),
        );
        assert!(f.style().bom);
        assert_eq!(f.style().indent_unit, "  ");
        assert_eq!(f.original(), "\u{feff}class A:\n  def f(self):\n    pass\n");
    }

    #[test]
    fn cr_only_files_are_held_with_lf_and_written_back_with_cr() {
        let f = SourceFile::from_text("a".into(), "a".into(), "def f():\r    pass\r".into());
        assert!(f.style().cr_only);
        assert_eq!(&*f.text, "def f():\n    pass\n");
        assert_eq!(f.line_of(10), 2);
        assert_eq!(f.original(), "def f():\r    pass\r");
        assert_eq!(f.to_disk("x = 1\ny = 2\n"), "x = 1\ry = 2\r");
    }

    #[test]
    fn non_utf8_files_name_their_encoding_and_line() {
        let e = SourceFile::decode(
            "a".into(),
            "a.py".into(),
            b"# -*- coding: latin-1 -*-\nx = '\xe9'\n".to_vec(),
        )
        .unwrap_err();
        assert_eq!(
            (e.line, e.encoding.as_str()),
            (2, "latin-1 (declared on its line 1)")
        );
        let e = SourceFile::decode(
            "a".into(),
            "a.py".into(),
            b"import acp\nname = 'caf\xe9'\n".to_vec(),
        )
        .unwrap_err();
        assert_eq!(
            (e.line, e.encoding.as_str()),
            (2, "Latin-1 or Windows-1252")
        );
        assert!(e.lossy.contains("import acp"));
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
