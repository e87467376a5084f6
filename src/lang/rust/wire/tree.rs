//! A flat tree of one file for following values: every function, expression, statement and
//! binding, with a parent link and the role each plays in its parent (receiver, argument,
//! initializer, tail, ...), built by `build.rs` (`macros.rs`: what macro arguments hold).

use std::ops::Range;

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
    /// The fn's type parameters (`T` of `fn send<T: Serialize>(m: &T)`).
    pub generics: Vec<String>,
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
    Macro {
        name: String,
    },
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

pub fn segments(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}
