//! A `prompt` method on the client's side although its class is no client itself: it hands
//! the prompt on to a client it holds (a session proxy or a turn service of a client library
//! the agent ships beside itself, as hrns 0.0.1 does). The SDK never calls it.

use super::At;
use super::wire::annotated_classes;
use crate::lang::parts::Parsed;
use crate::lang::python::syntax::*;

/// Whether `prompt` (a method) calls `.prompt(..)` on a client its class holds: an attribute
/// `__init__` sets from a parameter whose annotation names a class `is_client` accepts (by
/// name, from the method's file) or the SDK's `ClientSideConnection`, read as `self.<attr>`
/// (or a path under it) or through a local bound to it.
pub(super) fn forwards_to_a_client(
    files: &[Parsed],
    prompt: At,
    is_client: &dyn Fn(&str, usize) -> bool,
) -> bool {
    let src = files[prompt.file].file.text.as_ref();
    let Some(class) = enclosing_class(prompt.node) else {
        return false;
    };
    let Some(init) = methods(class)
        .into_iter()
        .find(|m| name_of(*m, src) == "__init__")
    else {
        return false;
    };
    let clients: Vec<String> = parameters(init, src)
        .into_iter()
        .filter(|(_, p)| {
            p.child_by_field_name("type").is_some_and(|t| {
                annotated_classes(t, src).into_iter().any(|(_, class)| {
                    class == "ClientSideConnection" || is_client(class, prompt.file)
                })
            })
        })
        .map(|(name, _)| name)
        .collect();
    let Some(init_body) = init.child_by_field_name("body") else {
        return false;
    };
    // `self.client = client`
    let attrs: Vec<&str> = descendants(init_body, "assignment")
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
            (on_self
                && right.kind() == "identifier"
                && clients.iter().any(|c| c == text(right, src)))
            .then(|| text(left, src))
        })
        .collect();
    let Some(body) = prompt.node.child_by_field_name("body") else {
        return false;
    };
    if attrs.is_empty() {
        return false;
    }
    // and the locals bound to one: `client = self.client`
    let mut held: Vec<&str> = attrs.clone();
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
