//! The functions an agent's own JSON-RPC loop calls for a method: a dict of handlers
//! (`{"session/prompt": self._on_prompt}`), `if`/`elif` or `match` on the method, a
//! registration call whose argument names the method and another the handler
//! (`server.register(METHOD_SESSION_PROMPT, lambda params: handle(self, params))`), a decorator
//! naming it (`@rpc("session/prompt")` above the handler), or an assignment into a handler table
//! (`self._handlers["session/prompt"] = self.on_prompt`).

use super::super::At;
use super::methods::Method;
use super::resolve::resolve_callable;
use crate::lang::parts::Parsed;
use crate::lang::python::syntax::*;
use tree_sitter::Node;

/// The functions a dispatcher calls for the method.
pub fn dispatched<'a>(files: &'a [Parsed], method: &Method<'a>) -> Vec<At<'a>> {
    let mut out: Vec<At<'a>> = Vec::new();
    for i in 0..files.len() {
        for m in method.mentions(i) {
            if let Some(at) = handler_of(files, i, m)
                && !out
                    .iter()
                    .any(|o| o.file == at.file && o.node.id() == at.node.id())
            {
                out.push(at);
            }
        }
    }
    out
}

/// The handler a mention of the method dispatches to, if it is a dispatcher's.
fn handler_of<'a>(files: &'a [Parsed], i: usize, m: Node<'a>) -> Option<At<'a>> {
    let parent = m.parent()?;
    match parent.kind() {
        // `{"session/prompt": self._on_prompt}`
        "pair" if parent.child_by_field_name("key") == Some(m) => {
            resolve_callable(files, i, parent.child_by_field_name("value")?)
        }
        // `if method == "session/prompt": ...` / `elif`
        "comparison_operator" => first_call_target(files, i, compared_block(parent)?),
        // `case "session/prompt":`
        "case_pattern" | "union_pattern" => first_call_target(files, i, case_block(parent)?),
        // `register("session/prompt", handler)`, `@rpc("session/prompt")`
        "argument_list" => registered(files, i, parent.parent()?, m),
        "keyword_argument" => registered(files, i, parent.parent()?.parent()?, parent),
        // `handlers["session/prompt"] = handler`
        "subscript" if parent.child_by_field_name("subscript") == Some(m) => {
            let assignment = parent
                .parent()
                .filter(|a| a.kind() == "assignment")
                .filter(|a| a.child_by_field_name("left") == Some(parent))?;
            resolve_callable(files, i, assignment.child_by_field_name("right")?)
        }
        _ => None,
    }
}

/// The block an `if`/`elif` comparison guards.
fn compared_block(comparison: Node) -> Option<Node> {
    let mut cur = comparison.parent();
    while let Some(n) = cur {
        if matches!(n.kind(), "if_statement" | "elif_clause") {
            return n.child_by_field_name("consequence");
        }
        if !matches!(n.kind(), "boolean_operator" | "parenthesized_expression") {
            return None;
        }
        cur = n.parent();
    }
    None
}

/// The block of the `case` clause a pattern belongs to.
fn case_block(pattern: Node) -> Option<Node> {
    let mut cur = Some(pattern);
    while let Some(n) = cur {
        if n.kind() == "case_clause" {
            return n
                .child_by_field_name("consequence")
                .or_else(|| named_children(n).into_iter().find(|c| c.kind() == "block"));
        }
        if !matches!(n.kind(), "case_pattern" | "union_pattern") {
            return None;
        }
        cur = n.parent();
    }
    None
}

/// The first function of the tree a block calls (or hands to a call: `create_task(self._on_prompt(...))`,
/// `partial(self._on_prompt, ...)`).
fn first_call_target<'a>(files: &'a [Parsed], i: usize, block: Node<'a>) -> Option<At<'a>> {
    descendants(block, "call").into_iter().find_map(|c| {
        resolve_callable(files, i, c.child_by_field_name("function")?).or_else(|| {
            positional_args(c)
                .into_iter()
                .find_map(|a| resolve_callable(files, i, a))
        })
    })
}

/// The handler a call that names the method registers: another of its arguments that is a
/// function of the tree, or the function it decorates.
fn registered<'a>(
    files: &'a [Parsed],
    i: usize,
    call: Node<'a>,
    named: Node<'a>,
) -> Option<At<'a>> {
    if call.kind() != "call" {
        return None;
    }
    let args = call.child_by_field_name("arguments")?;
    let handler = named_children(args)
        .into_iter()
        .filter(|a| *a != named)
        .filter_map(|a| match a.kind() {
            "keyword_argument" => a.child_by_field_name("value"),
            _ => Some(a),
        })
        .find_map(|a| resolve_callable(files, i, a));
    if handler.is_some() {
        return handler;
    }
    let decorated = call
        .parent()
        .filter(|d| d.kind() == "decorator")?
        .parent()
        .filter(|d| d.kind() == "decorated_definition")?
        .child_by_field_name("definition")
        .filter(|d| d.kind() == "function_definition")?;
    Some(At {
        file: i,
        node: decorated,
    })
}

#[cfg(test)]
mod tests {
    use super::super::methods::Method;
    use super::super::resolve::tree;
    use super::dispatched;
    use crate::lang::parts::Parsed;
    use crate::lang::python::syntax::name_of;

    fn handlers(files: &[Parsed], method: &'static str) -> Vec<String> {
        dispatched(files, &Method::of(files, method))
            .into_iter()
            .map(|at| {
                let p = &files[at.file];
                format!("{}:{}", p.file.rel, name_of(at.node, &p.file.text))
            })
            .collect()
    }

    #[test]
    fn a_registration_names_the_method_by_a_constant_another_module_defines() {
        let files = tree(&[
            (
                "pkg/__init__.py",
                "from .names import PROMPT as PROMPT_METHOD\n",
            ),
            (
                "pkg/names.py",
                "PROMPT = \"session/prompt\"\nCANCEL = 'session/cancel'\n",
            ),
            (
                "pkg/server.py",
                "from pkg import PROMPT_METHOD\nfrom . import names\n\n\
                 def handle(server, params):\n    return {}\n\n\
                 def stop(params):\n    pass\n\n\
                 def setup(server):\n    server.register(PROMPT_METHOD, lambda params: handle(server, params))\n    server.register(method=names.CANCEL, handler=stop)\n    server.register(\"other\", setup)\n",
            ),
        ]);
        assert_eq!(handlers(&files, "session/prompt"), ["pkg/server.py:handle"]);
        assert_eq!(handlers(&files, "session/cancel"), ["pkg/server.py:stop"]);
    }

    #[test]
    fn decorators_tables_and_match_on_a_module_constant() {
        let files = tree(&[
            (
                "a.py",
                "import proto\n\nclass Methods:\n    PROMPT = \"session/prompt\"\n\n\
                 @rpc(Methods.PROMPT)\ndef prompt(params):\n    pass\n\n\
                 class Server:\n    def __init__(self):\n        self.table = {}\n        self.table[\"session/cancel\"] = self.on_cancel\n\n    def on_cancel(self, params):\n        pass\n",
            ),
            ("proto.py", "LOAD = \"session/load\"\n"),
            (
                "b.py",
                "import proto\n\ndef load(p):\n    pass\n\ndef route(method, p):\n    match method:\n        case proto.LOAD:\n            load(p)\n",
            ),
            // a client sending the method is no dispatcher of it
            (
                "client.py",
                "def ask(conn, params):\n    conn.request(\"session/prompt\", params)\n",
            ),
        ]);
        assert_eq!(handlers(&files, "session/prompt"), ["a.py:prompt"]);
        assert_eq!(handlers(&files, "session/cancel"), ["a.py:on_cancel"]);
        assert_eq!(handlers(&files, "session/load"), ["b.py:load"]);
    }
}
