//! The runtime module of a Python agent: where each agent's one goes (a package every file
//! that calls it is in), the part that writes or updates it, and each importer's import of
//! it. Its names are the parent module's, beneath the locators that recognise them.

use super::package::Packages;
use super::pieces::{Builder, line};
use super::syntax::*;
use super::{RUNTIME_FILE, RUNTIME_MARKER, RUNTIME_NAME};
use crate::error::{Error, Result};
use crate::lang::parts::*;
use crate::render::{fill, reindent};
use crate::source::line_end_after;
use std::collections::BTreeMap;

/// One runtime module and the agent files that import it: every file of one import root
/// that calls the runtime shares one module, so the prompt handler's card and the emitters
/// see the same state; each import root (each agent of a tree) gets its own.
#[derive(Debug, Clone)]
pub struct Runtime {
    /// The module's file, relative to the tree.
    pub rel: String,
    /// The import root it serves (see [`super::package::Place`]).
    pub root: String,
    /// The package it is in (`[]`: a top-level module).
    pub package: Vec<String>,
    /// Files that import it, by index.
    pub importers: Vec<usize>,
}

/// Where the runtime modules go: per import root, in a package every importer is in — the
/// outermost regular one they share (the top-level package, as a rule). Importing
/// `from <that package> import acp_progress` then runs no package code the importer did not
/// already run: each of its enclosing packages has run its `__init__` (or is running it)
/// before the importer's own code, and the runtime imports only the standard library.
/// Importers in no common package (several top-level packages, or a flat layout) import it
/// as a top-level module from the import root. A runtime module already in a package every
/// importer is in stays where it is.
pub fn runtimes(files: &[Parsed], importers: Vec<usize>, packages: &Packages) -> Vec<Runtime> {
    let mut by_root: BTreeMap<String, (Vec<usize>, Vec<String>)> = BTreeMap::new();
    for file in importers {
        let place = packages.place(&files[file].file.rel);
        match by_root.get_mut(&place.root) {
            Some((importers, common)) => {
                importers.push(file);
                let shared = common
                    .iter()
                    .zip(&place.packages)
                    .take_while(|(a, b)| a == b)
                    .count();
                common.truncate(shared);
            }
            None => {
                by_root.insert(place.root, (vec![file], place.packages));
            }
        }
    }
    let rel_of = |root: &str, package: &[String]| {
        let mut parts: Vec<&str> = Vec::new();
        if !root.is_empty() {
            parts.push(root);
        }
        // the packages above the tree name folders outside it: the path starts below them
        let above = packages.above_tree(root).min(package.len());
        parts.extend(package[above..].iter().map(String::as_str));
        parts.push(RUNTIME_FILE);
        parts.join("/")
    };
    by_root
        .into_iter()
        .map(|(root, (importers, common))| {
            // an existing runtime inside the common package chain is kept (outermost first)
            let above = packages.above_tree(&root).min(common.len());
            let existing = (above..=common.len()).find(|k| {
                let rel = rel_of(&root, &common[..*k]);
                files
                    .iter()
                    .any(|p| p.file.rel == rel && p.file.text.starts_with(RUNTIME_MARKER))
            });
            let k = existing.unwrap_or_else(|| {
                (above.max(1)..=common.len())
                    .find(|k| packages.is_regular(&root, &common[above..*k]))
                    .unwrap_or(common.len())
            });
            let package = common[..k].to_vec();
            Runtime {
                rel: rel_of(&root, &package),
                root,
                package,
                importers,
            }
        })
        .collect()
}

/// Runtime modules in an agent's import root that are none of its runtimes (an older
/// acp-patch wrote them elsewhere, e.g. beside the prompt handler): apply removes them once
/// the agent's files import the one in its package, so two copies never split the state.
pub fn stale_runtimes(files: &[Parsed], runtimes: &[Runtime], packages: &Packages) -> Vec<usize> {
    files
        .iter()
        .enumerate()
        .filter(|(_, p)| p.file.exists && p.file.text.starts_with(RUNTIME_MARKER))
        .filter(|(_, p)| !runtimes.iter().any(|r| r.rel == p.file.rel))
        .filter(|(_, p)| {
            let root = packages.place(&p.file.rel).root;
            runtimes.iter().any(|r| r.root == root)
        })
        .map(|(i, _)| i)
        .collect()
}

impl<'a> Builder<'a> {
    /// The runtime module: created when missing, replaced whole when it is an older one.
    /// `style_of` is a file whose indentation and line endings it takes.
    pub(super) fn runtime_module(&mut self, file: usize, style_of: usize) -> Result<()> {
        let template = self.project.templates.get("python/acp_progress.py")?;
        let style = &self.files[style_of].file.style();
        let rendered = crate::lang::seal::seal(&reindent(
            &fill(&template, &[("PREFIX", &self.project.env_prefix)]),
            "",
            &style.indent_unit,
            style.eol,
        ));
        let existing = &self.files[file].file;
        let (replaces, present) = if !existing.exists {
            (0, None)
        } else if *existing.text == *rendered {
            (0, Some(1))
        } else if existing.text.starts_with(RUNTIME_MARKER) {
            (existing.text.len(), None) // an older runtime: brought up to date
        } else {
            return Err(Error::Unsupported {
                file: existing.rel.clone(),
                line: 1,
                message: format!(
                    "a module of this name exists and is not acp-patch's runtime module; rename it so `{RUNTIME_FILE}` can be written here"
                ),
            });
        };
        self.push(
            crate::lang::parts::CHECK_RUNTIME_MODULE,
            RUNTIME_LABEL,
            file,
            0,
            rendered,
            present,
        );
        self.parts.last_mut().expect("pushed").replaces = replaces;
        Ok(())
    }

    /// The module-level import of the runtime module, from the package it is in (an enclosing
    /// package of the importer's). An import of it spelled otherwise that apply would write
    /// (the runtime moved, e.g. by an older acp-patch beside the prompt handler) is replaced.
    pub(super) fn import_runtime(&mut self, file: usize, runtime: &Runtime) {
        let p = &self.files[file];
        let src = p.file.text.as_ref();
        let root = p.tree().root_node();
        let eol = p.file.style().eol;
        let place = self.packages.place(&p.file.rel);
        let import = self
            .packages
            .import_from_ancestor(&place, &runtime.package, RUNTIME_NAME);
        let statement = format!("{import}{eol}");
        let existing = named_children(root).into_iter().find(|n| {
            matches!(n.kind(), "import_statement" | "import_from_statement")
                && text(*n, src).contains(RUNTIME_NAME)
        });
        if let Some(n) = existing {
            let own = text(n, src);
            let ours = own.ends_with(&format!("import {RUNTIME_NAME}"))
                && !own.contains(',')
                && line_text(src, n.start_byte()) == own;
            if own != import && ours {
                let start = crate::source::line_start(src, n.start_byte());
                self.push(
                    CHECK_RUNTIME,
                    "import of the runtime module",
                    file,
                    start,
                    statement,
                    None,
                );
                self.parts.last_mut().expect("pushed").replaces =
                    line_end_after(src, n.end_byte()) - start;
                return;
            }
        }
        let offset = match last_top_level_import(root) {
            Some(imp) => line_end_after(src, imp.end_byte()),
            None => after_module_docstring(root, src),
        };
        self.push(
            CHECK_RUNTIME,
            "import of the runtime module",
            file,
            offset,
            statement,
            existing.map(line),
        );
    }
}

/// The text of the line holding `offset`, without its line ending.
fn line_text(src: &str, offset: usize) -> &str {
    let start = crate::source::line_start(src, offset);
    src[start..line_end_after(src, offset)].trim_end_matches(['\r', '\n'])
}

/// Where a first import goes in a module without imports: after its docstring and the
/// comments that open it.
fn after_module_docstring(root: tree_sitter::Node, src: &str) -> usize {
    let mut offset = 0;
    for n in named_children(root) {
        let doc = n.kind() == "expression_statement"
            && n.named_child(0).is_some_and(|s| s.kind() == "string");
        if n.kind() != "comment" && !doc {
            break;
        }
        offset = line_end_after(src, n.end_byte());
        if doc {
            break;
        }
    }
    offset
}
