//! Where the card's connection comes from in an agent class: the one the SDK hands over in
//! `on_connect(self, conn)` (stored as `self.<attr>`, or bound there when the agent keeps it
//! nowhere readable), else the `__init__` parameter its sends use, else a dataclass field of
//! the SDK's connection type, else the one `self.<attr>` its own sends go through; a `connection` pin picks among the same candidates.

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
    if found.is_empty()
        && let Some((attr, at)) = generated_field(class.node, src)
    {
        push(
            Conn::attribute(
                At {
                    file: class.file,
                    node: at,
                },
                &class_name,
                attr,
                "a field of the connection's type",
            ),
            &mut found,
        );
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
    // no send in the whole tree: a base class installed outside it keeps the connection and
    // sends every update; the runtime finds it on the agent and relays those sends
    if sends.is_empty()
        && let Some(base) = installed_base(class.node, src)
    {
        return Ok(Conn::held(class, base));
    }
    // nothing a `connection` pin could choose: say what to change instead
    Err(Error::NotFound {
        site: "connection",
        detail: format!(
            "{}:{}: `{class_name}` has no `on_connect(self, conn)`, stores no connection in `__init__` or a dataclass field of the SDK's connection type, and its own sends use no `self.<attribute>`; keep the connection the SDK hands over where its prompt handler can read it (`def on_connect(self, conn): self._conn = conn`), then apply again",
            files[class.file].file.rel,
            class.node.start_position().row + 1
        ),
        pin_key: "connection",
        candidates: Vec::new(),
    })
}

/// The first base of `class` that may hold the connection: not the SDK's `Agent` nor a
/// typing helper (`Generic[..]`, `Protocol`, `ABC`, `object`).
pub(super) fn installed_base(class: Node, src: &str) -> Option<String> {
    let bases = class.child_by_field_name("superclasses")?;
    named_children(bases)
        .into_iter()
        .filter(|b| b.kind() != "keyword_argument")
        .map(|b| text(b, src))
        .find(|b| {
            let name = b.split('[').next().unwrap_or(b);
            let last = name.rsplit('.').next().unwrap_or(name);
            !matches!(last, "Agent" | "Generic" | "Protocol" | "ABC" | "object")
        })
        .map(str::to_string)
}

/// The SDK's types of the connection an agent is handed.
const CONNECTION_TYPES: &[&str] = &["Client", "AgentSideConnection"];

/// Decorators that write a class's `__init__` from its annotated fields.
const FIELD_INITS: &[&str] = &["dataclass", "define", "frozen", "mutable"];

/// The one field of a `@dataclass` (or attrs) class annotated with the SDK's connection type
/// (`client: Client`, the name imported from `acp`, or `acp.Client`): the generated `__init__`
/// stores what the agent is built with there, as an `__init__` of its own would.
fn generated_field<'t>(class: Node<'t>, src: &str) -> Option<(String, Node<'t>)> {
    let generated = decorators(class).iter().any(|d| {
        let name = text(*d, src).trim_start_matches('@');
        let name = name.split('(').next().unwrap_or(name).trim();
        FIELD_INITS.contains(&name.rsplit('.').next().unwrap_or(name))
    });
    if !generated {
        return None;
    }
    let root = {
        let mut n = class;
        while let Some(p) = n.parent() {
            n = p;
        }
        n
    };
    let imported: Vec<&str> = descendants(root, "import_from_statement")
        .into_iter()
        .filter(|imp| {
            imp.child_by_field_name("module_name")
                .map(|m| text(m, src))
                .is_some_and(|m| m == "acp" || m.starts_with("acp."))
        })
        .flat_map(|imp| imported_names(imp, src))
        .filter(|(orig, _)| CONNECTION_TYPES.contains(orig))
        .map(|(_, local)| local)
        .collect();
    let is_connection_type = |t: &str| {
        let t = t.trim_matches(['"', '\'']);
        imported.contains(&t)
            || t.strip_prefix("acp.")
                .is_some_and(|n| CONNECTION_TYPES.contains(&n))
    };
    let body = class.child_by_field_name("body")?;
    let mut fields = named_children(body).into_iter().filter_map(|stmt| {
        let a = named_children(stmt)
            .into_iter()
            .find(|n| n.kind() == "assignment")?;
        let left = a.child_by_field_name("left")?;
        let ty = a.child_by_field_name("type")?;
        (stmt.kind() == "expression_statement"
            && left.kind() == "identifier"
            && is_connection_type(text(ty, src)))
        .then(|| (text(left, src).to_string(), stmt))
    });
    let first = fields.next()?;
    fields.next().is_none().then_some(first)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(src: &str) -> Option<String> {
        let tree = parse(src);
        let class = descendants(tree.root_node(), "class_definition")[0];
        generated_field(class, src).map(|(name, _)| name)
    }

    /// Only the one field of the SDK's connection type, of a class whose `__init__` is
    /// generated from its fields, is the connection.
    #[test]
    fn a_dataclass_field_of_the_connection_type_is_the_connection() {
        let head = "from dataclasses import dataclass\nfrom acp import Client as C, AgentSideConnection\nfrom other import Client\nimport acp\n";
        let agent = |deco: &str, fields: &str| {
            format!("{head}{deco}\nclass A(acp.Agent):\n{fields}\n    x: int = 1\n")
        };
        assert_eq!(
            field_of(&agent("@dataclass", "    conn: C")).as_deref(),
            Some("conn")
        );
        assert_eq!(
            field_of(&agent(
                "@dataclass(kw_only=True)",
                "    conn: \"acp.Client\""
            ))
            .as_deref(),
            Some("conn")
        );
        assert_eq!(
            field_of(&agent("@attrs.define", "    c: AgentSideConnection")).as_deref(),
            Some("c")
        );
        // not generated, not the SDK's type, or not one
        assert_eq!(field_of(&agent("", "    conn: C")), None);
        assert_eq!(field_of(&agent("@dataclass", "    conn: Client")), None);
        assert_eq!(field_of(&agent("@dataclass", "    a: C\n    b: C")), None);
    }
}
