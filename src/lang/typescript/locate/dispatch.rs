//! The agent's own dispatcher: the function it calls for a method (a switch arm, an if on the
//! method, a handler table) and what it hands that function (the whole JSON-RPC message or its
//! params), which says where the handler reads the session id.

use super::*;

/// The function a hand-rolled dispatcher calls for `method` (`case "session/prompt": return
/// this.prompt(msg.params)`, `if (msg.method === "session/prompt") ...`), with what it hands
/// that function: the message it dispatches on, or that message's `params`.
pub(super) fn dispatched<'a>(files: &'a [Parsed], method: &str) -> Vec<(usize, Node<'a>, Passed)> {
    let mut out: Vec<(usize, Node<'a>, Passed)> = Vec::new();
    let mut add = |t: (usize, Node<'a>), passed: Passed| {
        if !out.iter().any(|(f, n, _)| (*f, *n) == t) {
            out.push((t.0, t.1, passed));
        }
    };
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) || !may_name_method(&p.file.text, method) {
            continue;
        }
        let src = p.file.text.as_ref();
        let root = p.tree().root_node();
        let names = MethodNames::new(root, src);
        // each arm with the message whose `.method` it compares (`switch (msg.method)`)
        let mut arms: Vec<(Node, Option<Node>)> = Vec::new();
        for case in descendants(root, "switch_case") {
            if case
                .child_by_field_name("value")
                .and_then(|v| names.of(v))
                .is_some_and(|m| m == method)
            {
                let on = case
                    .parent()
                    .and_then(|b| b.parent())
                    .filter(|s| s.kind() == "switch_statement")
                    .and_then(|s| s.child_by_field_name("value"))
                    .and_then(|v| method_of(v, src));
                arms.push((case, on));
            }
        }
        for cond in descendants(root, "if_statement") {
            let Some(c) = cond.child_by_field_name("condition") else {
                continue;
            };
            let compares = descendants(c, "binary_expression")
                .into_iter()
                .find_map(|b| {
                    let op = b.child_by_field_name("operator").map(|o| text(o, src));
                    let sides = [
                        b.child_by_field_name("left"),
                        b.child_by_field_name("right"),
                    ];
                    let named = sides
                        .iter()
                        .flatten()
                        .any(|side| names.of(*side).is_some_and(|m| m == method));
                    (matches!(op, Some("===" | "==")) && named)
                        .then(|| sides.into_iter().flatten().find_map(|s| method_of(s, src)))
                });
            if let Some(on) = compares
                && let Some(then) = cond.child_by_field_name("consequence")
            {
                arms.push((then, on));
            }
        }
        // a handler map: `{ "session/prompt": handlePrompt }`, `[METHODS.prompt]: ...`,
        // `map.set("session/prompt", fn)`, `handlers["session/prompt"] = fn`
        let mut entries: Vec<Node> = Vec::new();
        for pair in descendants(root, "pair") {
            let Some(key) = pair.child_by_field_name("key") else {
                continue;
            };
            let key = if key.kind() == "computed_property_name" {
                key.named_child(0).unwrap_or(key)
            } else {
                key
            };
            let named = match key.kind() {
                "property_identifier" => None,
                _ => names.of(key),
            };
            if named.is_some_and(|m| m == method)
                && let Some(v) = pair.child_by_field_name("value")
            {
                entries.push(v);
            }
        }
        for c in descendants(root, "call_expression") {
            let args = arguments(c);
            if callee(c, src).1 == "set"
                && args.len() == 2
                && names.of(args[0]).is_some_and(|m| m == method)
            {
                entries.push(args[1]);
            }
        }
        for a in descendants(root, "assignment_expression") {
            if let (Some(l), Some(r)) = (
                a.child_by_field_name("left"),
                a.child_by_field_name("right"),
            ) && l.kind() == "subscript_expression"
                && l.child_by_field_name("index")
                    .and_then(|k| names.of(k))
                    .is_some_and(|m| m == method)
            {
                entries.push(r);
            }
        }
        let table = if entries.is_empty() {
            Passed::Unknown
        } else {
            table_passed(p)
        };
        for v in entries {
            let target = match v.kind() {
                "arrow_function" | "function_expression" | "function" => Some((i, v)),
                "identifier" => super::classes::resolve_function(files, i, text(v, src)),
                "member_expression" => {
                    let obj = v.child_by_field_name("object").map(|o| text(o, src));
                    let prop = v.child_by_field_name("property").map(|o| text(o, src));
                    match (obj, prop) {
                        (Some("this"), Some(name)) => enclosing_class(v)
                            .and_then(|class| member(files, i, class, name))
                            .and_then(|(f, m)| member_function(m).map(|func| (f, func))),
                        _ => None,
                    }
                }
                // `this.handlePrompt.bind(this)`
                "call_expression" if callee(v, src).1 == "bind" => v
                    .child_by_field_name("function")
                    .and_then(|f| f.child_by_field_name("object"))
                    .filter(|o| text(*o, src).starts_with("this."))
                    .and_then(|o| {
                        let name = text(o, src).strip_prefix("this.")?;
                        let class = enclosing_class(v)?;
                        let (f, m) = member(files, i, class, name)?;
                        member_function(m).map(|func| (f, func))
                    }),
                _ => None,
            };
            if let Some(t) = target {
                add(t, table.clone());
            }
        }
        for (arm, on) in arms {
            if let Some((t, call)) = branch_call(files, i, arm) {
                let passed = on
                    .map(|on| passed_of(&p.file.rel, call, on, src))
                    .unwrap_or(Passed::Unknown);
                add(t, passed);
            }
        }
    }
    out
}

/// A function of the tree a dispatcher's branch for the method hands the request to, with the
/// call: the call of `this.<method>(..)` or of a top-level function in the branch's last
/// statement that makes one, when all that follows it only ends the branch (`break`, `return`
/// of a value computed without a call) or writes a JSON-RPC message. A branch that goes on
/// working after it handles the method inline, and a call under an `if` or in a loop is a path
/// the branch may take, not its hand-off (a helper that rewrites the prompt before a client
/// sends it on: `if (replay) injectReplayPrompt(params); return this.acp.prompt(params)`).
fn branch_call<'a>(
    files: &'a [Parsed],
    i: usize,
    arm: Node<'a>,
) -> Option<((usize, Node<'a>), Node<'a>)> {
    let src = files[i].file.text.as_ref();
    let mut stmts: Vec<Node<'a>> = match arm.kind() {
        "switch_case" => {
            let value = arm.child_by_field_name("value");
            statements(arm)
                .into_iter()
                .filter(|n| Some(*n) != value)
                .collect()
        }
        "statement_block" => statements(arm),
        _ => vec![arm],
    };
    if let [block] = stmts[..]
        && block.kind() == "statement_block"
    {
        stmts = statements(block);
    }
    let (k, found) = stmts
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, s)| !writes_a_message(**s, src))
        .find_map(|(k, s)| hand_off(files, i, *s).map(|t| (k, t)))?;
    stmts[k + 1..]
        .iter()
        .all(|s| ends_branch(*s) || writes_a_message(*s, src))
        .then_some(found)
}

/// The first call of a function of the tree a statement makes (not inside a nested function);
/// in a `try`, the one its body hands the request to.
fn hand_off<'a>(
    files: &'a [Parsed],
    i: usize,
    stmt: Node<'a>,
) -> Option<((usize, Node<'a>), Node<'a>)> {
    const NOT_A_HAND_OFF: &[&str] = &[
        "if_statement",
        "for_statement",
        "for_in_statement",
        "while_statement",
        "do_statement",
        "switch_statement",
        "function_declaration",
        "class_declaration",
    ];
    match stmt.kind() {
        k if NOT_A_HAND_OFF.contains(&k) => return None,
        "try_statement" => return branch_call(files, i, stmt.child_by_field_name("body")?),
        _ => {}
    }
    let src = files[i].file.text.as_ref();
    let scope = enclosing_function(stmt);
    descendants(stmt, "call_expression")
        .into_iter()
        .filter(|c| enclosing_function(*c) == scope)
        .find_map(|c| {
            let (obj, name) = callee(c, src);
            let t = if obj == "this" {
                let class = enclosing_class(c)?;
                let (f, m) = member(files, i, class, name)?;
                (f, member_function(m)?)
            } else if obj.is_empty() {
                top_level_functions(files[i].tree().root_node(), src)
                    .into_iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, d)| (i, d))?
            } else {
                return None;
            };
            Some((t, c))
        })
}

/// A statement that only ends a branch: `break`, `continue`, or a `return` of nothing or of a
/// value computed without a call.
fn ends_branch(stmt: Node) -> bool {
    match stmt.kind() {
        "break_statement" | "continue_statement" | "empty_statement" => true,
        "return_statement" => descendants(stmt, "call_expression").is_empty(),
        _ => false,
    }
}

/// Whether a statement builds a JSON-RPC message in place (an object with a `jsonrpc` or
/// `method` key): a write of a message, not a hand-off to a handler.
fn writes_a_message(stmt: Node, src: &str) -> bool {
    descendants(stmt, "pair").into_iter().any(|p| {
        p.child_by_field_name("key")
            .is_some_and(|k| matches!(text(k, src).trim_matches(['"', '\'']), "jsonrpc" | "method"))
    })
}

/// `msg.method` (through parentheses): `msg`.
fn method_of<'t>(n: Node<'t>, src: &str) -> Option<Node<'t>> {
    let n = unparen(n);
    (n.kind() == "member_expression"
        && n.child_by_field_name("property")
            .is_some_and(|p| text(p, src) == "method"))
    .then(|| n.child_by_field_name("object"))
    .flatten()
}

/// Through parentheses, `x!` and `x as T`.
fn unparen(mut n: Node) -> Node {
    while matches!(
        n.kind(),
        "parenthesized_expression"
            | "non_null_expression"
            | "as_expression"
            | "satisfies_expression"
    ) {
        match n.named_child(0) {
            Some(c) => n = c,
            None => break,
        }
    }
    n
}

/// What `call` hands its function first, against `on`, the message the dispatcher compares the
/// `.method` of: that message itself (the whole request), its `params`, or something else.
fn passed_of(rel: &str, call: Node, on: Node, src: &str) -> Passed {
    let Some(first) = arguments(call).first().map(|a| unparen(*a)) else {
        return Passed::Unknown;
    };
    let at = format!("{rel}:{}", line(call));
    let envelope = text(unparen(on), src);
    if first.kind() == "identifier" && text(first, src) == envelope {
        return Passed::Envelope(format!(
            "the dispatcher at {at} hands it `{envelope}`, the whole JSON-RPC message whose `.method` it compares"
        ));
    }
    if first.kind() == "member_expression"
        && first
            .child_by_field_name("property")
            .is_some_and(|p| text(p, src) == "params")
        && first
            .child_by_field_name("object")
            .is_some_and(|o| text(unparen(o), src) == envelope)
    {
        return Passed::Params(format!(
            "the dispatcher at {at} hands it `{envelope}.params`, the params of the message whose `.method` it compares"
        ));
    }
    Passed::Unknown
}

/// What a file's lookups of a handler table hand the handler they find (`routes[msg.method](msg.params)`,
/// `const h = routes[msg.method]; h?.(msg)`, `handlers.get(msg.method)?.(msg)`): one answer when
/// every lookup agrees.
fn table_passed(p: &Parsed) -> Passed {
    let src = p.file.text.as_ref();
    let root = p.tree().root_node();
    // the message a lookup expression looks `.method` up with
    let lookup = |n: Node<'_>| -> Option<String> {
        let mut found = None;
        walk(n, &mut |d| {
            if found.is_some() {
                return false;
            }
            let key = match d.kind() {
                "subscript_expression" => d.child_by_field_name("index"),
                "call_expression" if callee(d, src).1 == "get" => arguments(d).first().copied(),
                _ => None,
            };
            if let Some(on) = key.and_then(|k| method_of(k, src)) {
                found = Some(text(unparen(on), src).to_string());
            }
            true
        });
        found
    };
    let mut seen: Vec<Passed> = Vec::new();
    for c in descendants(root, "call_expression") {
        let Some(f) = c.child_by_field_name("function").map(unparen) else {
            continue;
        };
        let on = match f.kind() {
            "identifier" => descendants(root, "variable_declarator")
                .into_iter()
                .filter(|d| {
                    d.child_by_field_name("name")
                        .is_some_and(|n| text(n, src) == text(f, src))
                })
                .find_map(|d| d.child_by_field_name("value").and_then(lookup)),
            "subscript_expression" | "call_expression" => lookup(f),
            _ => None,
        };
        let Some(on) = on else { continue };
        let Some(first) = arguments(c).first().map(|a| unparen(*a)) else {
            continue;
        };
        let at = format!("{}:{}", p.file.rel, line(c));
        let passed = if text(first, src) == on {
            Passed::Envelope(format!(
                "the handler table's lookup at {at} hands it `{on}`, the whole JSON-RPC message whose `.method` it looks up"
            ))
        } else if text(first, src) == format!("{on}.params") {
            Passed::Params(format!(
                "the handler table's lookup at {at} hands it `{on}.params`, the params of the message whose `.method` it looks up"
            ))
        } else {
            Passed::Unknown
        };
        seen.push(passed);
    }
    let same = |a: &Passed, b: &Passed| std::mem::discriminant(a) == std::mem::discriminant(b);
    match seen.first() {
        Some(first) if seen.iter().all(|s| same(s, first)) => first.clone(),
        _ => Passed::Unknown,
    }
}
