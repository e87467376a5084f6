//! The prompt handlers the SDK calls, and how each is covered: its session id, its
//! connection parameter or the sink it is handed, the responder whose response ends the turn,
//! each found on the `syn` trees (`syntax.rs` holds what they are found in).

use crate::lang::anchors::{Connection, PromptHandler, Site};
use crate::lang::rust::Parsed;
use crate::lang::rust::sdk::Dialect;
use crate::lang::rust::syntax::{
    Collected, body_of, ident_of, is_prompt_responder, session_of, type_name, type_text,
};
use std::collections::HashMap;
use std::ops::Range;
use syn::spanned::Spanned;

/// How a handler is covered.
#[derive(Debug, Clone)]
pub enum Style {
    /// The body runs as one turn (`turn(sink, session, async move { .. }).await`): a method
    /// whose return value is the prompt's response (trait API, or a pinned method).
    Wrap {
        /// The connection anchor the card goes out on (its text the sink expression, e.g.
        /// `&self.conn`); found once every handler is (`None` until then).
        sink: Option<Connection>,
        /// Where the sink came from, for the report.
        sink_from: String,
    },
    /// `let acp_turn = begin(&cx, &request.session_id);` first; the turn ends at each
    /// response (a builder closure or fn with a responder).
    Entry {
        /// The connection parameter, e.g. `connection`.
        cx: String,
        /// The responder parameter.
        responder: String,
    },
}

/// One prompt handler.
#[derive(Debug, Clone)]
pub struct Handler {
    /// From the `fn` (the closure's first `|`) to the handler's end, on the line of that
    /// token; the name for the report and pins: `StreamAgent::prompt`, `handle_prompt`,
    /// `serve::closure#1`.
    pub anchor: PromptHandler,
    /// Byte range of the whole handler (closure or fn).
    pub span: Range<usize>,
    /// The body: a block (`Some`) or an expression closure body (`None`, range in `expr`).
    pub block: Option<syn::Block>,
    pub expr: Range<usize>,
    /// The session id, as an expression (`request.session_id`).
    pub session: String,
    pub params: Vec<String>,
    pub style: Style,
    /// The `Self` type of a method.
    pub self_ty: Option<String>,
}

fn line(span: proc_macro2::Span) -> usize {
    span.start().line
}

/// Why a prompt handler cannot be covered (becomes an `Unsupported` error).
pub struct Refusal {
    pub file: usize,
    pub line: usize,
    pub message: String,
}

/// Every prompt handler the SDK calls, for a dialect: `async fn prompt` of `impl Agent for X`
/// (≤ 0.10); the closures (or fns) registered for `PromptRequest` (≥ 0.11).
pub fn prompt_handlers(
    files: &[Parsed],
    c: &Collected,
    dialect: Dialect,
) -> (Vec<Handler>, Vec<Refusal>) {
    let mut found = Vec::new();
    let mut refused = Vec::new();
    if dialect.local() {
        for (file, ty, f) in &c.trait_prompts {
            match method_handler(files, *file, ty, f) {
                Ok(h) => found.push(h),
                Err(r) => refused.push(r),
            }
        }
        return (found, refused);
    }
    // a closure is named by its fn and its place among the prompt closures there (a pin
    // survives the lines apply inserts above it)
    let mut seen: HashMap<(usize, String), usize> = HashMap::new();
    for (file, closure, registered, func) in &c.closures {
        if !is_prompt_closure(closure, *registered) {
            continue;
        }
        let k = seen.entry((*file, func.clone())).or_default();
        *k += 1;
        let name = if func.is_empty() {
            format!("closure#{k}")
        } else {
            format!("{func}::closure#{k}")
        };
        match closure_handler(files, *file, closure, name) {
            Ok(h) => found.push(h),
            Err(r) => refused.push(r),
        }
    }
    // the text of the prompt closures: a fn one of them calls is covered through it
    let closure_calls: Vec<String> = c
        .closures
        .iter()
        .filter(|(_, closure, registered, _)| is_prompt_closure(closure, *registered))
        .map(|(_, closure, ..)| quote::ToTokens::to_token_stream(closure).to_string())
        .collect();
    // a fn with the prompt's parameters that another prompt handler calls is a helper of that
    // handler (it is handed the request, the responder or the connection; the SDK never calls
    // it): its turn would replace the handler's
    let fn_candidates: Vec<&(usize, syn::ItemFn)> = c
        .fns
        .iter()
        .filter(|(_, f)| fn_is_prompt_handler(&f.sig))
        .collect();
    let bodies: Vec<(Option<&syn::Ident>, proc_macro2::TokenStream)> = c
        .closures
        .iter()
        .filter(|(_, closure, registered, _)| is_prompt_closure(closure, *registered))
        .map(|(_, closure, ..)| (None, quote::ToTokens::to_token_stream(&closure.body)))
        .chain(fn_candidates.iter().map(|(_, f)| {
            (
                Some(&f.sig.ident),
                quote::ToTokens::to_token_stream(&f.block),
            )
        }))
        .collect();
    let called_by_handler = |f: &syn::ItemFn| {
        bodies.iter().any(|(caller, body)| {
            *caller != Some(&f.sig.ident) && calls_fn(body.clone(), &f.sig.ident)
        })
    };
    for (file, f) in fn_candidates {
        let called = format!("{} (", f.sig.ident);
        let strict = f.sig.inputs.len() == 3;
        let loose = !closure_calls
            .iter()
            .any(|t| t.contains(&called) || t.contains(&format!(":: {called}")));
        if (strict || loose) && !called_by_handler(f) {
            match entry_fn(
                files,
                *file,
                f.sig.ident.to_string(),
                &f.sig,
                &f.block,
                f.span(),
            ) {
                Ok(h) => found.push(h),
                Err(r) => refused.push(r),
            }
        }
    }
    (found, refused)
}

/// Whether a body calls the fn `name` (`name(..)`, `path::name(..)`; not a method of that
/// name), macro arguments included (`tokio::select!`, `#[cfg]`-gated code alike).
fn calls_fn(body: proc_macro2::TokenStream, name: &syn::Ident) -> bool {
    use proc_macro2::{Delimiter, TokenTree};
    let tokens: Vec<TokenTree> = body.into_iter().collect();
    tokens.iter().enumerate().any(|(i, t)| match t {
        TokenTree::Group(g) => calls_fn(g.stream(), name),
        TokenTree::Ident(id) if id == name => {
            let call = matches!(tokens.get(i + 1), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
            let after = |c: char| {
                i > 0 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == c)
            };
            let defined = i > 0 && matches!(&tokens[i - 1], TokenTree::Ident(k) if k == "fn");
            call && !after('.') && !defined
        }
        _ => false,
    })
}

fn is_prompt_closure(c: &syn::ExprClosure, registered: bool) -> bool {
    if c.inputs.len() != 3 {
        return false;
    }
    let typed = |k: usize| match &c.inputs[k] {
        syn::Pat::Type(t) => Some(type_text(&t.ty)),
        _ => None,
    };
    let request = typed(0).is_some_and(|t| t.ends_with("PromptRequest"));
    let responder = typed(1).is_some_and(|t| is_prompt_responder(&t));
    let untyped_request = typed(0).is_none();
    request
        || responder
        || (registered
            && untyped_request
            && quote::ToTokens::to_token_stream(&c.body)
                .to_string()
                .contains("PromptResponse"))
}

/// A fn taking the request, the prompt's responder and the connection, in any order and
/// beside parameters of the agent's own (state handed over by a wrapper or a macro of its own
/// that registers it: `.on_receive_request(with_state!(state, prompt::handle_prompt), ..)`).
fn fn_is_prompt_handler(sig: &syn::Signature) -> bool {
    prompt_fn_params(sig).is_some()
}

/// The positions (among the typed parameters) of the request, the responder and the connection.
fn prompt_fn_params(sig: &syn::Signature) -> Option<(usize, usize, usize)> {
    let types: Vec<String> = sig
        .inputs
        .iter()
        .filter_map(|i| match i {
            syn::FnArg::Typed(t) => Some(type_text(&t.ty)),
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    let request = types.iter().position(|t| t.ends_with("PromptRequest"))?;
    let responder = types.iter().position(|t| is_prompt_responder(t))?;
    let cx = types
        .iter()
        .position(|t| crate::lang::rust::syntax::is_connection(t))?;
    Some((request, responder, cx))
}

fn closure_handler(
    files: &[Parsed],
    file: usize,
    c: &syn::ExprClosure,
    name: String,
) -> Result<Handler, Refusal> {
    let at = line(c.or1_token.span);
    let refuse = |message: String| Refusal {
        file,
        line: at,
        message,
    };
    let session = session_of(&c.inputs[0]).ok_or_else(|| {
        refuse("the prompt handler's request parameter is a pattern without `session_id`; name it (`request: PromptRequest`)".into())
    })?;
    let responder = ident_of(&c.inputs[1]).ok_or_else(|| {
        refuse(
            "the prompt handler's responder parameter is a pattern; name it (`responder`)".into(),
        )
    })?;
    let cx = ident_of(&c.inputs[2])
        .filter(|n| n != "_")
        .ok_or_else(|| {
            refuse("the prompt handler's connection parameter is `_`; name it (`cx`) so the card can use it".into())
        })?;
    let (block, expr) = body_of(&c.body);
    let params = c.inputs.iter().filter_map(ident_of).collect();
    let span = c.span().byte_range();
    Ok(Handler {
        anchor: PromptHandler {
            site: Site::new(
                file,
                &files[file].file,
                c.or1_token.span.byte_range().start..span.end,
            ),
            name,
        },
        span,
        block,
        expr,
        session,
        params,
        style: Style::Entry { cx, responder },
        self_ty: None,
    })
}

fn entry_fn(
    files: &[Parsed],
    file: usize,
    name: String,
    sig: &syn::Signature,
    block: &syn::Block,
    span: proc_macro2::Span,
) -> Result<Handler, Refusal> {
    let at = line(sig.fn_token.span);
    let typed: Vec<&syn::PatType> = sig
        .inputs
        .iter()
        .filter_map(|i| match i {
            syn::FnArg::Typed(t) => Some(t),
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    let refuse = |message: &str| Refusal {
        file,
        line: at,
        message: format!("{name}: {message}"),
    };
    let (request_at, responder_at, cx_at) = prompt_fn_params(sig).unwrap_or((0, 1, 2));
    let session =
        session_of(&typed[request_at].pat).ok_or_else(|| refuse("name the request parameter"))?;
    let responder =
        ident_of(&typed[responder_at].pat).ok_or_else(|| refuse("name the responder parameter"))?;
    let cx = ident_of(&typed[cx_at].pat)
        .filter(|n| n != "_")
        .ok_or_else(|| refuse("name the connection parameter"))?;
    let params = typed.iter().filter_map(|t| ident_of(&t.pat)).collect();
    let span = span.byte_range();
    Ok(Handler {
        anchor: PromptHandler {
            site: Site::new(
                file,
                &files[file].file,
                sig.fn_token.span.byte_range().start..span.end,
            ),
            name,
        },
        span,
        block: Some(block.clone()),
        expr: block.span().byte_range(),
        session,
        params,
        style: Style::Entry { cx, responder },
        self_ty: None,
    })
}

/// A method whose return value is the prompt response: its body becomes one turn. The sink
/// is filled in later (`Style::Wrap.sink` is `None` until then).
pub fn method_handler(
    files: &[Parsed],
    file: usize,
    ty: &str,
    f: &syn::ImplItemFn,
) -> Result<Handler, Refusal> {
    let at = line(f.sig.fn_token.span);
    let name = format!("{ty}::{}", f.sig.ident);
    let refuse = |message: &str| Refusal {
        file,
        line: at,
        message: format!("{name} {message}"),
    };
    if f.sig.asyncness.is_none() {
        return Err(refuse("is not an `async fn`; pin another prompt handler"));
    }
    if !matches!(f.sig.output, syn::ReturnType::Type(..)) {
        return Err(refuse(
            "returns nothing; acp-patch needs the prompt's response as its value",
        ));
    }
    let request = f
        .sig
        .inputs
        .iter()
        .find_map(|i| match i {
            syn::FnArg::Typed(t) if type_name(&t.ty).as_deref() == Some("PromptRequest") => {
                Some(&*t.pat)
            }
            _ => None,
        })
        .ok_or_else(|| refuse("takes no `PromptRequest`"))?;
    let session = session_of(request)
        .ok_or_else(|| refuse("destructures its request without `session_id`; name it"))?;
    let mut params = vec!["self".to_string()];
    params.extend(f.sig.inputs.iter().filter_map(|i| match i {
        syn::FnArg::Typed(t) => ident_of(&t.pat),
        syn::FnArg::Receiver(_) => None,
    }));
    let span = f.span().byte_range();
    Ok(Handler {
        anchor: PromptHandler {
            site: Site::new(
                file,
                &files[file].file,
                f.sig.fn_token.span.byte_range().start..span.end,
            ),
            name,
        },
        span,
        block: Some(f.block.clone()),
        expr: f.block.span().byte_range(),
        session,
        params,
        style: Style::Wrap {
            sink: None,
            sink_from: String::new(),
        },
        self_ty: Some(ty.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::calls_fn;

    fn calls(body: &str, name: &str) -> bool {
        calls_fn(
            body.parse().unwrap(),
            &syn::Ident::new(name, proc_macro2::Span::call_site()),
        )
    }

    #[test]
    fn a_call_of_the_fn_is_seen_in_nested_blocks_paths_and_macros() {
        assert!(calls(
            "{ cx.spawn(async move { let g = watch(&req, &responder, &cx); }) }",
            "watch"
        ));
        assert!(calls("{ prompt::watch(&req) }", "watch"));
        assert!(calls(
            "{ tokio::select! { _ = watch(&req) => {} } }",
            "watch"
        ));
    }

    #[test]
    fn a_method_a_definition_or_a_mention_is_not_a_call() {
        assert!(!calls("{ self.watch(&req) }", "watch"));
        assert!(!calls("{ fn watch(req: &PromptRequest) {} }", "watch"));
        assert!(!calls("{ register(watch) }", "watch"));
        assert!(!calls("{ watcher(&req) }", "watch"));
    }
}
