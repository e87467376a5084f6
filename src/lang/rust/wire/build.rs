//! Builds a file's [`Tree`] from its `syn` tree: items, statements, expressions (macro
//! arguments in `macros.rs`).

use super::tree::{FnInfo, Id, KeyValue, Kind, Node, Param, Role, Tree, segments, type_text};
use std::ops::Range;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

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

/// What an expression gives a key: a string literal, a path (through `.into()`,
/// `.to_string()`, `.to_owned()`, `String::from(..)`), else `Other`.
pub(super) fn key_value(e: &syn::Expr) -> KeyValue {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) => KeyValue::Str(s.value()),
        syn::Expr::Path(p) if p.qself.is_none() => KeyValue::Path(segments(&p.path)),
        syn::Expr::Reference(r) => key_value(&r.expr),
        syn::Expr::Paren(p) => key_value(&p.expr),
        syn::Expr::MethodCall(m)
            if m.args.is_empty()
                && ["into", "to_string", "to_owned"].contains(&&*m.method.to_string()) =>
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

pub(super) struct Builder<'s> {
    pub(super) src: &'s str,
    pub(super) tree: Tree,
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
    pub(super) fn add(
        &mut self,
        kind: Kind,
        span: Range<usize>,
        parent: Option<Id>,
        role: Role,
    ) -> Id {
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
                let ty = super::super::syntax::type_name(&i.self_ty);
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
            generics: sig
                .generics
                .type_params()
                .map(|p| p.ident.to_string())
                .collect(),
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

    pub(super) fn expr(&mut self, e: &syn::Expr, parent: Id, role: Role) -> Id {
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
        assert_eq!(
            json[1],
            ("method".into(), KeyValue::Path(vec!["UPDATE".into()]))
        );
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
