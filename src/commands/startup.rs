//! The start-up check of an agent as apply leaves it, shared by apply and verify so the two
//! agree.

use crate::error::Result;
use crate::lang::Language;
use crate::plan::Plan;
use crate::project::Project;
use crate::report::Report;

pub(super) fn patched_files(plan: &Plan) -> Vec<crate::toolchain::Patched> {
    plan.files
        .iter()
        .filter(|f| !f.delete && !f.edits.is_empty())
        .map(|f| crate::toolchain::Patched {
            rel: f.file.rel.clone(),
            before: f.file.exists.then(|| f.file.original()),
            after: f.file.to_disk(&f.new_text()),
        })
        .collect()
}

/// The files a report shows holding inserted code (the file of each located row).
fn holding(report: &Report) -> Vec<String> {
    let mut holding: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.id != "parses" && c.id != "starts")
        .flat_map(|c| c.locations.iter())
        .filter_map(|l| l.line().map(|(f, _)| f.to_string()))
        .collect();
    holding.sort();
    holding.dedup();
    holding
}

/// The start-up check of one agent as apply leaves it, shared by apply and verify so they
/// agree: the files the plan patches or creates (unpatched: as they are now) and those that
/// already hold inserted code (unpatched: as revert would leave them, worked out only when
/// something fails).
pub(super) fn startup(
    lang: &dyn Language,
    project: &Project,
    plan: &Plan,
    report: &Report,
) -> Result<crate::toolchain::Startup> {
    let mut files = patched_files(plan);
    let planned = files.len();
    let mut already = Vec::new();
    for rel in holding(report) {
        if files.iter().any(|f| f.rel == rel) {
            continue;
        }
        if let Some(f) = project.source(&rel) {
            already.push(rel.clone());
            files.push(crate::toolchain::Patched {
                rel,
                before: None,
                after: f.original(),
            });
        }
    }
    // the texts as they are now, copied only when something fails
    let unpatched = || {
        let mut map: std::collections::HashMap<String, Option<String>> = files[..planned]
            .iter()
            .map(|f| (f.rel.clone(), f.before.clone()))
            .collect();
        if !already.is_empty() {
            let reverted = crate::commands::revert::unpatched_texts(lang, project)?;
            for rel in &already {
                if let Some(text) = reverted.get(rel) {
                    map.insert(rel.clone(), text.clone());
                }
            }
        }
        Some(map)
    };
    lang.startup_check(project, &files, &unpatched)
}

/// One report of all of a language's agents: what the start-up check reads of them.
fn merged(reports: &[Report]) -> Report {
    let mut all = reports[0].clone();
    for r in &reports[1..] {
        all.checks.extend(r.checks.iter().cloned());
    }
    all
}

/// The start-up check of all of a language's agents at once (apply's).
pub(super) fn merged_startup(
    lang: &dyn Language,
    project: &Project,
    plan: &Plan,
    reports: &[Report],
) -> Result<crate::toolchain::Startup> {
    startup(lang, project, plan, &merged(reports))
}
