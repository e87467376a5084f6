//! The parts of the protocol strategy (each an insertion, present or not) and the placement
//! facts verify proves beyond them: the runtime module, one import per touched file, the
//! cover of every prompt / cancel handler, the emitter around every send; names read by
//! inserted code bound where they are read; the turn opening before the handler's first send.

use super::NS;
use super::locate::{Conn, Cover, Handler, Role, Send};
use super::scope::*;
use crate::error::{Error, Result};
use crate::lang::parts::{Finding, Parsed, Part};
use crate::lang::typescript::style::{CodeStyle, detect, restyle};
use crate::lang::typescript::syntax::*;
use crate::report::Status;
use crate::source::{indent_at, line_end_after, line_start};
use tree_sitter::Node;

pub const CHECK_MODULE: &[&str] = &[
    "runtime",
    "hook.start",
    "hook.heartbeat",
    "hook.complete",
    "coalescing",
];
const CHECK_IMPORT: &[&str] = &["bound"];
const CHECK_OPEN: &[&str] = &["hook.start", "connection"];
const CHECK_CLOSE: &[&str] = &["turn_end", "hook.complete"];
const CHECK_CANCEL: &[&str] = &["turn_end"];
const CHECK_SEND: &[&str] = &["sends"];

fn line(n: Node) -> usize {
    n.start_position().row + 1
}

/// Where the runtime module is and what apply would write there.
pub struct Module {
    pub file: usize,
    pub text: String,
    /// The file's extension (`ts`, `mts`, `cts`): import specifiers follow it.
    pub ext: String,
}

pub struct Built {
    pub parts: Vec<Part>,
    pub findings: Vec<Finding>,
}

struct Builder<'a> {
    files: &'a [Parsed],
    /// Per file: a CommonJS file (`require`) rather than a module.
    commonjs: &'a [bool],
    parts: Vec<Part>,
    findings: Vec<Finding>,
}

impl Builder<'_> {
    #[allow(clippy::too_many_arguments)]
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
            anchor_line,
        });
    }

    fn finding(
        &mut self,
        check: &'static str,
        status: Status,
        file: usize,
        line: usize,
        detail: String,
    ) {
        self.findings.push(Finding {
            check,
            status,
            file,
            line,
            detail,
        });
    }

    fn style(&self, file: usize) -> CodeStyle {
        let p = &self.files[file];
        detect(p.tree.root_node(), &p.file.text)
    }

    fn unsupported(&self, file: usize, n: Node, message: String) -> Error {
        Error::Unsupported {
            file: self.files[file].file.rel.clone(),
            line: line(n),
            message,
        }
    }
}

/// The relative specifier from `from` (a file's path relative to the root) to the module.
fn relative_spec(from: &str, to: &str) -> String {
    let from_dir: Vec<&str> =
        from.split('/').collect::<Vec<_>>()[..from.split('/').count() - 1].to_vec();
    let to_parts: Vec<&str> = to.split('/').collect();
    let common = from_dir
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count()
        .min(to_parts.len() - 1);
    let ups = from_dir.len() - common;
    let rest = to_parts[common..].join("/");
    if ups == 0 {
        format!("./{rest}")
    } else {
        format!("{}{rest}", "../".repeat(ups))
    }
}

/// The relative module specifiers a file imports (`./x.js`, `../y`).
fn relative_specifiers(p: &Parsed) -> Vec<String> {
    let src = p.file.text.as_str();
    let mut out = Vec::new();
    for n in named_children(p.tree.root_node()) {
        if let Some((_, spec)) = require_of(n, src)
            && (spec.starts_with("./") || spec.starts_with("../"))
        {
            out.push(spec);
            continue;
        }
        if !matches!(n.kind(), "import_statement" | "export_statement") {
            continue;
        }
        let spec = n.child_by_field_name("source").or_else(|| {
            descendants(n, "import_require_clause")
                .first()
                .and_then(|r| r.child_by_field_name("source"))
        });
        if let Some(s) = spec.and_then(|s| string_value(s, src))
            && (s.starts_with("./") || s.starts_with("../"))
        {
            out.push(s.to_string());
        }
    }
    out
}

/// How a file spells the module's specifier: `.js` suffixes (NodeNext), `.ts` ones, or none —
/// as its own relative imports do (else the tree's, else `.js`, which every resolver takes).
fn import_spec(files: &[Parsed], file: usize, module: &Module) -> String {
    let base = relative_spec(&files[file].file.rel, &files[module.file].file.rel);
    let base = base
        .strip_suffix(&format!(".{}", module.ext))
        .unwrap_or(&base)
        .to_string();
    let style_of = |specs: &[String]| -> Option<&'static str> {
        if specs.is_empty() {
            return None;
        }
        let ends = |exts: &[&str]| specs.iter().any(|s| exts.iter().any(|e| s.ends_with(e)));
        Some(if ends(&[".js", ".mjs", ".cjs", ".jsx"]) {
            "js"
        } else if ends(&[".ts", ".mts", ".cts", ".tsx"]) {
            "ts"
        } else {
            "none"
        })
    };
    let own = style_of(&relative_specifiers(&files[file]));
    let tree = || {
        let all: Vec<String> = files.iter().flat_map(relative_specifiers).collect();
        style_of(&all)
    };
    match own.or_else(tree).unwrap_or("js") {
        "js" => {
            let js = match module.ext.as_str() {
                "mts" => "mjs",
                "cts" => "cjs",
                _ => "js",
            };
            format!("{base}.{js}")
        }
        "ts" => format!("{base}.{}", module.ext),
        _ => base,
    }
}

/// `import * as acpProgress from "..."` (or `import acpProgress = require("...")`): the
/// statement, and the specifier it names.
fn present_import<'t>(p: &'t Parsed) -> Option<(Node<'t>, String)> {
    let src = p.file.text.as_str();
    if let Some(found) = named_children(p.tree.root_node())
        .into_iter()
        .find_map(|n| {
            require_of(n, src)
                .filter(|(name, _)| name == NS)
                .map(|(_, spec)| (n, spec))
        })
    {
        return Some(found);
    }
    named_children(p.tree.root_node())
        .into_iter()
        .filter(|n| n.kind() == "import_statement")
        .find_map(|n| {
            let ns = descendants(n, "namespace_import").into_iter().any(|i| {
                descendants(i, "identifier")
                    .iter()
                    .any(|id| text(*id, src) == NS)
            });
            let req = descendants(n, "import_require_clause")
                .into_iter()
                .find(|r| r.named_child(0).is_some_and(|id| text(id, src) == NS));
            let source = if ns {
                n.child_by_field_name("source")
            } else {
                req.and_then(|r| r.child_by_field_name("source"))
            }?;
            Some((n, string_value(source, src)?.to_string()))
        })
}

/// `const name = require("spec")` at the top of a CommonJS file: (name, spec).
fn require_of(n: Node, src: &str) -> Option<(String, String)> {
    if !matches!(n.kind(), "lexical_declaration" | "variable_declaration") {
        return None;
    }
    let d = named_children(n)
        .into_iter()
        .find(|d| d.kind() == "variable_declarator")?;
    let value = d.child_by_field_name("value")?;
    if value.kind() != "call_expression" || callee(value, src) != ("", "require") {
        return None;
    }
    let spec = arguments(value)
        .first()
        .and_then(|a| string_value(*a, src))?;
    Some((
        text(d.child_by_field_name("name")?, src).to_string(),
        spec.to_string(),
    ))
}

fn import_part(b: &mut Builder, file: usize, module: &Module) -> Result<()> {
    let p = &b.files[file];
    let src = p.file.text.as_str();
    let spec = import_spec(b.files, file, module);
    let present = present_import(p);
    if present.is_none()
        && let Some((_, n)) = module_names(p.tree.root_node(), src)
            .into_iter()
            .find(|(name, _)| name == NS)
    {
        return Err(b.unsupported(
            file,
            n,
            format!("the file already has a module-level `{NS}`; the runtime module is imported under that name, so rename yours"),
        ));
    }
    let top: Vec<Node> = named_children(p.tree.root_node())
        .into_iter()
        .filter(|n| Some(*n) != present.as_ref().map(|(stmt, _)| *stmt))
        .collect();
    let commonjs = b.commonjs[file];
    let imports: Vec<Node> = top
        .iter()
        .copied()
        .filter(|n| n.kind() == "import_statement" || (commonjs && require_of(*n, src).is_some()))
        .collect();
    let require_style = !imports.is_empty()
        && imports
            .iter()
            .all(|n| !descendants(*n, "import_require_clause").is_empty());
    let code = if commonjs {
        format!("const {NS} = require(\"{spec}\");")
    } else if require_style {
        format!("import {NS} = require(\"{spec}\");")
    } else {
        format!("import * as {NS} from \"{spec}\";")
    };
    let code = restyle(&code, b.style(file));
    let eol = p.file.style.eol;
    if let Some((stmt, found)) = present {
        // as apply inserted it: after the other imports, or before the first statement
        let first = top
            .first()
            .is_none_or(|n| n.start_byte() > stmt.start_byte());
        let text = if first && imports.is_empty() {
            format!("{code}{eol}{eol}")
        } else {
            format!("{code}{eol}")
        };
        let at = line_start(src, stmt.start_byte());
        b.push(
            CHECK_IMPORT,
            "import of the runtime module",
            file,
            at,
            text,
            Some(line(stmt)),
        );
        let (status, detail) = if found != spec {
            (
                Status::Malformed,
                format!(
                    "`{NS}` is imported from \"{found}\", not from the runtime module (\"{spec}\")"
                ),
            )
        } else {
            (Status::Ok, format!("`{NS}`: imported"))
        };
        b.finding("bound", status, file, line(stmt), detail);
        return Ok(());
    }
    let (offset, text) = match imports.last() {
        Some(last) => {
            let at = line_end_after(src, last.end_byte());
            if at == src.len() && !src.ends_with('\n') {
                (at, format!("{eol}{code}"))
            } else {
                (at, format!("{code}{eol}"))
            }
        }
        None => {
            let first = top.iter().copied().find(|n| {
                !(n.kind() == "comment"
                    || n.kind() == "hash_bang_line"
                    || (n.kind() == "expression_statement"
                        && n.named_child(0).is_some_and(|s| s.kind() == "string")))
            });
            match first {
                Some(n) => (line_start(src, n.start_byte()), format!("{code}{eol}{eol}")),
                None => (src.len(), format!("{code}{eol}")),
            }
        }
    };
    b.push(
        CHECK_IMPORT,
        "import of the runtime module",
        file,
        offset,
        text,
        None,
    );
    Ok(())
}

/// A block's statements can take a line of their own at its top and bottom: its `{` ends a line
/// and its `}` starts one.
fn block_on_own_lines(block: Node, src: &str) -> bool {
    let open_end = line_end_after(src, block.start_byte());
    let after_open = src[block.start_byte() + 1..open_end].trim();
    let close = block.end_byte() - 1;
    (after_open.is_empty() || after_open.starts_with("//"))
        && src[line_start(src, close)..close].trim().is_empty()
        && block.start_position().row != block.end_position().row
}

/// The first statement of a block that is a call of `acpProgress.<fun>(...)` (as `return
/// <call>` or as an expression statement), with its index.
fn ns_statement<'t>(block: Node<'t>, fun: &str, src: &str) -> Option<(usize, Node<'t>, Node<'t>)> {
    statements(block)
        .into_iter()
        .enumerate()
        .find_map(|(k, s)| {
            let expr = match s.kind() {
                "return_statement" | "expression_statement" => s.named_child(0)?,
                _ => return None,
            };
            (expr.kind() == "call_expression" && callee(expr, src) == (NS, fun))
                .then_some((k, s, expr))
        })
}

/// The connection and session id the turn reads, checked where they are read: the entry of the
/// handler, before any of its own code ran.
fn check_reads(b: &mut Builder, file: usize, func: Node, call: Node, what: &str) {
    let src = b.files[file].file.text.as_str();
    let args = arguments(call);
    for arg in args.iter().take(args.len().saturating_sub(1)) {
        let (names, uses_this) = reads(*arg, src);
        if uses_this || text(*arg, src).starts_with("this.") {
            let field = text(*arg, src)
                .strip_prefix("this.")
                .filter(|f| !f.contains(['.', '(', '[', ' ']));
            match (this_class(func), field) {
                (Some(class), Some(field)) => match field_bound(b.files, file, class, field) {
                    Some((f, l, how)) => b.finding(
                        "bound",
                        Status::Ok,
                        f,
                        l,
                        format!("`this.{field}` read by the {what}: {how}"),
                    ),
                    None => b.finding(
                        "bound",
                        Status::Malformed,
                        file,
                        line(call),
                        format!(
                            "the {what} reads `this.{field}`, which {} never sets before a prompt (no initializer, parameter property or constructor assignment)",
                            name_of(class, src)
                        ),
                    ),
                },
                (None, _) => b.finding(
                    "bound",
                    Status::Malformed,
                    file,
                    line(call),
                    format!("the {what} reads `this` outside a class method"),
                ),
                (Some(_), None) => {}
            }
        }
        for (name, _) in names {
            if name == NS {
                continue;
            }
            match bound_at_entry(b.files, file, func, &name) {
                Some((f, l, how)) => b.finding(
                    "bound",
                    Status::Ok,
                    f,
                    l,
                    format!("`{name}` read by the {what}: {how}"),
                ),
                None => b.finding(
                    "bound",
                    Status::Malformed,
                    file,
                    line(call),
                    format!(
                        "the {what} reads `{name}`, which is not bound where it runs (not a parameter, a module-level name or a global)"
                    ),
                ),
            }
        }
    }
}

/// Whether only blanks come before a node on its first line.
fn starts_line(n: Node, src: &str) -> bool {
    src[line_start(src, n.start_byte())..n.start_byte()]
        .trim()
        .is_empty()
}

/// Whether only blanks come after a node on its last line.
fn ends_line(n: Node, src: &str) -> bool {
    src[n.end_byte()..line_end_after(src, n.end_byte())]
        .trim()
        .is_empty()
}

fn prompt_cover(
    b: &mut Builder,
    h: &Handler,
    func: Node,
    conn: &Option<Conn>,
    session_id: &str,
) -> Result<()> {
    let file = h.file;
    let p = &b.files[file];
    let src = p.file.text.as_str();
    let eol = p.file.style.eol;
    if func.kind().starts_with("generator") || text(func, src).trim_start().starts_with('*') {
        return Err(b.unsupported(
            file,
            func,
            format!("the prompt handler `{}` is a generator", h.name),
        ));
    }
    let body = body(func).ok_or_else(|| {
        b.unsupported(
            file,
            func,
            format!("the prompt handler `{}` has no body", h.name),
        )
    })?;
    let asyncness = if is_async(func) { "async " } else { "" };
    let conn_text = |b: &Builder| -> Result<String> {
        match conn {
            Some(c) => Ok(c.text.clone()),
            None => {
                let candidates = this_class(func)
                    .map(|c| super::locate::field_candidates(b.files, file, c))
                    .unwrap_or_default();
                Err(Error::Unlocatable {
                    site: "connection",
                    detail: format!(
                        "`{}` at {}:{} handles session/prompt, but where its class keeps the connection the SDK handed over is unknown; fields set before a prompt: {}",
                        h.name,
                        b.files[file].file.rel,
                        h.line,
                        if candidates.is_empty() {
                            "none".to_string()
                        } else {
                            candidates.join(", ")
                        }
                    ),
                    pin_key: "typescript.connection",
                })
            }
        }
    };
    let style = b.style(file);
    let tail = restyle("});", style);
    let head_of =
        |conn: &str| format!("return {NS}.turn({conn}, {session_id}, {asyncness}() => {{");
    if body.kind() == "statement_block" {
        if let Some((k, stmt, call)) = ns_statement(body, "turn", src) {
            // what apply inserted, as it would insert it now (revert takes out exactly that)
            let head = conn.as_ref().map(|c| head_of(&c.text));
            let indent = indent_at(src, stmt.start_byte()).to_string();
            let (open_at, open) = if starts_line(stmt, src) {
                (
                    line_start(src, stmt.start_byte()),
                    head.map(|h| format!("{indent}{h}{eol}")),
                )
            } else {
                (stmt.start_byte() - 1, head.map(|h| format!(" {h}")))
            };
            let (close_at, close) = if ends_line(stmt, src) {
                (
                    line_start(src, stmt.end_byte()),
                    format!("{indent}{tail}{eol}"),
                )
            } else {
                (
                    stmt.end_byte().saturating_sub(tail.len()),
                    format!("{tail} "),
                )
            };
            b.push(
                CHECK_OPEN,
                "turn start",
                file,
                open_at,
                open.unwrap_or_default(),
                Some(line(stmt)),
            );
            b.push(
                CHECK_CLOSE,
                "turn end",
                file,
                close_at,
                close,
                Some(stmt.end_position().row + 1),
            );
            if k > 0 {
                b.finding(
                    "hook.start",
                    Status::Malformed,
                    file,
                    line(stmt),
                    format!("`{}` runs {k} statement(s) before the turn opens; the turn must open first", h.name),
                );
            }
            check_reads(b, file, func, call, "turn start");
            connection_finding(b, conn);
            return Ok(());
        }
        if statements(body).is_empty() {
            return Err(b.unsupported(
                file,
                body,
                format!("the prompt handler `{}` is empty", h.name),
            ));
        }
        let head = head_of(&conn_text(b)?);
        if block_on_own_lines(body, src) {
            let first = statements(body)[0];
            let indent = indent_at(src, first.start_byte()).to_string();
            let open_at = line_end_after(src, body.start_byte());
            let close_at = line_start(src, body.end_byte() - 1);
            b.push(
                CHECK_OPEN,
                "turn start",
                file,
                open_at,
                format!("{indent}{head}{eol}"),
                None,
            );
            b.push(
                CHECK_CLOSE,
                "turn end",
                file,
                close_at,
                format!("{indent}{tail}{eol}"),
                None,
            );
        } else {
            b.push(
                CHECK_OPEN,
                "turn start",
                file,
                body.start_byte() + 1,
                format!(" {head}"),
                None,
            );
            b.push(
                CHECK_CLOSE,
                "turn end",
                file,
                body.end_byte() - 1,
                format!("{tail} "),
                None,
            );
        }
    } else {
        // an arrow function's expression body
        let open_of = |conn: &str| format!("{NS}.turn({conn}, {session_id}, {asyncness}() => ");
        if body.kind() == "call_expression" && callee(body, src) == (NS, "turn") {
            b.push(
                CHECK_OPEN,
                "turn start",
                file,
                body.start_byte(),
                conn.as_ref().map(|c| open_of(&c.text)).unwrap_or_default(),
                Some(line(body)),
            );
            b.push(
                CHECK_CLOSE,
                "turn end",
                file,
                body.end_byte() - 1,
                ")".into(),
                Some(body.end_position().row + 1),
            );
            check_reads(b, file, func, body, "turn start");
            connection_finding(b, conn);
            return Ok(());
        }
        let open = open_of(&conn_text(b)?);
        b.push(
            CHECK_OPEN,
            "turn start",
            file,
            body.start_byte(),
            open,
            None,
        );
        b.push(
            CHECK_CLOSE,
            "turn end",
            file,
            body.end_byte(),
            ")".into(),
            None,
        );
    }
    connection_finding(b, conn);
    Ok(())
}

fn connection_finding(b: &mut Builder, conn: &Option<Conn>) {
    if let Some(c) = conn {
        b.finding(
            "connection",
            Status::Ok,
            c.file,
            c.line,
            format!("`{}`: {}", c.text, c.origin),
        );
    }
}

fn cancel_cover(b: &mut Builder, h: &Handler, func: Node, session_id: &str) -> Result<()> {
    let file = h.file;
    let p = &b.files[file];
    let src = p.file.text.as_str();
    let eol = p.file.style.eol;
    let Some(body) = body(func) else {
        return Ok(());
    };
    let style = b.style(file);
    let code = restyle(&format!("{NS}.cancel({session_id});"), style);
    if body.kind() == "statement_block" {
        if let Some((_, stmt, _)) = ns_statement(body, "cancel", src) {
            let indent = indent_at(src, stmt.start_byte());
            let (at, inserted) = if starts_line(stmt, src) && ends_line(stmt, src) {
                (
                    line_start(src, stmt.start_byte()),
                    format!("{indent}{code}{eol}"),
                )
            } else {
                (stmt.start_byte() - 1, format!(" {code} "))
            };
            b.push(CHECK_CANCEL, "cancel", file, at, inserted, Some(line(stmt)));
            return Ok(());
        }
        match statements(body).first() {
            Some(first) if block_on_own_lines(body, src) => {
                let indent = indent_at(src, first.start_byte()).to_string();
                let at = line_end_after(src, body.start_byte());
                b.push(
                    CHECK_CANCEL,
                    "cancel",
                    file,
                    at,
                    format!("{indent}{code}{eol}"),
                    None,
                );
            }
            _ => b.push(
                CHECK_CANCEL,
                "cancel",
                file,
                body.start_byte() + 1,
                format!(" {code} "),
                None,
            ),
        }
    } else {
        if text(body, src).starts_with(&format!("({NS}.cancel(")) {
            let open = format!("({NS}.cancel({session_id}), ");
            let l = Some(line(body));
            b.push(CHECK_CANCEL, "cancel", file, body.start_byte(), open, l);
            let end = Some(body.end_position().row + 1);
            b.push(
                CHECK_CANCEL,
                "cancel",
                file,
                body.end_byte() - 1,
                ")".into(),
                end,
            );
            return Ok(());
        }
        b.push(
            CHECK_CANCEL,
            "cancel",
            file,
            body.start_byte(),
            format!("({NS}.cancel({session_id}), "),
            None,
        );
        b.push(
            CHECK_CANCEL,
            "cancel",
            file,
            body.end_byte(),
            ")".into(),
            None,
        );
    }
    Ok(())
}

fn value_cover(b: &mut Builder, h: &Handler, expr: Node, wrapped: bool) {
    let (fun, what) = match h.role {
        Role::Prompt => (
            "handler",
            "the SDK handler's context: its `client` and `params`",
        ),
        Role::Cancel => ("cancelHandler", ""),
    };
    let (open, close): (&'static [&'static str], &'static [&'static str]) = match h.role {
        Role::Prompt => (CHECK_OPEN, CHECK_CLOSE),
        Role::Cancel => (CHECK_CANCEL, CHECK_CANCEL),
    };
    let (l1, l2) = match h.role {
        Role::Prompt => ("turn start", "turn end"),
        Role::Cancel => ("cancel", "cancel"),
    };
    let present = wrapped.then(|| line(expr));
    let end_line = wrapped.then(|| expr.end_position().row + 1);
    // present: `acpProgress.handler(fn)` is `expr`, its `)` the last byte
    let close_at = if wrapped {
        expr.end_byte() - 1
    } else {
        expr.end_byte()
    };
    let (o, c) = (format!("{NS}.{fun}("), ")".to_string());
    b.push(open, l1, h.file, expr.start_byte(), o, present);
    b.push(close, l2, h.file, close_at, c, end_line);
    if h.role == Role::Prompt {
        b.finding(
            "connection",
            Status::Ok,
            h.file,
            h.line,
            format!("`{}`: {what}", h.name),
        );
    }
}

/// The runtime module: current, or replaced whole; never written over a file of the agent.
fn module_part(b: &mut Builder, module: &Module) -> Result<()> {
    let m = &b.files[module.file];
    if m.file.exists && !super::is_runtime_module(&m.file.text) {
        return Err(Error::Unsupported {
            file: m.file.rel.clone(),
            line: 1,
            message: "this file is not acp-patch's runtime module, but apply would write the module here; rename it".into(),
        });
    }
    let current = m.file.text == module.text;
    let replaces = if current { 0 } else { m.file.text.len() };
    let stale = m.file.exists && !current;
    b.parts.push(Part {
        checks: CHECK_MODULE,
        label: "runtime module",
        file: module.file,
        offset: 0,
        replaces,
        text: module.text.clone(),
        present: current.then_some(1),
        anchor_line: 1,
    });
    if stale {
        b.finding(
            "runtime",
            Status::Malformed,
            module.file,
            1,
            "out of date (its text is not what this acp-patch writes); apply replaces it".into(),
        );
    }
    Ok(())
}

/// The parts of every module, import, cover and wrap; `module_of[file]` is the index in
/// `modules` of the module a file imports.
pub fn build(
    files: &[Parsed],
    modules: &[Module],
    module_of: &[usize],
    commonjs: &[bool],
    handlers: &[Handler],
    sends: &[Send],
) -> Result<Built> {
    let mut b = Builder {
        files,
        commonjs,
        parts: Vec::new(),
        findings: Vec::new(),
    };
    for module in modules {
        module_part(&mut b, module)?;
    }
    let mut touched: Vec<usize> = handlers
        .iter()
        .map(|h| h.file)
        .chain(sends.iter().map(|s| s.file))
        .collect();
    touched.sort();
    touched.dedup();
    for f in touched.iter().copied() {
        if !modules.iter().any(|m| m.file == f) {
            import_part(&mut b, f, &modules[module_of[f]])?;
        }
    }
    for h in handlers {
        match (&h.cover, h.role) {
            (
                Cover::Body {
                    func,
                    conn,
                    session_id,
                },
                Role::Prompt,
            ) => prompt_cover(&mut b, h, *func, conn, session_id)?,
            (
                Cover::Body {
                    func, session_id, ..
                },
                Role::Cancel,
            ) => cancel_cover(&mut b, h, *func, session_id)?,
            (Cover::Value { expr, wrapped }, _) => value_cover(&mut b, h, *expr, *wrapped),
        }
    }
    for s in sends {
        let open = format!("{NS}.emitter(");
        let present = s.wrapped.then(|| line(s.call));
        // present: `acpProgress.emitter(target)` around the target
        let (open_at, close_at) = if s.wrapped {
            (s.target.start_byte() - open.len(), s.target.end_byte())
        } else {
            (s.target.start_byte(), s.target.end_byte())
        };
        let label = "emitter around the send";
        b.push(CHECK_SEND, label, s.file, open_at, open, present);
        b.push(CHECK_SEND, label, s.file, close_at, ")".into(), present);
    }
    Ok(Built {
        parts: b.parts,
        findings: b.findings,
    })
}

#[cfg(test)]
mod tests {
    use super::relative_spec;

    #[test]
    fn relative_specifiers_between_folders() {
        assert_eq!(
            relative_spec("src/agent.ts", "src/acp-progress.ts"),
            "./acp-progress.ts"
        );
        assert_eq!(
            relative_spec("src/a/b.ts", "src/acp-progress.ts"),
            "../acp-progress.ts"
        );
        assert_eq!(
            relative_spec("main.ts", "src/acp-progress.ts"),
            "./src/acp-progress.ts"
        );
        assert_eq!(relative_spec("src/x/y/z.ts", "src/x/m.ts"), "../m.ts");
    }
}
