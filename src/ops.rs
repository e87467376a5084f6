//! The commands as library calls: apply (and its dry run), verify, revert and the site
//! survey `init` writes.
//!
//! A tree may hold agents in several languages (a Python agent and a TypeScript one):
//! apply patches every one of them in one all-or-nothing write, and verify reports each.
//! A language whose files merely import its ACP SDK without holding an agent (a client
//! script, say) is noted and left alone; any other failure of one agent refuses the
//! whole run, naming the language.

use crate::error::{Error, Result};
use crate::lang::{self, Language};
use crate::plan::{Placed, Plan};
use crate::project::{Options, Project};
use crate::report::{Report, Status};
use std::path::Path;

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
}

impl ApplyOutcome {
    pub fn nothing_to_do(&self) -> bool {
        self.files.is_empty()
    }
}

/// What the tree holds that is worth a word whatever the command: files not read and
/// non-UTF-8 files that look like a language's agent code.
fn tree_notes(project: &Project) -> Vec<String> {
    let mut notes: Vec<String> = project
        .skipped
        .iter()
        .map(|(rel, why)| format!("{rel}: {why}"))
        .collect();
    for bad in &project.not_utf8 {
        if looks_relevant(bad) {
            notes.push(format!(
                "{}:{}: not UTF-8 (it looks like {}); not read, so nothing in it is patched",
                bad.rel, bad.line, bad.encoding
            ));
        }
    }
    notes
}

/// Whether a non-UTF-8 file is one its language would have parsed.
fn looks_relevant(bad: &crate::source::NotUtf8) -> bool {
    lang::all().iter().any(|l| {
        l.extensions()
            .iter()
            .any(|e| bad.rel.ends_with(&format!(".{e}")))
            && l.worth_parsing(&bad.lossy)
    })
}

/// A "no agent" or "site not found" error explained by a file that could not be read: the
/// agent's own code in Latin-1, say.
fn explain(e: Error, project: &Project) -> Error {
    if !matches!(
        e,
        Error::NoAgent { .. } | Error::Unlocatable { .. } | Error::NotFound { .. }
    ) {
        return e;
    }
    match project.not_utf8.iter().find(|b| looks_relevant(b)) {
        Some(bad) => Error::NotUtf8 {
            file: bad.rel.clone(),
            line: bad.line,
            encoding: bad.encoding.clone(),
        },
        None => e,
    }
}

/// The languages with an agent in the tree.
pub(crate) fn agents(project: &Project) -> Result<Vec<&'static dyn Language>> {
    let found: Vec<&'static dyn Language> = lang::all()
        .into_iter()
        .filter(|l| l.detect(project))
        .collect();
    if found.is_empty() {
        let mut detail = "no source file imports an ACP SDK".to_string();
        if !project.skipped.is_empty() {
            detail.push_str(&format!(
                "; {} source files were not read (see the notes)",
                project.skipped.len()
            ));
        }
        return Err(explain(
            Error::NoAgent {
                root: project.root.clone(),
                detail,
            },
            project,
        ));
    }
    Ok(found)
}

fn in_agent(e: Error, lang: &dyn Language, several: bool) -> Error {
    if several {
        Error::InAgent {
            language: lang.name(),
            source: Box::new(e),
        }
    } else {
        e
    }
}

/// One language's plan, checked: every patched file still parses and compiles, none is
/// written through a link, and the tree as the plan leaves it passes verify.
fn plan_checked(
    lang: &dyn Language,
    project: &Project,
    opts: &Options,
    notes: &mut Vec<String>,
) -> Result<Plan> {
    let plan = lang.plan(project).map_err(|e| explain(e, project))?;
    for fp in &plan.files {
        if let Some(target) = project.symlink_target(&fp.file.rel) {
            return Err(Error::Symlink {
                file: fp.file.rel.clone(),
                target: target.to_path_buf(),
            });
        }
    }
    check_parses(lang, &plan)?;
    let patched = patched_files(&plan);
    notes.extend(lang.compile_check(project, &patched)?.notes);
    // apply inserts what is missing; what it cannot mend (a piece renamed or edited by
    // hand) must stop it, not be written around
    let reports = if plan.is_empty() {
        lang.verify(project)?
    } else {
        verify_planned(lang, project, opts, &plan)?
    };
    if reports.iter().any(|r| !r.ok()) {
        return Err(Error::VerifyFails {
            nothing_to_insert: plan.is_empty(),
            problems: reports
                .iter()
                .flat_map(|r| r.checks.iter())
                .filter(|c| c.status != Status::Ok)
                .map(|c| format!("{} {}: {}", c.id, c.status.word(), c.detail))
                .collect(),
        });
    }
    Ok(plan)
}

/// Verify on the tree as the plan would leave it: the language's files (and the package
/// manifests beside them) written to a temporary folder, patched, and read back there.
fn verify_planned(
    lang: &dyn Language,
    project: &Project,
    opts: &Options,
    plan: &Plan,
) -> Result<Vec<Report>> {
    let tmp = tempfile::Builder::new()
        .prefix("acp-patch-verify-")
        .tempdir()
        .map_err(crate::error::io_err(std::env::temp_dir()))?;
    let put = |rel: &str, bytes: &[u8]| -> Result<()> {
        let dest = tmp.path().join(rel);
        if let Some(dir) = dest.parent() {
            std::fs::create_dir_all(dir).map_err(crate::error::io_err(dir))?;
        }
        std::fs::write(&dest, bytes).map_err(crate::error::io_err(&dest))
    };
    for f in project.files_with_extension(lang.extensions()) {
        put(&f.rel, f.original().as_bytes())?;
    }
    for m in &project.manifests {
        let rel = crate::source::rel_path(&project.root, m);
        put(&rel, &std::fs::read(m).map_err(crate::error::io_err(m))?)?;
    }
    for fp in &plan.files {
        if fp.delete {
            let _ = std::fs::remove_file(tmp.path().join(&fp.file.rel));
        } else {
            put(&fp.file.rel, fp.file.to_disk(&fp.new_text()).as_bytes())?;
        }
    }
    let config = opts.config.clone().or_else(|| {
        let p = project.root.join(crate::config::FILE_NAME);
        p.is_file().then_some(p)
    });
    let copy = Project::load(
        tmp.path(),
        &Options {
            config,
            env_prefix: Some(project.env_prefix.clone()),
            templates: project.templates.override_dir.clone(),
        },
    )?;
    lang.verify(&copy)
}

fn patched_files(plan: &Plan) -> Vec<crate::compile::Patched> {
    plan.files
        .iter()
        .filter(|f| !f.delete && !f.edits.is_empty())
        .map(|f| crate::compile::Patched {
            rel: f.file.rel.clone(),
            before: f.file.exists.then(|| f.file.original()),
            after: f.file.to_disk(&f.new_text()),
        })
        .collect()
}

/// Plans every edit of every agent in the tree, checks that each patched file still parses
/// (and compiles, where the compiler is on the machine), then (unless a dry run) writes all
/// of them atomically under a lock on the tree.
pub fn apply(root: &Path, opts: &ApplyOptions) -> Result<ApplyOutcome> {
    let _lock = match root.canonicalize() {
        Ok(dir) if !opts.dry_run && dir.is_dir() => Some(crate::apply::lock_tree(&dir)?),
        _ => None,
    };
    let project = Project::load(root, &opts.common)?;
    let langs = agents(&project)?;
    let several = langs.len() > 1;
    let mut notes = tree_notes(&project);
    let mut plan = Plan::default();
    let mut patched: Vec<(&dyn Language, Plan)> = Vec::new();
    let mut no_agent = None;
    for lang in &langs {
        match plan_checked(*lang, &project, &opts.common, &mut notes) {
            Ok(p) => patched.push((*lang, p)),
            Err(e @ Error::NoAgent { .. }) if several => {
                notes.push(format!(
                    "{} files here import an ACP SDK but hold no agent ({}); left alone",
                    lang.name(),
                    e
                ));
                no_agent.get_or_insert(e);
            }
            Err(e) => return Err(in_agent(e, *lang, several)),
        }
    }
    if patched.is_empty() {
        return Err(no_agent.expect("every detected language failed with no agent"));
    }
    if opts.check_build {
        for (lang, p) in &patched {
            if let Some(note) = crate::compile::check_build(&project, *lang, &patched_files(p))
                .map_err(|e| in_agent(e, *lang, several))?
            {
                notes.push(note);
            }
        }
    }
    let languages: Vec<String> = patched.iter().map(|(l, _)| l.name().to_string()).collect();
    for (_, p) in patched {
        plan.notes.extend(p.notes);
        plan.files.extend(p.files);
    }
    plan.sort();
    notes.extend(plan.notes.clone());
    let mut outcome = ApplyOutcome {
        language: languages.join("+"),
        languages,
        diff: crate::diff::plan_diff(&plan),
        placed: plan.placed(),
        notes,
        files: plan.files.iter().map(|f| f.file.rel.clone()).collect(),
        written: false,
    };
    if opts.dry_run || plan.is_empty() {
        return Ok(outcome);
    }
    let removed = crate::apply::remove_leftovers(&project);
    if !removed.is_empty() {
        outcome.notes.push(format!(
            "removed {} temporary files an interrupted apply left: {}",
            removed.len(),
            removed.join(", ")
        ));
    }
    if !opts.allow_dirty {
        crate::apply::check_clean(&project.root)?;
    }
    crate::apply::write_plan(&plan)?;
    outcome.written = true;
    Ok(outcome)
}

/// Never write an edit that adds a syntax error.
pub(crate) fn check_parses(lang: &dyn Language, plan: &Plan) -> Result<()> {
    for fp in plan.files.iter().filter(|f| !f.delete) {
        let new = fp.new_text();
        if let Some((offset, message)) = lang.syntax_error_at(&fp.file.path, &new) {
            let line = new[..offset].matches('\n').count() + 1;
            return Err(Error::WouldBreak {
                file: fp.file.rel.clone(),
                message: format!("line {line}: {message}"),
            });
        }
    }
    Ok(())
}

/// Verify's outcome: one report per agent in the tree, and what is worth a word.
#[derive(Debug, Clone)]
pub struct VerifyOutcome {
    pub reports: Vec<Report>,
    pub notes: Vec<String>,
}

impl VerifyOutcome {
    pub fn exit_code(&self) -> u8 {
        self.reports
            .iter()
            .map(Report::exit_code)
            .max()
            .unwrap_or(0)
    }
}

pub fn verify(root: &Path, opts: &Options) -> Result<VerifyOutcome> {
    let project = Project::load(root, opts)?;
    let langs = agents(&project)?;
    let several = langs.len() > 1;
    let mut notes = tree_notes(&project);
    let mut reports = Vec::new();
    let mut no_agent = None;
    for lang in &langs {
        match lang.verify(&project).map_err(|e| explain(e, &project)) {
            Ok(found) => {
                for mut report in found {
                    notes.append(&mut report.notes);
                    compile_inserted(*lang, &project, &mut report);
                    reports.push(report);
                }
            }
            Err(e @ Error::NoAgent { .. }) if several => {
                notes.push(format!(
                    "{} files here import an ACP SDK but hold no agent ({e})",
                    lang.name()
                ));
                no_agent.get_or_insert(e);
            }
            Err(e) => return Err(in_agent(e, *lang, several)),
        }
    }
    if reports.is_empty() {
        return Err(no_agent.expect("every detected language failed with no agent"));
    }
    Ok(VerifyOutcome { reports, notes })
}

/// Files that hold inserted code must compile with the language's own compiler (where it
/// is on the machine): tree-sitter accepts code CPython rejects. A failure marks `parses`.
fn compile_inserted(lang: &dyn Language, project: &Project, report: &mut Report) {
    let mut holding: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.id != "parses")
        .flat_map(|c| c.locations.iter())
        .filter_map(|l| l.split(' ').next())
        .filter_map(|l| l.rsplit_once(':').map(|(f, _)| f.to_string()))
        .collect();
    holding.sort();
    holding.dedup();
    let files: Vec<crate::compile::Patched> = holding
        .iter()
        .filter_map(|rel| project.files.iter().find(|f| &f.rel == rel))
        .map(|f| crate::compile::Patched {
            rel: f.rel.clone(),
            before: None,
            after: f.original(),
        })
        .collect();
    if let Err(Error::WouldNotCompile {
        file,
        line,
        compiler,
        message,
    }) = lang.compile_check(project, &files)
        && let Some(row) = report.checks.iter_mut().find(|c| c.id == "parses")
    {
        row.status = Status::Malformed;
        row.detail = format!("{file}:{line}: {message} ({compiler})");
        row.insert_at = Some(format!("{file}:{line}"));
    }
}

pub use crate::revert::{RevertOptions, RevertOutcome, revert};
