//! Finding where each piece goes, on the syntax tree: the ACP prompt handler, the
//! hand-off to the engine, the LLM call and its first-delta closure, the callback store,
//! the builders and factories. Every choice either has one candidate, is pinned in
//! `acp-patch.toml`, or fails with the candidates listed.

use super::Parsed;
use super::engine::{locate_callback_store, locate_llm, locate_module_def};
use super::syntax::*;
use crate::config::{Pin, PythonPins};
use crate::error::{Candidate, Error, Location, Result};
use tree_sitter::Node;

/// A node in one of the parsed files.
#[derive(Clone, Copy)]
pub struct At<'a> {
    pub file: usize,
    pub node: Node<'a>,
}

/// How the adapter hands work to the model.
#[allow(clippy::large_enum_variant)] // one per run: boxing buys nothing
pub enum Shape<'a> {
    /// An engine object whose callbacks the prompt handler assigns (Hermes): hooks go
    /// into the engine's LLM call lifecycle, which runs on worker threads.
    Callback(CallbackSites<'a>),
    /// An asyncio SDK agent that streams the model itself and sends every update
    /// through one emitter method.
    Emitter(EmitterSites<'a>),
}

pub struct Sites<'a> {
    pub prompt: At<'a>,
    /// The statement that hands the turn to the engine / model stream.
    pub handoff: At<'a>,
    pub shape: Shape<'a>,
}

pub struct CallbackSites<'a> {
    /// `agent` in `agent.reasoning_callback = ...`.
    pub receiver: String,
    /// The last callback assignment of the prompt handler: the wiring goes after it.
    pub wiring_anchor: At<'a>,
    /// `(conn, session_id, loop)` as the existing factory calls spell them.
    pub factory_args: [String; 3],
    pub llm: LlmSites<'a>,
    /// The callback the new one is declared and stored beside (e.g. `thinking_callback`).
    pub anchor_callback: String,
    /// Functions storing `X.<anchor> = <anchor>`: (function, the assignment statement).
    pub stores: Vec<(At<'a>, At<'a>)>,
    /// Functions passing `<anchor>=<anchor>` on to a store: (function, the keyword argument,
    /// or none when they forward `**locals()`).
    pub passers: Vec<(At<'a>, Option<At<'a>>)>,
    /// Module of the tool-call builders, and the last builder (helpers go after it).
    pub builders: At<'a>,
    /// Module of the callback factories, and the last factory (the new one goes after it).
    pub factories: At<'a>,
    /// The adapter's own `send(conn, session_id, loop, update)`, if it has one.
    pub sender: Option<String>,
    /// Body of the function the hand-off runs on the worker (`_run_agent`), if it is a
    /// nested def: the card opens at its top, before the engine prepares the request.
    pub worker_body: Option<At<'a>>,
}

pub struct LlmSites<'a> {
    /// `agent` / `self`: the object the LLM call is made on.
    pub receiver: String,
    /// The statement the start hook goes before (the streaming/non-streaming branch).
    pub start_before: At<'a>,
    /// The on-first-delta closure (complete goes at its top).
    pub first_delta: At<'a>,
    /// The statement after which the call has returned (complete again, for non-streaming).
    pub returned_after: At<'a>,
    /// `except` clauses around the call (complete at their top).
    pub error_paths: Vec<At<'a>>,
    /// The top-level statement the hook functions go before.
    pub module_anchor: At<'a>,
}

pub struct EmitterSites<'a> {
    pub class: At<'a>,
    pub init: Option<At<'a>>,
    pub emitter: At<'a>,
    pub emitter_name: String,
    /// `self._conn`: what the emitter sends through.
    pub conn: String,
    /// The prompt handler's session id expression.
    pub session_id: String,
    /// The emitter's (session id, update) parameter names.
    pub emitter_params: (String, String),
}

fn loc(files: &[Parsed], at: At) -> Location {
    Location {
        file: files[at.file].file.rel.clone(),
        line: at.node.start_position().row + 1,
    }
}

pub(super) fn candidate(files: &[Parsed], at: At, name: String) -> Candidate {
    Candidate {
        location: loc(files, at),
        name,
    }
}

/// Picks the one candidate, honouring a pin; otherwise an error listing them.
pub(super) fn choose<'a>(
    files: &[Parsed],
    found: Vec<(At<'a>, String)>,
    pin: Option<&String>,
    site: &'static str,
    pin_key: &'static str,
    none: impl FnOnce() -> String,
) -> Result<At<'a>> {
    let found = found
        .into_iter()
        .map(|(at, name)| (at, candidate(files, at, name)))
        .collect();
    let pin = pin.map(|p| Pin::parse(p)).map(|p| (p.file, p.name));
    crate::lang::parts::choose(found, pin, site, pin_key, none)
}

fn imports_acp(p: &Parsed) -> bool {
    let root = p.tree.root_node();
    let src = &p.file.text;
    let mut cursor = root.walk();
    root.named_children(&mut cursor).any(|n| match n.kind() {
        "import_statement" => imports_module(root, src, "acp"),
        "import_from_statement" => n
            .child_by_field_name("module_name")
            .map(|m| text(m, src))
            .is_some_and(|m| m == "acp" || m.starts_with("acp.")),
        _ => false,
    })
}

pub fn locate<'a>(
    root: &std::path::Path,
    files: &'a [Parsed],
    pins: &PythonPins,
) -> Result<Sites<'a>> {
    // 1. The ACP prompt handler: `async def prompt` in a class, in a module importing acp.
    let mut prompts = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !imports_acp(p) {
            continue;
        }
        for def in descendants(p.tree.root_node(), "function_definition") {
            let src = &p.file.text;
            let in_class = def
                .parent()
                .and_then(|b| b.parent())
                .is_some_and(|c| c.kind() == "class_definition");
            if name_of(def, src) == "prompt" && in_class && text(def, src).starts_with("async") {
                prompts.push((At { file: i, node: def }, qualified_name(def, src)));
            }
        }
    }
    if prompts.is_empty() && pins.prompt.is_none() {
        return Err(Error::NoAgent {
            root: root.to_path_buf(),
            detail: "no `async def prompt` method in a module that imports `acp`".into(),
        });
    }
    let prompt = choose(
        files,
        prompts,
        pins.prompt.as_ref(),
        "ACP prompt handler",
        "prompt",
        || "no `async def prompt` method in a module that imports `acp`".into(),
    )?;
    let p = &files[prompt.file];
    let src = p.file.text.as_str();
    let body = prompt
        .node
        .child_by_field_name("body")
        .expect("def has a body");

    // 2. Callback assignments (`agent.x_callback = ...`) decide the shape.
    let assigns: Vec<Node> = descendants_same_scope(body, "assignment")
        .into_iter()
        .filter(|a| {
            a.child_by_field_name("left").is_some_and(|l| {
                l.kind() == "attribute"
                    && l.child_by_field_name("object")
                        .is_some_and(|o| o.kind() == "identifier")
                    && l.child_by_field_name("attribute").is_some_and(|n| {
                        text(n, src).ends_with("_callback")
                            && text(n, src) != "agent_progress_callback"
                    })
            })
        })
        .collect();
    let handoff_calls: Vec<Node> = descendants_same_scope(body, "call")
        .into_iter()
        .filter(|c| matches!(callee_name(*c, src), "run_in_executor" | "to_thread"))
        .collect();

    if let Some(first) = assigns.first() {
        let block = statement_of(*first).parent();
        let last = assigns
            .iter()
            .rfind(|a| statement_of(**a).parent() == block)
            .copied()
            .unwrap_or(*first);
        let left = last
            .child_by_field_name("left")
            .expect("assignment has a left side");
        let receiver = text(
            left.child_by_field_name("object")
                .expect("attribute object"),
            src,
        )
        .to_string();
        let handoff = match handoff_calls.as_slice() {
            [one] => statement_of(*one),
            [] => {
                return Err(Error::Unlocatable {
                    site: "hand-off to the engine",
                    detail: format!(
                        "{}:{} assigns the agent's callbacks but never calls run_in_executor/to_thread",
                        p.file.rel,
                        prompt.node.start_position().row + 1
                    ),
                    pin_key: "prompt",
                });
            }
            many => {
                return Err(Error::Ambiguous {
                    site: "hand-off to the engine",
                    candidates: many
                        .iter()
                        .map(|c| {
                            candidate(
                                files,
                                At {
                                    file: prompt.file,
                                    node: *c,
                                },
                                text(*c, src).lines().next().unwrap_or("").to_string(),
                            )
                        })
                        .collect(),
                    pin_key: "prompt",
                });
            }
        };
        // no pin can stand in for the factory call (it names the connection, session and
        // loop), so the advice is what to change, never a pin
        let factory_args = factory_args(body, src).ok_or_else(|| Error::Unsupported {
            file: p.file.rel.clone(),
            line: prompt.node.start_position().row + 1,
            message: "the prompt handler assigns the agent's callbacks but builds none with a `make_*_cb(conn, session_id, loop, ...)` call, where acp-patch learns the connection, session id and loop the progress callback needs; no pin replaces that call: build one callback with such a factory".into(),
        })?;
        let wired: Vec<String> = assigns
            .iter()
            .filter_map(|a| {
                a.child_by_field_name("left")?
                    .child_by_field_name("attribute")
            })
            .map(|n| text(n, src).to_string())
            .collect();
        let llm = locate_llm(files, pins)?;
        let (anchor_callback, stores, passers) = locate_callback_store(files, &wired, pins)?;
        let builders = locate_module_def(
            files,
            pins.helpers.as_ref(),
            "tool-call builders",
            "helpers",
            |def, src| {
                descendants_same_scope(def, "call")
                    .iter()
                    .any(|c| matches!(callee_name(*c, src), "start_tool_call" | "update_tool_call"))
            },
        )?;
        let factories = locate_module_def(
            files,
            pins.factories.as_ref(),
            "callback factories",
            "factories",
            |def, src| {
                let params: Vec<String> =
                    parameters(def, src).into_iter().map(|(n, _)| n).collect();
                name_of(def, src).starts_with("make_")
                    && params.iter().any(|n| n == "conn")
                    && params.iter().any(|n| n == "loop")
            },
        )?;
        let sender = {
            let fp = &files[factories.file];
            top_level_functions(fp.tree.root_node())
                .into_iter()
                .find_map(|def| {
                    let params: Vec<String> = parameters(def, &fp.file.text)
                        .into_iter()
                        .map(|(n, _)| n)
                        .collect();
                    (params == ["conn", "session_id", "loop", "update"])
                        .then(|| name_of(def, &fp.file.text).to_string())
                })
        };
        let worker_body = handoff_calls.first().and_then(|call| {
            let last = positional_args(*call).last().copied()?;
            let name = text(last, src);
            descendants_same_scope(body, "function_definition")
                .into_iter()
                .find(|d| name_of(*d, src) == name)
                .and_then(|d| d.child_by_field_name("body"))
                .map(|b| At {
                    file: prompt.file,
                    node: b,
                })
        });
        return Ok(Sites {
            prompt,
            handoff: At {
                file: prompt.file,
                node: handoff,
            },
            shape: Shape::Callback(CallbackSites {
                worker_body,
                receiver,
                wiring_anchor: At {
                    file: prompt.file,
                    node: statement_of(last),
                },
                factory_args,
                llm,
                anchor_callback,
                stores,
                passers,
                builders,
                factories,
                sender,
            }),
        });
    }

    // 3. Emitter shape: the hand-off is the first `async for` over a call (the model
    // stream) or an executor call; the emitter is the method that awaits session_update.
    let handoff = descendants_same_scope(body, "for_statement")
        .into_iter()
        .find(|f| text(*f, src).starts_with("async") && f.child_by_field_name("right").is_some_and(|r| r.kind() == "call"))
        .or_else(|| handoff_calls.first().map(|c| statement_of(*c)))
        .ok_or_else(|| Error::Unlocatable {
            site: "hand-off to the model",
            detail: format!(
                "{}:{}: the prompt handler has no `async for` over the model stream and no executor call",
                p.file.rel,
                prompt.node.start_position().row + 1
            ),
            pin_key: "prompt",
        })?;
    let class = prompt
        .node
        .parent()
        .and_then(|b| b.parent())
        .expect("prompt is in a class");
    let class_body = class.child_by_field_name("body").expect("class body");
    let methods: Vec<Node> = {
        let mut c = class_body.walk();
        class_body
            .named_children(&mut c)
            .filter_map(|n| match n.kind() {
                "function_definition" => Some(n),
                "decorated_definition" => n.child_by_field_name("definition"),
                _ => None,
            })
            .collect()
    };
    let emitters: Vec<(At, String)> = methods
        .iter()
        .filter(|m| {
            name_of(**m, src) != "prompt"
                && descendants_same_scope(**m, "call")
                    .iter()
                    .any(|c| matches!(callee_name(*c, src), "session_update" | "sessionUpdate"))
                && descendants_same_scope(body, "call").iter().any(|c| {
                    callee_name(*c, src) == name_of(**m, src)
                        && callee_object(*c, src) == Some("self")
                })
        })
        .map(|m| {
            (
                At {
                    file: prompt.file,
                    node: *m,
                },
                qualified_name(*m, src),
            )
        })
        .collect();
    let emitter = choose(
        files,
        emitters,
        pins.emitter.as_ref(),
        "session-update emitter",
        "emitter",
        || {
            format!(
                "the prompt handler at {}:{} calls no method of its class that awaits `session_update`",
                p.file.rel,
                prompt.node.start_position().row + 1
            )
        },
    )?;
    let send_call = descendants_same_scope(emitter.node, "call")
        .into_iter()
        .find(|c| matches!(callee_name(*c, src), "session_update" | "sessionUpdate"))
        .expect("chosen because it has one");
    let conn = callee_object(send_call, src)
        .unwrap_or("self._conn")
        .to_string();
    let eparams: Vec<String> = parameters(emitter.node, src)
        .into_iter()
        .map(|(n, _)| n)
        .skip(1)
        .collect();
    let emitter_params = match eparams.as_slice() {
        [sid, update, ..] => (sid.clone(), update.clone()),
        _ => {
            return Err(Error::Unsupported {
                file: p.file.rel.clone(),
                line: emitter.node.start_position().row + 1,
                message: "the emitter must take (session_id, update); pin another with `emitter` in acp-patch.toml".into(),
            });
        }
    };
    let pparams: Vec<String> = parameters(prompt.node, src)
        .into_iter()
        .map(|(n, _)| n)
        .skip(1)
        .collect();
    let session_id = if pparams.iter().any(|n| n == "session_id") {
        "session_id".to_string()
    } else if let Some(first) = pparams.first() {
        format!("{first}.session_id")
    } else {
        return Err(Error::Unsupported {
            file: p.file.rel.clone(),
            line: prompt.node.start_position().row + 1,
            message: "the prompt handler takes no session id".into(),
        });
    };
    let init = methods
        .iter()
        .find(|m| name_of(**m, src) == "__init__")
        .map(|m| At {
            file: prompt.file,
            node: *m,
        });
    Ok(Sites {
        prompt,
        handoff: At {
            file: prompt.file,
            node: handoff,
        },
        shape: Shape::Emitter(EmitterSites {
            class: At {
                file: prompt.file,
                node: class,
            },
            init,
            emitter_name: name_of(emitter.node, src).to_string(),
            emitter,
            conn,
            session_id,
            emitter_params,
        }),
    })
}

/// `(conn, session_id, loop)` from the first `make_*_cb(a, b, c, ...)` call.
fn factory_args(body: Node, src: &str) -> Option<[String; 3]> {
    descendants_same_scope(body, "call")
        .into_iter()
        .find_map(|c| {
            let name = callee_name(c, src);
            let args = positional_args(c);
            (name.starts_with("make_") && name.ends_with("_cb") && args.len() >= 3).then(|| {
                [
                    text(args[0], src).to_string(),
                    text(args[1], src).to_string(),
                    text(args[2], src).to_string(),
                ]
            })
        })
}
