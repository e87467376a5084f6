//! How each write of messages is wrapped: the loop's variable (the message's own name, or
//! `acp_message` in its place), whether it runs over references, the runtime call and its
//! argument — from the write as it is, or taken back out of a loop apply wrote.

use super::follow::{Form, Sink};
use super::index::Index;
use super::tree::{Kind, Role};
use super::{Context, Site, sites};
use crate::error::{Error, Result};

/// How a write is wrapped, and its texts.
pub fn site(ix: &Index, cx: &Context, s: &Sink) -> Result<Site> {
    let t = ix.tree(s.file);
    let f = &ix.files[s.file].file;
    let unit = t.nodes[s.unit].span.start..t.nodes[s.last].span.end;
    let line = f.line_of(unit.start);
    let path = (cx.path_of)(s.file);
    let current = &f.text[unit.clone()];
    let (restore, w) = if s.present {
        present_wrap(ix, s).ok_or_else(|| Error::Unsupported {
            file: f.rel.clone(),
            line,
            message: "this write's `acp_progress::wire` loop was edited by hand; undo the edit (or take the loop out) and run apply again".into(),
        })?
    } else {
        (current.to_string(), new_wrap(ix, cx, s)?)
    };
    let wrapped = sites::wrap(&restore, &w, &path);
    Ok(Site {
        file: s.file,
        present: s.present && wrapped == current,
        unit,
        line,
        wrapped,
        restore,
    })
}

fn new_wrap(ix: &Index, cx: &Context, s: &Sink) -> Result<sites::Wrap> {
    let t = ix.tree(s.file);
    let e = &t.nodes[s.entry];
    let unit_start = t.nodes[s.unit].span.start;
    let text = ix.text((s.file, s.entry)).to_string();
    let structure = matches!(s.form, Form::Struct(_));
    if structure && !cx.serde {
        return Err(Error::Unsupported {
            file: ix.files[s.file].file.rel.clone(),
            line: ix.line((s.file, s.entry)),
            message: "this write takes a `session/update` message of a struct type, and the crate does not depend on serde for acp-patch's runtime to read it; add `serde` to [dependencies]".into(),
        });
    }
    let func = if structure { "wire_any" } else { "wire" }.to_string();
    let ident = |id: usize| match &t.nodes[id].kind {
        Kind::Ident(n) if n != sites::CARD => Some(n.clone()),
        _ => None,
    };
    let (var, by_ref, arg, entry) = match &e.kind {
        Kind::Ident(n) if ident(s.entry).is_some() => {
            let declared_ref = ix
                .declared_type((s.file, s.entry), n)
                .is_some_and(|ty| ty.starts_with('&'));
            let by_value = matches!(e.role, Role::Arg(_))
                && t.parent(s.entry)
                    .is_some_and(|p| matches!(t.nodes[p].kind, Kind::Call | Kind::Method(_)));
            match (by_value && !structure, declared_ref) {
                (true, false) => (n.clone(), false, n.clone(), None),
                (_, true) => (n.clone(), true, n.clone(), None),
                (false, false) => (n.clone(), true, format!("&{n}"), None),
            }
        }
        Kind::Ref if t.child(s.entry, Role::Operand).and_then(ident).is_some() => {
            let n = t
                .child(s.entry, Role::Operand)
                .and_then(ident)
                .unwrap_or_default();
            (n, true, text.clone(), None)
        }
        _ => {
            let by_ref = matches!(e.kind, Kind::Ref);
            if structure && !by_ref {
                return Err(Error::Unsupported {
                    file: ix.files[s.file].file.rel.clone(),
                    line: ix.line((s.file, s.entry)),
                    message: "this write takes a `session/update` message of a struct type by value; acp-patch wraps writes that serialize it (`serde_json::to_string(&msg)`)".into(),
                });
            }
            let r = e.span.start - unit_start..e.span.end - unit_start;
            (sites::CARD.to_string(), by_ref, text.clone(), Some(r))
        }
    };
    Ok(sites::Wrap {
        var,
        by_ref,
        func,
        arg,
        entry,
        expression: s.expression,
    })
}

/// A write apply wrapped: the write as it was, and how it was wrapped.
fn present_wrap(ix: &Index, s: &Sink) -> Option<(String, sites::Wrap)> {
    let t = ix.tree(s.file);
    let for_node = match &t.nodes[s.unit].kind {
        Kind::For(_) => s.unit,
        _ => t.nodes[s.unit]
            .children
            .iter()
            .copied()
            .find(|c| matches!(t.nodes[*c].kind, Kind::For(_)))?,
    };
    let Kind::For(names) = &t.nodes[for_node].kind else {
        return None;
    };
    let var = names.first()?.clone();
    let iter = t.child(for_node, Role::Iter)?;
    let by_ref = matches!(t.nodes[iter].kind, Kind::Ref);
    let call = if by_ref {
        t.child(iter, Role::Operand)?
    } else {
        iter
    };
    let func = match t.child(call, Role::Callee).map(|c| &t.nodes[c].kind) {
        Some(Kind::Path(p)) => p.last()?.clone(),
        _ => return None,
    };
    let arg = ix.text((s.file, t.child(call, Role::Arg(0))?)).to_string();
    let block = t.child(for_node, Role::Body)?;
    let stmts = &t.nodes[block].children;
    let body = match (s.expression, stmts.as_slice()) {
        (true, [stmt]) => {
            let assign = t.child(*stmt, Role::Body)?;
            ix.text((s.file, t.child(assign, Role::Rhs)?))
        }
        (false, [first, .., last]) | (false, [first @ last]) => {
            &ix.files[s.file].file.text[t.nodes[*first].span.start..t.nodes[*last].span.end]
        }
        _ => return None,
    };
    let restore = sites::unwrap(body, &var, &arg)?;
    // where the message stood: where the loop's variable stands in the body
    let entry = match var == sites::CARD {
        true => sites::card_at(body).map(|k| k..k + arg.len()),
        false => None,
    };
    Some((
        restore,
        sites::Wrap {
            var,
            by_ref,
            func,
            arg,
            entry,
            expression: s.expression,
        },
    ))
}
