//! What the protocol fixes in every TypeScript agent, found in its tree:
//! - the prompt handlers the SDK calls (`prompt` of the class built in
//!   `new AgentSideConnection((conn) => new X(conn), stream)`, the function registered with
//!   `.onRequest("session/prompt" | methods.agent.session.prompt, fn)`, or the function a
//!   hand-rolled dispatcher calls for `"session/prompt"`), and the `session/cancel` ones;
//! - the connection each handler's start card goes out on;
//! - every send of a session update (`x.sessionUpdate(...)`, `x.notify("session/update", ...)`,
//!   or a JSON-RPC `session/update` message handed to the agent's own writer).

mod classes;
mod client_side;
mod connection;
mod dispatch;
mod flow;
mod handlers;
mod sends;

use classes::{Built, object_function, sdk_built, sdk_classes};
pub use connection::connection_candidates;
use connection::{
    held_connection, pinned_connection, raw_connection, stored_connection, used_connection,
};
use dispatch::dispatched;
pub use handlers::handlers;
pub use sends::sends;

use super::placement::*;
use super::runtime::NS;
use crate::config::Pin;
use crate::error::{Candidate, Error, Location, Result};
use crate::lang::anchors::{Connection, PromptHandler, SendSite, Site};
use crate::lang::parts::{AgentFiles, Parsed, TestFiles};
use crate::lang::typescript::syntax::*;
use tree_sitter::Node;

pub(super) use crate::lang::tree::line;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Prompt,
    Cancel,
}

/// How a handler is covered.
#[derive(Debug, Clone)]
pub enum Cover<'a> {
    /// The function's code is wrapped (`turn(conn, sessionId, () => { ... })`) or, for cancel,
    /// begins with `cancel(sessionId)`.
    Body {
        func: Node<'a>,
        conn: Option<Conn>,
        session_id: String,
        /// What the handler is handed, when a dispatcher (or its own reads) shows it.
        passed: Passed,
    },
    /// The function value handed to the SDK is wrapped (`handler(fn)` / `cancelHandler(fn)`):
    /// the SDK's context carries the client and the params.
    Value { expr: Node<'a>, wrapped: bool },
}

/// What an agent's own dispatcher hands the function it calls for a method, with why (for the
/// report): the message it dispatches on (the whole JSON-RPC request, whose session id is
/// `params.sessionId`), that message's `params` (whose session id is `sessionId`), or what no
/// dispatcher shows (the SDK's params).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Passed {
    Unknown,
    Params(String),
    Envelope(String),
}

/// The connection a start card goes out on: where it is bound, as the handler spells it
/// (`anchor.text`), and what a `connection` pin names when that is known here.
#[derive(Debug, Clone)]
pub struct Conn {
    pub anchor: Connection,
    /// Where it comes from, for the report.
    pub origin: String,
}

/// The connection of a class whose installed base keeps it: found by the runtime on the agent.
pub fn held() -> String {
    format!("{NS}.held(this)")
}

/// A handler the SDK calls: the prompt handler, or (`Role::Cancel`) the `session/cancel` one,
/// found, named and pinned the same way.
#[derive(Debug, Clone)]
pub struct Handler<'a> {
    /// Where it is; the name a pin uses: `Class.method`, a function's name, or the method
    /// (`session_prompt`).
    pub anchor: PromptHandler,
    pub role: Role,
    pub cover: Cover<'a>,
}

impl Handler<'_> {
    /// The file the handler is in.
    pub fn file(&self) -> usize {
        self.anchor.site.file
    }
}

/// One send of a session update.
#[derive(Debug, Clone)]
pub struct Send<'a> {
    /// Where the call is; `wrapped`: the emitter already wraps its target.
    pub anchor: SendSite,
    pub call: Node<'a>,
    /// The expression the emitter wraps: the receiver (`this.client`), or the writer function.
    pub target: Node<'a>,
    /// A hand-rolled writer: the call's text with the `{ sessionId, update }` params replaced by
    /// [`RAW_PARAMS`] (what the start card's connection becomes), when it has them.
    pub raw_template: Option<String>,
}

impl<'a> Send<'a> {
    pub fn new(
        file: usize,
        call: Node<'a>,
        target: Node<'a>,
        wrapped: bool,
        raw_template: Option<String>,
    ) -> Send<'a> {
        Send {
            anchor: SendSite {
                site: Site::of_node(file, call),
                wrapped,
            },
            call,
            target,
            raw_template,
        }
    }

    /// The file the send is in.
    pub fn file(&self) -> usize {
        self.anchor.site.file
    }
}

/// The parameter of the start card's writer for an agent without an SDK:
/// `(acpParams: never) => this.write({ jsonrpc: "2.0", method: "session/update", params: acpParams })`.
pub const RAW_PARAMS: &str = "acpParams";

/// The files acp-patch may patch: not tests, not the runtime module itself, not the agent's
/// own copy of the SDK.
const AGENT_FILES: AgentFiles = AgentFiles {
    tests: TestFiles {
        dirs: &["test", "tests", "spec", "__tests__", "__mocks__", "e2e"],
        prefixes: &[],
        suffixes: &[],
        infixes: &[".test.", ".spec."],
        names: &[],
    },
    runtime_marker: super::runtime::MARKER,
    foreign: Some(is_sdk_copy),
};

pub fn is_agent_file(p: &Parsed) -> bool {
    AGENT_FILES.holds(p)
}

/// A file of the agent's own copy of the SDK: it declares the SDK's connection class
/// (`class AgentSideConnection` with the SDK's `sessionUpdate`). It counts as the SDK: its
/// dispatcher and writer are not the agent's, the agent's calls of its API are the sends.
pub fn is_sdk_copy(p: &Parsed) -> bool {
    let src = p.file.text.as_ref();
    src.contains("class AgentSideConnection")
        && classes(p.tree().root_node()).into_iter().any(|c| {
            name_of(c, src) == "AgentSideConnection"
                && class_members(c)
                    .into_iter()
                    .any(|m| member_name(m, src) == "sessionUpdate")
        })
}

/// Whether `src` may hold a node [`MethodNames::of`] reads as `method` (`session/<m>`): the
/// string, `X.session_<m>`, or `session.<m>` (`?.` and spaces allowed around the dot). A
/// literal test that decides which files are walked for the method: a bundle's modules hold
/// `session` and `prompt` everywhere, and a walk of each costs seconds.
pub fn may_name_method(src: &str, method: &str) -> bool {
    let m = method.strip_prefix("session/").unwrap_or(method);
    // `X.session_<m>` (`?.` and spaces allowed): the constant, not a word of another kind
    let member = |at: usize| {
        let before = src[..at].trim_end();
        before.strip_suffix('.').is_some()
    };
    crate::needles::contains(src, &format!("session/{m}"))
        || crate::needles::positions(src, &format!("session_{m}")).any(member)
        || crate::needles::positions(src, m).any(|at| {
            let Some(before) = src[..at].trim_end().strip_suffix('.') else {
                return false;
            };
            let before = before.strip_suffix('?').unwrap_or(before);
            before.trim_end().ends_with("session")
        })
}

/// The protocol methods a file's nodes name, read once per file: a string
/// (`"session/prompt"`), a constant (`methods.agent.session.prompt`,
/// `AGENT_METHODS.session_prompt`) or a variable holding the string — the file's variables
/// indexed on the first identifier asked about (a bundle asks about thousands: one pass over
/// its declarations, not one per question).
pub struct MethodNames<'t> {
    root: Node<'t>,
    src: &'t str,
    /// Each name's string, from the first declaration of that name with a value.
    constants: std::cell::OnceCell<std::collections::HashMap<&'t str, Option<&'t str>>>,
}

impl<'t> MethodNames<'t> {
    pub fn new(root: Node<'t>, src: &'t str) -> Self {
        MethodNames {
            root,
            src,
            constants: std::cell::OnceCell::new(),
        }
    }

    /// The protocol method `node` names.
    pub fn of(&self, node: Node<'t>) -> Option<String> {
        let src = self.src;
        match node.kind() {
            "string" => string_value(node, src).map(str::to_string),
            "member_expression" => {
                let prop = node
                    .child_by_field_name("property")
                    .map(|p| text(p, src))
                    .unwrap_or("");
                let obj = node.child_by_field_name("object")?;
                if let Some(rest) = prop.strip_prefix("session_") {
                    return Some(format!("session/{rest}"));
                }
                let obj_prop = if obj.kind() == "member_expression" {
                    obj.child_by_field_name("property")
                        .map(|p| text(p, src))
                        .unwrap_or("")
                } else {
                    text(obj, src)
                };
                (obj_prop == "session").then(|| format!("session/{prop}"))
            }
            "identifier" => self
                .constants()
                .get(text(node, src))
                .copied()
                .flatten()
                .map(str::to_string),
            _ => None,
        }
    }

    fn constants(&self) -> &std::collections::HashMap<&'t str, Option<&'t str>> {
        self.constants.get_or_init(|| {
            let mut by_name = std::collections::HashMap::new();
            for d in descendants(self.root, "variable_declarator") {
                if let (Some(name), Some(value)) = (
                    d.child_by_field_name("name"),
                    d.child_by_field_name("value"),
                ) {
                    by_name
                        .entry(text(name, self.src))
                        .or_insert_with(|| string_value(value, self.src));
                }
            }
            by_name
        })
    }
}

/// The index of the AgentSideConnection factory's argument among a class's constructor
/// arguments, when the factory builds that class.
pub fn factory_index(files: &[Parsed], file: usize, class: Node) -> Option<usize> {
    sdk_classes(files)
        .into_iter()
        .find(|(f, c, ..)| *f == file && *c == class)
        .map(|(_, _, index, ..)| index)
}

/// `acpProgress.<fn>(x)`: the inner expression, if `node` is that call.
pub fn unwrap_ns<'t>(node: Node<'t>, fun: &str, src: &str) -> Option<Node<'t>> {
    (node.kind() == "call_expression" && callee(node, src) == (NS, fun))
        .then(|| arguments(node).first().copied())
        .flatten()
}

pub(super) fn qualified(files: &[Parsed], file: usize, func: Node) -> String {
    let src = files[file].file.text.as_ref();
    let member = {
        let mut cur = Some(func);
        let mut found = None;
        while let Some(n) = cur {
            if matches!(n.kind(), "method_definition" | "public_field_definition") {
                found = Some(n);
                break;
            }
            if matches!(
                n.kind(),
                "function_declaration" | "generator_function_declaration"
            ) {
                return name_of(n, src).to_string();
            }
            cur = n.parent();
        }
        found
    };
    match member {
        Some(m) => {
            let class = enclosing_class(m).map(|c| name_of(c, src)).unwrap_or("");
            format!("{class}.{}", member_name(m, src))
        }
        None => {
            // `const prompt = async (...) => ...`
            func.parent()
                .filter(|p| p.kind() == "variable_declarator")
                .and_then(|p| p.child_by_field_name("name"))
                .map(|n| text(n, src).to_string())
                .unwrap_or_else(|| format!("<function at line {}>", line(func)))
        }
    }
}

/// The pattern of a function's first parameter.
fn first_pattern(func: Node) -> Option<Node> {
    let params = func
        .child_by_field_name("parameters")
        .map(named_children)
        .unwrap_or_default();
    let first = match params.first() {
        Some(p) => *p,
        None => func.child_by_field_name("parameter")?,
    };
    Some(first.child_by_field_name("pattern").unwrap_or(first))
}

/// The session id of a request, as the handler spells it: `params.sessionId`, or `sessionId`
/// when the request is destructured; when the handler is handed the whole JSON-RPC message
/// (`envelope`), `msg.params.sessionId`, or `params.sessionId` when it destructures `params`.
/// A function that declares no parameter is still handed the request: a function (not an
/// arrow, whose `arguments` are its parent's) reads it as `arguments[0]`.
pub(super) fn session_id_of(func: Node, src: &str, envelope: bool) -> Option<String> {
    let Some(pattern) = first_pattern(func) else {
        return (func.kind() != "arrow_function").then(|| {
            if envelope {
                "arguments[0]?.params?.sessionId".to_string()
            } else {
                "arguments[0]?.sessionId".to_string()
            }
        });
    };
    if envelope {
        return match pattern.kind() {
            "identifier" => Some(format!("{}.params.sessionId", text(pattern, src))),
            "object_pattern" => named_children(pattern)
                .into_iter()
                .find_map(|p| match p.kind() {
                    "shorthand_property_identifier_pattern" if text(p, src) == "params" => {
                        Some("params.sessionId".to_string())
                    }
                    "pair_pattern"
                        if p.child_by_field_name("key")
                            .is_some_and(|k| text(k, src) == "params") =>
                    {
                        let v = p.child_by_field_name("value")?;
                        params_session_id(v, src)
                    }
                    _ => None,
                }),
            _ => None,
        };
    }
    params_session_id(pattern, src)
}

/// The session id of the params a pattern binds.
fn params_session_id(pattern: Node, src: &str) -> Option<String> {
    match pattern.kind() {
        "identifier" => Some(format!("{}.sessionId", text(pattern, src))),
        "object_pattern" => named_children(pattern)
            .into_iter()
            .find_map(|p| match p.kind() {
                "shorthand_property_identifier_pattern" if text(p, src) == "sessionId" => {
                    Some("sessionId".to_string())
                }
                "pair_pattern"
                    if p.child_by_field_name("key")
                        .is_some_and(|k| text(k, src) == "sessionId") =>
                {
                    p.child_by_field_name("value")
                        .filter(|v| v.kind() == "identifier")
                        .map(|v| text(v, src).to_string())
                }
                _ => None,
            }),
        _ => None,
    }
}

pub(super) fn body_cover<'a>(
    files: &'a [Parsed],
    file: usize,
    func: Node<'a>,
    conn: Option<Conn>,
) -> Result<Cover<'a>> {
    cover_of(files, file, func, conn, Passed::Unknown)
}

/// Whether a function reads `<first parameter>.params` (only a whole JSON-RPC message has
/// `params`; the params of `session/prompt` and `session/cancel` have none), with where.
fn reads_params(files: &[Parsed], file: usize, func: Node) -> Option<usize> {
    let src = files[file].file.text.as_ref();
    let pattern = first_pattern(func).filter(|p| p.kind() == "identifier")?;
    let name = text(pattern, src);
    let body = func.child_by_field_name("body")?;
    descendants(body, "member_expression")
        .into_iter()
        .find(|m| {
            m.child_by_field_name("object")
                .is_some_and(|o| o.kind() == "identifier" && text(o, src) == name)
                && m.child_by_field_name("property")
                    .is_some_and(|p| text(p, src) == "params")
        })
        .map(|m| line(m))
}

/// The cover of a handler an agent's own dispatcher calls, handed `passed`: when no dispatcher
/// shows what, a handler that reads `<parameter>.params` is handed the whole message.
pub(super) fn dispatched_cover<'a>(
    files: &'a [Parsed],
    file: usize,
    func: Node<'a>,
    conn: Option<Conn>,
    passed: Passed,
) -> Result<Cover<'a>> {
    let src = files[file].file.text.as_ref();
    let passed = match passed {
        Passed::Unknown => match reads_params(files, file, func) {
            Some(at) => Passed::Envelope(format!(
                "it reads `{}.params` ({}:{at}): it is handed the whole JSON-RPC message",
                first_pattern(func)
                    .map(|p| text(p, src))
                    .unwrap_or_default(),
                files[file].file.rel
            )),
            None => Passed::Unknown,
        },
        known => known,
    };
    cover_of(files, file, func, conn, passed)
}

/// The cover of a handler handed `passed` (an SDK's handler: the params).
fn cover_of<'a>(
    files: &'a [Parsed],
    file: usize,
    func: Node<'a>,
    conn: Option<Conn>,
    passed: Passed,
) -> Result<Cover<'a>> {
    let src = files[file].file.text.as_ref();
    let envelope = matches!(passed, Passed::Envelope(_));
    let session_id = session_id_of(func, src, envelope).ok_or_else(|| Error::Unsupported {
        file: files[file].file.rel.clone(),
        line: line(func),
        message: format!(
            "`{}` takes no request parameter acp-patch can read the session id from (an arrow function has no `arguments` of its own); name it (`params`) or destructure `sessionId`",
            qualified(files, file, func)
        ),
    })?;
    Ok(Cover::Body {
        func,
        conn,
        session_id,
        passed,
    })
}

pub(super) fn candidate(files: &[Parsed], file: usize, line: usize, name: &str) -> Candidate {
    Candidate {
        location: Location {
            file: files[file].file.rel.clone(),
            line,
        },
        name: name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The literal test admits every text in which `MethodNames` can read the method, and
    /// turns down those that only use the words.
    #[test]
    fn a_file_may_name_a_method_only_where_the_reader_can_find_it() {
        let admitted = [
            r#"switch (m.method) { case "session/prompt": return 1 }"#,
            "const P = 'session/prompt';",
            "if (msg.method === AGENT_METHODS.session_prompt) {}",
            "map.set(methods.agent.session.prompt, f)",
            "map.set(methods.agent.session\n    ?.prompt, f)",
            "x[session . prompt] = f",
        ];
        for text in admitted {
            assert!(may_name_method(text, "session/prompt"), "{text:?}");
            let tree = crate::lang::typescript::syntax::parse(text, false);
            let names = MethodNames::new(tree.root_node(), text);
            let mut read = Vec::new();
            crate::lang::tree::walk(tree.root_node(), &mut |n| {
                read.extend(names.of(n));
                true
            });
            assert!(
                read.iter().any(|m| m == "session/prompt"),
                "{text:?}: {read:?}"
            );
        }
        for text in [
            "const prompt = session.getPrompt();",
            r#"events.push(makeEvent("session_prompt", state));"#,
            "// session: the user's prompt",
            "const s = 'session/update';",
        ] {
            assert!(!may_name_method(text, "session/prompt"), "{text:?}");
        }
    }
}
