//! The covers of the handlers (the turn's start and end, cancel) and what they read.

use super::*;

/// The session id a present turn start or cancel reads (`read`, its argument), against the
/// one the handler is handed (`session`: as apply spells it, and what the handler is handed):
/// a handler handed the whole JSON-RPC message must read `msg.params.sessionId`, one handed the
/// params `params.sessionId`.
pub(super) fn check_session(
    b: &mut Builder,
    h: &Handler,
    read: Option<Node>,
    session: (&str, &Passed),
    what: &str,
) {
    let file = h.file();
    let src = b.files[file].file.text.as_ref();
    let (want, passed) = session;
    let Some(read) = read else { return };
    let read_text: String = text(read, src).split_whitespace().collect();
    let (handed, why) = match passed {
        Passed::Envelope(why) => ("the whole JSON-RPC message", why),
        Passed::Params(why) => ("the params of the request", why),
        Passed::Unknown => return,
    };
    if read_text == want {
        b.finding(
            "bound",
            Status::Ok,
            file,
            line(read),
            format!(
                "`{want}` read by the {what}: the session id of {handed} `{}` is handed ({why})",
                h.anchor.name
            ),
        );
    } else {
        b.finding(
            "bound",
            Status::Malformed,
            file,
            line(read),
            format!(
                "the {what} reads the session id as `{read_text}`, but `{}` is handed {handed} ({why}): its session id is `{want}`",
                h.anchor.name
            ),
        );
    }
}

/// A block's statements can take a line of their own at its top and bottom: its `{` ends a line
/// and its `}` starts one.
pub(super) fn block_on_own_lines(block: Node, src: &str) -> bool {
    let open_end = line_end_after(src, block.start_byte());
    let after_open = src[block.start_byte() + 1..open_end].trim();
    let close = block.end_byte() - 1;
    (after_open.is_empty() || after_open.starts_with("//"))
        && src[line_start(src, close)..close].trim().is_empty()
        && block.start_position().row != block.end_position().row
}

/// The first statement of a block that is a call of `acpProgress.<fun>(...)` (as `return
/// <call>` or as an expression statement), with its index.
pub(super) fn ns_statement<'t>(
    block: Node<'t>,
    fun: &str,
    src: &str,
) -> Option<(usize, Node<'t>, Node<'t>)> {
    statements(block)
        .into_iter()
        .enumerate()
        .find_map(|(k, s)| {
            let expr = match s.kind() {
                "return_statement" | "expression_statement" => s.named_child(0)?,
                _ => return None,
            };
            (expr.kind() == "call_expression" && callee(expr, src) == (NS, fun))
                .then_some((k, s, expr))
        })
}

/// The connection and session id the turn reads, checked where they are read: the entry of the
/// handler, before any of its own code ran.
pub(super) fn check_reads(b: &mut Builder, file: usize, func: Node, call: Node, what: &str) {
    let src = b.files[file].file.text.as_ref();
    let args = arguments(call);
    for arg in args.iter().take(args.len().saturating_sub(1)) {
        let (names, uses_this) = reads(*arg, src);
        if uses_this || text(*arg, src).starts_with("this.") {
            // `this.conn`, or `this.sessions.conn`: a field of an object the class builds
            let path = this_path(*arg, src).filter(|p| !p.is_empty());
            match (this_class(func), path) {
                (Some(class), Some(path)) => match path_bound(b.files, file, class, &path) {
                    Some((site, how)) => b.finding(
                        "bound",
                        Status::Ok,
                        site.file,
                        site.line,
                        format!("`{}` read by the {what}: {how}", text(*arg, src)),
                    ),
                    None => b.finding(
                        "bound",
                        Status::Malformed,
                        file,
                        line(call),
                        format!(
                            "the {what} reads `{}`, which {} never sets before a prompt (no initializer, parameter property or constructor assignment)",
                            text(*arg, src),
                            name_of(class, src)
                        ),
                    ),
                },
                (None, _) => b.finding(
                    "bound",
                    Status::Malformed,
                    file,
                    line(call),
                    format!("the {what} reads `this` outside a class method"),
                ),
                (Some(_), None) => {}
            }
        }
        for (name, _) in names {
            if name == NS {
                continue;
            }
            match bound_at_entry(b.files, file, func, &name) {
                Some((f, l, how)) => b.finding(
                    "bound",
                    Status::Ok,
                    f,
                    l,
                    format!("`{name}` read by the {what}: {how}"),
                ),
                None => b.finding(
                    "bound",
                    Status::Malformed,
                    file,
                    line(call),
                    format!(
                        "the {what} reads `{name}`, which is not bound where it runs (not a parameter, a module-level name or a global)"
                    ),
                ),
            }
        }
    }
}

/// Whether only blanks come before a node on its first line.
pub(super) fn starts_line(n: Node, src: &str) -> bool {
    src[line_start(src, n.start_byte())..n.start_byte()]
        .trim()
        .is_empty()
}

/// Whether only blanks come after a node on its last line.
pub(super) fn ends_line(n: Node, src: &str) -> bool {
    src[n.end_byte()..line_end_after(src, n.end_byte())]
        .trim()
        .is_empty()
}

pub(super) fn prompt_cover(
    b: &mut Builder,
    h: &Handler,
    func: Node,
    conn: &Option<Conn>,
    session: (&str, &Passed),
) -> Result<()> {
    let session_id = session.0;
    let file = h.file();
    let p = &b.files[file];
    let src = p.file.text.as_ref();
    let eol = p.file.style().eol;
    if func.kind().starts_with("generator") || text(func, src).trim_start().starts_with('*') {
        return Err(b.refuse(
            file,
            func,
            format!("the prompt handler `{}` is a generator", h.anchor.name),
        ));
    }
    let body = body(func).ok_or_else(|| {
        b.refuse(
            file,
            func,
            format!("the prompt handler `{}` has no body", h.anchor.name),
        )
    })?;
    let asyncness = if is_async(func) { "async " } else { "" };
    let conn_text = |b: &Builder| -> Result<String> {
        match conn {
            Some(c) => Ok(c.anchor.text.clone()),
            None => {
                // what a pin may name that is a connection (never a placeholder)
                let sends = crate::lang::typescript::locate::sends(b.files).unwrap_or_default();
                let class = this_class(func);
                let index = class
                    .and_then(|c| crate::lang::typescript::locate::factory_index(b.files, file, c));
                let candidates = class
                    .map(|c| {
                        crate::lang::typescript::locate::connection_candidates(
                            b.files, file, c, index, &sends,
                        )
                    })
                    .unwrap_or_default();
                Err(Error::NotFound {
                    site: "connection",
                    detail: format!(
                        "`{}` at {}:{} handles session/prompt, but where its class keeps the connection the SDK handed over is unknown: no field of it (or of an object its constructor builds) is set from the factory's argument or used by a send",
                        h.anchor.name, b.files[file].file.rel, h.anchor.site.line,
                    ),
                    pin_key: "typescript.connection",
                    candidates,
                })
            }
        }
    };
    let style = b.style(file);
    let tail = restyle("});", style);
    let head_of =
        |conn: &str| format!("return {NS}.turn({conn}, {session_id}, {asyncness}() => {{");
    if body.kind() == "statement_block" {
        if let Some((k, stmt, call)) = ns_statement(body, "turn", src) {
            // what apply inserted, as it would insert it now (revert takes out exactly that)
            let head = conn.as_ref().map(|c| head_of(&c.anchor.text));
            let indent = indent_at(src, stmt.start_byte()).to_string();
            let (open_at, open) = if starts_line(stmt, src) {
                (
                    line_start(src, stmt.start_byte()),
                    head.map(|h| format!("{indent}{h}{eol}")),
                )
            } else {
                (stmt.start_byte() - 1, head.map(|h| format!(" {h}")))
            };
            let (close_at, close) = if ends_line(stmt, src) {
                (
                    line_start(src, stmt.end_byte()),
                    format!("{indent}{tail}{eol}"),
                )
            } else {
                (
                    stmt.end_byte().saturating_sub(tail.len()),
                    format!("{tail} "),
                )
            };
            b.push(
                CHECK_OPEN,
                "turn start",
                file,
                open_at,
                open.unwrap_or_default(),
                Some(line(stmt)),
            );
            b.push(
                CHECK_CLOSE,
                "turn end",
                file,
                close_at,
                close,
                Some(stmt.end_position().row + 1),
            );
            if k > 0 {
                b.finding(
                    "hook.start",
                    Status::Malformed,
                    file,
                    line(stmt),
                    format!("`{}` runs {k} statement(s) before the turn opens; the turn must open first", h.anchor.name),
                );
            }
            check_reads(b, file, func, call, "turn start");
            let read = arguments(call).get(1).copied();
            check_session(b, h, read, session, "turn start");
            connection_finding(b, conn);
            return Ok(());
        }
        if statements(body).is_empty() {
            return Err(b.refuse(
                file,
                body,
                format!("the prompt handler `{}` is empty", h.anchor.name),
            ));
        }
        let head = head_of(&conn_text(b)?);
        if block_on_own_lines(body, src) {
            let first = statements(body)[0];
            let indent = indent_at(src, first.start_byte()).to_string();
            let open_at = line_end_after(src, body.start_byte());
            let close_at = line_start(src, body.end_byte() - 1);
            b.push(
                CHECK_OPEN,
                "turn start",
                file,
                open_at,
                format!("{indent}{head}{eol}"),
                None,
            );
            b.push(
                CHECK_CLOSE,
                "turn end",
                file,
                close_at,
                format!("{indent}{tail}{eol}"),
                None,
            );
        } else {
            b.push(
                CHECK_OPEN,
                "turn start",
                file,
                body.start_byte() + 1,
                format!(" {head}"),
                None,
            );
            b.push(
                CHECK_CLOSE,
                "turn end",
                file,
                body.end_byte() - 1,
                format!("{tail} "),
                None,
            );
        }
    } else {
        // an arrow function's expression body
        let open_of = |conn: &str| format!("{NS}.turn({conn}, {session_id}, {asyncness}() => ");
        if body.kind() == "call_expression" && callee(body, src) == (NS, "turn") {
            b.push(
                CHECK_OPEN,
                "turn start",
                file,
                body.start_byte(),
                conn.as_ref()
                    .map(|c| open_of(&c.anchor.text))
                    .unwrap_or_default(),
                Some(line(body)),
            );
            b.push(
                CHECK_CLOSE,
                "turn end",
                file,
                body.end_byte() - 1,
                ")".into(),
                Some(body.end_position().row + 1),
            );
            check_reads(b, file, func, body, "turn start");
            let read = arguments(body).get(1).copied();
            check_session(b, h, read, session, "turn start");
            connection_finding(b, conn);
            return Ok(());
        }
        let open = open_of(&conn_text(b)?);
        b.push(
            CHECK_OPEN,
            "turn start",
            file,
            body.start_byte(),
            open,
            None,
        );
        b.push(
            CHECK_CLOSE,
            "turn end",
            file,
            body.end_byte(),
            ")".into(),
            None,
        );
    }
    connection_finding(b, conn);
    Ok(())
}

pub(super) fn connection_finding(b: &mut Builder, conn: &Option<Conn>) {
    if let Some(c) = conn {
        b.finding(
            "connection",
            Status::Ok,
            c.anchor.site.file,
            c.anchor.site.line,
            format!("`{}`: {}", c.anchor.text, c.origin),
        );
        if c.anchor.text == crate::lang::typescript::locate::held() {
            b.finding(
                "sends",
                Status::Ok,
                c.anchor.site.file,
                c.anchor.site.line,
                "none in the tree: the installed base class sends every update, each passing the relay on the connection".into(),
            );
        }
    }
}

pub(super) fn cancel_cover(
    b: &mut Builder,
    h: &Handler,
    func: Node,
    session: (&str, &Passed),
) -> Result<()> {
    let session_id = session.0;
    let file = h.file();
    let p = &b.files[file];
    let src = p.file.text.as_ref();
    let eol = p.file.style().eol;
    let Some(body) = body(func) else {
        return Ok(());
    };
    let style = b.style(file);
    let code = restyle(&format!("{NS}.cancel({session_id});"), style);
    // on the line of the agent's code (a one-line body): ended by `;` whatever the style
    let inline = restyle_inline(&format!("{NS}.cancel({session_id});"), style);
    if body.kind() == "statement_block" {
        if let Some((_, stmt, call)) = ns_statement(body, "cancel", src) {
            let read = arguments(call).first().copied();
            check_session(b, h, read, session, "cancel");
            let indent = indent_at(src, stmt.start_byte());
            let (at, inserted) = if starts_line(stmt, src) && ends_line(stmt, src) {
                (
                    line_start(src, stmt.start_byte()),
                    format!("{indent}{code}{eol}"),
                )
            } else {
                (stmt.start_byte() - 1, format!(" {inline} "))
            };
            b.push(CHECK_CANCEL, "cancel", file, at, inserted, Some(line(stmt)));
            return Ok(());
        }
        match statements(body).first() {
            Some(first) if block_on_own_lines(body, src) => {
                let indent = indent_at(src, first.start_byte()).to_string();
                let at = line_end_after(src, body.start_byte());
                b.push(
                    CHECK_CANCEL,
                    "cancel",
                    file,
                    at,
                    format!("{indent}{code}{eol}"),
                    None,
                );
            }
            _ => b.push(
                CHECK_CANCEL,
                "cancel",
                file,
                body.start_byte() + 1,
                format!(" {inline} "),
                None,
            ),
        }
    } else {
        if text(body, src).starts_with(&format!("({NS}.cancel(")) {
            let read = descendants(body, "call_expression")
                .into_iter()
                .find(|c| callee(*c, src) == (NS, "cancel"))
                .and_then(|c| arguments(c).first().copied());
            check_session(b, h, read, session, "cancel");
            let open = format!("({NS}.cancel({session_id}), ");
            let l = Some(line(body));
            b.push(CHECK_CANCEL, "cancel", file, body.start_byte(), open, l);
            let end = Some(body.end_position().row + 1);
            b.push(
                CHECK_CANCEL,
                "cancel",
                file,
                body.end_byte() - 1,
                ")".into(),
                end,
            );
            return Ok(());
        }
        b.push(
            CHECK_CANCEL,
            "cancel",
            file,
            body.start_byte(),
            format!("({NS}.cancel({session_id}), "),
            None,
        );
        b.push(
            CHECK_CANCEL,
            "cancel",
            file,
            body.end_byte(),
            ")".into(),
            None,
        );
    }
    Ok(())
}

pub(super) fn value_cover(b: &mut Builder, h: &Handler, expr: Node, wrapped: bool) {
    let (fun, what) = match h.role {
        Role::Prompt => (
            "handler",
            "the client in the context the SDK hands the handler of session/prompt",
        ),
        Role::Cancel => ("cancelHandler", ""),
    };
    let (open, close): (&'static [&'static str], &'static [&'static str]) = match h.role {
        Role::Prompt => (CHECK_OPEN, CHECK_CLOSE),
        Role::Cancel => (CHECK_CANCEL, CHECK_CANCEL),
    };
    let (l1, l2) = match h.role {
        Role::Prompt => ("turn start", "turn end"),
        Role::Cancel => ("cancel", "cancel"),
    };
    let present = wrapped.then(|| line(expr));
    let end_line = wrapped.then(|| expr.end_position().row + 1);
    // present: `acpProgress.handler(fn)` is `expr`, its `)` the last byte
    let close_at = if wrapped {
        expr.end_byte() - 1
    } else {
        expr.end_byte()
    };
    let (o, c) = (format!("{NS}.{fun}("), ")".to_string());
    b.push(open, l1, h.file(), expr.start_byte(), o, present);
    b.push(close, l2, h.file(), close_at, c, end_line);
    if h.role == Role::Prompt {
        b.finding(
            "connection",
            Status::Ok,
            h.file(),
            h.anchor.site.line,
            if h.anchor.name == "session_prompt" {
                what.to_string()
            } else {
                format!("`{}`: {what}", h.anchor.name)
            },
        );
    }
}
