//! The pieces at a prompt handler: its first statement (the turn's start, or the turn end's
//! lookup), or the whole body wrapped as one turn on the handler's sink.

use super::Builder;
use crate::error::Result;
use crate::lang::parts::{CHECK_START, CHECK_TURN_END};
use crate::lang::rust::locate::handlers::Handler;
use crate::render::reindent;
use crate::source::{indent_at, line_end_after, line_start};
use std::ops::Range;
use syn::spanned::Spanned;

/// A statement as the first of a body (a block: before its first statement, at its
/// indentation; an expression: braces around it). Present when the body's first statement
/// holds one of `markers`.
#[allow(clippy::too_many_arguments)]
pub(super) fn first_statement(
    b: &mut Builder,
    file: usize,
    block: Option<&syn::Block>,
    expr: Range<usize>,
    stmt: &str,
    checks: &'static [&'static str],
    label: &'static str,
    markers: &[&str],
) -> Result<()> {
    let src = b.src(file).to_string();
    let eol = b.eol(file);
    let Some(block) = block else {
        // `|..| expr` / `Pat => expr`: `{ stmt expr }`
        b.push(checks, label, file, expr.start, format!("{{ {stmt} "), None);
        b.push(checks, label, file, expr.end, " }".into(), None);
        return Ok(());
    };
    if let Some(first) = block.stmts.first() {
        let text = &src[first.span().byte_range()];
        if markers.iter().any(|m| text.contains(m)) {
            // present: the exact text apply inserted, in the form it took (revert takes it out)
            let at = first.span().byte_range().start;
            let line = first.span().start().line;
            let open_at = block.brace_token.span.open().byte_range().start;
            let close_at = block.brace_token.span.close().byte_range().start;
            if src[open_at..].starts_with(&format!("{{ {stmt} "))
                && src[..close_at + 1].ends_with(" }")
            {
                // braces apply put around an expression body
                b.push(
                    checks,
                    label,
                    file,
                    open_at,
                    format!("{{ {stmt} "),
                    Some(line),
                );
                b.push(
                    checks,
                    label,
                    file,
                    close_at - 1,
                    " }".into(),
                    Some(block.brace_token.span.close().start().line),
                );
            } else if line == block.brace_token.span.open().start().line {
                b.push(checks, label, file, at, format!("{stmt} "), Some(line));
            } else {
                let f = &b.files[file].file;
                let text = reindent(stmt, indent_at(&src, at), &f.style().indent_unit, eol);
                b.push(checks, label, file, line_start(&src, at), text, Some(line));
            }
            return Ok(());
        }
    }
    let open = block.brace_token.span.open().byte_range().end;
    let close = block.brace_token.span.close().byte_range().start;
    match block.stmts.first() {
        Some(first) if first.span().start().line != block.brace_token.span.open().start().line => {
            // above the comments right over the first statement
            let at = first.span().byte_range().start;
            let mut start = line_start(&src, at);
            while start > 0 {
                let prev = line_start(&src, start - 1);
                if src[prev..start].trim_start().starts_with("//") {
                    start = prev;
                } else {
                    break;
                }
            }
            let f = &b.files[file].file;
            let text = reindent(stmt, indent_at(&src, at), &f.style().indent_unit, eol);
            b.push(checks, label, file, start, text, None);
        }
        Some(first) => {
            // `{ first; .. }` on one line
            b.push(
                checks,
                label,
                file,
                first.span().byte_range().start,
                format!("{stmt} "),
                None,
            );
        }
        None if src[open..close].contains('\n') => {
            let f = &b.files[file].file;
            let indent = format!("{}{}", indent_at(&src, open), f.style().indent_unit);
            b.push(
                checks,
                label,
                file,
                line_end_after(&src, open),
                format!("{indent}{stmt}{eol}"),
                None,
            );
        }
        None => b.push(checks, label, file, open, format!(" {stmt} "), None),
    }
    Ok(())
}

/// `turn(sink, session, async move {` after the body's `{` line and `}).await` before its `}`.
pub(super) fn wrap_handler(b: &mut Builder, h: &Handler, path: &str, sink: &str) -> Result<()> {
    let block = h
        .block
        .as_ref()
        .expect("a wrapped handler is a method with a body");
    let src = b.src(h.anchor.site.file).to_string();
    let eol = b.eol(h.anchor.site.file);
    let open = block.brace_token.span.open();
    let close = block.brace_token.span.close();
    // present: the body is exactly one `..acp_progress::turn(..).await` expression; its two
    // lines as apply wrote them (revert takes them out)
    if let [syn::Stmt::Expr(e, None)] = block.stmts.as_slice() {
        let text = &src[e.span().byte_range()];
        if text.contains("acp_progress::turn(") && text.trim_end().ends_with(".await") {
            let line = e.span().start().line;
            let indent = indent_at(&src, e.span().byte_range().start).to_string();
            let end_line = e.span().end().line;
            b.push(
                CHECK_START,
                "turn start",
                h.anchor.site.file,
                line_start(&src, e.span().byte_range().start),
                format!(
                    "{indent}{path}::turn({sink}, {}.to_string(), async move {{{eol}",
                    h.session
                ),
                Some(line),
            );
            b.push(
                CHECK_TURN_END,
                "turn end",
                h.anchor.site.file,
                line_start(&src, e.span().byte_range().end),
                format!("{indent}}}).await{eol}"),
                Some(end_line),
            );
            return Ok(());
        }
    }

    let after_open = &src[open.byte_range().end..line_end_after(&src, open.byte_range().end)];
    if !after_open.trim().is_empty() && !after_open.trim_start().starts_with("//") {
        return Err(b.unsupported(
            h.anchor.site.file,
            open.start().line,
            format!("{}: the body starts on the line of its `{{`; put its first statement on a line of its own", h.anchor.name),
        ));
    }
    let close_at = close.byte_range().start;
    if !src[line_start(&src, close_at)..close_at].trim().is_empty() {
        return Err(b.unsupported(
            h.anchor.site.file,
            close.start().line,
            format!("{}: the body's closing `}}` shares its line with code; put it on a line of its own", h.anchor.name),
        ));
    }
    let f = &b.files[h.anchor.site.file].file;
    let indent = match block.stmts.first() {
        Some(first) => indent_at(&src, first.span().byte_range().start).to_string(),
        None => format!("{}{}", indent_at(&src, close_at), f.style().indent_unit),
    };
    b.push(
        CHECK_START,
        "turn start",
        h.anchor.site.file,
        line_end_after(&src, open.byte_range().end),
        format!(
            "{indent}{path}::turn({sink}, {}.to_string(), async move {{{eol}",
            h.session
        ),
        None,
    );
    b.push(
        CHECK_TURN_END,
        "turn end",
        h.anchor.site.file,
        line_start(&src, close_at),
        format!("{indent}}}).await{eol}"),
        None,
    );
    Ok(())
}
