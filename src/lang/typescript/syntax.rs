//! Small helpers over the tree-sitter TypeScript tree.

use crate::lang::tree::{ancestor, child_of, field_children, named_children_code};
pub use crate::lang::tree::{descendants, first_error, name_of, named_children, text, walk};
use tree_sitter::{Node, Parser, Tree};

/// Parses TypeScript (`.ts`, `.mts`, `.cts`) or, with `tsx`, TSX (`.tsx`: JSX allowed, `<T>x`
/// casts not).
/// The tree of a TypeScript text, in the TSX grammar when `tsx` (parsed once per run: see
/// [`crate::lang::tree::cache`]).
/// The parser of a lazily parsed file: TypeScript, or TSX (`tsx`).
pub fn parser(tsx: bool) -> crate::lang::parts::Parser {
    if tsx {
        crate::lang::parts::Parser {
            parse: |t| parse_shared(t, true),
            first_error: |tree| first_error(tree),
        }
    } else {
        crate::lang::parts::Parser {
            parse: |t| parse_shared(t, false),
            first_error: |tree| first_error(tree),
        }
    }
}

pub fn parse(text: &str, tsx: bool) -> Tree {
    use crate::lang::tree::cache::{self, Grammar};
    if tsx {
        cache::parse(Grammar::Tsx, text, |t| parse_uncached(t, true))
    } else {
        cache::parse(Grammar::TypeScript, text, |t| parse_uncached(t, false))
    }
}

/// [`parse`] of a file's own text (kept by the cache, not copied).
fn parse_shared(text: &std::sync::Arc<str>, tsx: bool) -> Tree {
    use crate::lang::tree::cache::{self, Grammar};
    if tsx {
        cache::parse_shared(Grammar::Tsx, text, |t| parse_uncached(t, true))
    } else {
        cache::parse_shared(Grammar::TypeScript, text, |t| parse_uncached(t, false))
    }
}

/// Parses every text not parsed yet in this run, on all cores.
pub fn prefetch(texts: &[&std::sync::Arc<str>], tsx: bool) {
    use crate::lang::tree::cache::{self, Grammar};
    if tsx {
        cache::prefetch(Grammar::Tsx, texts, |t| parse_uncached(t, true));
    } else {
        cache::prefetch(Grammar::TypeScript, texts, |t| parse_uncached(t, false));
    }
}

fn parse_uncached(text: &str, tsx: bool) -> Tree {
    let mut parser = Parser::new();
    let language = if tsx {
        tree_sitter_typescript::LANGUAGE_TSX
    } else {
        tree_sitter_typescript::LANGUAGE_TYPESCRIPT
    };
    parser
        .set_language(&language.into())
        .expect("the TypeScript grammar matches the tree-sitter version");
    parser
        .parse(mask_grammar_gaps(text).as_ref(), None)
        .expect("parsing without a timeout")
}

/// Valid TypeScript that tree-sitter-typescript 0.23 cannot parse, blanked out byte for
/// byte so every offset stays the same: `import("./m.js")` in type position (as in
/// `x?: import("./m.js").T[]`) becomes an identifier of underscores; a conditional whose
/// consequent is a number starting with its dot (`e===void 0?.5:e`, minifiers write it), which
/// the grammar reads as `?.`, gets a space for the dot (`? 5`: a number still).
pub fn mask_grammar_gaps(text: &str) -> std::borrow::Cow<'_, str> {
    let mut out = mask_type_imports(text);
    let b = text.as_bytes();
    for i in crate::needles::positions(text, "?.") {
        if b.get(i + 2).is_some_and(u8::is_ascii_digit) {
            out.get_or_insert_with(|| b.to_vec())[i + 1] = b' ';
        }
    }
    match out {
        Some(buf) => String::from_utf8(buf).expect("ASCII replaced ASCII").into(),
        None => text.into(),
    }
}

fn mask_type_imports(text: &str) -> Option<Vec<u8>> {
    if !text.contains("import(") {
        return None;
    }
    let b = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut from = 0;
    while let Some(i) = text[from..].find("import(").map(|i| i + from) {
        from = i + 7;
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_' || b[i - 1] == b'$') {
            continue;
        }
        let mut j = i + 7;
        while j < b.len() && b[j] == b' ' {
            j += 1;
        }
        let Some(&q) = b.get(j).filter(|q| **q == b'"' || **q == b'\'') else {
            continue;
        };
        let Some(end) = text[j + 1..].find(q as char).map(|e| e + j + 1) else {
            continue;
        };
        let mut k = end + 1;
        while k < b.len() && b[k] == b' ' {
            k += 1;
        }
        if b.get(k) != Some(&b')') || text[j..end].contains('\n') {
            continue;
        }
        let buf = out.get_or_insert_with(|| b.to_vec());
        buf[i..=k].fill(b'_');
        from = k + 1;
    }
    out
}

/// Every class declaration of a file (exported ones too, nested ones too).
pub fn classes(root: Node) -> Vec<Node> {
    let mut out = descendants(root, "class_declaration");
    out.extend(descendants(root, "abstract_class_declaration"));
    // `var Agent = class { ... }` / `Agent = class { ... }`: a class a declaration or an
    // assignment binds (see `name_of`)
    out.extend(
        descendants(root, "class")
            .into_iter()
            .filter(|c| crate::lang::tree::class_binding(*c).is_some()),
    );
    out.sort_by_key(|n| n.start_byte());
    out
}

/// The methods of a class body, in order.
pub fn methods(class: Node) -> Vec<Node> {
    field_children(class, "body", |m| {
        (m.kind() == "method_definition").then_some(m)
    })
}

pub fn body(func: Node) -> Option<Node> {
    func.child_by_field_name("body")
}

/// Whether a function or method is declared `async`.
pub fn is_async(func: Node) -> bool {
    let mut c = func.walk();
    func.children(&mut c).any(|n| n.kind() == "async")
}

/// The nearest enclosing function-like node (method, function, arrow function).
pub fn enclosing_function(node: Node) -> Option<Node> {
    ancestor(node, is_function)
}

/// The kinds of a function (what `this` and a function's names are scoped to).
pub const FUNCTIONS: &[&str] = &[
    "method_definition",
    "function_declaration",
    "function_expression",
    "arrow_function",
    "generator_function_declaration",
    "generator_function",
];

pub fn is_function(n: Node) -> bool {
    FUNCTIONS.contains(&n.kind())
}

/// Parameters of a function: (name, node). Destructured parameters have an empty name.
pub fn parameters<'t>(func: Node<'t>, src: &str) -> Vec<(String, Node<'t>)> {
    let Some(params) = func.child_by_field_name("parameters") else {
        return vec![];
    };
    named_children(params)
        .into_iter()
        .filter(|p| p.kind() != "comment")
        .map(|p| {
            let name = p
                .child_by_field_name("pattern")
                .filter(|n| n.kind() == "identifier")
                .map(|n| text(n, src).to_string())
                .unwrap_or_default();
            (name, p)
        })
        .collect()
}

/// The argument nodes of a call.
pub fn arguments(call: Node) -> Vec<Node> {
    field_children(call, "arguments", |n| (n.kind() != "comment").then_some(n))
}

/// `a.b.c(...)` → (`a.b`, `c`); `f(...)` → (``, `f`).
pub fn callee<'a>(call: Node, src: &'a str) -> (&'a str, &'a str) {
    match call.child_by_field_name("function") {
        Some(f) if f.kind() == "member_expression" => (
            f.child_by_field_name("object")
                .map(|o| text(o, src))
                .unwrap_or(""),
            f.child_by_field_name("property")
                .map(|p| text(p, src))
                .unwrap_or(""),
        ),
        Some(f) if f.kind() == "identifier" => ("", text(f, src)),
        _ => ("", ""),
    }
}

/// The value of a plain string literal (`"x"` / `'x'`), if the node is one.
pub fn string_value<'a>(node: Node, src: &'a str) -> Option<&'a str> {
    (node.kind() == "string").then(|| {
        let t = text(node, src);
        &t[1..t.len().saturating_sub(1).max(1)]
    })
}

/// The value expression of property `key` in an object literal (shorthand included).
pub fn object_property<'t>(obj: Node<'t>, key: &str, src: &str) -> Option<Node<'t>> {
    if obj.kind() != "object" {
        return None;
    }
    named_children(obj)
        .into_iter()
        .find_map(|p| match p.kind() {
            "shorthand_property_identifier" if text(p, src) == key => Some(p),
            "pair"
                if p.child_by_field_name("key")
                    .is_some_and(|k| text(k, src).trim_matches(['"', '\'']) == key) =>
            {
                p.child_by_field_name("value")
            }
            _ => None,
        })
}

/// The statement that directly holds `node` in a statement block, a switch case or the program.
pub fn statement_of(node: Node) -> Node {
    child_of(node, |p| {
        matches!(p.kind(), "statement_block" | "program" | "switch_case")
    })
}

/// The top-level statement (child of the program) that contains `node`.
pub fn top_level(node: Node) -> Node {
    child_of(node, |p| p.kind() == "program")
}

/// Statements of a block, comments skipped.
pub fn statements(block: Node) -> Vec<Node> {
    named_children_code(block)
}

/// Names of the top-level functions of a file (exported ones too).
pub fn top_level_functions<'t>(root: Node<'t>, src: &str) -> Vec<(String, Node<'t>)> {
    let mut out = Vec::new();
    for n in named_children(root) {
        let decl = if n.kind() == "export_statement" {
            n.child_by_field_name("declaration")
        } else {
            Some(n)
        };
        if let Some(d) = decl
            && d.kind() == "function_declaration"
        {
            out.push((name_of(d, src).to_string(), d));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_type_queries_parse_and_keep_offsets() {
        let src = "type A = { b?: import('./x.js').Y[] }\nconst m = await import(\"./m.js\")\n";
        let masked = mask_grammar_gaps(src);
        assert_eq!(masked.len(), src.len());
        assert!(masked.contains("_.Y[]"));
        assert_eq!(first_error(&parse(src, false)), None);
    }

    /// qodercli 1.1.52's bundle (`r=e===void 0?.5:e`): `?.` before a digit is a conditional.
    #[test]
    fn a_conditional_of_a_dot_number_parses() {
        let src = "let r=e===void 0?.5:e, s=a?.b, t=c?.0:.25;\n";
        let masked = mask_grammar_gaps(src);
        assert_eq!(masked, "let r=e===void 0? 5:e, s=a?.b, t=c? 0:.25;\n");
        for tsx in [false, true] {
            assert_eq!(first_error(&parse(src, tsx)), None);
        }
    }
}
