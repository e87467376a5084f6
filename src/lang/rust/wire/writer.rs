//! The card's writer for a prompt handler: one of the agent's own writes of `session/update`
//! messages (a call the message passes on its way out, in the handler's file), turned into a
//! closure that writes the card in the message's place — `move |acp_message| { let _ =
//! outbox.send(acp_message); }` — and made callable from a timer: what the call reads of the
//! handler (a parameter, a field of `self`) is cloned into it, what it reads of its own fn is
//! mapped through the handler's call of that fn.

use super::follow::{Carrier, Form};
use super::index::{At, Binding, Index};
use super::sites::CARD;
use super::tree::{Id, Kind, Role};
use crate::error::{Candidate, Location};

/// A usable writer: the closure's text, where it comes from, its rank (the handler's own
/// writes first, then its type's, then its file's).
pub struct Writer {
    pub closure: String,
    pub candidate: Candidate,
    pub rank: u8,
    /// Names of the handler the closure reads.
    pub reads: Vec<String>,
}

/// Types whose clone is a handle on the same writer, sendable to a timer.
fn cloneable(ix: &Index, ty: &str) -> bool {
    let ty = ix.collected.expand(ty);
    let bare = ty.trim_start_matches('&').trim_start_matches("mut");
    if bare.contains("Rc<") || bare.contains("RefCell<") {
        return false;
    }
    if bare.starts_with("Arc<") || bare.starts_with("std::sync::Arc<") || bare.contains("Sender<") {
        return true;
    }
    ix.collected.structs.iter().any(|(_, s)| {
        s.ident == bare
            && s.attrs.iter().any(|a| {
                a.path().is_ident("derive")
                    && quote::ToTokens::to_token_stream(&a.meta)
                        .to_string()
                        .contains("Clone")
            })
    })
}

/// The message in the card's place, in the form the write takes it.
fn conversion(form: &Form, by_ref: bool) -> Option<String> {
    let owned = match form {
        Form::Value | Form::Struct(_) => CARD.to_string(),
        Form::Text(Some(tail)) if tail.is_empty() => format!("{CARD}.to_string()"),
        Form::Text(Some(tail)) => format!("({CARD}.to_string() + {tail:?})"),
        Form::Bytes(Some(tail)) => format!("({CARD}.to_string() + {tail:?}).into_bytes()"),
        Form::Text(None) | Form::Bytes(None) => return None,
    };
    Some(if by_ref { format!("&{owned}") } else { owned })
}

/// The text of `call` with replacements (byte ranges of the file) applied, on one line
/// (line breaks outside string literals become a space).
fn rewrite(
    ix: &Index,
    file: usize,
    call: Id,
    edits: &mut [(std::ops::Range<usize>, String)],
) -> String {
    let t = ix.tree(file);
    let src = &ix.files[file].file.text;
    let span = t.nodes[call].span.clone();
    let literals: Vec<std::ops::Range<usize>> = t
        .descendants(call)
        .into_iter()
        .filter(|d| matches!(t.nodes[*d].kind, Kind::Lit(_)))
        .map(|d| t.nodes[d].span.clone())
        .collect();
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::new();
    let mut at = span.start;
    let push = |out: &mut String, from: usize, to: usize| {
        let mut k = from;
        while k < to {
            let ch = src[k..].chars().next().unwrap_or(' ');
            let in_lit = literals.iter().any(|l| l.contains(&k));
            if !in_lit && (ch == '\n' || ch == '\r') {
                let rest = src[k..to].trim_start();
                let skip = src[k..to].len() - rest.len();
                if !out.ends_with(' ') && !rest.starts_with('.') && !rest.starts_with(')') {
                    out.push(' ');
                }
                k += skip.max(1);
                continue;
            }
            out.push(ch);
            k += ch.len_utf8();
        }
    };
    for (r, text) in edits.iter() {
        if r.start < at || r.end > span.end {
            continue;
        }
        push(&mut out, at, r.start);
        out.push_str(text);
        at = r.end;
    }
    push(&mut out, at, span.end);
    out
}

/// The writer made of one carrier for the handler `h`, or why it cannot be.
pub fn writer_of(ix: &Index, h: At, c: &Carrier, json: &str) -> Result<Writer, String> {
    if c.file != h.0 {
        return Err("it is in another file than the prompt handler".into());
    }
    let t = ix.tree(c.file);
    let f = t.fn_of(c.call).ok_or("it is outside any fn")?;
    let in_entry = |d: Id| t.is_inside(d, c.entry);
    let inside: Vec<Id> = t
        .descendants(c.call)
        .into_iter()
        .filter(|d| !in_entry(*d))
        .collect();
    if inside
        .iter()
        .any(|d| matches!(t.nodes[*d].kind, Kind::Await))
    {
        return Err("it awaits (the card is written from a timer)".into());
    }
    let mut fallible = inside.iter().any(|d| matches!(t.nodes[*d].kind, Kind::Try));
    let mut lets: Vec<String> = Vec::new();
    let hinfo = ix.fn_info(h);
    let finfo = ix.fn_info((c.file, f));
    let mut captures: Vec<String> = Vec::new();
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut reads: Vec<String> = Vec::new();
    let mut done: Vec<String> = Vec::new();
    for d in &inside {
        let Kind::Ident(name) = &t.nodes[*d].kind else {
            continue;
        };
        if t.nodes[*d].role == Role::Callee {
            continue; // a fn's name
        }
        match ix.binding((c.file, *d), name) {
            None => {} // a constant, static, fn or module: there in the handler's file too
            Some(Binding::Param { scope, ty }) if scope == f => {
                if name == "self" {
                    if hinfo.self_ty != finfo.self_ty
                        || hinfo.params.first().is_none_or(|p| p.name != "self")
                    {
                        return Err("it reads `self` of another type than the handler's".into());
                    }
                    let (path_end, path, ty) = self_path(ix, c.file, *d);
                    let ty = ty.or_else(|| {
                        (path == "self")
                            .then(|| hinfo.params.first().and_then(|p| p.ty.clone()))
                            .flatten()
                    });
                    let ok = ty.as_deref().is_some_and(|ty| {
                        cloneable(ix, ty)
                            || (path == "self"
                                && cloneable(ix, finfo.self_ty.as_deref().unwrap_or("")))
                    });
                    if !ok {
                        return Err(format!(
                            "it reads `{path}`, which acp-patch cannot clone into it"
                        ));
                    }
                    let local = format!("acp_{}", path.replace('.', "_"));
                    if !done.contains(&local) {
                        captures.push(format!("let {local} = {path}.clone();"));
                        done.push(local.clone());
                    }
                    edits.push((t.nodes[*d].span.start..path_end, local));
                    if !reads.contains(&"self".to_string()) {
                        reads.push("self".into());
                    }
                    continue;
                }
                if done.contains(name) {
                    continue;
                }
                let ty = ty.unwrap_or_default();
                if !cloneable(ix, &ty) {
                    return Err(format!(
                        "it reads `{name}: {ty}`, which acp-patch cannot clone into it"
                    ));
                }
                let source = if f == h.1 {
                    name.clone()
                } else {
                    mapped(ix, h, (c.file, f), name).ok_or_else(|| {
                        format!(
                            "it reads `{name}`, a parameter of {} that {} does not pass it",
                            finfo.qualified(),
                            hinfo.qualified()
                        )
                    })?
                };
                for r in root_names(&source) {
                    if !reads.contains(&r) {
                        reads.push(r);
                    }
                }
                let source = if source == *name {
                    source
                } else {
                    format!("({source})")
                };
                captures.push(format!("let {name} = {source}.clone();"));
                done.push(name.clone());
            }
            // a local made of nothing local (`let mut out = io::stdout();`): made again
            Some(Binding::Local { node, .. })
                if made_of_globals(ix, c.file, node) && !done.contains(name) =>
            {
                let mut none = Vec::new();
                lets.push(rewrite(ix, c.file, node, &mut none));
                done.push(name.clone());
                fallible |= t
                    .descendants(node)
                    .iter()
                    .any(|d| matches!(t.nodes[*d].kind, Kind::Try));
            }
            Some(Binding::Local { node, .. }) if made_of_globals(ix, c.file, node) => {}
            Some(_) => {
                return Err(format!(
                    "it reads `{name}`, bound inside {}",
                    finfo.qualified()
                ));
            }
        }
    }
    // the card in the message's place: a name the message had is bound to it
    let entry = &t.nodes[c.entry];
    let (ident, by_ref) = match &entry.kind {
        // inside a write apply wrapped: the message was what the loop's header holds
        Kind::Ident(n) if n == CARD => (None, c.entry_text.starts_with('&')),
        Kind::Ident(n) => (Some(n.clone()), false),
        Kind::Ref => match t.child(c.entry, Role::Operand).map(|o| &t.nodes[o].kind) {
            Some(Kind::Ident(n)) => (Some(n.clone()), true),
            _ => (None, true),
        },
        _ => (None, false),
    };
    if matches!(c.form, Form::Struct(_)) && !(by_ref && serializes(ix, c)) {
        return Err("it takes the message as a struct of the agent's own type".into());
    }
    let mut bind = String::new();
    match ident {
        Some(n) => {
            let declared_ref = ix
                .declared_type((c.file, c.entry), &n)
                .is_some_and(|ty| ty.starts_with('&'));
            let value = conversion(&c.form, declared_ref && !by_ref)
                .ok_or("the message's text is framed where acp-patch cannot see it")?;
            bind = format!("let {n} = {value}; ");
        }
        _ => {
            let value = conversion(&c.form, by_ref)
                .ok_or("the message's text is framed where acp-patch cannot see it")?;
            edits.push((entry.span.clone(), value));
        }
    }
    let call = rewrite(ix, c.file, c.call, &mut edits);
    let unit = match &t.nodes[c.call].kind {
        Kind::Macro { name, .. } => ["print", "println"].contains(&name.as_str()),
        Kind::Call | Kind::Method(_) => {
            let fns = match &t.nodes[c.call].kind {
                Kind::Call => ix.resolve_call((c.file, c.call)),
                _ => ix.resolve_method((c.file, c.call), false),
            };
            !fns.is_empty() && fns.iter().all(|g| ix.fn_info(*g).ret.is_none())
        }
        _ => false,
    };
    let stmt = if unit {
        format!("{call};")
    } else {
        format!("let _ = {call};")
    };
    let lets: String = lets.iter().map(|l| format!("{l} ")).collect();
    let body = if fallible {
        format!(
            "-> Result<(), Box<dyn std::error::Error + Send + Sync>> {{ {lets}{bind}{stmt} Ok(()) }}"
        )
    } else {
        format!("{{ {lets}{bind}{stmt} }}")
    };
    let closure = format!("move |{CARD}: {json}::Value| {body}");
    let closure = if captures.is_empty() {
        closure
    } else {
        format!("{{ {} {closure} }}", captures.join(" "))
    };
    let rank = if f == h.1 {
        0
    } else if finfo.self_ty.is_some() && finfo.self_ty == hinfo.self_ty {
        1
    } else {
        2
    };
    Ok(Writer {
        closure,
        candidate: Candidate {
            location: Location {
                file: ix.files[c.file].file.rel.clone(),
                line: ix.line((c.file, c.call)),
            },
            name: finfo.qualified(),
        },
        rank,
        reads,
    })
}

/// A `let` whose initializer reads nothing local and does not await: the closure makes
/// the value again.
fn made_of_globals(ix: &Index, file: usize, local: Id) -> bool {
    let t = ix.tree(file);
    let Some(init) = t.child(local, Role::Init) else {
        return false;
    };
    t.descendants(init)
        .into_iter()
        .all(|d| match &t.nodes[d].kind {
            Kind::Await => false,
            Kind::Ident(n) => ix.binding((file, d), n).is_none(),
            _ => true,
        })
}

/// The write takes any `Serialize` value where the message goes: serde_json's own
/// (`serde_json::to_string(&n)`, `to_writer(w, &n)`), or a fn of the crate generic there
/// (`fn send<T: Serialize>(m: &T)`, `m: &impl Serialize`).
fn serializes(ix: &Index, c: &Carrier) -> bool {
    let t = ix.tree(c.file);
    let callee = t.child(c.call, Role::Callee).map(|x| &t.nodes[x].kind);
    if matches!(callee, Some(Kind::Path(p)) if p.iter().any(|s| s == "serde_json")) {
        return true;
    }
    let arg = t
        .ancestors(c.entry)
        .chain(std::iter::once(c.entry))
        .find(|a| t.parent(*a) == Some(c.call) && matches!(t.nodes[*a].role, Role::Arg(_)));
    let fns = match &t.nodes[c.call].kind {
        Kind::Call => ix.resolve_call((c.file, c.call)),
        Kind::Method(_) => ix.resolve_method((c.file, c.call), false),
        _ => Vec::new(),
    };
    let Some(arg) = arg else { return false };
    !fns.is_empty()
        && fns.iter().all(|f| {
            let info = ix.fn_info(*f);
            let Some(param) = ix.param_of((c.file, c.call), *f, t.nodes[arg].role) else {
                return false;
            };
            let ty = info
                .params
                .iter()
                .find(|p| p.name == param)
                .and_then(|p| p.ty.clone())
                .unwrap_or_default();
            let bare = ty.trim_start_matches('&');
            bare.starts_with("impl") || info.generics.iter().any(|g| g == bare)
        })
}

/// `self.a.b` read at `d` (the `self` node): where the path ends, its text, the last
/// field's declared type.
fn self_path(ix: &Index, file: usize, d: Id) -> (usize, String, Option<String>) {
    let t = ix.tree(file);
    let src = &ix.files[file].file.text;
    let mut cur = d;
    let mut ty: Option<String> = None;
    let mut owner = ix.fn_info((file, t.fn_of(d).unwrap_or(0))).self_ty.clone();
    while let Some(p) = t.parent(cur) {
        let Kind::Field(name) = &t.nodes[p].kind else {
            break;
        };
        // a field only when a method call does not follow
        let field_ty = ix
            .collected
            .structs
            .iter()
            .filter(|(_, s)| owner.as_deref() == Some(&s.ident.to_string()))
            .flat_map(|(_, s)| s.fields.iter())
            .find(|f| f.ident.as_ref().is_some_and(|i| i == name))
            .map(|f| super::tree::type_text(&f.ty));
        ty = field_ty.clone();
        owner = field_ty.map(|x| x.trim_start_matches('&').to_string());
        cur = p;
    }
    let span = t.nodes[cur].span.clone();
    (span.end, src[span.clone()].to_string(), ty)
}

/// What the handler passes for `param` of `f` where it calls `f` (directly): the argument's
/// text, when every name it reads is a parameter of the handler.
fn mapped(ix: &Index, h: At, f: At, param: &str) -> Option<String> {
    let t = ix.tree(h.0);
    for d in t.descendants(h.1) {
        let reaches = match &t.nodes[d].kind {
            Kind::Call => ix.resolve_call((h.0, d)),
            Kind::Method(_) => ix.resolve_method((h.0, d), true),
            _ => continue,
        };
        if !reaches.contains(&f) {
            continue;
        }
        for &a in &t.nodes[d].children {
            let role = t.nodes[a].role;
            if ix.param_of((h.0, d), f, role).as_deref() != Some(param) {
                continue;
            }
            let bound_in_handler = t.descendants(a).into_iter().all(|x| match &t.nodes[x].kind {
                Kind::Ident(n) => matches!(
                    ix.binding((h.0, x), n),
                    None | Some(Binding::Param { .. })
                ) && !matches!(ix.binding((h.0, x), n), Some(Binding::Param { scope, .. }) if scope != h.1),
                _ => true,
            });
            if bound_in_handler {
                return Some(ix.text((h.0, a)).to_string());
            }
        }
    }
    None
}

/// The leading names of an expression's text (`outbox` in `&outbox`).
fn root_names(text: &str) -> Vec<String> {
    let word: String = text
        .trim_start_matches(['&', '(', '*', ' '])
        .trim_start_matches("mut ")
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    if word.is_empty() {
        Vec::new()
    } else {
        vec![word]
    }
}
