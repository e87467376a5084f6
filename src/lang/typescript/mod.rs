//! TypeScript agents (on `@agentclientprotocol/sdk` 0.x/1.x `AgentSideConnection` or 2.x
//! `agent().onRequest(...)`), parsed with tree-sitter-typescript.

mod locate;
mod pieces;
mod style;
pub(crate) mod syntax;

use crate::error::{Error, Result};
use crate::lang::Language;
use crate::lang::parts::{self, Naming, Parsed, Part};
use crate::plan::Plan;
use crate::project::Project;
use crate::report::Report;

pub struct TypeScript;

const SDKS: &[&str] = &[
    "@agentclientprotocol/sdk",
    "@zed-industries/agent-client-protocol",
];

impl TypeScript {
    fn parse_all(&self, project: &Project) -> Vec<Parsed> {
        project
            .files_with_extension(self.extensions())
            .filter(|f| !f.rel.ends_with(".d.ts") && self.worth_parsing(&f.text))
            .map(|f| {
                let tree = syntax::parse(&f.text);
                let error = syntax::first_error(&tree);
                Parsed {
                    file: f.clone(),
                    tree,
                    error,
                }
            })
            .collect()
    }

    fn analyze(&self, project: &Project, files: &[Parsed]) -> Result<Vec<Part>> {
        let sites = match locate::locate(&project.root, files, &project.config.typescript) {
            Ok(s) => s,
            Err(
                e @ (Error::NoAgent { .. } | Error::Unlocatable { .. } | Error::Unsupported { .. }),
            ) => {
                return Err(files.iter().find_map(parts::parse_error).unwrap_or(e));
            }
            Err(e) => return Err(e),
        };
        if let Some(e) = parts::parse_error(&files[sites.file]) {
            return Err(e);
        }
        pieces::build(files, project, &sites)
    }
}

impl Language for TypeScript {
    fn name(&self) -> &'static str {
        "typescript"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["ts", "mts", "cts"]
    }

    fn worth_parsing(&self, text: &str) -> bool {
        text.contains("sessionUpdate")
            || text.contains("session/update")
            || text.contains("agentProgressCallback")
    }

    fn syntax_error(&self, text: &str) -> Option<(usize, String)> {
        syntax::first_error(&syntax::parse(text))
    }

    fn detect(&self, project: &Project) -> bool {
        project
            .files_with_extension(self.extensions())
            .any(|f| SDKS.iter().any(|s| f.text.contains(s)))
    }

    fn plan(&self, project: &Project) -> Result<Plan> {
        let files = self.parse_all(project);
        let parts = self.analyze(project, &files)?;
        parts::plan(&files, &parts)
    }

    fn build_check(
        &self,
        _project: &Project,
        dir: &std::path::Path,
    ) -> Option<std::result::Result<std::process::Command, String>> {
        Some(crate::compile::tsc_command(dir))
    }

    fn inventory(&self, project: &Project) -> Result<parts::Inventory> {
        let files = self.parse_all(project);
        let parts = self.analyze(project, &files)?;
        Ok(parts::Inventory::new(&files, parts, "acpProgress"))
    }

    fn verify(&self, project: &Project) -> Result<Report> {
        let files = self.parse_all(project);
        let parts = self.analyze(project, &files)?;
        let naming = Naming {
            language: self.name(),
            checks: parts::CHECKS,
            shape: "emitter".into(),
            callback: "agentProgressCallback",
            defines: &defined_names,
            has_function: &|p, name| {
                syntax::top_level_functions(p.tree.root_node(), &p.file.text)
                    .iter()
                    .any(|(n, _)| n == name)
            },
            marker: "acpProgress",
        };
        let root = project.root.display().to_string();
        parts::report(
            &root,
            &files,
            &parts,
            &pieces::hook_calls(&files),
            &[],
            &naming,
        )
    }
}

/// Names of the top-level functions a rendered block defines.
fn defined_names(block: &str) -> Vec<String> {
    block
        .lines()
        .filter_map(|l| {
            l.strip_prefix("async function ")
                .or_else(|| l.strip_prefix("function "))
        })
        .filter_map(|l| l.split(['(', '<']).next())
        .map(str::to_string)
        .collect()
}
