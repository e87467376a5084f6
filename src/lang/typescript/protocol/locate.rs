//! What the protocol fixes in every TypeScript agent, found in its tree:
//! - the prompt handlers the SDK calls (`prompt` of the class built in
//!   `new AgentSideConnection((conn) => new X(conn), stream)`, the function registered with
//!   `.onRequest("session/prompt" | methods.agent.session.prompt, fn)`, or the function a
//!   hand-rolled dispatcher calls for `"session/prompt"`), and the `session/cancel` ones;
//! - the connection each handler's start card goes out on;
//! - every send of a session update (`x.sessionUpdate(...)`, `x.notify("session/update", ...)`,
//!   or a JSON-RPC `session/update` message handed to the agent's own writer).

use super::NS;
use super::scope::*;
use crate::config::Pin;
use crate::error::{Candidate, Error, Location, Result};
use crate::lang::parts::Parsed;
use crate::lang::typescript::syntax::*;
use tree_sitter::Node;

fn line(n: Node) -> usize {
    n.start_position().row + 1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Prompt,
    Cancel,
}

/// How a handler is covered.
#[derive(Debug, Clone)]
pub enum Cover<'a> {
    /// The function's code is wrapped (`turn(conn, sessionId, () => { ... })`) or, for cancel,
    /// begins with `cancel(sessionId)`.
    Body {
        func: Node<'a>,
        conn: Option<Conn>,
        session_id: String,
    },
    /// The function value handed to the SDK is wrapped (`handler(fn)` / `cancelHandler(fn)`):
    /// the SDK's context carries the client and the params.
    Value { expr: Node<'a>, wrapped: bool },
}

/// The connection a start card goes out on, as the handler spells it.
#[derive(Debug, Clone)]
pub struct Conn {
    pub text: String,
    /// Where it comes from, for the report.
    pub origin: String,
    pub file: usize,
    pub line: usize,
}

#[derive(Debug, Clone)]
pub struct Handler<'a> {
    pub file: usize,
    pub role: Role,
    /// What a pin names: `Class.method`, a function's name, or the method (`session/prompt`).
    pub name: String,
    pub line: usize,
    pub cover: Cover<'a>,
}

/// One send of a session update.
#[derive(Debug, Clone)]
pub struct Send<'a> {
    pub file: usize,
    pub call: Node<'a>,
    /// The expression the emitter wraps: the receiver (`this.client`), or the writer function.
    pub target: Node<'a>,
    pub wrapped: bool,
    /// A hand-rolled writer: the call's text with the `{ sessionId, update }` params replaced by
    /// [`RAW_PARAMS`] (what the start card's connection becomes), when it has them.
    pub raw_template: Option<String>,
}

/// The parameter of the start card's writer for an agent without an SDK:
/// `(acpParams: never) => this.write({ jsonrpc: "2.0", method: "session/update", params: acpParams })`.
pub const RAW_PARAMS: &str = "acpParams";

/// Every file acp-patch never patches: tests, the runtime module itself.
pub fn is_agent_file(p: &Parsed) -> bool {
    let rel = p.file.rel.as_str();
    let name = rel.rsplit('/').next().unwrap_or(rel);
    let test_dir = rel.split('/').rev().skip(1).any(|d| {
        matches!(
            d,
            "test" | "tests" | "spec" | "__tests__" | "__mocks__" | "e2e"
        )
    });
    !(test_dir
        || name.contains(".test.")
        || name.contains(".spec.")
        || super::is_runtime_module(&p.file.text))
}

/// The protocol method a node names: a string (`"session/prompt"`), a constant
/// (`methods.agent.session.prompt`, `AGENT_METHODS.session_prompt`) or a module-level
/// `const` holding the string.
pub fn method_named(node: Node, src: &str, root: Node) -> Option<String> {
    match node.kind() {
        "string" => string_value(node, src).map(str::to_string),
        "member_expression" => {
            let prop = node
                .child_by_field_name("property")
                .map(|p| text(p, src))
                .unwrap_or("");
            let obj = node.child_by_field_name("object")?;
            if let Some(rest) = prop.strip_prefix("session_") {
                return Some(format!("session/{rest}"));
            }
            let obj_prop = if obj.kind() == "member_expression" {
                obj.child_by_field_name("property")
                    .map(|p| text(p, src))
                    .unwrap_or("")
            } else {
                text(obj, src)
            };
            (obj_prop == "session").then(|| format!("session/{prop}"))
        }
        "identifier" => {
            let name = text(node, src);
            descendants(root, "variable_declarator")
                .into_iter()
                .filter(|d| {
                    d.child_by_field_name("name")
                        .is_some_and(|n| text(n, src) == name)
                })
                .find_map(|d| d.child_by_field_name("value"))
                .and_then(|v| string_value(v, src))
                .map(str::to_string)
        }
        _ => None,
    }
}

/// `acpProgress.<fn>(x)`: the inner expression, if `node` is that call.
pub fn unwrap_ns<'t>(node: Node<'t>, fun: &str, src: &str) -> Option<Node<'t>> {
    (node.kind() == "call_expression" && callee(node, src) == (NS, fun))
        .then(|| arguments(node).first().copied())
        .flatten()
}

fn qualified(files: &[Parsed], file: usize, func: Node) -> String {
    let src = files[file].file.text.as_str();
    let member = {
        let mut cur = Some(func);
        let mut found = None;
        while let Some(n) = cur {
            if matches!(n.kind(), "method_definition" | "public_field_definition") {
                found = Some(n);
                break;
            }
            if matches!(
                n.kind(),
                "function_declaration" | "generator_function_declaration"
            ) {
                return name_of(n, src).to_string();
            }
            cur = n.parent();
        }
        found
    };
    match member {
        Some(m) => {
            let class = enclosing_class(m).map(|c| name_of(c, src)).unwrap_or("");
            format!("{class}.{}", member_name(m, src))
        }
        None => {
            // `const prompt = async (...) => ...`
            func.parent()
                .filter(|p| p.kind() == "variable_declarator")
                .and_then(|p| p.child_by_field_name("name"))
                .map(|n| text(n, src).to_string())
                .unwrap_or_else(|| format!("<function at line {}>", line(func)))
        }
    }
}

/// The session id of a request, as the handler spells it: `params.sessionId`, or `sessionId`
/// when the request is destructured.
fn session_id_of(func: Node, src: &str) -> Option<String> {
    let params = func
        .child_by_field_name("parameters")
        .map(named_children)
        .unwrap_or_default();
    let first = match params.first() {
        Some(p) => *p,
        None => func.child_by_field_name("parameter")?,
    };
    let pattern = first.child_by_field_name("pattern").unwrap_or(first);
    match pattern.kind() {
        "identifier" => Some(format!("{}.sessionId", text(pattern, src))),
        "object_pattern" => named_children(pattern)
            .into_iter()
            .find_map(|p| match p.kind() {
                "shorthand_property_identifier_pattern" if text(p, src) == "sessionId" => {
                    Some("sessionId".to_string())
                }
                "pair_pattern"
                    if p.child_by_field_name("key")
                        .is_some_and(|k| text(k, src) == "sessionId") =>
                {
                    p.child_by_field_name("value")
                        .filter(|v| v.kind() == "identifier")
                        .map(|v| text(v, src).to_string())
                }
                _ => None,
            }),
        _ => None,
    }
}

fn body_cover<'a>(
    files: &'a [Parsed],
    file: usize,
    func: Node<'a>,
    conn: Option<Conn>,
) -> Result<Cover<'a>> {
    let src = files[file].file.text.as_str();
    let session_id = session_id_of(func, src).ok_or_else(|| Error::Unsupported {
        file: files[file].file.rel.clone(),
        line: line(func),
        message: format!(
            "`{}` takes no request parameter acp-patch can read the session id from; name it (`params`) or destructure `sessionId`",
            qualified(files, file, func)
        ),
    })?;
    Ok(Cover::Body {
        func,
        conn,
        session_id,
    })
}

/// `new AgentSideConnection((conn) => new X(conn, ...), stream)`: the class `X` and the index
/// of the factory's argument among `X`'s constructor arguments.
fn sdk_classes<'a>(files: &'a [Parsed]) -> Vec<(usize, Node<'a>, usize, usize, usize)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_str();
        if !src.contains("AgentSideConnection") {
            continue;
        }
        for n in descendants(p.tree.root_node(), "new_expression") {
            let ctor = n.child_by_field_name("constructor").map(|c| text(c, src));
            if !ctor
                .is_some_and(|c| c == "AgentSideConnection" || c.ends_with(".AgentSideConnection"))
            {
                continue;
            }
            let Some(factory) = n
                .child_by_field_name("arguments")
                .and_then(|a| named_children(a).into_iter().next())
                .and_then(|f| factory_function(f, src, p.tree.root_node()))
            else {
                continue;
            };
            let Some((param, _)) = parameter_names(factory, src).into_iter().next() else {
                continue;
            };
            for inner in descendants(factory, "new_expression") {
                let Some(class_name) = inner.child_by_field_name("constructor") else {
                    continue;
                };
                let args: Vec<Node> = inner
                    .child_by_field_name("arguments")
                    .map(named_children)
                    .unwrap_or_default();
                if let Some(k) = args
                    .iter()
                    .position(|a| a.kind() == "identifier" && text(*a, src) == param)
                {
                    for (f, class) in resolve_class(files, i, text(class_name, src)) {
                        out.push((f, class, k, i, line(n)));
                    }
                }
            }
        }
    }
    out
}

/// The factory given to `AgentSideConnection`: a function expression, or the name of a function
/// of the same file (`function makeAgent(conn) { return new X(conn) }`, `const makeAgent = ...`).
fn factory_function<'t>(arg: Node<'t>, src: &str, root: Node<'t>) -> Option<Node<'t>> {
    if is_function(arg) {
        return Some(arg);
    }
    if arg.kind() != "identifier" {
        return None;
    }
    let name = text(arg, src);
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
fn resolve_class<'t>(files: &'t [Parsed], file: usize, name: &str) -> Vec<(usize, Node<'t>)> {
    let found = classes_named(files, name);
    if let Some(here) = found.iter().find(|(f, _)| *f == file) {
        return vec![*here];
    }
    let src = files[file].file.text.as_str();
    for imp in named_children(files[file].tree.root_node())
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
            let tsrc = files[t].file.text.as_str();
            for e in named_children(files[t].tree.root_node())
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
        named_children(files[file].tree.root_node())
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
fn resolve_import(files: &[Parsed], from: usize, spec: &str) -> Option<usize> {
    if !(spec.starts_with("./") || spec.starts_with("../")) {
        return None;
    }
    let rel = &files[from].file.rel;
    let mut parts: Vec<&str> = rel.split('/').collect();
    parts.pop();
    for seg in spec.split('/') {
        match seg {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    let stem = ["js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx"]
        .iter()
        .find_map(|e| joined.strip_suffix(&format!(".{e}")))
        .unwrap_or(&joined);
    let candidates: Vec<String> = ["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"]
        .iter()
        .flat_map(|e| [format!("{stem}.{e}"), format!("{joined}/index.{e}")])
        .collect();
    files.iter().position(|p| candidates.contains(&p.file.rel))
}

/// The field a class stores its constructor argument `index` in (`this.client = client`, a
/// parameter property), following `super(...)`.
fn stored_connection(files: &[Parsed], file: usize, class: Node, index: usize) -> Option<Conn> {
    let (mut file, mut class, mut index) = (file, class, index);
    for _ in 0..8 {
        let src = files[file].file.text.as_str();
        let ctor = class_members(class)
            .into_iter()
            .find(|m| m.kind() == "method_definition" && member_name(*m, src) == "constructor");
        let Some(ctor) = ctor else {
            (file, class) = base_class(files, file, class)?; // an implicit constructor passes its arguments on
            continue;
        };
        let params = parameters(ctor, src);
        let (pname, pnode) = params.get(index)?.clone();
        if pname.is_empty() {
            return None;
        }
        let class_name = name_of(class, src);
        if is_parameter_property(pnode) {
            return Some(Conn {
                text: format!("this.{pname}"),
                origin: format!(
                    "the AgentSideConnection factory's argument, a parameter property of {class_name}"
                ),
                file,
                line: line(pnode),
            });
        }
        let body = body(ctor)?;
        for a in descendants(body, "assignment_expression") {
            let (Some(l), Some(r)) = (
                a.child_by_field_name("left"),
                a.child_by_field_name("right"),
            ) else {
                continue;
            };
            if text(r, src) == pname
                && let Some(field) = text(l, src).strip_prefix("this.")
                && !field.contains(['.', '['])
            {
                return Some(Conn {
                    text: format!("this.{field}"),
                    origin: format!(
                        "the AgentSideConnection factory's argument, stored by {class_name}'s constructor"
                    ),
                    file,
                    line: line(a),
                });
            }
        }
        let sup = descendants(body, "call_expression").into_iter().find(|c| {
            c.child_by_field_name("function")
                .is_some_and(|f| f.kind() == "super")
        })?;
        index = arguments(sup).iter().position(|a| text(*a, src) == pname)?;
        (file, class) = base_class(files, file, class)?;
    }
    None
}

/// Every SDK send of a session update in the agent's files, wrapped or not.
pub fn sends(files: &[Parsed]) -> Result<Vec<Send<'_>>> {
    let mut out: Vec<Send> = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        let src = p.file.text.as_str();
        let root = p.tree.root_node();
        for c in descendants(root, "call_expression") {
            let Some(f) = c.child_by_field_name("function") else {
                continue;
            };
            if f.kind() != "member_expression" {
                continue;
            }
            let prop = f.child_by_field_name("property").map(|p| text(p, src));
            let Some(obj) = f.child_by_field_name("object") else {
                continue;
            };
            let args = arguments(c);
            let sdk = match prop {
                Some("sessionUpdate") => obj.kind() != "super",
                _ => args
                    .first()
                    .and_then(|a| method_named(*a, src, root))
                    .is_some_and(|m| m == "session/update"),
            };
            if !sdk {
                continue;
            }
            let (target, wrapped) = match unwrap_ns(obj, "emitter", src) {
                Some(inner) => (inner, true),
                None => (obj, false),
            };
            out.push(Send {
                file: i,
                call: c,
                target,
                wrapped,
                raw_template: None,
            });
        }
        // `conn.sessionUpdate.bind(conn)` (and `.call` / `.apply`): the bound function sends
        for m in descendants(root, "member_expression") {
            let prop = m.child_by_field_name("property").map(|p| text(p, src));
            let Some(parent) = m.parent().filter(|p| p.kind() == "member_expression") else {
                continue;
            };
            let how = parent.child_by_field_name("property").map(|p| text(p, src));
            if prop != Some("sessionUpdate")
                || !matches!(how, Some("bind" | "call" | "apply"))
                || parent
                    .parent()
                    .is_none_or(|c| c.kind() != "call_expression")
            {
                continue;
            }
            let Some(obj) = m
                .child_by_field_name("object")
                .filter(|o| o.kind() != "super")
            else {
                continue;
            };
            let call = parent.parent().expect("checked");
            let (target, wrapped) = match unwrap_ns(obj, "emitter", src) {
                Some(inner) => (inner, true),
                None => (obj, false),
            };
            out.push(Send {
                file: i,
                call,
                target,
                wrapped,
                raw_template: None,
            });
        }
        // hand-rolled: `{ jsonrpc: "2.0", method: "session/update", params }` given to a writer
        for obj in descendants(root, "object") {
            let is_update = named_children(obj).into_iter().any(|pair| {
                pair.kind() == "pair"
                    && pair
                        .child_by_field_name("key")
                        .is_some_and(|k| text(k, src).trim_matches(['"', '\'']) == "method")
                    && pair
                        .child_by_field_name("value")
                        .and_then(|v| method_named(v, src, root))
                        .is_some_and(|m| m == "session/update")
            });
            if !is_update || in_inserted_connection(obj, src) {
                continue;
            }
            let Some(call) = writer_call(obj, src) else {
                return Err(Error::Unsupported {
                    file: p.file.rel.clone(),
                    line: line(obj),
                    message: "this `session/update` message is not handed straight to a writer call (`write(message)`, `send(JSON.stringify(message))`), so acp-patch cannot route it through the emitter; pass the object literal to the call that writes it".into(),
                });
            };
            if out.iter().any(|s| s.call == call) {
                continue;
            }
            let f = call
                .child_by_field_name("function")
                .expect("calls have callees");
            let (target, wrapped) = match f.kind() {
                "member_expression" => {
                    let o = f.child_by_field_name("object").expect("member object");
                    match unwrap_ns(o, "emitter", src) {
                        Some(inner) => (inner, true),
                        None => (o, false),
                    }
                }
                _ => match unwrap_ns(f, "emitter", src) {
                    Some(inner) => (inner, true),
                    None => (f, false),
                },
            };
            let raw_template = object_property(obj, "params", src).map(|params| {
                let before = &src[call.start_byte()..params.start_byte()];
                let after = &src[params.end_byte()..call.end_byte()];
                let with = if params.kind() == "shorthand_property_identifier" {
                    format!("params: {RAW_PARAMS}")
                } else {
                    RAW_PARAMS.to_string()
                };
                let call_text = format!("{before}{with}{after}");
                // the writer, as it would be written without the emitter
                let call_text = if wrapped {
                    let t = &src[target.start_byte()..target.end_byte()];
                    let open = &src[call.start_byte()..target.start_byte()];
                    call_text.replacen(&format!("{open}{t})"), t, 1)
                } else {
                    call_text
                };
                collapse_lines(&call_text)
            });
            out.push(Send {
                file: i,
                call,
                target,
                wrapped,
                raw_template,
            });
        }
    }
    out.sort_by_key(|s| (s.file, s.call.start_byte()));
    Ok(out)
}

/// Whether a node is inside the connection acp-patch passed to `acpProgress.turn(conn, ...)`
/// (the start card's writer of an agent without an SDK): that writer is ours, not a send.
fn in_inserted_connection(node: Node, src: &str) -> bool {
    let mut cur = node;
    while let Some(parent) = cur.parent() {
        if parent.kind() == "arguments"
            && let Some(call) = parent.parent()
            && callee(call, src) == (NS, "turn")
            && arguments(call).first() == Some(&cur)
        {
            return true;
        }
        cur = parent;
    }
    false
}

/// A writer call's text on one line: line breaks (and the indentation after them) become one
/// space, none after an opening or before a closing bracket.
fn collapse_lines(t: &str) -> String {
    let mut out = String::with_capacity(t.len());
    for (k, l) in t.lines().enumerate() {
        let l = if k == 0 { l.trim_end() } else { l.trim() };
        if k > 0
            && !(out.ends_with('(')
                || out.ends_with('[')
                || l.starts_with(')')
                || l.starts_with(']'))
        {
            out.push(' ');
        }
        out.push_str(l);
    }
    out
}

/// The call a JSON-RPC message literal is handed to: directly, or inside `JSON.stringify(...)`
/// (and a `+ "\n"`).
fn writer_call<'t>(obj: Node<'t>, src: &str) -> Option<Node<'t>> {
    let mut cur = obj;
    loop {
        let parent = cur.parent()?;
        match parent.kind() {
            "arguments" => {
                let call = parent.parent()?;
                if callee(call, src) == ("JSON", "stringify") {
                    cur = call;
                    continue;
                }
                return Some(call);
            }
            "binary_expression"
            | "parenthesized_expression"
            | "template_substitution"
            | "template_string"
            | "as_expression"
            | "satisfies_expression" => cur = parent,
            _ => return None,
        }
    }
}

/// The function a hand-rolled dispatcher calls for `method` (`case "session/prompt": return
/// this.prompt(msg.params)`, `if (msg.method === "session/prompt") ...`).
fn dispatched<'a>(files: &'a [Parsed], method: &str) -> Vec<(usize, Node<'a>)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        let src = p.file.text.as_str();
        let root = p.tree.root_node();
        let mut arms = Vec::new();
        for case in descendants(root, "switch_case") {
            if case
                .child_by_field_name("value")
                .and_then(|v| method_named(v, src, root))
                .is_some_and(|m| m == method)
            {
                arms.push(case);
            }
        }
        for cond in descendants(root, "if_statement") {
            let Some(c) = cond.child_by_field_name("condition") else {
                continue;
            };
            let compares = descendants(c, "binary_expression").into_iter().any(|b| {
                let op = b.child_by_field_name("operator").map(|o| text(o, src));
                matches!(op, Some("===" | "=="))
                    && [
                        b.child_by_field_name("left"),
                        b.child_by_field_name("right"),
                    ]
                    .into_iter()
                    .flatten()
                    .any(|side| method_named(side, src, root).is_some_and(|m| m == method))
            });
            if compares && let Some(then) = cond.child_by_field_name("consequence") {
                arms.push(then);
            }
        }
        for arm in arms {
            let target = descendants(arm, "call_expression")
                .into_iter()
                .find_map(|c| {
                    let (obj, name) = callee(c, src);
                    if obj == "this" {
                        let class = enclosing_class(c)?;
                        let (f, m) = member(files, i, class, name)?;
                        Some((f, member_function(m)?))
                    } else if obj.is_empty() {
                        top_level_functions(root, src)
                            .into_iter()
                            .find(|(n, _)| n == name)
                            .map(|(_, d)| (i, d))
                    } else {
                        None
                    }
                });
            if let Some(t) = target
                && !out.contains(&t)
            {
                out.push(t);
            }
        }
    }
    out
}

/// Every handler the SDK (or the agent's own dispatcher) calls for `session/prompt` and
/// `session/cancel`, each with its cover; `pins` narrows them (and may name a prompt
/// method the SDK binding was not found for).
pub fn handlers<'a>(
    files: &'a [Parsed],
    sends: &[Send<'a>],
    pins: &crate::config::TypeScriptPins,
) -> Result<Vec<Handler<'a>>> {
    let mut out: Vec<Handler> = Vec::new();
    let push = |out: &mut Vec<Handler<'a>>, h: Handler<'a>| {
        let same = |o: &Handler| o.file == h.file && o.line == h.line && o.role == h.role;
        if !out.iter().any(same) {
            out.push(h);
        }
    };
    // SDK 0.x/1.x: the class the AgentSideConnection factory builds
    let bound = sdk_classes(files);
    for &(file, class, index, _, _) in &bound {
        let conn = match pinned_connection(files, file, class, pins)? {
            Some(c) => Some(c),
            None => stored_connection(files, file, class, index)
                .or_else(|| used_connection(files, file, class, sends)),
        };
        if let (Some(c), 1) = (&conn, bound.len())
            && let Some(field) = c.text.strip_prefix("this.")
        {
            let src = files[file].file.text.as_str();
            let at = if c.file == file { c.line } else { line(class) };
            let pin = candidate(files, file, at, &format!("{}.{field}", name_of(class, src)));
            crate::init::record("connection", "typescript.connection", &[&pin], Some(&pin));
        }
        for (role, method) in [(Role::Prompt, "prompt"), (Role::Cancel, "cancel")] {
            let Some((f, m)) = member(files, file, class, method) else {
                continue;
            };
            let Some(func) = member_function(m) else {
                continue;
            };
            push(
                &mut out,
                Handler {
                    file: f,
                    role,
                    name: qualified(files, f, func),
                    line: line(m),
                    cover: body_cover(files, f, func, conn.clone())?,
                },
            );
        }
    }
    // SDK 2.x: `.onRequest(session/prompt, fn)`, `.onNotification(session/cancel, fn)`
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        let src = p.file.text.as_str();
        let root = p.tree.root_node();
        for c in descendants(root, "call_expression") {
            let (obj, name) = callee(c, src);
            let role = match name {
                "onRequest" => Role::Prompt,
                "onNotification" => Role::Cancel,
                _ => continue,
            };
            let args = arguments(c);
            let want = if role == Role::Prompt {
                "session/prompt"
            } else {
                "session/cancel"
            };
            if obj.is_empty()
                || args.len() < 2
                || method_named(args[0], src, root).is_none_or(|m| m != want)
            {
                continue;
            }
            let expr = *args.last().expect("two arguments");
            let fun = if role == Role::Prompt {
                "handler"
            } else {
                "cancelHandler"
            };
            let (inner, wrapped) = match unwrap_ns(expr, fun, src) {
                Some(inner) => (inner, true),
                None => (expr, false),
            };
            let name = match inner.kind() {
                "identifier" | "member_expression" => text(inner, src).to_string(),
                // a pin names it `file:session_prompt` (pins name no `/`)
                _ => want.replace('/', "_"),
            };
            push(
                &mut out,
                Handler {
                    file: i,
                    role,
                    name,
                    line: line(expr),
                    cover: Cover::Value { expr, wrapped },
                },
            );
        }
    }
    // no SDK: the agent's own dispatcher
    for (role, method) in [
        (Role::Prompt, "session/prompt"),
        (Role::Cancel, "session/cancel"),
    ] {
        for (f, func) in dispatched(files, method) {
            let conn = match role {
                Role::Prompt => raw_connection(files, f, func, sends, pins)?,
                Role::Cancel => None, // a cancel sends nothing
            };
            push(
                &mut out,
                Handler {
                    file: f,
                    role,
                    name: qualified(files, f, func),
                    line: line(func),
                    cover: body_cover(files, f, func, conn)?,
                },
            );
        }
    }
    let selected = select(files, out, sends, pins)?;
    if let Some(pin) = &pins.connection {
        let used = selected.iter().any(|h| {
            matches!(&h.cover, Cover::Body { conn: Some(c), .. }
                if c.origin.starts_with("pinned") || c.origin.starts_with("the agent's own writer"))
        });
        if !used {
            let mut seen = Vec::new();
            for (file, class, ..) in sdk_classes(files) {
                seen.extend(field_candidates(files, file, class));
            }
            seen.dedup();
            return Err(Error::Unlocatable {
                site: "connection",
                detail: format!(
                    "the pin `connection = \"{pin}\"` matches nothing: it must name `file:Class.field` of a class whose prompt is covered, a field set before a prompt; candidates: {}",
                    if seen.is_empty() {
                        "none".to_string()
                    } else {
                        seen.join(", ")
                    }
                ),
                pin_key: "typescript.connection",
            });
        }
    }
    Ok(selected)
}

fn candidate(files: &[Parsed], file: usize, line: usize, name: &str) -> Candidate {
    Candidate {
        location: Location {
            file: files[file].file.rel.clone(),
            line,
        },
        name: name.to_string(),
    }
}

/// Every method named `prompt` of a class in the tree: what a `prompt` pin may name when no
/// SDK binding was found.
fn prompt_methods<'a>(files: &'a [Parsed]) -> Vec<(usize, Node<'a>, Node<'a>)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        let src = p.file.text.as_str();
        for class in classes(p.tree.root_node()) {
            for m in class_members(class) {
                if member_name(m, src) == "prompt"
                    && let Some(f) = member_function(m)
                {
                    out.push((i, m, f));
                }
            }
        }
    }
    out
}

/// Every function-valued member of every class of the agent's files (what a `prompt` pin may
/// name besides the methods called `prompt`).
fn class_functions<'a>(files: &'a [Parsed]) -> Vec<(usize, Node<'a>, Node<'a>)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        for class in classes(p.tree.root_node()) {
            for m in class_members(class) {
                if let Some(f) = member_function(m) {
                    out.push((i, m, f));
                }
            }
        }
    }
    out
}

/// The prompt pin: keeps the handlers it names, or adds the method it names.
fn select<'a>(
    files: &'a [Parsed],
    mut found: Vec<Handler<'a>>,
    sends: &[Send<'a>],
    pins: &crate::config::TypeScriptPins,
) -> Result<Vec<Handler<'a>>> {
    let Some(pin) = pins.prompt.as_ref().map(|p| Pin::parse(p)) else {
        let prompts: Vec<&Handler> = found.iter().filter(|h| h.role == Role::Prompt).collect();
        if let [one] = prompts[..] {
            // `acp-patch init` lists the site with the pin that holds apply to it
            let c = candidate(files, one.file, one.line, &one.name);
            crate::init::record("prompt handler", "typescript.prompt", &[&c], Some(&c));
        }
        if !prompts.is_empty() {
            return Ok(found);
        }
        let candidates: Vec<Candidate> = prompt_methods(files)
            .into_iter()
            .map(|(f, m, func)| candidate(files, f, line(m), &qualified(files, f, func)))
            .collect();
        let detail = "no `new AgentSideConnection((conn) => new X(conn), ...)`, no `.onRequest(\"session/prompt\", ...)` and no dispatcher of `\"session/prompt\"` was found".to_string();
        return Err(if candidates.is_empty() {
            // nothing to pin either: these files are no agent (a client, say)
            Error::NoAgent {
                root: files
                    .first()
                    .and_then(|p| {
                        let path = p.file.path.to_string_lossy();
                        path.strip_suffix(p.file.rel.as_str())
                            .map(|r| std::path::PathBuf::from(r.trim_end_matches('/')))
                    })
                    .unwrap_or_default(),
                detail: format!("TypeScript: {detail}"),
            }
        } else {
            Error::Ambiguous {
                site: "prompt handler (none is bound to the SDK)",
                candidates,
                pin_key: "typescript.prompt",
            }
        });
    };
    let matches = |file: usize, name: &str| {
        files[file].file.rel == pin.file && pin.name.as_ref().is_none_or(|n| n == name)
    };
    let seen: Vec<Candidate> = found
        .iter()
        .filter(|h| h.role == Role::Prompt)
        .map(|h| candidate(files, h.file, h.line, &h.name))
        .chain(
            prompt_methods(files)
                .into_iter()
                .map(|(f, m, func)| candidate(files, f, line(m), &qualified(files, f, func))),
        )
        .collect();
    let keep: Vec<bool> = found
        .iter()
        .map(|h| h.role == Role::Cancel || matches(h.file, &h.name))
        .collect();
    let any_prompt = found
        .iter()
        .zip(&keep)
        .any(|(h, k)| *k && h.role == Role::Prompt);
    let mut kept: Vec<Handler> = found
        .drain(..)
        .zip(keep)
        .filter_map(|(h, k)| k.then_some(h))
        .collect();
    if !any_prompt {
        // a prompt method no SDK binding was found for
        let pinned = prompt_methods(files)
            .into_iter()
            .chain(class_functions(files))
            .find(|(f, _, func)| matches(*f, &qualified(files, *f, *func)));
        let Some((f, m, func)) = pinned else {
            let mut names: Vec<String> = seen
                .iter()
                .map(|c| format!("{}:{} ({})", c.location.file, c.name, c.location.line))
                .collect();
            names.dedup();
            return Err(Error::Unlocatable {
                site: "prompt handler",
                detail: format!(
                    "the pin `prompt = \"{}{}\"` matches nothing: no prompt handler {} in {}; candidates seen: {}",
                    pin.file,
                    pin.name
                        .as_ref()
                        .map(|n| format!(":{n}"))
                        .unwrap_or_default(),
                    pin.name
                        .as_ref()
                        .map(|n| format!("named `{n}`"))
                        .unwrap_or_else(|| "at all".into()),
                    pin.file,
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                ),
                pin_key: "typescript.prompt",
            });
        };
        let class = enclosing_class(m).expect("members are in classes");
        let conn = match pinned_connection(files, f, class, pins)? {
            Some(c) => Some(c),
            None => used_connection(files, f, class, sends),
        };
        kept.push(Handler {
            file: f,
            role: Role::Prompt,
            name: qualified(files, f, func),
            line: line(m),
            cover: body_cover(files, f, func, conn)?,
        });
        if let Some((cf, cm)) = member(files, f, class, "cancel")
            && let Some(cfunc) = member_function(cm)
        {
            let conn = None;
            kept.push(Handler {
                file: cf,
                role: Role::Cancel,
                name: qualified(files, cf, cfunc),
                line: line(cm),
                cover: body_cover(files, cf, cfunc, conn)?,
            });
        }
    }
    Ok(kept)
}

/// The `connection` pin (`file:Class.field`), when it names a field of this class.
fn pinned_connection(
    files: &[Parsed],
    file: usize,
    class: Node,
    pins: &crate::config::TypeScriptPins,
) -> Result<Option<Conn>> {
    let Some(pin) = pins.connection.as_ref().map(|p| Pin::parse(p)) else {
        return Ok(None);
    };
    let src = files[file].file.text.as_str();
    let cname = name_of(class, src);
    let Some(field) = pin
        .name
        .as_ref()
        .and_then(|n| n.strip_prefix(&format!("{cname}.")))
    else {
        return Ok(None);
    };
    if files[file].file.rel != pin.file {
        return Ok(None);
    }
    match field_bound(files, file, class, field) {
        Some((f, l, how)) => Ok(Some(Conn {
            text: format!("this.{field}"),
            origin: format!("pinned in acp-patch.toml ({how})"),
            file: f,
            line: l,
        })),
        None => Err(Error::Unlocatable {
            site: "connection",
            detail: format!(
                "the pin `connection = \"{}:{cname}.{field}\"` names a field that {cname} never sets before a prompt (no initializer, no parameter property, no assignment in the constructor); candidates: {}",
                pin.file,
                field_candidates(files, file, class).join(", ")
            ),
            pin_key: "typescript.connection",
        }),
    }
}

/// Fields of a class set before a prompt: what a `connection` pin may name.
pub fn field_candidates(files: &[Parsed], file: usize, class: Node) -> Vec<String> {
    let src = files[file].file.text.as_str();
    let cname = name_of(class, src);
    let mut names: Vec<String> = Vec::new();
    for m in class_members(class) {
        let n = member_name(m, src).to_string();
        if m.kind() == "public_field_definition" && !names.contains(&n) {
            names.push(n);
        }
        if m.kind() == "method_definition" && member_name(m, src) == "constructor" {
            for (p, node) in parameters(m, src) {
                if is_parameter_property(node) && !names.contains(&p) {
                    names.push(p);
                }
            }
        }
    }
    names
        .into_iter()
        .filter(|n| field_bound(files, file, class, n).is_some())
        .map(|n| format!("{}:{cname}.{n}", files[file].file.rel))
        .collect()
}

/// The one field of the class its own sends go through (`this.conn.sessionUpdate(...)`).
fn used_connection(files: &[Parsed], file: usize, class: Node, sends: &[Send]) -> Option<Conn> {
    let src = files[file].file.text.as_str();
    let mut fields: Vec<&str> = sends
        .iter()
        .filter(|s| s.file == file && s.raw_template.is_none())
        .filter(|s| enclosing_class(s.call) == Some(class))
        .filter_map(|s| text(s.target, src).strip_prefix("this."))
        .filter(|f| !f.contains(['.', '[', '(']))
        .collect();
    fields.sort();
    fields.dedup();
    let [field] = fields[..] else { return None };
    let (f, l, how) = field_bound(files, file, class, field)?;
    Some(Conn {
        text: format!("this.{field}"),
        origin: format!("the field its own sends go through ({how})"),
        file: f,
        line: l,
    })
}

/// A dispatcher's handler sends cards with the agent's own writer: the writer call of its
/// `session/update` sends with the params replaced, when every name it reads is bound in the
/// handler (`this` of the same class, module-level names, globals).
fn raw_connection(
    files: &[Parsed],
    file: usize,
    func: Node,
    sends: &[Send],
    pins: &crate::config::TypeScriptPins,
) -> Result<Option<Conn>> {
    let mut usable: Vec<(usize, Node, String)> = Vec::new();
    let mut seen: Vec<(usize, Node, String)> = Vec::new();
    for s in sends {
        let Some(t) = &s.raw_template else { continue };
        let owner = enclosing_function(s.call).unwrap_or(s.call);
        seen.push((s.file, owner, t.clone()));
        if usable.iter().any(|(_, _, u)| u == t) {
            continue;
        }
        let class_ok = |uses_this: bool| {
            !uses_this
                || (s.file == file
                    && this_class(func).is_some()
                    && enclosing_class(s.call) == this_class(func))
        };
        let parsed = crate::lang::typescript::syntax::parse(&format!("({t})"), false);
        let (names, uses_this) = reads(parsed.root_node(), &format!("({t})"));
        let bound = names
            .iter()
            .filter(|(n, _)| n != RAW_PARAMS)
            .all(|(n, _)| bound_at_entry(files, file, func, n).is_some());
        if bound && class_ok(uses_this) {
            usable.push((s.file, owner, t.clone()));
        }
    }
    // the writer the handler's own updates use: in the handler, or in a method it calls
    let src = files[file].file.text.as_str();
    let called: Vec<&str> = descendants(func, "call_expression")
        .into_iter()
        .filter_map(|c| match callee(c, src) {
            ("this", name) => Some(name),
            _ => None,
        })
        .collect();
    let own = |(f, owner, _): &(usize, Node, String)| {
        *f == file
            && (*owner == func
                || owner.parent().is_some_and(|m| {
                    m.kind() == "method_definition" && called.contains(&member_name(m, src))
                })
                || called.contains(&member_name(*owner, src)))
    };
    if pins.connection.is_none() && usable.iter().filter(|u| own(u)).count() == 1 {
        usable.retain(own);
    }
    let found: Vec<((usize, Node, String), Candidate)> = usable
        .into_iter()
        .map(|(f, owner, t)| {
            let c = candidate(files, f, line(owner), &qualified(files, f, owner));
            ((f, owner, t), c)
        })
        .collect();
    if found.is_empty() && seen.is_empty() {
        return Ok(None);
    }
    let pin = pins
        .connection
        .as_ref()
        .map(|p| Pin::parse(p))
        .map(|p| (p.file, p.name));
    let handler_name = qualified(files, file, func);
    let chosen = crate::lang::parts::choose(
        found,
        pin,
        "connection",
        "typescript.connection",
        || {
            format!(
                "{handler_name} handles session/prompt, but no writer of its `session/update` messages can be called from it ({} seen; they read names not bound there)",
                seen.len()
            )
        },
    )?;
    let (f, owner, t) = chosen;
    Ok(Some(Conn {
        // `never`: the writer's parameter type, whatever it is, takes it
        text: if crate::lang::typescript::is_js(&files[file].file.rel) {
            format!("({RAW_PARAMS}) => {t}")
        } else {
            format!("({RAW_PARAMS}: never) => {t}")
        },
        origin: format!(
            "the agent's own writer, as {} calls it",
            qualified(files, f, owner)
        ),
        file: f,
        line: line(owner),
    }))
}
