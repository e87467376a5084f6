//! The commands as library calls: apply (and its dry run) and verify.

use crate::error::{Error, Result};
use crate::lang::{self, Language};
use crate::plan::{Placed, Plan};
use crate::project::{Options, Project};
use crate::report::Report;
use std::path::Path;

#[derive(Debug, Clone, Default)]
pub struct ApplyOptions {
    pub common: Options,
    pub dry_run: bool,
    pub allow_dirty: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ApplyOutcome {
    pub language: String,
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

fn language_of(project: &Project) -> Result<&'static dyn Language> {
    lang::all()
        .into_iter()
        .find(|l| l.detect(project))
        .ok_or_else(|| Error::NoAgent {
            root: project.root.clone(),
            detail: "no source file imports an ACP SDK".into(),
        })
}

/// Plans every edit, checks that each patched file still parses, then (unless a dry run)
/// writes all of them atomically.
pub fn apply(root: &Path, opts: &ApplyOptions) -> Result<ApplyOutcome> {
    let project = Project::load(root, &opts.common)?;
    let lang = language_of(&project)?;
    let plan = lang.plan(&project)?;
    check_parses(lang, &plan)?;
    let outcome = ApplyOutcome {
        language: lang.name().into(),
        diff: crate::diff::plan_diff(&plan),
        placed: plan.placed(),
        notes: plan.notes.clone(),
        files: plan.files.iter().map(|f| f.file.rel.clone()).collect(),
        written: false,
    };
    if opts.dry_run || plan.is_empty() {
        return Ok(outcome);
    }
    if !opts.allow_dirty {
        crate::apply::check_clean(&project.root)?;
    }
    crate::apply::write_plan(&plan)?;
    Ok(ApplyOutcome {
        written: true,
        ..outcome
    })
}

/// Never write an edit that adds a syntax error.
fn check_parses(lang: &dyn Language, plan: &Plan) -> Result<()> {
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

pub fn verify(root: &Path, opts: &Options) -> Result<Report> {
    let project = Project::load(root, opts)?;
    let lang = language_of(&project)?;
    lang.verify(&project)
}
