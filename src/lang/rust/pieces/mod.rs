//! Every edit apply makes, as `Part`s with a presence check each: the runtime module and its
//! `mod` line, the emitter in front of each SDK send (and its `use` line), the start of each
//! prompt handler, the turn end around each response, and tokio's `time` feature. Apply plans
//! the parts that are missing; verify reports on all of them — one computation.

mod covers;
mod items;

use super::locate::handlers::{Handler, Style};
use super::locate::sends::Send;
use super::locate::turn_end::{Lookup, TurnEnd};
use super::manifest::Manifest;
use super::modules::{Modules, RootKind};
use super::syntax::Collected;
use super::{Parsed, runtime};
use crate::error::Result;
use crate::lang::parts::{
    CHECK_BOUND, CHECK_RUNTIME, CHECK_SENDS, CHECK_START, CHECK_TURN_END, Part, RUNTIME_LABEL,
};
use crate::lang::pieces::{Pieces, PresentAt};
use covers::{first_statement, wrap_handler};
use items::*;
pub use items::{module_body, module_path};
use std::collections::BTreeSet;
use std::ops::Range;

/// The runtime module holds the completion (in its emitter) and the text hold.
const CHECK_RUNTIME_MODULE: &[&str] = &["runtime", "hook.heartbeat", "hook.complete", "coalescing"];
const CHECK_HEARTBEAT: &[&str] = &["hook.heartbeat"];

/// What pieces are built from.
pub struct Input<'a> {
    pub files: &'a [Parsed],
    pub collected: &'a Collected,
    pub modules: &'a Modules,
    pub handlers: &'a [Handler],
    /// SDK sends per file.
    pub sends: &'a [(usize, Vec<Send>)],
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

/// Rust's pieces are pinned to their offset where their text recurs in the file.
type Builder<'a> = Pieces<'a, Parsed>;

fn builder(files: &[Parsed]) -> Builder<'_> {
    Pieces::new(files, PresentAt::Repeated)
}

/// Builds every part.
pub fn build(input: &Input) -> Result<Vec<Part>> {
    let mut b = builder(input.files);

    // The runtime module, whole: current, replaced when out of date, or created.
    for &(_, mfile) in input.module_files {
        let f = &input.files[mfile].file;
        let body = module_body(input.module_text, f);
        if f.exists && *f.text == *body {
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
        let text = crate::lang::pieces::at_end_of_file(&p.file.text, offset, text, eol);
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
                    s.dot(),
                    ".acp_progress()".into(),
                    s.anchor.wrapped.then_some(s.anchor.site.line),
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
        let path = module_path(input.modules, h.anchor.site.file, input.lib_shared);
        match &h.style {
            Style::Wrap { sink, .. } => {
                let sink = sink.as_ref().expect("each wrapped handler's sink is found");
                wrap_handler(&mut b, h, &path, &sink.text)?
            }
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
                    h.anchor.site.file,
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
    let mut respond_files: Vec<usize> = input
        .turn_ends
        .iter()
        .map(|t| t.respond.anchor.site.file)
        .collect();
    respond_files.dedup();
    for file in respond_files {
        let mut b2 = builder(input.files);
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
            t.respond.anchor.site.file,
            t.respond.anchor.site.range.end,
            ".acp_turn(&acp_turn)".into(),
            t.respond
                .anchor
                .wrapped
                .then_some(t.respond.anchor.site.line),
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
    let mut b = builder(files);
    first_statement(&mut b, file, block, expr, stmt, checks, label, markers)?;
    Ok(b.parts)
}

fn manifest_line(text: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().starts_with("tokio"))
        .map(|i| i + 1)
        .unwrap_or(1)
}
