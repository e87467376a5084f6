//! The protocol strategy: anchored only on what the SDK contract fixes. Every prompt handler
//! the SDK calls runs through `acpProgress.turn` / `acpProgress.handler` (the card opens at its
//! entry and closes at its end), every `session/cancel` handler through `acpProgress.cancel`,
//! and every send of a session update through `acpProgress.emitter(...)`; the runtime lives in
//! one module beside the agent's sources (`acp-progress.ts`, from `templates/typescript/`).

mod locate;
mod pieces;
mod scope;

use crate::error::{Error, Result};
use crate::lang::parts::{self, Finding, Parsed, Part};
use crate::project::Project;
use crate::render::{fill, reindent};
use crate::source::SourceFile;

/// The namespace the agent's files import the runtime module as.
pub const NS: &str = "acpProgress";
/// The first line of the runtime module.
pub const MARKER: &str = "// acp-patch: runtime module";
/// The runtime module's file name, without its extension.
pub const MODULE_STEM: &str = "acp-progress";

pub fn is_runtime_module(text: &str) -> bool {
    text.trim_start_matches('\u{feff}').starts_with(MARKER)
}

pub struct Analysis {
    /// The parsed files, the runtime module among them (a new file when apply creates it).
    pub files: Vec<Parsed>,
    pub parts: Vec<Part>,
    pub findings: Vec<Finding>,
}

/// Where the runtime module goes: beside the first prompt handler's file, with its ending.
fn module_place(files: &[Parsed], project: &Project) -> Result<(String, String, usize)> {
    let sends = locate::sends(files)?;
    let handlers = locate::handlers(files, &sends, &project.config.typescript)?;
    let first = handlers
        .iter()
        .filter(|h| h.role == locate::Role::Prompt)
        .map(|h| h.file)
        .min_by_key(|f| files[*f].file.rel.clone())
        .expect("handlers() finds a prompt handler or fails");
    let rel = &files[first].file.rel;
    let dir = rel
        .rsplit_once('/')
        .map(|(d, _)| format!("{d}/"))
        .unwrap_or_default();
    let ext = match rel.rsplit('.').next() {
        Some("mts") => "mts",
        Some("cts") => "cts",
        _ => "ts",
    };
    Ok((format!("{dir}{MODULE_STEM}.{ext}"), ext.to_string(), first))
}

/// The runtime module as apply writes it, in the style of the file it sits beside.
fn render_module(project: &Project, beside: &Parsed) -> Result<String> {
    let t = project.templates.get("typescript/acp-progress.ts")?;
    let code = fill(&t, &[("PREFIX", &project.env_prefix)]);
    let style = crate::lang::typescript::style::detect(beside.tree.root_node(), &beside.file.text);
    let code = crate::lang::typescript::style::restyle(&code, style);
    Ok(reindent(
        &code,
        "",
        &beside.file.style.indent_unit,
        beside.file.style.eol,
    ))
}

/// Every part of the protocol strategy (present or not) and the placement findings.
pub fn analyze(project: &Project, mut files: Vec<Parsed>) -> Result<Analysis> {
    let fail = |files: &[Parsed], e: Error| match e {
        Error::NoAgent { .. }
        | Error::Unlocatable { .. }
        | Error::Unsupported { .. }
        | Error::Ambiguous { .. } => files.iter().find_map(parts::parse_error).unwrap_or(e),
        e => e,
    };
    let (module_rel, ext, beside) = module_place(&files, project).map_err(|e| fail(&files, e))?;
    let text = render_module(project, &files[beside])?;
    let module_file = match files.iter().position(|p| p.file.rel == module_rel) {
        Some(i) => i,
        None if let Some(f) = project.files.iter().find(|f| f.rel == module_rel) => {
            // a file of the agent (not one it was worth parsing) where the module would go
            let tree = crate::lang::typescript::syntax::parse(&f.text, false);
            files.push(Parsed {
                file: f.clone(),
                error: crate::lang::typescript::syntax::first_error(&tree),
                tree,
            });
            files.len() - 1
        }
        None => {
            let style = files[beside].file.style.clone();
            let style = crate::source::Style {
                bom: false,
                ..style
            };
            let path = project.root.join(&module_rel);
            let file = SourceFile::new_file(path, module_rel.clone(), style);
            let tree = crate::lang::typescript::syntax::parse("", false);
            files.push(Parsed {
                file,
                tree,
                error: None,
            });
            files.len() - 1
        }
    };
    let module = pieces::Module {
        file: module_file,
        text,
        ext,
    };
    let built = {
        let sends = locate::sends(&files).map_err(|e| fail(&files, e))?;
        let handlers = locate::handlers(&files, &sends, &project.config.typescript)
            .map_err(|e| fail(&files, e))?;
        for h in &handlers {
            if let Some(e) = parts::parse_error(&files[h.file]) {
                return Err(e);
            }
        }
        pieces::build(&files, &module, &handlers, &sends).map_err(|e| fail(&files, e))?
    };
    Ok(Analysis {
        files,
        parts: built.parts,
        findings: built.findings,
    })
}

/// Names of the functions the runtime module exports.
pub fn defined_names(block: &str) -> Vec<String> {
    block
        .lines()
        .filter_map(|l| l.strip_prefix("export function "))
        .filter_map(|l| l.split(['(', '<']).next())
        .map(str::to_string)
        .collect()
}
