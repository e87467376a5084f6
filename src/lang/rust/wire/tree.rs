//! A flat tree of one file for following values: every function, expression, statement and
//! binding, with a parent link and the role each plays in its parent (receiver, argument,
//! initializer, tail, ...). Macro arguments are in it too: format macros (with the names a
//! format string reads inline, `{line}`), `json!` values, and any other macro's arguments that
//! parse as expressions (`tokio::select!` branches, `vec![..]`).

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use std::ops::Range;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

pub type Id = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Top,
    /// A statement of a block (the last one without `;` is `Tail`).
    Stmt,
    Tail,
    /// The body of a fn, closure, loop, arm, `async` block; the expression of a `;` statement.
    Body,
    Init,
    Receiver,
    Callee,
    Arg(usize),
    Lhs,
    Rhs,
    /// The one operand of `&`, `?`, `.await`, `(..)`, `as`, `return`, a unary operator.
    Operand,
    Iter,
    Cond,
    Else,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    /// The declared type's text without spaces.
    pub ty: Option<String>,
}

#[derive(Debug, Clone)]
pub struct FnInfo {
    pub name: String,
    /// The type of the `impl` block a method is in.
    pub self_ty: Option<String>,
    /// `self` first for a method (its type: `&self`, `Arc<Self>`).
    pub params: Vec<Param>,
    pub ret: Option<String>,
}

impl FnInfo {
    /// `Type::name` for a method, `name` for a free fn.
    pub fn qualified(&self) -> String {
        match &self.self_ty {
            Some(ty) => format!("{ty}::{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// A value a `json!` object or a struct literal gives a key: a string or a constant's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyValue {
    Str(String),
    Path(Vec<String>),
    Other,
}

#[derive(Debug, Clone)]
pub enum Kind {
    Fn(Box<FnInfo>),
    Closure(Vec<Param>),
    Block,
    /// `let <names> = <init>;` (`wildcard`: `let _ = ..`).
    Local {
        names: Vec<String>,
        ty: Option<String>,
        wildcard: bool,
    },
    /// `if let` / `while let` / `let .. else` bindings in a condition.
    LetCond(Vec<String>),
    /// An expression statement ending in `;`.
    Semi,
    Ident(String),
    Path(Vec<String>),
    Call,
    Method(String),
    /// A macro call; the names a format string reads inline are children with `Role::Other`.
    Macro { name: String },
    /// `json!(..)`: an object's top-level keys and what each gives.
    Json(Vec<(String, KeyValue)>),
    /// A struct literal: its type's last segment and its fields, in child order.
    Struct(String, Vec<(String, KeyValue)>),
    /// A literal; `Some` for a string.
    Lit(Option<String>),
    Ref,
    Try,
    Await,
    Paren,
    Return,
    Assign,
    For(Vec<String>),
    Match,
    /// A match arm: the names its pattern binds, and the strings and paths it matches.
    Arm {
        names: Vec<String>,
        matches: Vec<KeyValue>,
    },
    If,
    Binary(String),
    Field(String),
    Index,
    Tuple,
    Array,
    Async,
    Other,
}

#[derive(Debug, Clone)]
pub struct Node {
    pub kind: Kind,
    pub span: Range<usize>,
    pub parent: Option<Id>,
    pub role: Role,
    pub children: Vec<Id>,
}

/// One file's nodes; a `const NAME: &str = "..."` table beside them.
#[derive(Debug, Default)]
pub struct Tree {
    pub nodes: Vec<Node>,
    pub consts: Vec<(String, String)>,
}

impl Tree {
    pub fn parent(&self, id: Id) -> Option<Id> {
        self.nodes[id].parent
    }

    pub fn ancestors(&self, id: Id) -> impl Iterator<Item = Id> + '_ {
        std::iter::successors(self.parent(id), move |p| self.parent(*p))
    }

    /// The innermost fn around a node.
    pub fn fn_of(&self, id: Id) -> Option<Id> {
        std::iter::once(id)
            .chain(self.ancestors(id))
            .find(|a| matches!(self.nodes[*a].kind, Kind::Fn(_)))
    }

    pub fn fn_info(&self, id: Id) -> Option<&FnInfo> {
        match &self.nodes[id].kind {
            Kind::Fn(f) => Some(f),
            _ => None,
        }
    }

    /// Every node below `id` (pre-order), `id` first.
    pub fn descendants(&self, id: Id) -> Vec<Id> {
        let mut out = Vec::new();
        let mut todo = vec![id];
        while let Some(n) = todo.pop() {
            out.push(n);
            todo.extend(self.nodes[n].children.iter().rev());
        }
        out
    }

    pub fn child(&self, id: Id, role: Role) -> Option<Id> {
        self.nodes[id]
            .children
            .iter()
            .copied()
            .find(|c| self.nodes[*c].role == role)
    }

    pub fn is_inside(&self, id: Id, outer: Id) -> bool {
        id == outer || self.ancestors(id).any(|a| a == outer)
    }
}

/// Types and params' type text without spaces.
pub fn type_text(ty: &syn::Type) -> String {
    quote::ToTokens::to_token_stream(ty)
        .to_string()
        .replace(' ', "")
}

fn pat_names(pat: &syn::Pat, out: &mut Vec<String>) {
    match pat {
        syn::Pat::Ident(i) => {
            out.push(i.ident.to_string());
            if let Some((_, sub)) = &i.subpat {
                pat_names(sub, out);
            }
        }
        syn::Pat::Type(t) => pat_names(&t.pat, out),
        syn::Pat::Reference(r) => pat_names(&r.pat, out),
        syn::Pat::Struct(s) => s.fields.iter().for_each(|f| pat_names(&f.pat, out)),
        syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|p| pat_names(p, out)),
        syn::Pat::Tuple(t) => t.elems.iter().for_each(|p| pat_names(p, out)),
        syn::Pat::Slice(s) => s.elems.iter().for_each(|p| pat_names(p, out)),
        syn::Pat::Or(o) => o.cases.iter().for_each(|p| pat_names(p, out)),
        syn::Pat::Paren(p) => pat_names(&p.pat, out),
        _ => {}
    }
}

/// What a pattern matches: string literals and paths (a constant), through `Some(..)`, `|`.
fn pat_matches(pat: &syn::Pat, out: &mut Vec<KeyValue>) {
    match pat {
        syn::Pat::Lit(l) => {
            if let syn::Lit::Str(s) = &l.lit {
                out.push(KeyValue::Str(s.value()));
            }
        }
        syn::Pat::Path(p) => out.push(KeyValue::Path(segments(&p.path))),
        // a lone identifier is a constant when one of that name holds the method
        syn::Pat::Ident(i) if i.subpat.is_none() => {
            out.push(KeyValue::Path(vec![i.ident.to_string()]))
        }
        syn::Pat::Or(o) => o.cases.iter().for_each(|p| pat_matches(p, out)),
        syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|p| pat_matches(p, out)),
        syn::Pat::Tuple(t) => t.elems.iter().for_each(|p| pat_matches(p, out)),
        syn::Pat::Reference(r) => pat_matches(&r.pat, out),
        syn::Pat::Paren(p) => pat_matches(&p.pat, out),
        _ => {}
    }
}

pub fn segments(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// What an expression gives a key: a string literal, a path (through `.into()`,
/// `.to_string()`, `.to_owned()`, `String::from(..)`), else `Other`.
fn key_value(e: &syn::Expr) -> KeyValue {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => KeyValue::Str(s.value()),
        syn::Expr::Path(p) if p.qself.is_none() => KeyValue::Path(segments(&p.path)),
        syn::Expr::Reference(r) => key_value(&r.expr),
        syn::Expr::Paren(p) => key_value(&p.expr),
        syn::Expr::MethodCall(m)
            if m.args.is_empty() && ["into", "to_string", "to_owned"].contains(&&*m.method.to_string()) =>
        {
            key_value(&m.receiver)
        }
        syn::Expr::Call(c) if c.args.len() == 1 => match &*c.func {
            syn::Expr::Path(p) if segments(&p.path).last().is_some_and(|l| l == "from") => {
                key_value(&c.args[0])
            }
            _ => KeyValue::Other,
        },
        _ => KeyValue::Other,
    }
}

const FORMAT_MACROS: &[&str] = &[
    "print", "println", "eprint", "eprintln", "write", "writeln", "format", "format_args",
    "panic", "trace", "debug", "info", "warn", "error",
];

struct Builder<'s> {
    src: &'s str,
    tree: Tree,
}

pub fn build(src: &str, ast: &syn::File) -> Tree {
    let mut b = Builder {
        src,
        tree: Tree::default(),
    };
    let root = b.add(Kind::Other, 0..src.len(), None, Role::Top);
    b.items(&ast.items, root, None);
    b.tree
}

impl Builder<'_> {
    fn add(&mut self, kind: Kind, span: Range<usize>, parent: Option<Id>, role: Role) -> Id {
        let id = self.tree.nodes.len();
        self.tree.nodes.push(Node {
            kind,
            span,
            parent,
            role,
            children: Vec::new(),
        });
        if let Some(p) = parent {
            self.tree.nodes[p].children.push(id);
        }
        id
    }

    fn items(&mut self, items: &[syn::Item], parent: Id, self_ty: Option<&str>) {
        for item in items {
            self.item(item, parent, self_ty);
        }
    }

    fn item(&mut self, item: &syn::Item, parent: Id, self_ty: Option<&str>) {
        if item_is_test(item) {
            return; // a test's messages are never written by the agent
        }
        match item {
            syn::Item::Fn(f) => self.func(&f.sig, &f.block, f.span(), parent, self_ty),
            syn::Item::Impl(i) => {
                let ty = super::super::handlers::type_name(&i.self_ty);
                for it in &i.items {
                    if let syn::ImplItem::Fn(f) = it {
                        self.func(&f.sig, &f.block, f.span(), parent, ty.as_deref());
                    }
                }
            }
            syn::Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    self.items(items, parent, None);
                }
            }
            syn::Item::Const(c) => {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) = &*c.expr
                {
                    self.tree.consts.push((c.ident.to_string(), s.value()));
                }
            }
            syn::Item::Static(s) => {
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(v),
                    ..
                }) = &*s.expr
                {
                    self.tree.consts.push((s.ident.to_string(), v.value()));
                }
            }
            _ => {}
        }
    }

    fn func(
        &mut self,
        sig: &syn::Signature,
        block: &syn::Block,
        span: proc_macro2::Span,
        parent: Id,
        self_ty: Option<&str>,
    ) {
        let params = sig
            .inputs
            .iter()
            .map(|i| match i {
                syn::FnArg::Receiver(r) => Param {
                    name: "self".into(),
                    ty: Some(type_text(&r.ty)),
                },
                syn::FnArg::Typed(t) => {
                    let mut names = Vec::new();
                    pat_names(&t.pat, &mut names);
                    Param {
                        name: if names.len() == 1 {
                            names.remove(0)
                        } else {
                            String::new()
                        },
                        ty: Some(type_text(&t.ty)),
                    }
                }
            })
            .collect();
        let info = FnInfo {
            name: sig.ident.to_string(),
            self_ty: self_ty.map(str::to_string),
            params,
            ret: match &sig.output {
                syn::ReturnType::Default => None,
                syn::ReturnType::Type(_, t) => Some(type_text(t)),
            },
        };
        let id = self.add(
            Kind::Fn(Box::new(info)),
            span.byte_range(),
            Some(parent),
            Role::Other,
        );
        self.block(block, id, Role::Body);
    }

    fn block(&mut self, b: &syn::Block, parent: Id, role: Role) -> Id {
        let id = self.add(Kind::Block, b.span().byte_range(), Some(parent), role);
        for (k, s) in b.stmts.iter().enumerate() {
            self.stmt(s, id, k + 1 == b.stmts.len());
        }
        id
    }

    /// A statement; an expression without `;` is the block's tail only when it is last (a
    /// block-like `for`/`if` needs no `;` anywhere).
    fn stmt(&mut self, s: &syn::Stmt, block: Id, last: bool) {
        let tail = if last { Role::Tail } else { Role::Stmt };
        match s {
            syn::Stmt::Local(l) => {
                let mut names = Vec::new();
                pat_names(&l.pat, &mut names);
                let ty = match &l.pat {
                    syn::Pat::Type(t) => Some(type_text(&t.ty)),
                    _ => None,
                };
                let wildcard = matches!(&l.pat, syn::Pat::Wild(_));
                let id = self.add(
                    Kind::Local {
                        names,
                        ty,
                        wildcard,
                    },
                    l.span().byte_range(),
                    Some(block),
                    Role::Stmt,
                );
                if let Some(init) = &l.init {
                    self.expr(&init.expr, id, Role::Init);
                    if let Some((_, diverge)) = &init.diverge {
                        self.expr(diverge, id, Role::Else);
                    }
                }
            }
            syn::Stmt::Item(item) => self.item(item, block, None),
            syn::Stmt::Expr(e, semi) => match semi {
                Some(semi) => {
                    let span = e.span().byte_range().start..semi.span.byte_range().end;
                    let id = self.add(Kind::Semi, span, Some(block), Role::Stmt);
                    self.expr(e, id, Role::Body);
                }
                None => {
                    self.expr(e, block, tail);
                }
            },
            syn::Stmt::Macro(m) => {
                let span = m.span().byte_range();
                match &m.semi_token {
                    Some(_) => {
                        let id = self.add(Kind::Semi, span.clone(), Some(block), Role::Stmt);
                        let end = m.mac.span().byte_range().end;
                        self.mac(&m.mac, span.start..end, id, Role::Body);
                    }
                    None => {
                        self.mac(&m.mac, span, block, tail);
                    }
                }
            }
        }
    }

    fn closure_params(inputs: &Punctuated<syn::Pat, syn::Token![,]>) -> Vec<Param> {
        inputs
            .iter()
            .map(|p| {
                let mut names = Vec::new();
                pat_names(p, &mut names);
                Param {
                    name: names.into_iter().next().unwrap_or_default(),
                    ty: match p {
                        syn::Pat::Type(t) => Some(type_text(&t.ty)),
                        _ => None,
                    },
                }
            })
            .collect()
    }

    fn expr(&mut self, e: &syn::Expr, parent: Id, role: Role) -> Id {
        use syn::Expr as E;
        let span = e.span().byte_range();
        let leaf = |b: &mut Self, kind| b.add(kind, span.clone(), Some(parent), role);
        match e {
            E::Array(a) => {
                let id = leaf(self, Kind::Array);
                for (k, x) in a.elems.iter().enumerate() {
                    self.expr(x, id, Role::Arg(k));
                }
                id
            }
            E::Assign(a) => {
                let id = leaf(self, Kind::Assign);
                self.expr(&a.left, id, Role::Lhs);
                self.expr(&a.right, id, Role::Rhs);
                id
            }
            E::Async(a) => {
                let id = leaf(self, Kind::Async);
                self.block(&a.block, id, Role::Body);
                id
            }
            E::Await(a) => self.operand(Kind::Await, &a.base, span, parent, role),
            E::Binary(b) => {
                let op = quote::ToTokens::to_token_stream(&b.op).to_string();
                let id = leaf(self, Kind::Binary(op));
                self.expr(&b.left, id, Role::Arg(0));
                self.expr(&b.right, id, Role::Arg(1));
                id
            }
            E::Block(b) => self.block(&b.block, parent, role),
            E::Const(c) => self.block(&c.block, parent, role),
            E::Unsafe(u) => self.block(&u.block, parent, role),
            E::TryBlock(t) => self.block(&t.block, parent, role),
            E::Call(c) => {
                let id = leaf(self, Kind::Call);
                self.expr(&c.func, id, Role::Callee);
                for (k, a) in c.args.iter().enumerate() {
                    self.expr(a, id, Role::Arg(k));
                }
                id
            }
            E::Cast(c) => self.operand(Kind::Paren, &c.expr, span, parent, role),
            E::Closure(c) => {
                let id = leaf(self, Kind::Closure(Self::closure_params(&c.inputs)));
                self.expr(&c.body, id, Role::Body);
                id
            }
            E::Field(f) => {
                let name = match &f.member {
                    syn::Member::Named(n) => n.to_string(),
                    syn::Member::Unnamed(i) => i.index.to_string(),
                };
                self.operand(Kind::Field(name), &f.base, span, parent, role)
            }
            E::ForLoop(f) => {
                let mut names = Vec::new();
                pat_names(&f.pat, &mut names);
                let id = leaf(self, Kind::For(names));
                self.expr(&f.expr, id, Role::Iter);
                self.block(&f.body, id, Role::Body);
                id
            }
            E::Group(g) => self.operand(Kind::Paren, &g.expr, span, parent, role),
            E::Paren(p) => self.operand(Kind::Paren, &p.expr, span, parent, role),
            E::If(i) => {
                let id = leaf(self, Kind::If);
                self.expr(&i.cond, id, Role::Cond);
                self.block(&i.then_branch, id, Role::Body);
                if let Some((_, other)) = &i.else_branch {
                    self.expr(other, id, Role::Else);
                }
                id
            }
            E::Index(i) => {
                let id = leaf(self, Kind::Index);
                self.expr(&i.expr, id, Role::Receiver);
                self.expr(&i.index, id, Role::Arg(0));
                id
            }
            E::Let(l) => {
                let mut names = Vec::new();
                pat_names(&l.pat, &mut names);
                let id = leaf(self, Kind::LetCond(names));
                self.expr(&l.expr, id, Role::Init);
                id
            }
            E::Lit(l) => leaf(
                self,
                Kind::Lit(match &l.lit {
                    syn::Lit::Str(s) => Some(s.value()),
                    _ => None,
                }),
            ),
            E::Macro(m) => self.mac(&m.mac, span, parent, role),
            E::Match(m) => {
                let id = leaf(self, Kind::Match);
                self.expr(&m.expr, id, Role::Cond);
                for arm in &m.arms {
                    let mut names = Vec::new();
                    pat_names(&arm.pat, &mut names);
                    let mut matches = Vec::new();
                    pat_matches(&arm.pat, &mut matches);
                    let a = self.add(
                        Kind::Arm { names, matches },
                        arm.span().byte_range(),
                        Some(id),
                        Role::Other,
                    );
                    if let Some((_, guard)) = &arm.guard {
                        self.expr(guard, a, Role::Cond);
                    }
                    self.expr(&arm.body, a, Role::Body);
                }
                id
            }
            E::MethodCall(m) => {
                let id = leaf(self, Kind::Method(m.method.to_string()));
                self.expr(&m.receiver, id, Role::Receiver);
                for (k, a) in m.args.iter().enumerate() {
                    self.expr(a, id, Role::Arg(k));
                }
                id
            }
            E::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                leaf(self, Kind::Ident(p.path.segments[0].ident.to_string()))
            }
            E::Path(p) => leaf(self, Kind::Path(segments(&p.path))),
            E::Reference(r) => self.operand(Kind::Ref, &r.expr, span, parent, role),
            E::Return(r) => {
                let id = leaf(self, Kind::Return);
                if let Some(x) = &r.expr {
                    self.expr(x, id, Role::Operand);
                }
                id
            }
            E::Struct(s) => {
                let name = s
                    .path
                    .segments
                    .last()
                    .map(|x| x.ident.to_string())
                    .unwrap_or_default();
                let fields: Vec<(String, KeyValue)> = s
                    .fields
                    .iter()
                    .map(|f| {
                        let n = match &f.member {
                            syn::Member::Named(n) => n.to_string(),
                            syn::Member::Unnamed(i) => i.index.to_string(),
                        };
                        (n, key_value(&f.expr))
                    })
                    .collect();
                let id = leaf(self, Kind::Struct(name, fields));
                for (k, f) in s.fields.iter().enumerate() {
                    self.expr(&f.expr, id, Role::Arg(k));
                }
                if let Some(rest) = &s.rest {
                    self.expr(rest, id, Role::Other);
                }
                id
            }
            E::Try(t) => self.operand(Kind::Try, &t.expr, span, parent, role),
            E::Tuple(t) => {
                let id = leaf(self, Kind::Tuple);
                for (k, x) in t.elems.iter().enumerate() {
                    self.expr(x, id, Role::Arg(k));
                }
                id
            }
            E::Unary(u) => self.operand(Kind::Paren, &u.expr, span, parent, role),
            E::Loop(l) => {
                let id = leaf(self, Kind::Other);
                self.block(&l.body, id, Role::Body);
                id
            }
            E::While(w) => {
                let id = leaf(self, Kind::Other);
                self.expr(&w.cond, id, Role::Cond);
                self.block(&w.body, id, Role::Body);
                id
            }
            E::Break(b) => {
                let id = leaf(self, Kind::Other);
                if let Some(x) = &b.expr {
                    self.expr(x, id, Role::Operand);
                }
                id
            }
            E::Range(r) => {
                let id = leaf(self, Kind::Other);
                for x in r.start.iter().chain(r.end.iter()) {
                    self.expr(x, id, Role::Other);
                }
                id
            }
            E::Repeat(r) => {
                let id = leaf(self, Kind::Other);
                self.expr(&r.expr, id, Role::Other);
                id
            }
            _ => leaf(self, Kind::Other),
        }
    }

    fn operand(
        &mut self,
        kind: Kind,
        inner: &syn::Expr,
        span: Range<usize>,
        parent: Id,
        role: Role,
    ) -> Id {
        let id = self.add(kind, span, Some(parent), role);
        self.expr(inner, id, Role::Operand);
        id
    }

    fn mac(&mut self, m: &syn::Macro, span: Range<usize>, parent: Id, role: Role) -> Id {
        let name = m
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if name == "json" {
            let mut keys = Vec::new();
            let id = self.add(Kind::Json(Vec::new()), span, Some(parent), role);
            self.json_value(m.tokens.clone(), id, Some(&mut keys));
            self.tree.nodes[id].kind = Kind::Json(keys);
            return id;
        }
        let format = FORMAT_MACROS.contains(&name.as_str());
        let id = self.add(Kind::Macro { name }, span, Some(parent), role);
        let parsed = syn::parse::Parser::parse2(
            Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
            m.tokens.clone(),
        );
        match parsed {
            Ok(args) => {
                for (k, a) in args.iter().enumerate() {
                    self.expr(a, id, Role::Arg(k));
                }
                if format {
                    self.inline_names(&args, id);
                }
            }
            Err(_) => self.loose_exprs(m.tokens.clone(), id),
        }
        id
    }

    /// `{name}` / `{name:?}` in a format macro's string: a read of `name`.
    fn inline_names(&mut self, args: &Punctuated<syn::Expr, syn::Token![,]>, id: Id) {
        let Some(fmt) = args.iter().find_map(|a| match a {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.span().byte_range()),
            _ => None,
        }) else {
            return;
        };
        let text = &self.src[fmt.clone()];
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'{' {
                if bytes.get(i + 1) == Some(&b'{') {
                    i += 2;
                    continue;
                }
                let start = i + 1;
                let mut end = start;
                while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_')
                {
                    end += 1;
                }
                let name = &text[start..end];
                let first = name.chars().next();
                if first.is_some_and(|c| c.is_alphabetic() || c == '_')
                    && matches!(bytes.get(end), Some(b'}') | Some(b':'))
                {
                    let at = fmt.start + start;
                    self.add(
                        Kind::Ident(name.to_string()),
                        at..at + name.len(),
                        Some(id),
                        Role::Other,
                    );
                }
                i = end;
            } else {
                i += 1;
            }
        }
    }

    /// The arguments of a macro of another grammar: every chunk between top-level `,`, `;`,
    /// `=>` (and after a lone `=`) that parses as an expression.
    fn loose_exprs(&mut self, tokens: TokenStream, id: Id) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        let mut chunk: Vec<TokenTree> = Vec::new();
        let flush = |b: &mut Self, chunk: &mut Vec<TokenTree>| {
            if !chunk.is_empty() {
                let stream: TokenStream = chunk.drain(..).collect();
                if let Ok(e) = syn::parse2::<syn::Expr>(stream) {
                    b.expr(&e, id, Role::Other);
                }
            }
        };
        let mut i = 0;
        while i < tokens.len() {
            let t = &tokens[i];
            let p = |k: usize, c: char| matches!(tokens.get(k), Some(TokenTree::Punct(p)) if p.as_char() == c);
            match t {
                TokenTree::Punct(x) if x.as_char() == ',' || x.as_char() == ';' => {
                    flush(self, &mut chunk)
                }
                TokenTree::Punct(x) if x.as_char() == '=' && x.spacing() == Spacing::Joint && p(i + 1, '>') => {
                    flush(self, &mut chunk);
                    i += 1;
                }
                TokenTree::Punct(x)
                    if x.as_char() == '='
                        && x.spacing() == Spacing::Alone
                        && !(i > 0
                            && matches!(&tokens[i - 1], TokenTree::Punct(q) if q.spacing() == Spacing::Joint)) =>
                {
                    chunk.clear(); // `pattern = future` (select!): the future is the expression
                }
                _ => chunk.push(t.clone()),
            }
            i += 1;
        }
        flush(self, &mut chunk);
    }

    /// A `json!` value: an object's keys (top level) and every Rust expression inside.
    fn json_value(
        &mut self,
        tokens: TokenStream,
        id: Id,
        keys: Option<&mut Vec<(String, KeyValue)>>,
    ) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        if let [TokenTree::Group(g)] = tokens.as_slice() {
            match g.delimiter() {
                Delimiter::Brace => return self.json_object(g.stream(), id, keys),
                Delimiter::Bracket => {
                    for el in split_commas(g.stream()) {
                        self.json_value(el, id, None);
                    }
                    return;
                }
                _ => {}
            }
        }
        let stream: TokenStream = tokens.into_iter().collect();
        if let Ok(e) = syn::parse2::<syn::Expr>(stream) {
            self.expr(&e, id, Role::Other);
        }
    }

    fn json_object(
        &mut self,
        stream: TokenStream,
        id: Id,
        mut keys: Option<&mut Vec<(String, KeyValue)>>,
    ) {
        for entry in split_commas(stream) {
            let tokens: Vec<TokenTree> = entry.into_iter().collect();
            let Some(colon) = tokens
                .iter()
                .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ':'))
            else {
                continue;
            };
            let key: TokenStream = tokens[..colon].iter().cloned().collect();
            let value: TokenStream = tokens[colon + 1..].iter().cloned().collect();
            if let Some(keys) = keys.as_deref_mut()
                && let Ok(syn::Lit::Str(k)) = syn::parse2::<syn::Lit>(key)
            {
                let given = match syn::parse2::<syn::Expr>(value.clone()) {
                    Ok(e) => key_value(&e),
                    Err(_) => KeyValue::Other,
                };
                keys.push((k.value(), given));
            }
            self.json_value(value, id, None);
        }
    }
}

/// `#[cfg(test)] mod ..` and `#[test] fn ..`.
fn item_is_test(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Mod(m) => &m.attrs,
        syn::Item::Fn(f) => &f.attrs,
        _ => return false,
    };
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg")
                && quote::ToTokens::to_token_stream(&a.meta)
                    .to_string()
                    .replace(' ', "")
                    == "cfg(test)")
    })
}

fn split_commas(stream: TokenStream) -> Vec<TokenStream> {
    let mut out = Vec::new();
    let mut cur: Vec<TokenTree> = Vec::new();
    for t in stream {
        if matches!(&t, TokenTree::Punct(p) if p.as_char() == ',') {
            out.push(cur.drain(..).collect());
        } else {
            cur.push(t);
        }
    }
    if !cur.is_empty() {
        out.push(cur.into_iter().collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(src: &str) -> Tree {
        build(src, &syn::parse_file(src).unwrap())
    }

    #[test]
    fn json_keys_macro_arguments_and_inline_names() {
        let src = r#"
const UPDATE: &str = "session/update";
fn f(out: &Sender, sid: &str) {
    let m = json!({"jsonrpc": "2.0", "method": UPDATE, "params": {"sessionId": sid}});
    println!("{m} {}", 1);
    tokio::select! { done = run(&out) => done, _ = cancel.notified() => () }
}
"#;
        let t = tree(src);
        assert_eq!(t.consts, vec![("UPDATE".into(), "session/update".into())]);
        let json = t
            .nodes
            .iter()
            .find_map(|n| match &n.kind {
                Kind::Json(k) => Some(k.clone()),
                _ => None,
            })
            .unwrap();
        assert_eq!(json[1], ("method".into(), KeyValue::Path(vec!["UPDATE".into()])));
        let idents: Vec<&str> = t
            .nodes
            .iter()
            .filter_map(|n| match &n.kind {
                Kind::Ident(i) => Some(i.as_str()),
                _ => None,
            })
            .collect();
        // `sid` inside json!, `m` inline in println!, `run` and `out` inside select!
        for name in ["sid", "m", "run", "out", "cancel"] {
            assert!(idents.contains(&name), "{name}: {idents:?}");
        }
        let m = t
            .nodes
            .iter()
            .position(|n| matches!(&n.kind, Kind::Ident(i) if i == "m") && n.role == Role::Other)
            .unwrap();
        assert_eq!(&src[t.nodes[m].span.clone()], "m");
    }
}
