//! Where the card's connection comes from in an agent class: the one the SDK hands over in
//! `on_connect(self, conn)` (stored as `self.<attr>`, or bound there when the agent keeps it
//! nowhere readable), else the `__init__` parameter its sends use, else the one
//! `self.<attr>` its own sends go through; a `connection` pin picks among the same candidates.

use super::found::{Classes, Conn, Reach, Send};
use super::{At, candidate, pin_mismatch};
use crate::config::{Pin, PythonPins};
use crate::error::{Candidate, Error, Result};
use crate::lang::parts::Parsed;
use crate::lang::python::syntax::*;
use tree_sitter::Node;

/// Where a handler class gets its connection: `on_connect(self, conn)` storing it as
/// `self.<attr>` (else a binding is inserted there); else `__init__` storing a parameter its
/// sends use; else the one `self.<attr>` its own sends go through. A `connection` pin
/// (`file.py:Class.attr` or `file.py:Class.on_connect`) picks among the same candidates.
pub(super) fn connection<'a>(
    decisions: &crate::lang::survey::Decisions,
    files: &'a [Parsed],
    classes: &Classes<'a>,
    class: At<'a>,
    sends: &[Send<'a>],
    pins: &PythonPins,
) -> Result<Conn<'a>> {
    let src = &files[class.file].file.text;
    let class_name = name_of(class.node, src).to_string();
    let mut found: Vec<(Conn<'a>, Candidate)> = Vec::new();
    let push = |c: Conn<'a>, found: &mut Vec<(Conn<'a>, Candidate)>| {
        let name = c.anchor.pin.clone().unwrap_or_else(|| class_name.clone());
        let cand = candidate(files, c.at, name);
        if !found.iter().any(|(_, c)| c.name == cand.name) {
            found.push((c, cand));
        }
    };
    // the attributes this class's own sends go through
    let own_receivers: Vec<(String, At<'a>)> = sends
        .iter()
        .filter(|s| {
            s.anchor.site.file == class.file
                && class.node.byte_range().contains(&s.anchor.site.range.start)
        })
        .filter_map(|s| {
            let recv = if s.anchor.wrapped {
                positional_args(s.receiver).first().copied()?
            } else {
                s.receiver
            };
            self_attribute(recv, src).map(|a| (a, s.at()))
        })
        .collect();
    if let Some(m) = classes.method(files, class, "on_connect") {
        let msrc = &files[m.file].file.text;
        if let Some((param, _)) = parameters(m.node, msrc).get(1).cloned() {
            let me = parameters(m.node, msrc)
                .first()
                .map(|(n, _)| n.clone())
                .unwrap_or_default();
            match stored_as(m.node, &me, &param, msrc) {
                Some((attr, at)) => push(
                    Conn::attribute(
                        At {
                            file: m.file,
                            node: at,
                        },
                        &class_name,
                        attr,
                        "from on_connect",
                    ),
                    &mut found,
                ),
                None => push(Conn::bind(m, &class_name, param), &mut found),
            }
        }
    }
    if let Some(init) = classes.method(files, class, "__init__") {
        let isrc = &files[init.file].file.text;
        let params = parameters(init.node, isrc);
        let me = params.first().map(|(n, _)| n.clone()).unwrap_or_default();
        for (param, _) in params.iter().skip(1) {
            if let Some((attr, at)) = stored_as(init.node, &me, param, isrc)
                && own_receivers.iter().any(|(a, _)| *a == attr)
            {
                push(
                    Conn::attribute(
                        At {
                            file: init.file,
                            node: at,
                        },
                        &class_name,
                        attr,
                        "from __init__",
                    ),
                    &mut found,
                );
            }
        }
    }
    let mut distinct: Vec<&(String, At)> = Vec::new();
    for r in &own_receivers {
        if !distinct.iter().any(|d| d.0 == r.0) {
            distinct.push(r);
        }
    }
    for (attr, at) in &distinct {
        push(
            Conn::attribute(*at, &class_name, attr.clone(), "used by the agent's sends"),
            &mut found,
        );
    }
    let auto_ok = !found.is_empty()
        && (matches!(found[0].0.reach, Reach::Bind { .. })
            || matches!(found[0].0.reach, Reach::Attribute { how, .. } if how != "used by the agent's sends")
            || distinct.len() == 1);
    let pin = pins.connection.as_ref().map(|p| Pin::parse(p));
    if let Some(pin) = pin {
        let seen: Vec<(At, String)> = found
            .iter()
            .map(|(c, cand)| (c.at, cand.name.clone()))
            .collect();
        return found
            .into_iter()
            .find(|(_, c)| pin.matches(&c.location.file, Some(&c.name)))
            .map(|(c, _)| c)
            .ok_or_else(|| pin_mismatch(files, "connection", "connection", &pin, &seen));
    }
    if auto_ok {
        decisions.record(
            "connection",
            "connection",
            &found.iter().map(|(_, c)| c).collect::<Vec<_>>(),
            Some(&found[0].1),
        );
        return Ok(found.remove(0).0);
    }
    if found.len() > 1 {
        return Err(Error::Ambiguous {
            site: "connection",
            candidates: found.into_iter().map(|(_, c)| c).collect(),
            pin_key: "connection",
        });
    }
    Err(Error::Unlocatable {
        site: "connection",
        detail: format!(
            "{}:{}: `{class_name}` has no `on_connect(self, conn)`, stores no connection in `__init__`, and its own sends use no `self.<attribute>`",
            files[class.file].file.rel,
            class.node.start_position().row + 1
        ),
        pin_key: "connection",
    })
}

/// `self.x` (or `self.x()`) → `x`.
fn self_attribute(node: Node, src: &str) -> Option<String> {
    let node = if node.kind() == "call" {
        node.child_by_field_name("function")?
    } else {
        node
    };
    let is_self = node.kind() == "attribute"
        && node
            .child_by_field_name("object")
            .is_some_and(|o| o.kind() == "identifier" && text(o, src) == "self");
    if !is_self {
        return None;
    }
    Some(text(node.child_by_field_name("attribute")?, src).to_string())
}

/// `me.<attr> = param` in a method body: (attr, the assignment statement).
fn stored_as<'t>(def: Node<'t>, me: &str, param: &str, src: &str) -> Option<(String, Node<'t>)> {
    let body = def.child_by_field_name("body")?;
    descendants_same_scope(body, "assignment")
        .into_iter()
        .find_map(|a| {
            let l = a.child_by_field_name("left")?;
            let r = a.child_by_field_name("right")?;
            (l.kind() == "attribute"
                && r.kind() == "identifier"
                && text(r, src) == param
                && l.child_by_field_name("object")
                    .is_some_and(|o| text(o, src) == me))
            .then(|| {
                (
                    text(l.child_by_field_name("attribute").expect("attr"), src).to_string(),
                    statement_of(a),
                )
            })
        })
}
