//! Python agents without the SDK: a JSON-RPC loop of their own over stdio. What the protocol
//! fixes is found on the tree instead of the SDK's names: the handler a dispatcher calls for
//! `"session/prompt"` (a dict of handlers, `if`/`elif` on the method, `match`), the one for
//! `"session/cancel"`, and every call that writes a `session/update` message (a dict literal
//! or `dict(...)`, followed through variables, return values, lists and loops, `json.dumps`,
//! `.encode()`, f-strings, to the call that writes it). The card goes out through the agent's
//! own writer: `@acp_progress.prompt_handler(wire=lambda acp_params, <handler's params>: ...)`.

use super::found::{Anchors, Connection, Handler, RUNTIME_NAME, Send, is_agent_file};
use super::locate::{At, candidate};
use super::syntax::*;
use crate::config::PythonPins;
use crate::error::{Error, Result};
use crate::lang::parts::Parsed;
use tree_sitter::Node;

/// The parameter of the card's writer (the notification's params).
const PARAMS: &str = "acp_params";

/// Names every Python module can read.
const BUILTINS: &[&str] = &[
    "print", "len", "str", "repr", "bytes", "dict", "list", "open",
];

fn line(n: Node) -> usize {
    n.start_position().row + 1
}

/// Whether a file imports the ACP SDK (`import acp`, `from acp...`).
pub fn imports_sdk(p: &Parsed) -> bool {
    let src = p.file.text.as_str();
    if !mentions_sdk(src) {
        return false;
    }
    let root = p.tree().root_node();
    descendants(root, "import_statement")
        .into_iter()
        .chain(descendants(root, "import_from_statement"))
        .any(|n| {
            let t = text(n, src);
            t.starts_with("import acp") || t.starts_with("from acp")
        })
}

/// The value of a plain string literal.
fn string_value<'a>(node: Node, src: &'a str) -> Option<&'a str> {
    if node.kind() != "string" || !descendants(node, "interpolation").is_empty() {
        return None;
    }
    let t = text(node, src);
    let t = t.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let q = t.chars().next()?;
    Some(t.trim_matches(q))
}

/// Whether a node names the protocol method: the string, or a module-level constant holding it.
fn names_method(node: Node, src: &str, root: Node, method: &str) -> bool {
    match node.kind() {
        "string" => string_value(node, src) == Some(method),
        "identifier" => {
            let name = text(node, src);
            named_children(root).into_iter().any(|s| {
                s.kind() == "expression_statement"
                    && s.named_child(0).is_some_and(|a| {
                        a.kind() == "assignment"
                            && a.child_by_field_name("left")
                                .is_some_and(|l| text(l, src) == name)
                            && a.child_by_field_name("right")
                                .is_some_and(|r| string_value(r, src) == Some(method))
                    })
            })
        }
        _ => false,
    }
}

/// The function a callee expression names in the tree: `self.m` (a method of the class it
/// is read in, or of a base of it), a function of the module, or one it imports.
fn resolve_callable<'a>(files: &'a [Parsed], file: usize, expr: Node<'a>) -> Option<At<'a>> {
    let src = files[file].file.text.as_str();
    match expr.kind() {
        "attribute" => {
            let obj = expr.child_by_field_name("object")?;
            let name = text(expr.child_by_field_name("attribute")?, src);
            if text(obj, src) != "self" {
                return None;
            }
            let mut cur = expr.parent();
            while let Some(n) = cur {
                if n.kind() == "class_definition" {
                    return methods(n)
                        .into_iter()
                        .find(|m| name_of(*m, src) == name)
                        .map(|m| At { file, node: m });
                }
                cur = n.parent();
            }
            None
        }
        "identifier" => function_named(files, file, text(expr, src), 0),
        "lambda" => {
            let body = expr.child_by_field_name("body")?;
            let call = if body.kind() == "await" {
                body.named_child(0)?
            } else {
                body
            };
            (call.kind() == "call")
                .then(|| resolve_callable(files, file, call.child_by_field_name("function")?))
                .flatten()
        }
        _ => None,
    }
}

/// A module-level function of a file by name, or the one it imports under that name.
fn function_named<'a>(
    files: &'a [Parsed],
    file: usize,
    name: &str,
    depth: usize,
) -> Option<At<'a>> {
    let src = files[file].file.text.as_str();
    let root = files[file].tree().root_node();
    if let Some(f) = top_level_functions(root)
        .into_iter()
        .find(|f| name_of(*f, src) == name)
    {
        return Some(At { file, node: f });
    }
    if depth > 3 {
        return None;
    }
    for imp in descendants(root, "import_from_statement") {
        let Some(module) = imp.child_by_field_name("module_name").map(|m| text(m, src)) else {
            continue;
        };
        let mut c = imp.walk();
        for n in imp.children_by_field_name("name", &mut c) {
            let (orig, local) = match n.kind() {
                "aliased_import" => (
                    n.child_by_field_name("name").map(|x| text(x, src)),
                    n.child_by_field_name("alias").map(|x| text(x, src)),
                ),
                _ => (Some(text(n, src)), None),
            };
            if local.or(orig) != Some(name) {
                continue;
            }
            let orig = orig?;
            for target in module_files(files, file, module) {
                if let Some(found) = function_named(files, target, orig, depth + 1) {
                    return Some(found);
                }
            }
        }
    }
    None
}

/// The files of the tree a `from <module> import` may name (relative or absolute).
fn module_files(files: &[Parsed], from: usize, module: &str) -> Vec<usize> {
    let dots = module.chars().take_while(|c| *c == '.').count();
    let rest = module[dots..].replace('.', "/");
    let path = if dots > 0 {
        let mut dir: Vec<&str> = files[from].file.rel.split('/').collect();
        dir.pop();
        for _ in 1..dots {
            dir.pop();
        }
        let base = dir.join("/");
        [base.as_str(), rest.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("/")
    } else {
        rest
    };
    let wanted = [format!("{path}.py"), format!("{path}/__init__.py")];
    files
        .iter()
        .enumerate()
        .filter(|(_, p)| {
            wanted
                .iter()
                .any(|w| p.file.rel == *w || p.file.rel.ends_with(&format!("/{w}")))
        })
        .map(|(i, _)| i)
        .collect()
}

/// The functions a dispatcher calls for `method`.
fn dispatched<'a>(files: &'a [Parsed], method: &str) -> Vec<At<'a>> {
    let mut out: Vec<At<'a>> = Vec::new();
    let mut push = |at: At<'a>| {
        if !out
            .iter()
            .any(|o| o.file == at.file && o.node.id() == at.node.id())
        {
            out.push(at);
        }
    };
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_str();
        if !is_agent_file(p) || !src.contains(method) {
            continue;
        }
        let root = p.tree().root_node();
        let mentions: Vec<Node> = descendants(root, "string")
            .into_iter()
            .chain(descendants(root, "identifier"))
            .filter(|n| names_method(*n, src, root, method))
            .collect();
        for m in mentions {
            let Some(parent) = m.parent() else { continue };
            // `{"session/prompt": self._on_prompt}`
            if parent.kind() == "pair" && parent.child_by_field_name("key") == Some(m) {
                if let Some(at) = parent
                    .child_by_field_name("value")
                    .and_then(|v| resolve_callable(files, i, v))
                {
                    push(at);
                }
                continue;
            }
            // `if method == "session/prompt": ...` / `elif`, `case "session/prompt":`
            let block = if parent.kind() == "comparison_operator" {
                let mut cur = parent.parent();
                let mut found = None;
                while let Some(n) = cur {
                    if matches!(n.kind(), "if_statement" | "elif_clause") {
                        found = n.child_by_field_name("consequence");
                        break;
                    }
                    if !matches!(n.kind(), "boolean_operator" | "parenthesized_expression") {
                        break;
                    }
                    cur = n.parent();
                }
                found
            } else {
                let mut cur = Some(parent);
                let mut found = None;
                while let Some(n) = cur {
                    if n.kind() == "case_clause" {
                        found = n.child_by_field_name("consequence").or_else(|| {
                            named_children(n).into_iter().find(|c| c.kind() == "block")
                        });
                        break;
                    }
                    if !matches!(n.kind(), "case_pattern" | "union_pattern") {
                        break;
                    }
                    cur = n.parent();
                }
                found
            };
            let Some(block) = block else { continue };
            let target = descendants(block, "call").into_iter().find_map(|c| {
                resolve_callable(files, i, c.child_by_field_name("function")?).or_else(|| {
                    // `create_task(self._on_prompt(...))`, `partial(self._on_prompt, ...)`
                    positional_args(c)
                        .into_iter()
                        .find_map(|a| resolve_callable(files, i, a))
                })
            });
            if let Some(at) = target {
                push(at);
            }
        }
    }
    out
}

/// A writer call a `session/update` message reaches, and the node of its arguments that
/// carries it.
struct Sink<'a> {
    file: usize,
    call: Node<'a>,
    carried: Node<'a>,
}

/// Whether a node is inside the card's writer acp-patch put in a decorator.
fn in_inserted_decorator(node: Node, src: &str) -> bool {
    let mut cur = node.parent();
    while let Some(n) = cur {
        if n.kind() == "decorator" && text(n, src).contains(&format!("{RUNTIME_NAME}.")) {
            return true;
        }
        cur = n.parent();
    }
    false
}

/// Every `session/update` message built in the agent's files: a dict literal with
/// `"method": "session/update"`, or `dict(method="session/update", ...)`.
fn origins(p: &Parsed) -> Vec<Node<'_>> {
    let src = p.file.text.as_str();
    let root = p.tree().root_node();
    let mut out = Vec::new();
    for d in descendants(root, "dictionary") {
        let is_update = named_children(d).into_iter().any(|pair| {
            pair.kind() == "pair"
                && pair
                    .child_by_field_name("key")
                    .and_then(|k| string_value(k, src))
                    == Some("method")
                && pair
                    .child_by_field_name("value")
                    .is_some_and(|v| names_method(v, src, root, "session/update"))
        });
        if is_update && !in_inserted_decorator(d, src) {
            out.push(d);
        }
    }
    for c in descendants(root, "call") {
        if callee_name(c, src) == "dict"
            && keyword_arg(c, "method", src)
                .and_then(|k| k.child_by_field_name("value"))
                .is_some_and(|v| names_method(v, src, root, "session/update"))
        {
            out.push(c);
        }
    }
    out
}

/// Follows a message to the calls that write it.
fn follow<'a>(
    files: &'a [Parsed],
    file: usize,
    origin: Node<'a>,
    lost: &mut Vec<String>,
) -> Vec<Sink<'a>> {
    let mut sinks: Vec<Sink<'a>> = Vec::new();
    let mut todo = vec![(file, origin, false)];
    let mut seen: Vec<(usize, usize, usize)> = Vec::new();
    while let Some((file, node, many)) = todo.pop() {
        let key = (file, node.start_byte(), node.end_byte());
        if seen.contains(&key) || seen.len() > 256 {
            continue;
        }
        seen.push(key);
        let src = files[file].file.text.as_str();
        let mut cur = node;
        let parent = loop {
            let Some(parent) = cur.parent() else {
                break None;
            };
            match parent.kind() {
                "parenthesized_expression" | "await" | "binary_operator" | "interpolation" => {
                    cur = parent
                }
                "string" => cur = parent, // an f-string around its JSON text
                // `json.dumps(message)`, `json.dumps(message).encode()`
                "argument_list"
                    if parent
                        .parent()
                        .is_some_and(|c| matches!(callee_name(c, src), "dumps")) =>
                {
                    cur = parent.parent().expect("checked");
                }
                "attribute"
                    if parent
                        .child_by_field_name("attribute")
                        .is_some_and(|a| text(a, src) == "encode")
                        && parent.parent().is_some_and(|c| c.kind() == "call") =>
                {
                    cur = parent.parent().expect("checked");
                }
                _ => break Some(parent),
            }
        };
        let Some(parent) = parent else { continue };
        let mut lose = |why: &str| {
            lost.push(format!("{}:{}: {why}", files[file].file.rel, line(cur)));
        };
        match parent.kind() {
            "argument_list" | "keyword_argument" => {
                let call = if parent.kind() == "keyword_argument" {
                    parent.parent().and_then(|a| a.parent())
                } else {
                    parent.parent()
                };
                let Some(call) = call.filter(|c| c.kind() == "call") else {
                    lose("a message handed to something that is not a call");
                    continue;
                };
                if many {
                    // a list of messages handed to a function of the agent: its parameter
                    let k = positional_args(call)
                        .iter()
                        .position(|a| *a == cur)
                        .unwrap_or(0);
                    let Some(f) = call
                        .child_by_field_name("function")
                        .and_then(|f| resolve_callable(files, file, f))
                    else {
                        lose(
                            "a list of messages handed to a call acp-patch cannot follow (the writer takes one message at a time)",
                        );
                        continue;
                    };
                    let fsrc = files[f.file].file.text.as_str();
                    let params = parameters(f.node, fsrc);
                    let skip = usize::from(
                        params.first().is_some_and(|(n, _)| n == "self")
                            && call
                                .child_by_field_name("function")
                                .is_some_and(|x| x.kind() == "attribute"),
                    );
                    match params.get(k + skip) {
                        Some((name, decl)) => {
                            for r in reads(files, f.file, *decl, name) {
                                todo.push((f.file, r, true));
                            }
                        }
                        None => {
                            lose("a list of messages handed to a function without that parameter")
                        }
                    }
                    continue;
                }
                if !sinks
                    .iter()
                    .any(|s| s.call.id() == call.id() && s.file == file)
                {
                    sinks.push(Sink {
                        file,
                        call,
                        carried: node,
                    });
                }
            }
            "assignment" if parent.child_by_field_name("right") == Some(cur) => {
                match parent.child_by_field_name("left") {
                    Some(l) if l.kind() == "identifier" => {
                        for r in reads(files, file, l, text(l, src)) {
                            todo.push((file, r, many));
                        }
                    }
                    _ => lose("a message stored in an attribute or a pattern"),
                }
            }
            "return_statement" => match enclosing_function(parent) {
                Some(func) => {
                    for (f, call) in calls_of(files, file, func) {
                        todo.push((f, call, many));
                    }
                }
                None => lose("a return outside a function"),
            },
            "list" | "tuple" if !many => todo.push((file, parent, true)),
            "for_statement" if many && parent.child_by_field_name("right") == Some(cur) => {
                match parent.child_by_field_name("left") {
                    Some(l) if l.kind() == "identifier" => {
                        for r in reads(files, file, l, text(l, src)) {
                            todo.push((file, r, false));
                        }
                    }
                    _ => lose("a loop over messages without one loop variable"),
                }
            }
            "expression_statement" => {}
            _ => lose("a message put into another value"),
        }
    }
    sinks
}

/// The reads of a name bound at `decl`, after it, in its function (or module).
fn reads<'a>(files: &'a [Parsed], file: usize, decl: Node<'a>, name: &str) -> Vec<Node<'a>> {
    let src = files[file].file.text.as_str();
    let scope = enclosing_function(decl)
        .and_then(|f| f.child_by_field_name("body"))
        .unwrap_or_else(|| files[file].tree().root_node());
    descendants(scope, "identifier")
        .into_iter()
        .filter(|n| n.id() != decl.id() && text(*n, src) == name)
        .filter(|n| n.start_byte() > decl.start_byte())
        .filter(|n| {
            n.parent().is_none_or(|p| {
                let assigned = matches!(p.kind(), "assignment" | "for_statement")
                    && p.child_by_field_name("left") == Some(*n);
                let attribute =
                    p.kind() == "attribute" && p.child_by_field_name("attribute") == Some(*n);
                !assigned && !attribute && p.kind() != "keyword_argument"
            })
        })
        .collect()
}

/// Every call of a function of the tree (`f(...)` resolving to it, `self.f(...)` in its class).
fn calls_of<'a>(files: &'a [Parsed], file: usize, func: Node<'a>) -> Vec<(usize, Node<'a>)> {
    let name = name_of(func, &files[file].file.text).to_string();
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) || !p.file.text.contains(name.as_str()) {
            continue;
        }
        for c in descendants(p.tree().root_node(), "call") {
            if callee_name(c, &p.file.text) != name {
                continue;
            }
            let target = c
                .child_by_field_name("function")
                .and_then(|f| resolve_callable(files, i, f));
            if target.is_some_and(|t| t.file == file && t.node.id() == func.id()) {
                out.push((i, c));
            }
        }
    }
    out
}

/// The receiver the emitter wraps: the writer's object (`self`, `sys.stdout`), or the writer
/// function itself (`print`, `send`); whether it is wrapped already.
fn receiver<'a>(call: Node<'a>, src: &str) -> Option<(Node<'a>, bool)> {
    let f = call.child_by_field_name("function")?;
    let node = if f.kind() == "attribute" {
        f.child_by_field_name("object")?
    } else {
        f
    };
    let wrapped = node.kind() == "call"
        && callee_name(node, src) == "wire"
        && callee_object(node, src) == Some(RUNTIME_NAME);
    Some((node, wrapped))
}

/// The writer call's text with the message replaced by the card's, as written without the
/// emitter, on one line.
fn template(src: &str, sink: &Sink, recv: Node, wrapped: bool) -> String {
    let message =
        format!("{{\"jsonrpc\": \"2.0\", \"method\": \"session/update\", \"params\": {PARAMS}}}");
    let mut t = format!(
        "{}{message}{}",
        &src[sink.call.start_byte()..sink.carried.start_byte()],
        &src[sink.carried.end_byte()..sink.call.end_byte()]
    );
    if wrapped && let Some(inner) = positional_args(recv).first() {
        let whole = &src[recv.start_byte()..recv.end_byte()];
        t = t.replacen(whole, &src[inner.start_byte()..inner.end_byte()], 1);
    }
    t.lines().map(str::trim).collect::<Vec<_>>().join(" ")
}

/// The names a template reads (not attribute names, not keywords, not the params).
fn template_reads(t: &str) -> Vec<String> {
    let tree = crate::lang::python::syntax::parse(t);
    let mut out: Vec<String> = Vec::new();
    for id in descendants(tree.root_node(), "identifier") {
        let skip = id.parent().is_some_and(|p| {
            (p.kind() == "attribute" && p.child_by_field_name("attribute") == Some(id))
                || (p.kind() == "keyword_argument" && p.child_by_field_name("name") == Some(id))
        });
        let name = text(id, t).to_string();
        if !skip && name != PARAMS && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Names bound at module level in a file: imports, functions, classes, assignments.
fn module_names(p: &Parsed) -> Vec<String> {
    let src = p.file.text.as_str();
    let mut out = Vec::new();
    for n in named_children(p.tree().root_node()) {
        match n.kind() {
            "import_statement" | "import_from_statement" => {
                for d in descendants(n, "dotted_name")
                    .into_iter()
                    .chain(descendants(n, "identifier"))
                {
                    let t = text(d, src);
                    out.push(t.split('.').next().unwrap_or(t).to_string());
                }
            }
            "function_definition" | "class_definition" => out.push(name_of(n, src).to_string()),
            "decorated_definition" => {
                if let Some(d) = n.child_by_field_name("definition") {
                    out.push(name_of(d, src).to_string());
                }
            }
            "expression_statement" => {
                if let Some(l) = n
                    .named_child(0)
                    .filter(|a| a.kind() == "assignment")
                    .and_then(|a| a.child_by_field_name("left"))
                {
                    out.push(text(l, src).to_string());
                }
            }
            _ => {}
        }
    }
    out
}

fn class_of(def: Node) -> Option<Node> {
    let mut cur = def.parent();
    while let Some(n) = cur {
        match n.kind() {
            "class_definition" => return Some(n),
            "function_definition" => return None,
            _ => cur = n.parent(),
        }
    }
    None
}

/// The card's writer for a prompt handler: `lambda acp_params, <its params up to the last one
/// the writer reads>, *_, **__: <writer call>`, from a writer call every name of which is bound
/// in the handler (its parameters, `self` of its own class, its module's names, builtins).
fn card_writer<'a>(
    files: &'a [Parsed],
    prompt: At<'a>,
    sinks: &[(Sink<'a>, String)],
    pins: &PythonPins,
) -> Result<(String, At<'a>)> {
    let src = files[prompt.file].file.text.as_str();
    let params: Vec<String> = parameters(prompt.node, src)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let module = module_names(&files[prompt.file]);
    let own_class = class_of(prompt.node);
    // (lambda, where it comes from), its candidate, its rank: the handler's own writes first,
    // then its class's, then any
    let mut usable: Vec<((String, At<'a>), crate::error::Candidate, u8)> = Vec::new();
    for (sink, t) in sinks {
        let reads = template_reads(t);
        let sink_class = class_of(enclosing_function(sink.call).unwrap_or(sink.call));
        let bound = reads.iter().all(|n| {
            if n == "self" {
                return params.first().is_some_and(|p| p == "self")
                    && sink.file == prompt.file
                    && own_class.is_some()
                    && sink_class.map(|c| c.id()) == own_class.map(|c| c.id());
            }
            params.contains(n) || module.contains(n) || BUILTINS.contains(&n.as_str())
        });
        if !bound {
            continue;
        }
        let last = params
            .iter()
            .rposition(|p| reads.contains(p))
            .map(|k| k + 1)
            .unwrap_or(0);
        let mut args: Vec<String> = vec![PARAMS.to_string()];
        args.extend(params[..last].iter().cloned());
        args.push("*_".into());
        args.push("**__".into());
        let lambda = format!("lambda {}: {t}", args.join(", "));
        let owner = enclosing_function(sink.call);
        let at = At {
            file: sink.file,
            node: owner.unwrap_or(sink.call),
        };
        let name = owner
            .map(|f| qualified_name(f, &files[sink.file].file.text))
            .unwrap_or_else(|| "<module>".into());
        if usable
            .iter()
            .any(|((l, _), c, _)| *l == lambda && c.name == name)
        {
            continue;
        }
        let rank = if sink.file == prompt.file && owner.map(|o| o.id()) == Some(prompt.node.id()) {
            0
        } else if sink.file == prompt.file
            && own_class.is_some()
            && sink_class.map(|c| c.id()) == own_class.map(|c| c.id())
        {
            1
        } else {
            2
        };
        usable.push(((lambda, at), candidate(files, at, name), rank));
    }
    if pins.connection.is_none() {
        // every writer found writes the same stream: the nearest one, first in the file
        let best = usable.iter().map(|(_, _, r)| *r).min();
        usable.retain(|(_, _, r)| Some(*r) == best);
        usable.truncate(1);
    }
    let usable: Vec<((String, At<'a>), crate::error::Candidate)> =
        usable.into_iter().map(|(u, c, _)| (u, c)).collect();
    let pin = pins
        .connection
        .as_ref()
        .map(|p| crate::config::Pin::parse(p))
        .map(|p| (p.file, p.name));
    let handler = qualified_name(prompt.node, src);
    crate::lang::parts::choose(usable, pin, "connection", "connection", || {
        format!(
            "{handler} handles session/prompt, but no writer of `session/update` messages can be called from it ({} seen; each reads a name not bound there)",
            sinks.len()
        )
    })
}

/// The anchors of an agent with its own JSON-RPC loop, or `None` when the tree has no
/// dispatcher of `session/prompt` (and no `prompt` pin names a function).
pub fn locate<'a>(files: &'a [Parsed], pins: &PythonPins) -> Result<Option<Anchors<'a>>> {
    let mut prompts = dispatched(files, "session/prompt");
    if let Some(pin) = &pins.prompt {
        let pin = crate::config::Pin::parse(pin);
        let mut all = prompts.clone();
        for (i, p) in files.iter().enumerate() {
            if p.file.rel == pin.file {
                for d in descendants(p.tree().root_node(), "function_definition") {
                    all.push(At { file: i, node: d });
                }
            }
        }
        let found: Vec<(At, String)> = all
            .into_iter()
            .map(|a| (a, qualified_name(a.node, &files[a.file].file.text)))
            .collect();
        let chosen = super::locate::choose(
            files,
            found,
            pins.prompt.as_ref(),
            "ACP prompt handler",
            "prompt",
            || "no dispatcher of `\"session/prompt\"` and no function in the pinned file".into(),
        )?;
        prompts = vec![chosen];
    }
    if prompts.is_empty() {
        return Ok(None);
    }
    let cancels = dispatched(files, "session/cancel");
    // the writes of session/update messages
    let mut sinks: Vec<(Sink, String)> = Vec::new();
    let mut sends: Vec<Send> = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        for origin in origins(p) {
            let mut lost = Vec::new();
            let found = follow(files, i, origin, &mut lost);
            if found.is_empty() {
                return Err(Error::Unsupported {
                    file: p.file.rel.clone(),
                    line: line(origin),
                    message: format!(
                        "acp-patch followed this `session/update` message (through variables, return values, lists and loops, `json.dumps`) to no call that writes it{}",
                        if lost.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", lost.join("; "))
                        }
                    ),
                });
            }
            for sink in found {
                let ssrc = files[sink.file].file.text.as_str();
                let Some((recv, wrapped)) = receiver(sink.call, ssrc) else {
                    continue;
                };
                if sends
                    .iter()
                    .any(|s| s.call.file == sink.file && s.call.node.id() == sink.call.id())
                {
                    continue;
                }
                let t = template(ssrc, &sink, recv, wrapped);
                sends.push(Send {
                    call: At {
                        file: sink.file,
                        node: sink.call,
                    },
                    receiver: recv,
                    wrapped,
                    wire: true,
                });
                sinks.push((sink, t));
            }
        }
    }
    sends.sort_by_key(|s| (s.call.file, s.call.node.start_byte()));
    sinks.sort_by_key(|(s, _)| (s.file, s.call.start_byte()));
    let mut handlers = Vec::new();
    for prompt in prompts {
        let src = files[prompt.file].file.text.as_str();
        let name = qualified_name(prompt.node, src);
        if !is_async(prompt.node, src) {
            return Err(Error::Unsupported {
                file: files[prompt.file].file.rel.clone(),
                line: line(prompt.node),
                message: format!(
                    "`{name}` handles session/prompt but is not `async def`: acp-patch's card runs on the agent's asyncio loop"
                ),
            });
        }
        let (lambda, at) = card_writer(files, prompt, &sinks, pins)?;
        let cancel = cancels
            .iter()
            .find(|c| {
                class_of(c.node).map(|x| x.id()) == class_of(prompt.node).map(|x| x.id())
                    && (c.file == prompt.file || class_of(c.node).is_none())
            })
            .or(cancels.first())
            .copied();
        handlers.push(Handler {
            class: prompt,
            class_name: name,
            prompt,
            cancel,
            connection: Connection::Wire { lambda, at },
            send_kwargs: Vec::new(),
        });
    }
    Ok(Some(Anchors { handlers, sends }))
}
