//! Revert: take out everything apply inserted, so the tree is byte for byte what it was
//! before apply.
//!
//! Nothing is recorded at apply time: the language modules report, for the tree as it is,
//! every part apply inserts and which are present (the same computation verify uses).
//! Revert finds each present part's exact text around the line the language reports,
//! refuses when it is not there byte for byte (hand-edited inserted code), and plans the
//! removals. Before anything is written it re-plans apply on the reverted tree in memory:
//! apply must give back exactly what it gives on the current tree, or revert refuses.

use crate::error::{Error, Result};
use crate::lang::Language;
use crate::lang::parts::Inventory;
use crate::plan::{Placed, Plan};
use crate::project::{Options, Project};
use std::path::Path;

mod checks;
mod removal;
#[cfg(test)]
mod tests;

use checks::{check_no_leftovers, check_round_trip};
use removal::removal_plan;

#[derive(Debug, Clone, Default)]
pub struct RevertOptions {
    pub common: Options,
    pub dry_run: bool,
    pub allow_dirty: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RevertOutcome {
    pub language: String,
    /// The unified diff of every change (what was, or in a dry run would be, written).
    pub diff: String,
    /// Each piece taken out: where it was (its first line in the current tree).
    pub removed: Vec<Placed>,
    /// Files changed (or that would change), relative paths, deleted ones included.
    pub files: Vec<String>,
    /// Files removed whole (runtime modules apply created).
    pub deleted: Vec<String>,
    pub written: bool,
    /// Things worth a word (an installed package's manifest).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl RevertOutcome {
    pub fn nothing_to_revert(&self) -> bool {
        self.files.is_empty()
    }
}

/// Whether any file of the language holds a trace of acp-patch (its runtime module, an import
/// of it, a call into it): the names every inserted piece carries.
fn touched(project: &Project, lang: &dyn Language) -> bool {
    const TRACES: &[&str] = &[
        "acp-patch",
        "acp_progress",
        "acpProgress",
        "acp-progress",
        "agent_progress_callback",
    ];
    project
        .files_with_extension(lang.extensions())
        .any(|f| TRACES.iter().any(|t| crate::needles::contains(&f.text, t)))
}

/// Plans the removal of every present part, checks it (exact bytes, the reverted files
/// parse, apply on the reverted tree gives the current one), then (unless a dry run)
/// writes it all or nothing.
pub fn revert(root: &Path, opts: &RevertOptions) -> Result<RevertOutcome> {
    // one writer at a time, as apply
    let _lock = match root.canonicalize() {
        Ok(dir) if !opts.dry_run && dir.is_dir() => Some(crate::write::lock_tree(&dir)?),
        _ => None,
    };
    let project = crate::lang::load(root, &opts.common)?;
    // every agent of the tree (a Python one and a TypeScript one, say): their files differ
    let mut notes = Vec::new();
    let mut untouched = Vec::new();
    let per_agent = crate::commands::each_agent(
        &project,
        &mut notes,
        crate::commands::Startup::NotRun,
        |lang| {
            let inventory = match lang.inventory(&project) {
                Ok(inventory) => inventory,
                // an agent apply never patched: nothing of acp-patch's to take out, whatever
                // kept apply from choosing its sites (several candidates, a site not found)
                Err(e) if !matches!(e, Error::NoAgent { .. }) && !touched(&project, lang) => {
                    untouched.push(format!(
                        "{}: no code of acp-patch's in the tree; apply would not patch it as it is either: {}",
                        lang.name(),
                        e.to_string().lines().next().unwrap_or_default()
                    ));
                    return Ok((Plan::default(), Vec::new()));
                }
                Err(e) => return Err(e),
            };
            let (mine, taken) = removal_plan_of(lang, &inventory)?;
            if !mine.is_empty() {
                check_current_parses(lang, &inventory)?;
                crate::commands::check_parses(lang, &mine)?;
                check_no_leftovers(&inventory, &mine)?;
                check_round_trip(lang, &project, &inventory, &mine)?;
            }
            Ok((mine, taken))
        },
    )?;
    notes.extend(untouched);
    let mut plan = Plan::default();
    let mut removed = Vec::new();
    let mut langs = Vec::new();
    for (lang, (mine, taken)) in per_agent {
        langs.push(lang.name());
        plan.files.extend(mine.files);
        removed.extend(taken);
    }
    plan.sort();
    let outcome = RevertOutcome {
        language: langs.join("+"),
        diff: crate::diff::plan_diff(&plan),
        removed,
        files: plan.files.iter().map(|f| f.file.rel.clone()).collect(),
        deleted: plan
            .files
            .iter()
            .filter(|f| f.delete)
            .map(|f| f.file.rel.clone())
            .collect(),
        written: false,
        notes,
    };
    if opts.dry_run || plan.is_empty() {
        return Ok(outcome);
    }
    if !opts.allow_dirty {
        // what apply wrote and nothing else may be taken back on an uncommitted tree
        let undone: Vec<(std::path::PathBuf, Option<Vec<u8>>)> = plan
            .files
            .iter()
            .map(|f| {
                let after = (!f.delete).then(|| f.file.to_disk(&f.new_text()).into_bytes());
                (f.file.path.clone(), after)
            })
            .collect();
        crate::write::check_clean_but(&project.root, &undone)?;
    }
    crate::write::write_plan(&plan)?;
    Ok(RevertOutcome {
        written: true,
        ..outcome
    })
}

/// The text of each file holding inserted code with every present piece taken out (`None`
/// for a file apply created), as revert would leave it: the unpatched tree a start-up check
/// compares with. `None` when revert would refuse the tree (a hand-edited piece).
pub(crate) fn unpatched_texts(
    lang: &dyn Language,
    project: &Project,
) -> Option<std::collections::HashMap<String, Option<String>>> {
    let inventory = lang.inventory(project).ok()?;
    let (plan, _) = removal_plan(&inventory).ok()?;
    Some(
        plan.files
            .iter()
            .map(|f| {
                let text = (!f.delete).then(|| f.file.to_disk(&f.new_text()));
                (f.file.rel.clone(), text)
            })
            .collect(),
    )
}

/// What revert would refuse on this tree, as verify reports it: the check of the piece it
/// concerns (the present part nearest to the refused line), the status (`duplicated` for
/// acp-patch code apply did not write there, a copy; `malformed` for a piece edited by hand)
/// and the refusal with its `file:line`. Verify runs exactly revert's checks, so the two
/// cannot disagree; a tree with nothing to revert, or one the language cannot take stock
/// of (verify reports that itself), has no refusal.
pub(crate) fn refusal(lang: &dyn Language, project: &Project) -> Option<Refusal> {
    let inventory = lang.inventory(project).ok()?;
    let outcome = removal_plan_of(lang, &inventory).and_then(|(mine, _)| {
        if mine.is_empty() {
            return Ok(());
        }
        check_current_parses(lang, &inventory)?;
        crate::commands::check_parses(lang, &mine)?;
        check_no_leftovers(&inventory, &mine)?;
        check_round_trip(lang, project, &inventory, &mine)
    });
    let error = outcome.err()?;
    let (file, line, copy, message) = match &error {
        Error::HandEdited {
            file,
            line,
            piece,
            detail,
        } if piece == "code" => (
            file.clone(),
            *line,
            true,
            format!("revert refuses: {detail}"),
        ),
        Error::HandEdited {
            file,
            line,
            piece,
            detail,
        } => (
            file.clone(),
            *line,
            false,
            format!(
                "revert refuses: the {piece} was changed by hand: {detail}; restore it (e.g. from git)"
            ),
        ),
        Error::NotRevertible { file, line, detail } => (
            file.clone(),
            *line,
            false,
            format!("revert refuses: {detail}"),
        ),
        Error::WouldBreak {
            file,
            line,
            message,
        } => (
            file.clone(),
            *line,
            false,
            format!("revert would break the file: line {line}: {message}"),
        ),
        _ => return None,
    };
    let nearest = inventory
        .parts
        .iter()
        .filter(|p| inventory.files[p.file].rel == file && !p.checks.is_empty())
        .min_by_key(|p| p.present.unwrap_or(p.anchor_line).abs_diff(line));
    Some(Refusal {
        check: nearest.map(|p| p.checks[0]),
        status: if copy {
            crate::report::Status::Duplicated
        } else {
            crate::report::Status::Malformed
        },
        file,
        line,
        message,
    })
}

/// Every file holding inserted code must parse as it is (as verify demands): a syntax error
/// there is the tree's (a hand edit), named where it is, not a revert that would break it.
fn check_current_parses(lang: &dyn Language, inventory: &Inventory) -> Result<()> {
    for (i, f) in inventory.files.iter().enumerate() {
        let touched = inventory.parts.iter().any(|p| {
            p.file == i && (p.present.is_some() || p.label == crate::lang::parts::RUNTIME_LABEL)
        });
        if !touched && !f.text.contains(inventory.marker) || !f.exists {
            continue;
        }
        if let Some((offset, message)) = lang.syntax_error_at(&f.path, &f.text) {
            return Err(Error::Parse {
                location: crate::error::Location {
                    file: f.rel.clone(),
                    line: f.line_of(offset),
                },
                message,
            });
        }
    }
    Ok(())
}

/// [`removal_plan`], where a hand-edited runtime module that no longer parses is told as
/// the syntax error (as verify tells it), not as the edit.
fn removal_plan_of(lang: &dyn Language, inventory: &Inventory) -> Result<(Plan, Vec<Placed>)> {
    match removal_plan(inventory) {
        Err(e @ Error::RuntimeEdited { .. }) => {
            check_current_parses(lang, inventory)?;
            Err(e)
        }
        planned => planned,
    }
}

/// Revert's refusal of a tree, for verify's report.
pub(crate) struct Refusal {
    /// The check the refused piece belongs to (none known: the report's first failing row).
    pub check: Option<&'static str>,
    pub status: crate::report::Status,
    pub file: String,
    pub line: usize,
    pub message: String,
}
