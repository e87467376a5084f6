//! Every send of a session update: the SDK's calls, and JSON-RPC messages handed to a writer.

use super::*;
use crate::lang::tree::query::ShapeQuery;
use crate::needles::positions;
use std::sync::LazyLock;

/// `conn.sessionUpdate.bind(conn)` / `.call(..)` / `.apply(..)` (`sends.scm`), in both grammars.
static BOUND_SENDS: LazyLock<ShapeQuery> = LazyLock::new(|| {
    ShapeQuery::new(
        &[
            tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            tree_sitter_typescript::LANGUAGE_TSX.into(),
        ],
        include_str!("sends.scm"),
    )
});

/// Every SDK send of a session update in the agent's files, wrapped or not.
pub fn sends(files: &[Parsed]) -> Result<Vec<Send<'_>>> {
    let mut out: Vec<Send> = Vec::new();
    // whether an SDK call sends updates, and the messages kept inside another object (a
    // session log's `{ notification: { jsonrpc, method: "session/update", ... } }`) that
    // reach no writer: with the SDK on the wire those are records, not sends
    let mut sdk_sends = false;
    let mut records: Vec<Error> = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        // every send below names the method: `sessionUpdate`, or `session/update` as
        // `MethodNames` reads it
        let may_send = crate::needles::contains(src, "sessionUpdate")
            || may_name_method(src, "session/update");
        if !is_agent_file(p) || !may_send {
            continue;
        }
        let root = p.tree().root_node();
        let names = MethodNames::new(root, src);
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
                    .and_then(|a| names.of(*a))
                    .is_some_and(|m| m == "session/update"),
            };
            if !sdk {
                continue;
            }
            let (target, wrapped) = match unwrap_ns(obj, "emitter", src) {
                Some(inner) => (inner, true),
                None => (obj, false),
            };
            out.push(Send::new(i, c, target, wrapped, None));
            sdk_sends = true;
        }
        // `conn.sessionUpdate.bind(conn)` (and `.call` / `.apply`): the bound function sends
        // (`sends.scm`, run around each place the text names the method)
        let bound_from = out.len();
        for hit in positions(src, "sessionUpdate") {
            for m in BOUND_SENDS.matches_in(root, src, hit..hit + "sessionUpdate".len()) {
                let (call, obj) = (m.node("send"), m.node("receiver"));
                // (a call around two of the places is met at each)
                if obj.kind() == "super" || out[bound_from..].iter().any(|s| s.call == call) {
                    continue;
                }
                let (target, wrapped) = match unwrap_ns(obj, "emitter", src) {
                    Some(inner) => (inner, true),
                    None => (obj, false),
                };
                out.push(Send::new(i, call, target, wrapped, None));
                sdk_sends = true;
            }
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
                        .and_then(|v| names.of(v))
                        .is_some_and(|m| m == "session/update")
            });
            if !is_update || in_inserted_connection(obj, src) {
                continue;
            }
            if let Some(call) = writer_call(obj, src) {
                if out.iter().any(|s| s.call == call) {
                    continue;
                }
                // the literal's own `params` become the start card's
                let template = object_property(obj, "params", src).map(|params| {
                    let with = if params.kind() == "shorthand_property_identifier" {
                        format!("params: {RAW_PARAMS}")
                    } else {
                        RAW_PARAMS.to_string()
                    };
                    (params, with)
                });
                out.push(writer_send(files, i, call, template));
                continue;
            }
            // built here, written elsewhere: followed to the writer calls it reaches
            let (sinks, lost) = super::flow::follow(files, i, obj);
            if sinks.is_empty() {
                let why = crate::lang::tree::flow::lost_text(files, &lost);
                let e = Error::Unsupported {
                    file: p.file.rel.clone(),
                    line: line(obj),
                    message: format!(
                        "acp-patch followed this `session/update` message (through variables, return values, lists and loops, `JSON.stringify`) to no call that writes it{}",
                        if why.is_empty() {
                            String::new()
                        } else {
                            format!(" ({why})")
                        }
                    ),
                };
                if obj.parent().is_some_and(|pair| pair.kind() == "pair") {
                    records.push(e);
                    continue;
                }
                return Err(e);
            }
            for sink in sinks {
                if out.iter().any(|s| s.call == sink.call) {
                    continue;
                }
                let ssrc = files[sink.file].file.text.as_ref();
                let literal = crate::lang::typescript::style::restyle(
                    &format!(
                        "{{ jsonrpc: \"2.0\", method: \"session/update\", params: {RAW_PARAMS} }}"
                    ),
                    crate::lang::typescript::style::detect(
                        files[sink.file].tree().root_node(),
                        ssrc,
                    ),
                );
                out.push(writer_send(
                    files,
                    sink.file,
                    sink.call,
                    Some((sink.carried, literal)),
                ));
            }
        }
    }
    if !sdk_sends && let Some(e) = records.into_iter().next() {
        return Err(e);
    }
    // the calls inside a bundle's copy of the SDK's connection classes are the SDK's own (its
    // `sessionUpdate` writing the notification, the client side handing one to its client)
    let mut copies: Vec<(usize, Vec<(usize, usize)>)> = Vec::new();
    out.retain(|s| {
        let f = s.file();
        if !copies.iter().any(|(c, _)| *c == f) {
            let spans = super::classes::sdk_copies(&files[f])
                .into_iter()
                .map(|(c, _)| (c.start_byte(), c.end_byte()))
                .collect();
            copies.push((f, spans));
        }
        let at = s.call.start_byte();
        !copies
            .iter()
            .any(|(c, spans)| *c == f && spans.iter().any(|(a, b)| (*a..*b).contains(&at)))
    });
    out.sort_by_key(|s| (s.file(), s.call.start_byte()));
    Ok(out)
}

/// Whether a node is inside the connection acp-patch passed to `acpProgress.turn(conn, ...)`
/// (the start card's writer of an agent without an SDK): that writer is ours, not a send.
pub(super) fn in_inserted_connection(node: Node, src: &str) -> bool {
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
pub(super) fn collapse_lines(t: &str) -> String {
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
pub(super) fn writer_call<'t>(obj: Node<'t>, src: &str) -> Option<Node<'t>> {
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

/// A writer call of a JSON-RPC `session/update` message: the emitter wraps its receiver (or the
/// writer function); `template` is the node to replace, and with what, to make the start card's
/// writer from the call.
fn writer_send<'a>(
    files: &'a [Parsed],
    file: usize,
    call: Node<'a>,
    template: Option<(Node<'a>, String)>,
) -> Send<'a> {
    let src = files[file].file.text.as_ref();
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
    let raw_template = template.map(|(node, with)| {
        let before = &src[call.start_byte()..node.start_byte()];
        let after = &src[node.end_byte()..call.end_byte()];
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
    Send::new(file, call, target, wrapped, raw_template)
}

#[cfg(test)]
mod tests {
    use super::BOUND_SENDS;

    /// `sends.scm`: the bound, called or applied send method, in both grammars, and what it
    /// does not match.
    #[test]
    fn the_bound_send_query_matches_bind_call_and_apply_of_the_send_method() {
        let src = "const s = conn.sessionUpdate.bind(conn);\nthis.client.sessionUpdate.call(this.client, u);\nc().sessionUpdate.apply(c, [u]);\nsuper.sessionUpdate.bind(this);\nconn.sessionUpdate(u);\nconn.sessionUpdate.toString();\nconn.other.bind(conn);\n";
        for tsx in [false, true] {
            let tree = crate::lang::typescript::syntax::parse(src, tsx);
            let found: Vec<(String, String)> = BOUND_SENDS
                .matches_in(tree.root_node(), src, 0..src.len())
                .iter()
                .map(|m| {
                    let t = |n: tree_sitter::Node| src[n.byte_range()].to_string();
                    (t(m.node("receiver")), t(m.node("how")))
                })
                .collect();
            assert_eq!(
                found,
                [
                    ("conn", "bind"),
                    ("this.client", "call"),
                    ("c()", "apply"),
                    ("super", "bind"),
                ]
                .map(|(r, h)| (r.to_string(), h.to_string())),
                "tsx: {tsx}"
            );
        }
    }
}
