//! Which names are bound where, on the syntax tree: what an expression reads, and whether a
//! name is bound at a point of a function, class body or module (a parameter, a binding on
//! every way there, a closure's enclosing function, a module name). Source order, not data
//! flow: a name assigned further down is not bound; loops count their body.

use super::syntax::*;
use tree_sitter::Node;

pub(super) const BUILTINS: &[&str] = &[
    "None",
    "True",
    "False",
    "__name__",
    "__file__",
    "__doc__",
    "__builtins__",
    "abs",
    "aiter",
    "all",
    "anext",
    "any",
    "ascii",
    "bin",
    "bool",
    "breakpoint",
    "bytearray",
    "bytes",
    "callable",
    "chr",
    "classmethod",
    "compile",
    "complex",
    "delattr",
    "dict",
    "dir",
    "divmod",
    "enumerate",
    "eval",
    "exec",
    "filter",
    "float",
    "format",
    "frozenset",
    "getattr",
    "globals",
    "hasattr",
    "hash",
    "help",
    "hex",
    "id",
    "input",
    "int",
    "isinstance",
    "issubclass",
    "iter",
    "len",
    "list",
    "locals",
    "map",
    "max",
    "memoryview",
    "min",
    "next",
    "object",
    "oct",
    "open",
    "ord",
    "pow",
    "print",
    "property",
    "range",
    "repr",
    "reversed",
    "round",
    "set",
    "setattr",
    "slice",
    "sorted",
    "staticmethod",
    "str",
    "sum",
    "super",
    "tuple",
    "type",
    "vars",
    "zip",
    "Exception",
    "BaseException",
    "RuntimeError",
    "ValueError",
    "TypeError",
    "KeyError",
    "AttributeError",
    "NotImplemented",
    "Ellipsis",
];

/// Identifiers an expression or statement reads (not attribute names, keywords, targets,
/// lambda parameters or import names).
pub(super) fn load_identifiers<'t>(
    node: Node<'t>,
    src: &str,
    hidden: &mut Vec<String>,
    out: &mut Vec<Node<'t>>,
) {
    match node.kind() {
        "identifier" => {
            let name = text(node, src);
            if !hidden.iter().any(|h| h == name) {
                out.push(node);
            }
        }
        "attribute" => {
            if let Some(o) = node.child_by_field_name("object") {
                load_identifiers(o, src, hidden, out);
            }
        }
        "keyword_argument" => {
            if let Some(v) = node.child_by_field_name("value") {
                load_identifiers(v, src, hidden, out);
            }
        }
        "assignment" | "augmented_assignment" => {
            // a target reads only what it is made of (`a.b = ` reads `a`; `x = ` reads nothing)
            if let Some(l) = node.child_by_field_name("left")
                && (node.kind() == "augmented_assignment" || l.kind() != "identifier")
                && !matches!(l.kind(), "pattern_list" | "tuple_pattern" | "list_pattern")
            {
                load_identifiers(l, src, hidden, out);
            }
            if let Some(r) = node.child_by_field_name("right") {
                load_identifiers(r, src, hidden, out);
            }
        }
        "lambda" => {
            let params: Vec<String> = node
                .child_by_field_name("parameters")
                .map(|ps| {
                    named_children(ps)
                        .into_iter()
                        .map(|p| {
                            p.child_by_field_name("name")
                                .map(|n| text(n, src))
                                .unwrap_or_else(|| text(p, src))
                                .to_string()
                        })
                        .collect()
                })
                .unwrap_or_default();
            let n = hidden.len();
            hidden.extend(params);
            if let Some(b) = node.child_by_field_name("body") {
                load_identifiers(b, src, hidden, out);
            }
            hidden.truncate(n);
        }
        "string"
        | "comment"
        | "import_statement"
        | "import_from_statement"
        | "function_definition"
        | "class_definition" => {}
        _ => {
            for c in named_children(node) {
                load_identifiers(c, src, hidden, out);
            }
        }
    }
}

/// Whether `name`, read at `at`, is bound there.
pub(super) fn is_bound(name: &str, at: Node, src: &str) -> bool {
    if BUILTINS.contains(&name) {
        return true;
    }
    let mut innermost = true;
    let mut in_function = false;
    let mut cur = at;
    while let Some(parent) = cur.parent() {
        match parent.kind() {
            "lambda"
                if parent.child_by_field_name("parameters").is_some_and(|ps| {
                    descendants(ps, "identifier")
                        .iter()
                        .any(|i| text(*i, src) == name)
                }) =>
            {
                return true;
            }
            "function_definition" => {
                if parameters(parent, src).iter().any(|(n, _)| n == name) {
                    return true;
                }
                let body = parent.child_by_field_name("body").expect("body");
                if cur == body || body.byte_range().contains(&at.start_byte()) {
                    let bound = if innermost {
                        bound_before(body, name, at, src)
                    } else {
                        binds_anywhere(body, name, src)
                    };
                    if bound {
                        return true;
                    }
                    innermost = false;
                    in_function = true;
                }
            }
            "class_definition" if !in_function => {
                let body = parent.child_by_field_name("body").expect("body");
                if body.byte_range().contains(&at.start_byte()) && bound_before(body, name, at, src)
                {
                    return true;
                }
            }
            "module" => {
                return if in_function {
                    binds_anywhere(parent, name, src)
                } else {
                    bound_before(parent, name, at, src)
                };
            }
            _ => {}
        }
        cur = parent;
    }
    false
}

/// Bound on every path from the start of `scope` (a body or the module) to `at`: by a
/// statement before it in a block enclosing it, or by the header of a compound statement it
/// is in (`for x in`, `with ... as x`, `except ... as x`).
fn bound_before(scope: Node, name: &str, at: Node, src: &str) -> bool {
    let mut cur = at;
    while let Some(parent) = cur.parent() {
        match parent.kind() {
            "block" | "module" => {
                for s in named_children(parent) {
                    if s.start_byte() >= cur.start_byte() {
                        break;
                    }
                    if binds(s, name, src) {
                        return true;
                    }
                }
            }
            "for_statement"
                if parent.child_by_field_name("body") == Some(cur)
                    && parent
                        .child_by_field_name("left")
                        .is_some_and(|l| target_names(l, src).iter().any(|n| n == name)) =>
            {
                return true;
            }
            "with_statement"
                if parent.child_by_field_name("body") == Some(cur)
                    && descendants(parent, "as_pattern_target")
                        .iter()
                        .any(|t| target_names(*t, src).iter().any(|n| n == name)) =>
            {
                return true;
            }
            "except_clause" => {
                let texts = named_children(parent);
                if texts.iter().any(|c| {
                    c.kind() == "as_pattern"
                        && descendants(*c, "identifier")
                            .last()
                            .is_some_and(|i| text(*i, src) == name)
                }) {
                    return true;
                }
            }
            _ => {}
        }
        if parent == scope {
            break;
        }
        cur = parent;
    }
    false
}

/// Whether a statement binds `name` on every way through it (loops count their body).
pub(super) fn binds(stmt: Node, name: &str, src: &str) -> bool {
    let block_binds =
        |b: Option<Node>| b.is_some_and(|b| named_children(b).iter().any(|s| binds(*s, name, src)));
    match stmt.kind() {
        "expression_statement" => named_children(stmt).iter().any(|e| {
            (e.kind() == "assignment"
                && e.child_by_field_name("left")
                    .is_some_and(|l| target_names(l, src).iter().any(|n| n == name)))
                || descendants(*e, "named_expression").iter().any(|w| {
                    w.child_by_field_name("name")
                        .is_some_and(|n| text(n, src) == name)
                })
        }),
        "import_statement" | "import_from_statement" => import_names(stmt, src)
            .iter()
            .any(|n| n == name || n == "*"),
        "function_definition" | "class_definition" => name_of(stmt, src) == name,
        "decorated_definition" => stmt
            .child_by_field_name("definition")
            .is_some_and(|d| name_of(d, src) == name),
        "global_statement" | "nonlocal_statement" => descendants(stmt, "identifier")
            .iter()
            .any(|i| text(*i, src) == name),
        "if_statement" => {
            let mut all = block_binds(stmt.child_by_field_name("consequence"));
            let mut has_else = false;
            for c in named_children(stmt) {
                match c.kind() {
                    "elif_clause" => all &= block_binds(c.child_by_field_name("consequence")),
                    "else_clause" => {
                        has_else = true;
                        all &= block_binds(c.child_by_field_name("body"));
                    }
                    _ => {}
                }
            }
            all && has_else
        }
        "try_statement" => {
            block_binds(stmt.child_by_field_name("body"))
                || named_children(stmt).iter().any(|c| {
                    c.kind() == "finally_clause"
                        && named_children(*c)
                            .iter()
                            .any(|b| b.kind() == "block" && block_binds(Some(*b)))
                })
        }
        "with_statement" | "while_statement" => {
            block_binds(stmt.child_by_field_name("body"))
                || descendants(stmt, "as_pattern_target")
                    .iter()
                    .any(|t| target_names(*t, src).iter().any(|n| n == name))
        }
        "for_statement" => {
            stmt.child_by_field_name("left")
                .is_some_and(|l| target_names(l, src).iter().any(|n| n == name))
                || block_binds(stmt.child_by_field_name("body"))
        }
        _ => false,
    }
}

/// Whether any statement of a scope binds `name` (nested functions and classes excluded).
fn binds_anywhere(scope: Node, name: &str, src: &str) -> bool {
    let mut found = false;
    let mut cursor = scope.walk();
    for child in scope.children(&mut cursor) {
        walk(child, &mut |n| {
            if found {
                return false;
            }
            match n.kind() {
                "function_definition" | "class_definition" => {
                    found |= name_of(n, src) == name;
                    return false;
                }
                "lambda" => return false,
                "assignment" => {
                    found |= n
                        .child_by_field_name("left")
                        .is_some_and(|l| target_names(l, src).iter().any(|t| t == name));
                }
                "for_statement" | "for_in_clause" => {
                    found |= n
                        .child_by_field_name("left")
                        .is_some_and(|l| target_names(l, src).iter().any(|t| t == name));
                }
                "as_pattern_target" => found |= target_names(n, src).iter().any(|t| t == name),
                "named_expression" => {
                    found |= n
                        .child_by_field_name("name")
                        .is_some_and(|x| text(x, src) == name)
                }
                "import_statement" | "import_from_statement" => {
                    found |= import_names(n, src).iter().any(|t| t == name || t == "*");
                    return false;
                }
                "global_statement" | "nonlocal_statement" => {
                    found |= descendants(n, "identifier")
                        .iter()
                        .any(|i| text(*i, src) == name)
                }
                "except_clause" => {
                    found |= named_children(n).iter().any(|c| {
                        c.kind() == "as_pattern"
                            && descendants(*c, "identifier")
                                .last()
                                .is_some_and(|i| text(*i, src) == name)
                    })
                }
                _ => {}
            }
            true
        });
    }
    found
}

/// Names an assignment target binds (`a`, `a, b`, `[a, *b]`; not `a.b` or `a[0]`).
fn target_names(target: Node, src: &str) -> Vec<String> {
    match target.kind() {
        "identifier" => vec![text(target, src).to_string()],
        "attribute" | "subscript" => vec![],
        _ => named_children(target)
            .into_iter()
            .flat_map(|c| target_names(c, src))
            .collect(),
    }
}

/// Names an import statement binds.
fn import_names(stmt: Node, src: &str) -> Vec<String> {
    let mut out = Vec::new();
    if stmt.kind() == "import_statement" {
        for m in named_children(stmt) {
            match m.kind() {
                "aliased_import" => out.extend(
                    m.child_by_field_name("alias")
                        .map(|a| text(a, src).to_string()),
                ),
                _ => out.push(text(m, src).split('.').next().unwrap_or("").to_string()),
            }
        }
    } else {
        if named_children(stmt)
            .iter()
            .any(|c| c.kind() == "wildcard_import")
        {
            out.push("*".into());
        }
        let mut c = stmt.walk();
        for n in stmt.children_by_field_name("name", &mut c) {
            match n.kind() {
                "aliased_import" => out.extend(
                    n.child_by_field_name("alias")
                        .map(|a| text(a, src).to_string()),
                ),
                _ => out.push(text(n, src).rsplit('.').next().unwrap_or("").to_string()),
            }
        }
    }
    out
}
