//! What the ACP SDK contract fixes in every Python agent, found on the syntax tree: the agent
//! classes the SDK calls (handed to `run_agent` / `AgentSideConnection`, or subclasses of the
//! SDK's `Agent`), their `prompt` and `cancel` handlers, where the SDK hands them the
//! connection, and every SDK send of a session update wherever it sits.

use super::binding::bound_classes;
use super::connection::{connection, installed_base};
pub use super::found::{Anchors, Handler, Send, is_agent_file};
use super::found::{Classes, prompt_anchor};
use super::sends::*;
use super::wire;
use super::{At, pin_mismatch};
use crate::config::{Pin, PythonPins};
use crate::error::{Candidate, Error, Result};
use crate::lang::anchors::PromptHandler;
use crate::lang::parts::Parsed;
use crate::lang::python::syntax::*;
use crate::lang::tree::query::ShapeQuery;
use crate::needles::{contains, positions};
use std::collections::BTreeMap;
use std::sync::LazyLock;
use tree_sitter::Node;

/// A method named `prompt` in a class body (`handlers.scm`).
static PROMPT_METHODS: LazyLock<ShapeQuery> = LazyLock::new(|| {
    ShapeQuery::new(
        &[tree_sitter_python::LANGUAGE.into()],
        include_str!("handlers.scm"),
    )
});

/// Every `async def prompt` of a class in a module that mentions the SDK: the candidates when
/// no class is bound to the SDK, and what a `prompt` pin chooses from.
fn prompt_methods<'a>(files: &'a [Parsed]) -> Vec<(At<'a>, String)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        if !is_agent_file(p) || !contains(src, "acp") {
            continue;
        }
        // (`handlers.scm`, run around each place the text names `prompt`; a class is met
        // at each such place in it: once each, classes as a walk of the tree meets them)
        let mut found: Vec<(usize, Node)> = positions(src, "prompt")
            .flat_map(|hit| {
                PROMPT_METHODS.matches_in(p.tree().root_node(), src, hit..hit + "prompt".len())
            })
            .map(|m| (m.node("class").start_byte(), m.node("def")))
            .collect();
        found.sort_by_key(|(class, def)| (*class, def.start_byte()));
        found.dedup_by_key(|(_, def)| def.id());
        for (_, m) in found {
            if is_async(m, src) {
                out.push((At { file: i, node: m }, qualified_name(m, src)));
            }
        }
    }
    out
}

/// Whether `acp` is named on one of the text's import lines (`import acp`, `from acp.schema
/// import …`, `from .acp_compat import Agent`): the module takes the SDK, or a module named for
/// it, in. A word in a comment or a docstring, or a name (`acp_state`), is not that: a client's
/// `async def prompt` beside them is no agent's (cursor-acp 0.1.1).
fn imports_acp_named(src: &str) -> bool {
    positions(src, "acp").any(|i| {
        let line = src[..i].rfind('\n').map_or(0, |n| n + 1);
        let line = src[line..i].trim_start();
        line.starts_with("from ") || line.starts_with("import ")
    })
}

/// Of the `prompt` methods no binding chose, those the SDK can be calling for `session/prompt`:
/// never a client's (the editor's side of the SDK, whose `prompt` drives another agent: a
/// class that defines `session_update` or `request_permission`, or one in a module that
/// connects to an agent and serves none, or a `prompt` that hands it on to such a client its
/// class holds), and of the others those with a signature the SDK
/// can call (it calls `prompt(prompt=..., session_id=...)`, or older ones and the legacy form
/// hand one request object), the class with most of the other agent methods first. Also
/// those left out, each named with why.
fn sdk_callable<'a>(
    files: &'a [Parsed],
    classes: &Classes<'a>,
    all: Vec<(At<'a>, String)>,
) -> (Vec<(At<'a>, String)>, Vec<String>) {
    let client_class = |class: At<'a>| {
        client_module(&files[class.file].file.text)
            || CLIENT_METHODS
                .iter()
                .any(|m| classes.method(files, class, m).is_some())
    };
    let named_client =
        |name: &str, file: usize| classes.named(name, file).into_iter().any(client_class);
    let (clients, agents): (Vec<_>, Vec<_>) = all.into_iter().partition(|(at, _)| {
        client_module(&files[at.file].file.text)
            || class_of(at.node).is_some_and(|c| {
                client_class(At {
                    file: at.file,
                    node: c,
                })
            })
            || super::client_side::forwards_to_a_client(files, *at, &named_client)
    });
    let (mut callable, uncallable): (Vec<_>, Vec<_>) = agents
        .into_iter()
        .partition(|(at, _)| takes_a_prompt(at.node, &files[at.file].file.text));
    let named = |list: &[(At, String)], why: &str| -> Vec<String> {
        list.iter()
            .map(|(at, name)| {
                let line = at.node.start_position().row + 1;
                format!("`{name}` ({}:{line}) {why}", files[at.file].file.rel)
            })
            .collect()
    };
    let mut left_out = named(
        &clients,
        "is the client side: it connects to an agent or takes its updates",
    );
    left_out.extend(named(
        &uncallable,
        "takes arguments the SDK does not pass (it passes `prompt` and `session_id`, or one request)",
    ));
    // one apply patched already (its pin since removed): that one, as revert needs it
    if callable
        .iter()
        .any(|(at, _)| patched(at.node, files, at.file))
    {
        callable.retain(|(at, _)| patched(at.node, files, at.file));
    }
    // the most agent-like first: the one a pin is suggested for
    callable.sort_by_key(|(at, _)| {
        let class = class_of(at.node).map(|c| At {
            file: at.file,
            node: c,
        });
        std::cmp::Reverse(class.map_or(0, |c| {
            AGENT_METHODS
                .iter()
                .filter(|m| classes.method(files, c, m).is_some())
                .count()
        }))
    });
    (callable, left_out)
}

/// Whether a method carries the prompt-handler decorator apply inserts.
fn patched(def: Node, files: &[Parsed], file: usize) -> bool {
    let src = &files[file].file.text;
    decorators(def)
        .into_iter()
        .any(|d| text(d, src).contains("acp_progress.prompt_handler("))
}

/// Requests the SDK hands an agent besides `session/prompt` (its methods for them).
const AGENT_METHODS: &[&str] = &[
    "initialize",
    "authenticate",
    "new_session",
    "load_session",
    "cancel",
    "set_session_mode",
];

/// What a module of the editor's side calls to reach an agent, and what an agent's module calls
/// to serve one.
const CLIENT_ENTRIES: &[&str] = &[
    "ClientSideConnection",
    "connect_to_agent",
    "spawn_agent_process",
];
const AGENT_ENTRIES: &[&str] = &["run_agent", "AgentSideConnection"];

/// Where a tree that serves no agent connects to one as the editor's side does: the first
/// call of the SDK's client entries (`spawn_agent_process(..)`) in a module of the agent's own
/// files that imports the SDK (file index, line, the entry), when no file names an agent entry.
fn client_entry(files: &[Parsed]) -> Option<(usize, usize, &'static str)> {
    // (a test's fake agent serves no editor)
    if files
        .iter()
        .any(|p| is_agent_file(p) && AGENT_ENTRIES.iter().any(|e| contains(&p.file.text, e)))
    {
        return None;
    }
    files.iter().enumerate().find_map(|(i, p)| {
        let src = p.file.text.as_ref();
        if !is_agent_file(p) || !wire::imports_sdk(p) {
            return None;
        }
        let (at, entry) = CLIENT_ENTRIES
            .iter()
            .filter_map(|e| {
                // the name itself, not the end of another (`_bounded_spawn_agent_process(`)
                let own = |at: &usize| {
                    !src[..*at]
                        .chars()
                        .next_back()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_')
                };
                let call = format!("{e}(");
                let at = src.match_indices(&call).map(|(at, _)| at).find(own)?;
                Some((at, *e))
            })
            .min()?;
        Some((i, src[..at].matches('\n').count() + 1, entry))
    })
}

/// A module that connects to an agent and serves none.
fn client_module(src: &str) -> bool {
    CLIENT_ENTRIES.iter().any(|e| contains(src, e))
        && !AGENT_ENTRIES.iter().any(|e| contains(src, e))
}

/// Methods the SDK calls on a client (the editor's side), never on an agent.
const CLIENT_METHODS: &[&str] = &["session_update", "request_permission"];

/// Whether the SDK can call `def` with a prompt request: every parameter it requires (beyond
/// `self`) is `prompt` or `session_id`, each of which it takes (by name or `**kwargs`), or it
/// requires exactly one (the request object).
fn takes_a_prompt(def: Node, src: &str) -> bool {
    let Some(params) = def.child_by_field_name("parameters") else {
        return false;
    };
    let (mut required, mut named, mut splat) = (Vec::new(), Vec::new(), false);
    for p in named_children(params).into_iter().skip(1) {
        let inner = if p.kind() == "typed_parameter" {
            p.named_child(0).unwrap_or(p)
        } else {
            p
        };
        match inner.kind() {
            "identifier" => {
                required.push(text(inner, src));
                named.push(text(inner, src));
            }
            "default_parameter" | "typed_default_parameter" => {
                named.extend(p.child_by_field_name("name").map(|n| text(n, src)));
            }
            "dictionary_splat_pattern" => splat = true,
            _ => {}
        }
    }
    let takes = |n: &str| splat || named.contains(&n);
    required.len() == 1
        || (required
            .iter()
            .all(|r| matches!(*r, "prompt" | "session_id"))
            && takes("prompt")
            && takes("session_id"))
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
    // no SDK at all, or only its types and streams beside a JSON-RPC loop of the agent's own
    // (no SDK send in the tree, `session/update` messages built by hand; a client of the SDK
    // that only reads the methods' names is none): the agent's own loop
    let sdk = files
        .iter()
        .any(|p| is_agent_file(p) && wire::imports_sdk(p));
    if (!sdk || (sends(files).is_empty() && wire::hand_built_update(files).is_some()))
        && let Some(found) = wire::locate(decisions, files, pins)?
    {
        return Ok(found);
    }
    let classes = Classes::of(files);
    let sdk = crate::lang::python::package::vendored_sdk(files);
    let outside_sdk = |file: usize| !sdk.iter().any(|d| files[file].file.rel.starts_with(d));
    let bound: Vec<At> = bound_classes(files, &classes)
        .into_iter()
        .filter(|c| outside_sdk(c.file))
        .collect();
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
        let outside: Vec<(At, String)> = prompt_methods(files)
            .into_iter()
            .filter(|(at, _)| outside_sdk(at.file) && imports_acp_named(&files[at.file].file.text))
            .collect();
        let (all, clients) = sdk_callable(files, &classes, outside);
        let chosen = super::choose(decisions,
            files,
            all,
            None,
            "ACP prompt handler",
            "prompt",
            || {
                let clients = if clients.is_empty() {
                    String::new()
                } else {
                    format!(" that the SDK can call ({})", clients.join("; "))
                };
                // a dispatcher that handles the prompt in its branch: no pin can name a
                // function there, so the advice is the one change that gives it one
                let what_to_do = match (wire::inline_prompt(files), client_entry(files)) {
                    (Some((f, l)), _) => format!(": the dispatcher at {}:{l} handles `\"session/prompt\"` inline, its branch hands the request to no function, so there is none for the card to wrap and none a pin could name; move the branch's body into a function the branch calls and run apply again", files[f].file.rel),
                    // an ACP client (the editor's side): nothing here waits for a model on
                    // an agent's behalf, and no pin could make it an agent
                    (None, Some((f, l, entry))) => format!(": it is an ACP client, `{entry}` at {}:{l} connects to an agent and no module serves one (`run_agent`, `AgentSideConnection`); patch the agent it connects to instead", files[f].file.rel),
                    (None, None) => "; pin the handler in acp-patch.toml: `prompt = \"<file>.py:<function or Class.method>\"`".to_string(),
                };
                // a class the SDK is handed whose `prompt` is inherited from outside the tree
                if let Some(c) = bound
                    .iter()
                    .find(|c| classes.method(files, **c, "prompt").is_none())
                {
                    let src = &files[c.file].file.text;
                    let name = name_of(c.node, src);
                    let base = installed_base(c.node, src)
                        .map(|b| format!(" from `{b}`"))
                        .unwrap_or_default();
                    return format!(
                        "`{name}` ({}:{}) is what the SDK is handed, but it inherits `prompt`{base}, outside the tree (an installed package), so the tree has no prompt handler to patch; define one in `{name}` that hands on to the base's, `async def prompt(self, *args, **kwargs): return await super().prompt(*args, **kwargs)`, and apply again (the card opens there and follows the base's sends), or point acp-patch at the package that defines it",
                        files[c.file].file.rel,
                        c.node.start_position().row + 1
                    );
                }
                format!("no class is handed to `acp.run_agent` / `AgentSideConnection` or derives from `acp.Agent`, no class in a module that imports `acp` has an `async def prompt`{clients}, and no dispatcher of `\"session/prompt\"` (a dict of handlers, `if`/`match` on the method, a call or decorator that registers a handler for it, a handler table) reaches a function of the tree{what_to_do}")
            },
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
    // no send in the tree, and messages built by hand: a loop of its own acp-patch cannot read
    // (none at all: an installed base class sends them, see `connection`)
    if sends.is_empty()
        && let Some(h) = prompts.first()
        && let Some((f, l)) = wire::hand_built_update(files)
    {
        return Err(Error::Unsupported {
            file: files[h.site.file].file.rel.clone(),
            line: h.site.line,
            message: format!(
                "`{}` handles session/prompt, but no call in the tree sends a session update through the SDK (`<connection>.session_update(...)`): the agent writes `session/update` messages itself ({}:{l}) from a JSON-RPC loop of its own, and no dispatcher of `\"session/prompt\"` that acp-patch reads (a dict of handlers, `if`/`match` on the method, a registration, a handler table) hands the request to a function (a request the loop takes after the other methods' branches, naming no method, is not read); pin the function its loop calls for it in acp-patch.toml, `prompt = \"<file>.py:<function or Class.method>\"`: the card then goes out through a writer of those messages that the function can call (nothing was written)",
                h.name, files[f].file.rel
            ),
        });
    }
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
        let connection = match connection(decisions, files, &classes, class, &sends, pins) {
            // no connection a pin could choose: where the tree has other handlers, one of
            // them may be the agent to patch (the one without is a mock, a test double)
            Err(Error::NotFound {
                site,
                detail,
                candidates,
                ..
            }) if candidates.is_empty() && cands.len() > 1 => {
                let own = anchor.candidate(&files[anchor.site.file].file.rel);
                return Err(Error::NotFound {
                    site,
                    detail: format!(
                        "{detail}; or, if another of the tree's prompt handlers is the agent to patch, pin that one"
                    ),
                    pin_key: "prompt",
                    candidates: cands
                        .into_iter()
                        .filter(|c| c.name != own.name || c.location.file != own.location.file)
                        .collect(),
                });
            }
            r => r?,
        };
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
#[path = "handlers_tests.rs"]
mod tests;
