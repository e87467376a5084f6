//! The agent's dispatcher: the fn it calls for a protocol method (`"session/prompt"`,
//! `"session/cancel"`), found by the method's name — a string literal or a constant holding
//! it — in a `match` arm, an `if method == ..` (or `else if`), or a handler map
//! (`map.insert("session/prompt", handle_prompt)`, `("session/prompt", handler)`); and
//! where each handler finds its session id.

use super::index::{At, Binding, Index};
use super::tree::{Id, Kind, Role};
use std::collections::HashSet;

/// The fns that build a `session/update` message, or call (through up to four calls) one
/// that does: a dispatcher's call among several that reaches one is its prompt handler.
pub fn writes_updates(ix: &Index) -> HashSet<At> {
    let mut out: HashSet<At> = HashSet::new();
    for (file, t) in ix.trees.iter().enumerate() {
        let Some(t) = t else { continue };
        for (id, n) in t.nodes.iter().enumerate() {
            let update = match &n.kind {
                Kind::Json(keys) | Kind::Struct(_, keys) => keys
                    .iter()
                    .any(|(k, v)| k == "method" && ix.names(v, "session/update")),
                _ => false,
            };
            if update && let Some(f) = t.fn_of(id) {
                out.insert((file, f));
            }
        }
    }
    let mut frontier: Vec<At> = out.iter().copied().collect();
    for _ in 0..4 {
        let mut next = Vec::new();
        for f in frontier {
            for call in ix.callers(f) {
                if let Some(g) = ix.tree(call.0).fn_of(call.1)
                    && out.insert((call.0, g))
                {
                    next.push((call.0, g));
                }
            }
        }
        frontier = next;
    }
    out
}

/// Where the dispatcher handles `method`: the code run for it.
fn regions(ix: &Index, method: &str) -> Vec<At> {
    let mut out = Vec::new();
    for (file, t) in ix.trees.iter().enumerate() {
        let Some(t) = t else { continue };
        let text = &ix.files[file].file.text;
        let named_here = text.contains(method)
            || ix
                .consts
                .iter()
                .any(|(k, v)| v == method && text.contains(k.as_str()));
        if !named_here {
            continue;
        }
        for (id, n) in t.nodes.iter().enumerate() {
            match &n.kind {
                Kind::Arm { matches, .. } if matches.iter().any(|m| ix.names(m, method)) => {
                    out.extend(t.child(id, Role::Body).map(|b| (file, b)));
                }
                Kind::Binary(op) if op == "==" => {
                    let names = n.children.iter().any(|c| ix.node_names((file, *c), method));
                    if names && let Some(body) = if_body(t, id) {
                        out.push((file, body));
                    }
                }
                // `handlers.insert("session/prompt", f)`, `("session/prompt", f)`
                Kind::Call | Kind::Method(_) | Kind::Tuple => {
                    let args: Vec<Id> = n
                        .children
                        .iter()
                        .copied()
                        .filter(|c| matches!(t.nodes[*c].role, Role::Arg(_)))
                        .collect();
                    if let Some(k) = args.iter().position(|a| ix.node_names((file, *a), method)) {
                        out.extend(
                            args.iter()
                                .enumerate()
                                .filter(|(j, _)| *j != k)
                                .map(|(_, a)| (file, *a)),
                        );
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The body of the `if` whose condition holds a comparison (through `&&`, `||`, parens).
fn if_body(t: &super::tree::Tree, cmp: Id) -> Option<Id> {
    let mut cur = cmp;
    loop {
        let p = t.parent(cur)?;
        match &t.nodes[p].kind {
            Kind::Binary(op) if op == "&&" || op == "||" => cur = p,
            Kind::Paren => cur = p,
            Kind::If if t.nodes[cur].role == Role::Cond => return t.child(p, Role::Body),
            _ => return None,
        }
    }
}

/// The crate fns a region calls or names, in order.
fn called(ix: &Index, region: At) -> Vec<At> {
    let t = ix.tree(region.0);
    let mut out: Vec<At> = Vec::new();
    for d in t.descendants(region.1) {
        let found = match &t.nodes[d].kind {
            Kind::Call => ix.resolve_call((region.0, d)),
            Kind::Method(_) => ix.resolve_method((region.0, d), true),
            // a fn handed over as a value: `Box::new(handle_prompt)`, `insert(.., f)`
            Kind::Ident(name) if t.nodes[d].role != Role::Callee => {
                if ix.binding((region.0, d), name).is_some() {
                    continue;
                }
                ix.resolve_path((region.0, d), std::slice::from_ref(name))
            }
            Kind::Path(p) if t.nodes[d].role != Role::Callee => ix.resolve_path((region.0, d), p),
            _ => continue,
        };
        for f in found {
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out
}

/// The fns the dispatcher calls for `method` (with the region each comes from): per region,
/// the first call that reaches a write of session updates (`prefer`), else its first call.
pub fn dispatched(ix: &Index, method: &str, prefer: &HashSet<At>) -> Vec<(At, At)> {
    let mut out: Vec<(At, At)> = Vec::new();
    for region in regions(ix, method) {
        let fns = called(ix, region);
        let pick = fns
            .iter()
            .find(|f| prefer.contains(f))
            .or(fns.first())
            .copied();
        if let Some(f) = pick
            && !out.iter().any(|(g, _)| *g == f)
        {
            out.push((f, region));
        }
    }
    out
}

/// The session id a handler can name at its entry, as the expression `begin` and `cancel`
/// are given (`&params["sessionId"]`), and the names it reads.
#[derive(Debug, Clone)]
pub struct Key {
    pub expr: String,
    pub reads: Vec<String>,
}

/// The root name of a place expression (`params` in `params["x"]`, `self` in `self.a.b`).
fn root(t: &super::tree::Tree, mut id: Id) -> Option<(Id, String)> {
    loop {
        match &t.nodes[id].kind {
            Kind::Ident(n) => return Some((id, n.clone())),
            Kind::Field(_) | Kind::Paren | Kind::Ref => id = t.child(id, Role::Operand)?,
            Kind::Index => id = t.child(id, Role::Receiver)?,
            _ => return None,
        }
    }
}

fn is_json(ty: &str) -> bool {
    let ty = ty.trim_start_matches('&');
    ty == "Value" || ty.ends_with("::Value")
}

/// Where a handler finds its session: the first `X["sessionId"]`, `X.get("sessionId")` or
/// `X.session_id` it reads of a parameter; else a parameter that is a JSON value (the params
/// or the request), a struct of the crate with a `session_id` field, or a string parameter
/// named for the session.
pub fn session_key(ix: &Index, f: At) -> Option<Key> {
    let t = ix.tree(f.0);
    let info = ix.fn_info(f);
    let is_param = |at: Id, name: &str| matches!(ix.binding((f.0, at), name), Some(Binding::Param { scope, .. }) if scope == f.1);
    let key = |expr: String, name: &str| Key {
        expr,
        reads: vec![name.to_string()],
    };
    for d in t.descendants(f.1) {
        let n = &t.nodes[d];
        let base = match &n.kind {
            Kind::Index
                if t.child(d, Role::Arg(0)).is_some_and(
                    |a| matches!(&t.nodes[a].kind, Kind::Lit(Some(s)) if s == "sessionId"),
                ) =>
            {
                t.child(d, Role::Receiver).map(|r| (r, "index"))
            }
            Kind::Method(m)
                if m == "get"
                    && t.child(d, Role::Arg(0)).is_some_and(
                        |a| matches!(&t.nodes[a].kind, Kind::Lit(Some(s)) if s == "sessionId"),
                    ) =>
            {
                t.child(d, Role::Receiver).map(|r| (r, "get"))
            }
            Kind::Field(name) if name == "session_id" => Some((d, "field")),
            _ => None,
        };
        let Some((base, how)) = base else { continue };
        let Some((r, name)) = root(t, base) else {
            continue;
        };
        if !is_param(r, &name) {
            continue;
        }
        let text = ix.text((f.0, base));
        let expr = match how {
            "index" => format!("&{text}[\"sessionId\"]"),
            "get" => format!("&{text}.get(\"sessionId\")"),
            _ => format!("&{text}{}", newtype_suffix(ix, f, d)),
        };
        return Some(key(expr, &name));
    }
    for p in &info.params {
        let ty = p.ty.clone().unwrap_or_default();
        if p.name.is_empty() || p.name == "self" {
            continue;
        }
        if is_json(&ix.collected.expand(&ty)) {
            return Some(key(format!("&{}", p.name), &p.name));
        }
    }
    for p in &info.params {
        let ty = p.ty.clone().unwrap_or_default();
        let bare = ty.trim_start_matches('&').trim_start_matches("mut");
        let has_field = ix.collected.structs.iter().any(|(_, s)| {
            s.ident == bare
                && s.fields
                    .iter()
                    .any(|x| x.ident.as_ref().is_some_and(|i| i == "session_id"))
        });
        if has_field {
            return Some(key(format!("&{}.session_id", p.name), &p.name));
        }
    }
    info.params
        .iter()
        .find(|p| {
            let ty = p.ty.clone().unwrap_or_default();
            p.name.contains("session") && (ty.ends_with("str") || ty.ends_with("String"))
        })
        .map(|p| key(format!("&{}", p.name), &p.name))
}

/// `.0` when the `session_id` field read at `d` is a one-field tuple struct of the crate.
fn newtype_suffix(ix: &Index, f: At, d: Id) -> &'static str {
    let t = ix.tree(f.0);
    let ty = t
        .child(d, Role::Operand)
        .map(|b| ix.type_words((f.0, b)))
        .unwrap_or_default();
    let field_ty = ix
        .collected
        .structs
        .iter()
        .filter(|(_, s)| ty.contains(&s.ident.to_string()))
        .flat_map(|(_, s)| s.fields.iter())
        .find(|x| x.ident.as_ref().is_some_and(|i| i == "session_id"))
        .map(|x| super::tree::type_text(&x.ty));
    let newtype = field_ty.is_some_and(|fty| {
        ix.collected.structs.iter().any(|(_, s)| {
            s.ident == fty
                && matches!(s.fields, syn::Fields::Unnamed(ref u) if u.unnamed.len() == 1)
        })
    });
    if newtype { ".0" } else { "" }
}
