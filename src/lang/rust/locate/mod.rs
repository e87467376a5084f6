//! The anchors of an SDK agent: its prompt handlers (a pin choosing among them), the sends
//! of session updates that do not go through the agent's own methods, the responses that end
//! a turn, and the sink each handler without a connection of its own is handed.

pub(super) mod connection;
pub(super) mod handlers;
pub(super) mod sends;
pub(super) mod turn_end;

use crate::config::Pin;
use crate::error::{Candidate, Error, Result};
use crate::lang::rust::Parsed;
use crate::lang::rust::modules::Modules;
use crate::lang::rust::sdk::Dialect;
use crate::lang::rust::syntax::{self, Collected};
use crate::project::Project;
use handlers::{Handler, Style};
use std::collections::BTreeSet;
use syn::spanned::Spanned;
use turn_end::{Lookup, TurnEnd};

/// The sites of the protocol strategy.
pub(super) struct Located {
    pub(super) handlers: Vec<Handler>,
    pub(super) sends: Vec<(usize, Vec<sends::Send>)>,
    pub(super) turn_ends: Vec<TurnEnd>,
    pub(super) escaping: BTreeSet<usize>,
}

fn candidate(files: &[Parsed], h: &Handler) -> Candidate {
    h.anchor.candidate(&files[h.anchor.site.file].file.rel)
}

pub(super) fn locate(
    decisions: &crate::lang::survey::Decisions,
    files: &[Parsed],
    c: &Collected,
    modules: &Modules,
    dialect: Dialect,
    project: &Project,
    // the runtime module's files, and modules left as they are (not the agent's to patch)
    not_owned: &BTreeSet<usize>,
) -> Result<Located> {
    let pins = &project.config.rust;
    let owned = |f: usize| crate::lang::rust::modules::owned(modules, not_owned, f);
    // a module of the crate that does not parse may hold sends: refuse rather than miss them
    crate::lang::rust::modules::unparsed_owned(files, modules, not_owned)?;
    let (mut found, refused) = handlers::prompt_handlers(files, c, dialect);
    found.retain(|h| owned(h.anchor.site.file));

    // a pin picks one handler: a found one, or a method returning the prompt's response
    if let Some(pin) = &pins.prompt {
        let pin = Pin::parse_rust(pin);
        let mut pool: Vec<Handler> = found.clone();
        for (file, ty, f) in &c.methods {
            if !owned(*file)
                || pool.iter().any(|h| {
                    h.anchor.site.file == *file && h.anchor.name == format!("{ty}::{}", f.sig.ident)
                })
            {
                continue;
            }
            if f.sig.inputs.iter().any(|i| matches!(i, syn::FnArg::Typed(t) if syntax::type_name(&t.ty).as_deref() == Some("PromptRequest")))
                && let Ok(h) = handlers::method_handler(files, *file, ty, f)
            {
                pool.push(h);
            }
        }
        let seen: Vec<Candidate> = pool.iter().map(|h| candidate(files, h)).collect();
        let picked: Vec<Handler> = pool
            .into_iter()
            .filter(|h| pin.takes(&candidate(files, h)))
            .collect();
        if picked.is_empty() {
            return Err(Error::NotFound {
                site: "ACP prompt handler",
                detail: format!(
                    "the pin `prompt` names {}{}, which is not a prompt handler acp-patch can patch",
                    pin.file,
                    pin.name_suffix()
                ),
                pin_key: "rust.prompt",
                candidates: seen,
            });
        }
        found = picked;
    } else if let Some(r) = refused.first()
        && found.is_empty()
    {
        return Err(Error::Unsupported {
            file: files[r.file].file.rel.clone(),
            line: r.line,
            message: r.message.clone(),
        });
    }
    if found.is_empty() && pins.prompt.is_none() {
        let clients: Vec<String> = c
            .client_sides
            .iter()
            .filter(|(file, _, _)| owned(*file))
            .map(|(file, line, what)| format!("{}:{line} {what}", files[*file].file.rel))
            .collect();
        if !clients.is_empty() {
            return Err(Error::NoAgent {
                root: project.root.clone(),
                detail: format!(
                    "the crate is an ACP client, not an agent: {}, and acp-patch patches the agent a client starts",
                    clients.join(", ")
                ),
            });
        }
    }
    if found.is_empty() {
        let pinnable: Vec<Candidate> = c
            .methods
            .iter()
            .filter(|(file, _, _)| owned(*file))
            .filter_map(|(file, ty, f)| handlers::method_handler(files, *file, ty, f).ok())
            .map(|h| candidate(files, &h))
            .collect();
        return Err(Error::NotFound {
            site: "ACP prompt handler",
            detail: match dialect {
                Dialect::Trait => "no `async fn prompt(&self, args: PromptRequest)` in an `impl Agent for ..` block".into(),
                _ => "no closure (or fn) registered with `.on_receive_request(..)` takes a `PromptRequest`, a responder and the connection".into(),
            },
            pin_key: "rust.prompt",
            candidates: pinnable,
        });
    }

    // `acp-patch init` lists the handler when there is one (with several, all are patched)
    if let [one] = found.as_slice() {
        let c = candidate(files, one);
        decisions.record("ACP prompt handler", "rust.prompt", &[&c], Some(&c));
    }

    // the connection of each wrapped handler
    for h in found.iter_mut() {
        if !matches!(h.style, Style::Wrap { .. }) {
            continue;
        }
        let (sink, sink_from) = connection::wrap_sink(
            decisions,
            files,
            c,
            modules,
            dialect,
            h,
            pins.connection.as_deref(),
        )?;
        h.style = Style::Wrap {
            sink: Some(sink),
            sink_from,
        };
    }

    // every SDK send in the crate's own modules
    let mut sends = Vec::new();
    let mut responds = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !owned(i) || p.ast.is_none() {
            continue;
        }
        let (s, r) = sends::scan(i, &p.file, dialect.send_method());
        let s = s
            .into_iter()
            .filter(|site| !own_method_call(c, dialect, i, site))
            .collect();
        sends.push((i, s));
        responds.push((i, r));
    }

    // where each prompt's response is given
    let mut turn_ends = Vec::new();
    let mut escaping = BTreeSet::new();
    for (k, h) in found.iter().enumerate() {
        let Style::Entry { responder, .. } = &h.style else {
            continue;
        };
        if responder_escapes(&files[h.anchor.site.file].file.text, h, responder) {
            escaping.insert(k);
        }
    }
    for (file, sites) in &responds {
        for site in sites {
            if !dialect.response_ends_turn() && site.method == "respond" {
                continue; // protocol v2: a plain response starts the turn's work, idle ends it
            }
            let scopes = syntax::scopes_at(c, *file, site.anchor.site.range.start);
            let Some(binder) = scopes
                .iter()
                .find(|s| s.bindings.iter().any(|b| b.name == site.receiver))
            else {
                continue;
            };
            let lexical = found.iter().position(|h| {
                h.anchor.site.file == *file
                    && h.span == binder.span
                    && matches!(&h.style, Style::Entry { responder, .. } if *responder == site.receiver)
            });
            if let Some(k) = lexical {
                turn_ends.push(TurnEnd {
                    respond: site.clone(),
                    handler: Some(k),
                    lookup: None,
                });
                continue;
            }
            if syntax::binds_prompt_responder(binder, &site.receiver) != Some(true) {
                continue;
            }
            let from: Vec<&syntax::Scope> = scopes
                .iter()
                .copied()
                .skip_while(|s| s.span != binder.span)
                .collect();
            let Some((scope, key)) = syntax::session_key(&from) else {
                return Err(Error::Unsupported {
                    file: files[*file].file.rel.clone(),
                    line: site.anchor.site.line,
                    message: format!(
                        "the prompt's response is given here, but no `PromptRequest` or `SessionId` is in scope to tell its session; pass the request (or its session id) along with `{}`",
                        site.receiver
                    ),
                });
            };
            turn_ends.push(TurnEnd {
                respond: site.clone(),
                handler: None,
                lookup: Some(Lookup {
                    file: *file,
                    scope: scope.span.clone(),
                    kind: scope.kind,
                    key,
                }),
            });
        }
    }
    if dialect.response_ends_turn() {
        for &k in &escaping {
            let h = &found[k];
            if !turn_ends.iter().any(|t| t.handler.is_none())
                && !turn_ends.iter().any(|t| t.handler == Some(k))
            {
                return Err(Error::NotFound {
                    site: "turn end",
                    detail: format!(
                        "{} ({}) hands its responder on, and no `respond(..)` on a binding typed `Responder<PromptResponse>` was found; give the binding that receives it that type",
                        h.anchor.name,
                        h.anchor.site.location(&files[h.anchor.site.file].file.rel)
                    ),
                    pin_key: "rust.prompt",
                    candidates: Vec::new(),
                });
            }
        }
    }
    Ok(Located {
        handlers: found,
        sends,
        turn_ends,
        escaping,
    })
}

/// Whether a call of the SDK's send method name calls the crate's own method of that name
/// instead (`SessionClient::send_notification(&self, update: SessionUpdate)` in codex-acp):
/// it takes a bare `SessionUpdate` (no SDK send does), or its receiver is of a type of the
/// crate that defines such a method (`self` in that impl, a binding or field declared so).
fn own_method_call(c: &Collected, dialect: Dialect, file: usize, site: &sends::Send) -> bool {
    if dialect.local() {
        return false; // the trait API's sends are `Client` trait calls: any `Client` takes them
    }
    if site.takes_update {
        return true;
    }
    let method = dialect.send_method();
    let own: Vec<&str> = c
        .methods
        .iter()
        .filter(|(_, _, f)| f.sig.ident == method)
        .map(|(_, ty, _)| ty.as_str())
        .collect();
    if own.is_empty() {
        return false;
    }
    let names = |ty: &str| -> bool {
        ty.split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            .any(|w| own.contains(&w))
    };
    let enclosing = c
        .methods
        .iter()
        .filter(|(f, _, m)| *f == file && m.span().byte_range().contains(&site.dot()))
        .min_by_key(|(_, _, m)| m.span().byte_range().len())
        .map(|(_, ty, _)| ty.as_str());
    match &site.receiver {
        sends::Receiver::SelfValue => enclosing.is_some_and(|ty| own.contains(&ty)),
        sends::Receiver::SelfField(field) => enclosing.is_some_and(|ty| {
            c.structs.iter().any(|(_, st)| {
                st.ident == ty
                    && st.fields.iter().any(|f| {
                        f.ident.as_ref().is_some_and(|i| i == field)
                            && names(&quote::ToTokens::to_token_stream(&f.ty).to_string())
                    })
            })
        }),
        sends::Receiver::Binding(name) => syntax::scopes_at(c, file, site.dot())
            .iter()
            .find_map(|s| s.bindings.iter().find(|b| b.name == *name))
            .and_then(|b| b.ty.as_deref())
            .is_some_and(names),
        sends::Receiver::Other => false,
    }
}

/// Whether the responder is used other than as the receiver of a method call (passed on,
/// moved into a message): its response is then given elsewhere.
fn responder_escapes(src: &str, h: &Handler, responder: &str) -> bool {
    let body = &src[h.expr.clone()];
    let Ok(stream) = body.parse::<proc_macro2::TokenStream>() else {
        return false;
    };
    fn walk(stream: proc_macro2::TokenStream, name: &str) -> bool {
        let tokens: Vec<proc_macro2::TokenTree> = stream.into_iter().collect();
        for (i, t) in tokens.iter().enumerate() {
            match t {
                proc_macro2::TokenTree::Group(g) if walk(g.stream(), name) => return true,
                proc_macro2::TokenTree::Ident(id) if id == name => {
                    let method_call = matches!(tokens.get(i + 1), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '.');
                    let field = i > 0
                        && matches!(&tokens[i - 1], proc_macro2::TokenTree::Punct(p) if p.as_char() == '.');
                    if !method_call && !field {
                        return true;
                    }
                }
                _ => {}
            }
        }
        false
    }
    walk(stream, responder)
}
