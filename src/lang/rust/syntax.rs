//! What the `syn` trees of a crate hold that the anchors are found in: its impls, fns,
//! closures, structs, statics and type aliases, and every scope (fn, closure, match arm) with
//! the names it binds and their types.

use super::Parsed;
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

pub(super) fn is_ref(ty: &syn::Type) -> bool {
    matches!(ty, syn::Type::Reference(_))
}

/// A type's text without spaces, for `Responder<..PromptResponse..>` tests.
pub(super) fn type_text(ty: &syn::Type) -> String {
    quote::ToTokens::to_token_stream(ty)
        .to_string()
        .replace(' ', "")
}

/// The responder of a prompt: `Responder<PromptResponse>` (sacp 10: `JrRequestCx<PromptResponse>`).
pub(super) fn is_prompt_responder(ty: &str) -> bool {
    (ty.contains("Responder<") || ty.contains("JrRequestCx<")) && ty.contains("PromptResponse")
}

/// The builder API's connection: `ConnectionTo<Client>` (sacp 10: `JrConnectionCx<AgentToClient>`).
pub(super) fn is_connection(ty: &str) -> bool {
    ty.contains("ConnectionTo") || ty.contains("JrConnectionCx")
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
    /// Where the crate acts as an ACP client: (file, line, what it does there), for the error
    /// that says why such a crate has no agent to patch.
    pub client_sides: Vec<(usize, usize, String)>,
    fields: Fields,
    arms: Vec<(usize, syn::Arm)>,
}

/// Methods of the SDK's `Client` trait (the side that sends prompts and answers permission
/// requests and file reads): an `impl Client` with one of them is an ACP client.
const CLIENT_METHODS: &[&str] = &[
    "request_permission",
    "session_notification",
    "read_text_file",
    "write_text_file",
    "create_terminal",
];

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
        // the SDK's `Client` trait, known by the methods only a client implements
        if let Some((_, path, _)) = &i.trait_
            && path.segments.last().is_some_and(|s| s.ident == "Client")
            && i.items.iter().any(|item| {
                matches!(item, syn::ImplItem::Fn(f) if CLIENT_METHODS.iter().any(|m| f.sig.ident == m))
            })
        {
            let name = path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect::<Vec<_>>()
                .join("::");
            self.out.client_sides.push((
                self.file,
                i.impl_token.span.start().line,
                format!("implements `{name}`"),
            ));
        }
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

    fn visit_expr_path(&mut self, e: &'ast syn::ExprPath) {
        if e.path
            .segments
            .iter()
            .any(|s| s.ident == "ClientSideConnection")
        {
            self.out.client_sides.push((
                self.file,
                e.span().start().line,
                "builds a `ClientSideConnection`".to_string(),
            ));
        }
        syn::visit::visit_expr_path(self, e);
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

pub(super) fn takes_prompt_request(sig: &syn::Signature) -> bool {
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
pub(super) fn ident_of(pat: &syn::Pat) -> Option<String> {
    match pat {
        syn::Pat::Ident(i) if i.subpat.is_none() => Some(i.ident.to_string()),
        syn::Pat::Type(t) => ident_of(&t.pat),
        _ => None,
    }
}

/// The session id expression for a `PromptRequest` parameter pattern.
pub(super) fn session_of(pat: &syn::Pat) -> Option<String> {
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
