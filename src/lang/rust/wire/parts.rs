//! An agent without an SDK, end to end: its anchors (see the module above), the runtime
//! module rendered for it (serde_json values; tokio tasks or threads as timers, to match
//! the agent), every edit as a `Part` (a write replaced by its wrapped form, which revert
//! puts back; the start at each prompt handler's entry; `cancel` at each `session/cancel`
//! handler's), and what verify establishes beyond them.

use super::{Raw, locate};
use crate::error::{Error, Result};
use crate::lang::parts::{CHECK_SENDS, CHECK_TURN_END, Finding, Part};
use crate::lang::rust::manifest::Manifest;
use crate::lang::rust::modules::{self, Layout};
use crate::lang::rust::sdk::Package;
use crate::lang::rust::{Analysis, Parsed, pieces, placement, runtime, syntax};
use crate::project::Project;
use crate::report::Shape;
use crate::report::Status;
use std::collections::BTreeSet;
use syn::spanned::Spanned;

/// The start at a prompt handler's entry opens the turn; the guard it binds ends it.
const CHECK_BEGIN: &[&str] = &["hook.start", "turn_end"];
/// Tokio's task ids are stable from 1.41 on.
const TASK_IDS: (u64, u64) = (1, 41);

/// The analysis of a tree whose `Cargo.toml` does not depend on the SDK.
pub fn analyze(
    decisions: &crate::lang::survey::Decisions,
    project: &Project,
    mut files: Vec<Parsed>,
) -> Result<Analysis> {
    let no_agent = |detail: String| Error::NoAgent {
        root: project.root.clone(),
        detail,
    };
    let Some(manifest) = Manifest::without_sdk(project)? else {
        return Err(no_agent(format!(
            "no Cargo.toml depending on {}",
            Package::names()
        )));
    };
    let Layout {
        modules,
        runtime_files,
    } = Layout::read(&manifest, &files, &project.root)?;
    let owned = |f: usize| modules::owned(&modules, &runtime_files, f);
    // a module that does not parse may hold a write: refuse, not miss it
    modules::unparsed_owned(&files, &modules, &runtime_files)?;
    let collected = syntax::collect(&files, &runtime_files);
    let json = manifest.import_name("serde_json");
    let serde = manifest.import_name("serde");
    // the inserted code names the runtime by its path (the library's, from a binary that
    // uses it: known once the roots the edits touch are)
    let run = |files: &[Parsed], lib_shared: bool| {
        let path_of = |f: usize| pieces::module_path(&modules, f, lib_shared);
        let cx = super::Context {
            collected: &collected,
            modules: &modules,
            owned: &owned,
            pins: &project.config.rust,
            json: json.as_deref().unwrap_or("serde_json"),
            serde: serde.is_some(),
            path_of: &path_of,
        };
        match locate(decisions, files, &cx)? {
            super::Located::Agent(raw) => Ok(raw),
            super::Located::NoDispatcher(pinnable) => Err(no_agent(format!(
                "no Cargo.toml depending on {}, and no dispatcher of `\"session/prompt\"` (a `match` arm, an `if method == ..`, a handler map; the string or a constant holding it) calls a fn of the crate{}",
                Package::names(),
                match pinnable.first() {
                    Some(c) => format!(
                        "; the fn that handles it can be pinned, e.g. `[rust] prompt = \"{}:{}\"` (candidates: {})",
                        c.location.file,
                        c.name,
                        pinnable
                            .iter()
                            .map(|c| format!("{}:{}", c.location.file, c.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    None => String::new(),
                }
            ))),
        }
    };
    let mut raw = run(&files, false)?;
    let Some(json) = json.clone() else {
        return Err(Error::Unsupported {
            file: manifest.file.rel.clone(),
            line: 1,
            message: "the agent answers `session/prompt` with a JSON-RPC loop of its own but does not depend on serde_json, which acp-patch's runtime builds the card's messages with; add `serde_json = \"1\"` to [dependencies]".into(),
        });
    };
    let mut touched: Vec<usize> = raw.handlers.iter().map(|h| h.file).collect();
    touched.extend(raw.sites.iter().map(|s| s.file));
    touched.extend(raw.cancels.iter().map(|c| c.file));
    let (module_files, lib_shared) =
        crate::lang::rust::place_runtime(&mut files, project, &modules, &touched)?;
    if lib_shared {
        raw = run(&files, true)?;
    }
    let tokio = manifest.has_tokio();
    let task_ids = tokio
        && manifest
            .locked_tokio(&project.root)
            .is_none_or(|v| v >= TASK_IDS);
    // messages of the agent's own types need serde's side of the runtime
    let structs = raw.sites.iter().any(|s| s.wrapped.contains("::wire_any("));
    let serde = serde.as_deref().filter(|_| structs);
    let module_text = runtime::render_raw(project, &json, serde, tokio, task_ids)?;
    let path = |f: usize| pieces::module_path(&modules, f, lib_shared);
    let mut parts = edits(&files, &collected, &raw, &path)?;
    let mfile = files.len();
    files.push(Parsed {
        file: manifest.file.clone(),
        ast: None,
        error: None,
    });
    parts.extend(pieces::build(&pieces::Input {
        files: &files,
        collected: &collected,
        modules: &modules,
        handlers: &[],
        sends: &[],
        turn_ends: &[],
        escaping: &BTreeSet::new(),
        // tokio's timers need its `rt` and `time`; threads need nothing
        manifest: tokio.then_some((mfile, &manifest)),
        module_text: &module_text,
        module_files: &module_files,
        lib_shared,
    })?);
    let mut findings = findings(&files, &collected, &raw);
    findings.extend(placement::findings(&placement::Input {
        files: &files,
        collected: &collected,
        handlers: &[],
        turn_ends: &[],
        module_files: &module_files,
        module_text: &module_text,
        dialect: crate::lang::rust::sdk::Dialect::V1,
    }));
    Ok(Analysis {
        files,
        parts,
        findings,
        shape: Shape::Protocol(Some("no SDK: its own JSON-RPC loop")),
        notes: Vec::new(),
    })
}

/// A fn's body by its byte range: (block, its range).
fn body_of(
    collected: &syntax::Collected,
    file: usize,
    span: &std::ops::Range<usize>,
) -> Option<(syn::Block, std::ops::Range<usize>)> {
    let fns = collected
        .fns
        .iter()
        .filter(|(f, _)| *f == file)
        .map(|(_, f)| (f.span().byte_range(), &*f.block));
    let methods = collected
        .methods
        .iter()
        .filter(|(f, _, _)| *f == file)
        .map(|(_, _, f)| (f.span().byte_range(), &f.block));
    fns.chain(methods)
        .find(|(s, _)| s == span)
        .map(|(_, b)| ((*b).clone(), b.span().byte_range()))
}

/// Every edit in the agent's files.
fn edits(
    files: &[Parsed],
    collected: &syntax::Collected,
    raw: &Raw,
    path: &dyn Fn(usize) -> String,
) -> Result<Vec<Part>> {
    let mut parts = Vec::new();
    for s in &raw.sites {
        let f = &files[s.file].file;
        let mut part = Part::insertion(
            f,
            s.file,
            CHECK_SENDS,
            "write wrapped",
            s.unit.start,
            s.wrapped.clone(),
            s.present.then_some(s.line),
        );
        if s.present {
            part = part.present_at(Some(s.unit.start));
        } else {
            part.replaces = s.unit.len();
        }
        part.restore = s.restore.clone();
        parts.push(part);
    }
    for h in &raw.handlers {
        let (block, expr) =
            body_of(collected, h.file, &h.span).ok_or_else(|| Error::Unsupported {
                file: files[h.file].file.rel.clone(),
                line: h.line,
                message: format!("{}: its body was not found", h.name),
            })?;
        let stmt = format!(
            "let _acp_turn = {}::begin({}, {});",
            path(h.file),
            h.key.expr,
            h.writer
        );
        parts.extend(pieces::statement_parts(
            files,
            h.file,
            Some(&block),
            expr,
            &stmt,
            CHECK_BEGIN,
            "prompt handler: start and turn end",
            &["acp_progress::begin("],
        )?);
    }
    for c in &raw.cancels {
        let Some((block, expr)) = body_of(collected, c.file, &c.span) else {
            continue;
        };
        let stmt = format!("{}::cancel({});", path(c.file), c.key.expr);
        parts.extend(pieces::statement_parts(
            files,
            c.file,
            Some(&block),
            expr,
            &stmt,
            CHECK_TURN_END,
            "cancel handler",
            &["acp_progress::cancel("],
        )?);
    }
    Ok(parts)
}

fn finding(check: &'static str, ok: bool, file: usize, line: usize, detail: String) -> Finding {
    Finding {
        check,
        status: if ok { Status::Ok } else { Status::Malformed },
        file,
        line,
        detail,
    }
}

/// The card's writer of each handler, the names its start reads, and where the start is.
fn findings(files: &[Parsed], collected: &syntax::Collected, raw: &Raw) -> Vec<Finding> {
    let mut out = Vec::new();
    for h in &raw.handlers {
        let from = &h.writer_from;
        out.push(finding(
            "connection",
            true,
            h.file,
            h.line,
            format!(
                "{}: the agent's own writer of `session/update` messages, as {} calls it at {}:{}",
                h.name, from.name, from.location.file, from.location.line
            ),
        ));
        let mut reads: Vec<String> = h.key.reads.clone();
        for r in &h.writer_reads {
            if !reads.contains(r) {
                reads.push(r.clone());
            }
        }
        let unbound: Vec<&String> = reads.iter().filter(|r| !h.params.contains(r)).collect();
        let listed = |names: &[&String]| {
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let all: Vec<&String> = reads.iter().collect();
        out.push(if unbound.is_empty() {
            finding(
                "bound",
                true,
                h.file,
                h.line,
                format!("{}'s start reads {} (its parameters)", h.name, listed(&all)),
            )
        } else {
            finding(
                "bound",
                false,
                h.file,
                h.line,
                format!(
                    "{}'s start reads {}, which is not a parameter of the handler",
                    h.name,
                    listed(&unbound)
                ),
            )
        });
        out.push(finding(
            "turn_end",
            true,
            h.file,
            h.line,
            format!(
                "{} returning ends the turn (a response to the prompt written there ends it before it goes out)",
                h.name
            ),
        ));
        // the start is the body's first statement (a send before it would precede the card)
        if let Some((block, _)) = body_of(collected, h.file, &h.span) {
            let src = &files[h.file].file.text;
            let at = block
                .stmts
                .iter()
                .position(|s| src[s.span().byte_range()].contains("acp_progress::begin("));
            if let Some(k) = at.filter(|k| *k > 0) {
                out.push(finding(
                    "hook.start",
                    false,
                    h.file,
                    block.stmts[k].span().start().line,
                    format!(
                        "the start of {} is not its first statement: the card may open after a write",
                        h.name
                    ),
                ));
            }
        }
    }
    out
}
