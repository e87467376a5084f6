//! The card's writer: the agent's own call that writes a `session/update`, with the message
//! (or its params) replaced by the card's, as a lambda of the prompt handler's arguments —
//! `@acp_progress.prompt_handler(wire=lambda acp_params, <handler's params>: <writer call>)`.

use super::super::{At, candidate};
use super::follow::Sink;
use super::resolve::class_of;
use crate::config::PythonPins;
use crate::error::{Error, Result};
use crate::lang::parts::Parsed;
use crate::lang::python::RUNTIME_NAME;
use crate::lang::python::syntax::*;
use tree_sitter::Node;

/// The parameter of the card's writer (the notification's params).
pub const PARAMS: &str = "acp_params";

/// Names every Python module can read.
const BUILTINS: &[&str] = &[
    "print", "len", "str", "repr", "bytes", "dict", "list", "open",
];

/// The receiver the emitter wraps: the writer's object (`self`, `sys.stdout`), or the writer
/// function itself (`print`, `send`); whether it is wrapped already.
pub fn receiver<'a>(call: Node<'a>, src: &str) -> Option<(Node<'a>, bool)> {
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

/// The writer call's text with the message replaced by the card's (the method, when it is an
/// argument of its own, spelled as the string: a constant of another module is not bound where
/// the handler is), as written without the emitter, on one line.
pub fn template(src: &str, sink: &Sink, recv: Node, wrapped: bool) -> String {
    let message = match (sink.method, &sink.built) {
        (Some(_), _) => PARAMS.to_string(),
        (None, Some(built)) => built.clone(),
        (None, None) => format!(
            "{{\"jsonrpc\": \"2.0\", \"method\": \"session/update\", \"params\": {PARAMS}}}"
        ),
    };
    let mut edits: Vec<(Node, String)> = vec![(sink.carried, message)];
    if let Some(m) = sink.method {
        edits.push((m, "\"session/update\"".to_string()));
    }
    edits.sort_by_key(|(n, _)| n.start_byte());
    let mut t = String::new();
    let mut at = sink.call.start_byte();
    for (n, with) in &edits {
        t.push_str(&src[at..n.start_byte()]);
        t.push_str(with);
        at = n.end_byte();
    }
    t.push_str(&src[at..sink.call.end_byte()]);
    if wrapped && let Some(inner) = positional_args(recv).first() {
        let whole = &src[recv.start_byte()..recv.end_byte()];
        t = t.replacen(whole, &src[inner.start_byte()..inner.end_byte()], 1);
    }
    one_line(&t)
}

/// The text of the call that built a message (the method and the params its arguments), as
/// the card's writer builds the card's message with it: the method spelled as the string, the
/// params the card's.
pub fn card_built_by(src: &str, builder: &Sink) -> Option<String> {
    let method = builder.method?;
    let mut edits = [
        (method, "\"session/update\"".to_string()),
        (builder.carried, PARAMS.to_string()),
    ];
    edits.sort_by_key(|(n, _)| n.start_byte());
    let mut t = String::new();
    let mut at = builder.call.start_byte();
    for (n, with) in &edits {
        t.push_str(&src[at..n.start_byte()]);
        t.push_str(with);
        at = n.end_byte();
    }
    t.push_str(&src[at..builder.call.end_byte()]);
    Some(t)
}

/// A call written over several lines, on one, with no space inside its brackets (a trailing
/// comma stays: `(x,)` is a tuple).
fn one_line(t: &str) -> String {
    let mut out = String::new();
    for l in t.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let closes = l.starts_with([')', ']', '}']);
        if !out.is_empty() && !closes && !out.ends_with(['(', '[', '{']) {
            out.push(' ');
        }
        out.push_str(l);
    }
    out
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
    let src = p.file.text.as_ref();
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

/// The card's writer for a prompt handler: `lambda acp_params, <its params up to the last one
/// the writer reads>, *_, **__: <writer call>`, from a writer call every name of which is bound
/// in the handler (its parameters, `self` of its own class, its module's names, builtins).
pub fn card_writer<'a>(
    decisions: &crate::lang::survey::Decisions,
    files: &'a [Parsed],
    prompt: At<'a>,
    sinks: &[(Sink<'a>, String)],
    pins: &PythonPins,
) -> Result<(String, At<'a>)> {
    let src = files[prompt.file].file.text.as_ref();
    let params: Vec<String> = parameters(prompt.node, src)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let module = module_names(&files[prompt.file]);
    let own_class = class_of(prompt.node);
    // (lambda, where it comes from), its candidate, its rank: the handler's own writes first,
    // then its class's, then any
    let mut usable: Vec<((String, At<'a>), crate::error::Candidate, u8)> = Vec::new();
    // why each writer could not be used: `file:line` and the names it reads that are not bound
    let mut unbound: Vec<String> = Vec::new();
    for (sink, t) in sinks {
        let reads = template_reads(t);
        let sink_class = class_of(enclosing_function(sink.call).unwrap_or(sink.call));
        let missing: Vec<&String> = reads
            .iter()
            .filter(|n| {
                if *n == "self" {
                    return !(params.first().is_some_and(|p| p == "self")
                        && sink.file == prompt.file
                        && own_class.is_some()
                        && sink_class.map(|c| c.id()) == own_class.map(|c| c.id()));
                }
                !(params.contains(n) || module.contains(n) || BUILTINS.contains(&n.as_str()))
            })
            .collect();
        if !missing.is_empty() {
            let names: Vec<String> = missing.iter().map(|n| format!("`{n}`")).collect();
            unbound.push(format!(
                "{}:{} reads {}",
                files[sink.file].file.rel,
                sink.call.start_position().row + 1,
                names.join(", ")
            ));
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
        .map(|p| crate::config::Pin::parse(p));
    let handler = qualified_name(prompt.node, src);
    if usable.is_empty() {
        // no pin can stand in: a pin chooses among the writers the handler can call
        unbound.truncate(3);
        let message = if sinks.is_empty() {
            format!(
                "`{handler}` handles session/prompt, but the tree writes no `session/update` message: the card goes out through the agent's own writer of them; if `{handler}` only declares a request the tree sends, this is an ACP client, which acp-patch leaves alone"
            )
        } else {
            format!(
                "`{handler}` handles session/prompt, but none of the {} writer(s) of `session/update` messages can write the card from it: the card goes out through the agent's own writer call, which may read only the handler's parameters, `self` of its own class, its module's names and builtins{}; acp-patch.toml cannot supply the missing names",
                sinks.len(),
                match unbound.is_empty() {
                    true => String::new(),
                    false => format!(" ({})", unbound.join("; ")),
                }
            )
        };
        return Err(Error::Unsupported {
            file: files[prompt.file].file.rel.clone(),
            line: prompt.node.start_position().row + 1,
            message,
        });
    }
    crate::lang::parts::choose(decisions, usable, pin, "connection", "connection", || {
        format!(
            "{handler} handles session/prompt, but no writer of `session/update` messages can be called from it"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn a_call_over_several_lines_is_joined_without_stray_spaces() {
        assert_eq!(
            one_line("server.write_notification(\n    \"session/update\",\n    acp_params,\n)"),
            "server.write_notification(\"session/update\", acp_params,)"
        );
        assert_eq!(
            one_line("emit({\"a\": 1,\n \"b\": x})"),
            "emit({\"a\": 1, \"b\": x})"
        );
        assert_eq!(one_line("f(a, [\n1,\n2\n], (x,\n))"), "f(a, [1, 2], (x,))");
    }
}
