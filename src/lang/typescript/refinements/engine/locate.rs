//! The engine shape (pi-acp and agents like it): a session class whose emitter method sends
//! every update, which hands the turn to an engine process (`this.<engine>.prompt(...)`) and
//! settles it later (`settleTurn()`, an `agent_settled` event). Finding where each piece goes:
//! the emitter, its class, the hand-off, the turn's end, error paths and cancel. Every choice
//! either has one candidate, is pinned in `acp-patch.toml` (`[typescript]`), or fails with the
//! candidates listed.

use crate::config::{Pin, TypeScriptPins};
use crate::error::{Candidate, Error, Location, Result};
use crate::lang::parts::Parsed;
use crate::lang::typescript::syntax::*;
use tree_sitter::Node;

/// The SDK generation, by how the emitter sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// `conn.sessionUpdate({ sessionId, update })` (0.x and 1.x, `AgentSideConnection`).
    V1,
    /// `client.notify("session/update", { sessionId, update })` (2.x).
    V2,
}

/// Methods that end a turn the engine ran.
const SETTLE_METHODS: &[&str] = &["settleTurn", "endTurn", "finishTurn", "completeTurn"];

pub struct Sites<'a> {
    /// The file of the emitter's class: every piece goes there.
    pub file: usize,
    pub class: Node<'a>,
    pub ctor: Option<Node<'a>>,
    pub emitter: Node<'a>,
    pub emitter_name: String,
    /// The emitter's parameter names, and which one is the update.
    pub emitter_params: Vec<String>,
    pub update_param: usize,
    pub generation: Generation,
    /// The statement that hands the turn to the model (Hook A goes before it).
    pub handoff: Node<'a>,
    /// The method holding the hand-off: the turn's set-up (wiring) is at its top.
    pub turn_method: Node<'a>,
    /// What the emitter sends through and the session id, as the turn method spells them.
    pub conn: String,
    pub session_id: String,
    /// When the emitter takes the session id as a parameter (one object serves many sessions):
    /// that parameter's name; the text hold is then kept per session.
    pub hold_key: Option<String>,
    /// The turn ends at the top of this block (a `settleTurn()` method, an `agent_settled` case).
    pub turn_end: Node<'a>,
    /// Blocks run when the hand-off fails (`catch` clauses, `.catch(err => { ... })`).
    pub error_blocks: Vec<Node<'a>>,
    /// The body of the class's `cancel` method, if it has one.
    pub cancel: Option<Node<'a>>,
}

use crate::lang::tree::line;

fn class_name<'s>(class: Node, src: &'s str) -> &'s str {
    name_of(class, src)
}

fn method_of<'t>(node: Node<'t>) -> Option<Node<'t>> {
    let mut cur = node.parent();
    while let Some(n) = cur {
        if n.kind() == "method_definition" {
            return Some(n);
        }
        cur = n.parent();
    }
    None
}

fn class_of<'t>(node: Node<'t>) -> Option<Node<'t>> {
    let mut cur = node.parent();
    while let Some(n) = cur {
        if matches!(
            n.kind(),
            "class_declaration" | "abstract_class_declaration" | "class"
        ) {
            return Some(n);
        }
        cur = n.parent();
    }
    None
}

/// Picks the one candidate, honouring a pin; otherwise an error listing them. Pin keys are
/// `typescript.<key>`: the `[typescript]` table of acp-patch.toml.
fn choose<'a>(
    decisions: &crate::lang::survey::Decisions,
    files: &[Parsed],
    found: Vec<(usize, Node<'a>, String)>,
    pin: Option<&String>,
    site: &'static str,
    pin_key: &'static str,
    none: impl FnOnce() -> String,
) -> Result<(usize, Node<'a>)> {
    let found = found
        .into_iter()
        .map(|(f, n, name)| {
            let location = Location {
                file: files[f].file.rel.clone(),
                line: line(n),
            };
            ((f, n), Candidate { location, name })
        })
        .collect();
    let pin = pin.map(|p| Pin::parse(p));
    crate::lang::parts::choose(decisions, found, pin, site, pin_key, none)
}

/// The send call of an emitter and its generation: `X.sessionUpdate({...})` or
/// `X.notify("session/update", {...})`.
fn send_call<'t>(method: Node<'t>, src: &str) -> Option<(Node<'t>, Generation)> {
    descendants(method, "call_expression")
        .into_iter()
        .find_map(|c| match callee(c, src) {
            (o, "sessionUpdate") if !o.is_empty() => Some((c, Generation::V1)),
            (o, "notify")
                if !o.is_empty()
                    && arguments(c).first().and_then(|a| string_value(*a, src))
                        == Some("session/update") =>
            {
                Some((c, Generation::V2))
            }
            _ => None,
        })
}

/// Calls `this.<name>(...)` in a node.
fn this_calls<'t>(node: Node<'t>, name: &str, src: &str) -> Vec<Node<'t>> {
    descendants(node, "call_expression")
        .into_iter()
        .filter(|c| callee(*c, src) == ("this", name))
        .collect()
}

pub fn locate<'a>(
    decisions: &crate::lang::survey::Decisions,
    root: &std::path::Path,
    files: &'a [Parsed],
    pins: &TypeScriptPins,
) -> Result<Sites<'a>> {
    // 1. The emitter: a method that sends session updates and that its class calls.
    let mut emitters = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        for class in classes(p.tree().root_node()) {
            for m in methods(class) {
                let name = name_of(m, src);
                if name == "constructor" || send_call(m, src).is_none() {
                    continue;
                }
                let called = methods(class)
                    .into_iter()
                    .filter(|o| *o != m)
                    .any(|o| !this_calls(o, name, src).is_empty());
                if called {
                    emitters.push((i, m, format!("{}.{name}", class_name(class, src))));
                }
            }
        }
    }
    if emitters.is_empty() && pins.emitter.is_none() {
        return Err(Error::NoAgent {
            root: root.to_path_buf(),
            detail: "no class method sends `sessionUpdate(...)` / `notify(\"session/update\", ...)` for the rest of its class".into(),
        });
    }
    let (file, emitter) = choose(
        decisions,
        files,
        emitters,
        pins.emitter.as_ref(),
        "session-update emitter",
        "typescript.emitter",
        String::new,
    )?;
    let p = &files[file];
    let src = p.file.text.as_ref();
    let class = class_of(emitter).expect("methods are in classes");
    let cname = class_name(class, src).to_string();
    let unsupported = |n: Node, message: String| Error::Unsupported {
        file: p.file.rel.clone(),
        line: line(n),
        message,
    };
    let emitter_name = name_of(emitter, src).to_string();
    let (send, generation) = send_call(emitter, src).expect("chosen for it");
    let conn_expr = callee(send, src).0.to_string();
    let args = arguments(send);
    let payload = match generation {
        Generation::V1 => args.first(),
        Generation::V2 => args.get(1),
    }
    .copied()
    .filter(|a| a.kind() == "object")
    .ok_or_else(|| {
        unsupported(
            send,
            "the emitter must send an object literal `{ sessionId, update }`; pin another with `emitter`".into(),
        )
    })?;
    let emitter_params: Vec<String> = parameters(emitter, src)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let update_expr = object_property(payload, "update", src)
        .map(|n| text(n, src).to_string())
        .unwrap_or_default();
    let update_param = emitter_params
        .iter()
        .position(|n| !n.is_empty() && *n == update_expr)
        .ok_or_else(|| {
            unsupported(
                emitter,
                format!(
                    "the emitter `{cname}.{emitter_name}` must take the update as a parameter and send it as `update`"
                ),
            )
        })?;
    let sid_expr = object_property(payload, "sessionId", src)
        .map(|n| text(n, src).to_string())
        .ok_or_else(|| unsupported(send, "the emitter sends no `sessionId`".into()))?;

    // 2. The hand-off to the engine, in the same class: `this.<engine>.prompt(...)`.
    let mut engines = Vec::new();
    for m in methods(class) {
        let qual = format!("{cname}.{}", name_of(m, src));
        for c in descendants(m, "call_expression") {
            if is_engine_handoff(c, src) {
                engines.push((file, statement_of(c), qual.clone()));
            }
        }
    }
    let class_line = line(class);
    let (_, handoff) = choose(
        decisions,
        files,
        engines,
        pins.handoff.as_ref(),
        "hand-off to the model",
        "typescript.handoff",
        || {
            format!(
                "class {cname} at {}:{class_line} has no `this.<engine>.prompt(...)` call",
                p.file.rel
            )
        },
    )?;
    let turn_method = method_of(handoff).expect("found in a method");

    // 3. Conn and session id as the turn method spells them.
    let in_turn = |expr: &str, what: &str| -> Result<String> {
        if expr.starts_with("this.") || expr == "this" {
            return Ok(expr.to_string());
        }
        let Some(k) = emitter_params.iter().position(|n| n == expr) else {
            return Err(unsupported(
                send,
                format!("the emitter's {what} `{expr}` is neither `this.…` nor a parameter"),
            ));
        };
        this_calls(turn_method, &emitter_name, src)
            .into_iter()
            .find_map(|c| arguments(c).get(k).map(|a| text(*a, src).to_string()))
            .ok_or_else(|| {
                unsupported(
                    turn_method,
                    format!(
                        "`{}` never calls `this.{emitter_name}(...)`, so its {what} is unknown",
                        name_of(turn_method, src)
                    ),
                )
            })
    };
    let conn = in_turn(&conn_expr, "connection")?;
    let session_id = in_turn(&sid_expr, "session id")?;
    let hold_key = emitter_params
        .iter()
        .any(|n| !n.is_empty() && *n == sid_expr)
        .then(|| sid_expr.clone());

    // 4. Turn end, error paths, cancel.
    let turn_end = {
        let mut ends = Vec::new();
        for m in methods(class) {
            let name = name_of(m, src);
            let settles = SETTLE_METHODS.contains(&name);
            if settles || pins.turn_end.is_some() {
                ends.push((file, m, format!("{cname}.{name}")));
            }
        }
        if ends.is_empty() {
            // an event relay that settles the turn on `agent_settled` (pi-acp ≤0.0.33)
            for case in descendants(class, "switch_case") {
                if case
                    .child_by_field_name("value")
                    .and_then(|v| string_value(v, src))
                    .is_some_and(|v| v.ends_with("_settled"))
                    && let Some(block) = statements(case)
                        .into_iter()
                        .find(|s| s.kind() == "statement_block")
                {
                    let m = method_of(case).map(|m| name_of(m, src)).unwrap_or("");
                    ends.push((file, block, format!("{cname}.{m}")));
                }
            }
        }
        let (_, end) = choose(
            decisions,
            files,
            ends,
            pins.turn_end.as_ref(),
            "end of the turn",
            "typescript.turn_end",
            || {
                format!(
                    "the hand-off at {}:{} returns at once, and class {cname} has no settleTurn()/endTurn() method",
                    p.file.rel,
                    line(handoff)
                )
            },
        )?;
        if end.kind() == "method_definition" {
            body(end).expect("method body")
        } else {
            end
        }
    };
    let mut error_blocks = Vec::new();
    let mut cur = handoff.parent();
    while let Some(n) = cur {
        if n == turn_method {
            break;
        }
        if n.kind() == "try_statement"
            && let Some(h) = n.child_by_field_name("handler")
            && let Some(b) = h.child_by_field_name("body")
        {
            error_blocks.push(b);
        }
        cur = n.parent();
    }
    for c in descendants(handoff, "call_expression") {
        if callee(c, src).1 == "catch"
            && let Some(f) = arguments(c).first()
            && f.kind() == "arrow_function" // a `function` would have its own `this`
            && let Some(b) = body(*f).filter(|b| b.kind() == "statement_block")
        {
            error_blocks.push(b);
        }
    }
    let cancel = methods(class)
        .into_iter()
        .find(|m| name_of(*m, src) == "cancel")
        .and_then(body);
    let ctor = methods(class)
        .into_iter()
        .find(|m| name_of(*m, src) == "constructor");
    Ok(Sites {
        file,
        class,
        ctor,
        emitter,
        emitter_name,
        emitter_params,
        update_param,
        generation,
        handoff,
        turn_method,
        conn,
        session_id,
        hold_key,
        turn_end,
        error_blocks,
        cancel,
    })
}

/// `this.<engine>.prompt(...)`: the turn handed to an engine (a subprocess, a worker).
fn is_engine_handoff(call: Node, src: &str) -> bool {
    let (obj, prop) = callee(call, src);
    prop == "prompt" && obj.starts_with("this.") && !obj[5..].contains('.')
}

/// Whether the tree is engine-shaped: pins of the engine sites, or one class that sends
/// updates through an emitter method of its own, hands the turn to an engine and settles it
/// in a method or an `*_settled` event case. Such agents keep the engine strategy; every
/// other agent gets the protocol strategy.
pub fn probe(files: &[Parsed], pins: &TypeScriptPins) -> bool {
    if pins.emitter.is_some() || pins.handoff.is_some() || pins.turn_end.is_some() {
        return true;
    }
    let mut shaped = 0;
    for p in files {
        let src = p.file.text.as_ref();
        for class in classes(p.tree().root_node()) {
            let ms = methods(class);
            let emits = ms.iter().any(|m| {
                let name = name_of(*m, src);
                name != "constructor"
                    && send_call(*m, src).is_some()
                    && ms
                        .iter()
                        .any(|o| o != m && !this_calls(*o, name, src).is_empty())
            });
            let hands_off = descendants(class, "call_expression")
                .into_iter()
                .any(|c| is_engine_handoff(c, src));
            let settles = ms
                .iter()
                .any(|m| SETTLE_METHODS.contains(&name_of(*m, src)))
                || descendants(class, "switch_case").into_iter().any(|case| {
                    case.child_by_field_name("value")
                        .and_then(|v| string_value(v, src))
                        .is_some_and(|v| v.ends_with("_settled"))
                });
            if emits && hands_off && settles {
                shaped += 1;
            }
        }
    }
    shaped == 1
}
