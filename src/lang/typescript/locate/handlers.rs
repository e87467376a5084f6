//! The prompt and cancel handlers: SDK-bound classes, registered functions, dispatchers, pins.

use super::*;

/// Every handler the SDK (or the agent's own dispatcher) calls for `session/prompt` and
/// `session/cancel`, each with its cover; `pins` narrows them (and may name a prompt
/// method the SDK binding was not found for).
pub fn handlers<'a>(
    decisions: &crate::lang::survey::Decisions,
    files: &'a [Parsed],
    sends: &[Send<'a>],
    pins: &crate::config::TypeScriptPins,
) -> Result<Vec<Handler<'a>>> {
    let mut out: Vec<Handler> = Vec::new();
    let push = |out: &mut Vec<Handler<'a>>, h: Handler<'a>| {
        let same = |o: &Handler| {
            o.file() == h.file() && o.anchor.site.line == h.anchor.site.line && o.role == h.role
        };
        if !out.iter().any(same) {
            out.push(h);
        }
    };
    // SDK 0.x/1.x: the class the AgentSideConnection factory builds
    let bound = sdk_classes(files);
    for &(file, class, index, _, _) in &bound {
        let conn = match pinned_connection(files, file, class, Some(index), sends, pins)? {
            Some(c) => Some(c),
            None => stored_connection(files, file, class, index)
                .or_else(|| used_connection(files, file, class, sends))
                .or_else(|| held_connection(files, file, class, sends)),
        };
        let src = files[file].file.text.as_ref();
        let pin_name = conn.as_ref().and_then(|c| match &c.anchor.pin {
            Some(p) if c.anchor.text.starts_with("this.") => Some(p.clone()),
            _ => c
                .anchor
                .text
                .strip_prefix("this.")
                .map(|field| format!("{}.{field}", name_of(class, src))),
        });
        if let (Some(c), Some(name), 1) = (&conn, pin_name, bound.len()) {
            let at = if c.anchor.site.file == file {
                c.anchor.site.line
            } else {
                line(class)
            };
            let pin = candidate(files, file, at, &name);
            decisions.record("connection", "typescript.connection", &[&pin], Some(&pin));
        }
        for (role, method) in [(Role::Prompt, "prompt"), (Role::Cancel, "cancel")] {
            let Some((f, m)) = member(files, file, class, method) else {
                continue;
            };
            let Some(func) = member_function(m) else {
                continue;
            };
            push(
                &mut out,
                Handler {
                    anchor: PromptHandler {
                        site: Site::of_node(f, m),
                        name: qualified(files, f, func),
                    },
                    role,
                    cover: body_cover(files, f, func, conn.clone())?,
                },
            );
        }
    }
    // SDK 0.x/1.x: an object literal a function the factory reaches builds and returns
    for (built, ..) in sdk_built(files) {
        let Built::Object {
            file,
            object,
            builder,
            conn,
        } = built
        else {
            continue;
        };
        let src = files[file].file.text.as_ref();
        let builder_name = qualified(files, file, builder);
        let conn = Conn {
            anchor: Connection {
                site: Site::of_node(file, builder),
                text: conn,
                pin: None,
            },
            origin: format!(
                "the AgentSideConnection factory's argument, a parameter of {builder_name}"
            ),
        };
        for (role, method) in [(Role::Prompt, "prompt"), (Role::Cancel, "cancel")] {
            let Some(func) = object_function(object, method, src) else {
                continue;
            };
            let at = if func.kind() == "method_definition" {
                func
            } else {
                func.parent().unwrap_or(func)
            };
            push(
                &mut out,
                Handler {
                    anchor: PromptHandler {
                        site: Site::of_node(file, at),
                        name: format!("{builder_name}.{method}"),
                    },
                    role,
                    cover: body_cover(files, file, func, Some(conn.clone()))?,
                },
            );
        }
    }
    // SDK 2.x: `.onRequest(session/prompt, fn)`, `.onNotification(session/cancel, fn)`
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        let registers = |role: &str, method: &str| {
            crate::needles::contains(src, role) && may_name_method(src, method)
        };
        if !is_agent_file(p)
            || !(registers("onRequest", "session/prompt")
                || registers("onNotification", "session/cancel"))
        {
            continue;
        }
        let root = p.tree().root_node();
        let names = MethodNames::new(root, src);
        for c in descendants(root, "call_expression") {
            let (obj, name) = callee(c, src);
            let role = match name {
                "onRequest" => Role::Prompt,
                "onNotification" => Role::Cancel,
                _ => continue,
            };
            let args = arguments(c);
            let want = if role == Role::Prompt {
                "session/prompt"
            } else {
                "session/cancel"
            };
            if obj.is_empty() || args.len() < 2 || names.of(args[0]).is_none_or(|m| m != want) {
                continue;
            }
            let expr = *args.last().expect("two arguments");
            let fun = if role == Role::Prompt {
                "handler"
            } else {
                "cancelHandler"
            };
            let (inner, wrapped) = match unwrap_ns(expr, fun, src) {
                Some(inner) => (inner, true),
                None => (expr, false),
            };
            let name = match inner.kind() {
                "identifier" | "member_expression" => text(inner, src).to_string(),
                // a pin names it `file:session_prompt` (pins name no `/`)
                _ => want.replace('/', "_"),
            };
            push(
                &mut out,
                Handler {
                    anchor: PromptHandler {
                        site: Site::of_node(i, expr),
                        name,
                    },
                    role,
                    cover: Cover::Value { expr, wrapped },
                },
            );
        }
    }
    // no SDK: the agent's own dispatcher. Beside an SDK-bound handler, a switch on
    // `session/prompt` from which no writer of updates can be called is not the wire's (the
    // SDK dispatches that): it reads something else (a session log's stored messages: posthog's
    // trace builder, fixture `sdk_session_log`); its file's `session/cancel` arms go with it
    let sdk_bound = out.iter().any(|h| h.role == Role::Prompt);
    let mut readers: Vec<usize> = Vec::new();
    for (role, method) in [
        (Role::Prompt, "session/prompt"),
        (Role::Cancel, "session/cancel"),
    ] {
        for (f, func, passed) in dispatched(files, method) {
            let conn = match role {
                Role::Prompt => match raw_connection(decisions, files, f, func, sends, pins) {
                    Ok(None)
                    | Err(Error::Unlocatable {
                        site: "connection", ..
                    }) if sdk_bound && pins.connection.is_none() => {
                        readers.push(f);
                        continue;
                    }
                    found => found?,
                },
                Role::Cancel if readers.contains(&f) => continue,
                Role::Cancel => None, // a cancel sends nothing
            };
            push(
                &mut out,
                Handler {
                    anchor: PromptHandler {
                        site: Site::of_node(f, func),
                        name: qualified(files, f, func),
                    },
                    role,
                    cover: dispatched_cover(files, f, func, conn, passed)?,
                },
            );
        }
    }
    let selected = select(decisions, files, out, sends, pins)?;
    if let Some(pin) = &pins.connection {
        let used = selected.iter().any(|h| {
            matches!(&h.cover, Cover::Body { conn: Some(c), .. }
                if c.origin.starts_with("pinned") || c.origin.starts_with("the agent's own writer"))
        });
        if !used {
            let mut seen: Vec<Candidate> = Vec::new();
            for (file, class, index, ..) in sdk_classes(files) {
                for c in connection_candidates(files, file, class, Some(index), sends) {
                    if !seen.contains(&c) {
                        seen.push(c);
                    }
                }
            }
            return Err(Error::NotFound {
                site: "connection",
                detail: format!(
                    "the pin `connection = \"{pin}\"` matches nothing: it must name `file:Class.field` (or `Class.field.field`, a field of an object the constructor builds) of a class whose prompt is covered, a field set before a prompt"
                ),
                pin_key: "typescript.connection",
                candidates: seen,
            });
        }
    }
    Ok(selected)
}

/// Every method named `prompt` of a class in the tree: what a `prompt` pin may name when no
/// SDK binding was found (never one [`not_a_handler`] rules out).
pub(super) fn prompt_methods<'a>(files: &'a [Parsed]) -> Vec<(usize, Node<'a>, Node<'a>)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        let src = p.file.text.as_ref();
        for class in classes(p.tree().root_node()) {
            for m in class_members(class) {
                if member_name(m, src) == "prompt"
                    && let Some(f) = member_function(m)
                    && not_a_handler(files, i, class, f).is_none()
                {
                    out.push((i, m, f));
                }
            }
        }
    }
    out
}

/// Every function-valued member of every class of the agent's files (what a `prompt` pin may
/// name besides the methods called `prompt`; never one [`not_a_handler`] rules out).
pub(super) fn class_functions<'a>(files: &'a [Parsed]) -> Vec<(usize, Node<'a>, Node<'a>)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        for class in classes(p.tree().root_node()) {
            for m in class_members(class) {
                if let Some(f) = member_function(m)
                    && not_a_handler(files, i, class, f).is_none()
                {
                    out.push((i, m, f));
                }
            }
        }
    }
    out
}

/// Why a class's function can never be the agent's prompt handler, if so: it is a generator
/// (the SDK awaits a response, not a stream), it sends `session/prompt` itself (the client
/// side: a copy of the SDK's `ClientSideConnection`, `sendRequest(methods.session_prompt, ..)`),
/// it hands the prompt on to a `ClientSideConnection` (a client library's wrapper), or its class
/// answers the client's half of the protocol (`sessionUpdate` and `requestPermission` both
/// defined: an `acp.Client`).
pub(super) fn not_a_handler(
    files: &[Parsed],
    file: usize,
    class: Node,
    func: Node,
) -> Option<String> {
    let p = &files[file];
    let src = p.file.text.as_ref();
    let mut cursor = func.walk();
    if func
        .children(&mut cursor)
        .any(|c| c.kind() == "*" || c.kind() == "generator_function")
        || func.kind() == "generator_function"
    {
        return Some("a generator, which the SDK cannot await a prompt response from".into());
    }
    let body = func.child_by_field_name("body")?;
    if may_name_method(text(body, src), "session/prompt") {
        let names = MethodNames::new(p.tree().root_node(), src);
        let sends = descendants(body, "call_expression").into_iter().find(|c| {
            arguments(*c)
                .first()
                .is_some_and(|a| names.of(*a).as_deref() == Some("session/prompt"))
        });
        if let Some(call) = sends {
            return Some(format!(
                "it sends `session/prompt` itself (line {}): the client side of the protocol",
                line(call)
            ));
        }
    }
    let members: Vec<&str> = class_members(class)
        .into_iter()
        .map(|m| member_name(m, src))
        .collect();
    // it drives an agent: its class builds the SDK's client side (acpx 0.1.15's `AcpClient`,
    // whose `prompt` calls the connection's) and answers no `initialize` / `newSession` (a
    // proxy that is an agent too does)
    let agent_like = members.contains(&"initialize") && members.contains(&"newSession");
    if !agent_like
        && let Some(client) = descendants(class, "new_expression").into_iter().find(|n| {
            n.child_by_field_name("constructor")
                .map(|c| text(c, src))
                .is_some_and(|c| {
                    c == "ClientSideConnection" || c.ends_with(".ClientSideConnection")
                })
        })
    {
        return Some(format!(
            "its class builds a `ClientSideConnection` (line {}): the client side of the protocol",
            line(client)
        ));
    }
    if let Some(why) = super::client_side::forwards_to_an_agent(files, file, class, func) {
        return Some(why);
    }
    if members.contains(&"sessionUpdate") && members.contains(&"requestPermission") {
        return Some(
            "its class answers `session/update` and `session/request_permission`: the client side of the protocol".into(),
        );
    }
    None
}

/// The prompt pin: keeps the handlers it names, or adds the method it names.
pub(super) fn select<'a>(
    decisions: &crate::lang::survey::Decisions,
    files: &'a [Parsed],
    mut found: Vec<Handler<'a>>,
    sends: &[Send<'a>],
    pins: &crate::config::TypeScriptPins,
) -> Result<Vec<Handler<'a>>> {
    let Some(pin) = pins.prompt.as_ref().map(|p| Pin::parse(p)) else {
        let prompts: Vec<&Handler> = found.iter().filter(|h| h.role == Role::Prompt).collect();
        if let [one] = prompts[..] {
            // `acp-patch init` lists the site with the pin that holds apply to it
            let c = one.anchor.candidate(&files[one.file()].file.rel);
            decisions.record("prompt handler", "typescript.prompt", &[&c], Some(&c));
        }
        if !prompts.is_empty() {
            return Ok(found);
        }
        let candidates: Vec<Candidate> = prompt_methods(files)
            .into_iter()
            .map(|(f, m, func)| candidate(files, f, line(m), &qualified(files, f, func)))
            .collect();
        // a class the factory builds whose `prompt` is inherited from outside the tree
        let inherited = sdk_classes(files)
            .into_iter()
            .find_map(|(file, class, ..)| {
                (extended(class).is_some() && member(files, file, class, "prompt").is_none())
                    .then_some((file, class))
            });
        let detail = match inherited {
            Some((file, class)) => {
                let src = files[file].file.text.as_ref();
                let name = name_of(class, src);
                let base = extended(class)
                    .map(|v| format!(" from `{}`", text(v, src)))
                    .unwrap_or_default();
                format!(
                    "`{name}` ({}:{}) is what the connection's factory builds, but it inherits `prompt`{base}, outside the tree (an installed package), so the tree has no prompt handler to patch; define one in `{name}` that hands on to the base's, `async prompt(params) {{ return super.prompt(params) }}`, and apply again (the card opens there and follows the base's sends), or point acp-patch at the package that defines it",
                    files[file].file.rel,
                    line(class)
                )
            }
            None => "no `new AgentSideConnection((conn) => new X(conn), ...)`, no `.onRequest(\"session/prompt\", ...)` and no dispatcher of `\"session/prompt\"` was found".to_string(),
        };
        return Err(if candidates.is_empty() {
            // nothing to pin either: these files are no agent (a client, say)
            Error::NoAgent {
                root: files
                    .first()
                    .and_then(|p| {
                        let path = p.file.path.to_string_lossy();
                        path.strip_suffix(p.file.rel.as_str())
                            .map(|r| std::path::PathBuf::from(r.trim_end_matches('/')))
                    })
                    .unwrap_or_default(),
                detail: format!("TypeScript: {detail}"),
            }
        } else {
            Error::Ambiguous {
                site: "prompt handler (none is bound to the SDK)",
                candidates,
                pin_key: "typescript.prompt",
            }
        });
    };
    let matches = |file: usize, name: &str| {
        files[file].file.rel == pin.file && pin.name.as_ref().is_none_or(|n| n == name)
    };
    let seen: Vec<Candidate> = found
        .iter()
        .filter(|h| h.role == Role::Prompt)
        .map(|h| h.anchor.candidate(&files[h.file()].file.rel))
        .chain(
            prompt_methods(files)
                .into_iter()
                .map(|(f, m, func)| candidate(files, f, line(m), &qualified(files, f, func))),
        )
        .collect();
    let keep: Vec<bool> = found
        .iter()
        .map(|h| h.role == Role::Cancel || matches(h.file(), &h.anchor.name))
        .collect();
    let any_prompt = found
        .iter()
        .zip(&keep)
        .any(|(h, k)| *k && h.role == Role::Prompt);
    let mut kept: Vec<Handler> = found
        .drain(..)
        .zip(keep)
        .filter_map(|(h, k)| k.then_some(h))
        .collect();
    if !any_prompt {
        // a prompt method no SDK binding was found for
        let pinned = prompt_methods(files)
            .into_iter()
            .chain(class_functions(files))
            .find(|(f, _, func)| matches(*f, &qualified(files, *f, *func)));
        let Some((f, m, func)) = pinned else {
            // a function the pin names that is no prompt handler: say why
            for (i, p) in files
                .iter()
                .enumerate()
                .filter(|(_, p)| p.file.rel == pin.file && is_agent_file(p))
            {
                for class in classes(p.tree().root_node()) {
                    for m in class_members(class) {
                        if let Some(func) = member_function(m)
                            && matches(i, &qualified(files, i, func))
                            && let Some(why) = not_a_handler(files, i, class, func)
                        {
                            return Err(Error::Unlocatable {
                                site: "prompt handler",
                                detail: format!(
                                    "the pin `prompt = \"{}:{}\"` names no prompt handler: {why}",
                                    pin.file,
                                    qualified(files, i, func)
                                ),
                                pin_key: "typescript.prompt",
                            });
                        }
                    }
                }
            }
            let mut names: Vec<String> = seen
                .iter()
                .map(|c| format!("{}:{} ({})", c.location.file, c.name, c.location.line))
                .collect();
            names.dedup();
            return Err(Error::Unlocatable {
                site: "prompt handler",
                detail: format!(
                    "the pin `prompt = \"{}{}\"` matches nothing: no prompt handler {} in {}; candidates seen: {}",
                    pin.file,
                    pin.name
                        .as_ref()
                        .map(|n| format!(":{n}"))
                        .unwrap_or_default(),
                    pin.name
                        .as_ref()
                        .map(|n| format!("named `{n}`"))
                        .unwrap_or_else(|| "at all".into()),
                    pin.file,
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                ),
                pin_key: "typescript.prompt",
            });
        };
        let class = enclosing_class(m).expect("members are in classes");
        let conn = match pinned_connection(files, f, class, None, sends, pins)? {
            Some(c) => Some(c),
            None => used_connection(files, f, class, sends),
        };
        kept.push(Handler {
            anchor: PromptHandler {
                site: Site::of_node(f, m),
                name: qualified(files, f, func),
            },
            role: Role::Prompt,
            cover: dispatched_cover(files, f, func, conn, Passed::Unknown)?,
        });
        if let Some((cf, cm)) = member(files, f, class, "cancel")
            && let Some(cfunc) = member_function(cm)
        {
            let conn = None;
            kept.push(Handler {
                anchor: PromptHandler {
                    site: Site::of_node(cf, cm),
                    name: qualified(files, cf, cfunc),
                },
                role: Role::Cancel,
                cover: dispatched_cover(files, cf, cfunc, conn, Passed::Unknown)?,
            });
        }
    }
    Ok(kept)
}
