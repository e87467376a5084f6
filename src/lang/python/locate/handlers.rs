//! What the ACP SDK contract fixes in every Python agent, found on the syntax tree: the agent
//! classes the SDK calls (handed to `run_agent` / `AgentSideConnection`, or subclasses of the
//! SDK's `Agent`), their `prompt` and `cancel` handlers, where the SDK hands them the
//! connection, and every SDK send of a session update wherever it sits.

use super::binding::bound_classes;
use super::connection::connection;
pub use super::found::{Anchors, Handler, Send, is_agent_file};
use super::found::{Classes, prompt_anchor};
use super::sends::*;
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
        .any(|p| is_agent_file(p) && crate::lang::python::locate::wire::imports_sdk(p))
        && let Some(found) = crate::lang::python::locate::wire::locate(decisions, files, pins)?
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
        let chosen = super::choose(decisions,
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
    use super::PROMPT_METHODS;

    /// `handlers.scm`: a method named `prompt` of a class, decorated or not, nested classes
    /// too; not a function outside a class, nor a method of another name.
    #[test]
    fn the_prompt_query_matches_methods_named_prompt_in_class_bodies() {
        let src = "class A:\n    async def prompt(self, p):\n        prompt = 1\n    class B:\n        @traced\n        def prompt(self): ...\n    async def prompts(self): ...\n\nasync def prompt(p): ...\n";
        let tree = crate::lang::python::syntax::parse(src);
        let found: Vec<(String, usize)> = PROMPT_METHODS
            .matches_in(tree.root_node(), src, 0..src.len())
            .iter()
            .map(|m| {
                let class = m.node("class").child_by_field_name("name").unwrap();
                (
                    src[class.byte_range()].to_string(),
                    m.node("def").start_position().row + 1,
                )
            })
            .collect();
        assert_eq!(found, [("A".to_string(), 2), ("B".to_string(), 6)]);
    }
}
