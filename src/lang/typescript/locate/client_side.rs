//! A class's `prompt` on the client's side of the protocol: it hands the prompt on to the agent
//! a `ClientSideConnection` reaches (a client library's wrapper, `this.connection.prompt(params)`,
//! whatever else the class answers). The SDK never calls it, so it is never offered as a pin.
//! (Python's counterpart: `python/locate/client_side.rs`.)

use super::*;

/// Why `func` (a method of `class`, file `file`) hands the prompt on to an agent, if it does: it
/// calls `.prompt(..)` on a field of its class that holds a `ClientSideConnection`, or on a local
/// bound to one.
pub(super) fn forwards_to_an_agent(
    files: &[Parsed],
    file: usize,
    class: Node,
    func: Node,
) -> Option<String> {
    let src = files[file].file.text.as_ref();
    let body = body(func)?;
    if !text(body, src).contains(".prompt") {
        return None;
    }
    let fields = client_fields(files, file, class);
    if fields.is_empty() {
        return None;
    }
    // `this.connection`, and the locals bound to it (`const conn = this.connection`)
    let mut held: Vec<String> = fields.iter().map(|f| format!("this.{f}")).collect();
    for d in descendants(body, "variable_declarator") {
        if let (Some(name), Some(value)) = (
            d.child_by_field_name("name"),
            d.child_by_field_name("value"),
        ) && name.kind() == "identifier"
            && held.iter().any(|h| h == text(value, src))
        {
            held.push(text(name, src).to_string());
        }
    }
    descendants(body, "call_expression").into_iter().find_map(|c| {
        let f = c.child_by_field_name("function")?;
        let on = f.child_by_field_name("object")?;
        (f.kind() == "member_expression"
            && f.child_by_field_name("property")
                .is_some_and(|p| text(p, src) == "prompt")
            && held.iter().any(|h| h == text(on, src)))
        .then(|| {
            format!(
                "it hands the prompt on to `{}` (line {}), a `ClientSideConnection`: the client side of the protocol",
                text(on, src),
                line(c)
            )
        })
    })
}

/// The fields of `class` that hold a `ClientSideConnection`: built there
/// (`this.connection = new ClientSideConnection(...)`), a constructor parameter typed as one, or
/// a constructor argument the tree's code hands one (`new Wrapper(conn, ...)` with
/// `const conn = new ClientSideConnection(...)`, anywhere in the agent's files).
fn client_fields(files: &[Parsed], file: usize, class: Node) -> Vec<String> {
    let src = files[file].file.text.as_ref();
    let mut out: Vec<String> = Vec::new();
    let mut add = |field: &str| {
        if !out.iter().any(|o| o == field) {
            out.push(field.to_string());
        }
    };
    for a in descendants(class, "assignment_expression") {
        if let (Some(l), Some(r)) = (
            a.child_by_field_name("left"),
            a.child_by_field_name("right"),
        ) && let Some(field) = text(l, src).strip_prefix("this.")
            && !field.contains(['.', '['])
            && builds_client(r, src)
        {
            add(field);
        }
    }
    for m in class_members(class) {
        if m.kind() == "public_field_definition"
            && m.child_by_field_name("value")
                .is_some_and(|v| builds_client(v, src))
        {
            add(member_name(m, src));
        }
    }
    let ctor = class_members(class)
        .into_iter()
        .find(|m| m.kind() == "method_definition" && member_name(*m, src) == "constructor");
    let Some(ctor) = ctor else {
        return out;
    };
    let name = name_of(class, src);
    for (index, (_, param)) in parameters(ctor, src).into_iter().enumerate() {
        let typed = param
            .child_by_field_name("type")
            .is_some_and(|t| text(t, src).contains("ClientSideConnection"));
        let handed = !name.is_empty() && handed_a_client(files, name, index);
        if (typed || handed)
            && let Some(conn) = stored_connection(files, file, class, index)
            && let Some(field) = conn.anchor.text.strip_prefix("this.")
        {
            add(field);
        }
    }
    out
}

/// Whether some `new <class_name>(...)` in the agent's files hands a `ClientSideConnection` as
/// its argument `index`: built in place, or a name its function binds to one.
fn handed_a_client(files: &[Parsed], class_name: &str, index: usize) -> bool {
    let needle = format!("new {class_name}(");
    files.iter().filter(|p| is_agent_file(p)).any(|p| {
        let src = p.file.text.as_ref();
        if !src.contains(&needle) || !src.contains("ClientSideConnection") {
            return false;
        }
        descendants(p.tree().root_node(), "new_expression")
            .into_iter()
            .filter(|n| {
                n.child_by_field_name("constructor")
                    .is_some_and(|c| text(c, src) == class_name)
            })
            .filter_map(|n| arguments(n).get(index).copied())
            .any(|arg| {
                builds_client(arg, src)
                    || (arg.kind() == "identifier" && bound_to_a_client(arg, text(arg, src), src))
            })
    })
}

/// `new ClientSideConnection(...)` (or `new acp.ClientSideConnection(...)`).
fn builds_client(expr: Node, src: &str) -> bool {
    expr.kind() == "new_expression"
        && expr.child_by_field_name("constructor").is_some_and(|c| {
            let c = text(c, src);
            c == "ClientSideConnection" || c.ends_with(".ClientSideConnection")
        })
}

/// Whether the function around `at` (or its module) binds `name` to a new `ClientSideConnection`.
fn bound_to_a_client(at: Node, name: &str, src: &str) -> bool {
    let scope = enclosing_function(at).unwrap_or_else(|| top_level(at));
    descendants(scope, "variable_declarator")
        .into_iter()
        .any(|d| {
            d.child_by_field_name("name")
                .is_some_and(|n| text(n, src) == name)
                && d.child_by_field_name("value")
                    .is_some_and(|v| builds_client(v, src))
        })
}
