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
    stored_in(files, file, class, index, 0)
}

/// [`stored_connection`], `depth` objects deep: a class that keeps no field of the argument
/// but builds an object with it (`this.sessions = new Manager(opts, conn)`) reaches it as
/// that object's field (`this.sessions.conn`, or `this.sessions["conn"]` where TypeScript
/// hides it), the field the object's own constructor stores it in.
fn stored_in(
    files: &[Parsed],
    file: usize,
    class: Node,
    index: usize,
    depth: usize,
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
        if depth < 3
            && let Some(conn) = handed_on(files, file, class, body, &pname, depth)
        {
            return Some(conn);
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

/// The field of `this` an assignment sets directly (`this.f = ...`), not a nested one.
fn own_field_assigned<'s>(assignment: Node, src: &'s str) -> Option<&'s str> {
    assignment
        .child_by_field_name("left")
        .and_then(|l| text(l, src).strip_prefix("this."))
        .filter(|f| !f.contains(['.', '[']))
}

/// The connection a constructor hands on to an object it keeps: `this.f = new Y(.., pname, ..)`
/// with `Y`'s constructor storing that argument (the first such field).
fn handed_on(
    files: &[Parsed],
    file: usize,
    class: Node,
    ctor_body: Node,
    pname: &str,
    depth: usize,
) -> Option<Conn> {
    let src = files[file].file.text.as_ref();
    for a in descendants(ctor_body, "assignment_expression") {
        let Some(field) = own_field_assigned(a, src) else {
            continue;
        };
        let Some((yfile, yclass, new)) = constructed(files, file, class, field) else {
            continue;
        };
        if a.child_by_field_name("right") != Some(new) {
            continue;
        }
        let Some(j) = arguments(new).iter().position(|x| text(*x, src) == pname) else {
            continue;
        };
        let inner = stored_in(files, yfile, yclass, j, depth + 1)?;
        let rest = inner.anchor.text.strip_prefix("this.")?;
        let (first, tail) = match rest.find(['.', '[']) {
            Some(k) => rest.split_at(k),
            None => (rest, ""),
        };
        if first.starts_with('#') {
            return None; // an ES private field: only its own class reads it
        }
        let step = if !crate::lang::typescript::is_js(&files[yfile].file.rel)
            && is_hidden_member(files, yfile, yclass, first)
        {
            format!("[\"{first}\"]")
        } else {
            format!(".{first}")
        };
        let class_name = name_of(class, src);
        let yname = name_of(yclass, &files[yfile].file.text);
        return Some(Conn {
            anchor: Connection {
                site: inner.anchor.site,
                text: format!("this.{field}{step}{tail}"),
                // what a pin names: the path, dotted
                pin: Some(format!(
                    "{class_name}.{field}.{}",
                    rest.replace("[\"", ".").replace("\"]", "")
                )),
            },
            origin: format!(
                "the AgentSideConnection factory's argument, handed by {class_name}'s constructor to the {yname} it keeps in `this.{field}` ({})",
                inner
                    .origin
                    .strip_prefix("the AgentSideConnection factory's argument, ")
                    .unwrap_or(&inner.origin)
            ),
        });
    }
    None
}

/// How the handler reads a path of fields `a.b` of its class: `this.a.b`, with `["b"]` for a
/// field TypeScript hides from other classes; none through an ES private field.
fn path_text(files: &[Parsed], file: usize, class: Node, path: &[&str]) -> Option<String> {
    let (mut file, mut class) = (file, class);
    let mut out = "this".to_string();
    for (k, field) in path.iter().enumerate() {
        if k > 0 && field.starts_with('#') {
            return None;
        }
        if k > 0
            && !crate::lang::typescript::is_js(&files[file].file.rel)
            && is_hidden_member(files, file, class, field)
        {
            out.push_str(&format!("[\"{field}\"]"));
        } else {
            out.push_str(&format!(".{field}"));
        }
        if k + 1 < path.len() {
            (file, class, _) = constructed(files, file, class, field)?;
        }
    }
    Some(out)
}

/// The `connection` pin (`file:Class.field`), when it names a field of this class.
pub(super) fn pinned_connection(
    files: &[Parsed],
    file: usize,
    class: Node,
    index: Option<usize>,
    sends: &[Send],
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
    let path: Vec<&str> = field.split('.').collect();
    match path_bound(files, file, class, &path).zip(path_text(files, file, class, &path)) {
        Some(((site, how), text)) => Ok(Some(Conn {
            anchor: Connection {
                site,
                text,
                pin: Some(format!("{cname}.{field}")),
            },
            origin: format!("pinned in acp-patch.toml ({how})"),
        })),
        None => Err(Error::NotFound {
            site: "connection",
            detail: format!(
                "the pin `connection = \"{}:{cname}.{field}\"` names a field that {cname} never sets before a prompt (no initializer, no parameter property, no assignment in the constructor; a field of a field: one its constructor builds with `new`)",
                pin.file,
            ),
            pin_key: "typescript.connection",
            candidates: connection_candidates(files, file, class, index, sends),
        }),
    }
}

/// What a `connection` pin may name that is a connection: the fields the class's own sends go
/// through, those its constructor sets from the factory's argument (argument `index`) by
/// calls not followed, and those of an object it builds in its constructor
/// (`Class.sessions.conn`) that the object's sends go through — each set before a prompt, as
/// `file:Class.path`. Not a field that holds something else (a field a pin would take, but
/// whose sends would fail at run time).
pub fn connection_candidates(
    files: &[Parsed],
    file: usize,
    class: Node,
    index: Option<usize>,
    sends: &[Send],
) -> Vec<Candidate> {
    let src = files[file].file.text.as_ref();
    let cname = name_of(class, src);
    // the fields of a class its sends go through (`this.<field>.sessionUpdate(...)`)
    let send_fields = |f: usize, c: Node| -> Vec<String> {
        let fsrc = files[f].file.text.as_ref();
        let mut out: Vec<String> = sends
            .iter()
            .filter(|s| s.file() == f && s.raw_template.is_none())
            .filter(|s| enclosing_class(s.call) == Some(c))
            .filter_map(|s| text(s.target, fsrc).strip_prefix("this."))
            .filter(|x| !x.contains(['.', '[', '(']))
            .map(str::to_string)
            .collect();
        out.sort();
        out.dedup();
        out
    };
    let mut paths: Vec<String> = send_fields(file, class);
    for m in class_members(class) {
        if !(m.kind() == "method_definition" && member_name(m, src) == "constructor") {
            continue;
        }
        // the factory's argument, as the constructor names it
        let pname = index
            .and_then(|i| parameters(m, src).get(i).map(|(n, _)| n.clone()))
            .filter(|n| !n.is_empty());
        for a in body(m)
            .map(|b| descendants(b, "assignment_expression"))
            .unwrap_or_default()
        {
            let Some(field) = own_field_assigned(a, src) else {
                continue;
            };
            if let Some((yf, yc, _)) = constructed(files, file, class, field) {
                // an object of the agent's own: its fields, not itself
                paths.extend(
                    send_fields(yf, yc)
                        .into_iter()
                        .map(|g| format!("{field}.{g}")),
                );
            } else if let (Some(p), Some(r)) = (&pname, a.child_by_field_name("right")) {
                // a value made of the argument by calls not followed (`keep(conn)`)
                if reads(r, src).0.iter().any(|(n, _)| n == p) {
                    paths.push(field.to_string());
                }
            }
        }
    }
    let mut seen = Vec::new();
    paths.retain(|p| {
        let new = !seen.contains(p);
        seen.push(p.clone());
        new
    });
    paths
        .into_iter()
        .filter_map(|p| {
            let path: Vec<&str> = p.split('.').collect();
            path_text(files, file, class, &path)?;
            let (site, _) = path_bound(files, file, class, &path)?;
            let at = if site.file == file {
                site.line
            } else {
                line(class)
            };
            Some(candidate(files, file, at, &format!("{cname}.{p}")))
        })
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

/// No send anywhere in the tree, and the class extends one from outside it (`class Mine
/// extends ChatAgent`, the base imported from a package, after any in-tree bases): that base
/// keeps the connection and sends every update. The runtime finds it on the agent at the
/// turn's start and relays its sends (`acpProgress.held(this)`).
pub(super) fn held_connection(
    files: &[Parsed],
    file: usize,
    class: Node,
    sends: &[Send],
) -> Option<Conn> {
    if !sends.is_empty() {
        return None;
    }
    let (mut top_file, mut top) = (file, class);
    for _ in 0..8 {
        match base_class(files, top_file, top) {
            Some((f, c)) => (top_file, top) = (f, c),
            None => break,
        }
    }
    let base = text(extended(top)?, files[top_file].file.text.as_ref()).to_string();
    Some(Conn {
        anchor: Connection {
            site: Site::of_node(file, class),
            text: held(),
            pin: None,
        },
        origin: format!(
            "held by its installed base class `{base}`, which sends every update: found on the agent at the turn's start (the field answering `sessionUpdate` and `requestPermission`), its sends relayed"
        ),
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
        if usable
            .iter()
            .any(|(_, _, u)| u == t || code_key(u) == code_key(t))
        {
            continue; // the same writer call, spelled with other spaces or a trailing comma
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

/// A piece of code as its tokens, without the spaces between them and without a trailing
/// comma before a closing bracket: two spellings of one call compare equal.
fn code_key(code: &str) -> String {
    let wrapped = format!("({code})");
    let tree = crate::lang::typescript::syntax::parse(&wrapped, false);
    let mut leaves: Vec<&str> = Vec::new();
    let mut cursor = tree.root_node().walk();
    let mut stack = vec![tree.root_node()];
    while let Some(n) = stack.pop() {
        if n.child_count() == 0 || matches!(n.kind(), "string" | "template_string") {
            leaves.push(text(n, &wrapped));
            continue;
        }
        let children: Vec<Node> = n.children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    let mut out = String::new();
    for (k, leaf) in leaves.iter().enumerate() {
        let closing = leaves
            .get(k + 1)
            .is_some_and(|n| matches!(*n, "}" | ")" | "]"));
        if *leaf == "," && closing {
            continue;
        }
        out.push_str(leaf);
        out.push(' ');
    }
    out
}
