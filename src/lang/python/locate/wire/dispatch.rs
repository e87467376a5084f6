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
use crate::lang::python::locate::found::is_agent_file;
use crate::lang::python::syntax::*;
use tree_sitter::Node;

/// The functions a dispatcher calls for the method.
pub fn dispatched<'a>(files: &'a [Parsed], method: &Method<'a>) -> Vec<At<'a>> {
    let mut out: Vec<At<'a>> = Vec::new();
    for i in 0..files.len() {
        for m in method.mentions(i) {
            // (never a function of acp-patch's own runtime module or of a test)
            if let Some(at) = handler_of(files, i, m)
                && is_agent_file(&files[at.file])
                && !declares_only(at.node, &files[at.file].file.text)
                && !out
                    .iter()
                    .any(|o| o.file == at.file && o.node.id() == at.node.id())
            {
                out.push(at);
            }
        }
    }
    for at in super::by_name::by_name(files, method.method) {
        if is_agent_file(&files[at.file])
            && !declares_only(at.node, &files[at.file].file.text)
            && !out
                .iter()
                .any(|o| o.file == at.file && o.node.id() == at.node.id())
        {
            out.push(at);
        }
    }
    out
}

/// Whether a function's body is `...` (after a docstring, if any): it declares, it handles
/// nothing. A client declares its requests so (codeswarm 0.6.43: `@API.method(name=
/// "session/prompt") def session_prompt(prompt, sessionId): ...`, its decorator building the
/// outgoing request), as a typing `Protocol` declares methods; `pass` stays a handler (a
/// cancel that has nothing to stop).
fn declares_only(def: Node, src: &str) -> bool {
    let Some(body) = def.child_by_field_name("body") else {
        return false;
    };
    let statements = named_children(body);
    let Some((last, before)) = statements.split_last() else {
        return false;
    };
    let is_expression = |n: Node, kind: &str| {
        n.kind() == "expression_statement" && n.named_child(0).is_some_and(|e| e.kind() == kind)
    };
    is_expression(*last, "ellipsis")
        && text(*last, src).trim() == "..."
        && before.len() <= 1
        && before.iter().all(|n| is_expression(*n, "string"))
}

/// The first dispatcher branch for the method that handles it inline (`if method ==
/// "session/prompt":` whose block hands the request to no function): no function there for the
/// card to wrap. A branch that calls nothing handles nothing: it maps the method to a value
/// (`if method == "session/prompt": return "prompt"`, a client's classifier of the requests it
/// sends: hermes-omp-acp 0.2.2), and is no dispatcher's; nor is one that ends raising (an
/// error path: `if cancelled and method == "session/prompt": raise Cancelled(...)`).
pub fn inline<'a>(files: &'a [Parsed], method: &Method<'a>) -> Option<At<'a>> {
    (0..files.len()).find_map(|i| {
        method.mentions(i).into_iter().find_map(|m| {
            let parent = m.parent()?;
            let block = match parent.kind() {
                "comparison_operator" => compared_block(parent)?,
                "case_pattern" | "union_pattern" => case_block(parent)?,
                _ => return None,
            };
            let last = named_children(block)
                .into_iter()
                .rfind(|s| s.kind() != "comment");
            if descendants_same_scope(block, "call").is_empty()
                || last.is_some_and(|s| s.kind() == "raise_statement")
            {
                return None;
            }
            branch_handler(files, i, block)
                .is_none()
                .then_some(At { file: i, node: m })
        })
    })
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
        "comparison_operator" => branch_handler(files, i, compared_block(parent)?),
        // `case "session/prompt":`
        "case_pattern" | "union_pattern" => branch_handler(files, i, case_block(parent)?),
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

/// The function a dispatcher's branch for the method hands the request to: the call of a
/// function of the tree (or one it hands to a call: `create_task(self._on_prompt(...))`,
/// `partial(self._on_prompt, ...)`) in the branch's last statement that makes one, when all
/// that follows it only ends the branch (`return`, `return result`, `break`). A branch that
/// goes on working after its last such call handles the method inline: a helper it calls
/// first (`session_id = self._session_id(params)`, a logger) is not its handler, nor is a
/// write of a JSON-RPC message, in place or through a reply helper of the agent's own
/// (`_result(request_id, {"stopReason": "end_turn"})`, see [`replies_only`]).
fn branch_handler<'a>(files: &'a [Parsed], i: usize, block: Node<'a>) -> Option<At<'a>> {
    let src = files[i].file.text.as_ref();
    let stmts: Vec<Node<'a>> = named_children(block)
        .into_iter()
        .filter(|s| s.kind() != "comment")
        .collect();
    let writes = |s: Node<'a>| writes_a_message(s, src) || writes_a_reply(files, i, s);
    // (a write of the response after the hand-off ends the branch too)
    let ends = |s: Node<'a>| ends_branch(s) || writes(s);
    let (k, at) = stmts
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, s)| !writes(**s))
        .find_map(|(k, s)| call_target(files, i, *s).map(|at| (k, at)))?;
    stmts[k + 1..].iter().all(|s| ends(*s)).then_some(at)
}

/// Statements whose calls are never a branch's hand-off: a definition, or a path the branch
/// may take (an `if`, a loop, a `match`).
const NOT_A_HAND_OFF: &[&str] = &[
    "function_definition",
    "class_definition",
    "decorated_definition",
    "if_statement",
    "for_statement",
    "while_statement",
    "match_statement",
];

/// The first function of the tree a statement calls or hands to a call (not inside a nested
/// function); in a `try` or `with`, the one its body hands the request to. A call under an
/// `if` or a loop is a path the branch may take (an early error reply), not its hand-off.
fn call_target<'a>(files: &'a [Parsed], i: usize, stmt: Node<'a>) -> Option<At<'a>> {
    match stmt.kind() {
        k if NOT_A_HAND_OFF.contains(&k) => return None,
        "try_statement" | "with_statement" => {
            return branch_handler(files, i, stmt.child_by_field_name("body")?);
        }
        _ => {}
    }
    descendants_same_scope(stmt, "call")
        .into_iter()
        .find_map(|c| {
            resolve_callable(files, i, c.child_by_field_name("function")?)
                .filter(|at| !replies_only(files, *at))
                .or_else(|| {
                    positional_args(c)
                        .into_iter()
                        .find_map(|a| resolve_callable(files, i, a))
                })
        })
}

/// Whether a statement only writes replies: every function of the tree it calls (one at
/// least) is a reply helper ([`replies_only`]). `_result(request_id, result)` after the
/// hand-off writes the response; `_result(request_id, await handle(params))` hands off.
fn writes_a_reply(files: &[Parsed], i: usize, stmt: Node) -> bool {
    if NOT_A_HAND_OFF.contains(&stmt.kind())
        || matches!(stmt.kind(), "try_statement" | "with_statement")
    {
        return false;
    }
    let targets: Vec<At> = descendants_same_scope(stmt, "call")
        .into_iter()
        .filter_map(|c| resolve_callable(files, i, c.child_by_field_name("function")?))
        .collect();
    !targets.is_empty() && targets.iter().all(|at| replies_only(files, *at))
}

/// A function of the tree that only writes a JSON-RPC reply: it builds a message without a
/// method (a dict with a `"jsonrpc"` key, no `"method"` key), and every function of the tree
/// it calls is handed that message (`def _result(i, r): _send({"jsonrpc": "2.0", "id": i,
/// "result": r})`, `reply = {...}; sys.stdout.write(json.dumps(reply))`). A dispatcher calls it
/// for every method to answer the request: it is nobody's handler.
fn replies_only(files: &[Parsed], at: At) -> bool {
    let src = files[at.file].file.text.as_ref();
    let Some(body) = at.node.child_by_field_name("body") else {
        return false;
    };
    let key = |p: Node| {
        p.child_by_field_name("key")
            .filter(|k| k.kind() == "string")
            .map(|k| text(k, src).trim_matches(|c| c == '"' || c == '\''))
    };
    let pairs = descendants_same_scope(body, "pair");
    if !pairs.iter().any(|p| key(*p) == Some("jsonrpc"))
        || pairs.iter().any(|p| key(*p) == Some("method"))
    {
        return false;
    }
    // the names the message is bound to (`reply = {"jsonrpc": ...}`)
    let names: Vec<&str> = descendants_same_scope(body, "assignment")
        .into_iter()
        .filter(|a| {
            a.child_by_field_name("right").is_some_and(|r| {
                descendants(r, "pair")
                    .iter()
                    .any(|p| key(*p) == Some("jsonrpc"))
            })
        })
        .filter_map(|a| a.child_by_field_name("left"))
        .filter(|l| l.kind() == "identifier")
        .map(|l| text(l, src))
        .collect();
    let hands_the_message = |c: Node| {
        c.child_by_field_name("arguments").is_some_and(|args| {
            descendants(args, "pair")
                .iter()
                .any(|p| key(*p) == Some("jsonrpc"))
                || descendants(args, "identifier")
                    .iter()
                    .any(|n| names.contains(&text(*n, src)))
        })
    };
    descendants_same_scope(body, "call").into_iter().all(|c| {
        c.child_by_field_name("function")
            .and_then(|f| resolve_callable(files, at.file, f))
            .is_none()
            || hands_the_message(c)
    })
}

/// A statement that only ends a branch: `return` of nothing or of a value computed without a
/// call, `break`, `continue`, `pass`.
fn ends_branch(stmt: Node) -> bool {
    match stmt.kind() {
        "break_statement" | "continue_statement" | "pass_statement" => true,
        "return_statement" => descendants(stmt, "call").is_empty(),
        _ => false,
    }
}

/// Whether a statement builds a JSON-RPC message in place (a dict with a `"jsonrpc"` or
/// `"method"` key): a write of a message, not a hand-off to a handler.
fn writes_a_message(stmt: Node, src: &str) -> bool {
    descendants(stmt, "pair").into_iter().any(|p| {
        p.child_by_field_name("key")
            .filter(|k| k.kind() == "string")
            .is_some_and(|k| {
                matches!(
                    text(k, src).trim_matches(|c| c == '"' || c == '\''),
                    "jsonrpc" | "method"
                )
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

    #[test]
    fn a_property_beside_the_method_named_is_no_handler() {
        // langgraph-acp 1.11.0: an error naming the operation it failed in
        let files = tree(&[(
            "pkg/__init__.py",
            "class Err(Exception):\n    def __init__(self, msg, *, agent=None, operation=None):\n        super().__init__(msg)\n\n\
             class Client:\n    def __init__(self, agent: str) -> None:\n        self._agent = agent\n\n    @property\n    def agent(self) -> str:\n        return self._agent\n\n    def on_prompt(self, params):\n        return {}\n\n    def fail(self):\n        raise Err(\"boom\", agent=self.agent, operation=\"session/prompt\")\n\n    def serve(self, server):\n        server.register(\"session/prompt\", self.on_prompt)\n",
        )]);
        assert_eq!(
            handlers(&files, "session/prompt"),
            ["pkg/__init__.py:on_prompt"]
        );
    }

    #[test]
    fn a_declared_request_is_no_handler_of_it() {
        // a client's stubs: the decorator builds the request the client sends
        let files = tree(&[(
            "api.py",
            "from jsonrpc import API as _A\nAPI = _A()\n\n\
                 @API.method(name=\"session/prompt\")\ndef session_prompt(prompt: list, sessionId: str) -> dict:\n    ...\n\n\
                 @API.method(name=\"session/cancel\")\ndef session_cancel(sessionId: str) -> None:\n    \"\"\"Cancel.\"\"\"\n    ...\n\n\
                 @API.method(name=\"session/load\")\ndef session_load(sessionId: str) -> None:\n    pass\n",
        )]);
        assert!(handlers(&files, "session/prompt").is_empty());
        assert!(handlers(&files, "session/cancel").is_empty());
        // `pass` handles the method (by doing nothing)
        assert_eq!(handlers(&files, "session/load"), ["api.py:session_load"]);
    }

    #[test]
    fn a_table_entry_naming_a_method_of_an_object_the_constructor_is_handed() {
        let files = tree(&[
            (
                "pkg/router.py",
                "from typing import Optional\nfrom .sessions import Sessions\nfrom . import cancels\n\n\
                 class Router:\n    def __init__(self, sessions: Sessions, stopper: Optional[\"cancels.Stopper\"], other) -> None:\n        self._sessions = sessions\n        self._stop = stopper\n        self._other = other\n        self._handlers = {}\n        self._handlers[\"session/prompt\"] = self._sessions.handle_prompt\n        self._handlers[\"session/cancel\"] = self._stop.handle_cancel\n        self._handlers[\"session/load\"] = self._other.handle_load\n",
            ),
            (
                "pkg/sessions.py",
                "class Sessions:\n    async def handle_prompt(self, msg):\n        return {}\n",
            ),
            (
                "pkg/cancels.py",
                "class Stopper:\n    async def handle_cancel(self, msg):\n        pass\n",
            ),
        ]);
        assert_eq!(
            handlers(&files, "session/prompt"),
            ["pkg/sessions.py:handle_prompt"]
        );
        assert_eq!(
            handlers(&files, "session/cancel"),
            ["pkg/cancels.py:handle_cancel"]
        );
        // a parameter without an annotation says nothing of its class
        assert!(handlers(&files, "session/load").is_empty());
    }

    #[test]
    fn a_branch_hands_the_request_to_its_last_call_and_one_that_goes_on_has_no_handler() {
        let src = r#"class S:
    def _id(self, p):
        return p["sessionId"]

    def _log(self, m):
        pass

    def _write(self, m):
        pass

    async def _prompt(self, p):
        return {}

    async def _load(self, p):
        return {}

    async def dispatch(self, method, p, i):
        if method == "session/prompt":
            self._log(method)
            result = await self._prompt(p)
            self._write({"jsonrpc": "2.0", "id": i, "result": result})
            return
        if method == "session/cancel":
            t = self._tasks.get(self._id(p))
            t.cancel()
            return None
        if method == "session/load":
            # a comment
            return await self._load(p)
        if method == "session/set_mode":
            self._write({"jsonrpc": "2.0", "method": "session/update"})
        if method == "session/new":
            if not p:
                self._log("no params")
                return
            self._tasks.add(p)
        if method == "session/set_model":
            try:
                return await self._load(p)
            except ValueError:
                self._log("bad model")
"#;
        let files = tree(&[("a.py", src)]);
        assert_eq!(handlers(&files, "session/prompt"), ["a.py:_prompt"]);
        // handled inline after a helper: no handler
        assert!(handlers(&files, "session/cancel").is_empty());
        assert_eq!(handlers(&files, "session/load"), ["a.py:_load"]);
        // a branch that only writes a message hands nothing over
        assert!(handlers(&files, "session/set_mode").is_empty());
        // a call under an `if` is a path the branch may take (an early error), not its hand-off
        assert!(handlers(&files, "session/new").is_empty());
        // in a `try`, what its body hands the request to
        assert_eq!(handlers(&files, "session/set_model"), ["a.py:_load"]);
    }

    #[test]
    fn a_reply_helper_the_branch_calls_last_writes_the_response_and_is_no_handler() {
        let src = r#"import json
import sys

def _send(message):
    sys.stdout.write(json.dumps(message) + "\n")

def _result(request_id, result):
    _send({"jsonrpc": "2.0", "id": request_id, "result": result})

def _error(request_id, code, text):
    reply = {"jsonrpc": "2.0", "id": request_id}
    reply["error"] = {"code": code, "message": text}
    _send(reply)

def _notify(session_id, update):
    _send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}})

def handle_prompt(params):
    _notify(params["sessionId"], {"sessionUpdate": "agent_message_chunk"})
    return {"stopReason": "end_turn"}

def _load(params):
    return {}

def _handle(message):
    request_id = message.get("id")
    method = message.get("method")
    params = message.get("params") or {}
    if method == "session/prompt":
        result = handle_prompt(params)
        _result(request_id, result)
        return
    if method == "session/load":
        _result(request_id, _load(params))
        return
    if method == "session/cancel":
        if not params:
            _error(request_id, -32602, "no params")
            return
        for part in params.get("prompt") or []:
            _notify(params["sessionId"], part)
        _result(request_id, {"stopReason": "end_turn"})
        return
"#;
        let files = tree(&[("a.py", src)]);
        assert_eq!(handlers(&files, "session/prompt"), ["a.py:handle_prompt"]);
        assert_eq!(handlers(&files, "session/load"), ["a.py:_load"]);
        // handled inline, answered through the reply helper: no handler (never `_result`)
        assert!(handlers(&files, "session/cancel").is_empty());
        // which the refusal names: the branch handling it inline
        let inline = |m| {
            super::inline(&files, &Method::of(&files, m)).map(|at| at.node.start_position().row + 1)
        };
        assert_eq!(inline("session/cancel"), Some(36));
        assert_eq!(inline("session/prompt"), None);
    }
}
