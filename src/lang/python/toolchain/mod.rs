//! The Python toolchain check: every patched file compiled and every patched module imported
//! by the agent's interpreter, on a temporary copy of the tree as the patch leaves it, in one
//! interpreter process (`startup_check.py`: no bytecode, no network, stdout captured, each
//! import in a child forked from it). What fails unpatched too (another Python version, a
//! dependency that interpreter lacks) is a note; what fails only patched is the patch's fault.

use super::interpreter::{self, Found};
use crate::error::{Error, Result, StartFailure};
use crate::project::Project;
use crate::toolchain::{Failure, Patched, Startup, Unpatched};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod copy;

pub(in crate::lang::python) use copy::likely_scopes;
use copy::{TreeCopy, run};

const CHECK: &str = include_str!("startup_check.py");

/// How long one module may take to import before it counts as hanging.
const IMPORT_TIMEOUT_S: u64 = 60;

/// One run of the check script.
#[derive(Debug, serde::Deserialize, serde::Serialize)]
struct Answer {
    version: String,
    compile: Vec<Option<Failure>>,
    imports: Vec<ImportResult>,
    /// What the imports read outside the copy: every module file loaded, every folder on
    /// `sys.path` (the answer holds while they are unchanged).
    /// `None` when a child could not tell: such an answer is not kept (and a kept answer
    /// holds it in its entry, not twice).
    #[serde(default, skip_serializing)]
    seen: Option<Vec<crate::toolchain::cache::Seen>>,
}

#[derive(Debug, Clone, serde::Deserialize, serde::Serialize)]
struct ImportResult {
    error: Option<String>,
    /// Bytes the import wrote to stdout (the protocol's channel).
    stdout: u64,
    file: Option<String>,
    line: Option<usize>,
}

impl ImportResult {
    /// Whether another run on the same inputs would answer the same (a hang or a crash of
    /// the interpreter may not).
    fn is_settled(&self) -> bool {
        self.error.as_deref().is_none_or(|e| {
            !e.starts_with("the import did not finish") && !e.starts_with("the interpreter died")
        })
    }

    /// What went wrong, if anything: an exception, or output on stdout.
    fn problem(&self) -> Option<String> {
        self.error.clone().or_else(|| {
            (self.stdout > 0).then(|| {
                format!(
                    "it writes {} bytes to stdout at import (stdout carries the protocol)",
                    self.stdout
                )
            })
        })
    }
}

/// A module to import: the file holding it and its dotted name.
#[derive(Clone)]
struct Module {
    rel: String,
    name: String,
    /// The folder its top package sits in, relative to the tree.
    root: String,
}

/// The check on the patched files (`after`), compared with the tree unpatched when something
/// fails.
pub fn startup(project: &Project, files: &[Patched], unpatched: Unpatched) -> Result<Startup> {
    let mut out = Startup {
        applies: true,
        ..Startup::default()
    };
    if files.is_empty() {
        return Ok(out);
    }
    let rels: Vec<String> = files.iter().map(|f| f.rel.clone()).collect();
    let found = interpreter::find(project, &rels);
    let Some(choice) = found.choice.clone() else {
        out.notes.push(format!(
            "no Python interpreter found{} (pass --python or set ACP_PATCH_PYTHON): the patched files were checked with tree-sitter only, and not started",
            wanted(&found)
        ));
        out.not_started.push(
            "the patched modules: not started here (no Python interpreter found, see the notes)"
                .into(),
        );
        return Ok(out);
    };
    let python = choice.python.clone();
    let (modules, skipped, above) = modules(project, files);
    out.notes.extend(skipped);
    let scope = copy::copied_scope(project, &modules);
    let mut copy = TreeCopy::new(project, above, scope);
    for f in files {
        copy.put(&f.rel, Some(&f.after))?;
    }
    let texts: Vec<(&str, &str)> = files
        .iter()
        .map(|f| (f.rel.as_str(), f.after.as_str()))
        .collect();
    let answer = match run(&python, &mut copy, &texts, &modules) {
        Ok(a) => a,
        Err(why) => {
            out.notes.push(format!(
                "{} could not check the patched files ({why}): they were checked with tree-sitter only, and not started",
                python.display()
            ));
            out.not_started.push(format!(
                "the patched modules: not started here ({} could not run the check, see the notes)",
                python.display()
            ));
            return Ok(out);
        }
    };
    let by = format!("Python {} ({})", answer.version, python.display());
    let short = format!("Python {}", answer.version);
    if let Some(r) = &found.requirement
        && let Some(v) = interpreter::parse_version(&answer.version)
        && !r.allows(v)
    {
        out.notes.push(format!(
            "the agent requires Python {} ({}), and the interpreter used, {by} from {}, does not satisfy it{}: what fails there unpatched too is noted, not blamed on the patch (pass --python or set ACP_PATCH_PYTHON to a Python {})",
            r.spec,
            r.source,
            choice.source,
            others(&found, &choice.python),
            r.spec
        ));
    }
    let failing_files: Vec<usize> = (0..files.len())
        .filter(|&i| answer.compile.get(i).is_some_and(Option::is_some))
        .collect();
    let failing_modules: Vec<usize> = (0..modules.len())
        .filter(|&i| answer.imports.get(i).is_some_and(|r| r.problem().is_some()))
        .collect();
    // a module the interpreter lacks that is none of the agent's (its SDK, say): that
    // interpreter is not the agent's; what the patch imports the agent depends on already
    let mut lacking: Vec<usize> = Vec::new();
    let failing_modules: Vec<usize> = failing_modules
        .into_iter()
        .filter(|&i| {
            let problem = answer.imports[i].problem().unwrap_or_default();
            match missing_dependency(&problem, project, &modules) {
                Some(name) => {
                    out.notes.push(format!(
                        "`import {}` fails with {by}: it lacks `{name}`, which the agent depends on ({problem}): not started here (pass --python or set ACP_PATCH_PYTHON to the agent's own interpreter)",
                        modules[i].name
                    ));
                    out.not_started.push(format!(
                        "{}: not started here ({short} lacks `{name}`, see the notes)",
                        modules[i].name
                    ));
                    lacking.push(i);
                    false
                }
                None => true,
            }
        })
        .collect();
    if failing_files.is_empty() && failing_modules.is_empty() {
        out.proven = (0..modules.len())
            .filter(|i| !lacking.contains(i))
            .map(|i| modules[i].name.clone())
            .collect();
        return Ok(out);
    }
    // the same checks on the tree unpatched, for what failed
    let Some(before) = unpatched() else {
        return Err(blame(files, &modules, &answer, &by, None));
    };
    let unpatched_text = |f: &Patched| -> Option<String> {
        match before.get(&f.rel) {
            Some(text) => text.clone(),
            None => Some(f.after.clone()),
        }
    };
    for f in files {
        copy.put(&f.rel, unpatched_text(f).as_deref())?;
    }
    // (index in `files`, its text unpatched) of each file that failed and existed before
    let recompile: Vec<(usize, String)> = failing_files
        .iter()
        .filter_map(|&i| unpatched_text(&files[i]).map(|t| (i, t)))
        .collect();
    let reimport: Vec<usize> = failing_modules
        .iter()
        .copied()
        .filter(|&i| !matches!(before.get(&modules[i].rel), Some(None)))
        .collect();
    let texts: Vec<(&str, &str)> = recompile
        .iter()
        .map(|(i, t)| (files[*i].rel.as_str(), t.as_str()))
        .collect();
    let retry: Vec<Module> = reimport.iter().map(|&i| modules[i].clone()).collect();
    let base = run(&python, &mut copy, &texts, &retry)
        .map_err(|why| blame(files, &modules, &answer, &by, Some(why)))?;
    // compile failures first: a file that does not compile fails every import of it
    let mut noted: Vec<String> = Vec::new();
    for &i in &failing_files {
        let f = &files[i];
        let after = answer.compile[i].clone().expect("failing");
        let fails_before = recompile
            .iter()
            .position(|(j, _)| *j == i)
            .and_then(|k| base.compile.get(k).cloned().flatten());
        match fails_before {
            Some(b) => {
                out.notes.push(format!(
                    "{}:{}: {by} cannot compile it unpatched either ({}); its patch was checked with tree-sitter only, and not started",
                    f.rel, b.line, b.message
                ));
                noted.push(f.rel.clone());
            }
            None => {
                return Err(Error::WouldNotCompile {
                    file: f.rel.clone(),
                    line: after.line,
                    compiler: by,
                    message: after.message,
                });
            }
        }
    }
    let mut proven: Vec<String> = Vec::new();
    for (i, m) in modules.iter().enumerate() {
        let Some(problem) = answer.imports[i].problem() else {
            proven.push(m.name.clone());
            continue;
        };
        let unpatched_result = reimport
            .iter()
            .position(|&j| j == i)
            .and_then(|k| base.imports.get(k));
        if lacking.contains(&i) {
            continue; // a dependency that interpreter lacks: said above
        }
        if noted.contains(&m.rel) {
            // it does not compile there unpatched either: said above
            out.not_started.push(format!(
                "{}: not started here (it does not compile unpatched either, see the notes)",
                m.name
            ));
            continue;
        }
        let unpatched_problem = unpatched_result.and_then(ImportResult::problem);
        // a module the patch creates fails as the agent's own modules fail unpatched (a
        // dependency that interpreter lacks): not the patch's doing either
        let as_the_agents = unpatched_result.is_none()
            && base
                .imports
                .iter()
                .any(|r| r.problem().as_deref() == Some(problem.as_str()));
        if as_the_agents {
            out.notes.push(format!(
                "`import {}` fails with {by} as the agent's own modules do unpatched ({problem}): not started here (pass --python or set ACP_PATCH_PYTHON to the agent's own interpreter)",
                m.name
            ));
            out.not_started.push(format!(
                "{}: not started here (it fails as the agent's own modules do unpatched: {}, see the notes)",
                m.name,
                brief(&problem)
            ));
            continue;
        }
        match unpatched_problem {
            Some(p) if p == problem => {
                out.notes.push(format!(
                    "`import {}` fails with {by} unpatched too ({p}): not started here (a dependency that interpreter lacks? pass --python or set ACP_PATCH_PYTHON to the agent's own)",
                    m.name
                ));
                out.not_started.push(format!(
                    "{}: not started here (it fails unpatched too: {}, see the notes)",
                    m.name,
                    brief(&p)
                ));
            }
            other => {
                let r = &answer.imports[i];
                return Err(Error::WouldNotStart {
                    file: r.file.clone().unwrap_or_else(|| m.rel.clone()),
                    line: r.line.unwrap_or(1),
                    failure: Box::new(StartFailure {
                        what: format!("`import {}`", m.name),
                        by,
                        message: problem,
                        unpatched: match other {
                            None if unpatched_result.is_some() => "imports".into(),
                            None => "does not exist".into(),
                            Some(p) => format!("fails differently ({p})"),
                        },
                    }),
                });
            }
        }
    }
    out.proven = proven;
    Ok(out)
}

/// An import's failure as a row says it: its first line, on one line of the row.
fn brief(problem: &str) -> String {
    problem
        .lines()
        .next()
        .unwrap_or_default()
        .replace("; ", ", ")
}

/// The top-level module a `ModuleNotFoundError` names when it is not the agent's own (no
/// folder or file of that name at the tree's top, no module of the agent under it).
fn missing_dependency(problem: &str, project: &Project, modules: &[Module]) -> Option<String> {
    let named = problem
        .split("No module named '")
        .nth(1)?
        .split('\'')
        .next()?;
    let top = named.split('.').next()?;
    let ours = modules
        .iter()
        .any(|m| m.name.split('.').next() == Some(top))
        || project.root.join(top).is_dir()
        || project.root.join(format!("{top}.py")).is_file()
        || project.root.file_name().is_some_and(|n| n == top);
    (!ours && problem.starts_with("ModuleNotFoundError")).then(|| top.to_string())
}

/// The error for the first failure when the unpatched tree could not be checked.
fn blame(
    files: &[Patched],
    modules: &[Module],
    answer: &Answer,
    by: &str,
    why: Option<String>,
) -> Error {
    let unpatched = match why {
        Some(w) => format!("could not be checked ({w})"),
        None => "could not be told apart (revert refuses this tree)".into(),
    };
    if let Some((f, fail)) = files
        .iter()
        .zip(&answer.compile)
        .find_map(|(f, r)| r.as_ref().map(|r| (f, r)))
    {
        return Error::WouldNotCompile {
            file: f.rel.clone(),
            line: fail.line,
            compiler: by.to_string(),
            message: fail.message.clone(),
        };
    }
    let (m, r) = modules
        .iter()
        .zip(&answer.imports)
        .find(|(_, r)| r.problem().is_some())
        .expect("a failing module");
    Error::WouldNotStart {
        file: r.file.clone().unwrap_or_else(|| m.rel.clone()),
        line: r.line.unwrap_or(1),
        failure: Box::new(StartFailure {
            what: format!("`import {}`", m.name),
            by: by.to_string(),
            message: r.problem().unwrap_or_default(),
            unpatched,
        }),
    }
}

/// " (the agent requires Python >=3.12, pyproject.toml requires-python)" or "".
fn wanted(found: &Found) -> String {
    found
        .requirement
        .as_ref()
        .map(|r| format!(" (the agent requires Python {}, {})", r.spec, r.source))
        .unwrap_or_default()
}

/// "; found: Python 3.11.7 (/usr/bin/python3)" for the interpreters the search saw.
fn others(found: &Found, used: &Path) -> String {
    if found.seen.is_empty() {
        return String::new(); // named by the user or the agent's own: no search was made
    }
    let list: Vec<String> = found
        .seen
        .iter()
        .filter(|c| c.python != used)
        .map(|c| match c.version {
            Some(v) => format!("Python {} ({})", interpreter::show(v), c.python.display()),
            None => c.python.display().to_string(),
        })
        .collect();
    if list.is_empty() {
        return " (and no other Python was found: PATH, pyenv, uv, /usr/local/bin, /usr/bin)"
            .into();
    }
    format!(" (nor does any other found: {})", list.join(", "))
}

/// The modules of the patched files, with the roots to import them from; and a note for each
/// file that is not imported (a `__main__` runs the agent; a path that is no module name).
fn modules(project: &Project, files: &[Patched]) -> (Vec<Module>, Vec<String>, Vec<String>) {
    let packages = super::Python.packages(project);
    // a root above the tree: `..` once per package the tree sits in
    let root_of = |folder: &[&str], depth: usize| {
        if depth > folder.len() {
            vec![".."; depth - folder.len()].join("/")
        } else {
            folder[..folder.len() - depth].join("/")
        }
    };
    let mut out = Vec::new();
    let mut notes = Vec::new();
    for f in files.iter().filter(|f| f.rel.ends_with(".py")) {
        let name = packages.module_name(&f.rel);
        let segments: Vec<&str> = name.split('.').collect();
        if segments.last() == Some(&"__main__") {
            continue; // importing it runs the agent: its package is imported instead
        }
        if !segments.iter().all(|s| is_identifier(s)) {
            notes.push(format!(
                "{}: not imported by the start-up check ({name} is no module name)",
                f.rel
            ));
            continue;
        }
        let dirs: Vec<&str> = f.rel.split('/').collect();
        let is_init = f.rel.ends_with("__init__.py");
        let depth = segments.len() - usize::from(!is_init);
        let folder = &dirs[..dirs.len() - 1];
        let root = root_of(folder, depth);
        out.push(Module {
            rel: f.rel.clone(),
            name,
            root,
        });
    }
    // the packages of `__main__` modules patched, when nothing else of them is imported
    for f in files.iter().filter(|f| f.rel.ends_with("__main__.py")) {
        let name = packages.module_name(&f.rel);
        let package = name.trim_end_matches("__main__").trim_end_matches('.');
        if package.is_empty() || out.iter().any(|m| m.name == package) {
            continue;
        }
        let dirs: Vec<&str> = f.rel.split('/').collect();
        let depth = package.split('.').count();
        let folder = &dirs[..dirs.len() - 1];
        out.push(Module {
            rel: f.rel.clone(),
            name: package.to_string(),
            root: root_of(folder, depth),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    (out, notes, packages.names_above_tree().to_vec())
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}
