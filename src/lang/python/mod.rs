//! Python agents (Hermes and agents written on the `agent-client-protocol` SDK), parsed
//! with tree-sitter.

mod engine;
mod insert;
mod locate;
mod pieces;
pub(crate) mod syntax;

use crate::error::{Error, Result};
use crate::lang::Language;
use crate::lang::parts::{self, Naming, Parsed, Part};
use crate::plan::Plan;
use crate::project::Project;
use crate::report::Report;

pub struct Python;

impl Python {
    fn parse_all(&self, project: &Project) -> Vec<Parsed> {
        project
            .files_with_extension(self.extensions())
            .filter(|f| self.worth_parsing(&f.text))
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

    /// Locates and builds every part; a locate failure caused by a file that does not
    /// parse is reported as that parse error.
    fn analyze<'a>(
        &self,
        project: &'a Project,
        files: &'a [Parsed],
    ) -> Result<(String, Vec<Part>)> {
        let sites = match locate::locate(&project.root, files, &project.config.python) {
            Ok(s) => s,
            Err(e @ (Error::NoAgent { .. } | Error::Unlocatable { .. })) => {
                return Err(files.iter().find_map(parts::parse_error).unwrap_or(e));
            }
            Err(e) => return Err(e),
        };
        let shape = match sites.shape {
            locate::Shape::Callback(_) => "callback",
            locate::Shape::Emitter(_) => "emitter",
        };
        let parts = pieces::build(files, project, &sites)?;
        Ok((shape.to_string(), parts))
    }
}

impl Language for Python {
    fn name(&self) -> &'static str {
        "python"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["py"]
    }

    fn worth_parsing(&self, text: &str) -> bool {
        text.contains("acp") || text.contains("_callback") || text.contains("on_first_delta")
    }

    fn syntax_error(&self, text: &str) -> Option<(usize, String)> {
        syntax::first_error(&syntax::parse(text))
    }

    fn detect(&self, project: &Project) -> bool {
        project
            .files_with_extension(self.extensions())
            .any(|f| f.text.contains("import acp") || f.text.contains("from acp"))
    }

    fn plan(&self, project: &Project) -> Result<Plan> {
        let files = self.parse_all(project);
        let (_, parts) = self.analyze(project, &files)?;
        parts::plan(&files, &parts)
    }

    fn compile_check(
        &self,
        project: &Project,
        files: &[crate::compile::Patched],
    ) -> Result<crate::compile::Checked> {
        crate::compile::python(project, files)
    }

    fn verify(&self, project: &Project) -> Result<Report> {
        let files = self.parse_all(project);
        let (shape, parts) = self.analyze(project, &files)?;
        let naming = Naming {
            language: self.name(),
            checks: parts::CHECKS,
            shape,
            callback: "agent_progress_callback",
            defines: &defined_names,
            has_function: &|p, name| {
                syntax::top_level_functions(p.tree.root_node())
                    .iter()
                    .any(|d| syntax::name_of(*d, &p.file.text) == name)
            },
            marker: "_acp_progress_",
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
            l.strip_prefix("async def ")
                .or_else(|| l.strip_prefix("def "))
        })
        .filter_map(|l| l.split('(').next())
        .map(str::to_string)
        .collect()
}
