//! Rust agents without an SDK: a JSON-RPC loop of their own over stdio. What the protocol
//! fixes is found on the code instead of the SDK's names: the fn the dispatcher calls for
//! `"session/prompt"` (a `match` arm, `if`/`else if`, a handler map; the string or a constant
//! holding it), the one for `"session/cancel"`, and every write of a `session/update`
//! message (a `json!` object or a struct literal, followed through variables, return values,
//! a helper's parameters, `serde_json::to_string`, to the call that writes it — across the
//! crate's modules). The card goes out through the agent's own writer: the prompt handler
//! starts with `let _acp_turn = acp_progress::begin(&<its session>, <a closure made of one of
//! its writes>);`, every write runs as `for msg in acp_progress::wire(msg) { <the write> }`.

mod dispatch;
mod follow;
mod index;
pub(super) mod parts;
mod sites;
mod tree;
mod writer;

use super::Parsed;
use super::handlers::Collected;
use super::modules::Modules;
use crate::config::RustPins;
use crate::error::{Candidate, Error, Location, Result};
use follow::{Follow, Form, Sink};
use index::{At, Index};
use std::ops::Range;
use tree::{Kind, Role};

/// A text of a tree without an SDK worth a look: it names the prompt method.
pub fn mentions_prompt(text: &str) -> bool {
    text.contains("session/prompt")
}

pub struct Handler {
    pub file: usize,
    pub name: String,
    pub line: usize,
    /// The fn's byte range (its body is found among the collected fns by it).
    pub span: Range<usize>,
    pub key: dispatch::Key,
    pub params: Vec<String>,
    /// `begin`'s second argument, and where it comes from (for the report).
    pub writer: String,
    pub writer_reads: Vec<String>,
    pub writer_from: Candidate,
}

pub struct Cancel {
    pub file: usize,
    pub span: Range<usize>,
    pub key: dispatch::Key,
}

pub struct Site {
    pub file: usize,
    pub unit: Range<usize>,
    pub line: usize,
    /// The write wrapped, as apply writes it; the write as it was (what revert restores).
    pub wrapped: String,
    pub restore: String,
    pub present: bool,
}

pub struct Raw {
    pub handlers: Vec<Handler>,
    pub cancels: Vec<Cancel>,
    pub sites: Vec<Site>,
}

/// What the locator needs beyond the files.
pub struct Context<'a> {
    pub collected: &'a Collected,
    pub modules: &'a Modules,
    pub owned: &'a dyn Fn(usize) -> bool,
    pub pins: &'a RustPins,
    /// The crate's name for serde_json.
    pub json: &'a str,
    /// Whether the crate can take `wire_any` (it depends on serde).
    pub serde: bool,
    /// The runtime module's path from a file (`crate::acp_progress`).
    pub path_of: &'a dyn Fn(usize) -> String,
}

fn candidate(ix: &Index, f: At) -> Candidate {
    Candidate {
        location: Location {
            file: ix.files[f.0].file.rel.clone(),
            line: ix.line(f),
        },
        name: ix.qualified(f),
    }
}

/// `path/to/file.rs:Name` → (file, name).
fn split_pin(pin: &str) -> (String, Option<String>) {
    match pin.split_once(".rs:") {
        Some((file, name)) => (
            format!("{}.rs", file.trim_start_matches("./")),
            Some(name.to_string()),
        ),
        None => (pin.trim_start_matches("./").to_string(), None),
    }
}

/// The anchors of an agent with its own JSON-RPC loop, or `None` when no dispatcher of
/// `"session/prompt"` calls a fn of the crate (and no `prompt` pin names one).
pub fn locate(files: &[Parsed], cx: &Context) -> Result<Option<Raw>> {
    let ix = Index::new(files, cx.owned, cx.collected, cx.modules);
    let prefer = dispatch::writes_updates(&ix);
    let mut prompts: Vec<At> = dispatch::dispatched(&ix, "session/prompt", &prefer)
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    if let Some(pin) = &cx.pins.prompt {
        let (file, name) = split_pin(pin);
        let mut pool = prompts.clone();
        for f in &ix.fns {
            if ix.files[f.0].file.rel == file && !pool.contains(f) {
                pool.push(*f);
            }
        }
        let seen: Vec<Candidate> = pool.iter().map(|f| candidate(&ix, *f)).collect();
        prompts = pool
            .into_iter()
            .filter(|f| {
                ix.files[f.0].file.rel == file
                    && name.as_ref().is_none_or(|n| *n == ix.qualified(*f))
            })
            .collect();
        if prompts.is_empty() {
            return Err(Error::NotFound {
                site: "ACP prompt handler",
                detail: format!(
                    "the pin `prompt` names {file}{}, which is no fn the dispatcher calls for `\"session/prompt\"` nor a fn of that file",
                    name.map(|n| format!(":{n}")).unwrap_or_default()
                ),
                pin_key: "rust.prompt",
                candidates: seen,
            });
        }
    }
    if prompts.is_empty() {
        return Ok(None);
    }
    if let [one] = prompts.as_slice() {
        let c = candidate(&ix, *one);
        crate::lang::survey::record("ACP prompt handler", "rust.prompt", &[&c], Some(&c));
    }

    // every write of the agent's messages
    let mut follow = Follow::new(&ix, &prompts);
    for (origin, update) in follow.origins() {
        let before = follow.lost.len();
        if follow.run(origin) == 0 && update {
            let lost: Vec<String> = follow.lost[before..]
                .iter()
                .map(|(at, why)| format!("{}:{}: {why}", ix.files[at.0].file.rel, ix.line(*at)))
                .collect();
            return Err(Error::Unsupported {
                file: ix.files[origin.0].file.rel.clone(),
                line: ix.line(origin),
                message: format!(
                    "acp-patch followed this `session/update` message (through variables, return values, a helper's parameters, `serde_json::to_string`) to no write of it{}",
                    if lost.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", lost.join("; "))
                    }
                ),
            });
        }
    }
    let (found, _) = follow.finish();
    let mut sites = Vec::new();
    for s in &found.sinks {
        sites.push(site(&ix, cx, s)?);
    }
    sites.sort_by_key(|s| (s.file, s.unit.start));

    let mut handlers = Vec::new();
    for h in &prompts {
        handlers.push(handler(&ix, cx, *h, &found.carriers)?);
    }
    let mut cancels = Vec::new();
    for (f, _) in dispatch::dispatched(&ix, "session/cancel", &Default::default()) {
        if let Some(key) = dispatch::session_key(&ix, f) {
            cancels.push(Cancel {
                file: f.0,
                span: ix.node(f).span.clone(),
                key,
            });
        }
    }
    Ok(Some(Raw {
        handlers,
        cancels,
        sites,
    }))
}

fn handler(ix: &Index, cx: &Context, h: At, carriers: &[follow::Carrier]) -> Result<Handler> {
    let info = ix.fn_info(h);
    let rel = ix.files[h.0].file.rel.clone();
    let line = ix.line(h);
    let name = info.qualified();
    let key = dispatch::session_key(ix, h).ok_or_else(|| Error::Unsupported {
        file: rel.clone(),
        line,
        message: format!(
            "{name} handles `session/prompt`, but acp-patch found no session id it can read at its entry: no `X[\"sessionId\"]`, `X.get(\"sessionId\")` or `X.session_id` of a parameter, no parameter that is a `serde_json::Value` or has a `session_id` field; pin the fn that receives the request's params (`[rust] prompt = \"{rel}:<fn>\"`)"
        ),
    })?;
    let mut usable: Vec<writer::Writer> = Vec::new();
    let mut unfit: Vec<String> = Vec::new();
    for c in carriers {
        match writer::writer_of(ix, h, c, cx.json) {
            Ok(w) => {
                if !usable.iter().any(|u| u.closure == w.closure && u.candidate.name == w.candidate.name) {
                    usable.push(w);
                }
            }
            Err(why) => unfit.push(format!(
                "{}:{}: {why}",
                ix.files[c.file].file.rel,
                ix.line((c.file, c.call))
            )),
        }
    }
    usable.sort_by(|a, b| {
        (a.rank, &a.candidate.location.file, a.candidate.location.line)
            .cmp(&(b.rank, &b.candidate.location.file, b.candidate.location.line))
    });
    let pin = cx.pins.connection.as_deref().map(split_pin);
    if pin.is_none() {
        usable.truncate(1); // every write found goes to the same stream: the nearest
    }
    let found: Vec<(writer::Writer, Candidate)> = usable
        .into_iter()
        .map(|w| {
            let c = w.candidate.clone();
            (w, c)
        })
        .collect();
    let w = crate::lang::parts::choose(found, pin, "connection for the think card", "rust.connection", || {
        format!(
            "{name} handles `session/prompt`, but none of the agent's writes of `session/update` messages can write the card from its entry ({})",
            if unfit.is_empty() {
                "none found".to_string()
            } else {
                unfit.join("; ")
            }
        )
    })?;
    Ok(Handler {
        file: h.0,
        name,
        line,
        span: ix.node(h).span.clone(),
        key,
        params: info.params.iter().map(|p| p.name.clone()).collect(),
        writer: w.closure,
        writer_reads: w.reads,
        writer_from: w.candidate,
    })
}

/// How a write is wrapped, and its texts.
fn site(ix: &Index, cx: &Context, s: &Sink) -> Result<Site> {
    let t = ix.tree(s.file);
    let f = &ix.files[s.file].file;
    let unit = t.nodes[s.unit].span.clone();
    let line = f.line_of(unit.start);
    let base = crate::source::indent_at(&f.text, unit.start).to_string();
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
    let wrapped = sites::wrap(&restore, &w, &path, &base, &f.style.indent_unit, f.style.eol);
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
        Kind::Ident(n) if n != writer::CARD => Some(n.clone()),
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
            let n = t.child(s.entry, Role::Operand).and_then(ident).unwrap_or_default();
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
            (writer::CARD.to_string(), by_ref, text.clone(), Some(r))
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
    let src = &ix.files[s.file].file.text;
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
    let call = if by_ref { t.child(iter, Role::Operand)? } else { iter };
    let func = match t.child(call, Role::Callee).map(|c| &t.nodes[c].kind) {
        Some(Kind::Path(p)) => p.last()?.clone(),
        _ => return None,
    };
    let arg = ix.text((s.file, t.child(call, Role::Arg(0))?)).to_string();
    let body = t.child(for_node, Role::Body)?;
    let [stmt] = t.nodes[body].children.as_slice() else {
        return None;
    };
    let (stmt, spans_lines) = if s.expression {
        let assign = t.child(*stmt, Role::Body)?;
        (t.child(assign, Role::Rhs)?, false)
    } else {
        let gap = &src[t.nodes[body].span.start..t.nodes[*stmt].span.start];
        (*stmt, gap.contains('\n'))
    };
    let unit_text = &ix.files[s.file].file.style.indent_unit;
    let restore = sites::unwrap(ix.text((s.file, stmt)), &var, &arg, spans_lines, unit_text)?;
    let entry = if var == writer::CARD {
        // where the message stood: where the loop's variable stands in the body
        let body = sites::unwrap(ix.text((s.file, stmt)), "", &arg, spans_lines, unit_text)?;
        let k = sites::card_at(&body)?;
        Some(k..k + arg.len())
    } else {
        None
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
