//! Every piece apply inserts, as planned insertions with a presence check each. Apply
//! plans the parts that are missing; verify reports on all of them — one computation.

use super::Parsed;
use super::locate::{Generation, Sites, type_name};
use super::manifest::Manifest;
use crate::error::{Error, Result};
use crate::lang::parts::{
    CHECK_COMPLETE, CHECK_DECLARED, CHECK_FACTORY, CHECK_HELPERS, CHECK_HOLD, CHECK_HOOKS,
    CHECK_START, CHECK_STORED, CHECK_WIRING, Part,
};
use crate::project::Project;
use crate::render::{fill, reindent};
use crate::source::{indent_at, line_end_after, line_start};
use syn::spanned::Spanned;
use syn::visit::Visit;

const CHECK_HEARTBEAT: &[&str] = &["hook.heartbeat"];

/// The source text a span covers.
pub fn span_text(src: &str, span: proc_macro2::Span) -> String {
    src[span.byte_range()].to_string()
}

fn line(span: proc_macro2::Span) -> usize {
    span.start().line
}

/// Where the protocol types are: the crate root (≤ 0.10), `schema` (0.11), `schema::v1`
/// (1.x – 4.x), `v1::schema` (5.x).
pub fn schema_path(generation: Generation, version: (u64, u64), sdk_ident: &str) -> String {
    match (generation, version.0) {
        (Generation::Trait, _) => sdk_ident.to_string(),
        (Generation::Builder, 0) => format!("{sdk_ident}::schema"),
        (Generation::Builder, _) => format!("{sdk_ident}::schema::v1"),
        (Generation::V1, _) => format!("{sdk_ident}::v1::schema"),
    }
}

/// Template variables of a crate generation: `!Send` (a `LocalSet`) for the trait API,
/// `Send` for the builder API and 5.x.
pub fn generation_vars(generation: Generation, acp: &str) -> Vec<(&'static str, String)> {
    let local = generation == Generation::Trait;
    let acp = acp.to_string();
    let pick = |a: &str, b: &str| if local { a.to_string() } else { b.to_string() };
    vec![
        ("ACP", acp),
        ("PTR", pick("std::rc::Rc", "std::sync::Arc")),
        ("SEND_SYNC", pick("", " + Send + Sync")),
        ("FUTURE_SEND", pick("", " + Send")),
        ("CELL", pick("std::cell::RefCell", "std::sync::Mutex")),
        (
            "LOCK",
            pick(
                "borrow_mut()",
                "lock().unwrap_or_else(std::sync::PoisonError::into_inner)",
            ),
        ),
        ("SPAWN", pick("tokio::task::spawn_local", "tokio::spawn")),
    ]
}

/// `{{KEY}}` alone on a line takes the given lines at that line's indentation (none:
/// the line goes); other placeholders are replaced in place.
fn fill_lines(template: &str, blocks: &[(&str, Vec<String>)], vars: &[(&str, &str)]) -> String {
    let mut out = String::new();
    'line: for l in template.lines() {
        let t = l.trim();
        for (key, lines) in blocks {
            if t == format!("{{{{{key}}}}}") {
                let ws = &l[..l.len() - l.trim_start().len()];
                for x in lines {
                    out.push_str(ws);
                    out.push_str(x);
                    out.push('\n');
                }
                continue 'line;
            }
        }
        out.push_str(l);
        out.push('\n');
    }
    fill(&out, vars)
}

struct Builder<'a> {
    files: &'a [Parsed],
    project: &'a Project,
    sites: std::collections::HashMap<String, String>,
    vars: Vec<(&'static str, String)>,
    parts: Vec<Part>,
}

impl<'a> Builder<'a> {
    fn vars(&self) -> Vec<(&str, &str)> {
        let mut v: Vec<(&str, &str)> = self.vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        v.push(("PREFIX", &self.project.env_prefix));
        v
    }

    fn site(
        &self,
        name: &str,
        blocks: &[(&str, Vec<String>)],
        extra: &[(&str, &str)],
    ) -> Result<String> {
        let t = self.sites.get(name).ok_or_else(|| Error::Config {
            path: "templates/rust/sites.rs".into(),
            message: format!("no `// site: {name}` section"),
        })?;
        let mut vars = self.vars();
        vars.extend_from_slice(extra);
        Ok(fill_lines(t, blocks, &vars))
    }

    fn block(&self, name: &str) -> Result<String> {
        let t = self.project.templates.get(&format!("rust/{name}"))?;
        Ok(fill(&t, &self.vars()))
    }

    fn src(&self, file: usize) -> &'a str {
        &self.files[file].file.text
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
        let anchor_line = self.files[file].file.line_of(offset);
        self.parts.push(Part {
            checks,
            label,
            file,
            offset,
            replaces: 0,
            text,
            present,
            present_at: None,
            anchor_line,
        });
    }

    fn unsupported(&self, file: usize, span: proc_macro2::Span, message: &str) -> Error {
        Error::Unsupported {
            file: self.files[file].file.rel.clone(),
            line: line(span),
            message: message.to_string(),
        }
    }

    /// A module-level block after `item` (the agent struct).
    fn module_after(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        file: usize,
        item_end: usize,
        code: String,
        defines: &str,
    ) {
        let f = &self.files[file].file;
        let src = &f.text;
        let offset = line_end_after(src, item_end);
        let body = reindent(&code, "", &f.style.indent_unit, f.style.eol);
        let text = if offset == src.len() && !src.ends_with('\n') {
            format!(
                "{eol}{eol}{}",
                body.trim_end_matches(['\r', '\n']),
                eol = f.style.eol
            )
        } else {
            format!("{}{body}", f.style.eol)
        };
        let present = defined_at(&self.files[file], defines);
        self.push(checks, label, file, offset, text, present);
    }

    /// Code lines before a statement, at its indentation (above comments right over it).
    fn before(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        file: usize,
        stmt: proc_macro2::Span,
        code: String,
        present: Option<usize>,
    ) -> Result<()> {
        let src = self.src(file);
        let at = stmt.byte_range().start;
        let mut start = line_start(src, at);
        if !src[start..at].trim().is_empty() {
            return Err(self.unsupported(
                file,
                stmt,
                "the statement shares its line with other code; put it on its own line or pin another site",
            ));
        }
        while start > 0 {
            let prev = line_start(src, start - 1);
            if src[prev..start].trim_start().starts_with("//") {
                start = prev;
            } else {
                break;
            }
        }
        let style = &self.files[file].file.style;
        let text = reindent(&code, indent_at(src, at), &style.indent_unit, style.eol);
        self.push(checks, label, file, start, text, present);
        Ok(())
    }

    /// New fields or field initializers after the last one of a braced list.
    #[allow(clippy::too_many_arguments)]
    fn after_fields(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        file: usize,
        last: Option<(proc_macro2::Span, bool)>,
        close: proc_macro2::Span,
        lines: &str,
        present: Option<usize>,
    ) -> Result<()> {
        let Some((last, trailing_comma)) = last else {
            return Err(self.unsupported(file, close, "no fields to add beside"));
        };
        let src = self.src(file);
        let style = &self.files[file].file.style;
        let end = last.byte_range().end;
        if last.end().line == close.start().line {
            // `Self { a, b }` on one line: add inline
            let inline: Vec<&str> = lines
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .map(str::trim)
                .collect();
            // the new fields copy the list's trailing comma (so revert can tell the two apart)
            let mut text = inline.join(" ");
            if !trailing_comma {
                text = format!(", {}", text.trim_end_matches(','));
            } else {
                text = format!(" {}", text);
            }
            self.push(checks, label, file, end, text, present);
            return Ok(());
        }
        let indent = indent_at(src, last.byte_range().start).to_string();
        let body = reindent(lines, &indent, &style.indent_unit, style.eol);
        if trailing_comma {
            let offset = line_end_after(src, end);
            self.push(checks, label, file, offset, body, present);
        } else {
            // no trailing comma in the list: none after the new last field either
            let text = format!(
                ",{}{}",
                style.eol,
                body.trim_end_matches(['\r', '\n']).trim_end_matches(',')
            );
            self.push(checks, label, file, end, text, present);
        }
        Ok(())
    }
}

/// The line of a module-level item named `name` in a parsed file.
fn defined_at(p: &Parsed, name: &str) -> Option<usize> {
    let ast = p.ast.as_ref()?;
    ast.items.iter().find_map(|item| {
        let (ident, span) = match item {
            syn::Item::Fn(f) => (&f.sig.ident, f.sig.fn_token.span),
            syn::Item::Struct(s) => (&s.ident, s.struct_token.span),
            syn::Item::Enum(e) => (&e.ident, e.enum_token.span),
            syn::Item::Type(t) => (&t.ident, t.type_token.span),
            _ => return None,
        };
        (ident == name).then(|| line(span))
    })
}

/// The first of `stmts` whose text holds `marker`.
fn marker_in(src: &str, stmts: &[&syn::Stmt], marker: &str) -> Option<usize> {
    stmts
        .iter()
        .find(|s| span_text(src, s.span()).contains(marker))
        .map(|s| line(s.span()))
}

/// `self.<field>` reads inside an expression: (byte range in the file, field name).
fn self_fields(e: &syn::Expr) -> Vec<(std::ops::Range<usize>, String)> {
    struct V(Vec<(std::ops::Range<usize>, String)>);
    impl<'ast> Visit<'ast> for V {
        fn visit_expr_field(&mut self, f: &'ast syn::ExprField) {
            if let (syn::Expr::Path(p), syn::Member::Named(name)) = (&*f.base, &f.member)
                && p.path.is_ident("self")
            {
                self.0.push((f.span().byte_range(), name.to_string()));
                return;
            }
            syn::visit::visit_expr_field(self, f);
        }
    }
    let mut v = V(Vec::new());
    v.visit_expr(e);
    v.0
}

pub fn build(
    files: &[Parsed],
    project: &Project,
    sites: &Sites,
    manifest: Option<(usize, &Manifest)>,
    generation: Generation,
    schema: &str,
) -> Result<Vec<Part>> {
    let raw = project.templates.get("rust/sites.rs")?;
    let mut b = Builder {
        files,
        project,
        sites: crate::render::sections(&raw, "// site: ")
            .into_iter()
            .map(|(name, body)| (name, body.trim_end().to_string() + "\n"))
            .collect(),
        vars: generation_vars(generation, schema),
        parts: Vec::new(),
    };
    let (sfile, item) = &sites.agent_struct;
    let sfile = *sfile;
    let item_end = item.span().byte_range().end;

    // Module-level blocks after the agent struct.
    // (presence: the block's first item is defined in the file)
    for (name, checks, label, first) in [
        (
            "helpers.rs",
            CHECK_HELPERS,
            "thinking helpers",
            "AcpProgressState",
        ),
        ("factory.rs", CHECK_FACTORY, "progress factory", "AcpSend"),
        ("hooks.rs", CHECK_HOOKS, "hook functions", "AcpThinking"),
        ("text_hold.rs", CHECK_HOLD, "text hold", "acp_text_hold"),
    ] {
        let code = b.block(name)?;
        b.module_after(checks, label, sfile, item_end, code, first);
    }

    // The fields on the agent struct.
    let syn::Fields::Named(named) = &item.fields else {
        unreachable!("locate checks named fields")
    };
    let present = named
        .named
        .iter()
        .find(|f| {
            f.ident
                .as_ref()
                .is_some_and(|i| i == "agent_progress_callback")
        })
        .map(|f| line(f.span()));
    let last = named
        .named
        .pairs()
        .next_back()
        .map(|p| (p.value().span(), p.punct().is_some()));
    let decls = b.site("field_decls", &[], &[])?;
    b.after_fields(
        CHECK_DECLARED,
        "callback field",
        sfile,
        last,
        named.brace_token.span.close(),
        &decls,
        present,
    )?;
    // Every place the agent is built sets the new fields.
    let inits = b.site("field_inits", &[], &[])?;
    for lit in &sites.literals {
        if lit.expr.rest.is_some() {
            return Err(b.unsupported(
                lit.file,
                lit.expr.span(),
                "the agent is built with `..base`; add `agent_progress_callback: Default::default(), acp_thinking: Default::default()` by hand",
            ));
        }
        let present = lit
            .expr
            .fields
            .iter()
            .find(|f| matches!(&f.member, syn::Member::Named(n) if n == "agent_progress_callback"))
            .map(|f| line(f.span()));
        let last_end = lit
            .expr
            .fields
            .pairs()
            .next_back()
            .map(|p| match p.punct() {
                Some(comma) => (comma.span, true),
                None => (p.value().span(), false),
            });
        b.after_fields(
            CHECK_STORED,
            "callback stored",
            lit.file,
            last_end,
            lit.expr.brace_token.span.close(),
            &inits,
            present,
        )?;
    }

    // The wiring and Hook A before the hand-off.
    let pfile = sites.prompt.file;
    let psrc = b.src(pfile);
    let stmts = &sites.prompt.func.block.stmts;
    let idx = stmts
        .iter()
        .position(|s| s.span().byte_range() == sites.handoff.span().byte_range())
        .expect("the hand-off is a statement of the prompt handler");
    let before: Vec<&syn::Stmt> = stmts[idx.saturating_sub(4)..idx].iter().rev().collect();
    let wiring = wiring(&b, sites, psrc)?;
    let present = marker_in(psrc, &before, "acp_begin_turn(");
    b.before(
        CHECK_WIRING,
        "wiring",
        pfile,
        sites.handoff.span(),
        wiring,
        present,
    )?;
    let (prompt_key, emitter_key) = session_keys(sites);
    let start = b.site("hook_start", &[], &[("SESSION_KEY", &prompt_key)])?;
    let present = marker_in(psrc, &before, "acp_progress_start(");
    b.before(
        CHECK_START,
        "hook start",
        pfile,
        sites.handoff.span(),
        start,
        present,
    )?;

    // Hook B and the text-hold gate at the top of the emitter.
    let efile = sites.emitter.file;
    let esrc = b.src(efile);
    let estmts: Vec<&syn::Stmt> = sites.emitter.func.block.stmts.iter().take(4).collect();
    let Some(first) = estmts.first() else {
        return Err(b.unsupported(
            efile,
            sites.emitter.func.span(),
            "the emitter has an empty body",
        ));
    };
    if line(first.span()) == line(sites.emitter.func.block.brace_token.span.open()) {
        return Err(b.unsupported(
            efile,
            first.span(),
            "the emitter's body is on the line of its `{`; put it on its own lines",
        ));
    }
    let first_span = first.span();
    let (update, ret) = emitter_update(&b, sites)?;
    let plain = update.trim_start_matches("mut ");
    let complete = b.site(
        "hook_complete",
        &[],
        &[("UPDATE_NAME", plain), ("SESSION_KEY", &emitter_key)],
    )?;
    let present = marker_in(esrc, &estmts, "acp_progress_complete(");
    b.before(
        CHECK_COMPLETE,
        "hook complete at first update",
        efile,
        first_span,
        complete,
        present,
    )?;
    let gate = b.site(
        "text_hold_gate",
        &[("RETURN", vec![ret])],
        &[
            ("UPDATE", &update),
            ("UPDATE_NAME", plain),
            ("SESSION_KEY", &emitter_key),
        ],
    )?;
    let present = marker_in(esrc, &estmts, "acp_text_hold(");
    b.before(
        CHECK_HOLD,
        "text hold gate",
        efile,
        first_span,
        gate,
        present,
    )?;

    // tokio's `time` feature and serde_json for the inserted code.
    if let Some((mfile, m)) = manifest {
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
    Ok(b.parts)
}

fn manifest_line(text: &str) -> usize {
    text.lines()
        .position(|l| l.trim_start().starts_with("tokio"))
        .map(|i| i + 1)
        .unwrap_or(1)
}

/// The session key, as the prompt handler spells it (the emitter call's `SessionId`
/// argument) and as the emitter does (its `SessionId` parameter); one shared key when the
/// emitter takes no session id.
fn session_keys(sites: &Sites) -> (String, String) {
    let typed = sites
        .emitter
        .func
        .sig
        .inputs
        .iter()
        .filter_map(|i| match i {
            syn::FnArg::Typed(t) => Some(t),
            syn::FnArg::Receiver(_) => None,
        });
    for (t, arg) in typed.zip(&sites.emitter_args) {
        if type_name(&t.ty).as_deref() == Some("SessionId")
            && let syn::Pat::Ident(id) = &*t.pat
        {
            let arg = arg.strip_prefix('&').unwrap_or(arg).trim();
            return (
                format!("{arg}.to_string()"),
                format!("{}.to_string()", id.ident),
            );
        }
    }
    ("String::new()".into(), "String::new()".into())
}

/// The update parameter of the emitter, and how its body returns early.
fn emitter_update(b: &Builder, sites: &Sites) -> Result<(String, String)> {
    let f = &sites.emitter.func;
    for input in &f.sig.inputs {
        if let syn::FnArg::Typed(t) = input
            && type_name(&t.ty).as_deref() == Some("SessionUpdate")
        {
            let syn::Pat::Ident(id) = &*t.pat else {
                return Err(b.unsupported(
                    sites.emitter.file,
                    t.span(),
                    "the update parameter is a pattern; name it",
                ));
            };
            if matches!(&*t.ty, syn::Type::Reference(_)) {
                return Err(b.unsupported(
                    sites.emitter.file,
                    t.span(),
                    "the emitter takes the update by reference; acp-patch needs it by value",
                ));
            }
            let ret = match &f.sig.output {
                syn::ReturnType::Default => "return;".to_string(),
                syn::ReturnType::Type(..) => "return Ok(());".to_string(),
            };
            let name = if id.mutability.is_some() {
                format!("mut {}", id.ident)
            } else {
                id.ident.to_string()
            };
            return Ok((name, ret));
        }
    }
    unreachable!("locate checks the emitter takes a SessionUpdate")
}

/// The wiring: a sender that repeats the emitter's own notification call.
fn wiring(b: &Builder, sites: &Sites, psrc: &str) -> Result<String> {
    let efile = sites.emitter.file;
    let esrc = b.src(efile);
    let f = &sites.emitter.func;
    let send = super::locate::notify_call(&f.block).expect("locate checks the emitter notifies");
    let mut captures = Vec::new();
    let mut clones = Vec::new();
    let mut binds = Vec::new();
    let mut update = String::new();
    let typed: Vec<&syn::PatType> = f
        .sig
        .inputs
        .iter()
        .filter_map(|i| match i {
            syn::FnArg::Typed(t) => Some(t),
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    if typed.len() != sites.emitter_args.len() {
        return Err(b.unsupported(
            efile,
            f.sig.span(),
            "the emitter call in the prompt handler does not pass every parameter",
        ));
    }
    for (t, arg) in typed.iter().zip(&sites.emitter_args) {
        let syn::Pat::Ident(id) = &*t.pat else {
            return Err(b.unsupported(
                efile,
                t.span(),
                "an emitter parameter is a pattern; name it",
            ));
        };
        let name = id.ident.to_string();
        if type_name(&t.ty).as_deref() == Some("SessionUpdate") {
            update = name;
            continue;
        }
        let by_ref = matches!(&*t.ty, syn::Type::Reference(_));
        let value = match arg.strip_prefix('&') {
            Some(rest) if by_ref && !rest.trim_start().starts_with("mut ") => rest.trim(),
            _ => arg.as_str(),
        };
        captures.push(format!("let {name} = {value}.clone();"));
        clones.push(format!("let {name} = {name}.clone();"));
        if by_ref {
            binds.push(format!("let {name} = &{name};"));
        }
    }
    // `self.<field>` in the send expression: captured as clones (an `Rc`/`Arc` field)
    let range = send.span().byte_range();
    let mut expr = String::new();
    let mut at = range.start;
    let mut fields: Vec<String> = Vec::new();
    for (r, name) in self_fields(&send) {
        expr.push_str(&esrc[at..r.start]);
        expr.push_str(&format!("acp_self_{name}"));
        at = r.end;
        if !fields.contains(&name) {
            fields.push(name);
        }
    }
    expr.push_str(&esrc[at..range.end]);
    for name in &fields {
        captures.push(format!("let acp_self_{name} = self.{name}.clone();"));
        clones.push(format!("let acp_self_{name} = acp_self_{name}.clone();"));
    }
    let uses_self = |e: &syn::Expr| {
        struct V(bool);
        impl<'ast> Visit<'ast> for V {
            fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
                self.0 |= p.path.is_ident("self");
            }
        }
        let mut v = V(false);
        v.visit_expr(e);
        v.0
    };
    if syn::parse_str::<syn::Expr>(&expr).map_or(true, |e| uses_self(&e)) {
        return Err(b.unsupported(
            efile,
            send.span(),
            "the notification call uses `self` other than through fields; call it on a connection held in a field or parameter",
        ));
    }
    let _ = psrc;
    let code = b.site(
        "wiring",
        &[("CAPTURES", captures), ("CLONES", clones), ("BINDS", binds)],
        &[
            ("UPDATE", &update),
            ("SEND_EXPR", "__ACP_SEND_EXPR__"),
            ("SESSION_KEY", &session_keys(sites).0),
        ],
    )?;
    // the send expression keeps its own line breaks, re-based to the marker's indentation
    let marker_line = code
        .lines()
        .find(|l| l.contains("__ACP_SEND_EXPR__"))
        .expect("marker");
    let ws = &marker_line[..marker_line.len() - marker_line.trim_start().len()];
    let orig_indent = indent_at(esrc, range.start);
    let expr_lines: Vec<String> = expr
        .split('\n')
        .enumerate()
        .map(|(i, l)| {
            let l = l.trim_end_matches('\r');
            if i == 0 {
                format!("{ws}{l}")
            } else {
                let rest = l.strip_prefix(orig_indent).unwrap_or(l.trim_start());
                // keep relative indentation as 4-space levels for reindent()
                let rest = rest.replace('\t', "    ");
                format!("{ws}{rest}")
            }
        })
        .collect();
    Ok(code.replace(marker_line, &expr_lines.join("\n")))
}

/// The callback's call sites per state: `cb(AcpProgressState::Start | Heartbeat | Complete, ..)`.
pub fn hook_calls(files: &[Parsed]) -> [Vec<(usize, usize)>; 3] {
    struct V<'o> {
        file: usize,
        out: &'o mut [Vec<(usize, usize)>; 3],
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
                        self.out[k].push((self.file, line(c.span())));
                    }
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
    }
    let mut out: [Vec<(usize, usize)>; 3] = Default::default();
    for (i, p) in files.iter().enumerate() {
        if let Some(ast) = &p.ast
            && p.file.text.contains("AcpProgressState")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_path_per_generation() {
        let at = |v: (u64, u64)| schema_path(Generation::of(v), v, "acp");
        assert_eq!(at((0, 10)), "acp");
        assert_eq!(at((0, 11)), "acp::schema");
        assert_eq!(at((3, 6)), "acp::schema::v1");
        assert_eq!(at((5, 2)), "acp::v1::schema");
    }
}
