//! What verify establishes beyond the parts being there: the card's connection of each
//! handler, that the start is the handler's first statement, that every name inserted code
//! reads is bound where it reads it, that the runtime module is the one apply writes, and the
//! hook calls in it.

use super::locate::handlers::{Handler, Style};
use super::locate::turn_end::TurnEnd;
use super::sdk::Dialect;
use super::syntax::Collected;
use super::{Parsed, runtime};
use crate::lang::parts::{Finding, HookCalls};
use crate::report::Status;
use syn::spanned::Spanned;
use syn::visit::Visit;

pub struct Input<'a> {
    pub files: &'a [Parsed],
    pub collected: &'a Collected,
    pub handlers: &'a [Handler],
    pub turn_ends: &'a [TurnEnd],
    pub module_files: &'a [(usize, usize)],
    /// The module as apply renders it (before the file's own indentation and line endings).
    pub module_text: &'a str,
    pub dialect: Dialect,
}

fn ok(check: &'static str, file: usize, line: usize, detail: String) -> Finding {
    Finding {
        check,
        status: Status::Ok,
        file,
        line,
        detail,
    }
}

fn bad(check: &'static str, file: usize, line: usize, detail: String) -> Finding {
    Finding {
        check,
        status: Status::Malformed,
        file,
        line,
        detail,
    }
}

/// Root identifiers of the paths an expression reads (`request` in `&request.session_id`).
fn reads(e: &syn::Expr) -> Vec<String> {
    struct V(Vec<String>);
    impl<'ast> Visit<'ast> for V {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if p.path.segments.len() == 1 {
                self.0.push(p.path.segments[0].ident.to_string());
            }
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
        fn visit_expr_async(&mut self, _: &'ast syn::ExprAsync) {}
    }
    let mut v = V(Vec::new());
    v.visit_expr(e);
    v.0
}

/// The statement of a body holding `marker`, with its index.
fn find_stmt<'b>(
    src: &str,
    block: &'b syn::Block,
    markers: &[&str],
) -> Option<(usize, &'b syn::Stmt)> {
    block.stmts.iter().enumerate().find(|(_, s)| {
        markers
            .iter()
            .any(|m| src[s.span().byte_range()].contains(m))
    })
}

/// `let NAME = <call>(args..);` → (NAME, args).
fn let_call(stmt: &syn::Stmt) -> Option<(String, Vec<syn::Expr>)> {
    let syn::Stmt::Local(l) = stmt else {
        return None;
    };
    let syn::Pat::Ident(name) = &l.pat else {
        return None;
    };
    let init = l.init.as_ref()?;
    let syn::Expr::Call(call) = &*init.expr else {
        return None;
    };
    Some((name.ident.to_string(), call.args.iter().cloned().collect()))
}

pub fn findings(input: &Input) -> Vec<Finding> {
    let mut out = Vec::new();
    let files = input.files;
    for h in input.handlers {
        let src = &files[h.anchor.site.file].file.text;
        match &h.style {
            Style::Entry { cx, .. } => {
                out.push(ok(
                    "connection",
                    h.anchor.site.file,
                    h.anchor.site.line,
                    format!("{}: the connection the SDK hands it, `{cx}`", h.anchor.name),
                ));
                let Some(block) = &h.block else { continue };
                let markers = ["acp_progress::begin(", "acp_progress::open("];
                let Some((index, stmt)) = find_stmt(src, block, &markers) else {
                    continue;
                };
                let line = stmt.span().start().line;
                if index > 0 {
                    out.push(bad(
                        "hook.start",
                        h.anchor.site.file,
                        line,
                        format!("the start of {} is not its first statement: the card may open after a send", h.anchor.name),
                    ));
                }
                check_args(&mut out, h, stmt, line);
            }
            Style::Wrap { sink_from, .. } => {
                out.push(ok(
                    "connection",
                    h.anchor.site.file,
                    h.anchor.site.line,
                    format!("{}: {sink_from}", h.anchor.name),
                ));
                let Some(block) = &h.block else { continue };
                if let [syn::Stmt::Expr(syn::Expr::Await(a), None)] = block.stmts.as_slice()
                    && let syn::Expr::Call(call) = &*a.base
                {
                    let line = call.span().start().line;
                    let mut names: Vec<String> = Vec::new();
                    for arg in call.args.iter().take(2) {
                        names.extend(reads(arg));
                    }
                    bound(&mut out, h, &names, line);
                    if let Some(syn::Expr::Reference(r)) = call.args.first()
                        && let syn::Expr::Field(f) = &*r.expr
                        && let (syn::Expr::Path(base), syn::Member::Named(field)) =
                            (&*f.base, &f.member)
                        && base.path.is_ident("self")
                    {
                        let ty = h.self_ty.clone().unwrap_or_default();
                        let has = input.collected.structs.iter().any(|(_, s)| {
                            s.ident == ty
                                && s.fields.iter().any(|x| x.ident.as_ref() == Some(field))
                        });
                        if !has {
                            out.push(bad(
                                "bound",
                                h.anchor.site.file,
                                line,
                                format!(
                                    "{} reads `self.{field}`, which {ty} has no field of",
                                    h.anchor.name
                                ),
                            ));
                        }
                    }
                }
            }
        }
    }
    // the SDK path (the raw one has no handlers here and checks its own starts)
    if !input.handlers.is_empty() {
        stray_starts(input, &mut out);
    }
    // every `turn_end(&acp_turn, ..)` reads an `acp_turn` bound before it
    for t in input.turn_ends {
        if !t.respond.anchor.wrapped {
            continue;
        }
        let bound_by = match (&t.handler, &t.lookup) {
            (Some(k), _) => {
                let h = &input.handlers[*k];
                h.block
                    .as_ref()
                    .and_then(|b| b.stmts.first())
                    .and_then(let_call)
                    .filter(|(name, _)| name == "acp_turn")
                    .map(|_| format!("{}'s start", h.anchor.name))
            }
            (None, Some(l)) => input
                .collected
                .scopes
                .iter()
                .find(|s| s.file == l.file && s.span == l.scope)
                .and_then(|s| s.block.as_ref())
                .and_then(|b| b.stmts.first())
                .and_then(let_call)
                .filter(|(name, _)| name == "acp_turn")
                .map(|_| "the turn lookup".to_string()),
            _ => None,
        };
        match bound_by {
            Some(by) => out.push(ok(
                "bound",
                t.respond.anchor.site.file,
                t.respond.anchor.site.line,
                format!("`acp_turn` of the response, bound by {by}"),
            )),
            None => out.push(bad(
                "bound",
                t.respond.anchor.site.file,
                t.respond.anchor.site.line,
                "the response's turn end reads `acp_turn`, which no statement before it binds"
                    .into(),
            )),
        }
    }
    if input.dialect == Dialect::V2 {
        for &(_, m) in input.module_files {
            out.push(ok(
                "turn_end",
                m,
                1,
                "protocol v2: the session going idle ends the turn (in the emitter)".into(),
            ));
        }
    }
    for &(_, m) in input.module_files {
        let f = &files[m].file;
        if !f.exists {
            continue;
        }
        if !f.text.starts_with(runtime::MARKER) {
            out.push(bad(
                "runtime",
                m,
                1,
                format!(
                    "{} exists and is not acp-patch's runtime module; move it away",
                    f.rel
                ),
            ));
            continue;
        }
        let current = super::pieces::module_body(input.module_text, f);
        // one edited by hand is reported (and refused) by the shared runtime check
        if *f.text != *current
            && !matches!(
                crate::lang::seal::judge(&f.text, &current),
                crate::lang::seal::OnDisk::Edited { .. }
            )
        {
            out.push(bad(
                "runtime",
                m,
                1,
                format!("{} is not what this acp-patch writes (edited, or from another version); apply replaces it", f.rel),
            ));
        }
        match f
            .text
            .lines()
            .position(|l| l.starts_with("fn acp_arm_hold("))
        {
            Some(i) => out.push(ok("coalescing", m, i + 1, "text hold".into())),
            None => out.push(bad(
                "coalescing",
                m,
                1,
                "the runtime module has no text hold".into(),
            )),
        }
    }
    out
}

/// The calls that start a turn (`acp_progress::begin|open|turn(..)`).
const STARTS: [&str; 3] = [
    "acp_progress::begin(",
    "acp_progress::open(",
    "acp_progress::turn(",
];

/// Every turn start in the agent's code that is not a prompt handler's own: a fn the handler
/// calls with its request, responder or connection (a helper, never called by the SDK) that
/// starts a turn too ends the handler's turn at once (no card) and, as its guard drops when it
/// returns, fails the new one. Turn starts inside macro arguments are not seen.
fn stray_starts(input: &Input, out: &mut Vec<Finding>) {
    let files = input.files;
    let mut own: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
    for h in input.handlers {
        let file = h.anchor.site.file;
        match &h.block {
            Some(block) => {
                if let Some((_, stmt)) = find_stmt(&files[file].file.text, block, &STARTS) {
                    own.push((file, stmt.span().byte_range()));
                }
            }
            None => own.push((file, h.expr.clone())),
        }
    }
    struct V(Vec<(std::ops::Range<usize>, usize, String)>);
    impl<'ast> Visit<'ast> for V {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func {
                let segs: Vec<String> = p
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                if let [.., module, what] = segs.as_slice()
                    && module == "acp_progress"
                    && ["begin", "open", "turn"].contains(&what.as_str())
                {
                    self.0
                        .push((c.span().byte_range(), c.span().start().line, what.clone()));
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
    }
    for (i, p) in files.iter().enumerate() {
        let Some(ast) = &p.ast else { continue };
        if p.file.text.starts_with(runtime::MARKER) {
            continue;
        }
        let mut v = V(Vec::new());
        v.visit_file(ast);
        for (range, line, what) in v.0 {
            if own
                .iter()
                .any(|(f, r)| *f == i && r.start <= range.start && range.end <= r.end)
            {
                continue;
            }
            let within = |r: std::ops::Range<usize>| r.start <= range.start && range.end <= r.end;
            let fns = input
                .collected
                .fns
                .iter()
                .filter(|(f, x)| *f == i && within(x.span().byte_range()))
                .map(|(_, x)| (x.span().byte_range().len(), x.sig.ident.to_string()));
            let methods = input
                .collected
                .methods
                .iter()
                .filter(|(f, _, x)| *f == i && within(x.span().byte_range()))
                .map(|(_, ty, x)| {
                    (
                        x.span().byte_range().len(),
                        format!("{ty}::{}", x.sig.ident),
                    )
                });
            let name = fns
                .chain(methods)
                .min_by_key(|(len, _)| *len)
                .map(|(_, name)| format!("{name}, which is not a prompt handler the SDK calls,"))
                .unwrap_or_else(|| "code outside the prompt handlers".to_string());
            out.push(bad(
                "hook.start",
                i,
                line,
                format!(
                    "{name} starts a turn of its own (`acp_progress::{what}`): called in a prompt's path, it ends the handler's turn at once (no card) and fails its own when it returns; remove the line (apply starts a turn only in the prompt handlers)"
                ),
            ));
        }
    }
}

fn check_args(out: &mut Vec<Finding>, h: &Handler, stmt: &syn::Stmt, line: usize) {
    let Some((_, args)) = let_call(stmt) else {
        return;
    };
    let names: Vec<String> = args.iter().flat_map(reads).collect();
    bound(out, h, &names, line);
}

fn bound(out: &mut Vec<Finding>, h: &Handler, names: &[String], line: usize) {
    let unbound: Vec<&String> = names
        .iter()
        .filter(|n| !h.params.contains(n) && *n != "self" && *n != "crate")
        .collect();
    if unbound.is_empty() {
        out.push(ok(
            "bound",
            h.anchor.site.file,
            line,
            format!(
                "{}'s start reads {} (its parameters)",
                h.anchor.name,
                names
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    } else {
        out.push(bad(
            "bound",
            h.anchor.site.file,
            line,
            format!(
                "{}'s start reads {}, which is not a parameter of the handler",
                h.anchor.name,
                unbound
                    .iter()
                    .map(|n| format!("`{n}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
}

/// The callback's call sites per state in the runtime module:
/// `cb(AcpProgressState::Start | Heartbeat | Complete, ..)`.
pub fn hook_calls(files: &[Parsed]) -> HookCalls {
    struct V<'o> {
        file: usize,
        out: &'o mut HookCalls,
    }
    impl<'ast> Visit<'ast> for V<'_> {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let Some(syn::Expr::Path(p)) = c.args.first() {
                let segs: Vec<String> = p
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect();
                if segs.len() >= 2 && segs[segs.len() - 2] == "AcpProgressState" {
                    let k = ["Start", "Heartbeat", "Complete"]
                        .iter()
                        .position(|s| *s == segs[segs.len() - 1]);
                    if let Some(k) = k {
                        self.out[k].push((self.file, c.span().start().line));
                    }
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
    }
    let mut out: HookCalls = Default::default();
    for (i, p) in files.iter().enumerate() {
        if let Some(ast) = &p.ast
            && p.file.text.starts_with(runtime::MARKER)
        {
            V {
                file: i,
                out: &mut out,
            }
            .visit_file(ast);
        }
    }
    out
}
