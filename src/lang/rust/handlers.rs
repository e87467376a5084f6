//! The prompt handlers the SDK calls, and what the inserted code needs around them: the
//! connection the card goes out on, the session id, the responder whose response ends the
//! turn (and every other place that response is given), each found on the `syn` trees.

use super::Parsed;
use super::sdk::Dialect;
use crate::error::{Candidate, Location};
use std::collections::HashMap;
use std::ops::Range;
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The source text a span covers.
pub fn span_text(src: &str, span: proc_macro2::Span) -> String {
    src[span.byte_range()].to_string()
}

/// The last path segment of a type (through references), e.g. `PromptRequest`.
pub fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => None,
    }
}

fn is_ref(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Reference(_))
}

/// A type's text without spaces, for `Responder<..PromptResponse..>` tests.
fn type_text(ty: &syn::Type) -> String {
    quote::ToTokens::to_token_stream(ty)
        .to_string()
        .replace(' ', "")
}

fn is_prompt_responder(ty: &str) -> bool {
    ty.contains("Responder<") && ty.contains("PromptResponse")
}

/// How a handler is covered.
#[derive(Debug, Clone)]
pub enum Style {
    /// The body runs as one turn (`turn(sink, session, async move { .. }).await`): a method
    /// whose return value is the prompt's response (trait API, or a pinned method).
    Wrap {
        /// The sink expression, e.g. `&self.conn`.
        sink: String,
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
    pub file: usize,
    /// For the report and pins: `StreamAgent::prompt`, `handle_prompt`, `closure@57`.
    pub name: String,
    pub line: usize,
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

/// A binding with its declared type (if any) in a scope.
#[derive(Debug, Clone)]
pub struct Binding {
    pub name: String,
    pub ty: Option<String>,
    pub by_ref: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScopeKind {
    Fn,
    Closure,
    Arm,
}

/// A fn, closure or match arm: what it binds, and the block its statements start in.
#[derive(Debug, Clone)]
pub struct Scope {
    pub file: usize,
    pub kind: ScopeKind,
    pub span: Range<usize>,
    pub bindings: Vec<Binding>,
    pub block: Option<syn::Block>,
    /// Byte range of the body when it is an expression, not a block.
    pub expr: Range<usize>,
}

/// A field declared on a struct or enum variant: (type or variant name) → fields.
type Fields = HashMap<String, Vec<(Option<String>, String, bool)>>;

#[derive(Default)]
pub struct Collected {
    pub trait_prompts: Vec<(usize, String, syn::ImplItemFn)>,
    pub methods: Vec<(usize, String, syn::ImplItemFn)>,
    pub fns: Vec<(usize, syn::ItemFn)>,
    /// (file, closure, inside a registering call's argument, the enclosing fn's name).
    pub closures: Vec<(usize, syn::ExprClosure, bool, String)>,
    pub structs: Vec<(usize, syn::ItemStruct)>,
    pub statics: Vec<(usize, syn::ItemStatic)>,
    /// `type Name = ..;` → the aliased type's text.
    pub aliases: HashMap<String, String>,
    pub scopes: Vec<Scope>,
    fields: Fields,
    arms: Vec<(usize, syn::Arm)>,
}

struct Collector<'c> {
    file: usize,
    impl_ty: Option<String>,
    /// The enclosing fn: `serve`, `StreamAgent::prompt`.
    func: Vec<String>,
    trait_is_agent: bool,
    in_receive_request: usize,
    out: &'c mut Collected,
}

fn pat_bindings(pat: &syn::Pat, ty: Option<&syn::Type>, out: &mut Vec<Binding>) {
    match pat {
        syn::Pat::Ident(i) => out.push(Binding {
            name: i.ident.to_string(),
            ty: ty.map(type_text),
            by_ref: ty.is_some_and(is_ref),
        }),
        syn::Pat::Type(t) => pat_bindings(&t.pat, Some(&t.ty), out),
        syn::Pat::Reference(r) => pat_bindings(&r.pat, None, out),
        syn::Pat::Struct(s) => {
            // `PromptRequest { session_id, .. }`: the fields' names; their types come later
            for f in &s.fields {
                pat_bindings(&f.pat, None, out);
            }
        }
        syn::Pat::TupleStruct(t) => {
            for p in &t.elems {
                pat_bindings(p, None, out);
            }
        }
        syn::Pat::Tuple(t) => {
            for p in &t.elems {
                pat_bindings(p, None, out);
            }
        }
        _ => {}
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let ty = type_name(&i.self_ty);
        let is_agent = i
            .trait_
            .as_ref()
            .and_then(|(_, p, _)| p.segments.last())
            .is_some_and(|s| s.ident == "Agent");
        if let Some(ty) = &ty {
            for item in &i.items {
                if let syn::ImplItem::Fn(f) = item {
                    self.out.methods.push((self.file, ty.clone(), f.clone()));
                    if is_agent && takes_prompt_request(&f.sig) {
                        self.out
                            .trait_prompts
                            .push((self.file, ty.clone(), f.clone()));
                    }
                }
            }
        }
        let outer = std::mem::replace(&mut self.impl_ty, ty);
        let outer_agent = std::mem::replace(&mut self.trait_is_agent, is_agent);
        syn::visit::visit_item_impl(self, i);
        self.impl_ty = outer;
        self.trait_is_agent = outer_agent;
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.out.fns.push((self.file, f.clone()));
        self.fn_scope(&f.sig, &f.block, f.span());
        self.func.push(f.sig.ident.to_string());
        syn::visit::visit_item_fn(self, f);
        self.func.pop();
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.fn_scope(&f.sig, &f.block, f.span());
        let name = match &self.impl_ty {
            Some(ty) => format!("{ty}::{}", f.sig.ident),
            None => f.sig.ident.to_string(),
        };
        self.func.push(name);
        syn::visit::visit_impl_item_fn(self, f);
        self.func.pop();
    }

    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        self.out.structs.push((self.file, s.clone()));
        self.fields(s.ident.to_string(), &s.fields);
        syn::visit::visit_item_struct(self, s);
    }

    fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
        for v in &e.variants {
            self.fields(v.ident.to_string(), &v.fields);
        }
        syn::visit::visit_item_enum(self, e);
    }

    fn visit_item_type(&mut self, t: &'ast syn::ItemType) {
        self.out
            .aliases
            .insert(t.ident.to_string(), type_text(&t.ty));
        syn::visit::visit_item_type(self, t);
    }

    fn visit_item_static(&mut self, s: &'ast syn::ItemStatic) {
        self.out.statics.push((self.file, s.clone()));
        syn::visit::visit_item_static(self, s);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        let registers = m.method == "on_receive_request" || m.method == "on_receive_request_from";
        self.visit_expr(&m.receiver);
        if registers {
            self.in_receive_request += 1;
        }
        for a in &m.args {
            self.visit_expr(a);
        }
        if registers {
            self.in_receive_request -= 1;
        }
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        self.out.closures.push((
            self.file,
            c.clone(),
            self.in_receive_request > 0,
            self.func.last().cloned().unwrap_or_default(),
        ));
        let mut bindings = Vec::new();
        for p in &c.inputs {
            pat_bindings(p, None, &mut bindings);
        }
        let (block, expr) = body_of(&c.body);
        self.out.scopes.push(Scope {
            file: self.file,
            kind: ScopeKind::Closure,
            span: c.span().byte_range(),
            bindings,
            block,
            expr,
        });
        // a closure inside a registering call's argument is not itself an argument
        let outer = std::mem::replace(&mut self.in_receive_request, 0);
        syn::visit::visit_expr_closure(self, c);
        self.in_receive_request = outer;
    }

    fn visit_arm(&mut self, a: &'ast syn::Arm) {
        self.out.arms.push((self.file, a.clone()));
        syn::visit::visit_arm(self, a);
    }
}

/// A closure's body: its block (also inside `async move { .. }`), or its expression's range.
pub fn body_of(body: &syn::Expr) -> (Option<syn::Block>, Range<usize>) {
    match body {
        syn::Expr::Block(b) if b.label.is_none() => {
            (Some(b.block.clone()), body.span().byte_range())
        }
        syn::Expr::Async(a) => (Some(a.block.clone()), body.span().byte_range()),
        e => (None, e.span().byte_range()),
    }
}

impl Collector<'_> {
    fn fn_scope(&mut self, sig: &syn::Signature, block: &syn::Block, span: proc_macro2::Span) {
        let mut bindings = Vec::new();
        for input in &sig.inputs {
            match input {
                syn::FnArg::Typed(t) => pat_bindings(&t.pat, Some(&t.ty), &mut bindings),
                syn::FnArg::Receiver(_) => bindings.push(Binding {
                    name: "self".into(),
                    ty: None,
                    by_ref: true,
                }),
            }
        }
        self.out.scopes.push(Scope {
            file: self.file,
            kind: ScopeKind::Fn,
            span: span.byte_range(),
            bindings,
            block: Some(block.clone()),
            expr: block.span().byte_range(),
        });
    }

    fn fields(&mut self, owner: String, fields: &syn::Fields) {
        let list: Vec<(Option<String>, String, bool)> = fields
            .iter()
            .map(|f| {
                (
                    f.ident.as_ref().map(|i| i.to_string()),
                    type_text(&f.ty),
                    is_ref(&f.ty),
                )
            })
            .collect();
        self.out.fields.entry(owner).or_default().extend(list);
    }
}

impl Collected {
    /// A type's text with the crate's own type aliases spelled out (one level deep per name).
    pub fn expand(&self, ty: &str) -> String {
        let mut out = String::new();
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            match self.aliases.get(word.as_str()) {
                Some(target) => out.push_str(target),
                None => out.push_str(word),
            }
            word.clear();
        };
        for ch in ty.chars() {
            if ch.is_alphanumeric() || ch == '_' {
                word.push(ch);
            } else {
                flush(&mut word, &mut out);
                out.push(ch);
            }
        }
        flush(&mut word, &mut out);
        out
    }
}

fn takes_prompt_request(sig: &syn::Signature) -> bool {
    sig.inputs.iter().any(
        |i| matches!(i, syn::FnArg::Typed(t) if type_name(&t.ty).as_deref() == Some("PromptRequest")),
    )
}

pub fn collect(files: &[Parsed], skip: &std::collections::BTreeSet<usize>) -> Collected {
    let mut c = Collected::default();
    for (i, p) in files.iter().enumerate() {
        if skip.contains(&i) {
            continue;
        }
        if let Some(ast) = &p.ast {
            Collector {
                file: i,
                impl_ty: None,
                func: Vec::new(),
                trait_is_agent: false,
                in_receive_request: 0,
                out: &mut c,
            }
            .visit_file(ast);
        }
    }
    // match arms bind the fields of the struct or variant their pattern names
    let arms = std::mem::take(&mut c.arms);
    for (file, arm) in arms {
        let mut bindings = Vec::new();
        arm_bindings(&arm.pat, &c.fields, &mut bindings);
        if bindings.is_empty() {
            continue;
        }
        let (block, expr) = body_of(&arm.body);
        c.scopes.push(Scope {
            file,
            kind: ScopeKind::Arm,
            span: arm.span().byte_range(),
            bindings,
            block,
            expr,
        });
    }
    c
}

fn arm_bindings(pat: &syn::Pat, fields: &Fields, out: &mut Vec<Binding>) {
    match pat {
        syn::Pat::Struct(s) => {
            let owner = s.path.segments.last().map(|x| x.ident.to_string());
            let known = owner.as_ref().and_then(|o| fields.get(o));
            for f in &s.fields {
                let syn::Member::Named(name) = &f.member else {
                    continue;
                };
                let declared = known.and_then(|k| {
                    k.iter()
                        .find(|(n, _, _)| n.as_deref() == Some(&name.to_string()))
                });
                if let syn::Pat::Ident(i) = &*f.pat {
                    out.push(Binding {
                        name: i.ident.to_string(),
                        ty: declared.map(|d| d.1.clone()),
                        by_ref: declared.is_some_and(|d| d.2),
                    });
                }
            }
        }
        syn::Pat::TupleStruct(t) => {
            let owner = t.path.segments.last().map(|x| x.ident.to_string());
            let known = owner.as_ref().and_then(|o| fields.get(o));
            for (k, p) in t.elems.iter().enumerate() {
                if let syn::Pat::Ident(i) = p {
                    let declared = known.and_then(|f| f.get(k));
                    out.push(Binding {
                        name: i.ident.to_string(),
                        ty: declared.map(|d| d.1.clone()),
                        by_ref: declared.is_some_and(|d| d.2),
                    });
                }
            }
        }
        syn::Pat::Or(o) => {
            for p in &o.cases {
                arm_bindings(p, fields, out);
            }
        }
        _ => {}
    }
}

/// The name a pattern binds, if it is a plain identifier (`request`, `mut request`, `request: T`).
fn ident_of(pat: &syn::Pat) -> Option<String> {
    match pat {
        syn::Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.to_string()),
        syn::Pat::Type(t) => ident_of(&t.pat),
        _ => None,
    }
}

/// The session id expression for a `PromptRequest` parameter pattern.
fn session_of(pat: &syn::Pat) -> Option<String> {
    match pat {
        syn::Pat::Type(t) => session_of(&t.pat),
        syn::Pat::Ident(i) if i.subpat.is_none() => Some(format!("{}.session_id", i.ident)),
        syn::Pat::Struct(s) => s.fields.iter().find_map(|f| match (&f.member, &*f.pat) {
            (syn::Member::Named(m), syn::Pat::Ident(i)) if m == "session_id" => {
                Some(i.ident.to_string())
            }
            _ => None,
        }),
        _ => None,
    }
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

/// A candidate for a sink (the trait API's connection for the card).
#[derive(Debug, Clone)]
pub struct SinkCandidate {
    pub file: usize,
    pub line: usize,
    /// Pin name: `Type::field` or `STATIC`.
    pub name: String,
    /// The expression the turn reads: `&self.field`, `&crate::STATIC`.
    pub expr: String,
    /// The agent's own sends go through it.
    pub used_by_sends: bool,
}

/// Types that carry session updates to the client: the connection, a channel of them.
/// Types that carry session updates to the client and can be kept for later (the card's
/// heartbeats and held text): the connection behind a shared pointer (`Rc`/`Arc`, in a cell
/// or not), or a channel sender of session notifications the agent drains into it.
fn is_sink_type(ty: &str) -> bool {
    (ty.contains("AgentSideConnection") && (ty.contains("Rc<") || ty.contains("Arc<")))
        || (ty.contains("Sender<") && ty.contains("SessionNotification"))
}

/// Every field of `self_ty` and every reachable static that can carry the card (the same
/// list the `connection` pin picks from).
pub fn sink_candidates(
    files: &[Parsed],
    c: &Collected,
    self_ty: &str,
    module_path: &dyn Fn(usize) -> Option<Vec<String>>,
    used_fields: &[String],
) -> Vec<SinkCandidate> {
    let mut out = Vec::new();
    for (file, s) in &c.structs {
        if s.ident != self_ty {
            continue;
        }
        for f in &s.fields {
            let Some(name) = &f.ident else { continue };
            if is_sink_type(&c.expand(&type_text(&f.ty))) {
                out.push(SinkCandidate {
                    file: *file,
                    line: line(name.span()),
                    name: format!("{self_ty}::{name}"),
                    expr: format!("&self.{name}"),
                    used_by_sends: used_fields.contains(&name.to_string()),
                });
            }
        }
    }
    for (file, s) in &c.statics {
        if !is_sink_type(&c.expand(&type_text(&s.ty))) {
            continue;
        }
        let Some(path) = module_path(*file) else {
            continue;
        };
        let public = !matches!(s.vis, syn::Visibility::Inherited);
        if !public && !path.is_empty() {
            continue; // private to a module the handler may not be in
        }
        let mut full = vec!["crate".to_string()];
        full.extend(path);
        full.push(s.ident.to_string());
        out.push(SinkCandidate {
            file: *file,
            line: line(s.ident.span()),
            name: s.ident.to_string(),
            expr: format!("&{}", full.join("::")),
            used_by_sends: used_fields.contains(&s.ident.to_string()),
        });
        let _ = files;
    }
    out
}

impl SinkCandidate {
    pub fn candidate(&self, files: &[Parsed]) -> Candidate {
        Candidate {
            location: Location {
                file: files[self.file].file.rel.clone(),
                line: self.line,
            },
            name: self.name.clone(),
        }
    }
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
    for (file, f) in &c.fns {
        let called = format!("{} (", f.sig.ident);
        let strict = fn_is_prompt_handler(&f.sig) && f.sig.inputs.len() == 3;
        let loose = fn_is_prompt_handler(&f.sig)
            && !closure_calls
                .iter()
                .any(|t| t.contains(&called) || t.contains(&format!(":: {called}")));
        if strict || loose {
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
    let cx = types.iter().position(|t| t.contains("ConnectionTo"))?;
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
    let _ = files;
    Ok(Handler {
        file,
        name,
        line: at,
        span: c.span().byte_range(),
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
    let _ = files;
    Ok(Handler {
        file,
        name,
        line: at,
        span: span.byte_range(),
        block: Some(block.clone()),
        expr: block.span().byte_range(),
        session,
        params,
        style: Style::Entry { cx, responder },
        self_ty: None,
    })
}

/// A method whose return value is the prompt response: its body becomes one turn. The sink
/// is filled in later (`Style::Wrap.sink` empty until then).
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
    let _ = files;
    Ok(Handler {
        file,
        name,
        line: at,
        span: f.span().byte_range(),
        block: Some(f.block.clone()),
        expr: f.block.span().byte_range(),
        session,
        params,
        style: Style::Wrap {
            sink: String::new(),
            sink_from: String::new(),
        },
        self_ty: Some(ty.to_string()),
    })
}

/// `self.<field>` receivers of the SDK sends in methods of `ty`: the fields the agent's own
/// sends go through.
pub fn fields_used_by_sends(
    files: &[Parsed],
    c: &Collected,
    ty: &str,
    send_method: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for (file, mty, f) in &c.methods {
        if mty != ty {
            continue;
        }
        let text = span_text(&files[*file].file.text, f.block.span());
        let mut rest = text.as_str();
        while let Some(i) = rest.find("self.") {
            rest = &rest[i + 5..];
            let field: String = rest
                .chars()
                .take_while(|ch| ch.is_alphanumeric() || *ch == '_')
                .collect();
            // a field read in a method that sends
            if !field.is_empty()
                && text.contains(&format!(".{send_method}"))
                && !out.contains(&field)
            {
                out.push(field);
            }
        }
    }
    out
}

/// Scopes (fns, closures, arms) of a file that contain a byte offset, innermost first.
pub fn scopes_at(c: &Collected, file: usize, at: usize) -> Vec<&Scope> {
    let mut v: Vec<&Scope> = c
        .scopes
        .iter()
        .filter(|s| s.file == file && s.span.contains(&at))
        .collect();
    v.sort_by_key(|s| s.span.end - s.span.start);
    v
}

/// The session id a scope can name for `turn_of(..)`: a `PromptRequest` or `SessionId`
/// binding, in the scope or an enclosing one up to its fn. Returns (scope, expression).
pub fn session_key<'c>(scopes: &[&'c Scope]) -> Option<(&'c Scope, String)> {
    for s in scopes {
        for b in &s.bindings {
            let Some(ty) = &b.ty else { continue };
            if ty.ends_with("PromptRequest") {
                return Some((s, format!("&{}.session_id", b.name)));
            }
            if ty.ends_with("SessionId") {
                let expr = if b.by_ref {
                    b.name.clone()
                } else {
                    format!("&{}", b.name)
                };
                return Some((s, expr));
            }
        }
        if s.kind == ScopeKind::Fn {
            break;
        }
    }
    None
}

/// Whether `name` is bound in `scope` as a prompt responder (typed `Responder<PromptResponse>`).
pub fn binds_prompt_responder(scope: &Scope, name: &str) -> Option<bool> {
    scope
        .bindings
        .iter()
        .find(|b| b.name == name)
        .map(|b| b.ty.as_deref().is_some_and(is_prompt_responder))
}
