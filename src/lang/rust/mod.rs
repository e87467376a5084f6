//! Rust agents on the `agent-client-protocol` crate, parsed with `syn` (byte offsets from
//! `proc-macro2` span locations); edits are spliced into the original text.

mod locate;
mod manifest;
mod pieces;

use crate::error::{Error, Result};
use crate::lang::Language;
use crate::lang::parts::{self, Naming, ParsedSource, Part, parse_error};
use crate::plan::Plan;
use crate::project::Project;
use crate::report::Report;
use crate::source::SourceFile;
use locate::Generation;
use manifest::Manifest;

pub struct Rust;

pub(crate) struct Parsed {
    pub file: SourceFile,
    /// `None` for a file that does not parse, and for the manifest.
    pub ast: Option<syn::File>,
    /// The first syntax error: (byte offset, message).
    pub error: Option<(usize, String)>,
}

impl ParsedSource for Parsed {
    fn source(&self) -> &SourceFile {
        &self.file
    }

    fn syntax_error(&self) -> Option<&(usize, String)> {
        self.error.as_ref()
    }
}

/// Bracket nesting syn is given at most: it recurses per level and would overflow the
/// stack on a file nested thousands deep (real code stays far below).
const MAX_NESTING: usize = 256;

fn parse(text: &str) -> std::result::Result<syn::File, (usize, String)> {
    if let Some(at) = crate::source::nested_deeper_than(text, MAX_NESTING) {
        return Err((
            at,
            format!("brackets nested more than {MAX_NESTING} deep; acp-patch does not parse it"),
        ));
    }
    syn::parse_file(text).map_err(|e| (e.span().byte_range().start.min(text.len()), e.to_string()))
}

struct Analysis {
    files: Vec<Parsed>,
    parts: Vec<Part>,
    shape: String,
}

impl Rust {
    fn parse_all(&self, project: &Project) -> Vec<Parsed> {
        project
            .files_with_extension(self.extensions())
            .filter(|f| self.worth_parsing(&f.text))
            .map(|f| {
                let (ast, error) = match parse(&f.text) {
                    Ok(ast) => (Some(ast), None),
                    Err(e) => (None, Some(e)),
                };
                Parsed {
                    file: f.clone(),
                    ast,
                    error,
                }
            })
            .collect()
    }

    fn analyze(&self, project: &Project) -> Result<Analysis> {
        let mut files = self.parse_all(project);
        let manifest = Manifest::load(project)?.ok_or_else(|| Error::NoAgent {
            root: project.root.clone(),
            detail: format!("no Cargo.toml depending on {}", manifest::SDK),
        })?;
        let generation = Generation::of(manifest.sdk_version);
        if manifest.sdk_version < (0, 8) {
            return Err(Error::Unsupported {
                file: manifest.file.rel.clone(),
                line: 1,
                message: format!(
                    "{} {} builds messages with struct literals (before 0.8); acp-patch inserts code for 0.8 and later",
                    manifest::SDK,
                    manifest.sdk_version_text
                ),
            });
        }
        let sites = match locate::locate(&files, &project.config.rust) {
            Ok(s) => s,
            Err(e @ (Error::NoAgent { .. } | Error::Unlocatable { .. })) => {
                return Err(files.iter().find_map(parse_error).unwrap_or(e));
            }
            Err(e) => return Err(e),
        };
        let mfile = files.len();
        files.push(Parsed {
            file: manifest.file.clone(),
            ast: None,
            error: None,
        });
        let parts = pieces::build(
            &files,
            project,
            &sites,
            Some((mfile, &manifest)),
            generation,
            &pieces::schema_path(generation, manifest.sdk_version, &manifest.sdk_ident),
        )?;
        let shape = match generation {
            Generation::Trait => "trait-API emitter",
            Generation::Builder => "builder-API emitter",
            Generation::V1 => "v1-API emitter",
        };
        Ok(Analysis {
            files,
            parts,
            shape: shape.to_string(),
        })
    }
}

impl Language for Rust {
    fn name(&self) -> &'static str {
        "rust"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["rs"]
    }

    fn worth_parsing(&self, text: &str) -> bool {
        [
            "SessionUpdate",
            "PromptRequest",
            "agent_client_protocol",
            "acp",
        ]
        .iter()
        .any(|w| text.contains(w))
            || text.contains("struct ")
    }

    /// Rust source, or (for the dependency edit) a Cargo manifest.
    fn syntax_error(&self, text: &str) -> Option<(usize, String)> {
        match parse(text) {
            Ok(_) => None,
            Err(e) => {
                let manifest = text.contains("[package]") || text.contains("[dependencies]");
                if manifest && text.parse::<toml_edit::DocumentMut>().is_ok() {
                    None
                } else {
                    Some(e)
                }
            }
        }
    }

    fn detect(&self, project: &Project) -> bool {
        let root = &project.root;
        std::fs::read_to_string(root.join("Cargo.toml")).is_ok_and(|t| t.contains(manifest::SDK))
            && project
                .files_with_extension(self.extensions())
                .any(|f| f.text.contains("agent_client_protocol"))
    }

    fn plan(&self, project: &Project) -> Result<Plan> {
        let a = self.analyze(project)?;
        parts::plan(&a.files, &a.parts)
    }

    fn build_check(
        &self,
        project: &Project,
        dir: &std::path::Path,
    ) -> Option<std::result::Result<std::process::Command, String>> {
        Some(crate::compile::cargo_check_command(&project.root, dir))
    }

    fn inventory(&self, project: &Project) -> Result<parts::Inventory> {
        let a = self.analyze(project)?;
        Ok(parts::Inventory::new(&a.files, a.parts, "acp_progress_"))
    }

    fn verify(&self, project: &Project) -> Result<Report> {
        let a = self.analyze(project)?;
        let naming = Naming {
            language: self.name(),
            checks: parts::CHECKS,
            shape: a.shape.clone(),
            callback: "agent_progress_callback",
            defines: &block_items,
            has_function: &|_, _| false, // tree-sitter files only; see report_any
            marker: "acp_progress_",
        };
        let root = project.root.display().to_string();
        let calls = pieces::hook_calls(&a.files);
        parts::report_any(
            &root,
            &a.files,
            &a.parts,
            &calls,
            &[],
            &naming,
            &|i, name| defines(&a.files[i], name),
        )
    }
}

/// Module-level items a rendered block defines (nothing for statements and fields).
fn block_items(block: &str) -> Vec<String> {
    let Ok(file) = syn::parse_file(block) else {
        return Vec::new();
    };
    file.items
        .iter()
        .filter_map(|item| match item {
            syn::Item::Fn(f) => Some(f.sig.ident.to_string()),
            syn::Item::Struct(s) => Some(s.ident.to_string()),
            syn::Item::Enum(e) => Some(e.ident.to_string()),
            syn::Item::Type(t) => Some(t.ident.to_string()),
            _ => None,
        })
        .collect()
}

/// Whether a file defines a module-level item `name`.
fn defines(p: &Parsed, name: &str) -> bool {
    p.ast.as_ref().is_some_and(|ast| {
        ast.items.iter().any(|item| match item {
            syn::Item::Fn(f) => f.sig.ident == name,
            syn::Item::Struct(s) => s.ident == name,
            syn::Item::Enum(e) => e.ident == name,
            syn::Item::Type(t) => t.ident == name,
            _ => false,
        })
    })
}
