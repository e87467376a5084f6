//! A TypeScript file's code style beyond indentation and line endings: its quote character
//! and whether it ends statements with semicolons. Templates are written with double
//! quotes and semicolons; [`restyle`] turns them into the file's style.

use super::syntax::{descendants, text};
use tree_sitter::Node;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeStyle {
    pub single_quotes: bool,
    pub semicolons: bool,
}

/// The majority style of a file (double quotes and semicolons when undecided).
pub fn detect(root: Node, src: &str) -> CodeStyle {
    let strings = descendants(root, "string");
    let single = strings
        .iter()
        .filter(|s| text(**s, src).starts_with('\''))
        .count();
    let mut with = 0usize;
    let mut without = 0usize;
    for kind in [
        "expression_statement",
        "lexical_declaration",
        "return_statement",
        "import_statement",
        "public_field_definition",
        "type_alias_declaration",
    ] {
        for n in descendants(root, kind) {
            if text(n, src).trim_end().ends_with(';') {
                with += 1;
            } else if ends_its_line(n, src) {
                // a statement without `;` says so only where a line break ends it: before a
                // `}` on its line a minifier drops the `;` of files that end all others with one
                without += 1;
            }
        }
    }
    CodeStyle {
        single_quotes: single * 2 > strings.len(),
        semicolons: with >= without,
    }
}

/// Whether only blanks or a comment follow a node on its last line.
fn ends_its_line(n: Node, src: &str) -> bool {
    // (read up to the first non-blank only: a bundle's line runs for megabytes)
    let rest = src[n.end_byte()..].trim_start_matches([' ', '\t']);
    rest.is_empty()
        || rest.starts_with(['\n', '\r'])
        || rest.starts_with("//")
        || rest.starts_with("/*")
}

/// [`restyle`] for code the agent's code follows on the same line: it keeps its semicolons
/// whatever the style (no line break ends it).
pub fn restyle_inline(code: &str, style: CodeStyle) -> String {
    restyle(
        code,
        CodeStyle {
            semicolons: true,
            ..style
        },
    )
}

/// Rewrites template code (double quotes, semicolons) into `style`. Comments and template
/// literals are copied as they are; `${...}` inside template literals is code again.
pub fn restyle(code: &str, style: CodeStyle) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    scan(&chars, &mut i, &mut out, style, false);
    out
}

/// Copies code until the end (or, when `in_subst`, until the `}` closing a `${`).
fn scan(c: &[char], i: &mut usize, out: &mut String, style: CodeStyle, in_subst: bool) {
    let mut depth = 0usize;
    while *i < c.len() {
        let ch = c[*i];
        let next = c.get(*i + 1).copied();
        match ch {
            '/' if next == Some('/') => {
                while *i < c.len() && c[*i] != '\n' {
                    out.push(c[*i]);
                    *i += 1;
                }
            }
            '/' if next == Some('*') => {
                while *i < c.len() && !(c[*i] == '*' && c.get(*i + 1) == Some(&'/')) {
                    out.push(c[*i]);
                    *i += 1;
                }
                if *i < c.len() {
                    out.push_str("*/");
                    *i += 2;
                }
            }
            '"' | '\'' => {
                let start = *i;
                *i += 1;
                while *i < c.len() && c[*i] != ch {
                    if c[*i] == '\\' {
                        *i += 1;
                    }
                    *i += 1;
                }
                *i += 1;
                let lit: String = c[start..(*i).min(c.len())].iter().collect();
                let inner = &lit[1..lit.len().saturating_sub(1)];
                let quote = if style.single_quotes { '\'' } else { '"' };
                if ch != quote && !inner.contains(quote) && !inner.contains('\\') {
                    out.push(quote);
                    out.push_str(inner);
                    out.push(quote);
                } else {
                    out.push_str(&lit);
                }
            }
            '`' => {
                out.push('`');
                *i += 1;
                while *i < c.len() && c[*i] != '`' {
                    if c[*i] == '\\' {
                        out.push(c[*i]);
                        *i += 1;
                    } else if c[*i] == '$' && c.get(*i + 1) == Some(&'{') {
                        out.push_str("${");
                        *i += 2;
                        scan(c, i, out, style, true);
                        out.push('}');
                        *i += 1;
                        continue;
                    }
                    if *i < c.len() {
                        out.push(c[*i]);
                        *i += 1;
                    }
                }
                if *i < c.len() {
                    out.push('`');
                    *i += 1;
                }
            }
            '{' => {
                depth += 1;
                out.push(ch);
                *i += 1;
            }
            '}' if in_subst && depth == 0 => return,
            '}' => {
                depth = depth.saturating_sub(1);
                out.push(ch);
                *i += 1;
            }
            ';' if !style.semicolons && ends_line(c, *i + 1) => {
                *i += 1;
            }
            _ => {
                out.push(ch);
                *i += 1;
            }
        }
    }
}

/// Whether only blanks or a line comment follow position `i` on its line.
fn ends_line(c: &[char], mut i: usize) -> bool {
    while i < c.len() && (c[i] == ' ' || c[i] == '\t') {
        i += 1;
    }
    i >= c.len() || c[i] == '\n' || c[i] == '\r' || (c[i] == '/' && c.get(i + 1) == Some(&'/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restyles_quotes_and_semicolons_outside_comments_and_templates() {
        let code =
            "const a = \"x\"; // say \"hi\"\nconst b = `${a ?? \"\"}\"`;\nf({ a: 1; b: 2 });\n";
        let s = CodeStyle {
            single_quotes: true,
            semicolons: false,
        };
        assert_eq!(
            restyle(code, s),
            "const a = 'x' // say \"hi\"\nconst b = `${a ?? ''}\"`\nf({ a: 1; b: 2 })\n"
        );
        let keep = CodeStyle {
            single_quotes: false,
            semicolons: true,
        };
        assert_eq!(restyle(code, keep), code);
    }

    /// A minifier ends every statement with `;` but the last of a block (qodercli 1.1.52's
    /// bundle): semicolons. A statement a line break ends without one says otherwise.
    #[test]
    fn a_minified_file_ends_statements_with_semicolons() {
        let src = "function f(a){let b=a+1;if(b)return b;g(b)}function h(){x();y()}\n";
        let tree = crate::lang::typescript::syntax::parse(src, false);
        assert!(detect(tree.root_node(), src).semicolons);
        let src = "function f(a) {\n  let b = a + 1\n  g(b)\n  return b;\n}\n";
        let tree = crate::lang::typescript::syntax::parse(src, false);
        assert!(!detect(tree.root_node(), src).semicolons);
        let off = CodeStyle {
            single_quotes: true,
            semicolons: false,
        };
        assert_eq!(restyle_inline("x.cancel(\"a\");", off), "x.cancel('a');");
    }
}
