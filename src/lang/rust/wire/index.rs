//! The crate as the follow sees it: one [`Tree`] per module file, the string constants, and
//! the questions asked of them — which fn a call reaches, who calls a fn, where a binding is
//! read, what a binding's declared type is, whether an expression names a protocol method.

use super::tree::{self, Id, KeyValue, Kind, Role, Tree};
use crate::lang::rust::Parsed;
use crate::lang::rust::modules::Modules;
use crate::lang::rust::syntax::Collected;
use std::collections::HashMap;

pub struct Index<'a> {
    pub files: &'a [Parsed],
    /// Per file: its tree (`None` for files the crate does not own, and the runtime module).
    pub trees: Vec<Option<Tree>>,
    pub consts: HashMap<String, String>,
    /// Every fn: (file, node).
    pub fns: Vec<(usize, Id)>,
    pub collected: &'a Collected,
    pub modules: &'a Modules,
}

/// A node of a file.
pub type At = (usize, Id);

impl<'a> Index<'a> {
    pub fn new(
        files: &'a [Parsed],
        owned: &dyn Fn(usize) -> bool,
        collected: &'a Collected,
        modules: &'a Modules,
    ) -> Index<'a> {
        let mut trees = Vec::new();
        let mut consts = HashMap::new();
        let mut fns = Vec::new();
        for (i, p) in files.iter().enumerate() {
            let t = match (&p.ast, owned(i)) {
                (Some(ast), true) => Some(super::build::build(&p.file.text, ast)),
                _ => None,
            };
            if let Some(t) = &t {
                consts.extend(t.consts.iter().cloned());
                for (id, n) in t.nodes.iter().enumerate() {
                    if matches!(n.kind, Kind::Fn(_)) {
                        fns.push((i, id));
                    }
                }
            }
            trees.push(t);
        }
        Index {
            files,
            trees,
            consts,
            fns,
            collected,
            modules,
        }
    }

    pub fn tree(&self, file: usize) -> &Tree {
        self.trees[file].as_ref().expect("a file of the crate")
    }

    pub fn node(&self, at: At) -> &tree::Node {
        &self.tree(at.0).nodes[at.1]
    }

    pub fn text(&self, at: At) -> &str {
        &self.files[at.0].file.text[self.node(at).span.clone()]
    }

    pub fn line(&self, at: At) -> usize {
        self.files[at.0].file.line_of(self.node(at).span.start)
    }

    pub fn fn_info(&self, at: At) -> &tree::FnInfo {
        self.tree(at.0).fn_info(at.1).expect("a fn node")
    }

    /// Whether a key value names the protocol method (the string, or a constant holding it).
    pub fn names(&self, v: &KeyValue, method: &str) -> bool {
        match v {
            KeyValue::Str(s) => s == method,
            KeyValue::Path(p) => p
                .last()
                .and_then(|last| self.consts.get(last))
                .is_some_and(|s| s == method),
            KeyValue::Other => false,
        }
    }

    /// Whether an expression node names the method.
    pub fn node_names(&self, at: At, method: &str) -> bool {
        match &self.node(at).kind {
            Kind::Lit(Some(s)) => s == method,
            Kind::Ident(i) => self.names(&KeyValue::Path(vec![i.clone()]), method),
            Kind::Path(p) => self.names(&KeyValue::Path(p.clone()), method),
            Kind::Ref | Kind::Paren => self
                .tree(at.0)
                .child(at.1, Role::Operand)
                .is_some_and(|c| self.node_names((at.0, c), method)),
            Kind::Method(m) if ["as_str", "as_ref", "to_string", "into"].contains(&m.as_str()) => {
                self.tree(at.0)
                    .child(at.1, Role::Receiver)
                    .is_some_and(|c| self.node_names((at.0, c), method))
            }
            _ => false,
        }
    }

    /// The fns named `name` among the crate's free fns (`free`) or the methods of `ty`.
    fn fns_named(&self, name: &str, ty: Option<&str>) -> Vec<At> {
        self.fns
            .iter()
            .copied()
            .filter(|at| {
                let f = self.fn_info(*at);
                f.name == name && f.self_ty.as_deref() == ty
            })
            .collect()
    }

    fn is_crate_type(&self, name: &str) -> bool {
        self.fns
            .iter()
            .any(|at| self.fn_info(*at).self_ty.as_deref() == Some(name))
    }

    /// The crate fns a call can reach (`f(..)`, `module::f(..)`, `Type::f(..)`, `Self::f(..)`).
    pub fn resolve_call(&self, at: At) -> Vec<At> {
        let t = self.tree(at.0);
        let Some(callee) = t.child(at.1, Role::Callee) else {
            return Vec::new();
        };
        let segs: Vec<String> = match &t.nodes[callee].kind {
            Kind::Ident(i) => vec![i.clone()],
            Kind::Path(p) => p.clone(),
            _ => return Vec::new(),
        };
        self.resolve_path(at, &segs)
    }

    /// A path naming a fn, as a call or a value.
    pub fn resolve_path(&self, at: At, segs: &[String]) -> Vec<At> {
        let Some((name, prefix)) = segs.split_last() else {
            return Vec::new();
        };
        let prefix: Vec<&String> = prefix
            .iter()
            .filter(|s| !matches!(s.as_str(), "crate" | "self" | "super"))
            .collect();
        if let Some(last) = prefix.last() {
            let ty = if last.as_str() == "Self" {
                self.tree(at.0)
                    .fn_of(at.1)
                    .and_then(|f| self.fn_info((at.0, f)).self_ty.clone())
            } else if self.is_crate_type(last) {
                Some(last.to_string())
            } else {
                None
            };
            if let Some(ty) = ty {
                return self.fns_named(name, Some(&ty));
            }
            let module: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
            return self
                .fns_named(name, None)
                .into_iter()
                .filter(|f| {
                    self.modules
                        .path_of(f.0)
                        .is_some_and(|p| p.ends_with(&module))
                })
                .collect();
        }
        let all = self.fns_named(name, None);
        let here: Vec<At> = all.iter().copied().filter(|f| f.0 == at.0).collect();
        if here.is_empty() { all } else { here }
    }

    /// The crate methods a method call reaches: by its receiver's type (`self` in an impl, a
    /// binding or field declared with a type of the crate), or, `lenient`, by a name only one
    /// type of the crate defines.
    pub fn resolve_method(&self, at: At, lenient: bool) -> Vec<At> {
        let t = self.tree(at.0);
        let Kind::Method(name) = &t.nodes[at.1].kind else {
            return Vec::new();
        };
        let candidates: Vec<At> = self
            .fns
            .iter()
            .copied()
            .filter(|f| {
                let i = self.fn_info(*f);
                i.name == *name && i.self_ty.is_some()
            })
            .collect();
        if candidates.is_empty() {
            return Vec::new();
        }
        let receiver = t.child(at.1, Role::Receiver);
        let words = receiver
            .map(|r| self.type_words((at.0, r)))
            .unwrap_or_default();
        let typed: Vec<At> = candidates
            .iter()
            .copied()
            .filter(|f| {
                let ty = self.fn_info(*f).self_ty.clone().unwrap_or_default();
                words.contains(&ty)
            })
            .collect();
        if !typed.is_empty() || !lenient {
            return typed;
        }
        let types: std::collections::BTreeSet<String> = candidates
            .iter()
            .filter_map(|f| self.fn_info(*f).self_ty.clone())
            .collect();
        if types.len() == 1 {
            candidates
        } else {
            Vec::new()
        }
    }

    /// The words of an expression's type as far as the code declares it: `self` in an impl,
    /// a parameter's or a `let`'s type (or its initializer's text), a field's declared type.
    pub fn type_words(&self, at: At) -> Vec<String> {
        let t = self.tree(at.0);
        let text = match &t.nodes[at.1].kind {
            Kind::Ident(name) if name == "self" => t
                .fn_of(at.1)
                .and_then(|f| self.fn_info((at.0, f)).self_ty.clone()),
            Kind::Ident(name) => self.declared_type(at, name),
            Kind::Field(field) => {
                let base = t.child(at.1, Role::Operand);
                let owner = base.map(|b| self.type_words((at.0, b))).unwrap_or_default();
                self.collected
                    .structs
                    .iter()
                    .filter(|(_, s)| owner.contains(&s.ident.to_string()))
                    .flat_map(|(_, s)| s.fields.iter())
                    .find(|f| f.ident.as_ref().is_some_and(|i| i == field))
                    .map(|f| tree::type_text(&f.ty))
            }
            Kind::Paren | Kind::Ref | Kind::Try | Kind::Await => t
                .child(at.1, Role::Operand)
                .map(|c| self.type_words((at.0, c)).join(" ")),
            Kind::Method(m)
                if ["clone", "as_ref", "lock", "unwrap", "read", "write"].contains(&m.as_str()) =>
            {
                t.child(at.1, Role::Receiver)
                    .map(|c| self.type_words((at.0, c)).join(" "))
            }
            _ => None,
        };
        let expanded = self.collected.expand(&text.unwrap_or_default());
        expanded
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// Where a name read at `at` is bound: a parameter of an enclosing fn or closure, or a
    /// `let` before it (the innermost). `None`: not a local (a fn, constant, static, module).
    pub fn binding(&self, at: At, name: &str) -> Option<Binding> {
        let t = self.tree(at.0);
        let pos = t.nodes[at.1].span.start;
        let mut best: Option<(usize, Binding)> = None;
        let mut from = at.1;
        for a in t.ancestors(at.1) {
            let n = &t.nodes[a];
            let came_from = std::mem::replace(&mut from, a);
            let in_body = t.nodes[came_from].role == Role::Body;
            match &n.kind {
                Kind::Block => {
                    for &c in &n.children {
                        let cn = &t.nodes[c];
                        if cn.span.end > pos {
                            break;
                        }
                        if let Kind::Local { names, ty, .. } = &cn.kind
                            && names.iter().any(|x| x == name)
                            && best.as_ref().is_none_or(|(s, _)| cn.span.start > *s)
                        {
                            best = Some((
                                cn.span.start,
                                Binding::Local {
                                    node: c,
                                    ty: ty.clone(),
                                },
                            ));
                        }
                    }
                    if best.is_some() {
                        return best.map(|(_, b)| b);
                    }
                }
                Kind::Closure(params) => {
                    if let Some(p) = params.iter().find(|p| p.name == name) {
                        return Some(Binding::Param {
                            scope: a,
                            ty: p.ty.clone(),
                        });
                    }
                }
                Kind::Fn(f) => {
                    return f
                        .params
                        .iter()
                        .find(|p| p.name == name)
                        .map(|p| Binding::Param {
                            scope: a,
                            ty: p.ty.clone(),
                        });
                }
                Kind::Arm { names, .. } if names.iter().any(|x| x == name) => {
                    return Some(Binding::Pattern { scope: a });
                }
                Kind::For(names) if in_body && names.iter().any(|x| x == name) => {
                    return Some(Binding::Pattern { scope: a });
                }
                // `if let` / `while let`: the condition's bindings hold in the body
                Kind::If | Kind::Other if in_body => {
                    let binds = t.child(a, Role::Cond).is_some_and(|c| {
                        t.descendants(c).into_iter().any(|d| {
                            matches!(&t.nodes[d].kind, Kind::LetCond(ns) if ns.iter().any(|x| x == name))
                        })
                    });
                    if binds {
                        return Some(Binding::Pattern { scope: a });
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// A binding's declared type text, or its initializer's text (`let x = Outbox::new()`).
    pub fn declared_type(&self, at: At, name: &str) -> Option<String> {
        match self.binding(at, name)? {
            Binding::Param { ty, .. } => ty,
            Binding::Local { node, ty } => ty.or_else(|| {
                let t = self.tree(at.0);
                t.child(node, Role::Init)
                    .map(|i| self.text((at.0, i)).to_string())
            }),
            Binding::Pattern { .. } => None,
        }
    }

    /// The reads of `name` bound at `binding` (a `let`, a `for` loop's pattern, or a
    /// fn/closure parameter when `binding` is that scope), after it, where no other binding
    /// of the name shadows it.
    pub fn reads(&self, file: usize, binding: Id, name: &str) -> Vec<Id> {
        let t = self.tree(file);
        let n = &t.nodes[binding];
        let (scope, after) = match n.kind {
            Kind::Local { .. } => (n.parent.unwrap_or(binding), n.span.end),
            Kind::For(_) => match t.child(binding, Role::Body) {
                Some(b) => (b, t.nodes[b].span.start),
                None => return Vec::new(),
            },
            _ => (binding, n.span.start),
        };
        t.descendants(scope)
            .into_iter()
            .filter(|&c| matches!(&t.nodes[c].kind, Kind::Ident(x) if x == name))
            .filter(|&c| t.nodes[c].span.start >= after)
            .filter(|&c| {
                // a struct literal's field name or a path tail is no read; a shadowing
                // binding between hides it
                match self.binding((file, c), name) {
                    Some(Binding::Local { node, .. }) => node == binding,
                    Some(Binding::Param { scope, .. }) | Some(Binding::Pattern { scope }) => {
                        scope == binding
                    }
                    None => false,
                }
            })
            .collect()
    }

    /// Every call of a fn in the crate.
    pub fn callers(&self, f: At) -> Vec<At> {
        let name = self.fn_info(f).name.clone();
        let mut out = Vec::new();
        for (file, t) in self.trees.iter().enumerate() {
            let Some(t) = t else { continue };
            if !self.files[file].file.text.contains(name.as_str()) {
                continue;
            }
            for (id, n) in t.nodes.iter().enumerate() {
                let reaches = match &n.kind {
                    Kind::Call => self.resolve_call((file, id)),
                    Kind::Method(m) if *m == name => self.resolve_method((file, id), true),
                    _ => continue,
                };
                if reaches.contains(&f) {
                    out.push((file, id));
                }
            }
        }
        out
    }

    /// The fn node of a fn's parameter `k` as a call passes it (methods: `self` first).
    pub fn param_of(&self, call: At, f: At, role: Role) -> Option<String> {
        let Role::Arg(k) = role else { return None };
        let info = self.fn_info(f);
        let has_self = info.params.first().is_some_and(|p| p.name == "self");
        let k = match (&self.node(call).kind, has_self) {
            (Kind::Method(_), true) => k + 1,
            _ => k,
        };
        info.params
            .get(k)
            .map(|p| p.name.clone())
            .filter(|n| !n.is_empty())
    }

    /// A fn's module path from the crate root (`crate::turn::handle_prompt`).
    pub fn qualified(&self, f: At) -> String {
        let info = self.fn_info(f);
        info.qualified()
    }
}

/// Where a local name is bound.
#[derive(Debug, Clone)]
pub enum Binding {
    /// A fn or closure parameter (`scope` is the fn or closure).
    Param {
        scope: Id,
        ty: Option<String>,
    },
    Local {
        node: Id,
        ty: Option<String>,
    },
    /// A match arm, `for`, `if let` pattern.
    Pattern {
        scope: Id,
    },
}
