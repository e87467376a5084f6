//! The connection a prompt handler's start card goes out on: the field the SDK-bound class keeps
//! the factory's argument in, the one its sends use, a pinned one, or the agent's own writer.

use super::*;

/// The field a class stores its constructor argument `index` in (`this.client = client`, a
/// parameter property), following `super(...)`.
pub(super) fn stored_connection(
    files: &[Parsed],
    file: usize,
    class: Node,
    index: usize,
) -> Option<Conn> {
    let (mut file, mut class, mut index) = (file, class, index);
    for _ in 0..8 {
        let src = files[file].file.text.as_ref();
        let ctor = class_members(class)
            .into_iter()
            .find(|m| m.kind() == "method_definition" && member_name(*m, src) == "constructor");
        let Some(ctor) = ctor else {
            (file, class) = base_class(files, file, class)?; // an implicit constructor passes its arguments on
            continue;
        };
        let params = parameters(ctor, src);
        let (pname, pnode) = params.get(index)?.clone();
        if pname.is_empty() {
            return None;
        }
        let class_name = name_of(class, src);
        if is_parameter_property(pnode) {
            return Some(Conn {
                anchor: Connection {
                    site: Site::of_node(file, pnode),
                    text: format!("this.{pname}"),
                    pin: None,
                },
                origin: format!(
                    "the AgentSideConnection factory's argument, a parameter property of {class_name}"
                ),
            });
        }
        let body = body(ctor)?;
        for a in descendants(body, "assignment_expression") {
            let (Some(l), Some(r)) = (
                a.child_by_field_name("left"),
                a.child_by_field_name("right"),
            ) else {
                continue;
            };
            if text(r, src) == pname
                && let Some(field) = text(l, src).strip_prefix("this.")
                && !field.contains(['.', '['])
            {
                return Some(Conn {
                    anchor: Connection {
                        site: Site::of_node(file, a),
                        text: format!("this.{field}"),
                        pin: None,
                    },
                    origin: format!(
                        "the AgentSideConnection factory's argument, stored by {class_name}'s constructor"
                    ),
                });
            }
        }
        let sup = descendants(body, "call_expression").into_iter().find(|c| {
            c.child_by_field_name("function")
                .is_some_and(|f| f.kind() == "super")
        })?;
        index = arguments(sup).iter().position(|a| text(*a, src) == pname)?;
        (file, class) = base_class(files, file, class)?;
    }
    None
}

/// The `connection` pin (`file:Class.field`), when it names a field of this class.
pub(super) fn pinned_connection(
    files: &[Parsed],
    file: usize,
    class: Node,
    pins: &crate::config::TypeScriptPins,
) -> Result<Option<Conn>> {
    let Some(pin) = pins.connection.as_ref().map(|p| Pin::parse(p)) else {
        return Ok(None);
    };
    let src = files[file].file.text.as_ref();
    let cname = name_of(class, src);
    let Some(field) = pin
        .name
        .as_ref()
        .and_then(|n| n.strip_prefix(&format!("{cname}.")))
    else {
        return Ok(None);
    };
    if files[file].file.rel != pin.file {
        return Ok(None);
    }
    match field_bound(files, file, class, field) {
        Some((site, how)) => Ok(Some(Conn {
            anchor: Connection {
                site,
                text: format!("this.{field}"),
                pin: Some(format!("{cname}.{field}")),
            },
            origin: format!("pinned in acp-patch.toml ({how})"),
        })),
        None => Err(Error::Unlocatable {
            site: "connection",
            detail: format!(
                "the pin `connection = \"{}:{cname}.{field}\"` names a field that {cname} never sets before a prompt (no initializer, no parameter property, no assignment in the constructor); candidates: {}",
                pin.file,
                field_candidates(files, file, class).join(", ")
            ),
            pin_key: "typescript.connection",
        }),
    }
}

/// Fields of a class set before a prompt: what a `connection` pin may name.
pub fn field_candidates(files: &[Parsed], file: usize, class: Node) -> Vec<String> {
    let src = files[file].file.text.as_ref();
    let cname = name_of(class, src);
    let mut names: Vec<String> = Vec::new();
    for m in class_members(class) {
        let n = member_name(m, src).to_string();
        if m.kind() == "public_field_definition" && !names.contains(&n) {
            names.push(n);
        }
        if m.kind() == "method_definition" && member_name(m, src) == "constructor" {
            for (p, node) in parameters(m, src) {
                if is_parameter_property(node) && !names.contains(&p) {
                    names.push(p);
                }
            }
        }
    }
    names
        .into_iter()
        .filter(|n| field_bound(files, file, class, n).is_some())
        .map(|n| format!("{}:{cname}.{n}", files[file].file.rel))
        .collect()
}

/// The one field of the class its own sends go through (`this.conn.sessionUpdate(...)`).
pub(super) fn used_connection(
    files: &[Parsed],
    file: usize,
    class: Node,
    sends: &[Send],
) -> Option<Conn> {
    let src = files[file].file.text.as_ref();
    let mut fields: Vec<&str> = sends
        .iter()
        .filter(|s| s.file() == file && s.raw_template.is_none())
        .filter(|s| enclosing_class(s.call) == Some(class))
        .filter_map(|s| text(s.target, src).strip_prefix("this."))
        .filter(|f| !f.contains(['.', '[', '(']))
        .collect();
    fields.sort();
    fields.dedup();
    let [field] = fields[..] else { return None };
    let (site, how) = field_bound(files, file, class, field)?;
    Some(Conn {
        anchor: Connection {
            site,
            text: format!("this.{field}"),
            pin: Some(format!("{}.{field}", name_of(class, src))),
        },
        origin: format!("the field its own sends go through ({how})"),
    })
}

/// A dispatcher's handler sends cards with the agent's own writer: the writer call of its
/// `session/update` sends with the params replaced, when every name it reads is bound in the
/// handler (`this` of the same class, module-level names, globals).
pub(super) fn raw_connection(
    decisions: &crate::lang::survey::Decisions,
    files: &[Parsed],
    file: usize,
    func: Node,
    sends: &[Send],
    pins: &crate::config::TypeScriptPins,
) -> Result<Option<Conn>> {
    let mut usable: Vec<(usize, Node, String)> = Vec::new();
    let mut seen: Vec<(usize, Node, String)> = Vec::new();
    for s in sends {
        let Some(t) = &s.raw_template else { continue };
        let owner = enclosing_function(s.call).unwrap_or(s.call);
        seen.push((s.file(), owner, t.clone()));
        if usable.iter().any(|(_, _, u)| u == t) {
            continue;
        }
        let class_ok = |uses_this: bool| {
            !uses_this
                || (s.file() == file
                    && this_class(func).is_some()
                    && enclosing_class(s.call) == this_class(func))
        };
        let parsed = crate::lang::typescript::syntax::parse(&format!("({t})"), false);
        let (names, uses_this) = reads(parsed.root_node(), &format!("({t})"));
        let bound = names
            .iter()
            .filter(|(n, _)| n != RAW_PARAMS)
            .all(|(n, _)| bound_at_entry(files, file, func, n).is_some());
        if bound && class_ok(uses_this) {
            usable.push((s.file(), owner, t.clone()));
        }
    }
    // the writer the handler's own updates use: in the handler, or in a method it calls
    let src = files[file].file.text.as_ref();
    let called: Vec<&str> = descendants(func, "call_expression")
        .into_iter()
        .filter_map(|c| match callee(c, src) {
            ("this", name) => Some(name),
            _ => None,
        })
        .collect();
    let own = |(f, owner, _): &(usize, Node, String)| {
        *f == file
            && (*owner == func
                || owner.parent().is_some_and(|m| {
                    m.kind() == "method_definition" && called.contains(&member_name(m, src))
                })
                || called.contains(&member_name(*owner, src)))
    };
    if pins.connection.is_none() && usable.iter().filter(|u| own(u)).count() == 1 {
        usable.retain(own);
    }
    let found: Vec<((usize, Node, String), Candidate)> = usable
        .into_iter()
        .map(|(f, owner, t)| {
            let c = candidate(files, f, line(owner), &qualified(files, f, owner));
            ((f, owner, t), c)
        })
        .collect();
    if found.is_empty() && seen.is_empty() {
        return Ok(None);
    }
    let pin = pins.connection.as_ref().map(|p| Pin::parse(p));
    let handler_name = qualified(files, file, func);
    let chosen = crate::lang::parts::choose(
        decisions,
        found,
        pin,
        "connection",
        "typescript.connection",
        || {
            format!(
                "{handler_name} handles session/prompt, but no writer of its `session/update` messages can be called from it ({} seen; they read names not bound there)",
                seen.len()
            )
        },
    )?;
    let (f, owner, t) = chosen;
    let name = qualified(files, f, owner);
    Ok(Some(Conn {
        anchor: Connection {
            site: Site::of_node(f, owner),
            // `never`: the writer's parameter type, whatever it is, takes it
            text: if crate::lang::typescript::is_js(&files[file].file.rel) {
                format!("({RAW_PARAMS}) => {t}")
            } else {
                format!("({RAW_PARAMS}: never) => {t}")
            },
            pin: Some(name.clone()),
        },
        origin: format!("the agent's own writer, as {name} calls it"),
    }))
}
