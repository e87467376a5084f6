//! The commands as library calls: apply (and its dry run), verify, revert and the site
//! survey `init` writes, over one loop on the agents of a tree.
//!
//! A tree may hold agents in several languages (a Python agent and a TypeScript one):
//! apply patches every one of them in one all-or-nothing write, and verify reports each.
//! A language whose files merely import its ACP SDK without holding an agent (a client
//! script, say) is noted and left alone; any other failure of one agent refuses the
//! whole run, naming the language.

mod apply;
pub mod init;
pub mod revert;
mod startup;
mod verify;

pub use apply::{ApplyOptions, ApplyOutcome, apply};
pub use revert::{RevertOptions, RevertOutcome, revert};
pub use verify::{VerifyOutcome, verify};

use crate::error::{Error, Result};
use crate::lang::{self, Language};
use crate::plan::Plan;
use crate::project::Project;
use crate::report::{Report, Status};

/// What the tree holds that is worth a word whatever the command: files not read and
/// non-UTF-8 files that look like a language's agent code.
pub(crate) fn tree_notes(project: &Project) -> Vec<String> {
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
        None => patched_without_its_pins(e, project),
    }
}

/// "No agent" in a tree acp-patch has patched: its runtime module is there, so the agent was
/// found when it was patched, most likely with pins this run does not read (`--config FILE`
/// outside the tree). Says so, with the module, instead of leaving the user to guess.
fn patched_without_its_pins(e: Error, project: &Project) -> Error {
    let Error::NoAgent { root, detail } = e else {
        return e;
    };
    let runtime = project.files.iter().find(|f| {
        f.text
            .lines()
            .next()
            .is_some_and(|l| l.contains("acp-patch: runtime module"))
    });
    match runtime {
        Some(f) => Error::NoAgent {
            root,
            detail: format!(
                "{detail}; yet `{}` is acp-patch's runtime module, so this tree was patched: if apply was given pins (`--config FILE`), pass the same file here, or copy its pins into acp-patch.toml",
                f.rel
            ),
        },
        None => Error::NoAgent { root, detail },
    }
}

/// The languages with an agent in the tree.
pub(crate) fn agents(project: &Project) -> Result<Vec<&'static dyn Language>> {
    let found: Vec<&'static dyn Language> = lang::all()
        .into_iter()
        .filter(|l| l.detect(project))
        .collect();
    if found.is_empty() {
        let mut detail = "no source file imports an ACP SDK or handles `session/prompt`, and acp-patch.toml pins no prompt handler".to_string();
        // the files not read, named (no note is printed beside an error)
        if !project.skipped.is_empty() {
            const SHOWN: usize = 5;
            let n = project.skipped.len();
            let files: Vec<String> = project
                .skipped
                .iter()
                .take(SHOWN)
                .map(|(rel, why)| format!("{rel}: {why}"))
                .collect();
            let more = match n.saturating_sub(SHOWN) {
                0 => String::new(),
                k => format!(", and {k} more"),
            };
            detail.push_str(&format!(
                "; {n} source {} not read: {}{more}",
                if n == 1 { "file was" } else { "files were" },
                files.join(", ")
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

pub(crate) fn in_agent(e: Error, lang: &dyn Language, several: bool) -> Error {
    if several {
        Error::InAgent {
            language: lang.name(),
            source: Box::new(e),
        }
    } else {
        e
    }
}

/// The one loop over a tree's agents the commands share: `each` for every language with an
/// agent, in order. A language whose files import its SDK but hold no agent, beside another
/// agent, is noted ("left alone") and skipped; when none holds an agent that is the error;
/// any other failure refuses the whole run, naming the language when there are several.
/// `starts`: `each` runs the start-up check, whose needs are prefetched meanwhile.
pub(crate) fn each_agent<T>(
    project: &Project,
    notes: &mut Vec<String>,
    starts: Startup,
    each: impl FnMut(&'static dyn Language) -> Result<T>,
) -> Result<Vec<(&'static dyn Language, T)>> {
    let langs = agents(project)?;
    if starts == Startup::Checked {
        for lang in &langs {
            lang.prefetch_toolchain(project);
        }
    }
    let done = each_language(project, notes, langs, each);
    // what was prefetched holds for this command only: the next may follow a write
    crate::toolchain::forget_prefetched(&project.root);
    done
}

/// Whether a command's per-agent step runs the start-up check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Startup {
    Checked,
    NotRun,
}

fn each_language<T>(
    project: &Project,
    notes: &mut Vec<String>,
    langs: Vec<&'static dyn Language>,
    mut each: impl FnMut(&'static dyn Language) -> Result<T>,
) -> Result<Vec<(&'static dyn Language, T)>> {
    let several = langs.len() > 1;
    let mut done = Vec::new();
    let mut no_agent = None;
    for lang in langs {
        match each(lang).map_err(|e| explain(e, project)) {
            Ok(t) => done.push((lang, t)),
            Err(e @ Error::NoAgent { .. }) if several => {
                notes.push(format!(
                    "{} files here look like part of an ACP agent (an SDK import, or the `session/prompt` method named) but hold no agent ({e}); left alone",
                    lang.name()
                ));
                no_agent.get_or_insert(e);
            }
            Err(e) => return Err(in_agent(e, lang, several)),
        }
    }
    match no_agent {
        Some(e) if done.is_empty() => Err(e),
        _ => Ok(done),
    }
}

/// Never write an edit that adds a syntax error.
pub(crate) fn check_parses(lang: &dyn Language, plan: &Plan) -> Result<()> {
    for fp in plan.files.iter().filter(|f| !f.delete) {
        let new = fp.new_text();
        if let Some((offset, message)) = lang.syntax_error_at(&fp.file.path, &new) {
            let line = new[..offset].matches('\n').count() + 1;
            return Err(Error::WouldBreak {
                file: fp.file.rel.clone(),
                line,
                message: format!(
                    "{message}{}",
                    crate::lang::parts::on_a_long_line(&new, offset)
                ),
            });
        }
    }
    Ok(())
}

/// The language's verify report, and revert's refusal of the same tree as a failing row:
/// what revert would refuse (a duplicated piece, one edited or moved by hand) fails verify,
/// named with the same `file:line`.
pub(crate) fn judged(lang: &dyn Language, project: &Project) -> Result<Vec<Report>> {
    let mut reports = lang.verify(project)?;
    if let Some(r) = crate::commands::revert::refusal(lang, project)
        && !reports.is_empty()
    {
        // the agent whose report names the refused file, else the first
        let agent = reports
            .iter()
            .position(|rep| {
                rep.checks.iter().any(|c| {
                    c.locations
                        .iter()
                        .any(|l| l.line().is_some_and(|(f, _)| f == r.file))
                })
            })
            .unwrap_or(0);
        let report = &mut reports[agent];
        report.refused = true;
        let row = r
            .check
            .and_then(|id| report.checks.iter().position(|c| c.id == id))
            .unwrap_or(0);
        let c = &mut report.checks[row];
        if c.status == Status::Ok || r.status == Status::Malformed {
            c.status = r.status;
        }
        let l = format!("{}:{}", r.file, r.line);
        c.details.push(format!("{l}: {}", r.message));
        c.insert_at
            .get_or_insert(crate::report::Location::at(&r.file, r.line));
    }
    Ok(reports)
}
