//! Every edit apply makes, as `Part`s with a presence check each: the runtime module and its
//! `mod` line, the emitter in front of each SDK send (and its `use` line), the start of each
//! prompt handler, the turn end around each response, and tokio's `time` feature. Apply plans
//! the parts that are missing; verify reports on all of them — one computation.

use super::handlers::{Collected, Handler, ScopeKind, Style};
use super::manifest::Manifest;
use super::modules::{Modules, RootKind};
use super::scan::{RespondSite, SendSite};
use super::{Parsed, runtime};
use crate::error::{Error, Result};
use crate::lang::parts::{
    CHECK_BOUND, CHECK_RUNTIME, CHECK_SENDS, CHECK_START, CHECK_TURN_END, Part, RUNTIME_LABEL,
};
use crate::render::reindent;
use crate::source::{indent_at, line_end_after, line_start};
use std::collections::BTreeSet;
use std::ops::Range;
use syn::spanned::Spanned;

/// The runtime module holds the completion (in its emitter) and the text hold.
const CHECK_RUNTIME_MODULE: &[&str] = &["runtime", "hook.heartbeat", "hook.complete", "coalescing"];
const CHECK_HEARTBEAT: &[&str] = &["hook.heartbeat"];

/// A respond call that ends a prompt's turn, and the binding its `turn_end` reads.
#[derive(Debug, Clone)]
pub struct TurnEnd {
    pub file: usize,
    pub site: RespondSite,
    /// The handler whose `begin` binds `acp_turn` here (lexical), or `None` (a `turn_of` does).
    pub handler: Option<usize>,
    /// For a `turn_of`: the scope's body to start with it and the session expression.
    pub lookup: Option<Lookup>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    pub file: usize,
    /// The scope's span (to dedupe).
    pub scope: Range<usize>,
    pub kind: ScopeKind,
    pub key: String,
}

/// What pieces are built from.
pub struct Input<'a> {
    pub files: &'a [Parsed],
    pub collected: &'a Collected,
    pub modules: &'a Modules,
    pub handlers: &'a [Handler],
    /// SDK sends per file.
    pub sends: &'a [(usize, Vec<SendSite>)],
    pub turn_ends: &'a [TurnEnd],
    /// Handlers (by index) whose responder leaves the handler (`open` instead of `begin`).
    pub escaping: &'a BTreeSet<usize>,
    /// Index of the manifest in `files`.
    pub manifest: Option<(usize, &'a Manifest)>,
    /// The runtime module's text as apply writes it.
    pub module_text: &'a str,
    /// Where each crate root's module lives: (root index, file index in `files`).
    pub module_files: &'a [(usize, usize)],
    /// Whether the runtime is declared `pub` in the library for binaries to use.
    pub lib_shared: bool,
}

struct Builder<'a> {
    files: &'a [Parsed],
    parts: Vec<Part>,
}

impl Builder<'_> {
    fn src(&self, file: usize) -> &str {
        &self.files[file].file.text
    }

    fn eol(&self, file: usize) -> &'static str {
        self.files[file].file.style.eol
    }

    fn push(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        file: usize,
        offset: usize,
        text: String,
        present: Option<usize>,
    ) {
        let present_at = present.and_then(|_| exact_at(self.src(file), offset, &text));
        let source = &self.files[file].file;
        let part = Part::insertion(source, file, checks, label, offset, text, present);
        self.parts.push(part.present_at(present_at));
    }

    fn unsupported(&self, file: usize, line: usize, message: impl Into<String>) -> Error {
        Error::Unsupported {
            file: self.files[file].file.rel.clone(),
            line,
            message: message.into(),
        }
    }
}

/// Where a present piece's text stands, when it is exactly at `offset` and occurs more than
/// once in the file (`.acp_progress()` on every send, a wrapper's `}).await`, the ` }` closing
/// braces around an expression body): revert takes it out there. A unique text is found by
/// searching around its line.
fn exact_at(src: &str, offset: usize, text: &str) -> Option<usize> {
    let here = !text.is_empty() && src.get(offset..).is_some_and(|rest| rest.starts_with(text));
    (here && src.matches(text).nth(1).is_some()).then_some(offset)
}

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
fn item_anchor(file: &Parsed, pred: impl Fn(&syn::Item) -> bool) -> Option<(usize, bool)> {
    let ast = file.ast.as_ref()?;
    let last = ast.items.iter().filter(|i| pred(i)).last()?;
    Some((
        line_end_after(&file.file.text, last.span().byte_range().end),
        true,
    ))
}

/// The `mod acp_progress;` and `use ..acp_progress::..;` lines apply inserts.
fn is_ours(item: &syn::Item) -> bool {
    match item {
        syn::Item::Mod(m) => m.ident == runtime::MODULE && m.content.is_none(),
        syn::Item::Use(u) => quote::ToTokens::to_token_stream(&u.tree)
            .to_string()
            .contains(runtime::MODULE),
        _ => false,
    }
}

/// Where the file's first item starts (above its attributes and doc comments).
fn first_item(file: &Parsed) -> (usize, bool) {
    match file
        .ast
        .as_ref()
        .and_then(|a| a.items.iter().find(|i| !is_ours(i)))
    {
        Some(item) => (line_start(&file.file.text, item_start(item)), false),
        None => (file.file.text.len(), true),
    }
}

fn item_start(item: &syn::Item) -> usize {
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

fn declares_module(file: &Parsed) -> Option<usize> {
    file.ast.as_ref()?.items.iter().find_map(|i| match i {
        syn::Item::Mod(m) if m.ident == runtime::MODULE && m.content.is_none() => {
            Some(m.ident.span().start().line)
        }
        _ => None,
    })
}

/// The line of a `use ..acp_progress::<name> ..;` item.
fn imports(file: &Parsed, name: &str) -> Option<usize> {
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
fn use_line(b: &mut Builder, input: &Input, file: usize, name: &str, label: &'static str) {
    let p = &input.files[file];
    let path = module_path(input.modules, file, input.lib_shared);
    let (offset, _) = item_anchor(p, |i| matches!(i, syn::Item::Use(_)))
        .or_else(|| item_anchor(p, |i| matches!(i, syn::Item::Mod(m) if m.content.is_none())))
        .unwrap_or_else(|| first_item(p));
    let eol = b.eol(file);
    let text = fix_missing_final_newline(
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
        &f.style.indent_unit,
        f.style.eol,
    ))
}

/// Builds every part.
pub fn build(input: &Input) -> Result<Vec<Part>> {
    let mut b = Builder {
        files: input.files,
        parts: Vec::new(),
    };

    // The runtime module, whole: current, replaced when out of date, or created.
    for &(_, mfile) in input.module_files {
        let f = &input.files[mfile].file;
        let body = module_body(input.module_text, f);
        if f.exists && f.text == body {
            b.push(CHECK_RUNTIME_MODULE, RUNTIME_LABEL, mfile, 0, body, Some(1));
        } else {
            let replaces = if f.exists { f.text.len() } else { 0 };
            b.parts.push(Part::runtime(
                mfile,
                CHECK_RUNTIME_MODULE,
                body,
                false,
                replaces,
            ));
        }
    }

    // `mod acp_progress;` in each root that owns the module.
    for &(root, _) in input.module_files {
        let rfile = input.modules.roots[root].file;
        let p = &input.files[rfile];
        let vis = if input.lib_shared && input.modules.roots[root].kind == RootKind::Lib {
            "pub "
        } else {
            ""
        };
        let attr = if p.file.rel.contains("src/bin/") {
            format!("#[path = \"../{}\"]{}", runtime::FILE, b.eol(rfile))
        } else {
            String::new()
        };
        let (offset, after) =
            item_anchor(p, |i| matches!(i, syn::Item::Mod(m) if m.content.is_none()))
                .or_else(|| {
                    item_anchor(p, |i| {
                        matches!(i, syn::Item::Use(_) | syn::Item::ExternCrate(_))
                    })
                })
                .unwrap_or_else(|| first_item(p));
        let eol = b.eol(rfile);
        let line = format!("{attr}{vis}mod {};{eol}", runtime::MODULE);
        // before the first item: a blank line between
        let text = if after { line } else { format!("{line}{eol}") };
        let text = fix_missing_final_newline(&p.file.text, offset, text, eol);
        b.push(
            CHECK_RUNTIME,
            "runtime module declared",
            rfile,
            offset,
            text,
            declares_module(p),
        );
    }

    // The emitter in front of every SDK send, and the `use` line that names it.
    for (file, sends) in input.sends {
        if sends.is_empty() {
            continue;
        }
        // a fully qualified send names the emitter's trait by its path: no import for it
        if sends.iter().any(|s| s.ufcs.is_none()) {
            use_line(&mut b, input, *file, "AcpEmit", "emitter import");
        }
        let path = module_path(input.modules, *file, input.lib_shared);
        for s in sends {
            let Some(u) = &s.ufcs else {
                b.push(
                    CHECK_SENDS,
                    "emitter",
                    *file,
                    s.dot,
                    ".acp_progress()".into(),
                    s.wrapped.then_some(s.line),
                );
                continue;
            };
            // fully qualified: the connection argument becomes its emitter (itself a
            // `Client`), and a qualified self type the emitter's type
            let f = &input.files[*file].file;
            let at = |present: bool, offset: usize| present.then(|| f.line_of(offset));
            let (a, z) = u.arg;
            match &u.qself {
                None => {
                    // the emitter's `Self` inferred from the argument, as the call's is
                    let w = u.arg_wrapped;
                    let text = format!("&{path}::AcpEmit::acp_progress(");
                    b.push(CHECK_SENDS, "emitter", *file, a, text, at(w, a));
                    b.push(CHECK_SENDS, "emitter", *file, z, ")".into(), at(w, z));
                }
                Some((from, to, ty, wrapped)) => {
                    let (w, tw) = (u.arg_wrapped, *wrapped);
                    let text = format!("{path}::AcpEmitter<'_, ");
                    b.push(CHECK_SENDS, "emitter", *file, *from, text, at(tw, *from));
                    b.push(CHECK_SENDS, "emitter", *file, *to, ">".into(), at(tw, *to));
                    let text = format!("&<{ty} as {path}::AcpEmit>::acp_progress(");
                    b.push(CHECK_SENDS, "emitter", *file, a, text, at(w, a));
                    b.push(CHECK_SENDS, "emitter", *file, z, ")".into(), at(w, z));
                }
            }
        }
    }

    // The start of every prompt handler.
    for (k, h) in input.handlers.iter().enumerate() {
        let path = module_path(input.modules, h.file, input.lib_shared);
        match &h.style {
            Style::Wrap { sink, .. } => wrap_handler(&mut b, h, &path, sink)?,
            Style::Entry { cx, .. } => {
                let lexical = input.turn_ends.iter().any(|t| t.handler == Some(k));
                let binding = if lexical { "acp_turn" } else { "_acp_turn" };
                let func = if input.escaping.contains(&k) {
                    "open"
                } else {
                    "begin"
                };
                let stmt = format!("let {binding} = {path}::{func}(&{cx}, &{});", h.session);
                first_statement(
                    &mut b,
                    h.file,
                    h.block.as_ref(),
                    h.expr.clone(),
                    &stmt,
                    CHECK_START,
                    "hook start",
                    &["acp_progress::begin(", "acp_progress::open("],
                )?;
            }
        }
    }

    // `turn_of` where a response is given away from the handler.
    let mut lookups: Vec<&Lookup> = Vec::new();
    for t in input.turn_ends {
        if let Some(l) = &t.lookup
            && !lookups.contains(&l)
        {
            lookups.push(l);
        }
    }
    for l in lookups {
        let scope = input
            .collected
            .scopes
            .iter()
            .find(|s| s.file == l.file && s.span == l.scope)
            .expect("a lookup names a collected scope");
        let path = module_path(input.modules, l.file, input.lib_shared);
        let stmt = format!("let acp_turn = {path}::turn_of({});", l.key);
        first_statement(
            &mut b,
            l.file,
            scope.block.as_ref(),
            scope.expr.clone(),
            &stmt,
            CHECK_TURN_END,
            "turn lookup",
            &["acp_progress::turn_of("],
        )?;
    }

    // The turn end at every response: `.acp_turn(&acp_turn)` on its responder.
    let mut respond_files: Vec<usize> = input.turn_ends.iter().map(|t| t.file).collect();
    respond_files.dedup();
    for file in respond_files {
        let mut b2 = Builder {
            files: input.files,
            parts: Vec::new(),
        };
        use_line(&mut b2, input, file, "AcpRespond", "turn end import");
        for p in &mut b2.parts {
            p.checks = CHECK_TURN_END;
        }
        b.parts.extend(b2.parts);
    }
    for t in input.turn_ends {
        b.push(
            CHECK_TURN_END,
            "turn end",
            t.file,
            t.site.after,
            ".acp_turn(&acp_turn)".into(),
            t.site.wrapped.then_some(t.site.line),
        );
    }

    // tokio's `time` (and `rt`) for the runtime's timers: a marked table of its own, present
    // once it is there (revert takes it out again)
    if let Some((mfile, m)) = input.manifest {
        let (offset, text, present) = match m.insertion()? {
            Some((offset, text)) => (offset, text, m.block_line()),
            None => (0, String::new(), Some(manifest_line(&m.file.text))),
        };
        b.push(
            CHECK_HEARTBEAT,
            "tokio time feature",
            mfile,
            offset,
            text,
            present,
        );
    }
    let _ = CHECK_BOUND;
    Ok(b.parts)
}

/// [`first_statement`] as parts of their own (for the pieces of an agent without an SDK).
#[allow(clippy::too_many_arguments)]
pub(super) fn statement_parts(
    files: &[Parsed],
    file: usize,
    block: Option<&syn::Block>,
    expr: Range<usize>,
    stmt: &str,
    checks: &'static [&'static str],
    label: &'static str,
    markers: &[&str],
) -> Result<Vec<Part>> {
    let mut b = Builder {
        files,
        parts: Vec::new(),
    };
    first_statement(&mut b, file, block, expr, stmt, checks, label, markers)?;
    Ok(b.parts)
}

/// An insertion at the end of a file without a final newline starts on a new line.
fn fix_missing_final_newline(src: &str, offset: usize, text: String, eol: &str) -> String {
    if offset == src.len() && !src.is_empty() && !src.ends_with('\n') {
        format!("{eol}{}", text.trim_end_matches(['\r', '\n']))
    } else {
        text
    }
}

fn manifest_line(text: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().starts_with("tokio"))
        .map(|i| i + 1)
        .unwrap_or(1)
}

/// A statement as the first of a body (a block: before its first statement, at its
/// indentation; an expression: braces around it). Present when the body's first statement
/// holds one of `markers`.
#[allow(clippy::too_many_arguments)]
fn first_statement(
    b: &mut Builder,
    file: usize,
    block: Option<&syn::Block>,
    expr: Range<usize>,
    stmt: &str,
    checks: &'static [&'static str],
    label: &'static str,
    markers: &[&str],
) -> Result<()> {
    let src = b.src(file).to_string();
    let eol = b.eol(file);
    let Some(block) = block else {
        // `|..| expr` / `Pat => expr`: `{ stmt expr }`
        b.push(checks, label, file, expr.start, format!("{{ {stmt} "), None);
        b.push(checks, label, file, expr.end, " }".into(), None);
        return Ok(());
    };
    if let Some(first) = block.stmts.first() {
        let text = &src[first.span().byte_range()];
        if markers.iter().any(|m| text.contains(m)) {
            // present: the exact text apply inserted, in the form it took (revert takes it out)
            let at = first.span().byte_range().start;
            let line = first.span().start().line;
            let open_at = block.brace_token.span.open().byte_range().start;
            let close_at = block.brace_token.span.close().byte_range().start;
            if src[open_at..].starts_with(&format!("{{ {stmt} "))
                && src[..close_at + 1].ends_with(" }")
            {
                // braces apply put around an expression body
                b.push(
                    checks,
                    label,
                    file,
                    open_at,
                    format!("{{ {stmt} "),
                    Some(line),
                );
                b.push(
                    checks,
                    label,
                    file,
                    close_at - 1,
                    " }".into(),
                    Some(block.brace_token.span.close().start().line),
                );
            } else if line == block.brace_token.span.open().start().line {
                b.push(checks, label, file, at, format!("{stmt} "), Some(line));
            } else {
                let f = &b.files[file].file;
                let text = reindent(stmt, indent_at(&src, at), &f.style.indent_unit, eol);
                b.push(checks, label, file, line_start(&src, at), text, Some(line));
            }
            return Ok(());
        }
    }
    let open = block.brace_token.span.open().byte_range().end;
    let close = block.brace_token.span.close().byte_range().start;
    match block.stmts.first() {
        Some(first) if first.span().start().line != block.brace_token.span.open().start().line => {
            // above the comments right over the first statement
            let at = first.span().byte_range().start;
            let mut start = line_start(&src, at);
            while start > 0 {
                let prev = line_start(&src, start - 1);
                if src[prev..start].trim_start().starts_with("//") {
                    start = prev;
                } else {
                    break;
                }
            }
            let f = &b.files[file].file;
            let text = reindent(stmt, indent_at(&src, at), &f.style.indent_unit, eol);
            b.push(checks, label, file, start, text, None);
        }
        Some(first) => {
            // `{ first; .. }` on one line
            b.push(
                checks,
                label,
                file,
                first.span().byte_range().start,
                format!("{stmt} "),
                None,
            );
        }
        None if src[open..close].contains('\n') => {
            let f = &b.files[file].file;
            let indent = format!("{}{}", indent_at(&src, open), f.style.indent_unit);
            b.push(
                checks,
                label,
                file,
                line_end_after(&src, open),
                format!("{indent}{stmt}{eol}"),
                None,
            );
        }
        None => b.push(checks, label, file, open, format!(" {stmt} "), None),
    }
    Ok(())
}

/// `turn(sink, session, async move {` after the body's `{` line and `}).await` before its `}`.
fn wrap_handler(b: &mut Builder, h: &Handler, path: &str, sink: &str) -> Result<()> {
    let block = h
        .block
        .as_ref()
        .expect("a wrapped handler is a method with a body");
    let src = b.src(h.file).to_string();
    let eol = b.eol(h.file);
    let open = block.brace_token.span.open();
    let close = block.brace_token.span.close();
    // present: the body is exactly one `..acp_progress::turn(..).await` expression; its two
    // lines as apply wrote them (revert takes them out)
    if let [syn::Stmt::Expr(e, None)] = block.stmts.as_slice() {
        let text = &src[e.span().byte_range()];
        if text.contains("acp_progress::turn(") && text.trim_end().ends_with(".await") {
            let line = e.span().start().line;
            let indent = indent_at(&src, e.span().byte_range().start).to_string();
            let end_line = e.span().end().line;
            b.push(
                CHECK_START,
                "turn start",
                h.file,
                line_start(&src, e.span().byte_range().start),
                format!(
                    "{indent}{path}::turn({sink}, {}.to_string(), async move {{{eol}",
                    h.session
                ),
                Some(line),
            );
            b.push(
                CHECK_TURN_END,
                "turn end",
                h.file,
                line_start(&src, e.span().byte_range().end),
                format!("{indent}}}).await{eol}"),
                Some(end_line),
            );
            return Ok(());
        }
    }

    let after_open = &src[open.byte_range().end..line_end_after(&src, open.byte_range().end)];
    if !after_open.trim().is_empty() && !after_open.trim_start().starts_with("//") {
        return Err(b.unsupported(
            h.file,
            open.start().line,
            format!("{}: the body starts on the line of its `{{`; put its first statement on a line of its own", h.name),
        ));
    }
    let close_at = close.byte_range().start;
    if !src[line_start(&src, close_at)..close_at].trim().is_empty() {
        return Err(b.unsupported(
            h.file,
            close.start().line,
            format!("{}: the body's closing `}}` shares its line with code; put it on a line of its own", h.name),
        ));
    }
    let f = &b.files[h.file].file;
    let indent = match block.stmts.first() {
        Some(first) => indent_at(&src, first.span().byte_range().start).to_string(),
        None => format!("{}{}", indent_at(&src, close_at), f.style.indent_unit),
    };
    b.push(
        CHECK_START,
        "turn start",
        h.file,
        line_end_after(&src, open.byte_range().end),
        format!(
            "{indent}{path}::turn({sink}, {}.to_string(), async move {{{eol}",
            h.session
        ),
        None,
    );
    b.push(
        CHECK_TURN_END,
        "turn end",
        h.file,
        line_start(&src, close_at),
        format!("{indent}}}).await{eol}"),
        None,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::exact_at;

    #[test]
    fn a_present_piece_is_pinned_to_its_offset_only_where_its_text_recurs() {
        let src = "a.acp_progress().x(); b.acp_progress().y(); c.unique();";
        let second = src.rfind(".acp_progress()").unwrap();
        assert_eq!(exact_at(src, 1, ".acp_progress()"), Some(1));
        assert_eq!(exact_at(src, second, ".acp_progress()"), Some(second));
        // not where it is said to be: revert searches around its line instead
        assert_eq!(exact_at(src, 0, ".acp_progress()"), None);
        // unique in the file
        assert_eq!(
            exact_at(src, src.find(".unique").unwrap(), ".unique()"),
            None
        );
        assert_eq!(exact_at(src, 3, ""), None);
    }
}
