//! Small helpers over the tree-sitter Python tree.

use crate::lang::tree::{ancestor, child_of, field_children, named_children_code};
pub use crate::lang::tree::{descendants, first_error, name_of, named_children, text, walk};
use crate::needles::positions;
pub use parse::{PARSER, parse, parse_in_background, prefetch, reparse};
use tree_sitter::Node;

mod parse;

/// The bodies of a `try` statement's `except` clauses.
pub fn except_blocks(try_stmt: Node) -> Vec<Node> {
    named_children(try_stmt)
        .into_iter()
        .filter(|n| n.kind() == "except_clause")
        .filter_map(|clause| {
            named_children(clause)
                .into_iter()
                .find(|b| b.kind() == "block")
        })
        .collect()
}

/// Descendants of a kind that are not inside a nested function or class.
pub fn descendants_same_scope<'t>(node: Node<'t>, kind: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let names = [kind, "function_definition", "class_definition", "lambda"];
    let mut kinds = crate::lang::tree::Kinds::new(&names);
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        walk(child, &mut |n| {
            let k = kinds.of(n);
            if k == Some(0) {
                out.push(n);
            }
            // a new scope is not entered (the kind asked for may be one: it is kept)
            !k.is_some_and(|i| names[1..].contains(&names[i]))
        });
    }
    out
}

/// The last identifier of a callee: `a.b.c(...)` → `c`, `f(...)` → `f`.
pub fn callee_name<'a>(call: Node, src: &'a str) -> &'a str {
    match call.child_by_field_name("function") {
        Some(f) if f.kind() == "attribute" => f
            .child_by_field_name("attribute")
            .map(|a| text(a, src))
            .unwrap_or(""),
        Some(f) if f.kind() == "identifier" => text(f, src),
        _ => "",
    }
}

/// The object of an attribute callee: `agent._call(...)` → `agent`.
pub fn callee_object<'a>(call: Node, src: &'a str) -> Option<&'a str> {
    let f = call.child_by_field_name("function")?;
    (f.kind() == "attribute")
        .then(|| f.child_by_field_name("object").map(|o| text(o, src)))
        .flatten()
}

pub fn keyword_arg<'t>(call: Node<'t>, name: &str, src: &str) -> Option<Node<'t>> {
    let args = call.child_by_field_name("arguments")?;
    let mut cursor = args.walk();
    args.named_children(&mut cursor)
        .find(|a| a.kind() == "keyword_argument" && name_of(*a, src) == name)
}

pub fn positional_args<'t>(call: Node<'t>) -> Vec<Node<'t>> {
    let Some(args) = call.child_by_field_name("arguments") else {
        return vec![];
    };
    let mut cursor = args.walk();
    args.named_children(&mut cursor)
        .filter(|a| !matches!(a.kind(), "keyword_argument" | "comment"))
        .collect()
}

/// The nearest enclosing function definition.
pub fn enclosing_function(node: Node) -> Option<Node> {
    ancestor(node, |n| n.kind() == "function_definition")
}

/// The function whose own body holds `node`, not through a nested function, class or
/// lambda: the function [`descendants_same_scope`] of its body finds `node` from.
pub fn scope_function(node: Node) -> Option<Node> {
    let mut n = node.parent()?;
    loop {
        match n.kind() {
            "function_definition" => {
                let body = n.child_by_field_name("body")?.byte_range();
                let inside = body.start <= node.start_byte() && node.end_byte() <= body.end;
                return inside.then_some(n);
            }
            "class_definition" | "lambda" => return None,
            _ => n = n.parent()?,
        }
    }
}

/// The identifiers whose whole text is `name`, found from where it is written (the smallest
/// node around each place), in the order of the text.
pub fn identifiers_named<'t>(root: Node<'t>, src: &str, name: &str) -> Vec<Node<'t>> {
    positions(src, name)
        .filter_map(|at| root.descendant_for_byte_range(at, at + name.len()))
        .filter(|n| n.kind() == "identifier" && n.byte_range().len() == name.len())
        .collect()
}

/// The nearest ancestor of a kind, stopping at function boundaries.
pub fn ancestor_in_function<'t>(node: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut cur = node.parent();
    while let Some(n) = cur {
        if n.kind() == kind {
            return Some(n);
        }
        if n.kind() == "function_definition" {
            return None;
        }
        cur = n.parent();
    }
    None
}

/// The statement that directly holds `node` in a block (or the module).
pub fn statement_of(node: Node) -> Node {
    child_of(node, |p| matches!(p.kind(), "block" | "module"))
}

/// `Class.method` / `outer.inner` / `func`: the dotted path of a definition.
pub fn qualified_name(def: Node, src: &str) -> String {
    let mut parts = vec![name_of(def, src).to_string()];
    let mut cur = def.parent();
    while let Some(n) = cur {
        if matches!(n.kind(), "function_definition" | "class_definition") {
            parts.push(name_of(n, src).to_string());
        }
        cur = n.parent();
    }
    parts.reverse();
    parts.join(".")
}

/// The top-level statement (child of the module) that contains `node`, decorators included.
pub fn top_level(node: Node) -> Node {
    child_of(node, |p| p.kind() == "module")
}

/// Statements of a function body, skipping a docstring and `nonlocal`/`global` lines:
/// the first statement new code may go before.
pub fn first_body_statement(body: Node) -> Option<Node> {
    let stmts = named_children_code(body);
    let mut i = 0;
    if let Some(first) = stmts.first()
        && first.kind() == "expression_statement"
        && first.named_child(0).map(|c| c.kind()) == Some("string")
    {
        i = 1;
    }
    while i < stmts.len() && matches!(stmts[i].kind(), "nonlocal_statement" | "global_statement") {
        i += 1;
    }
    stmts.get(i).copied().or_else(|| stmts.last().copied())
}

/// Parameter nodes of a function, with their names.
pub fn parameters<'t>(def: Node<'t>, src: &str) -> Vec<(String, Node<'t>)> {
    let Some(params) = def.child_by_field_name("parameters") else {
        return vec![];
    };
    let mut cursor = params.walk();
    params
        .named_children(&mut cursor)
        .filter_map(|p| {
            let name = match p.kind() {
                "identifier" => text(p, src).to_string(),
                "typed_parameter" => p.named_child(0).map(|c| text(c, src).to_string())?,
                "default_parameter" | "typed_default_parameter" => {
                    text(p.child_by_field_name("name")?, src).to_string()
                }
                _ => return None,
            };
            Some((name, p))
        })
        .collect()
}

/// The class a node is in (through nested functions: a lambda in a method).
pub fn enclosing_class(node: Node) -> Option<Node> {
    ancestor(node, |n| n.kind() == "class_definition")
}

/// The names a `from <module> import ...` statement binds: (the module's name, the local name).
pub fn imported_names<'a>(import_from: Node, src: &'a str) -> Vec<(&'a str, &'a str)> {
    let mut c = import_from.walk();
    import_from
        .children_by_field_name("name", &mut c)
        .filter_map(|n| match n.kind() {
            "aliased_import" => Some((
                text(n.child_by_field_name("name")?, src),
                text(n.child_by_field_name("alias")?, src),
            )),
            _ => Some((text(n, src), text(n, src))),
        })
        .collect()
}

/// Top-level function definitions of a module (decorated ones too).
pub fn top_level_functions(root: Node) -> Vec<Node> {
    named_children(root)
        .into_iter()
        .filter_map(function_definition)
        .collect()
}

/// Whether a module imports `name` at top level (`import name` / `import name as x`).
pub fn imports_module(root: Node, src: &str, name: &str) -> bool {
    let mut cursor = root.walk();
    root.named_children(&mut cursor).any(|n| {
        n.kind() == "import_statement" && {
            let mut c = n.walk();
            n.named_children(&mut c).any(|m| {
                let t = match m.kind() {
                    "aliased_import" => m.child_by_field_name("name").map(|x| text(x, src)),
                    _ => Some(text(m, src)),
                };
                t == Some(name)
            })
        }
    })
}

/// The last top-level import statement (plain or from-import, incl. `from __future__`).
pub fn last_top_level_import(root: Node) -> Option<Node> {
    let mut cursor = root.walk();
    root.named_children(&mut cursor)
        .filter(|n| {
            matches!(
                n.kind(),
                "import_statement" | "import_from_statement" | "future_import_statement"
            )
        })
        .last()
}

/// The base-class expressions of a class (keyword arguments such as `metaclass=` left out).
pub fn superclasses(class: Node) -> Vec<Node> {
    class
        .child_by_field_name("superclasses")
        .map(|args| {
            named_children(args)
                .into_iter()
                .filter(|a| !matches!(a.kind(), "keyword_argument" | "comment"))
                .collect()
        })
        .unwrap_or_default()
}

/// The class name a base expression ends in (`Mixin`, `mod.Mixin`, the generic `Mixin[T]`).
pub fn base_name<'a>(base: Node, src: &'a str) -> Option<&'a str> {
    match base.kind() {
        "identifier" => Some(text(base, src)),
        "attribute" => base.child_by_field_name("attribute").map(|a| text(a, src)),
        "subscript" => base_name(base.child_by_field_name("value")?, src),
        _ => None,
    }
}

/// Whether a text may import the SDK (`import acp`, `from acp...`): a literal test.
pub fn mentions_sdk(text: &str) -> bool {
    // only the lines holding `acp` are scanned: most files have none
    positions(text, "acp")
        .any(|i| absolute_imports(line_at(text, i).1).any(|m| m == "acp" || m.starts_with("acp.")))
}

/// The line holding byte `i` (without its line break), and where it starts.
fn line_at(text: &str, i: usize) -> (usize, &str) {
    let start = text[..i].rfind('\n').map_or(0, |n| n + 1);
    let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
    (start, text[start..end].trim_end_matches('\r'))
}

/// The names of the classes a text may define (`class Name(`, `class Name:`,
/// `class Name[T]:`), found by a literal scan.
pub fn class_names(text: &str) -> impl Iterator<Item = &str> {
    positions(text, "class").filter_map(|i| {
        let after_word = text[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
        let spaced = &text[i + "class".len()..];
        let rest = spaced.trim_start_matches([' ', '\t']);
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        (after_word
            && end > 0
            && rest.len() < spaced.len()
            && matches!(
                rest[end..].trim_start_matches([' ', '\t']).chars().next(),
                Some('(' | ':' | '[')
            ))
        .then(|| &rest[..end])
    })
}

/// The absolute module names a text's import lines name (`import a.b as c, d` gives `a.b`,
/// `d`; `from a.b import x` gives `a.b`), found by a line scan that needs no tree: an
/// import inside a function counts, one in a string may too.
pub fn absolute_imports(text: &str) -> impl Iterator<Item = &str> {
    // only the lines holding `import` are looked at, each once
    let mut last_line = usize::MAX;
    let lines = positions(text, "import").filter_map(move |i| {
        let (start, line) = line_at(text, i);
        (start != last_line).then(|| {
            last_line = start;
            line
        })
    });
    lines.flat_map(|line| {
        let line = line.trim_start().split(';').next().unwrap_or_default();
        let modules: Vec<&str> = if let Some(rest) = line.strip_prefix("from ") {
            rest.split_whitespace().next().into_iter().collect()
        } else if let Some(rest) = line.strip_prefix("import ") {
            rest.split(',')
                .filter_map(|m| m.split_whitespace().next())
                .collect()
        } else {
            Vec::new()
        };
        modules.into_iter().filter(|m| {
            !m.starts_with('.')
                && m.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
        })
    })
}

/// Whether `word` occurs in a text as a whole word (a literal scan).
pub fn mentions_word(text: &str, word: &str) -> bool {
    positions(text, word).any(|i| {
        let is_word = |c: char| c.is_alphanumeric() || c == '_';
        !text[..i].chars().next_back().is_some_and(is_word)
            && !text[i + word.len()..].chars().next().is_some_and(is_word)
    })
}

/// Whether a text calls `name(` (a literal scan, the name a whole word).
pub fn calls(text: &str, name: &str) -> bool {
    positions(text, name).any(|i| {
        let before = text[..i].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && text[i + name.len()..].starts_with('(')
    })
}

/// The methods defined directly in a class body (decorated ones too).
pub fn methods(class: Node) -> Vec<Node> {
    field_children(class, "body", function_definition)
}

/// A function definition, decorated or not: the definition itself.
fn function_definition(n: Node) -> Option<Node> {
    match n.kind() {
        "function_definition" => Some(n),
        "decorated_definition" => n
            .child_by_field_name("definition")
            .filter(|d| d.kind() == "function_definition"),
        _ => None,
    }
}

pub fn is_async(def: Node, src: &str) -> bool {
    text(def, src).starts_with("async")
}

/// The decorators above a definition, top to bottom.
pub fn decorators(def: Node) -> Vec<Node> {
    def.parent()
        .filter(|p| p.kind() == "decorated_definition")
        .map(|p| {
            named_children(p)
                .into_iter()
                .filter(|n| n.kind() == "decorator")
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A name is found where it is a whole identifier, not inside a longer one, a string or
    /// a comment; the function whose own body holds a node is its scope, not through a
    /// lambda or class, and not from a default value.
    #[test]
    fn identifiers_are_found_by_their_text_and_their_scope_by_climbing() {
        let src = "def f(cb, d=g(cb)):
    x.cb = cb  # cb
    s = 'cb'
    cbx = 1
    k = lambda: cb
    class C:
        y = cb
";
        let tree = parse(src);
        let found = identifiers_named(tree.root_node(), src, "cb");
        let at: Vec<usize> = found.iter().map(|n| n.start_byte()).collect();
        let want: Vec<usize> = [6, 14, 26, 31, 81, 109]
            .into_iter()
            .inspect(|i| assert_eq!(&src[*i..*i + 2], "cb"))
            .collect();
        assert_eq!(at, want);
        let scoped: Vec<bool> = found
            .iter()
            .map(|n| scope_function(*n).is_some_and(|f| name_of(f, src) == "f"))
            .collect();
        // the parameter and the default are outside the body; the lambda and the class
        // are scopes of their own
        assert_eq!(scoped, [false, false, true, true, false, false]);
    }

    /// The walk that learns kinds by id finds what one comparing names finds.
    #[test]
    fn descendants_in_the_same_scope_are_those_a_walk_by_name_finds() {
        let src = "def f(a):\n    x = g(1)\n    def inner():\n        y = h(2)\n    k = lambda: m(3)\n    class C:\n        z = n(4)\n    w = (p(5) if a else q(6))\n    ) = broken(7)\n";
        let tree = parse(src);
        let body = descendants(tree.root_node(), "function_definition")[0]
            .child_by_field_name("body")
            .unwrap();
        for kind in [
            "call",
            "assignment",
            "function_definition",
            "lambda",
            "ERROR",
        ] {
            let mut want = Vec::new();
            let mut cursor = body.walk();
            for child in body.children(&mut cursor) {
                walk(child, &mut |n| {
                    if n.kind() == kind {
                        want.push(n);
                    }
                    !matches!(
                        n.kind(),
                        "function_definition" | "class_definition" | "lambda"
                    )
                });
            }
            assert_eq!(descendants_same_scope(body, kind), want, "{kind}");
        }
        assert_eq!(descendants_same_scope(body, "call").len(), 4); // g, p, q, broken
    }

    #[test]
    fn class_definitions_and_calls_are_found_as_whole_words() {
        let is = |n: &str| n == "Adapter";
        let defines_class = |text: &str, is: fn(&str) -> bool| class_names(text).any(is);
        assert!(defines_class("class\tAdapter (Base):\n", is));
        assert!(defines_class("class  Adapter(Base):\n", is));
        assert!(defines_class("x = 1\nclass Adapter(Base):\n", is));
        assert!(defines_class("class Adapter[T]:\n", is));
        assert!(defines_class("class Adapter:\n", is));
        assert!(!defines_class("class AdapterX(Base):\n", is));
        assert!(!defines_class("subclass Adapter(Base):\n", is));
        assert!(!defines_class("# the class Adapter is elsewhere\n", is));
        assert!(mentions_word("class B(mod.Adapter):", "Adapter"));
        assert!(mentions_sdk("x = 1\n    import os, acp.schema as s\n"));
        assert!(mentions_sdk("from acp.schema import (\n  X,\n)\n"));
        assert_eq!(
            absolute_imports("import a.b as c, d;x=1\nfrom .rel import y\nfrom e.f import (g)\n")
                .collect::<Vec<_>>(),
            ["a.b", "d", "e.f"]
        );
        assert!(!mentions_sdk(
            "from acpx import y\nimport acp_progress\n# import acp\n"
        ));
        assert!(!mentions_word("class B(AdapterX):", "Adapter"));
        assert!(calls("asyncio.run(serve(Server()))", "serve"));
        assert!(!calls("observe(x)", "serve"));
        assert!(!calls("serve = 1", "serve"));
    }
}
