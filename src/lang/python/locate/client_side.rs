//! A `prompt` method on the client's side although its class is no client itself: it hands
//! the prompt on to a client it holds (a session proxy or a turn service of a client library
//! the agent ships beside itself, as hrns 0.0.1 does). The SDK never calls it.

use super::At;
use super::wire::annotated_classes;
use crate::lang::parts::Parsed;
use crate::lang::python::syntax::*;
use tree_sitter::Node;

/// Whether `prompt` (a method), or a method of its class it calls (two calls deep), calls
/// `.prompt(..)` on a client its class holds, read as `self.<attr>` (or a path under it) or
/// through a local bound to it. The class holds a client
/// in an attribute `__init__` sets from a parameter whose annotation names a class `is_client`
/// accepts (by name, from the method's file) or the SDK's `ClientSideConnection`, or in one any
/// of its methods sets to such a class built there (`self._acp = AcpClient()`, also through a
/// local: `acp = AcpClient(); self._acp = acp`): the client library's session classes of
/// codebuddy-cloud-agent-sdk 0.3.4 hold the library's own client so.
pub(super) fn forwards_to_a_client(
    files: &[Parsed],
    prompt: At,
    is_client: &dyn Fn(&str, usize) -> bool,
) -> bool {
    let src = files[prompt.file].file.text.as_ref();
    let Some(class) = enclosing_class(prompt.node) else {
        return false;
    };
    let a_client = |name: &str| name == "ClientSideConnection" || is_client(name, prompt.file);
    let mut attrs: Vec<&str> = Vec::new();
    if let Some(init) = methods(class)
        .into_iter()
        .find(|m| name_of(*m, src) == "__init__")
    {
        let clients: Vec<String> = parameters(init, src)
            .into_iter()
            .filter(|(_, p)| {
                p.child_by_field_name("type").is_some_and(|t| {
                    annotated_classes(t, src)
                        .into_iter()
                        .any(|(_, class)| a_client(class))
                })
            })
            .map(|(name, _)| name)
            .collect();
        // `self.client = client`
        attrs.extend(self_attributes_set(init, src, |right| {
            right.kind() == "identifier" && clients.iter().any(|c| c == text(right, src))
        }));
    }
    for m in methods(class) {
        // the locals of the method bound to a client built there
        let built = |n: Node| n.kind() == "call" && a_client(callee_name(n, src));
        let locals: Vec<&str> = descendants_same_scope(m, "assignment")
            .into_iter()
            .filter_map(|a| {
                let (l, r) = (
                    a.child_by_field_name("left")?,
                    a.child_by_field_name("right")?,
                );
                (l.kind() == "identifier" && built(unawait(r))).then(|| text(l, src))
            })
            .collect();
        attrs.extend(self_attributes_set(m, src, |right| {
            let right = unawait(right);
            built(right) || (right.kind() == "identifier" && locals.contains(&text(right, src)))
        }));
    }
    if attrs.is_empty() {
        return false;
    }
    // the prompt's own code, and the methods of its class it hands the prompt to
    // (`return await self._prompt(input, opts)`: managed-agent-sdk 0.0.5), two calls deep
    let mut bodies: Vec<Node> = prompt
        .node
        .child_by_field_name("body")
        .into_iter()
        .collect();
    let mut k = 0;
    while k < bodies.len() && bodies.len() < 8 {
        for call in descendants_same_scope(bodies[k], "call") {
            if callee_object(call, src) == Some("self")
                && let Some(m) = methods(class)
                    .into_iter()
                    .find(|m| name_of(*m, src) == callee_name(call, src))
                && let Some(b) = m.child_by_field_name("body")
                && m != prompt.node
                && !bodies.contains(&b)
                && k < 2
            {
                bodies.push(b);
            }
        }
        k += 1;
    }
    bodies
        .into_iter()
        .any(|body| hands_on_the_prompt(body, &attrs, src))
}

/// Whether `body` calls `.prompt(..)` on one of `attrs` (`self.client`), on a path under one,
/// or on a local bound to one (`client = self.client`).
fn hands_on_the_prompt(body: Node, attrs: &[&str], src: &str) -> bool {
    let mut held: Vec<&str> = attrs.to_vec();
    for a in descendants_same_scope(body, "assignment") {
        if let (Some(left), Some(right)) = (
            a.child_by_field_name("left"),
            a.child_by_field_name("right"),
        ) && left.kind() == "identifier"
            && attrs.contains(&text(right, src))
        {
            held.push(text(left, src));
        }
    }
    descendants_same_scope(body, "call")
        .into_iter()
        .any(|call| {
            callee_name(call, src) == "prompt"
                && callee_object(call, src).is_some_and(|o| {
                    held.iter().any(|h| {
                        o == *h || o.strip_prefix(*h).is_some_and(|rest| rest.starts_with('.'))
                    })
                })
        })
}

/// The attributes of `self` a method sets (`self.<attr> = <right>`) to a value `admits`.
fn self_attributes_set<'t>(
    method: Node<'t>,
    src: &'t str,
    admits: impl Fn(Node<'t>) -> bool,
) -> Vec<&'t str> {
    descendants_same_scope(method, "assignment")
        .into_iter()
        .filter_map(|a| {
            let (left, right) = (
                a.child_by_field_name("left")?,
                a.child_by_field_name("right")?,
            );
            let on_self = left.kind() == "attribute"
                && left
                    .child_by_field_name("object")
                    .is_some_and(|o| text(o, src) == "self");
            (on_self && admits(right)).then(|| text(left, src))
        })
        .collect()
}

/// `await x` → `x`.
fn unawait(n: Node) -> Node {
    if n.kind() == "await" {
        n.named_child(0).unwrap_or(n)
    } else {
        n
    }
}
