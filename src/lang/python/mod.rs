//! Python agents (Hermes and agents written on the `agent-client-protocol` SDK), parsed
//! with tree-sitter.

mod locate;
mod pieces;
pub(crate) mod syntax;

use crate::error::{Error, Location, Result};
use crate::lang::Language;
use crate::plan::Plan;
use crate::project::Project;
use crate::report::{Check, Report, Status};
use crate::source::SourceFile;
use pieces::Part;
use tree_sitter::Tree;

pub struct Python;

pub(crate) struct Parsed {
    pub file: SourceFile,
    pub tree: Tree,
    /// The first syntax error: (byte offset, message).
    pub error: Option<(usize, String)>,
}

/// The order and names of verify's checks.
const CHECKS: &[&str] = &[
    "hook.start",
    "hook.heartbeat",
    "hook.complete",
    "callback.declared",
    "callback.stored",
    "helpers",
    "factory",
    "wiring",
    "coalescing",
];

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
                return Err(files.iter().find_map(parse_error).unwrap_or(e));
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

fn parse_error(p: &Parsed) -> Option<Error> {
    p.error.as_ref().map(|(offset, message)| Error::Parse {
        location: Location {
            file: p.file.rel.clone(),
            line: p.file.line_of(*offset),
        },
        message: message.clone(),
    })
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
        let mut plan = Plan::default();
        let mut seen = std::collections::HashSet::new();
        for part in parts.iter().filter(|p| p.present.is_none()) {
            if !seen.insert((part.file, part.offset, part.text.clone())) {
                continue; // one block can serve several checks
            }
            if let Some(e) = parse_error(&files[part.file]) {
                return Err(e);
            }
            plan.add(
                &files[part.file].file,
                part.offset,
                part.text.clone(),
                part.label,
            );
        }
        for p in &files {
            if let Some((offset, msg)) = &p.error
                && !plan.files.iter().any(|f| f.file.path == p.file.path)
            {
                plan.notes.push(format!(
                    "{}:{}: does not parse ({msg}); it needs no patch and was left alone",
                    p.file.rel,
                    p.file.line_of(*offset)
                ));
            }
        }
        plan.sort();
        Ok(plan)
    }

    fn verify(&self, project: &Project) -> Result<Report> {
        let files = self.parse_all(project);
        let (shape, parts) = self.analyze(project, &files)?;
        // A file acp-patch touched (or would touch) must parse.
        for p in &files {
            let touched = parts.iter().any(|part| {
                part.file
                    == files
                        .iter()
                        .position(|f| std::ptr::eq(f, p))
                        .unwrap_or(usize::MAX)
            });
            if (touched || p.file.text.contains("_acp_progress_"))
                && let Some(e) = parse_error(p)
            {
                return Err(e);
            }
        }
        let calls = pieces::hook_calls(&files);
        let at = |file: usize, line: usize| format!("{}:{line}", files[file].file.rel);
        let mut checks = Vec::new();
        for id in CHECKS {
            let mine: Vec<&Part> = parts.iter().filter(|p| p.checks.contains(id)).collect();
            let mut locations: Vec<String> = Vec::new();
            let mut problems: Vec<String> = Vec::new();
            let present = mine.iter().filter(|p| p.present.is_some()).count();
            let mut status = if mine.is_empty() || present == mine.len() {
                Status::Ok
            } else if present == 0 {
                Status::Missing
            } else {
                Status::Malformed
            };
            if let Some(k) = ["hook.start", "hook.heartbeat", "hook.complete"]
                .iter()
                .position(|h| h == id)
            {
                let state = ["start", "heartbeat", "complete"][k];
                match calls[k].len() {
                    1 => locations.push(format!(
                        "{} (callback call)",
                        at(calls[k][0].0, calls[k][0].1)
                    )),
                    0 if status == Status::Ok => {
                        status = Status::Malformed;
                        problems.push(format!(
                            "no `agent_progress_callback(\"{state}\", ...)` call"
                        ));
                    }
                    0 => {}
                    _ => {
                        status = Status::Duplicated;
                        locations.extend(
                            calls[k]
                                .iter()
                                .map(|(f, l)| format!("{} (callback call)", at(*f, *l))),
                        );
                        problems.push(format!(
                            "{} calls with \"{state}\"; exactly one is allowed",
                            calls[k].len()
                        ));
                    }
                }
            }
            for p in &mine {
                match p.present {
                    Some(line) => {
                        let l = format!("{} ({})", at(p.file, line), p.label);
                        if !locations.contains(&l) {
                            locations.push(l);
                        }
                        // every function a present block defines must still be there
                        for name in defined_names(&p.text) {
                            if !syntax::top_level_functions(files[p.file].tree.root_node())
                                .iter()
                                .any(|d| syntax::name_of(*d, &files[p.file].file.text) == name)
                            {
                                status = Status::Malformed;
                                problems
                                    .push(format!("{} lacks `def {name}`", files[p.file].file.rel));
                            }
                        }
                    }
                    None => problems.push(format!(
                        "apply inserts the {} at {}",
                        p.label,
                        at(p.file, p.anchor_line)
                    )),
                }
            }
            problems.dedup();
            checks.push(Check {
                id: id.to_string(),
                status,
                locations,
                detail: problems.join("; "),
            });
        }
        Ok(Report {
            root: project.root.display().to_string(),
            language: self.name().into(),
            shape,
            checks,
        })
    }
}

/// Names of the top-level functions a rendered block defines.
fn defined_names(block: &str) -> Vec<&str> {
    block
        .lines()
        .filter_map(|l| {
            l.strip_prefix("async def ")
                .or_else(|| l.strip_prefix("def "))
        })
        .filter_map(|l| l.split('(').next())
        .collect()
}
