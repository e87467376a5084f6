//! What the ACP SDK contract fixes in every Python agent, found on the syntax tree: the agent
//! classes the SDK calls (handed to `run_agent` / `AgentSideConnection`, or subclasses of the
//! SDK's `Agent`), their `prompt` and `cancel` handlers, where the SDK hands them the
//! connection, and every SDK send of a session update wherever it sits.

use super::binding::bound_classes;
use super::connection::connection;
pub use super::found::{
    Anchors, Handler, RUNTIME_FILE, RUNTIME_MARKER, RUNTIME_NAME, Send, is_agent_file,
};
use super::found::{Classes, prompt_anchor};
use super::locate::{At, pin_mismatch};
use super::syntax::*;
use crate::config::{Pin, PythonPins};
use crate::error::{Candidate, Error, Result};
use crate::lang::anchors::PromptHandler;
use crate::lang::parts::Parsed;
use crate::needles::{contains, positions};
use std::collections::BTreeMap;
use tree_sitter::Node;

/// SDK methods that put a session update on the wire (>= 0.7, <= 0.6).
const SEND_METHODS: &[&str] = &["session_update", "sessionUpdate"];

/// Whether a text may hold a send (a literal test that spares the parse): the method as an
/// attribute that is called (`conn.session_update(..)`) or is the whole right side of an
/// assignment (`send = conn.session_update`), or named in a string inside a `getattr(` call
/// (a key `"session_update"` of some dict, a field `x.session_update is None`, are none).
fn may_send(src: &str) -> bool {
    SEND_METHODS.iter().any(|m| {
        positions(src, &format!(".{m}")).any(|i| {
            let after = src[i + 1 + m.len()..].trim_start_matches([' ', '\t']);
            after.is_empty() || after.starts_with(['(', '\n', '\r', ';', '#', '\\'])
        }) || ['"', '\'']
            .iter()
            .any(|q| positions(src, &format!("{q}{m}{q}")).any(|i| inside_getattr(&src[..i])))
    })
}

/// Whether the text ends inside the arguments of a `getattr(` call: the parentheses after its
/// last `getattr(` never close it.
fn inside_getattr(before: &str) -> bool {
    let Some(start) = before.rfind("getattr(") else {
        return false;
    };
    let mut depth = 1;
    for b in before[start + "getattr(".len()..].bytes() {
        match b {
            b'(' => depth += 1,
            b')' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return false;
        }
    }
    true
}

/// Every SDK send of a session update in the agent's files.
fn sends<'a>(files: &'a [Parsed]) -> Vec<Send<'a>> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        if !is_agent_file(p) || !may_send(src) {
            continue;
        }
        for call in descendants(p.tree().root_node(), "call") {
            let Some(f) = call
                .child_by_field_name("function")
                .filter(|f| f.kind() == "attribute")
            else {
                continue;
            };
            let method = f.child_by_field_name("attribute").map(|a| text(a, src));
            let Some(receiver) = f.child_by_field_name("object") else {
                continue;
            };
            if !method.is_some_and(|m| SEND_METHODS.contains(&m))
                || (receiver.kind() == "call" && callee_name(receiver, src) == "super")
            {
                continue;
            }
            out.push(Send::new(
                At {
                    file: i,
                    node: call,
                },
                receiver,
                is_emitter_call(receiver, src),
                false,
            ));
        }
        // the send method taken as a value and called through the name it is bound to:
        // `sender = getattr(conn, "session_update", None)` … `await sender(..)`, `send =
        // conn.session_update` … `send(..)` (a value never called, e.g. an update's
        // `session_update` field read as its kind, is no send)
        for call in descendants(p.tree().root_node(), "call") {
            let args = positional_args(call);
            if callee_name(call, src) != "getattr"
                || callee_object(call, src).is_some()
                || !(2..=3).contains(&args.len())
                || !string_literal(args[1], src).is_some_and(|m| SEND_METHODS.contains(&m))
                || !called_alias(call, src)
            {
                continue;
            }
            out.push(Send::new(
                At {
                    file: i,
                    node: call,
                },
                args[0],
                is_emitter_call(args[0], src),
                false,
            ));
        }
        for a in descendants(p.tree().root_node(), "attribute") {
            let method = a.child_by_field_name("attribute").map(|m| text(m, src));
            let Some(receiver) = a.child_by_field_name("object") else {
                continue;
            };
            let parent = a.parent();
            let called = parent.is_some_and(|c| {
                c.kind() == "call" && c.child_by_field_name("function") == Some(a)
            });
            let assigned = parent.is_some_and(|c| {
                matches!(c.kind(), "assignment" | "augmented_assignment")
                    && c.child_by_field_name("left") == Some(a)
            });
            if called
                || assigned
                || !method.is_some_and(|m| SEND_METHODS.contains(&m))
                || (receiver.kind() == "call" && callee_name(receiver, src) == "super")
                || !called_alias(a, src)
            {
                continue;
            }
            out.push(Send::new(
                At { file: i, node: a },
                receiver,
                is_emitter_call(receiver, src),
                false,
            ));
        }
    }
    out
}

/// Whether `value` is assigned to a plain name (`name = <value>`) that the same function (or
/// module) then calls: `name(..)`.
fn called_alias(value: Node, src: &str) -> bool {
    let Some(assignment) = value
        .parent()
        .filter(|a| a.kind() == "assignment" && a.child_by_field_name("right") == Some(value))
    else {
        return false;
    };
    let Some(name) = assignment
        .child_by_field_name("left")
        .filter(|l| l.kind() == "identifier")
        .map(|l| text(l, src))
    else {
        return false;
    };
    let scope = enclosing_function(value)
        .and_then(|f| f.child_by_field_name("body"))
        .unwrap_or_else(|| top_level(value).parent().unwrap_or(value));
    descendants_same_scope(scope, "call").into_iter().any(|c| {
        c.child_by_field_name("function")
            .is_some_and(|f| f.kind() == "identifier" && text(f, src) == name)
    })
}

/// The value of a plain string literal (`"x"`, `'x'`), no prefix or interpolation.
fn string_literal<'a>(node: Node, src: &'a str) -> Option<&'a str> {
    if node.kind() != "string" {
        return None;
    }
    let t = text(node, src);
    let inner = t
        .strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| t.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))?;
    (!inner.contains(['"', '\'', '\\', '{'])).then_some(inner)
}

/// `acp_progress.emitter(x)`.
pub fn is_emitter_call(node: Node, src: &str) -> bool {
    node.kind() == "call"
        && callee_name(node, src) == "emitter"
        && callee_object(node, src) == Some(RUNTIME_NAME)
}

/// The function (qualified name) a node is in, or `<module>`.
pub fn function_name(node: Node, src: &str) -> String {
    enclosing_function(node)
        .map(|f| qualified_name(f, src))
        .unwrap_or_else(|| "<module>".into())
}

/// Every `async def prompt` of a class in a module that mentions the SDK: the candidates when
/// no class is bound to the SDK, and what a `prompt` pin chooses from.
fn prompt_methods<'a>(files: &'a [Parsed]) -> Vec<(At<'a>, String)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        if !is_agent_file(p) || !contains(src, "acp") {
            continue;
        }
        for c in descendants(p.tree().root_node(), "class_definition") {
            for m in methods(c) {
                if name_of(m, src) == "prompt" && is_async(m, src) {
                    out.push((At { file: i, node: m }, qualified_name(m, src)));
                }
            }
        }
    }
    out
}

fn class_of(def: Node) -> Option<Node> {
    def.parent()
        .and_then(|n| {
            if n.kind() == "decorated_definition" {
                n.parent()
            } else {
                Some(n)
            }
        })
        .and_then(|b| b.parent())
        .filter(|c| c.kind() == "class_definition")
}

pub fn locate<'a>(
    decisions: &crate::lang::survey::Decisions,
    root: &std::path::Path,
    files: &'a [Parsed],
    pins: &PythonPins,
) -> Result<Anchors<'a>> {
    // no SDK at all: the agent's own JSON-RPC loop
    if !files
        .iter()
        .any(|p| is_agent_file(p) && super::wire::imports_sdk(p))
        && let Some(found) = super::wire::locate(decisions, files, pins)?
    {
        return Ok(found);
    }
    let classes = Classes::of(files);
    let bound = bound_classes(files, &classes);
    // (class, prompt) of every bound class that has one
    let mut found: Vec<(At<'a>, At<'a>)> = Vec::new();
    for c in &bound {
        if let Some(p) = classes.method(files, *c, "prompt")
            && is_async(p.node, &files[p.file].file.text)
            && !found.iter().any(|(_, q)| q.node == p.node)
        {
            found.push((*c, p));
        }
    }
    if let Some(pin) = &pins.prompt {
        let pin = Pin::parse(pin);
        let all = prompt_methods(files);
        let hit: Vec<&(At, String)> = all
            .iter()
            .filter(|(at, name)| pin.matches(&files[at.file].file.rel, Some(name)))
            .collect();
        let Some((at, _)) = hit.first() else {
            return Err(pin_mismatch(
                files,
                "ACP prompt handler",
                "prompt",
                &pin,
                &all,
            ));
        };
        let class = class_of(at.node).map(|n| At {
            file: at.file,
            node: n,
        });
        found = vec![(class.expect("a prompt method is in a class"), *at)];
    } else if found.is_empty() {
        let all = prompt_methods(files);
        let chosen = super::locate::choose(decisions,
            files,
            all,
            None,
            "ACP prompt handler",
            "prompt",
            || "no class is handed to `acp.run_agent` / `AgentSideConnection` or derives from `acp.Agent`, no class in a module that imports `acp` has an `async def prompt`, and no dispatcher of `\"session/prompt\"` (a dict of handlers, `if`/`match` on the method, a call or decorator that registers a handler for it, a handler table) reaches a function of the tree; pin the handler in acp-patch.toml: `prompt = \"<file>.py:<function or Class.method>\"`".into(),
        )
        .map_err(|e| match e {
            Error::Unlocatable { detail, .. } => Error::NoAgent {
                root: root.to_path_buf(),
                detail,
            },
            e => e,
        })?;
        let class = class_of(chosen.node).expect("a prompt method is in a class");
        found = vec![(
            At {
                file: chosen.file,
                node: class,
            },
            chosen,
        )];
    }
    // what `acp-patch init` lists: every prompt handler apply patches (a pin holds it to one)
    let prompts: Vec<PromptHandler> = found
        .iter()
        .map(|(_, p)| prompt_anchor(files, *p))
        .collect();
    let cands: Vec<Candidate> = prompts
        .iter()
        .map(|h| h.candidate(&files[h.site.file].file.rel))
        .collect();
    decisions.record(
        "ACP prompt handler",
        "prompt",
        &cands.iter().collect::<Vec<_>>(),
        if cands.len() == 1 {
            cands.first()
        } else {
            None
        },
    );
    let sends = sends(files);
    let sends = match &pins.emitter {
        Some(pin) => {
            let pin = Pin::parse(pin);
            let kept: Vec<Send> = sends
                .iter()
                .filter(|s| {
                    let p = &files[s.anchor.site.file];
                    pin.matches(&p.file.rel, Some(&function_name(s.call, &p.file.text)))
                })
                .map(|s| Send {
                    anchor: s.anchor.clone(),
                    call: s.call,
                    receiver: s.receiver,
                    wire: s.wire,
                })
                .collect();
            if kept.is_empty() {
                let seen: Vec<(At, String)> = sends
                    .iter()
                    .map(|s| {
                        (
                            s.at(),
                            function_name(s.call, &files[s.anchor.site.file].file.text),
                        )
                    })
                    .collect();
                return Err(pin_mismatch(
                    files,
                    "session-update emitter",
                    "emitter",
                    &pin,
                    &seen,
                ));
            }
            kept
        }
        None => sends,
    };
    let mut handlers = Vec::new();
    for ((class, prompt), anchor) in found.into_iter().zip(prompts) {
        let connection = connection(decisions, files, &classes, class, &sends, pins)?;
        let class_src = &files[class.file].file.text;
        handlers.push(Handler {
            class,
            class_name: name_of(class.node, class_src).to_string(),
            anchor,
            prompt: prompt.node,
            cancel: classes
                .method(files, class, "cancel")
                .filter(|c| is_async(c.node, &files[c.file].file.text)),
            connection,
            send_kwargs: send_kwargs(files, class, &sends),
        });
    }
    Ok(Anchors { handlers, sends })
}

/// Literal extra keywords of the sends in the class (else in the whole tree), the most
/// common value of each.
fn send_kwargs(files: &[Parsed], class: At, sends: &[Send]) -> Vec<(String, String)> {
    let in_class: Vec<&Send> = sends
        .iter()
        .filter(|s| {
            s.anchor.site.file == class.file
                && class.node.byte_range().contains(&s.anchor.site.range.start)
        })
        .collect();
    let pool: Vec<&Send> = if in_class.is_empty() {
        sends.iter().collect()
    } else {
        in_class
    };
    let mut counts: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for s in pool {
        let src = &files[s.anchor.site.file].file.text;
        let Some(args) = s.call.child_by_field_name("arguments") else {
            continue;
        };
        for k in named_children(args) {
            if k.kind() != "keyword_argument" {
                continue;
            }
            let name = name_of(k, src);
            let Some(v) = k.child_by_field_name("value") else {
                continue;
            };
            if matches!(name, "session_id" | "update" | "sessionId")
                || !matches!(v.kind(), "string" | "integer" | "float" | "true" | "false")
                || (v.kind() == "string" && !descendants(v, "interpolation").is_empty())
            {
                continue;
            }
            *counts
                .entry(name.to_string())
                .or_default()
                .entry(text(v, src).to_string())
                .or_default() += 1;
        }
    }
    counts
        .into_iter()
        .filter_map(|(k, values)| {
            values
                .into_iter()
                .max_by_key(|(v, n)| (*n, std::cmp::Reverse(v.clone())))
                .map(|(v, _)| (k, v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::may_send;

    #[test]
    fn a_text_may_send_when_the_method_is_an_attribute_or_a_string_given_to_getattr() {
        assert!(may_send(
            "await self._conn.session_update(session_id=s, update=u)"
        ));
        assert!(may_send("send = conn.sessionUpdate\n"));
        assert!(may_send("s = getattr(conn, \"session_update\", None)"));
        assert!(may_send(
            "s = getattr(\n    self.clients[(a, b)],\n    'session_update',\n)"
        ));
        // a key of some dict, a string after a closed getattr call
        assert!(!may_send(
            "ROUTES = {\"session_update\": {\"method\": \"PATCH\"}}"
        ));
        assert!(!may_send(
            "x = getattr(a, 'b')\nROUTES = {'session_update': 1}"
        ));
        assert!(!may_send("def session_update(self): ..."));
        assert!(may_send("await conn.session_update (u)"));
        assert!(may_send(
            "send = conn.session_update  # bound once\nawait send(u)"
        ));
        assert!(may_send("send = conn.session_update"));
        assert!(!may_send(
            "if out.session_update is not None:\n    f(out.session_update)\n"
        ));
        assert!(!may_send("x.session_updated = 1"));
    }
}
