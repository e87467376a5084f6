//! Every SDK send of a session update wherever it sits (`conn.session_update(..)`, an alias of
//! it, a `getattr(conn, "session_update")`), and the emitter that wraps one.

use super::At;
use super::found::{Send, is_agent_file};
use crate::lang::parts::Parsed;
use crate::lang::python::RUNTIME_NAME;
use crate::lang::python::syntax::*;
use crate::lang::tree::query::ShapeQuery;
use crate::needles::positions;
use std::sync::LazyLock;
use tree_sitter::Node;

/// SDK methods that put a session update on the wire (>= 0.7, <= 0.6).
const SEND_METHODS: &[&str] = &["session_update", "sessionUpdate"];

/// `<receiver>.session_update(...)`: the send call's shape (`sends.scm`).
static SEND_CALLS: LazyLock<ShapeQuery> = LazyLock::new(|| {
    ShapeQuery::new(
        &[tree_sitter_python::LANGUAGE.into()],
        include_str!("sends.scm"),
    )
});

/// Whether a text may hold a send (a literal test that spares the parse): the method as an
/// attribute that is called (`conn.session_update(..)`) or is the whole right side of an
/// assignment (`send = conn.session_update`), or named in a string inside a `getattr(` call
/// (a key `"session_update"` of some dict, a field `x.session_update is None`, are none).
fn may_send(src: &str) -> bool {
    // one pass for "is either name there at all" (most modules: no), then each form
    static NAMED: LazyLock<crate::needles::Needles> =
        LazyLock::new(|| crate::needles::Needles::new(SEND_METHODS));
    NAMED.any_in(src)
        && SEND_METHODS.iter().any(|m| {
            positions(src, &format!(".{m}")).any(|i| {
                let after = src[i + 1 + m.len()..].trim_start_matches([' ', '\t']);
                after.is_empty() || after.starts_with(['(', '\n', '\r', ';', '#', '\\'])
            }) || ['"', '\'']
                .iter()
                .any(|q| positions(src, &format!("{q}{m}{q}")).any(|i| inside_getattr(&src[..i])))
        })
}

/// Whether the text ends inside the arguments of a `getattr(` call: the parentheses after its
/// last `getattr(` never close it.
fn inside_getattr(before: &str) -> bool {
    let Some(start) = before.rfind("getattr(") else {
        return false;
    };
    let mut depth = 1;
    for b in before[start + "getattr(".len()..].bytes() {
        match b {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return false;
        }
    }
    true
}

/// Every SDK send of a session update in the agent's files. In a copy of the SDK shipped
/// inside the agent, the module of the client's connection holds none: its `session_update`
/// calls hand an update the client received to the client's handler (agentpool 2.9.18,
/// llmling-agent 1.17.1).
pub(super) fn sends<'a>(files: &'a [Parsed]) -> Vec<Send<'a>> {
    let mut out = Vec::new();
    let vendored = crate::lang::python::package::vendored_sdk(files);
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        if !is_agent_file(p) || !may_send(src) {
            continue;
        }
        if vendored
            .iter()
            .any(|dir| p.file.rel.starts_with(dir.as_str()))
            && crate::needles::contains(src, "class ClientSideConnection")
            && !crate::needles::contains(src, "class AgentSideConnection")
        {
            continue;
        }
        // every match holds a send method's name: only the nodes around each are searched
        // (each hit's ancestors, not the whole file), in the order of a walk of the tree
        let mut matches: Vec<_> = SEND_METHODS
            .iter()
            .flat_map(|m| positions(src, m).map(|i| i..i + m.len()))
            .flat_map(|hit| SEND_CALLS.matches_in(p.tree().root_node(), src, hit))
            .collect();
        matches.sort_by_key(|m| {
            let n = m.node("send");
            (n.start_byte(), std::cmp::Reverse(n.end_byte()))
        });
        matches.dedup_by_key(|m| m.node("send").id());
        for m in matches {
            let (call, receiver) = (m.node("send"), m.node("receiver"));
            if receiver.kind() == "call" && callee_name(receiver, src) == "super" {
                continue;
            }
            out.push(Send::new(
                At {
                    file: i,
                    node: call,
                },
                receiver,
                is_emitter_call(receiver, src),
                false,
            ));
        }
        // the send method taken as a value and called through the name it is bound to:
        // `sender = getattr(conn, "session_update", None)` … `await sender(..)`, `send =
        // conn.session_update` … `send(..)` (a value never called, e.g. an update's
        // `session_update` field read as its kind, is no send)
        let root = p.tree().root_node();
        for call in around_names(root, src, |n| {
            // `"session_update"` → its string → the arguments → their call
            let string = if n.kind() == "string" { n } else { n.parent()? };
            let call = string.parent()?.parent()?;
            (call.kind() == "call").then_some(call)
        }) {
            if callee_name(call, src) != "getattr" {
                continue;
            }
            let args = positional_args(call);
            if callee_object(call, src).is_some()
                || !(2..=3).contains(&args.len())
                || !string_literal(args[1], src).is_some_and(|m| SEND_METHODS.contains(&m))
                || !called_alias(call, src)
            {
                continue;
            }
            out.push(Send::new(
                At {
                    file: i,
                    node: call,
                },
                args[0],
                is_emitter_call(args[0], src),
                false,
            ));
        }
        for a in around_names(root, src, |n| {
            n.parent().filter(|a| a.kind() == "attribute")
        }) {
            let method = a.child_by_field_name("attribute").map(|m| text(m, src));
            let Some(receiver) = a.child_by_field_name("object") else {
                continue;
            };
            let parent = a.parent();
            let called = parent.is_some_and(|c| {
                c.kind() == "call" && c.child_by_field_name("function") == Some(a)
            });
            let assigned = parent.is_some_and(|c| {
                matches!(c.kind(), "assignment" | "augmented_assignment")
                    && c.child_by_field_name("left") == Some(a)
            });
            if called
                || assigned
                || !method.is_some_and(|m| SEND_METHODS.contains(&m))
                || (receiver.kind() == "call" && callee_name(receiver, src) == "super")
                || !called_alias(a, src)
            {
                continue;
            }
            out.push(Send::new(
                At { file: i, node: a },
                receiver,
                is_emitter_call(receiver, src),
                false,
            ));
        }
    }
    out
}

/// The nodes `climb` reaches from where a send method's name is written (the smallest node
/// around each), once each, in the order of a walk of the tree: a few nodes around each
/// literal hit are read instead of every node of a long module.
fn around_names<'t>(
    root: Node<'t>,
    src: &str,
    climb: impl Fn(Node<'t>) -> Option<Node<'t>>,
) -> Vec<Node<'t>> {
    let mut found: Vec<Node> = SEND_METHODS
        .iter()
        .flat_map(|m| positions(src, m).map(|i| i..i + m.len()))
        .filter_map(|hit| climb(root.descendant_for_byte_range(hit.start, hit.end)?))
        .collect();
    found.sort_by_key(|n| (n.start_byte(), std::cmp::Reverse(n.end_byte())));
    found.dedup_by_key(|n| n.id());
    found
}

/// Whether `value` is assigned to a plain name (`name = <value>`) that the same function (or
/// module) then calls: `name(..)`.
fn called_alias(value: Node, src: &str) -> bool {
    let Some(assignment) = value
        .parent()
        .filter(|a| a.kind() == "assignment" && a.child_by_field_name("right") == Some(value))
    else {
        return false;
    };
    let Some(name) = assignment
        .child_by_field_name("left")
        .filter(|l| l.kind() == "identifier")
        .map(|l| text(l, src))
    else {
        return false;
    };
    let scope = enclosing_function(value)
        .and_then(|f| f.child_by_field_name("body"))
        .unwrap_or_else(|| top_level(value).parent().unwrap_or(value));
    descendants_same_scope(scope, "call").into_iter().any(|c| {
        c.child_by_field_name("function")
            .is_some_and(|f| f.kind() == "identifier" && text(f, src) == name)
    })
}

/// The value of a plain string literal (`"x"`, `'x'`), no prefix or interpolation.
fn string_literal<'a>(node: Node, src: &'a str) -> Option<&'a str> {
    if node.kind() != "string" {
        return None;
    }
    let t = text(node, src);
    let inner = t
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| t.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))?;
    (!inner.contains(['"', '\'', '\\', '{'])).then_some(inner)
}

/// `acp_progress.emitter(x)`.
pub fn is_emitter_call(node: Node, src: &str) -> bool {
    node.kind() == "call"
        && callee_name(node, src) == "emitter"
        && callee_object(node, src) == Some(RUNTIME_NAME)
}

/// The function (qualified name) a node is in, or `<module>`.
pub fn function_name(node: Node, src: &str) -> String {
    enclosing_function(node)
        .map(|f| qualified_name(f, src))
        .unwrap_or_else(|| "<module>".into())
}

#[cfg(test)]
mod tests {
    use super::{SEND_CALLS, SEND_METHODS, may_send};

    /// A send method taken as a value and then called is a send where it is taken (a
    /// `getattr` with the method's name, an attribute assigned to a name); one never called,
    /// a `getattr` of another name and a method's name in a plain string are none.
    #[test]
    fn a_send_method_taken_as_a_value_and_called_is_a_send() {
        let src = "async def prompt(self, conn):\n    sender = getattr(conn, \"session_update\", None)\n    await sender(u)\n    send = conn.sessionUpdate\n    send(u)\n    other = getattr(conn, \"close\")\n    other()\n    kind = update.session_update\n    log(\"session_update\")\n";
        let file = crate::source::SourceFile::decode(
            "agent.py".into(),
            "agent.py".into(),
            src.as_bytes().to_vec(),
        )
        .unwrap();
        let files = [crate::lang::python::parsed(file)];
        let found: Vec<&str> = super::sends(&files)
            .iter()
            .map(|s| &src[s.call.byte_range()])
            .collect();
        assert_eq!(
            found,
            [
                "getattr(conn, \"session_update\", None)",
                "conn.sessionUpdate"
            ]
        );
    }

    /// The sends found around each literal hit come out once each, outer before inner, as a
    /// walk of the tree meets them; `super()`'s is left alone.
    #[test]
    fn sends_are_found_once_each_in_the_order_of_the_tree() {
        let src = "async def prompt(self, conn):\n    await conn.session_update(b.session_update(x))\n    super().session_update(u)\n    await c.sessionUpdate(u); d.session_update(v)\n";
        let file = crate::source::SourceFile::decode(
            "agent.py".into(),
            "agent.py".into(),
            src.as_bytes().to_vec(),
        )
        .unwrap();
        let files = [crate::lang::python::parsed(file)];
        let found: Vec<&str> = super::sends(&files)
            .iter()
            .map(|s| &src[s.call.byte_range()])
            .collect();
        assert_eq!(
            found,
            [
                "conn.session_update(b.session_update(x))",
                "b.session_update(x)",
                "c.sessionUpdate(u)",
                "d.session_update(v)",
            ]
        );
    }

    /// `sends.scm`: what it matches (the send, its receiver) and what it does not.
    #[test]
    fn the_send_query_matches_a_called_send_method_on_any_receiver() {
        let src = "async def prompt(self, conn):\n    await self._conn.session_update(session_id=s, update=u)\n    conn.sessionUpdate(u)\n    make().session_update(u)\n    super().session_update(u)\n    conn.session_updated(u)\n    session_update(u)\n    f = conn.session_update\n";
        let tree = crate::lang::python::syntax::parse(src);
        let found: Vec<(String, String)> = SEND_CALLS
            .matches_in(tree.root_node(), src, 0..src.len())
            .iter()
            .map(|m| {
                let t = |n: tree_sitter::Node| src[n.byte_range()].to_string();
                (t(m.node("receiver")), t(m.node("method")))
            })
            .collect();
        assert_eq!(
            found,
            [
                ("self._conn", "session_update"),
                ("conn", "sessionUpdate"),
                ("make()", "session_update"),
                ("super()", "session_update"),
            ]
            .map(|(r, m)| (r.to_string(), m.to_string()))
        );
        // the query names the same methods as the literal prefilter
        for m in SEND_METHODS {
            assert!(
                include_str!("sends.scm").contains(&format!("\"{m}\"")),
                "{m}"
            );
        }
    }

    #[test]
    fn a_text_may_send_when_the_method_is_an_attribute_or_a_string_given_to_getattr() {
        assert!(may_send(
            "await self._conn.session_update(session_id=s, update=u)"
        ));
        assert!(may_send("send = conn.sessionUpdate\n"));
        assert!(may_send("s = getattr(conn, \"session_update\", None)"));
        assert!(may_send(
            "s = getattr(\n    self.clients[(a, b)],\n    'session_update',\n)"
        ));
        // a key of some dict, a string after a closed getattr call
        assert!(!may_send(
            "ROUTES = {\"session_update\": {\"method\": \"PATCH\"}}"
        ));
        assert!(!may_send(
            "x = getattr(a, 'b')\nROUTES = {'session_update': 1}"
        ));
        assert!(!may_send("def session_update(self): ..."));
        assert!(may_send("await conn.session_update (u)"));
        assert!(may_send(
            "send = conn.session_update  # bound once\nawait send(u)"
        ));
        assert!(may_send("send = conn.session_update"));
        assert!(!may_send(
            "if out.session_update is not None:\n    f(out.session_update)\n"
        ));
        assert!(!may_send("x.session_updated = 1"));
    }
}
