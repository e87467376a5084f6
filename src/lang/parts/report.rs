//! Verify's report over the parts: per check, present / missing / partial parts, the
//! callback's calls and the placement findings.

use super::{HookCalls, Parsed, ParsedSource, Part, STATES, parse_error, runtime_edited};
use crate::error::{Error, Result};
use crate::report::Shape;
use crate::report::{Check, Location, Report, Status};

/// A placement fact verify established beyond the parts themselves: an SDK send that
/// does not go through the emitter, a name read before it is bound, a gate returning from
/// a function that must return a value. A finding that is not `Ok` sets its check's status.
#[derive(Debug, Clone)]
pub struct Finding {
    pub check: &'static str,
    pub status: Status,
    /// File index and 1-based line.
    pub file: usize,
    pub line: usize,
    pub detail: String,
}

/// How a language names things in the report.
pub struct Naming<'a> {
    pub language: &'static str,
    pub shape: Shape,
    /// The report's rows, in order: [`engine_checks`] or [`PROTOCOL_CHECKS`].
    pub checks: &'a [&'static str],
    /// `agent_progress_callback` / `agentProgressCallback`.
    pub callback: &'static str,
    /// Top-level functions a rendered block defines.
    pub defines: &'a dyn Fn(&str) -> Vec<String>,
    /// Whether a parsed file defines a top-level function of that name.
    pub has_function: &'a dyn Fn(&Parsed, &str) -> bool,
    /// A text marker of inserted code: files holding it must parse.
    pub marker: &'static str,
}

/// Verify's report: per check, present / missing / partial parts, and exactly one progress
/// callback call per state. A touched file that does not parse is an error (exit 2).
pub fn report(
    root: &str,
    files: &[Parsed],
    parts: &[Part],
    calls: &HookCalls,
    findings: &[Finding],
    naming: &Naming,
) -> Result<Report> {
    let has_function = |i: usize, name: &str| (naming.has_function)(&files[i], name);
    report_any(root, files, parts, calls, findings, naming, &has_function)
}

/// [`report`] for files of any parser; `has_function(file index, name)` replaces
/// `naming.has_function`.
pub fn report_any<P: ParsedSource>(
    root: &str,
    files: &[P],
    parts: &[Part],
    calls: &HookCalls,
    findings: &[Finding],
    naming: &Naming,
    has_function: &dyn Fn(usize, &str) -> bool,
) -> Result<Report> {
    for (i, p) in files.iter().enumerate() {
        let touched = parts.iter().any(|part| part.file == i);
        if (touched || crate::needles::contains(&p.source().text, naming.marker))
            && let Some(e) = parse_error(p)
        {
            return Err(e);
        }
    }
    let at = |file: usize, line: usize| format!("{}:{line}", files[file].source().rel);
    let place = |file: usize, line: usize, label: &str| {
        Location::labelled(&files[file].source().rel, line, label)
    };
    let mut edited_runtime: Vec<String> = Vec::new();
    for p in parts {
        if let Some(Error::RuntimeEdited { file, line, .. }) =
            runtime_edited(files[p.file].source(), p)
        {
            let l = format!("{file}:{line}");
            if !edited_runtime.contains(&l) {
                edited_runtime.push(l);
            }
        }
    }
    let mut checks = Vec::new();
    for id in naming.checks {
        let mine: Vec<&Part> = parts.iter().filter(|p| p.checks.contains(id)).collect();
        let mut locations: Vec<Location> = Vec::new();
        let mut problems: Vec<String> = Vec::new();
        // a runtime module edited by hand is there (its first row says how it was edited)
        let edited = |p: &Part| match runtime_edited(files[p.file].source(), p) {
            Some(Error::RuntimeEdited { line, should, .. }) => Some((line, should)),
            _ => None,
        };
        let present = mine
            .iter()
            .filter(|p| p.present.is_some() || edited(p).is_some())
            .count();
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
            let state = STATES[k];
            match calls[k].len() {
                1 => locations.push(place(calls[k][0].0, calls[k][0].1, "callback call")),
                0 if status == Status::Ok => {
                    status = Status::Malformed;
                    problems.push(format!("no `{}(\"{state}\", ...)` call", naming.callback));
                }
                0 => {}
                _ => {
                    status = Status::Duplicated;
                    locations.extend(calls[k].iter().map(|(f, l)| place(*f, *l, "callback call")));
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
                    let l = place(p.file, line, p.label);
                    if !locations.contains(&l) {
                        locations.push(l);
                    }
                    // every function a present block defines must still be there
                    for name in (naming.defines)(&p.text) {
                        if !has_function(p.file, &name) {
                            status = Status::Malformed;
                            problems.push(format!("{} lacks `{name}`", files[p.file].source().rel));
                        }
                    }
                }
                None => match edited(p) {
                    Some((line, should)) if p.checks.first() == Some(id) => {
                        status = Status::Malformed;
                        problems.push(format!(
                            "{}: the runtime module was edited by hand since acp-patch wrote it (its line-1 checksum no longer matches, and {should}), so apply and revert refuse the tree: undo the edit, or delete the file to take this version's module",
                            at(p.file, line)
                        ));
                    }
                    Some(_) => {
                        let l = place(p.file, 1, &format!("{}, edited", p.label));
                        if !locations.contains(&l) {
                            locations.push(l);
                        }
                    }
                    None => problems.push(format!(
                        "apply inserts the {} at {}",
                        p.label,
                        at(p.file, p.anchor_line)
                    )),
                },
            }
        }
        for f in findings.iter().filter(|f| f.check == *id) {
            let l = place(f.file, f.line, &f.detail);
            if f.status == Status::Ok {
                if !locations.contains(&l) {
                    locations.push(l);
                }
                continue;
            }
            // the worst finding wins: missing < duplicated < malformed
            if status == Status::Ok
                || (status == Status::Missing && f.status != Status::Missing)
                || f.status == Status::Malformed
            {
                status = f.status;
            }
            problems.push(format!("{}: {}", at(f.file, f.line), f.detail));
        }
        problems.dedup();
        let insert_at = mine
            .iter()
            .find(|p| p.present.is_none() && edited(p).is_none())
            .map(|p| Location::at(&files[p.file].source().rel, p.anchor_line));
        checks.push(Check {
            id: id.to_string(),
            status,
            locations,
            details: problems,
            insert_at,
        });
    }
    // every file that holds (or would hold) inserted code parses: checked above, shown here
    let mut touched: Vec<String> = parts
        .iter()
        .map(|p| files[p.file].source().rel.clone())
        .collect();
    touched.sort();
    touched.dedup();
    checks.push(Check {
        id: "parses".into(),
        status: Status::Ok,
        locations: vec![Location::Many(touched)],
        details: Vec::new(),
        insert_at: None,
    });
    Ok(Report {
        root: root.to_string(),
        language: naming.language.into(),
        shape: naming.shape,
        checks,
        notes: Vec::new(),
        edited_runtime,
        refused: false,
    })
}
