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
        let mut detail = "no source file imports an ACP SDK or handles `session/prompt`, and acp-patch.toml pins no prompt handler".to_string();
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
    check_parses(lang, &plan).map_err(|e| in_template(e, project, &plan))?;
    let reports = if plan.is_empty() {
        judged(lang, project)?
    } else {
        verify_planned(lang, project, opts, &plan)?
    };
    // the patched agent must start: compiled and loaded by its own toolchain
    notes.extend(
        startup(lang, project, &plan, &merged(&reports))
            .map_err(|e| in_template(e, project, &plan))?
            .notes,
    );
    // apply inserts what is missing; what it cannot mend (a piece renamed or edited by
    // hand) must stop it, not be written around
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

/// A patched file that does not parse or compile, when the failing line came from a template
/// of the override folder (`--templates`, `[templates] dir`): the template is named, with
/// the compiler's line in it (the rendered line found in the filled template), not acp-patch.
fn in_template(e: Error, project: &Project, plan: &Plan) -> Error {
    let Some(dir) = &project.templates.override_dir else {
        return e;
    };
    let (file, line, compiler, message, compiles) = match &e {
        Error::WouldBreak { file, message } => {
            // "line N: message"
            let (n, m) = message
                .strip_prefix("line ")
                .and_then(|r| r.split_once(": "))
                .and_then(|(n, m)| Some((n.parse::<usize>().ok()?, m)))
                .unwrap_or((0, message.as_str()));
            (file, n, "the parser".to_string(), m.to_string(), false)
        }
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
    // under the folder names the tree sits in while they are packages (an installed
    // `site-packages/vibe` is imported as `vibe`): the copy is read as the tree is
    let mut chain: Vec<std::ffi::OsString> = Vec::new();
    let mut dir = project.root.canonicalize().ok();
    while let Some(d) = dir.filter(|d| d.join("__init__.py").is_file()) {
        chain.extend(d.file_name().map(ToOwned::to_owned));
        dir = d.parent().map(Path::to_path_buf);
    }
    let mut root = tmp.path().to_path_buf();
    for (i, name) in chain.iter().rev().enumerate() {
        root.push(name);
        std::fs::create_dir_all(&root).map_err(crate::error::io_err(&root))?;
        if i + 1 < chain.len() {
            let init = root.join("__init__.py");
            std::fs::write(&init, "").map_err(crate::error::io_err(&init))?;
        }
    }
    let put = |rel: &str, bytes: &[u8]| -> Result<()> {
        let dest = root.join(rel);
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
            let _ = std::fs::remove_file(root.join(&fp.file.rel));
        } else {
            put(&fp.file.rel, fp.file.to_disk(&fp.new_text()).as_bytes())?;
        }
    }
    let config = opts.config.clone().or_else(|| {
        let p = project.root.join(crate::config::FILE_NAME);
        p.is_file().then_some(p)
    });
    let copy = Project::load(
        &root,
        &Options {
            config,
            env_prefix: Some(project.env_prefix.clone()),
            templates: project.templates.override_dir.clone(),
            python: project.python.clone(),
        },
    )?;
    judged(lang, &copy)
}

/// The language's verify report, and revert's refusal of the same tree as a failing row:
/// what revert would refuse (a duplicated piece, one edited or moved by hand) fails verify,
/// named with the same `file:line`.
fn judged(lang: &dyn Language, project: &Project) -> Result<Vec<Report>> {
    let mut reports = lang.verify(project)?;
    if let Some(r) = crate::revert::refusal(lang, project)
        && !reports.is_empty()
    {
        // the agent whose report names the refused file, else the first
        let at = format!("{}:", r.file);
        let agent = reports
            .iter()
            .position(|rep| {
                rep.checks
                    .iter()
                    .any(|c| c.locations.iter().any(|l| l.starts_with(&at)))
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
        c.detail = [c.detail.as_str(), &format!("{l}: {}", r.message)]
            .into_iter()
            .filter(|d| !d.is_empty())
            .collect::<Vec<_>>()
            .join("; ");
        c.insert_at.get_or_insert(l);
    }
    Ok(reports)
}

/// One report of all of a language's agents: what the start-up check reads of them.
fn merged(reports: &[Report]) -> Report {
    let mut all = reports[0].clone();
    for r in &reports[1..] {
        all.checks.extend(r.checks.iter().cloned());
    }
    all
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
        match judged(*lang, &project).map_err(|e| explain(e, &project)) {
            Ok(found) => {
                for mut report in found {
                    notes.append(&mut report.notes);
                    startup_rows(*lang, &project, &mut report, &mut notes)
                        .map_err(|e| in_agent(e, *lang, several))?;
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

/// The files a report shows holding inserted code (`file` of each `file:line` location).
fn holding(report: &Report) -> Vec<String> {
    let mut holding: Vec<String> = report
        .checks
        .iter()
        .filter(|c| c.id != "parses" && c.id != "starts")
        .flat_map(|c| c.locations.iter())
        .filter_map(|l| l.split(' ').next())
        .filter_map(|l| l.rsplit_once(':').map(|(f, _)| f.to_string()))
        .collect();
    holding.sort();
    holding.dedup();
    holding
}

/// The start-up check of one agent as apply leaves it, shared by apply and verify so they
/// agree: the files the plan patches or creates (unpatched: as they are now) and those that
/// already hold inserted code (unpatched: as revert would leave them, worked out only when
/// something fails).
fn startup(
    lang: &dyn Language,
    project: &Project,
    plan: &Plan,
    report: &Report,
) -> Result<crate::compile::Startup> {
    let mut files = patched_files(plan);
    let planned: std::collections::HashMap<String, Option<String>> = files
        .iter()
        .map(|f| (f.rel.clone(), f.before.clone()))
        .collect();
    let mut already = Vec::new();
    for rel in holding(report) {
        if planned.contains_key(&rel) {
            continue;
        }
        if let Some(f) = project.files.iter().find(|f| f.rel == rel) {
            already.push(rel.clone());
            files.push(crate::compile::Patched {
                rel,
                before: None,
                after: f.original(),
            });
        }
    }
    let unpatched = || {
        let mut map = planned.clone();
        if !already.is_empty() {
            let reverted = crate::revert::unpatched_texts(lang, project)?;
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
        detail: String::new(),
        insert_at: None,
    };
    match startup(lang, project, &plan, report) {
        Ok(s) => {
            if !s.applies {
                return Ok(());
            }
            if !s.proven.is_empty() {
                row.locations.push(s.proven.join(", "));
            } else if !s.notes.is_empty() {
                row.detail = "not started here (see the notes)".into();
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
                parses.detail = format!("{file}:{line}: {message} ({compiler})");
                parses.insert_at = Some(format!("{file}:{line}"));
            }
            row.status = Status::Malformed;
            row.detail = format!("cannot start: {file}:{line} does not compile");
        }
        Err(Error::WouldNotStart {
            file,
            line,
            failure,
        }) => {
            let f = *failure;
            row.status = Status::Malformed;
            row.locations.push(format!("{file}:{line}"));
            row.detail = format!(
                "{} fails with {}: {} (unpatched it {})",
                f.what, f.by, f.message, f.unpatched
            );
            row.insert_at = Some(format!("{file}:{line}"));
        }
        Err(e) => return Err(e),
    }
    report.checks.push(row);
    Ok(())
}

pub use crate::revert::{RevertOptions, RevertOutcome, revert};
