//! What verify proves about inserted code beyond its presence: every name it reads is bound
//! where it reads it (a parameter, an earlier assignment on the way there, a module name, an
//! attribute of the agent), the card starts before the prompt handler's first send, and no
//! gate returns nothing from a function that returns a value. Inserted code is recognised
//! by its markers wherever it is — so a hand-placed or stale patch is judged too.

use super::anchors::{RUNTIME_NAME, is_agent_file};
use super::syntax::*;
use crate::lang::parts::{Finding, Parsed};
use crate::report::Status;
use std::collections::HashSet;
use tree_sitter::Node;

/// Text that marks a statement as acp-patch's (engine-level sites and older runtimes).
const STATEMENT_MARKERS: &[&str] = &[
    "_acp_progress_",
    "agent_progress_callback",
    "_acp_text_hold",
    "install_acp_text_hold",
    "make_agent_progress_cb",
];
/// Decorators acp-patch inserts.
const DECORATOR_MARKERS: &[&str] = &["acp_progress.", "acp_thinking_turn"];

const BUILTINS: &[&str] = &[
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

/// Placement findings for the tree as it is. `ours` names the functions acp-patch's own
/// module-level blocks define (their bodies are template code, tested on their own);
/// `prompts` are the prompt handlers (file, def node).
pub fn findings(
    files: &[Parsed],
    ours: &HashSet<String>,
    prompts: &[(usize, Node)],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        let src = p.file.text.as_str();
        if !STATEMENT_MARKERS
            .iter()
            .chain(DECORATOR_MARKERS)
            .any(|m| src.contains(m))
        {
            continue;
        }
        let ctx = Ctx {
            files,
            file: i,
            src,
            ours,
        };
        walk(p.tree.root_node(), &mut |n| {
            match n.kind() {
                "function_definition" if ours.contains(name_of(n, src)) => return false,
                "decorator" if DECORATOR_MARKERS.iter().any(|m| text(n, src).contains(m)) => {
                    ctx.check_reads(n, "decorator", &mut out);
                    return false;
                }
                "call"
                    if callee_object(n, src) == Some(RUNTIME_NAME)
                        && enclosing_function(n).is_some() =>
                {
                    // the wrapped receiver is the agent's own code: only our name counts
                    let f = n.child_by_field_name("function").expect("callee");
                    ctx.check_reads_of(
                        &[f.child_by_field_name("object").expect("object")],
                        n,
                        &mut out,
                    );
                    if callee_name(n, src) != "emitter" {
                        ctx.check_reads(
                            n.child_by_field_name("arguments").expect("args"),
                            "call",
                            &mut out,
                        );
                    }
                }
                "keyword_argument"
                    if enclosing_function(n).is_some()
                        && name_of(n, src) == "agent_progress_callback" =>
                {
                    // a keyword passed on in the agent's own call: only its value is ours
                    ctx.check_reads(n, "keyword", &mut out);
                    return false;
                }
                "expression_statement" | "return_statement" | "raise_statement"
                    if enclosing_function(n).is_some() && marked_outside_keywords(n, src) =>
                {
                    ctx.check_reads(n, "statement", &mut out);
                    return false;
                }
                "if_statement" if enclosing_function(n).is_some() => {
                    if let Some(cond) = n.child_by_field_name("condition")
                        && STATEMENT_MARKERS
                            .iter()
                            .any(|m| text(cond, src).contains(m))
                    {
                        ctx.check_reads(cond, "gate", &mut out);
                        ctx.check_gate(n, &mut out);
                    }
                }
                _ => {}
            }
            true
        });
    }
    for (file, def) in prompts {
        start_before_first_send(files, *file, *def, &mut out);
    }
    out.sort_by_key(|f| (f.file, f.line));
    out.dedup_by(|a, b| a.file == b.file && a.line == b.line && a.detail == b.detail);
    out
}

/// Whether a statement holds acp-patch's code beyond `agent_progress_callback=` keywords it
/// passes on (those are checked on their own).
fn marked_outside_keywords(stmt: Node, src: &str) -> bool {
    let mut rest = text(stmt, src).to_string();
    for k in descendants(stmt, "keyword_argument") {
        if name_of(k, src) == "agent_progress_callback" {
            rest = rest.replace(text(k, src), "");
        }
    }
    STATEMENT_MARKERS.iter().any(|m| rest.contains(m))
}

struct Ctx<'a> {
    files: &'a [Parsed],
    file: usize,
    src: &'a str,
    /// acp-patch's own functions: one that is missing is reported as such (the block
    /// "lacks" it), not as an unbound read at every call
    ours: &'a HashSet<String>,
}

impl Ctx<'_> {
    fn check_reads(&self, node: Node, _what: &str, out: &mut Vec<Finding>) {
        let mut reads = Vec::new();
        load_identifiers(node, self.src, &mut Vec::new(), &mut reads);
        let before = out.len();
        self.check_reads_of(&reads, node, out);
        let mut names: Vec<String> = Vec::new();
        // `lambda self: self.x` in a decorator: `x` must be an attribute of the class
        for lambda in descendants(node, "lambda") {
            let Some(param) = lambda
                .child_by_field_name("parameters")
                .and_then(|ps| named_children(ps).into_iter().next())
                .filter(|p| p.kind() == "identifier")
            else {
                continue;
            };
            let me = text(param, self.src);
            let Some(class) = enclosing_class(node) else {
                continue;
            };
            for a in descendants(lambda, "attribute") {
                let obj = a.child_by_field_name("object").expect("object");
                if obj.kind() == "identifier" && text(obj, self.src) == me {
                    let attr = text(a.child_by_field_name("attribute").expect("attr"), self.src);
                    if !class_has_attribute(self.files, self.file, class, attr, &mut HashSet::new())
                    {
                        out.push(Finding {
                            check: "bound",
                            status: Status::Malformed,
                            file: self.file,
                            line: a.start_position().row + 1,
                            detail: format!(
                                "reads `{me}.{attr}`, but no method of `{}` assigns `{attr}`",
                                name_of(class, self.src)
                            ),
                        });
                    } else {
                        names.push(format!("{me}.{attr}"));
                    }
                }
            }
        }
        // say what was proven where the inserted code reads the agent's own names
        for r in &reads {
            let name = text(*r, self.src).to_string();
            if !BUILTINS.contains(&name.as_str()) && name != RUNTIME_NAME && !names.contains(&name)
            {
                names.push(name);
            }
        }
        if out.len() == before && !names.is_empty() {
            out.push(Finding {
                check: "bound",
                status: Status::Ok,
                file: self.file,
                line: node.start_position().row + 1,
                detail: format!(
                    "reads {}: bound there",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
    }

    fn check_reads_of(&self, reads: &[Node], _stmt: Node, out: &mut Vec<Finding>) {
        for r in reads {
            let name = text(*r, self.src);
            if !self.ours.contains(name) && !is_bound(name, *r, self.src) {
                out.push(Finding {
                    check: "bound",
                    status: Status::Malformed,
                    file: self.file,
                    line: r.start_position().row + 1,
                    detail: format!(
                        "inserted code reads `{name}` in `{}` before it is bound there",
                        enclosing_function(*r)
                            .map(|f| qualified_name(f, self.src))
                            .unwrap_or_else(|| "<module>".into())
                    ),
                });
            }
        }
    }

    /// `if <acp-patch gate>: return` in a function that returns a value drops that value.
    fn check_gate(&self, if_stmt: Node, out: &mut Vec<Finding>) {
        let Some(body) = if_stmt.child_by_field_name("consequence") else {
            return;
        };
        let bare = named_children(body)
            .into_iter()
            .any(|s| s.kind() == "return_statement" && s.named_child_count() == 0);
        let Some(f) = enclosing_function(if_stmt) else {
            return;
        };
        let fbody = f.child_by_field_name("body").expect("body");
        let returns_value = descendants_same_scope(fbody, "return_statement")
            .iter()
            .any(|r| {
                r.named_child_count() > 0 && r.named_child(0).is_some_and(|v| v.kind() != "none")
            })
            || f.child_by_field_name("return_type")
                .is_some_and(|t| !matches!(text(t, self.src), "None" | "\"None\""));
        if bare && returns_value {
            out.push(Finding {
                check: "coalescing",
                status: Status::Malformed,
                file: self.file,
                line: if_stmt.start_position().row + 1,
                detail: format!(
                    "the gate returns nothing from `{}`, whose callers expect a value",
                    qualified_name(f, self.src)
                ),
            });
        }
    }
}

/// The start must run before the handler's first send: a start statement placed after it
/// (a hand-placed or stale patch) leaves the client without a card until then.
fn start_before_first_send(files: &[Parsed], file: usize, def: Node, out: &mut Vec<Finding>) {
    let src = files[file].file.text.as_str();
    let Some(body) = def.child_by_field_name("body") else {
        return;
    };
    let calls = descendants_same_scope(body, "call");
    let first_send = calls
        .iter()
        .filter(|c| matches!(callee_name(**c, src), "session_update" | "sessionUpdate"))
        .map(|c| c.start_byte())
        .min();
    let first_start = calls
        .iter()
        .filter(|c| {
            matches!(
                callee_name(**c, src),
                "_acp_progress_start" | "_acp_progress_begin_turn"
            )
        })
        .map(|c| c.start_byte())
        .min();
    if let (Some(send), Some(start)) = (first_send, first_start)
        && start > send
    {
        let line = |b: usize| files[file].file.line_of(b);
        out.push(Finding {
            check: "hook.start",
            status: Status::Malformed,
            file,
            line: line(start),
            detail: format!(
                "the card starts after the prompt handler's first send at line {}",
                line(send)
            ),
        });
    }
}

/// Identifiers an expression or statement reads (not attribute names, keywords, targets,
/// lambda parameters or import names).
fn load_identifiers<'t>(
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
fn is_bound(name: &str, at: Node, src: &str) -> bool {
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
fn binds(stmt: Node, name: &str, src: &str) -> bool {
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

fn enclosing_class(node: Node) -> Option<Node> {
    let mut cur = node.parent();
    while let Some(n) = cur {
        if n.kind() == "class_definition" {
            return Some(n);
        }
        cur = n.parent();
    }
    None
}

/// Whether a class (or a class of the tree it derives from) has attribute `attr`: bound in
/// its body, or assigned as `<self>.attr = ...` in one of its methods.
fn class_has_attribute(
    files: &[Parsed],
    file: usize,
    class: Node,
    attr: &str,
    seen: &mut HashSet<(usize, usize)>,
) -> bool {
    if !seen.insert((file, class.id())) {
        return false;
    }
    let src = files[file].file.text.as_str();
    let body = class.child_by_field_name("body").expect("class body");
    for s in named_children(body) {
        let annotated = s.kind() == "expression_statement"
            && s.named_child(0).is_some_and(|a| {
                a.kind() == "assignment"
                    && a.child_by_field_name("left")
                        .is_some_and(|l| text(l, src) == attr)
            });
        if annotated || binds(s, attr, src) {
            return true;
        }
    }
    for m in methods(class) {
        let Some((me, _)) = parameters(m, src).first().cloned() else {
            continue;
        };
        let assigned = descendants(m, "assignment").iter().any(|a| {
            a.child_by_field_name("left").is_some_and(|l| {
                l.kind() == "attribute"
                    && l.child_by_field_name("object")
                        .is_some_and(|o| text(o, src) == me)
                    && l.child_by_field_name("attribute")
                        .is_some_and(|x| text(x, src) == attr)
            })
        });
        if assigned {
            return true;
        }
    }
    for base in superclasses(class) {
        let base_name = match base.kind() {
            "identifier" => text(base, src),
            "attribute" => base
                .child_by_field_name("attribute")
                .map(|a| text(a, src))
                .unwrap_or(""),
            _ => continue,
        };
        for (i, p) in files.iter().enumerate() {
            for c in descendants(p.tree.root_node(), "class_definition") {
                if name_of(c, &p.file.text) == base_name
                    && class_has_attribute(files, i, c, attr, seen)
                {
                    return true;
                }
            }
        }
    }
    false
}

/// The callback's call sites per state: `cb("start"|"heartbeat"|"complete", ...)` where `cb`
/// is `getattr(x, "agent_progress_callback", ...)` in the same function or
/// `x.agent_progress_callback` itself.
pub fn hook_calls(files: &[Parsed]) -> [Vec<(usize, usize)>; 3] {
    let mut out: [Vec<(usize, usize)>; 3] = Default::default();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_str();
        if !src.contains("agent_progress_callback") {
            continue;
        }
        for c in descendants(p.tree.root_node(), "call") {
            let Some(first) = positional_args(c).first().copied() else {
                continue;
            };
            if first.kind() != "string" {
                continue;
            }
            let state = text(first, src).trim_matches(['"', '\'']);
            let Some(k) = ["start", "heartbeat", "complete"]
                .iter()
                .position(|s| *s == state)
            else {
                continue;
            };
            let Some(f) = c.child_by_field_name("function") else {
                continue;
            };
            let is_cb = match f.kind() {
                "attribute" => f
                    .child_by_field_name("attribute")
                    .is_some_and(|a| text(a, src) == "agent_progress_callback"),
                "identifier" => {
                    let name = text(f, src);
                    enclosing_function(c).is_some_and(|def| {
                        descendants_same_scope(
                            def.child_by_field_name("body").expect("body"),
                            "assignment",
                        )
                        .iter()
                        .any(|a| {
                            a.child_by_field_name("left")
                                .is_some_and(|l| text(l, src) == name)
                                && a.child_by_field_name("right").is_some_and(|r| {
                                    r.kind() == "call"
                                        && callee_name(r, src) == "getattr"
                                        && text(r, src).contains("\"agent_progress_callback\"")
                                })
                        })
                    })
                }
                _ => false,
            };
            if is_cb {
                out[k].push((i, c.start_position().row + 1));
            }
        }
    }
    out
}
