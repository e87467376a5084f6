//! Sites in the engine a callback-shaped adapter drives (Hermes): the LLM call and its
//! first-delta closure, where the callbacks are taken and stored, and the modules of the
//! tool-call builders and callback factories.

use super::LLM_CLOSURE;
use super::LlmSites;
use crate::config::{Pin, PythonPins};
use crate::error::{Error, Result};
use crate::lang::parts::Parsed;
use crate::lang::python::locate::{At, candidate, choose};
use crate::lang::python::syntax::*;
use crate::needles::contains;
use tree_sitter::Node;

/// The engine's LLM call: `X._interruptible_streaming_api_call(..., on_first_delta=f)`.
pub(super) fn locate_llm<'a>(
    decisions: &crate::lang::survey::Decisions,
    files: &'a [Parsed],
    pins: &PythonPins,
) -> Result<LlmSites<'a>> {
    let mut calls = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        for c in super::llm_calls(p) {
            if let Some(f) = enclosing_function(c)
                && name_of(f, src) != callee_name(c, src)
            {
                calls.push((At { file: i, node: c }, qualified_name(f, src)));
            }
        }
    }
    let call = choose(
        decisions,
        files,
        calls,
        pins.llm_call.as_ref(),
        "LLM call",
        "llm_call",
        || "no `*_interruptible_streaming_api_call(..., on_first_delta=...)` call".into(),
    )?;
    let p = &files[call.file];
    let src = p.file.text.as_ref();
    let err = |line: usize, message: &str| Error::Unsupported {
        file: p.file.rel.clone(),
        line,
        message: message.to_string(),
    };
    let row = call.node.start_position().row + 1;
    let receiver = callee_object(call.node, src)
        .ok_or_else(|| err(row, "the LLM call is not made on an object"))?
        .to_string();
    let closure_name = text(
        keyword_arg(call.node, LLM_CLOSURE, src)
            .and_then(|k| k.child_by_field_name("value"))
            .expect("found by it"),
        src,
    );
    // The closure is defined in the call's function or one enclosing it.
    let mut scope = enclosing_function(call.node);
    let mut closure = None;
    while let Some(f) = scope {
        let body = f.child_by_field_name("body").expect("def body");
        if let Some(d) = descendants_same_scope(body, "function_definition")
            .into_iter()
            .find(|d| name_of(*d, src) == closure_name)
        {
            closure = Some(d);
            break;
        }
        scope = enclosing_function(f);
    }
    let closure = closure.ok_or_else(|| err(row, &format!("the on_first_delta closure `{closure_name}` is not defined in an enclosing function")))?;
    let outer = enclosing_function(closure)
        .ok_or_else(|| err(row, "the first-delta closure is not nested in a function"))?;
    let start_before =
        ancestor_in_function(call.node, "if_statement").unwrap_or_else(|| statement_of(call.node));
    // Where the call has returned: after the branch when it is in the outer function, else
    // after the statement of the outer function that uses the nested function holding it.
    let call_fn = enclosing_function(call.node).expect("has one");
    let returned_after = if call_fn == outer {
        start_before
    } else {
        let mut nested = call_fn;
        while let Some(parent_fn) = enclosing_function(nested) {
            if parent_fn == outer {
                break;
            }
            nested = parent_fn;
        }
        let nested_stmt = statement_of(nested);
        let name = name_of(nested, src);
        let mut next = nested_stmt.next_named_sibling();
        let mut user = None;
        while let Some(s) = next {
            if descendants(s, "identifier")
                .iter()
                .any(|i| text(*i, src) == name)
            {
                user = Some(s);
                break;
            }
            next = s.next_named_sibling();
        }
        user.ok_or_else(|| err(row, &format!("nothing after `def {name}` uses it")))?
    };
    let error_paths = ancestor_in_function(returned_after, "try_statement")
        .map(|t| {
            except_blocks(t)
                .into_iter()
                .map(|b| At {
                    file: call.file,
                    node: b,
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(LlmSites {
        receiver,
        start_before: At {
            file: call.file,
            node: start_before,
        },
        first_delta: At {
            file: call.file,
            node: closure.child_by_field_name("body").expect("def body"),
        },
        returned_after: At {
            file: call.file,
            node: returned_after,
        },
        error_paths,
        module_anchor: At {
            file: call.file,
            node: top_level(call.node),
        },
    })
}

pub(super) type StoreSites<'a> = (String, Vec<(At<'a>, At<'a>)>, Vec<(At<'a>, Option<At<'a>>)>);

/// Whether a call passes `**locals()`.
fn forwards_locals(call: Node, src: &str) -> bool {
    call.child_by_field_name("arguments").is_some_and(|args| {
        named_children(args).into_iter().any(|a| {
            a.kind() == "dictionary_splat"
                && a.named_child(0)
                    .is_some_and(|c| c.kind() == "call" && callee_name(c, src) == "locals")
        })
    })
}

/// Where the agent takes and stores its callbacks: functions with a `<name>_callback`
/// parameter that store it (`x.name = name`), and those that pass it on to them.
pub(super) fn locate_callback_store<'a>(
    files: &'a [Parsed],
    wired: &[String],
    pins: &PythonPins,
) -> Result<StoreSites<'a>> {
    let order = store_order(wired);
    let pin = pins.callback_store.as_ref().map(|s| Pin::parse(s));
    for anchor in order {
        let mut stores = Vec::new();
        for (i, p) in files.iter().enumerate() {
            let src = p.file.text.as_ref();
            if !stores_attribute(src, anchor) {
                continue;
            }
            // `x.<anchor> = <anchor>` in the own body of a function taking `<anchor>`: the
            // first of each function, the functions in the order of a walk of the tree
            let mut found: Vec<(Node, Node)> = Vec::new();
            for name in identifiers_named(p.tree().root_node(), src, anchor) {
                let Some(attr) = name.parent().filter(|a| {
                    a.kind() == "attribute" && a.child_by_field_name("attribute") == Some(name)
                }) else {
                    continue;
                };
                let Some(a) = attr.parent().filter(|a| {
                    a.kind() == "assignment"
                        && a.child_by_field_name("left") == Some(attr)
                        && a.child_by_field_name("right")
                            .is_some_and(|r| text(r, src) == anchor)
                }) else {
                    continue;
                };
                let Some(def) = scope_function(a) else {
                    continue;
                };
                if !parameters(def, src).iter().any(|(n, _)| n == anchor) {
                    continue;
                }
                if let Some(pin) = &pin
                    && !pin.matches(&p.file.rel, Some(&qualified_name(def, src)))
                {
                    continue;
                }
                found.push((def, a));
            }
            found.sort_by_key(|(def, a)| (def.start_byte(), a.start_byte()));
            found.dedup_by_key(|(def, _)| def.id());
            stores.extend(found.into_iter().map(|(def, a)| {
                (
                    At { file: i, node: def },
                    At {
                        file: i,
                        node: statement_of(a),
                    },
                )
            }));
        }
        if stores.is_empty() {
            continue;
        }
        let store_names: Vec<String> = stores
            .iter()
            .map(|(d, _)| name_of(d.node, &files[d.file].file.text).to_string())
            .collect();
        let mut passers = Vec::new();
        for (i, p) in files.iter().enumerate() {
            let src = p.file.text.as_ref();
            if !contains(src, anchor) || !store_names.iter().any(|s| contains(src, s)) {
                continue;
            }
            // the calls of a store in the own body of a function taking `<anchor>`, in the
            // order of a walk of the tree
            let mut calls: Vec<(Node, Node)> = Vec::new();
            for store in &store_names {
                for name in identifiers_named(p.tree().root_node(), src, store) {
                    let callee = match name.parent() {
                        Some(a)
                            if a.kind() == "attribute"
                                && a.child_by_field_name("attribute") == Some(name) =>
                        {
                            a
                        }
                        _ => name,
                    };
                    let Some(c) = callee.parent().filter(|c| {
                        c.kind() == "call" && c.child_by_field_name("function") == Some(callee)
                    }) else {
                        continue;
                    };
                    if let Some(def) = scope_function(c)
                        && parameters(def, src).iter().any(|(n, _)| n == anchor)
                    {
                        calls.push((def, c));
                    }
                }
            }
            calls.sort_by_key(|(def, c)| {
                (
                    def.start_byte(),
                    c.start_byte(),
                    std::cmp::Reverse(c.end_byte()),
                )
            });
            calls.dedup_by_key(|(_, c)| c.id());
            for (def, c) in calls {
                if let Some(k) = keyword_arg(c, anchor, src)
                    && k.child_by_field_name("value")
                        .is_some_and(|v| text(v, src) == anchor)
                {
                    passers.push((At { file: i, node: def }, Some(At { file: i, node: k })));
                } else if forwards_locals(c, src) {
                    // `init_agent(self, **locals())`: a new parameter reaches it by itself
                    passers.push((At { file: i, node: def }, None));
                }
            }
        }
        return Ok((anchor.clone(), stores, passers));
    }
    Err(Error::Unlocatable {
        site: "callback store",
        detail: format!(
            "no function takes one of the callbacks the prompt handler assigns ({}) and stores it on the agent",
            wired.join(", ")
        ),
        pin_key: "callback_store",
    })
}

/// The callbacks the prompt handler assigns, in the order their store is looked for: the
/// reasoning ones first (the new callback is declared beside them).
pub(super) fn store_order(wired: &[String]) -> Vec<&String> {
    let prefer = ["thinking_callback", "reasoning_callback"];
    let mut order: Vec<&String> = wired
        .iter()
        .filter(|w| prefer.contains(&w.as_str()))
        .collect();
    order.sort_by_key(|w| prefer.iter().position(|p| p == w));
    order.extend(wired.iter().filter(|w| !prefer.contains(&w.as_str())));
    order
}

/// Whether a text may store `name` on an object as `x.name = name` (a scan of the lines
/// holding `.name` that admits every such assignment, so only files that pass it are parsed).
pub(super) fn stores_attribute(text: &str, name: &str) -> bool {
    let dotted = format!(".{name}");
    let stores = |line: &str| {
        line.split(';').any(|stmt| {
            let stmt = stmt.split('#').next().unwrap_or_default();
            stmt.split_once('=').is_some_and(|(left, right)| {
                let target = left.split(':').next().unwrap_or_default(); // `x.name: T = name`
                target.trim_end().ends_with(&dotted) && right.trim() == name
            })
        })
    };
    crate::needles::positions(text, &dotted).any(|at| {
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        stores(&text[start..end])
    })
}

/// Whether [`locate_module_def`] reads `p`: the pinned module, else one holding one of
/// `needles` (`is_one` needs one of them; none given: every module).
pub(super) fn module_may_hold(p: &Parsed, pin: Option<&Pin>, needles: &[&str]) -> bool {
    pin.is_none_or(|pin| pin.file == p.file.rel)
        && (needles.is_empty() || needles.iter().any(|n| contains(&p.file.text, n)))
}

/// The module whose top-level functions match `is_one` most often, and the last of them.
pub(super) fn locate_module_def<'a>(
    files: &'a [Parsed],
    pin: Option<&String>,
    site: &'static str,
    pin_key: &'static str,
    needles: &[&str],
    is_one: impl Fn(Node, &str) -> bool,
) -> Result<At<'a>> {
    let pin = pin.map(|s| Pin::parse(s));
    let mut best: Option<(usize, At)> = None;
    let mut tied = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !module_may_hold(p, pin.as_ref(), needles) {
            continue;
        }
        let defs: Vec<Node> = top_level_functions(p.tree().root_node())
            .into_iter()
            .filter(|d| is_one(*d, &p.file.text))
            .collect();
        let Some(last) = defs.last() else { continue };
        let at = At {
            file: i,
            node: *last,
        };
        match &best {
            Some((n, _)) if *n > defs.len() => {}
            Some((n, _)) if *n == defs.len() => tied.push(at),
            _ => {
                best = Some((defs.len(), at));
                tied.clear();
            }
        }
    }
    match best {
        Some((_, at)) if tied.is_empty() => Ok(at),
        Some((_, at)) => Err(Error::Ambiguous {
            site,
            candidates: std::iter::once(at)
                .chain(tied)
                .map(|a| {
                    candidate(
                        files,
                        a,
                        name_of(a.node, &files[a.file].file.text).to_string(),
                    )
                })
                .collect(),
            pin_key,
        }),
        None => {
            let detail = match &pin {
                Some(pin) => {
                    let seen: Vec<String> = files
                        .iter()
                        .filter(|p| {
                            module_may_hold(p, None, needles)
                                && top_level_functions(p.tree().root_node())
                                    .into_iter()
                                    .any(|d| is_one(d, &p.file.text))
                        })
                        .map(|p| p.file.rel.clone())
                        .collect();
                    let why = if files.iter().any(|p| p.file.rel == pin.file) {
                        format!(
                            "looks in {}, which defines none of the adapter's {site}",
                            pin.file
                        )
                    } else {
                        format!(
                            "looks for {}, which is not among the Python files of the agent that mention ACP (paths are relative to the agent's folder)",
                            pin.file
                        )
                    };
                    format!(
                        "the pin `{pin_key}` in acp-patch.toml {why}; the candidates are: {}",
                        if seen.is_empty() {
                            "none at all".to_string()
                        } else {
                            seen.join(", ")
                        }
                    )
                }
                None => format!("no module defines the adapter's {site}"),
            };
            Err(Error::Unlocatable {
                site,
                detail,
                pin_key,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stores_attribute;

    #[test]
    fn a_store_is_an_attribute_assigned_its_own_name() {
        for text in [
            "self.cb = cb\n",
            "def f(a, cb):\n    a.x = 1; a.cb = cb  # kept\n",
            "agent.cb: Callable = cb\r\n",
            "x = 1\nself.cb=cb",
        ] {
            assert!(stores_attribute(text, "cb"), "{text:?}");
        }
        for text in [
            "self.cb = other\n",
            "self.cb_x = cb\n",
            "# self.cb = cb\n",
            "cb = cb\n",
            "self.cb\n= cb\n",
            "self.other = cb; cb.y = cb\n",
        ] {
            assert!(!stores_attribute(text, "cb"), "{text:?}");
        }
    }
}
