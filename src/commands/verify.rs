//! `verify`: every agent's report, with revert's refusal and the start-up check as rows.

use super::startup::startup;
use super::{each_agent, judged, tree_notes};
use crate::error::{Error, Result};
use crate::lang::Language;
use crate::plan::Plan;
use crate::project::{Options, Project};
use crate::report::{Location, Report, Status};
use std::path::Path;

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
    let project = crate::lang::load(root, opts)?;
    let mut notes = tree_notes(&project);
    let per_agent = each_agent(&project, &mut notes, super::Startup::Checked, |lang| {
        let mut said = Vec::new();
        let mut reports = judged(lang, &project)?;
        for report in &mut reports {
            said.append(&mut report.notes);
            startup_rows(lang, &project, report, &mut said)?;
        }
        Ok((reports, said))
    })?;
    let mut reports = Vec::new();
    for (_, (found, said)) in per_agent {
        notes.extend(said);
        reports.extend(found);
    }
    Ok(VerifyOutcome { reports, notes })
}

/// Verify's side of the start-up check: a compile failure marks `parses`, a failing start
/// the `starts` row (added for the languages that have the check).
fn startup_rows(
    lang: &dyn Language,
    project: &Project,
    report: &mut Report,
    notes: &mut Vec<String>,
) -> Result<()> {
    // on a tree with pieces missing, the check is apply's: the tree as the plan leaves it
    let plan = if report.ok() {
        Plan::default()
    } else {
        lang.plan(project).unwrap_or_default()
    };
    let mut row = crate::report::Check {
        id: "starts".into(),
        status: Status::Ok,
        locations: vec![],
        details: Vec::new(),
        insert_at: None,
    };
    match startup(lang, project, &plan, report) {
        Ok(s) => {
            if !s.applies {
                return Ok(());
            }
            // the row lists what started; what did not is said apart, with why, and the row
            // is then not a plain ok
            if !s.proven.is_empty() {
                row.locations.push(Location::Many(s.proven.clone()));
            }
            if !s.not_started.is_empty() {
                row.status = Status::Unchecked;
                row.details = s.not_started.clone();
            } else if s.proven.is_empty() && !s.notes.is_empty() {
                row.status = Status::Unchecked;
                row.details = vec!["not started here (see the notes)".into()];
            }
            notes.extend(s.notes);
        }
        Err(Error::WouldNotCompile {
            file,
            line,
            compiler,
            message,
        }) => {
            if let Some(parses) = report.checks.iter_mut().find(|c| c.id == "parses") {
                parses.status = Status::Malformed;
                parses.details = vec![format!("{file}:{line}: {message} ({compiler})")];
                parses.insert_at = Some(Location::at(&file, line));
            }
            row.status = Status::Malformed;
            row.details = vec![format!("cannot start: {file}:{line} does not compile")];
        }
        Err(Error::WouldNotStart {
            file,
            line,
            failure,
        }) => {
            let f = *failure;
            row.status = Status::Malformed;
            row.locations.push(Location::at(&file, line));
            row.details = vec![format!(
                "{} fails with {}: {} (unpatched it {})",
                f.what, f.by, f.message, f.unpatched
            )];
            row.insert_at = Some(Location::at(&file, line));
        }
        Err(e) => return Err(e),
    }
    report.checks.push(row);
    Ok(())
}
