//! Where a `session/update` message goes after it is built: followed through variables,
//! return values (to every call of the builder, in its file or in the modules that import it),
//! lists of messages and the loops over them, `JSON.stringify`, up to the call that hands it
//! to a writer.

use super::classes::resolve_function;
use super::*;

pub(super) use crate::lang::tree::flow::Sink;
use crate::lang::tree::flow::{self, Bind, Lost, Parameter, Rules};

/// How a message's way reads in TypeScript's tree (the walk is `tree::flow`'s).
static RULES: Rules = Rules {
    through: &[
        "parenthesized_expression",
        "as_expression",
        "satisfies_expression",
        "non_null_expression",
        "await_expression",
        "binary_expression",
        "template_substitution",
        "template_string",
    ],
    arguments: &[("arguments", 1)],
    // `new X(message)` holds `arguments` too
    calls: &["call_expression", "new_expression"],
    functions: FUNCTIONS,
    binds: &[
        Bind {
            kind: "variable_declarator",
            value: "value",
            name: "name",
            lost: "a message destructured into a pattern",
        },
        Bind {
            kind: "assignment_expression",
            value: "right",
            name: "left",
            lost: "a message stored in a property",
        },
    ],
    returns: "return_statement",
    expression_bodies: &[("arrow_function", "body")],
    collections: &["array"],
    loops: &[("for_in_statement", "right", "left")],
    statement: "expression_statement",
    not_reads: &[
        ("assignment_expression", Some("left")),
        ("variable_declarator", None),
    ],
    encoder,
    calls_of,
    parameter,
    loop_names,
};

/// `JSON.stringify(message)`
fn encoder<'a>(parent: Node<'a>, src: &str) -> Option<Node<'a>> {
    (parent.kind() == "arguments")
        .then(|| parent.parent())
        .flatten()
        .filter(|c| callee(*c, src) == ("JSON", "stringify"))
}

fn parameter<'a>(
    files: &'a [Parsed],
    file: usize,
    call: Node<'a>,
    arg: Node<'a>,
) -> std::result::Result<Parameter<'a>, &'static str> {
    let k = arg
        .parent()
        .map(named_children)
        .and_then(|args| args.iter().position(|a| *a == arg))
        .unwrap_or(0);
    let (f, func) = called_function(files, file, call).ok_or(
            "a list of messages handed to a call acp-patch cannot follow (the writer takes one message at a time)",
        )?;
    parameter_names(func, &files[f].file.text)
        .get(k)
        .map(|(name, decl)| (f, name.clone(), *decl))
        .ok_or("a list of messages handed to a function that takes no such parameter")
}

fn loop_names<'a>(var: Node<'a>, src: &str) -> Vec<(String, Node<'a>)> {
    let mut out = Vec::new();
    pattern_names(var, src, &mut out);
    out
}

/// Follows the message built at `origin` to every writer call it reaches, in the order of
/// the tree.
pub(super) fn follow<'a>(
    files: &'a [Parsed],
    file: usize,
    origin: Node<'a>,
) -> (Vec<Sink<'a>>, Vec<Lost>) {
    let (mut sinks, lost) = flow::follow(&RULES, files, file, origin);
    sinks.sort_by_key(|s| (s.file, s.call.start_byte()));
    (sinks, lost)
}

/// The function of the tree a call calls: `this.m(...)` in a class, `f(...)` declared or
/// imported, `x.m(...)` when one class of the tree has a method `m`.
pub(super) fn called_function<'a>(
    files: &'a [Parsed],
    file: usize,
    call: Node<'a>,
) -> Option<(usize, Node<'a>)> {
    let src = files[file].file.text.as_ref();
    let (obj, name) = callee(call, src);
    if name.is_empty() {
        return None;
    }
    if obj.is_empty() {
        return resolve_function(files, file, name);
    }
    if obj == "this"
        && let Some(class) = enclosing_class(call)
        && let Some((f, m)) = member(files, file, class, name)
    {
        return member_function(m).map(|func| (f, func));
    }
    let methods: Vec<(usize, Node)> = super::handlers::class_functions(files)
        .into_iter()
        .filter(|(i, m, _)| member_name(*m, &files[*i].file.text) == name)
        .map(|(i, _, f)| (i, f))
        .collect();
    match methods[..] {
        [one] => Some(one),
        _ => None,
    }
}

/// Every call of a function of the tree, in any of the agent's files.
fn calls_of<'a>(files: &'a [Parsed], file: usize, func: Node<'a>) -> Vec<(usize, Node<'a>)> {
    let src = files[file].file.text.as_ref();
    let is_member = matches!(func.kind(), "method_definition")
        || func
            .parent()
            .is_some_and(|p| p.kind() == "public_field_definition");
    let name = if func.kind() == "function_declaration" {
        Some(name_of(func, src))
    } else if is_member {
        let m = if func.kind() == "method_definition" {
            func
        } else {
            func.parent().expect("checked")
        };
        Some(member_name(m, src))
    } else {
        func.parent()
            .filter(|p| p.kind() == "variable_declarator")
            .and_then(|p| p.child_by_field_name("name"))
            .map(|n| text(n, src))
    };
    let Some(name) = name else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) || !p.file.text.contains(name) {
            continue;
        }
        let psrc = p.file.text.as_ref();
        for c in descendants(p.tree().root_node(), "call_expression") {
            if callee(c, psrc).1 != name {
                continue;
            }
            if called_function(files, i, c) == Some((file, func)) {
                out.push((i, c));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::follow;
    use crate::lang::parts::Parsed;
    use crate::lang::tree::{descendants, flow::lost_text, text};

    /// What each `session/update` object literal of a file reaches: the writer calls, or
    /// where following it stopped.
    fn reached(src: &str) -> Vec<String> {
        let file = crate::source::SourceFile::from_text("m.ts".into(), "m.ts".into(), src.into());
        let files = [Parsed::new(
            file,
            crate::lang::typescript::syntax::parser(false),
        )];
        descendants(files[0].tree().root_node(), "object")
            .into_iter()
            .filter(|o| text(*o, src).contains("session/update"))
            .map(|o| {
                let (sinks, lost) = follow(&files, 0, o);
                match sinks.is_empty() {
                    true => format!("lost: {}", lost_text(&files, &lost)),
                    false => sinks
                        .iter()
                        .map(|s| text(s.call, src))
                        .collect::<Vec<_>>()
                        .join(" | "),
                }
            })
            .collect()
    }

    #[test]
    fn a_message_is_followed_through_returns_lists_loops_and_the_json_encoder() {
        let got = reached(
            "const note = (u) => ({ method: \"session/update\", params: u });\n\
             function flush(out, batch) { for (const m of batch) out.write(JSON.stringify(m) + \"\\n\"); }\n\
             function send(out, u) { const m = note(u); flush(out, [m as object]); }\n\
             function keep(store) { store.last = { method: \"session/update\" }; }\n\
             function pair(out) { const [a] = [{ method: \"session/update\" }]; out.write(a); }\n",
        );
        assert_eq!(
            got,
            [
                "out.write(JSON.stringify(m) + \"\\n\")",
                "lost: m.ts:4: a message stored in a property",
                "lost: m.ts:5: a message destructured into a pattern",
            ]
        );
    }
}
