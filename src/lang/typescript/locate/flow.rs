//! Where a `session/update` message goes after it is built: followed through variables,
//! return values (to every call of the builder, in its file or in the modules that import it),
//! lists of messages and the loops over them, `JSON.stringify`, up to the call that hands it
//! to a writer.

use super::classes::resolve_function;
use super::*;

/// A writer call a message reaches: the call, and the node of its arguments that carries the
/// message (what the start card's writer puts its own message in place of).
#[derive(Debug, Clone, Copy)]
pub(super) struct Sink<'a> {
    pub file: usize,
    pub call: Node<'a>,
    pub carried: Node<'a>,
}

/// Where following a message stopped without reaching a writer, for the refusal.
#[derive(Debug, Clone)]
pub(super) struct Lost {
    pub file: usize,
    pub line: usize,
    pub why: String,
}

/// Follows the message built at `origin` to every writer call it reaches.
pub(super) fn follow<'a>(
    files: &'a [Parsed],
    file: usize,
    origin: Node<'a>,
) -> (Vec<Sink<'a>>, Vec<Lost>) {
    let mut sinks: Vec<Sink> = Vec::new();
    let mut lost = Vec::new();
    let mut todo = vec![(file, origin, false)];
    let mut seen: Vec<(usize, usize, usize)> = Vec::new();
    while let Some((file, node, many)) = todo.pop() {
        let key = (file, node.start_byte(), node.end_byte());
        if seen.contains(&key) || seen.len() > 256 {
            continue;
        }
        seen.push(key);
        let src = files[file].file.text.as_ref();
        let mut cur = node;
        // what passes the value on unchanged (or as its JSON text)
        let parent = loop {
            let Some(parent) = cur.parent() else {
                break None;
            };
            match parent.kind() {
                "parenthesized_expression"
                | "as_expression"
                | "satisfies_expression"
                | "non_null_expression"
                | "await_expression"
                | "binary_expression"
                | "template_substitution"
                | "template_string" => cur = parent,
                "arguments"
                    if parent
                        .parent()
                        .is_some_and(|c| callee(c, src) == ("JSON", "stringify")) =>
                {
                    cur = parent.parent().expect("checked");
                }
                _ => break Some(parent),
            }
        };
        let Some(parent) = parent else { continue };
        let mut lose = |why: &str| {
            lost.push(Lost {
                file,
                line: line(cur),
                why: why.to_string(),
            })
        };
        match parent.kind() {
            "arguments" => {
                let call = parent.parent().expect("arguments belong to a call");
                if !many {
                    if !sinks.iter().any(|s| s.call == call) {
                        sinks.push(Sink {
                            file,
                            call,
                            carried: node,
                        });
                    }
                    continue;
                }
                // a list of messages handed to a function of the agent: its parameter
                let k = named_children(parent)
                    .iter()
                    .position(|a| *a == cur)
                    .unwrap_or(0);
                match called_function(files, file, call) {
                    Some((f, func)) => match parameter_names(func, &files[f].file.text).get(k) {
                        Some((name, decl)) => {
                            for r in reads(files, f, *decl, name) {
                                todo.push((f, r, true));
                            }
                        }
                        None => lose(
                            "a list of messages handed to a function that takes no such parameter",
                        ),
                    },
                    None => lose(
                        "a list of messages handed to a call acp-patch cannot follow (the writer takes one message at a time)",
                    ),
                }
            }
            "variable_declarator" if parent.child_by_field_name("value") == Some(cur) => {
                match parent.child_by_field_name("name") {
                    Some(n) if n.kind() == "identifier" => {
                        for r in reads(files, file, n, text(n, src)) {
                            todo.push((file, r, many));
                        }
                    }
                    _ => lose("a message destructured into a pattern"),
                }
            }
            "assignment_expression" if parent.child_by_field_name("right") == Some(cur) => {
                match parent.child_by_field_name("left") {
                    Some(l) if l.kind() == "identifier" => {
                        for r in reads(files, file, l, text(l, src)) {
                            todo.push((file, r, many));
                        }
                    }
                    _ => lose("a message stored in a property"),
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
            "arrow_function" if parent.child_by_field_name("body") == Some(cur) => {
                for (f, call) in calls_of(files, file, parent) {
                    todo.push((f, call, many));
                }
            }
            "array" if !many => todo.push((file, parent, true)),
            "for_in_statement" if many && parent.child_by_field_name("right") == Some(cur) => {
                let left = parent.child_by_field_name("left");
                let names = left.map(|l| {
                    let mut out = Vec::new();
                    pattern_names(l, src, &mut out);
                    out
                });
                match names.as_deref() {
                    Some([(name, decl)]) => {
                        for r in reads(files, file, *decl, name) {
                            todo.push((file, r, false));
                        }
                    }
                    _ => lose("a loop over messages without one loop variable"),
                }
            }
            "expression_statement" => {} // built and dropped
            _ => lose("a message put into another value"),
        }
    }
    sinks.sort_by_key(|s| (s.file, s.call.start_byte()));
    (sinks, lost)
}

/// The reads of the name `decl` binds, in the function (or module) it is declared in: every
/// identifier of that name after it, but not what is assigned to.
fn reads<'a>(files: &'a [Parsed], file: usize, decl: Node<'a>, name: &str) -> Vec<Node<'a>> {
    let src = files[file].file.text.as_ref();
    let scope = enclosing_function(decl)
        .and_then(|f| f.child_by_field_name("body"))
        .unwrap_or_else(|| files[file].tree().root_node());
    descendants(scope, "identifier")
        .into_iter()
        .filter(|n| *n != decl && text(*n, src) == name && n.start_byte() > decl.start_byte())
        .filter(|n| {
            n.parent().is_none_or(|p| {
                !(p.kind() == "assignment_expression" && p.child_by_field_name("left") == Some(*n))
                    && p.kind() != "variable_declarator"
            })
        })
        .collect()
}

/// The function of the tree a call calls: `this.m(...)` in a class, `f(...)` declared or
/// imported, `x.m(...)` when one class of the tree has a method `m`.
pub(super) fn called_function<'a>(
    files: &'a [Parsed],
    file: usize,
    call: Node<'a>,
) -> Option<(usize, Node<'a>)> {
    let src = files[file].file.text.as_ref();
    let (obj, name) = callee(call, src);
    if name.is_empty() {
        return None;
    }
    if obj.is_empty() {
        return resolve_function(files, file, name);
    }
    if obj == "this"
        && let Some(class) = enclosing_class(call)
        && let Some((f, m)) = member(files, file, class, name)
    {
        return member_function(m).map(|func| (f, func));
    }
    let methods: Vec<(usize, Node)> = methods_named(files, name);
    match methods[..] {
        [one] => Some(one),
        _ => None,
    }
}

fn methods_named<'a>(files: &'a [Parsed], name: &str) -> Vec<(usize, Node<'a>)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        for class in classes(p.tree().root_node()) {
            for m in class_members(class) {
                if member_name(m, &p.file.text) == name
                    && let Some(f) = member_function(m)
                {
                    out.push((i, f));
                }
            }
        }
    }
    out
}

/// Every call of a function of the tree, in any of the agent's files.
fn calls_of<'a>(files: &'a [Parsed], file: usize, func: Node<'a>) -> Vec<(usize, Node<'a>)> {
    let src = files[file].file.text.as_ref();
    let is_member = matches!(func.kind(), "method_definition")
        || func
            .parent()
            .is_some_and(|p| p.kind() == "public_field_definition");
    let name = if func.kind() == "function_declaration" {
        Some(name_of(func, src))
    } else if is_member {
        let m = if func.kind() == "method_definition" {
            func
        } else {
            func.parent().expect("checked")
        };
        Some(member_name(m, src))
    } else {
        func.parent()
            .filter(|p| p.kind() == "variable_declarator")
            .and_then(|p| p.child_by_field_name("name"))
            .map(|n| text(n, src))
    };
    let Some(name) = name else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) || !p.file.text.contains(name) {
            continue;
        }
        let psrc = p.file.text.as_ref();
        for c in descendants(p.tree().root_node(), "call_expression") {
            if callee(c, psrc).1 != name {
                continue;
            }
            if called_function(files, i, c) == Some((file, func)) {
                out.push((i, c));
            }
        }
    }
    out
}
