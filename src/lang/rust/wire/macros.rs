//! What macro arguments hold, in the tree: format macros' arguments (and the names their
//! format string reads inline, `{line}`), `json!` objects' keys and values, and any other
//! macro's arguments that parse as expressions (`tokio::select!` branches, `vec![..]`).

use super::build::{Builder, key_value};
use super::tree::{Id, KeyValue, Kind, Role};
use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use std::ops::Range;
use syn::punctuated::Punctuated;

const FORMAT_MACROS: &[&str] = &[
    "print",
    "println",
    "eprint",
    "eprintln",
    "write",
    "writeln",
    "format",
    "format_args",
    "panic",
    "trace",
    "debug",
    "info",
    "warn",
    "error",
];

impl Builder<'_> {
    pub(super) fn mac(&mut self, m: &syn::Macro, span: Range<usize>, parent: Id, role: Role) -> Id {
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
                while end < bytes.len()
                    && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_')
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
                TokenTree::Punct(x)
                    if x.as_char() == '=' && x.spacing() == Spacing::Joint && p(i + 1, '>') =>
                {
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
