//! Finding the sites on the `syn` trees: the agent type, its prompt handler, the emitter
//! every session update leaves through, the hand-off to the model stream, and every
//! place the agent is built. Each choice has one candidate, is pinned in `acp-patch.toml`
//! (`[rust]`), or fails with the candidates listed.

use super::Parsed;
use crate::config::RustPins;
use crate::error::{Candidate, Error, Location, Result};
use syn::spanned::Spanned;
use syn::visit::Visit;

/// The three API generations of the `agent-client-protocol` crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// ≤ 0.10: `impl Agent for X`, `AgentSideConnection`, a `LocalSet` (futures are `!Send`).
    Trait,
    /// 0.11 – 4.x: `Agent.builder().on_receive_request(..)`.
    Builder,
    /// ≥ 5: `Agent.v1()`, types under `v1::schema`.
    V1,
}

impl Generation {
    pub fn of(version: (u64, u64)) -> Generation {
        match version {
            (0, minor) if minor <= 10 => Generation::Trait,
            (major, _) if major >= 5 => Generation::V1,
            _ => Generation::Builder,
        }
    }
}

/// A method in an `impl` block.
#[derive(Clone)]
pub struct Method {
    pub file: usize,
    /// The type the impl is for.
    pub ty: String,
    pub func: syn::ImplItemFn,
}

impl Method {
    pub fn name(&self) -> String {
        format!("{}::{}", self.ty, self.func.sig.ident)
    }
}

#[derive(Clone)]
pub struct StructLit {
    pub file: usize,
    pub expr: syn::ExprStruct,
}

pub struct Sites {
    pub agent_struct: (usize, syn::ItemStruct),
    pub literals: Vec<StructLit>,
    pub prompt: Method,
    pub emitter: Method,
    /// The top-level statement of the prompt handler the card opens before.
    pub handoff: syn::Stmt,
    /// The emitter call in the prompt handler: its argument texts, in parameter order.
    pub emitter_args: Vec<String>,
}

#[derive(Default)]
struct Collected {
    methods: Vec<Method>,
    structs: Vec<(usize, syn::ItemStruct)>,
    literals: Vec<(usize, Option<String>, syn::ExprStruct)>,
    closures: Vec<(usize, usize)>,
}

struct Collector<'c> {
    file: usize,
    impl_ty: Option<String>,
    out: &'c mut Collected,
}

pub fn type_name(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        _ => None,
    }
}

fn is_prompt_request(ty: &syn::Type) -> bool {
    type_name(ty).as_deref() == Some("PromptRequest")
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let ty = type_name(&i.self_ty);
        for item in &i.items {
            if let (syn::ImplItem::Fn(f), Some(ty)) = (item, &ty) {
                self.out.methods.push(Method {
                    file: self.file,
                    ty: ty.clone(),
                    func: f.clone(),
                });
            }
        }
        let outer = std::mem::replace(&mut self.impl_ty, ty);
        syn::visit::visit_item_impl(self, i);
        self.impl_ty = outer;
    }

    fn visit_item_struct(&mut self, i: &'ast syn::ItemStruct) {
        self.out.structs.push((self.file, i.clone()));
        syn::visit::visit_item_struct(self, i);
    }

    fn visit_expr_struct(&mut self, e: &'ast syn::ExprStruct) {
        self.out
            .literals
            .push((self.file, self.impl_ty.clone(), e.clone()));
        syn::visit::visit_expr_struct(self, e);
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        if c.inputs
            .iter()
            .any(|p| matches!(p, syn::Pat::Type(t) if is_prompt_request(&t.ty)))
        {
            self.out.closures.push((self.file, c.span().start().line));
        }
        syn::visit::visit_expr_closure(self, c);
    }
}

/// A pin `path/to/file.rs:Type::method` (or `path/to/file.rs:LINE` for the hand-off).
fn split_pin(pin: &str) -> (String, Option<String>) {
    match pin.split_once(".rs:") {
        Some((file, name)) => (
            format!("{}.rs", file.trim_start_matches("./")),
            Some(name.to_string()),
        ),
        None => (pin.trim_start_matches("./").to_string(), None),
    }
}

fn candidate(files: &[Parsed], m: &Method) -> Candidate {
    Candidate {
        location: Location {
            file: files[m.file].file.rel.clone(),
            line: m.func.sig.fn_token.span.start().line,
        },
        name: m.name(),
    }
}

fn choose(
    files: &[Parsed],
    found: Vec<Method>,
    pin: Option<&String>,
    site: &'static str,
    pin_key: &'static str,
    none: impl FnOnce() -> String,
) -> Result<Method> {
    let found = found
        .into_iter()
        .map(|m| {
            let c = candidate(files, &m);
            (m, c)
        })
        .collect();
    crate::lang::parts::choose(found, pin.map(|p| split_pin(p)), site, pin_key, none)
}

/// Method calls `self.<name>(..)` in a block, in source order.
struct SelfCalls<'n> {
    name: &'n str,
    found: Vec<syn::ExprMethodCall>,
}

impl<'ast> Visit<'ast> for SelfCalls<'_> {
    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if m.method == self.name
            && matches!(&*m.receiver, syn::Expr::Path(p) if p.path.is_ident("self"))
        {
            self.found.push(m.clone());
        }
        syn::visit::visit_expr_method_call(self, m);
    }
}

/// Whether a method sends a notification (`.session_notification(..)` / `.send_notification(..)`).
pub fn notify_call(block: &syn::Block) -> Option<syn::Expr> {
    struct Find(Option<syn::Expr>);
    impl<'ast> Visit<'ast> for Find {
        fn visit_expr(&mut self, e: &'ast syn::Expr) {
            if self.0.is_some() {
                return;
            }
            let is_notify = |e: &syn::Expr| {
                matches!(e, syn::Expr::MethodCall(m)
                    if m.method == "session_notification" || m.method == "send_notification")
            };
            match e {
                syn::Expr::Await(a) if is_notify(&a.base) => self.0 = Some(e.clone()),
                e if is_notify(e) => self.0 = Some(e.clone()),
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut f = Find(None);
    f.visit_block(block);
    f.0
}

fn takes_session_update(f: &syn::ImplItemFn) -> bool {
    f.sig.inputs.iter().any(
        |i| matches!(i, syn::FnArg::Typed(t) if type_name(&t.ty).as_deref() == Some("SessionUpdate")),
    )
}

fn has_self(f: &syn::ImplItemFn) -> bool {
    matches!(f.sig.inputs.first(), Some(syn::FnArg::Receiver(_)))
}

fn line_of_span(s: proc_macro2::Span) -> usize {
    s.start().line
}

pub fn locate(files: &[Parsed], pins: &RustPins) -> Result<Sites> {
    let mut c = Collected::default();
    for (i, p) in files.iter().enumerate() {
        if let Some(ast) = &p.ast {
            Collector {
                file: i,
                impl_ty: None,
                out: &mut c,
            }
            .visit_file(ast);
        }
    }
    let prompts: Vec<Method> = c
        .methods
        .iter()
        .filter(|m| {
            m.func
                .sig
                .inputs
                .iter()
                .any(|i| matches!(i, syn::FnArg::Typed(t) if is_prompt_request(&t.ty)))
        })
        .cloned()
        .collect();
    let closures = c.closures.clone();
    let prompt = choose(
        files,
        prompts,
        pins.prompt.as_ref(),
        "ACP prompt handler",
        "rust.prompt",
        || match closures.first() {
            Some((file, line)) => format!(
                "the prompt handler is a closure at {}:{line} (builder API); acp-patch patches a method `async fn prompt(&self, request: PromptRequest, ..)` on the agent type: move the closure's body into one and call it from the closure, then pin it",
                files[*file].file.rel
            ),
            None => "no method takes a `PromptRequest`".into(),
        },
    )?;
    if !has_self(&prompt.func) || prompt.func.sig.asyncness.is_none() {
        return Err(Error::Unsupported {
            file: files[prompt.file].file.rel.clone(),
            line: line_of_span(prompt.func.sig.fn_token.span),
            message: format!(
                "{} must be an `async fn` taking `&self`; pin another prompt handler",
                prompt.name()
            ),
        });
    }
    let agent = prompt.ty.clone();

    let emitters: Vec<Method> = c
        .methods
        .iter()
        .filter(|m| {
            m.ty == agent
                && has_self(&m.func)
                && takes_session_update(&m.func)
                && notify_call(&m.func.block).is_some()
        })
        .cloned()
        .collect();
    let emitter = choose(
        files,
        emitters,
        pins.emitter.as_ref(),
        "session-update emitter",
        "rust.emitter",
        || {
            format!(
                "no method of {agent} takes a `SessionUpdate` and sends it with `.session_notification(..)` / `.send_notification(..)`; route the prompt handler's updates through one such method"
            )
        },
    )?;

    let mut calls = SelfCalls {
        name: &emitter.func.sig.ident.to_string(),
        found: Vec::new(),
    };
    calls.visit_block(&prompt.func.block);
    let Some(call) = calls.found.first().cloned() else {
        return Err(Error::Unlocatable {
            site: "emitter call in the prompt handler",
            detail: format!(
                "{} never calls self.{}(..)",
                prompt.name(),
                emitter.func.sig.ident
            ),
            pin_key: "rust.emitter",
        });
    };
    let emitter_args = call
        .args
        .iter()
        .map(|a| super::pieces::span_text(&files[prompt.file].file.text, a.span()))
        .collect();

    let handoff = handoff(files, &prompt, &call, pins.handoff.as_ref())?;

    let structs: Vec<&(usize, syn::ItemStruct)> =
        c.structs.iter().filter(|(_, s)| s.ident == agent).collect();
    let agent_struct = match structs.as_slice() {
        [one] if matches!(one.1.fields, syn::Fields::Named(_)) => (*one).clone(),
        [one] => {
            return Err(Error::Unsupported {
                file: files[one.0].file.rel.clone(),
                line: line_of_span(one.1.struct_token.span),
                message: format!("{agent} has no named fields; acp-patch adds fields to it"),
            });
        }
        [] => {
            return Err(Error::Unlocatable {
                site: "agent struct",
                detail: format!("no `struct {agent}` in the crate"),
                pin_key: "rust.prompt",
            });
        }
        _ => {
            return Err(Error::Unsupported {
                file: files[structs[0].0].file.rel.clone(),
                line: line_of_span(structs[0].1.struct_token.span),
                message: format!(
                    "several `struct {agent}` definitions (cfg variants?); not supported"
                ),
            });
        }
    };
    let literals: Vec<StructLit> = c
        .literals
        .iter()
        .filter(|(_, impl_ty, e)| {
            let last = e.path.segments.last().map(|s| s.ident.to_string());
            last.as_deref() == Some(agent.as_str())
                || (e.path.is_ident("Self") && impl_ty.as_deref() == Some(agent.as_str()))
        })
        .map(|(file, _, expr)| StructLit {
            file: *file,
            expr: expr.clone(),
        })
        .collect();
    if literals.is_empty() {
        return Err(Error::Unlocatable {
            site: "place where the agent is built",
            detail: format!(
                "no struct literal `{agent} {{ .. }}` (or `Self {{ .. }}` in its impl)"
            ),
            pin_key: "rust.prompt",
        });
    }
    Ok(Sites {
        agent_struct,
        literals,
        prompt,
        emitter,
        handoff,
        emitter_args,
    })
}

/// The statement the card opens before: the `let` that binds the stream the relay loop
/// reads (`while let Some(x) = stream.next().await`), else the loop itself.
fn handoff(
    files: &[Parsed],
    prompt: &Method,
    call: &syn::ExprMethodCall,
    pin: Option<&String>,
) -> Result<syn::Stmt> {
    let stmts = &prompt.func.block.stmts;
    let rel = &files[prompt.file].file.rel;
    if let Some(pin) = pin {
        let (file, line) = split_pin(pin);
        let line: Option<usize> = line.and_then(|l| l.parse().ok());
        return stmts
            .iter()
            .find(|s| file == *rel && Some(s.span().start().line) == line)
            .cloned()
            .ok_or_else(|| Error::Unlocatable {
                site: "hand-off to the model",
                detail: format!(
                    "the pin `rust.handoff` ({pin}) names no statement of {}'s body",
                    prompt.name()
                ),
                pin_key: "rust.handoff",
            });
    }
    let at = call.span().byte_range().start;
    let unlocatable = || Error::Unlocatable {
        site: "hand-off to the model",
        detail: format!(
            "the emitter call at {rel}:{} is not in a loop of {}'s body",
            call.span().start().line,
            prompt.name()
        ),
        pin_key: "rust.handoff",
    };
    let idx = stmts
        .iter()
        .position(|s| s.span().byte_range().contains(&at))
        .ok_or_else(unlocatable)?;
    let head: Option<&syn::Expr> = match &stmts[idx] {
        syn::Stmt::Expr(syn::Expr::While(w), _) => Some(&w.cond),
        syn::Stmt::Expr(syn::Expr::ForLoop(f), _) => Some(&f.expr),
        syn::Stmt::Expr(syn::Expr::Loop(_), _) => None,
        _ => return Err(unlocatable()),
    };
    // identifiers the loop head reads from
    let mut idents = Vec::new();
    if let Some(head) = head {
        struct Ids<'v>(&'v mut Vec<String>);
        impl<'ast> Visit<'ast> for Ids<'_> {
            fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
                if let Some(id) = p.path.get_ident() {
                    self.0.push(id.to_string());
                }
            }
        }
        Ids(&mut idents).visit_expr(head);
    }
    let binds = |s: &syn::Stmt| match s {
        syn::Stmt::Local(l) => {
            let pat = match &l.pat {
                syn::Pat::Type(t) => &*t.pat,
                p => p,
            };
            matches!(pat, syn::Pat::Ident(i) if idents.contains(&i.ident.to_string()))
        }
        _ => false,
    };
    Ok(stmts[..idx]
        .iter()
        .rev()
        .find(|s| binds(s))
        .unwrap_or(&stmts[idx])
        .clone())
}
