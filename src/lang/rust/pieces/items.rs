//! The item-level pieces of a Rust file: where the `mod` and `use` lines of the runtime
//! module go (after the file's leading `mod`/`use` items), and the path inserted code names
//! the module by.

use super::{Builder, Input};
use crate::lang::parts::CHECK_SENDS;
use crate::lang::pieces::at_end_of_file;
use crate::lang::rust::Parsed;
use crate::lang::rust::modules::{Modules, RootKind};
use crate::lang::rust::runtime;
use crate::render::reindent;
use crate::source::{line_end_after, line_start};
use syn::spanned::Spanned;

/// The path inserted code uses for the runtime module from a file.
pub fn module_path(modules: &Modules, file: usize, lib_shared: bool) -> String {
    match modules.root_of(file).map(|r| modules.roots[r].kind) {
        Some(RootKind::Bin) if lib_shared => format!(
            "{}::{}",
            modules.lib_name.as_deref().unwrap_or("crate"),
            runtime::MODULE
        ),
        _ => format!("crate::{}", runtime::MODULE),
    }
}

/// The end of the last leading `mod`/`use`/`extern crate` item with `pred`, or where the first
/// other item starts: (offset, insert as a new line after it).
pub(super) fn item_anchor(
    file: &Parsed,
    pred: impl Fn(&syn::Item) -> bool,
) -> Option<(usize, bool)> {
    let ast = file.ast.as_ref()?;
    let last = ast.items.iter().filter(|i| pred(i)).last()?;
    Some((
        line_end_after(&file.file.text, last.span().byte_range().end),
        true,
    ))
}

/// The `mod acp_progress;` and `use ..acp_progress::..;` lines apply inserts.
pub(super) fn is_ours(item: &syn::Item) -> bool {
    match item {
        syn::Item::Mod(m) => m.ident == runtime::MODULE && m.content.is_none(),
        syn::Item::Use(u) => quote::ToTokens::to_token_stream(&u.tree)
            .to_string()
            .contains(runtime::MODULE),
        _ => false,
    }
}

/// Where the file's first item starts (above its attributes and doc comments).
pub(super) fn first_item(file: &Parsed) -> (usize, bool) {
    match file
        .ast
        .as_ref()
        .and_then(|a| a.items.iter().find(|i| !is_ours(i)))
    {
        Some(item) => (line_start(&file.file.text, item_start(item)), false),
        None => (file.file.text.len(), true),
    }
}

pub(super) fn item_start(item: &syn::Item) -> usize {
    let attrs: &[syn::Attribute] = match item {
        syn::Item::Fn(f) => &f.attrs,
        syn::Item::Struct(s) => &s.attrs,
        syn::Item::Use(u) => &u.attrs,
        syn::Item::Mod(m) => &m.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Enum(e) => &e.attrs,
        syn::Item::Const(c) => &c.attrs,
        syn::Item::Static(s) => &s.attrs,
        syn::Item::Trait(t) => &t.attrs,
        syn::Item::Type(t) => &t.attrs,
        syn::Item::Macro(m) => &m.attrs,
        _ => &[],
    };
    attrs
        .iter()
        .filter(|a| matches!(a.style, syn::AttrStyle::Outer))
        .map(|a| a.span().byte_range().start)
        .chain(std::iter::once(item.span().byte_range().start))
        .min()
        .unwrap_or(0)
}

pub(super) fn declares_module(file: &Parsed) -> Option<usize> {
    file.ast.as_ref()?.items.iter().find_map(|i| match i {
        syn::Item::Mod(m) if m.ident == runtime::MODULE && m.content.is_none() => {
            Some(m.ident.span().start().line)
        }
        _ => None,
    })
}

/// The line of a `use ..acp_progress::<name> ..;` item.
pub(super) fn imports(file: &Parsed, name: &str) -> Option<usize> {
    file.ast.as_ref()?.items.iter().find_map(|i| match i {
        syn::Item::Use(u) => {
            let text = quote::ToTokens::to_token_stream(&u.tree)
                .to_string()
                .replace(' ', "");
            (text.contains(&format!("{}::{name}", runtime::MODULE)))
                .then(|| u.use_token.span.start().line)
        }
        _ => None,
    })
}

/// The `use` line that names one of the runtime's traits (inserted after the file's last
/// `use`, else after its `mod` lines, else before its first item).
pub(super) fn use_line(
    b: &mut Builder,
    input: &Input,
    file: usize,
    name: &str,
    label: &'static str,
) {
    let p = &input.files[file];
    let path = module_path(input.modules, file, input.lib_shared);
    let (offset, _) = item_anchor(p, |i| matches!(i, syn::Item::Use(_)))
        .or_else(|| item_anchor(p, |i| matches!(i, syn::Item::Mod(m) if m.content.is_none())))
        .unwrap_or_else(|| first_item(p));
    let eol = b.eol(file);
    let text = at_end_of_file(
        &p.file.text,
        offset,
        format!("use {path}::{name} as _;{eol}"),
        eol,
    );
    b.push(CHECK_SENDS, label, file, offset, text, imports(p, name));
}

/// The runtime module as apply writes it into `f`: in its style, sealed.
pub fn module_body(module_text: &str, f: &crate::source::SourceFile) -> String {
    crate::lang::seal::seal(&reindent(
        module_text,
        "",
        &f.style().indent_unit,
        f.style().eol,
    ))
}
