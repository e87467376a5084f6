//! Parsing Python text with tree-sitter, and the masks that keep a parse linear (long
//! comment runs) or possible at all (syntax newer than the grammar): the text parsed has
//! the same offsets as the file, so every node reads the file's own bytes.

use crate::lang::tree::first_error;
use tree_sitter::{Parser, Tree};

/// The tree of a Python text (parsed once per run: see [`crate::lang::tree::cache`]).
pub fn parse(text: &str) -> Tree {
    crate::lang::tree::cache::parse(
        crate::lang::tree::cache::Grammar::Python,
        text,
        parse_uncached,
    )
}

/// The tree of `new_text`, which is `old_text` after `changes`: re-parsed incrementally
/// from `old_text`'s tree where both parse plainly (see [`parse_uncached`]), and cached.
pub fn reparse(
    old_text: &str,
    changes: &[(std::ops::Range<usize>, String)],
    new_text: &std::sync::Arc<str>,
) -> Tree {
    let changes: Vec<crate::lang::tree::cache::Change> = changes
        .iter()
        .map(|(old, new)| crate::lang::tree::cache::Change {
            old: old.clone(),
            new,
        })
        .collect();
    crate::lang::tree::cache::reparse(
        crate::lang::tree::cache::Grammar::Python,
        old_text,
        &changes,
        new_text,
        |text, old| match old {
            Some(old) if !needs_mask(old_text) && !needs_mask(text) => {
                parse_text_with(text, Some(old))
            }
            _ => parse_uncached(text),
        },
    )
}

/// Python's parser for a lazily parsed file.
pub const PARSER: crate::lang::parts::Parser = crate::lang::parts::Parser {
    parse: |text| {
        crate::lang::tree::cache::parse_shared(
            crate::lang::tree::cache::Grammar::Python,
            text,
            parse_uncached,
        )
    },
    first_error: |tree| first_error(tree),
};

/// Starts parsing `texts` (the longest first) on a thread of its own and returns: a thread
/// that asks for one of them later finds its tree cached or waits for the parse under way.
pub fn parse_in_background(mut texts: Vec<std::sync::Arc<str>>) {
    if texts.is_empty() {
        return;
    }
    texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
    std::thread::spawn(move || {
        for text in &texts {
            (PARSER.parse)(text);
        }
    });
}

/// Parses every text not parsed yet in this run, on all cores.
pub fn prefetch(texts: &[&std::sync::Arc<str>]) {
    crate::lang::tree::cache::prefetch(
        crate::lang::tree::cache::Grammar::Python,
        texts,
        parse_uncached,
    );
}

fn parse_uncached(text: &str) -> Tree {
    let tree = parse_with_comment_runs(text);
    // a syntax newer than the grammar: the same offsets with it blanked, where that parses
    if tree.root_node().has_error()
        && let Some(blanked) = blank_type_parameter_defaults(text)
    {
        let masked = parse_with_comment_runs(&blanked);
        if !masked.root_node().has_error() {
            return masked;
        }
    }
    tree
}

/// Whether [`parse_uncached`] may parse `text` other than plainly (an incremental parse
/// of it would not).
fn needs_mask(text: &str) -> bool {
    blank_long_comment_runs(text).is_some() || blank_type_parameter_defaults(text).is_some()
}

fn parse_with_comment_runs(text: &str) -> Tree {
    // tree-sitter-python's scanner looks past every following comment line at each line
    // end, so a long run of comment lines parses in time quadratic in its length; the
    // run blanked out (same offsets) parses in linear time and gives the same tree, bar
    // the comment nodes — used when the blanked lines are provably comments
    if let Some((masked, starts)) = blank_long_comment_runs(text) {
        let tree = parse_text(&masked);
        if !tree.root_node().has_error() && starts.iter().all(|s| !in_string(&tree, *s)) {
            return tree;
        }
    }
    parse_text(text)
}

fn parse_text(text: &str) -> Tree {
    parse_text_with(text, None)
}

/// `text` parsed, reusing what `old` (a tree already edited to match it) holds.
fn parse_text_with(text: &str, old: Option<&Tree>) -> Tree {
    let mut parser = Parser::new();
    parser
        .set_language(&tree_sitter_python::LANGUAGE.into())
        .expect("the Python grammar matches the tree-sitter version");
    parser.parse(text, old).expect("parsing without a timeout")
}

/// Comment lines in a row (blank lines between them allowed) from which a run is blanked.
const LONG_COMMENT_RUN: usize = 64;

/// The text with every comment line of each long run replaced by spaces, and the start
/// offsets of those lines; `None` when no run is long.
fn blank_long_comment_runs(text: &str) -> Option<(String, Vec<usize>)> {
    let mut lines = Vec::new(); // (comment start, line end) of each line to blank
    let mut runs: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let trimmed = body.trim_start_matches([' ', '\t', '\x0c']);
        if trimmed.starts_with('#') {
            let start = at + body.len() - trimmed.len();
            runs.last_mut()
                .expect("one run")
                .push((start, at + body.len()));
        } else if !trimmed.is_empty() {
            runs.push(Vec::new());
        }
        at += line.len();
    }
    for run in runs.into_iter().filter(|r| r.len() >= LONG_COMMENT_RUN) {
        lines.extend(run);
    }
    if lines.is_empty() {
        return None;
    }
    let mut bytes = text.as_bytes().to_vec();
    for (start, end) in &lines {
        bytes[*start..*end].fill(b' ');
    }
    let masked = String::from_utf8(bytes).expect("ASCII spaces over whole lines keep UTF-8");
    Some((masked, lines.into_iter().map(|(s, _)| s).collect()))
}

/// Whether a byte offset lies inside a string literal.
fn in_string(tree: &Tree, offset: usize) -> bool {
    let mut node = tree.root_node().descendant_for_byte_range(offset, offset);
    while let Some(n) = node {
        if matches!(
            n.kind(),
            "string" | "string_content" | "concatenated_string"
        ) {
            return true;
        }
        node = n.parent();
    }
    false
}

/// The text with the defaults of type parameters blanked (`class A[T = None]:` reads
/// `class A[T       ]:`, same offsets), `None` when it has none. Python 3.13's defaults
/// (PEP 696) are a syntax error to tree-sitter-python 0.25; nothing acp-patch reads or
/// inserts lies inside a type parameter list, so the tree of the rest is the file's.
fn blank_type_parameter_defaults(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut blanks: Vec<std::ops::Range<usize>> = Vec::new();
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let head = line.trim_start_matches([' ', '\t']);
        let Some(rest) = ["class ", "def ", "async def ", "type "]
            .iter()
            .find_map(|k| head.strip_prefix(k))
        else {
            continue;
        };
        let name = rest.trim_start_matches([' ', '\t']);
        let name_len = name
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(name.len());
        let after = &name[name_len..];
        let gap = after.len() - after.trim_start_matches([' ', '\t']).len();
        if name_len == 0 || !after[gap..].starts_with('[') {
            continue;
        }
        let open = start + (line.len() - after.len()) + gap;
        blanks.extend(defaults_in_brackets(bytes, open));
    }
    if blanks.is_empty() {
        return None;
    }
    let mut out = bytes.to_vec();
    for r in blanks {
        for b in &mut out[r] {
            if !matches!(*b, b'\n' | b'\r') {
                *b = b' ';
            }
        }
    }
    // ASCII spaces over whole characters (a default ends at an ASCII `,` or `]`)
    String::from_utf8(out).ok()
}

/// The `= default` spans of the type parameter list opening at `open` (a `[`): each from
/// its `=` up to the `,` or `]` ending it at the list's own depth.
fn defaults_in_brackets(bytes: &[u8], open: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut depth, mut default_from, mut quote) = (0usize, None, None::<u8>);
    let mut i = open;
    while i < bytes.len() {
        let b = bytes[i];
        if let Some(q) = quote {
            if b == b'\\' {
                i += 1;
            } else if b == q {
                quote = None;
            }
        } else {
            match b {
                b'\'' | b'"' => quote = Some(b),
                b'[' | b'(' | b'{' => depth += 1,
                b']' | b')' | b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        out.extend(default_from.take().map(|s| s..i));
                        return out;
                    }
                }
                b',' if depth == 1 => out.extend(default_from.take().map(|s| s..i)),
                b'=' if depth == 1
                    && default_from.is_none()
                    && bytes.get(i + 1) != Some(&b'=')
                    && !matches!(bytes[i - 1], b'=' | b'!' | b'<' | b'>') =>
                {
                    default_from = Some(i)
                }
                _ => {}
            }
        }
        i += 1;
    }
    Vec::new() // never closed: not a type parameter list
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sexp(tree: &Tree) -> String {
        tree.root_node().to_sexp().replace(" (comment)", "")
    }

    #[test]
    fn long_comment_runs_parse_to_the_same_tree_without_their_comments() {
        let comments: String = (0..100).map(|i| format!("    # note {i}\n")).collect();
        let src = format!(
            "class A:\n    def f(self):\n{comments}        return 1\n{comments}\n    x = 2\n"
        );
        assert!(blank_long_comment_runs(&src).is_some());
        assert_eq!(sexp(&parse(&src)), sexp(&parse_text(&src)));
        assert!(
            parse(&src)
                .root_node()
                .descendant_for_byte_range(0, src.len())
                .is_some()
        );
    }

    #[test]
    fn comment_lines_inside_a_string_are_not_blanked() {
        let inner: String = (0..100).map(|i| format!("# line {i}\n")).collect();
        // the closing quotes sit on a line that starts with `#`: blanking it would reopen
        let src = format!("x = \"\"\"\n{inner}# end \"\"\"\ny = 1\n");
        let tree = parse(&src);
        assert!(!tree.root_node().has_error());
        assert_eq!(sexp(&tree), sexp(&parse_text(&src)));
    }

    /// PEP 696 defaults (Python 3.13) parse as the same list without them; the rest of
    /// the file is the tree it would be.
    #[test]
    fn type_parameter_defaults_are_blanked_and_the_rest_parses() {
        let src = "class Agent[TDeps = None, R: str = \"x,]\"](Base[TDeps, R]):\n    async def prompt[T = dict[str, int]](self, p):\n        return {\"a\": p == 1}\n\ntype Alias[T = int] = list[T]\nx = y[a == b]\n";
        let blanked = blank_type_parameter_defaults(src).expect("defaults");
        assert_eq!(blanked.len(), src.len());
        assert!(
            blanked.starts_with("class Agent[TDeps       , R: str        ](Base[TDeps, R]):\n")
        );
        assert!(blanked.contains("async def prompt[T                 ](self, p):"));
        assert!(blanked.contains("type Alias[T      ] = list[T]\n"));
        assert!(blanked.ends_with("x = y[a == b]\n"));
        let tree = parse(src);
        assert!(!tree.root_node().has_error());
        let class = tree.root_node().named_child(0).unwrap();
        assert_eq!(class.kind(), "class_definition");
        assert_eq!(
            class
                .child_by_field_name("name")
                .unwrap()
                .utf8_text(src.as_bytes())
                .unwrap(),
            "Agent"
        );
        // a text without defaults is left alone, and parses plainly (incrementally too)
        assert!(blank_type_parameter_defaults("class A[T](B):\n    x = [i == 1]\n").is_none());
        assert!(!needs_mask("def f[T: int](x = 1): pass\n"));
    }

    /// A file whose error is of another kind keeps its plain tree (the error is told).
    #[test]
    fn other_syntax_errors_are_not_masked() {
        let src = "class A[T = None]:\n    def f(:\n";
        assert!(parse(src).root_node().has_error());
    }
}
