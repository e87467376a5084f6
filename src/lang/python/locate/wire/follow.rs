//! Every write of a `session/update` message: the message built as a dict (a literal with
//! `"method": "session/update"`, or `dict(method=...)`) and followed through variables, return
//! values, lists and loops, `json.dumps`, `.encode()` and f-strings to the call that writes it;
//! or a writer that takes the method as an argument and the params beside it
//! (`server.write_notification(METHOD_SESSION_UPDATE, {...})`; a call whose value is used is a
//! builder of the message, followed the same way).

use super::methods::{Method, string_value};
use super::resolve::{calls_of, resolve_callable};
use crate::lang::parts::Parsed;
use crate::lang::python::RUNTIME_NAME;
use crate::lang::python::syntax::*;
use crate::lang::tree::flow::{self, Bind, Lost, Parameter, Rules};
use tree_sitter::Node;

/// A writer call a `session/update` message reaches, and the node of its arguments that
/// carries it.
pub struct Sink<'a> {
    pub file: usize,
    pub call: Node<'a>,
    /// The message (or, with `method`, its params).
    pub carried: Node<'a>,
    /// The argument naming the method, when the writer takes the method and the params apart.
    pub method: Option<Node<'a>>,
    /// The call that built the message, as the card's writer calls it (see
    /// [`super::writer::card_built_by`]),
    /// when the writer is handed an object of it serialised ([`serialised`]).
    pub built: Option<String>,
}

/// Where a `session/update` message is built.
pub struct Origin<'a> {
    pub node: Node<'a>,
    /// The call itself, when it takes the method and the params as arguments: the writer when
    /// its value is not used (or leads to no other writer).
    pub writer: Option<Sink<'a>>,
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

/// Every `session/update` message built in file `i`.
pub fn origins<'a>(files: &'a [Parsed], i: usize, update: &Method<'a>) -> Vec<Origin<'a>> {
    let src = files[i].file.text.as_ref();
    let mut out: Vec<Origin<'a>> = Vec::new();
    for m in update.mentions(i) {
        if in_inserted_decorator(m, src) {
            continue;
        }
        let Some(parent) = m.parent() else { continue };
        match parent.kind() {
            // `{"jsonrpc": "2.0", "method": "session/update", ...}`
            "pair"
                if parent.child_by_field_name("value") == Some(m)
                    && parent
                        .child_by_field_name("key")
                        .and_then(|k| string_value(k, src))
                        == Some("method") =>
            {
                if let Some(d) = parent.parent().filter(|d| d.kind() == "dictionary") {
                    out.push(Origin {
                        node: d,
                        writer: None,
                    });
                }
            }
            "keyword_argument" | "argument_list" => {
                let call = if parent.kind() == "keyword_argument" {
                    parent.parent().and_then(|a| a.parent())
                } else {
                    parent.parent()
                };
                let Some(call) = call.filter(|c| c.kind() == "call") else {
                    continue;
                };
                let keyword = (parent.kind() == "keyword_argument")
                    .then(|| parent.child_by_field_name("name"))
                    .flatten()
                    .map(|n| text(n, src));
                // `dict(method="session/update", ...)`
                if callee_name(call, src) == "dict" {
                    if keyword == Some("method") {
                        out.push(Origin {
                            node: call,
                            writer: None,
                        });
                    }
                    continue;
                }
                if let Some(params) = params_beside(call, m, keyword, src) {
                    out.push(Origin {
                        node: call,
                        writer: Some(Sink {
                            file: i,
                            call,
                            carried: params,
                            method: Some(m),
                            built: None,
                        }),
                    });
                }
            }
            _ => {}
        }
    }
    out
}

/// The params argument of a call that takes the method as an argument: the positional
/// argument after it, or `params=`.
fn params_beside<'a>(
    call: Node<'a>,
    method: Node<'a>,
    keyword: Option<&str>,
    src: &str,
) -> Option<Node<'a>> {
    if let Some(p) = keyword_arg(call, "params", src).and_then(|k| k.child_by_field_name("value")) {
        return Some(p);
    }
    if keyword.is_some() {
        return None;
    }
    let args = positional_args(call);
    let k = args.iter().position(|a| *a == method)?;
    args.get(k + 1).copied()
}

/// Whether a call's value is dropped (`writer(...)` as a statement, awaited or not).
pub fn value_dropped(call: Node) -> bool {
    let mut cur = call;
    while let Some(p) = cur.parent() {
        match p.kind() {
            "await" | "parenthesized_expression" => cur = p,
            "expression_statement" => return true,
            _ => return false,
        }
    }
    false
}

/// How a message's way reads in Python's tree (the walk is `tree::flow`'s).
static RULES: Rules = Rules {
    // an f-string around its JSON text, `message or default`, `await`
    through: &[
        "parenthesized_expression",
        "await",
        "binary_operator",
        "interpolation",
        "string",
    ],
    arguments: &[("argument_list", 1), ("keyword_argument", 2)],
    calls: &["call"],
    functions: &["function_definition"],
    binds: &[Bind {
        kind: "assignment",
        value: "right",
        name: "left",
        lost: "a message stored in an attribute or a pattern",
    }],
    returns: "return_statement",
    expression_bodies: &[],
    collections: &["list", "tuple"],
    loops: &[("for_statement", "right", "left")],
    statement: "expression_statement",
    not_reads: &[
        ("assignment", Some("left")),
        ("for_statement", Some("left")),
        ("attribute", Some("attribute")),
        ("keyword_argument", None),
    ],
    encoder,
    calls_of,
    parameter,
    loop_names,
};

/// `json.dumps(message)`, `json.dumps(message).encode()`, and a message object serialised
/// where it is handed on: a method of it called without positional arguments as an argument
/// of a call (`write(note.model_dump(exclude_none=True))`, `send(msg.to_dict())`).
fn encoder<'a>(parent: Node<'a>, src: &str) -> Option<Node<'a>> {
    match parent.kind() {
        "argument_list" => parent.parent().filter(|c| callee_name(*c, src) == "dumps"),
        "attribute"
            if parent
                .child_by_field_name("attribute")
                .is_some_and(|a| text(a, src) == "encode") =>
        {
            parent.parent().filter(|c| c.kind() == "call")
        }
        "attribute" => serialiser(parent),
        _ => None,
    }
}

/// The call `x.method(...)` an attribute `x.method` is the callee of, when it takes no
/// positional argument and its value is an argument of another call.
fn serialiser(attribute: Node) -> Option<Node> {
    let call = attribute
        .parent()
        .filter(|c| c.kind() == "call")
        .filter(|c| c.child_by_field_name("function") == Some(attribute))?;
    let handed = call
        .parent()
        .is_some_and(|p| matches!(p.kind(), "argument_list" | "keyword_argument"));
    (handed && positional_args(call).is_empty()).then_some(call)
}

/// Whether the message a sink carries is an object serialised in the writer's argument
/// (`note.model_dump(...)`): what stands for it in the card's writer must be such an object.
pub fn serialised(carried: Node) -> bool {
    carried.parent().is_some_and(|a| {
        a.kind() == "attribute"
            && a.child_by_field_name("object") == Some(carried)
            && serialiser(a).is_some()
    })
}

fn parameter<'a>(
    files: &'a [Parsed],
    file: usize,
    call: Node<'a>,
    arg: Node<'a>,
) -> Result<Parameter<'a>, &'static str> {
    let k = positional_args(call)
        .iter()
        .position(|a| *a == arg)
        .unwrap_or(0);
    let callee = call.child_by_field_name("function");
    let f = callee
            .and_then(|f| resolve_callable(files, file, f))
            .ok_or("a list of messages handed to a call acp-patch cannot follow (the writer takes one message at a time)")?;
    let params = parameters(f.node, &files[f.file].file.text);
    // `self` is not an argument of `obj.method(...)`
    let skip = usize::from(
        params.first().is_some_and(|(n, _)| n == "self")
            && callee.is_some_and(|x| x.kind() == "attribute"),
    );
    params
        .get(k + skip)
        .map(|(name, decl)| (f.file, name.clone(), *decl))
        .ok_or("a list of messages handed to a function without that parameter")
}

fn loop_names<'a>(var: Node<'a>, src: &str) -> Vec<(String, Node<'a>)> {
    match var.kind() {
        "identifier" => vec![(text(var, src).to_string(), var)],
        _ => Vec::new(),
    }
}

/// Follows a message to the calls that write it.
pub fn follow<'a>(
    files: &'a [Parsed],
    file: usize,
    origin: Node<'a>,
) -> (Vec<Sink<'a>>, Vec<Lost>) {
    let (sinks, lost) = flow::follow(&RULES, files, file, origin);
    let sinks = sinks
        .into_iter()
        .map(|s| Sink {
            file: s.file,
            call: s.call,
            carried: s.carried,
            method: None,
            built: None,
        })
        .collect();
    (sinks, lost)
}

#[cfg(test)]
mod tests {
    use super::super::methods::Method;
    use super::super::resolve::tree;
    use super::super::writer::card_built_by;
    use super::{follow, origins, serialised, value_dropped};
    use crate::lang::python::syntax::text;

    /// The writer calls of every `session/update` of a file, and what each carries.
    fn writes(src: &str) -> Vec<(String, String, Option<String>)> {
        built_writes(src)
            .into_iter()
            .map(|(w, c, m, _)| (w, c, m))
            .collect()
    }

    /// [`writes`], with the card's message built the agent's way where it is.
    fn built_writes(src: &str) -> Vec<(String, String, Option<String>, Option<String>)> {
        let files = tree(&[("m.py", src)]);
        let update = Method::of(&files, "session/update");
        let mut out = Vec::new();
        for o in origins(&files, 0, &update) {
            let mut found = match &o.writer {
                Some(_) if value_dropped(o.node) => Vec::new(),
                _ => follow(&files, 0, o.node).0,
            };
            if let Some(builder) = &o.writer {
                for sink in found.iter_mut().filter(|s| serialised(s.carried)) {
                    sink.built = card_built_by(src, builder);
                }
            }
            if found.is_empty()
                && let Some(w) = o.writer
            {
                found.push(w);
            }
            for s in found {
                out.push((
                    text(s.call, src).to_string(),
                    text(s.carried, src).to_string(),
                    s.method.map(|m| text(m, src).to_string()),
                    s.built,
                ));
            }
        }
        out
    }

    #[test]
    fn a_writer_taking_the_method_and_the_params_apart_writes_them() {
        let got = writes(
            "UPDATE = \"session/update\"\n\
             def send(server, sid, u):\n    server.notify(UPDATE, {\"sessionId\": sid, \"update\": u})\n\
             def send_kw(out, done):\n    out(method=UPDATE, params=done)\n\
             def log(logger):\n    logger.info(\"session/update\")\n",
        );
        assert_eq!(
            got,
            [
                (
                    "server.notify(UPDATE, {\"sessionId\": sid, \"update\": u})".into(),
                    "{\"sessionId\": sid, \"update\": u}".into(),
                    Some("UPDATE".into())
                ),
                (
                    "out(method=UPDATE, params=done)".into(),
                    "done".into(),
                    Some("UPDATE".into())
                ),
            ]
        );
    }

    #[test]
    fn a_builder_taking_the_method_is_followed_to_the_call_that_writes_its_message() {
        let got = writes(
            "def note(method, params):\n    return {\"jsonrpc\": \"2.0\", \"method\": method, \"params\": params}\n\
             def send(w, sid, u):\n    message = note(\"session/update\", {\"sessionId\": sid, \"update\": u})\n    w.write(message)\n\
             def direct(srv, p):\n    return srv.notify(\"session/update\", p)\n",
        );
        assert_eq!(
            got,
            [
                ("w.write(message)".into(), "message".into(), None),
                (
                    "srv.notify(\"session/update\", p)".into(),
                    "p".into(),
                    Some("\"session/update\"".into())
                ),
            ]
        );
    }

    /// A message object built by a call taking the method (by keyword or positionally),
    /// serialised where the agent's writer is handed it: the writer is that call, and the
    /// card's message is built by the same builder; a method call with arguments is no
    /// serialisation, and a builder's value dropped is the writer as before.
    #[test]
    fn a_built_message_serialised_into_the_writer_is_written_there() {
        let got = built_writes(
            "M = \"session/update\"\n\
             class A:\n    def send(self, sid, u):\n        note = build(method=M, params={\"sessionId\": sid, \"update\": u})\n        self._write(note.dump(exclude_none=True))\n\
             \n    def send2(self, sid, u):\n        m = build(M, {\"sessionId\": sid, \"update\": u}, id=None)\n        self._write(json.dumps(m.to_dict()))\n\
             \n    def lost(self, sid, u):\n        m = build(M, {\"sessionId\": sid})\n        self._write(m.get(\"x\"))\n",
        );
        assert_eq!(
            got,
            [
                (
                    "self._write(note.dump(exclude_none=True))".into(),
                    "note".into(),
                    None,
                    Some("build(method=\"session/update\", params=acp_params)".into())
                ),
                (
                    "self._write(json.dumps(m.to_dict()))".into(),
                    "m".into(),
                    None,
                    Some("build(\"session/update\", acp_params, id=None)".into())
                ),
                // `m.get("x")` is no serialisation of the message: the builder is the writer
                (
                    "build(M, {\"sessionId\": sid})".into(),
                    "{\"sessionId\": sid}".into(),
                    Some("M".into()),
                    None
                ),
            ]
        );
    }
}
