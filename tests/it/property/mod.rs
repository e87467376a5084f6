//! Property: for any agent made from a fixture agent by changing only its style — indent
//! unit, line endings, BOM, final newline, quotes, blank lines, comment lines, decorators
//! (Python; attributes in Rust), extra methods — apply succeeds, every file it writes parses
//! (tree-sitter / syn) and keeps every original byte and the file's line endings, Python
//! files compile with CPython (one interpreter per run, fed file by file), verify passes, a
//! second apply is a no-op, and revert gives the generated agent back byte for byte.
//! `tsc` and `cargo check` are too slow per case: one generated sample per fixture is
//! compiled by each.
//!
//! The library is called in-process. Cases per language: `ACP_PATCH_PROPTEST_CASES`
//! (default 48); TypeScript has no decorator mutation (the fixtures' tsconfig has no
//! decorator support, and standard decorators would change what tsc accepts).

mod checks;

use crate::support::*;
use acp_patch::commands::{self, ApplyOptions, RevertOptions};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lang {
    Python,
    TypeScript,
    Rust,
}

impl Lang {
    fn ext(self) -> &'static [&'static str] {
        match self {
            Lang::Python => &["py"],
            Lang::TypeScript => &["ts", "mts", "cts"],
            Lang::Rust => &["rs"],
        }
    }

    /// The fixtures' own indent step.
    fn base_indent(self) -> usize {
        match self {
            Lang::TypeScript => 2,
            _ => 4,
        }
    }

    fn comment(self) -> &'static str {
        match self {
            Lang::Python => "#",
            _ => "//",
        }
    }

    fn fixtures(self) -> &'static [&'static str] {
        match self {
            Lang::Python => &["python/asyncio_agent", "python/callback_agent"],
            Lang::TypeScript => &["typescript/sdk1_agent", "typescript/sdk2_agent"],
            Lang::Rust => &[
                "rust/trait_agent",
                "rust/builder_agent",
                "rust/v1_agent",
                "rust/raw_sync_agent",
                "rust/raw_map_agent",
            ],
        }
    }
}

/// A change of style, the same for every source file of the agent.
#[derive(Clone, Debug)]
struct Mutation {
    /// `None`: tabs; else spaces per level.
    indent: Option<usize>,
    crlf: bool,
    bom: bool,
    final_newline: bool,
    /// Swap string quotes: `Some(true)` to single, `Some(false)` to double.
    quotes: Option<bool>,
    /// Per mille of lines that get an extra blank line / comment line / decorator above.
    blank: u16,
    comments: u16,
    decorators: u16,
    /// Extra methods added to each class (impl block in Rust).
    extra_methods: u8,
    /// Drives the per-line choices.
    seed: u64,
}

fn mutation(lang: Lang) -> impl Strategy<Value = Mutation> {
    let indents: Vec<Option<usize>> = match lang {
        Lang::Python => vec![None, Some(2), Some(3), Some(4), Some(8)],
        Lang::TypeScript => vec![None, Some(2), Some(4)],
        Lang::Rust => vec![None, Some(2), Some(4)],
    };
    let quotes = if lang == Lang::Rust {
        Just(None).boxed()
    } else {
        prop_oneof![Just(None), Just(Some(true)), Just(Some(false))].boxed()
    };
    let decorators = if lang == Lang::TypeScript {
        Just(0u16).boxed()
    } else {
        prop_oneof![Just(0u16), 1u16..400].boxed()
    };
    (
        proptest::sample::select(indents),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        quotes,
        prop_oneof![Just(0u16), 1u16..300],
        prop_oneof![Just(0u16), 1u16..300],
        decorators,
        0u8..3,
        any::<u64>(),
    )
        .prop_map(
            |(
                indent,
                crlf,
                bom,
                final_newline,
                quotes,
                blank,
                comments,
                decorators,
                extra,
                seed,
            )| {
                Mutation {
                    indent,
                    crlf,
                    bom,
                    final_newline,
                    quotes,
                    blank,
                    comments,
                    decorators,
                    extra_methods: extra,
                    seed,
                }
            },
        )
}

/// splitmix64: the per-line choices, reproducible from the mutation's seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn per_mille(&mut self, p: u16) -> bool {
        p > 0 && self.next() % 1000 < u64::from(p)
    }
}

// ---- where a line may be added -----------------------------------------------------------

/// Byte ranges of tokens that span lines (strings, template literals, block comments): no
/// line is added inside them and their lines keep their whitespace.
fn multi_line_tokens(lang: Lang, src: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    match lang {
        Lang::Python | Lang::TypeScript => {
            let mut parser = tree_sitter::Parser::new();
            let language: tree_sitter::Language = if lang == Lang::Python {
                tree_sitter_python::LANGUAGE.into()
            } else {
                tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
            };
            parser.set_language(&language).unwrap();
            let tree = parser.parse(src, None).unwrap();
            let mut stack = vec![tree.root_node()];
            while let Some(n) = stack.pop() {
                let kind = n.kind();
                let token = matches!(kind, "string" | "template_string" | "comment" | "regex");
                if token {
                    if n.start_position().row != n.end_position().row {
                        out.push((n.start_byte(), n.end_byte()));
                    }
                    continue;
                }
                let mut c = n.walk();
                stack.extend(n.children(&mut c));
            }
        }
        Lang::Rust => {
            fn walk(ts: proc_macro2::TokenStream, src: &str, out: &mut Vec<(usize, usize)>) {
                for t in ts {
                    match t {
                        proc_macro2::TokenTree::Group(g) => walk(g.stream(), src, out),
                        proc_macro2::TokenTree::Literal(l) => {
                            let r = l.span().byte_range();
                            if src[r.clone()].contains('\n') {
                                out.push((r.start, r.end));
                            }
                        }
                        _ => {}
                    }
                }
            }
            let ts: proc_macro2::TokenStream = src.parse().expect("fixture tokenizes");
            walk(ts, src, &mut out);
        }
    }
    out
}

/// Per line: whether a line may be added above it (not inside a multi-line token, not
/// after a backslash continuation).
fn open_lines(lang: Lang, src: &str) -> Vec<bool> {
    let tokens = multi_line_tokens(lang, src);
    let mut out = Vec::new();
    let mut at = 0;
    let mut prev_continues = false;
    for line in src.split_inclusive('\n') {
        let inside = tokens.iter().any(|&(s, e)| s < at && at < e);
        out.push(!inside && !prev_continues);
        prev_continues = line.trim_end().ends_with('\\');
        at += line.len();
    }
    out
}

fn indent_of(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

// ---- the mutations -------------------------------------------------------------------------

/// Inserts lines: `(byte offset of a line start, text)`, applied from the end.
fn insert_lines(src: &str, mut adds: Vec<(usize, String)>) -> String {
    adds.sort_by_key(|(at, _)| std::cmp::Reverse(*at));
    let mut out = src.to_string();
    for (at, text) in adds {
        out.insert_str(at, &text);
    }
    out
}

/// Blank lines, comment lines and decorators/attributes above some lines.
fn add_lines(lang: Lang, src: &str, m: &Mutation, rng: &mut Rng) -> String {
    let open = open_lines(lang, src);
    let mut adds = Vec::new();
    let mut at = 0;
    for (i, line) in src.split_inclusive('\n').enumerate() {
        if open[i] {
            let ind = indent_of(line);
            let code = line.trim_start();
            if rng.per_mille(m.blank) {
                adds.push((at, "\n".to_string()));
            }
            if rng.per_mille(m.comments) && !code.is_empty() {
                adds.push((at, format!("{ind}{} style note {i}\n", lang.comment())));
            }
            if rng.per_mille(m.decorators) {
                let def = match lang {
                    Lang::Python => code.starts_with("def ") || code.starts_with("async def "),
                    Lang::Rust => {
                        let c = code
                            .trim_start_matches("pub(crate) ")
                            .trim_start_matches("pub ");
                        c.starts_with("fn ") || c.starts_with("async fn ")
                    }
                    Lang::TypeScript => false,
                };
                if def {
                    let deco = match lang {
                        Lang::Python => "@(lambda f: f)",
                        _ => "#[allow(unused)]",
                    };
                    adds.push((at, format!("{ind}{deco}\n")));
                }
            }
        }
        at += line.len();
    }
    insert_lines(src, adds)
}

/// Extra methods at the top of every class body (inherent `impl` block in Rust).
fn add_methods(lang: Lang, src: &str, m: &Mutation, rng: &mut Rng) -> String {
    if m.extra_methods == 0 {
        return src.to_string();
    }
    let mut anchors: Vec<(usize, String)> = Vec::new(); // (line start of the first member, its indent)
    match lang {
        Lang::Python | Lang::TypeScript => {
            let mut parser = tree_sitter::Parser::new();
            let (language, class, body): (tree_sitter::Language, _, _) = if lang == Lang::Python {
                (
                    tree_sitter_python::LANGUAGE.into(),
                    "class_definition",
                    "body",
                )
            } else {
                (
                    tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
                    "class_declaration",
                    "body",
                )
            };
            parser.set_language(&language).unwrap();
            let tree = parser.parse(src, None).unwrap();
            let mut stack = vec![tree.root_node()];
            while let Some(n) = stack.pop() {
                if n.kind() == class
                    && let Some(b) = n.child_by_field_name(body)
                    && let Some(first) = b.named_child(0)
                    && first.start_position().row > n.start_position().row
                {
                    let start = src[..first.start_byte()].rfind('\n').map_or(0, |i| i + 1);
                    anchors.push((start, indent_of(&src[start..]).to_string()));
                }
                let mut c = n.walk();
                stack.extend(n.children(&mut c));
            }
        }
        Lang::Rust => {
            let file = syn::parse_file(src).expect("fixture parses");
            for item in &file.items {
                if let syn::Item::Impl(imp) = item
                    && imp.trait_.is_none()
                {
                    let open = imp.brace_token.span.open().byte_range().end;
                    let start = src[open..].find('\n').map_or(src.len(), |i| open + i + 1);
                    let ind = indent_of(&src[start..]).to_string();
                    let ind = if ind.is_empty() { "    ".into() } else { ind };
                    anchors.push((start, ind));
                }
            }
        }
    }
    let semi =
        src.lines().filter(|l| l.trim_end().ends_with(';')).count() * 3 > src.lines().count();
    let step = " ".repeat(lang.base_indent());
    let mut adds = Vec::new();
    for (at, ind) in anchors {
        for k in 0..m.extra_methods {
            let n = rng.next() % 1000 + u64::from(k);
            let body = match lang {
                Lang::Python => {
                    format!("{ind}def style_extra_{n}(self):\n{ind}{step}return {n}\n\n")
                }
                Lang::TypeScript => format!(
                    "{ind}styleExtra{n}(): number {{\n{ind}{step}return {n}{}\n{ind}}}\n\n",
                    if semi { ";" } else { "" }
                ),
                Lang::Rust => format!(
                    "{ind}#[allow(dead_code)]\n{ind}fn style_extra_{n}(&self) -> u64 {{\n{ind}{step}{n}\n{ind}}}\n\n"
                ),
            };
            adds.push((at, body));
        }
    }
    insert_lines(src, adds)
}

/// Plain string literals (no prefix, escapes or quotes inside) in the other quote.
fn swap_quotes(lang: Lang, src: &str, to_single: bool) -> String {
    let mut parser = tree_sitter::Parser::new();
    let language: tree_sitter::Language = if lang == Lang::Python {
        tree_sitter_python::LANGUAGE.into()
    } else {
        tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
    };
    parser.set_language(&language).unwrap();
    let tree = parser.parse(src, None).unwrap();
    let (from, to) = if to_single { ('"', '\'') } else { ('\'', '"') };
    let mut spans = Vec::new();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        if n.kind() == "string" {
            let t = &src[n.byte_range()];
            let inner = &t[1..t.len().saturating_sub(1)];
            if t.len() >= 2
                && t.starts_with(from)
                && t.ends_with(from)
                && !t.starts_with("\"\"\"")
                && !t.starts_with("'''")
                && !inner.contains(['"', '\'', '\\', '\n', '{'])
            {
                spans.push((n.start_byte(), n.end_byte()));
            }
            continue;
        }
        let mut c = n.walk();
        stack.extend(n.children(&mut c));
    }
    let mut out = src.to_string();
    for (s, e) in spans {
        out.replace_range(s..s + 1, &to.to_string());
        out.replace_range(e - 1..e, &to.to_string());
    }
    out
}

/// Leading spaces in steps of the fixture's unit become the new unit (lines inside
/// multi-line tokens keep theirs).
fn reindent(lang: Lang, src: &str, unit: Option<usize>) -> String {
    let base = lang.base_indent();
    if unit == Some(base) {
        return src.to_string();
    }
    let tokens = multi_line_tokens(lang, src);
    let mut out = String::with_capacity(src.len() + src.len() / 4);
    let mut at = 0;
    for line in src.split_inclusive('\n') {
        let inside = tokens.iter().any(|&(s, e)| s < at && at < e);
        let n = line.len() - line.trim_start_matches(' ').len();
        if inside || n == 0 {
            out.push_str(line);
        } else {
            let level = match unit {
                None => "\t".to_string(),
                Some(u) => " ".repeat(u),
            };
            out.push_str(&level.repeat(n / base));
            out.push_str(&" ".repeat(n % base));
            out.push_str(&line[n..]);
        }
        at += line.len();
    }
    out
}

fn mutate(lang: Lang, src: &str, m: &Mutation, salt: u64) -> String {
    let mut rng = Rng(m.seed ^ salt);
    let mut s = add_methods(lang, src, m, &mut rng);
    s = add_lines(lang, &s, m, &mut rng);
    if let Some(to_single) = m.quotes {
        s = swap_quotes(lang, &s, to_single);
    }
    s = reindent(lang, &s, m.indent);
    if !m.final_newline {
        s = s.trim_end_matches('\n').to_string();
    }
    if m.crlf {
        s = s.replace('\n', "\r\n");
    }
    if m.bom {
        s.insert(0, '\u{feff}');
    }
    s
}

/// A fixture's `before/` tree with every source file of its language in the new style.
fn generate(lang: Lang, fixture_case: &str, m: &Mutation, into: &Path) {
    let before = fixture(fixture_case).join("before");
    copy_into(&before, into);
    for path in walk(into) {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if !lang.ext().contains(&ext) {
            continue;
        }
        let src = std::fs::read_to_string(&path).unwrap();
        let salt = path.to_string_lossy().len() as u64;
        std::fs::write(&path, mutate(lang, &src, m, salt)).unwrap();
    }
}
