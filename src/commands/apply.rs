//! `apply` and its dry run: every agent's plan, checked (parses, compiles, starts, passes
//! verify as the plan leaves the tree), then written all or nothing.

use super::startup::{merged_startup, patched_files};
use super::{check_parses, each_agent, judged, tree_notes};
use crate::error::{Error, Result};
use crate::lang::Language;
use crate::plan::{Placed, Plan};
use crate::project::{Options, Project};
use crate::report::Report;
use crate::toolchain::{CopyMode, Patched, copy_tree};
use std::path::Path;
use std::process::{Command, Stdio};

#[derive(Debug, Clone, Default)]
pub struct ApplyOptions {
    pub common: Options,
    pub dry_run: bool,
    pub allow_dirty: bool,
    /// Also run the language's build check (`tsc --noEmit`, `cargo check`) on a patched
    /// temporary copy before writing.
    pub check_build: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ApplyOutcome {
    /// The agents' languages, `+`-joined (`python`, `python+typescript`).
    pub language: String,
    pub languages: Vec<String>,
    /// The unified diff of every change (what was, or in a dry run would be, written).
    pub diff: String,
    pub placed: Vec<Placed>,
    pub notes: Vec<String>,
    /// Files changed (or that would change), relative paths.
    pub files: Vec<String>,
    pub written: bool,
    /// Each file's change, for the patch series and the installed-package manifest.
    #[serde(skip)]
    pub changes: Vec<crate::diff::FileChange>,
    /// The prefix of the variables the inserted code reads.
    #[serde(skip)]
    pub env_prefix: String,
}

impl ApplyOutcome {
    pub fn nothing_to_do(&self) -> bool {
        self.files.is_empty()
    }
}

/// One language's plan, checked: every patched file still parses and compiles, none is
/// written through a link, and the tree as the plan leaves it passes verify.
fn plan_checked(lang: &dyn Language, project: &Project) -> Result<(Plan, Vec<String>)> {
    let plan = lang.plan(project)?;
    for fp in &plan.files {
        if let Some(target) = project.symlink_target(&fp.file.rel) {
            return Err(Error::Symlink {
                file: fp.file.rel.clone(),
                target: target.to_path_buf(),
            });
        }
    }
    check_parses(lang, &plan).map_err(|e| in_template(e, project, &plan))?;
    let reports = if plan.is_empty() {
        judged(lang, project)?
    } else {
        verify_planned(lang, project, &plan)?
    };
    // the patched agent must start: compiled and loaded by its own toolchain
    let notes = merged_startup(lang, project, &plan, &reports)
        .map_err(|e| in_template(e, project, &plan))?
        .notes;
    // apply inserts what is missing; what it cannot mend (a piece renamed or edited by
    // hand) must stop it, not be written around
    if reports.iter().any(|r| !r.ok()) {
        return Err(Error::VerifyFails {
            nothing_to_insert: plan.is_empty(),
            problems: reports
                .iter()
                .flat_map(|r| r.checks.iter())
                .filter(|c| c.status.fails())
                .map(|c| format!("{} {}: {}", c.id, c.status.word(), c.detail()))
                .collect(),
        });
    }
    Ok((plan, notes))
}

/// A patched file that does not parse or compile, when the failing line came from a template
/// of the override folder (`--templates`, `[templates] dir`): the template is named, with
/// the compiler's line in it (the rendered line found in the filled template), not acp-patch.
fn in_template(e: Error, project: &Project, plan: &Plan) -> Error {
    let Some(dir) = &project.templates.override_dir else {
        return e;
    };
    let (file, line, compiler, message, compiles) = match &e {
        Error::WouldBreak {
            file,
            line,
            message,
        } => (
            file,
            *line,
            "the parser".to_string(),
            message.clone(),
            false,
        ),
        Error::WouldNotCompile {
            file,
            line,
            compiler,
            message,
        } => (file, *line, compiler.clone(), message.clone(), true),
        _ => return e,
    };
    let Some(fp) = plan.files.iter().find(|f| &f.file.rel == file) else {
        return e;
    };
    let text = fp.new_text();
    let Some(wanted) = text.lines().nth(line.wrapping_sub(1)).map(str::trim) else {
        return e;
    };
    if wanted.is_empty() {
        return e;
    }
    for name in crate::render::Templates::names() {
        let path = dir.join(name);
        let Ok(template) = std::fs::read_to_string(&path) else {
            continue;
        };
        let filled = crate::render::fill(&template, &[("PREFIX", &project.env_prefix)]);
        if let Some(i) = filled.lines().position(|l| l.trim() == wanted) {
            return Error::BadTemplate {
                template: path,
                line: i + 1,
                rendered: format!("{file}:{line}"),
                compiler,
                message,
                compiles,
            };
        }
    }
    e
}

/// Verify on the tree as the plan would leave it, in memory (the trees of the files the plan
/// leaves alone are the ones already parsed: the cache is keyed by text).
fn verify_planned(lang: &dyn Language, project: &Project, plan: &Plan) -> Result<Vec<Report>> {
    judged(lang, &project.after(plan, lang.extensions()))
}

/// Plans every edit of every agent in the tree, checks that each patched file still parses
/// (and compiles, where the compiler is on the machine), then (unless a dry run) writes all
/// of them atomically under a lock on the tree.
pub fn apply(root: &Path, opts: &ApplyOptions) -> Result<ApplyOutcome> {
    let _lock = match root.canonicalize() {
        Ok(dir) if !opts.dry_run && dir.is_dir() => Some(crate::write::lock_tree(&dir)?),
        _ => None,
    };
    let project = crate::lang::load(root, &opts.common)?;
    let mut notes = tree_notes(&project);
    let patched = each_agent(&project, &mut notes, super::Startup::Checked, |lang| {
        let (plan, mut said) = plan_checked(lang, &project)?;
        if opts.check_build {
            said.extend(check_build(&project, lang, &patched_files(&plan))?);
        }
        Ok((plan, said))
    })?;
    let mut plan = Plan::default();
    let languages: Vec<String> = patched.iter().map(|(l, _)| l.name().to_string()).collect();
    for (_, (p, said)) in patched {
        notes.extend(said);
        plan.notes.extend(p.notes);
        plan.files.extend(p.files);
    }
    plan.sort();
    notes.extend(plan.notes.clone());
    let changes = crate::diff::plan_changes(&plan);
    let mut outcome = ApplyOutcome {
        language: languages.join("+"),
        languages,
        diff: changes.iter().map(|c| c.diff.as_str()).collect(),
        placed: plan.placed(),
        notes,
        files: plan.files.iter().map(|f| f.file.rel.clone()).collect(),
        written: false,
        changes,
        env_prefix: project.env_prefix.clone(),
    };
    if opts.dry_run || plan.is_empty() {
        return Ok(outcome);
    }
    let removed = crate::write::remove_leftovers(&project);
    if !removed.is_empty() {
        outcome.notes.push(format!(
            "removed {} temporary files an interrupted apply left: {}",
            removed.len(),
            removed.join(", ")
        ));
    }
    if !opts.allow_dirty {
        crate::write::check_clean(&project.root)?;
    }
    crate::write::write_plan(&plan)?;
    outcome.written = true;
    Ok(outcome)
}

/// `--check-build`: the language's build check (`tsc --noEmit`, `cargo check`) on a
/// temporary copy of the tree with the patch applied, before anything is written. When the
/// patched copy fails, the unpatched tree is checked too, so the message says whose fault
/// it is.
fn check_build(
    project: &Project,
    language: &dyn Language,
    files: &[Patched],
) -> Result<Option<String>> {
    let copy = tempfile::Builder::new()
        .prefix("acp-patch-check-")
        .tempdir()
        .map_err(crate::error::io_err(std::env::temp_dir()))?;
    copy_tree(&project.root, copy.path(), CopyMode::Full)?;
    let mut cmd = match language.build_check(project, copy.path()) {
        None => {
            return Ok(Some(format!(
                "--check-build: nothing to build for a {} agent (apply compiled each patched file)",
                language.name()
            )));
        }
        Some(Err(why)) => return Err(Error::Build { message: why }),
        Some(Ok(cmd)) => cmd,
    };
    let shown = describe(&cmd);
    for f in files {
        let dest = copy.path().join(&f.rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(crate::error::io_err(parent))?;
        }
        std::fs::write(&dest, &f.after).map_err(crate::error::io_err(&dest))?;
    }
    let patched = run_build(&mut cmd)?;
    if patched.is_none() {
        return Ok(Some(format!(
            "--check-build: `{shown}` passes on the patched tree"
        )));
    }
    let output = patched.unwrap_or_default();
    let pristine = tempfile::Builder::new()
        .prefix("acp-patch-check-")
        .tempdir()
        .map_err(crate::error::io_err(std::env::temp_dir()))?;
    copy_tree(&project.root, pristine.path(), CopyMode::Full)?;
    let before = match language.build_check(project, pristine.path()) {
        Some(Ok(mut c)) => run_build(&mut c)?,
        _ => None,
    };
    let message = match before {
        None => {
            format!("`{shown}` fails on the patched tree but passes on it unpatched:\n{output}")
        }
        Some(_) => format!(
            "`{shown}` fails on the unpatched tree too, so it cannot check the patch; fix the build or leave out --check-build:\n{output}"
        ),
    };
    Err(Error::Build { message })
}

fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `None` when the command passes, else its output (the first 40 lines).
fn run_build(cmd: &mut Command) -> Result<Option<String>> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Build {
            message: format!("could not run `{}`: {e}", describe(cmd)),
        })?;
    if out.status.success() {
        return Ok(None);
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().take(40).collect();
    Ok(Some(lines.join("\n")))
}
