//! The class `new AgentSideConnection((conn) => new X(conn), ...)` builds, wherever it is declared.

use super::*;

/// What an `AgentSideConnection` factory builds with its argument, followed through the
/// functions and methods it hands the argument to.
#[derive(Debug, Clone)]
pub(super) enum Built<'a> {
    /// `new X(..., conn, ...)`: the class and the index of the connection among its arguments.
    Class {
        file: usize,
        class: Node<'a>,
        index: usize,
    },
    /// An object literal with a `prompt` function (`return { prompt: async (params) => ... }`),
    /// built in `builder`, whose parameter `conn` is the connection.
    Object {
        file: usize,
        object: Node<'a>,
        builder: Node<'a>,
        conn: String,
    },
}

/// Every `new AgentSideConnection(factory, ...)` of the tree: what its factory builds, with
/// the file and line of the `new`.
pub(super) fn sdk_built<'a>(files: &'a [Parsed]) -> Vec<(Built<'a>, usize, usize)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        let named = src.contains("AgentSideConnection");
        let renamed = connection_classes(p);
        if !named && renamed.is_empty() {
            continue;
        }
        let root = p.tree().root_node();
        let mut news = if named {
            descendants(root, "new_expression")
        } else {
            Vec::new()
        };
        for name in &renamed {
            news.extend(new_expressions_of(root, src, name));
        }
        news.sort_by_key(|n| n.start_byte());
        news.dedup();
        for n in news {
            let ctor = n.child_by_field_name("constructor").map(|c| text(c, src));
            if !ctor.is_some_and(|c| {
                c == "AgentSideConnection"
                    || c.ends_with(".AgentSideConnection")
                    || renamed.iter().any(|r| r == c)
            }) {
                continue;
            }
            let Some(factory) = n
                .child_by_field_name("arguments")
                .and_then(|a| named_children(a).into_iter().next())
                .and_then(|f| factory_function(f, src, p.tree().root_node()))
            else {
                continue;
            };
            let mut seen = Vec::new();
            for b in built_by(files, i, factory, 0, &mut seen) {
                out.push((b, i, line(n)));
            }
        }
    }
    out
}

/// The classes of a file that are copies of the SDK's connection classes under other names (a
/// bundle inlines the SDK and renames them: `var Yxe = class { constructor(e, n) { let r =
/// e(this); ... case Hu.session_prompt: ... return r.prompt(l) ... } }`): the constructor calls
/// its first parameter with `this` (the factory, handed the connection) and dispatches the
/// protocol to what that returned — `session/prompt` to its `prompt` (the agent side's
/// `AgentSideConnection`, `true`), or `session/update` to its `sessionUpdate` (the client
/// side's `ClientSideConnection`, `false`). By literal hits first: a bundle is walked only
/// around them.
pub(super) fn sdk_copies(p: &Parsed) -> Vec<(Node<'_>, bool)> {
    let src = p.file.text.as_ref();
    let dispatches =
        |body: &str, method: &str, call: &str| body.contains(call) && may_name_method(body, method);
    if !(src.contains("(this)")
        && (may_name_method(src, "session/prompt") || may_name_method(src, "session/update")))
    {
        return Vec::new();
    }
    let root = p.tree().root_node();
    let mut out: Vec<(Node, bool)> = Vec::new();
    for (at, _) in src.match_indices("(this)") {
        let Some(call) = root
            .named_descendant_for_byte_range(at, at + "(this)".len())
            .filter(|a| a.kind() == "arguments")
            .and_then(|a| a.parent())
            .filter(|c| c.kind() == "call_expression")
        else {
            continue;
        };
        let Some(factory) = call
            .child_by_field_name("function")
            .filter(|f| f.kind() == "identifier")
        else {
            continue;
        };
        // the nearest function around the call: the class's constructor
        let mut cur = call.parent();
        while let Some(n) = cur {
            if n.kind() == "method_definition" || is_function(n) {
                break;
            }
            cur = n.parent();
        }
        let Some(ctor) = cur
            .filter(|n| n.kind() == "method_definition" && member_name(*n, src) == "constructor")
        else {
            continue;
        };
        let first = parameter_names(ctor, src)
            .into_iter()
            .next()
            .map(|(n, _)| n);
        if first.as_deref() != Some(text(factory, src)) {
            continue;
        }
        let body = text(ctor, src);
        let side = if dispatches(body, "session/prompt", ".prompt(") {
            true
        } else if dispatches(body, "session/update", ".sessionUpdate(") {
            false
        } else {
            continue;
        };
        if let Some(class) = enclosing_class(ctor)
            && !out.iter().any(|(c, _)| *c == class)
        {
            out.push((class, side));
        }
    }
    out
}

/// The names of a file's renamed copies of the SDK's `AgentSideConnection` ([`sdk_copies`]).
fn connection_classes(p: &Parsed) -> Vec<String> {
    let src = p.file.text.as_ref();
    let mut out: Vec<String> = Vec::new();
    for (class, agent_side) in sdk_copies(p) {
        let name = name_of(class, src);
        if agent_side && !name.is_empty() && !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    out
}

/// The `new <name>(...)` expressions of a file, found by their text.
fn new_expressions_of<'t>(root: Node<'t>, src: &str, name: &str) -> Vec<Node<'t>> {
    let needle = format!("new {name}(");
    src.match_indices(&needle)
        .filter_map(|(at, _)| {
            let mut n = root.descendant_for_byte_range(at, at + 3)?;
            while n.start_byte() == at && n.kind() != "new_expression" {
                n = n.parent()?;
            }
            (n.kind() == "new_expression" && n.start_byte() == at).then_some(n)
        })
        .collect()
}

/// `new AgentSideConnection((conn) => new X(conn, ...), stream)`: the class `X` and the index
/// of the factory's argument among `X`'s constructor arguments.
pub(super) fn sdk_classes<'a>(files: &'a [Parsed]) -> Vec<(usize, Node<'a>, usize, usize, usize)> {
    sdk_built(files)
        .into_iter()
        .filter_map(|(b, f, l)| match b {
            Built::Class { file, class, index } => Some((file, class, index, f, l)),
            Built::Object { .. } => None,
        })
        .collect()
}

/// What `func` builds with its parameter `index`: a class it constructs with it, an object
/// literal with a `prompt` function it returns, or what a function or method of the tree it
/// passes the parameter to builds (`(conn) => this.createAgentHandler(conn)`).
fn built_by<'a>(
    files: &'a [Parsed],
    file: usize,
    func: Node<'a>,
    index: usize,
    seen: &mut Vec<(usize, usize)>,
) -> Vec<Built<'a>> {
    let mut out = Vec::new();
    if seen.contains(&(file, func.start_byte())) || seen.len() > 16 {
        return out;
    }
    seen.push((file, func.start_byte()));
    let src = files[file].file.text.as_ref();
    let Some((param, _)) = parameter_names(func, src).into_iter().nth(index) else {
        return out;
    };
    let param = param.as_str();
    let Some(body) = func.child_by_field_name("body") else {
        return out;
    };
    let passes = |args: &[Node]| {
        args.iter()
            .position(|a| a.kind() == "identifier" && text(*a, src) == param)
    };
    for inner in descendants(body, "new_expression") {
        let Some(class_name) = inner.child_by_field_name("constructor") else {
            continue;
        };
        let args: Vec<Node> = inner
            .child_by_field_name("arguments")
            .map(named_children)
            .unwrap_or_default();
        if let Some(k) = passes(&args) {
            for (f, class) in resolve_class(files, file, text(class_name, src)) {
                out.push(Built::Class {
                    file: f,
                    class,
                    index: k,
                });
            }
        }
    }
    for call in descendants(body, "call_expression") {
        let Some(k) = passes(&arguments(call)) else {
            continue;
        };
        let (obj, name) = callee(call, src);
        let target = match obj {
            "this" => enclosing_class(call)
                .and_then(|class| member(files, file, class, name))
                .and_then(|(f, m)| member_function(m).map(|func| (f, func))),
            "" => resolve_function(files, file, name),
            _ => None,
        };
        if let Some((f, target)) = target {
            out.extend(built_by(files, f, target, k, seen));
        }
    }
    for object in returned_objects(func, src) {
        if object_function(object, "prompt", src).is_some() {
            out.push(Built::Object {
                file,
                object,
                builder: func,
                conn: param.to_string(),
            });
        }
    }
    out
}

/// The object literals a function returns: its arrow's expression body, `return { ... }`, or a
/// `const` holding one that it returns (`const agent: acp.Agent = { ... }; return agent;`).
pub(super) fn returned_objects<'t>(func: Node<'t>, src: &str) -> Vec<Node<'t>> {
    let strip = |mut n: Node<'t>| {
        while matches!(
            n.kind(),
            "parenthesized_expression" | "as_expression" | "satisfies_expression"
        ) {
            match n.named_child(0) {
                Some(c) => n = c,
                None => break,
            }
        }
        n
    };
    let mut out = Vec::new();
    let Some(body) = func.child_by_field_name("body") else {
        return out;
    };
    if body.kind() != "statement_block" {
        let b = strip(body);
        if b.kind() == "object" {
            out.push(b);
        }
        return out;
    }
    for ret in descendants(body, "return_statement") {
        if enclosing_function(ret) != Some(func) {
            continue;
        }
        let Some(value) = ret.named_child(0).map(strip) else {
            continue;
        };
        match value.kind() {
            "object" => out.push(value),
            "identifier" => {
                let name = text(value, src);
                for d in descendants(body, "variable_declarator") {
                    if d.child_by_field_name("name")
                        .is_some_and(|n| text(n, src) == name)
                        && let Some(v) = d.child_by_field_name("value").map(strip)
                        && v.kind() == "object"
                    {
                        out.push(v);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The function an object literal holds under `key`: `key: async (params) => ...`,
/// `key: function (...) {...}` or a method `async key(params) {...}`.
pub(super) fn object_function<'t>(object: Node<'t>, key: &str, src: &str) -> Option<Node<'t>> {
    named_children(object)
        .into_iter()
        .find_map(|m| match m.kind() {
            "pair" => m
                .child_by_field_name("key")
                .filter(|k| text(*k, src).trim_matches(['"', '\'']) == key)
                .and(m.child_by_field_name("value"))
                .filter(|v| matches!(v.kind(), "arrow_function" | "function_expression")),
            "method_definition" => (member_name(m, src) == key).then_some(m),
            _ => None,
        })
}

/// The function a name calls in a file: declared there (`function f`, `const f = (...) =>`), or
/// imported from a file of the tree (under another name too, and through a re-export).
pub(super) fn resolve_function<'t>(
    files: &'t [Parsed],
    file: usize,
    name: &str,
) -> Option<(usize, Node<'t>)> {
    resolve_function_depth(files, file, name, 0)
}

fn resolve_function_depth<'t>(
    files: &'t [Parsed],
    file: usize,
    name: &str,
    depth: usize,
) -> Option<(usize, Node<'t>)> {
    if depth > 4 {
        return None;
    }
    let src = files[file].file.text.as_ref();
    let root = files[file].tree().root_node();
    if let Some(f) = function_named(root, src, name) {
        return Some((file, f));
    }
    for stmt in named_children(root)
        .into_iter()
        .filter(|n| matches!(n.kind(), "import_statement" | "export_statement"))
    {
        let Some(spec) = stmt
            .child_by_field_name("source")
            .and_then(|s| string_value(s, src))
        else {
            continue;
        };
        let Some(target) = resolve_import(files, file, spec) else {
            continue;
        };
        for spec_node in descendants(stmt, "import_specifier")
            .into_iter()
            .chain(descendants(stmt, "export_specifier"))
        {
            let original = spec_node.child_by_field_name("name").map(|n| text(n, src));
            let alias = spec_node.child_by_field_name("alias").map(|a| text(a, src));
            if alias.or(original) == Some(name)
                && let Some(original) = original
                && let Some(found) = resolve_function_depth(files, target, original, depth + 1)
            {
                return Some(found);
            }
        }
        // `export * from "./x.js"`
        if stmt.kind() == "export_statement"
            && text(stmt, src).starts_with("export *")
            && let Some(found) = resolve_function_depth(files, target, name, depth + 1)
        {
            return Some(found);
        }
    }
    None
}

/// The factory given to `AgentSideConnection`: a function expression, or the name of a function
/// of the same file (`function makeAgent(conn) { return new X(conn) }`, `const makeAgent = ...`).
pub(super) fn factory_function<'t>(arg: Node<'t>, src: &str, root: Node<'t>) -> Option<Node<'t>> {
    if is_function(arg) {
        return Some(arg);
    }
    if arg.kind() != "identifier" {
        return None;
    }
    function_named(root, src, text(arg, src))
}

/// A function of a file by name: `function f`, or `const f = (...) => ...` / `function (...)`.
pub(super) fn function_named<'t>(root: Node<'t>, src: &str, name: &str) -> Option<Node<'t>> {
    if let Some((_, f)) = top_level_functions(root, src)
        .into_iter()
        .find(|(n, _)| n == name)
    {
        return Some(f);
    }
    descendants(root, "variable_declarator")
        .into_iter()
        .filter(|d| {
            d.child_by_field_name("name")
                .is_some_and(|n| text(n, src) == name)
        })
        .find_map(|d| d.child_by_field_name("value").filter(|v| is_function(*v)))
}

/// The class a name means in a file: declared there, imported under another name
/// (`import { ClaudeAcpAgent as Agent }`), or a default import of a file of the tree; else
/// every class of that name in the tree.
pub(super) fn resolve_class<'t>(
    files: &'t [Parsed],
    file: usize,
    name: &str,
) -> Vec<(usize, Node<'t>)> {
    if let Some(found) = namespace_class(files, file, name) {
        return found;
    }
    let found = classes_named(files, name);
    if let Some(here) = found.iter().find(|(f, _)| *f == file) {
        return vec![*here];
    }
    let src = files[file].file.text.as_ref();
    for imp in named_children(files[file].tree().root_node())
        .into_iter()
        .filter(|n| n.kind() == "import_statement")
    {
        let Some(spec) = imp
            .child_by_field_name("source")
            .and_then(|s| string_value(s, src))
        else {
            continue;
        };
        let target = resolve_import(files, file, spec);
        for spec_node in descendants(imp, "import_specifier") {
            let alias = spec_node.child_by_field_name("alias").map(|a| text(a, src));
            let original = spec_node.child_by_field_name("name").map(|n| text(n, src));
            if alias == Some(name)
                && let Some(original) = original
            {
                let named = classes_named(files, original);
                let from_target: Vec<_> = named
                    .iter()
                    .copied()
                    .filter(|(f, _)| Some(*f) == target)
                    .collect();
                return if from_target.is_empty() {
                    named
                } else {
                    from_target
                };
            }
        }
        let default = named_children(imp)
            .into_iter()
            .find(|c| c.kind() == "import_clause")
            .and_then(|c| {
                named_children(c)
                    .into_iter()
                    .find(|n| n.kind() == "identifier")
            });
        if default.is_some_and(|d| text(d, src) == name)
            && let Some(t) = target
        {
            let tsrc = files[t].file.text.as_ref();
            for e in named_children(files[t].tree().root_node())
                .into_iter()
                .filter(|n| {
                    n.kind() == "export_statement" && text(*n, tsrc).starts_with("export default")
                })
            {
                if let Some(d) = e
                    .child_by_field_name("declaration")
                    .or_else(|| e.named_child(0))
                    && matches!(
                        d.kind(),
                        "class_declaration" | "abstract_class_declaration" | "class"
                    )
                {
                    return vec![(t, d)];
                }
            }
        }
    }
    if let Some(target) = found.iter().find(|(f, _)| {
        named_children(files[file].tree().root_node())
            .iter()
            .any(|imp| {
                imp.kind() == "import_statement"
                    && imp
                        .child_by_field_name("source")
                        .and_then(|s| string_value(s, src))
                        .is_some_and(|spec| resolve_import(files, file, spec) == Some(*f))
            })
    }) {
        return vec![*target];
    }
    found
}

/// The file of the tree a relative specifier names (`./agent.js` → `agent.ts`, `./x` → `x.ts`
/// or `x/index.ts`).
pub(super) fn resolve_import(files: &[Parsed], from: usize, spec: &str) -> Option<usize> {
    let candidates = crate::lang::typescript::relative_targets(&files[from].file.rel, spec);
    files.iter().position(|p| candidates.contains(&p.file.rel))
}
