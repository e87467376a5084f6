//! The engine-level refinement for callback-shaped agents (Hermes and its forks): the prompt
//! handler (or a helper it calls) wires the engine's callbacks (`agent.x_callback = ...`) and
//! hands the turn to the engine in a worker thread; the engine's LLM call has a first-delta
//! closure. There the card follows the engine's own LLM-call lifecycle (retries, later model
//! calls), and opens already at the prompt handler's entry. Detected structurally, never by
//! an agent's names; anything else is left to the protocol strategy.

mod llm;
pub(super) mod pieces;

use crate::config::{Pin, PythonPins};
use crate::error::{Error, Result};
use crate::lang::python::Parsed;
use crate::lang::python::locate::{At, choose};
use crate::lang::python::syntax::*;
use crate::needles::contains;
use llm::{locate_callback_store, locate_llm, locate_module_def};

/// The keyword of the engine LLM call's first-delta closure, and how the call's name ends.
const LLM_CLOSURE: &str = "on_first_delta";
const LLM_CALL: &str = "_interruptible_streaming_api_call";
use tree_sitter::Node;

pub struct EngineSites<'a> {
    pub prompt: At<'a>,
    /// The statement that hands the turn to the engine (the executor call).
    pub handoff: At<'a>,
    /// `agent` in `agent.reasoning_callback = ...` (as the wiring function spells it).
    pub receiver: String,
    /// The agent as the prompt handler spells it (differs when a helper does the wiring).
    pub prompt_receiver: String,
    /// The last callback assignment: the wiring goes after it.
    pub wiring_anchor: At<'a>,
    /// Where the text hold is installed: after the wiring, or after the helper's call.
    pub hold_anchor: At<'a>,
    /// `(conn, session_id, loop)` as the existing factory calls spell them.
    pub factory_args: [String; 3],
    /// The connection as the prompt handler's class keeps it (`_conn` of `self._conn`).
    pub connection_attr: String,
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
    /// nested def: the engine's heartbeat starts at its top.
    pub worker_body: Option<At<'a>>,
}

/// What a scoped thread returned (its panic goes on in the caller).
fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
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

/// `x.<name>_callback = ...` assignments of a function (its own scope), ours excluded.
fn callback_assignments<'t>(body: Node<'t>, src: &str) -> Vec<Node<'t>> {
    descendants_same_scope(body, "assignment")
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
        .collect()
}

/// What a module of tool-call builders and one of callback factories hold.
const BUILDER_NEEDLES: &[&str] = &["start_tool_call", "update_tool_call"];
const FACTORY_NEEDLES: &[&str] = &["def make_"];

/// Whether a module's text may hold the engine's LLM call (and is parsed to find it).
fn may_hold_llm_call(src: &str) -> bool {
    contains(src, LLM_CLOSURE) && contains(src, LLM_CALL)
}

/// Starts parsing the modules that may hold the engine's LLM call (its own names are in
/// them) before anything else is looked for: they are an engine agent's longest (Hermes: two
/// of 300 KB), and are otherwise parsed only once the prompt handler is found, while the
/// steps up to there run on one thread and leave the other cores idle.
pub fn parse_early<'f>(files: impl Iterator<Item = &'f crate::source::SourceFile>) {
    crate::lang::python::syntax::parse_in_background(
        files
            .filter(|f| may_hold_llm_call(&f.text))
            .map(|f| f.text.clone())
            .collect(),
    );
}

/// Parses side by side, longest first, the modules the locators below read first: those
/// that may hold the LLM call, the store of the first callback tried, the builders and the
/// factories. An engine agent keeps its largest modules there (Hermes: 300 KB each), which
/// would otherwise parse one after another on this thread.
fn parse_ahead(files: &[Parsed], wired: &[String], pins: &PythonPins) {
    let first_store = llm::store_order(wired).first().copied();
    let helpers = pins.helpers.as_ref().map(|s| Pin::parse(s));
    let factories = pins.factories.as_ref().map(|s| Pin::parse(s));
    let mut todo: Vec<&Parsed> = files
        .iter()
        .filter(|p| {
            let src = p.file.text.as_ref();
            !p.is_parsed()
                && (may_hold_llm_call(src)
                    || first_store.is_some_and(|w| llm::stores_attribute(src, w))
                    || llm::module_may_hold(p, helpers.as_ref(), BUILDER_NEEDLES)
                    || llm::module_may_hold(p, factories.as_ref(), FACTORY_NEEDLES))
        })
        .collect();
    // the longest first: the step then waits for the longest module, not for their sum
    todo.sort_by_key(|p| std::cmp::Reverse(p.file.text.len()));
    crate::lang::tree::cache::on_all_cores(&todo, |p| {
        p.tree();
    });
}

/// Whether the tree has an engine LLM call with a first-delta closure.
fn has_engine_llm_call(files: &[Parsed]) -> bool {
    files.iter().any(|p| !llm_calls(p).is_empty())
}

/// The module's calls `x.<..>_interruptible_streaming_api_call(..., on_first_delta=f)`, in
/// the order they are written. They are found from where the name is written, climbing from
/// it to its call: the engine's modules are its longest (Hermes: 6,000 lines), and a walk of
/// every call node in them cost more than their parse.
fn llm_calls(p: &Parsed) -> Vec<Node<'_>> {
    let src = p.file.text.as_ref();
    if !may_hold_llm_call(src) {
        return Vec::new();
    }
    let root = p.tree().root_node();
    crate::needles::positions(src, LLM_CALL)
        .filter_map(|at| {
            let end = at + LLM_CALL.len();
            // the callee's last name ends with it: `x.y_…_call(..)`, `…_call(..)`
            let name = root.descendant_for_byte_range(at, end)?;
            if name.kind() != "identifier" || name.end_byte() != end {
                return None;
            }
            let parent = name.parent()?;
            let callee = if parent.kind() == "attribute" {
                (parent.child_by_field_name("attribute") == Some(name)).then_some(parent)?
            } else {
                name
            };
            let call = callee.parent()?;
            (call.kind() == "call"
                && call.child_by_field_name("function") == Some(callee)
                && keyword_arg(call, LLM_CLOSURE, src).is_some())
            .then_some(call)
        })
        .collect()
}

/// The callback-shaped sites of an agent whose prompt handler is `prompt` (a method of
/// `class`), or None when the agent is not callback-shaped.
pub fn locate<'a>(
    decisions: &crate::lang::survey::Decisions,
    files: &'a [Parsed],
    prompt: At<'a>,
    class: At<'a>,
    connection_attr: Option<&str>,
    pins: &PythonPins,
) -> Result<Option<EngineSites<'a>>> {
    let p = &files[prompt.file];
    let src = p.file.text.as_ref();
    let body = prompt
        .node
        .child_by_field_name("body")
        .expect("def has a body");
    // The wiring: in the prompt handler, or in a helper method it calls (`self.m(...)`).
    let mut wiring = None;
    let own = callback_assignments(body, src);
    if !own.is_empty() {
        wiring = Some((prompt, own, None));
    } else {
        for call in descendants_same_scope(body, "call") {
            if callee_object(call, src) != Some("self") {
                continue;
            }
            let name = callee_name(call, src);
            let Some(helper) = methods(class.node)
                .into_iter()
                .find(|m| name_of(*m, src) == name)
            else {
                continue;
            };
            let hbody = helper.child_by_field_name("body").expect("def body");
            let assigns = callback_assignments(hbody, src);
            if !assigns.is_empty() {
                wiring = Some((
                    At {
                        file: prompt.file,
                        node: helper,
                    },
                    assigns,
                    Some(call),
                ));
                break;
            }
        }
    }
    let Some((wiring_fn, assigns, helper_call)) = wiring else {
        return Ok(None);
    };
    // no text that may hold the LLM call: not engine-shaped, and nothing is parsed ahead
    if !files.iter().any(|p| may_hold_llm_call(&p.file.text)) {
        return Ok(None);
    }
    let wired: Vec<String> = assigns
        .iter()
        .filter_map(|a| {
            a.child_by_field_name("left")?
                .child_by_field_name("attribute")
        })
        .map(|n| text(n, src).to_string())
        .collect();
    parse_ahead(files, &wired, pins);
    if !has_engine_llm_call(files) {
        return Ok(None);
    }
    let wsrc = src;
    let wbody = wiring_fn.node.child_by_field_name("body").expect("body");
    let first = assigns[0];
    let block = statement_of(first).parent();
    let last = assigns
        .iter()
        .rfind(|a| statement_of(**a).parent() == block)
        .copied()
        .unwrap_or(first);
    let left = last
        .child_by_field_name("left")
        .expect("assignment has a left side");
    let receiver = text(
        left.child_by_field_name("object")
            .expect("attribute object"),
        wsrc,
    )
    .to_string();
    let (prompt_receiver, hold_anchor) = match helper_call {
        None => (receiver.clone(), statement_of(last)),
        Some(call) => {
            // the helper's receiver parameter, as the prompt handler passes it
            let params: Vec<String> = parameters(wiring_fn.node, src)
                .into_iter()
                .map(|(n, _)| n)
                .skip(1)
                .collect();
            let arg = params
                .iter()
                .position(|n| *n == receiver)
                .and_then(|i| positional_args(call).get(i).copied())
                .or_else(|| {
                    keyword_arg(call, &receiver, src).and_then(|k| k.child_by_field_name("value"))
                })
                .map(|a| text(a, src).to_string())
                .unwrap_or_else(|| receiver.clone());
            (arg, statement_of(call))
        }
    };
    let handoff_calls: Vec<Node> = descendants_same_scope(body, "call")
        .into_iter()
        .filter(|c| matches!(callee_name(*c, src), "run_in_executor" | "to_thread"))
        .collect();
    // candidates are named by their place among the handler's executor calls, which apply
    // never changes: `Agent.prompt.run_in_executor#2` (a line number would move)
    let prompt_name = qualified_name(prompt.node, src);
    let named: Vec<(At<'a>, String)> = handoff_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            (
                At {
                    file: prompt.file,
                    node: statement_of(*c),
                },
                format!("{prompt_name}.{}#{}", callee_name(*c, src), i + 1),
            )
        })
        .collect();
    let handoff = match named.as_slice() {
        [] if pins.handoff.is_none() => {
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
        _ => {
            choose(
                decisions,
                files,
                named,
                pins.handoff.as_ref(),
                "hand-off to the engine",
                "handoff",
                || "the prompt handler calls no executor".into(),
            )?
            .node
        }
    };
    // no pin can stand in for the factory call (it names the connection, session and
    // loop), so the advice is what to change, never a pin
    let factory_args = factory_args(wbody, wsrc)
        .or_else(|| factory_args(body, src))
        .ok_or_else(|| Error::Unsupported {
            file: p.file.rel.clone(),
            line: prompt.node.start_position().row + 1,
            message: "the prompt handler assigns the agent's callbacks but builds none with a `make_*_cb(conn, session_id, loop, ...)` call, where acp-patch learns the connection, session id and loop the progress callback needs; no pin replaces that call: build one callback with such a factory".into(),
        })?;
    // the engine's sites lie in modules of their own (the LLM call, the callback store, the
    // builders and factories): located side by side, each parsing what it reads; the first
    // error in this order is the one told
    let (llm, store, (builders, factories)) = std::thread::scope(|s| {
        let store = s.spawn(|| locate_callback_store(files, &wired, pins));
        let modules = s.spawn(|| {
            let builders = locate_module_def(
                files,
                pins.helpers.as_ref(),
                "tool-call builders",
                "helpers",
                BUILDER_NEEDLES,
                |def, src| {
                    descendants_same_scope(def, "call").iter().any(|c| {
                        matches!(callee_name(*c, src), "start_tool_call" | "update_tool_call")
                    })
                },
            );
            let factories = locate_module_def(
                files,
                pins.factories.as_ref(),
                "callback factories",
                "factories",
                FACTORY_NEEDLES,
                |def, src| {
                    let params: Vec<String> =
                        parameters(def, src).into_iter().map(|(n, _)| n).collect();
                    name_of(def, src).starts_with("make_")
                        && params.iter().any(|n| n == "conn")
                        && params.iter().any(|n| n == "loop")
                },
            );
            (builders, factories)
        });
        let llm = locate_llm(decisions, files, pins);
        (llm, joined(store), joined(modules))
    });
    let llm = llm?;
    let (anchor_callback, stores, passers) = store?;
    let (builders, factories) = (builders?, factories?);
    let sender = {
        let fp = &files[factories.file];
        top_level_functions(fp.tree().root_node())
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
    let connection_attr =
        connection_attr
            .map(str::to_string)
            .ok_or_else(|| Error::Unlocatable {
                site: "connection",
                detail: format!(
                    "{}:{}: the prompt handler's class keeps the connection in no attribute",
                    p.file.rel,
                    prompt.node.start_position().row + 1
                ),
                pin_key: "connection",
            })?;
    Ok(Some(EngineSites {
        prompt,
        handoff: At {
            file: prompt.file,
            node: handoff,
        },
        receiver,
        prompt_receiver,
        wiring_anchor: At {
            file: prompt.file,
            node: statement_of(last),
        },
        hold_anchor: At {
            file: prompt.file,
            node: hold_anchor,
        },
        factory_args,
        connection_attr,
        llm,
        anchor_callback,
        stores,
        passers,
        builders,
        factories,
        sender,
        worker_body,
    }))
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
