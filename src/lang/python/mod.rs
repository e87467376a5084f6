//! Python agents, parsed with tree-sitter. Two strategies share the protocol anchors
//! (`locate/`): the protocol strategy (`protocol`: the runtime module plus small insertions)
//! for every agent, and the engine-level refinement (`refinements/engine`) for engine-shaped
//! agents such as Hermes. `placement` proves where inserted code sits (with `scope`'s binding analysis);
//! `package` spells its imports.

mod files;
mod interpreter;
mod locate;
mod package;
mod pieces;
mod placement;
mod protocol;
mod refinements;
mod runtime;
mod scope;
pub(crate) mod syntax;
mod toolchain;

use crate::config::StrategyPin;
use crate::error::{Error, Result};
use crate::lang::Language;
use crate::lang::parts::{self, Finding, Naming, Parsed, Part};
use crate::lang::survey::{Decisions, Site, Stopped};
use crate::needles::Needles;
use crate::plan::Plan;
use crate::project::Project;
use crate::report::Shape;
use crate::report::{Report, Status};
use crate::source::SourceFile;
use locate::{found, handlers};
use refinements::engine;
use std::collections::HashSet;
use std::sync::LazyLock;

pub struct Python;

/// The runtime module's names (its writing and placing are in `runtime`), here beneath the
/// locators, which recognise code an earlier apply inserted by them.
///
/// The first line of the runtime module acp-patch writes; files starting with it are ours.
pub const RUNTIME_MARKER: &str = "# acp-patch: runtime module";
/// The runtime module's file name, and the name agent files import it as.
pub const RUNTIME_FILE: &str = "acp_progress.py";
pub const RUNTIME_NAME: &str = "acp_progress";

/// Text every piece apply inserts holds (the runtime module, its import, the engine-level
/// `_acp_progress_*` helpers): verify requires files holding it to parse, revert refuses a
/// tree that still holds it once every piece is out.
const MARKER: &str = "acp_progress";

/// Report rows of the engine-level shape beyond the shared ones: the placement proof.
const ENGINE_EXTRA_CHECKS: &[&str] = &["bound"];

#[allow(clippy::large_enum_variant)] // one per run: boxing buys nothing
enum Strategy<'a> {
    Engine(engine::EngineSites<'a>),
    /// With the note saying why the engine-level refinement was not used, if it was tried.
    Protocol(handlers::Anchors<'a>, Option<String>),
}

/// What one analysis of the tree gives: the shape, every part, the placement facts
/// established on the way, and the prompt handlers (file, def).
struct Analysis<'a> {
    shape: Shape,
    parts: Vec<Part>,
    findings: Vec<Finding>,
    prompts: Vec<(usize, tree_sitter::Node<'a>)>,
    /// The protocol strategy's runtime modules, one per agent (import root).
    runtimes: Vec<runtime::Runtime>,
    /// Older runtime modules in an agent's import root that apply removes.
    stale: Vec<usize>,
    /// Why the engine-level refinement was not used, where it was tried.
    note: Option<String>,
    /// The tree's package map (module names, import roots), as the parts were built with it.
    packages: std::sync::Arc<package::Packages>,
}

/// One analysis of a tree state with the files it points into, shared by plan, verify and
/// inventory of the same project (see [`Project::derived`]).
struct Analyzed {
    // declared first, so dropped first: its nodes point into `files`' trees
    analysis: Analysis<'static>,
    files: Vec<Parsed>,
    /// The pinnable sites the analysis decided (what `acp-patch init` lists).
    sites: Vec<Site>,
}

impl Analyzed {
    fn get(&self) -> (&[Parsed], &Analysis<'_>) {
        (&self.files, &self.analysis)
    }
}

impl Python {
    /// The tree's files and their analysis, computed once per project.
    fn analyzed(&self, project: &Project) -> Result<std::sync::Arc<Analyzed>> {
        self.surveyed(project).map_err(|s| s.error)
    }

    /// The tree's package map (module names, import roots), from the files its analysis read
    /// (kept per tree state), else from a fresh read of them.
    fn packages(&self, project: &Project) -> std::sync::Arc<package::Packages> {
        match self.analyzed(project) {
            Ok(a) => a.analysis.packages.clone(),
            Err(_) => {
                std::sync::Arc::new(package::Packages::new(project, &self.parse_all(project)))
            }
        }
    }

    /// [`Python::analyzed`], or why it stopped with the sites decided before the stop.
    fn surveyed(
        &self,
        project: &Project,
    ) -> std::result::Result<std::sync::Arc<Analyzed>, Box<Stopped>> {
        project.derived.get_or_try("python.analysis", || {
            let decisions = Decisions::default();
            let made = (|| {
                let (files, strategy) = self.files(&decisions, project)?;
                let analysis = self.analyze(project, &files, strategy)?;
                // SAFETY: the analysis' nodes point into the trees the parsed files own
                // (tree-sitter trees live on the C heap, so moving the files moves no tree);
                // `Analyzed` keeps the files as long as the analysis and drops the analysis
                // first.
                let analysis =
                    unsafe { std::mem::transmute::<Analysis<'_>, Analysis<'static>>(analysis) };
                Ok((analysis, files))
            })();
            let sites = decisions.into_sites();
            match made {
                Ok((analysis, files)) => Ok(Analyzed {
                    analysis,
                    files,
                    sites,
                }),
                Err(e) => Err(Stopped::new(e, sites)),
            }
        })
    }

    /// The parsed files, plus an empty one for the runtime module when the protocol strategy
    /// will create it, and the strategy (found once: the module added is new or was not worth
    /// parsing, so it holds no anchor).
    fn files(
        &self,
        decisions: &crate::lang::survey::Decisions,
        project: &Project,
    ) -> Result<(Vec<Parsed>, Strategy<'static>)> {
        // the engine's longest modules parse while the prompt handler is looked for
        refinements::engine::parse_early(project.files_with_extension(self.extensions()));
        let mut files = self.parse_all(project);
        let strategy = self.strategy(decisions, project, &files)?;
        // SAFETY: the strategy's nodes point into the trees the parsed files own (on the C
        // heap: a file moved by the push below moves no tree); the caller keeps the files as
        // long as the analysis made from it (see `surveyed`).
        let strategy = unsafe { std::mem::transmute::<Strategy<'_>, Strategy<'static>>(strategy) };
        let new_modules: Vec<(String, crate::source::Style)> = match &strategy {
            Strategy::Protocol(a, _) => {
                let packages = package::Packages::new(project, &files);
                runtime::runtimes(&files, a.runtime_importers(), &packages)
                    .into_iter()
                    .filter(|r| !files.iter().any(|p| p.file.rel == r.rel))
                    .map(|r| (r.rel, files[r.importers[0]].file.style().clone()))
                    .collect()
            }
            Strategy::Engine(_) => Vec::new(),
        };
        for (rel, mut style) in new_modules {
            // a file of that name that did not look worth parsing is still the one to judge
            match project.source(&rel) {
                Some(existing) => files.push(parsed(existing)),
                None => {
                    style.bom = false;
                    let path = project.root.join(&rel);
                    files.push(parsed(SourceFile::new_file(path, rel, style)));
                }
            }
        }
        Ok((files, strategy))
    }

    fn strategy<'a>(
        &self,
        decisions: &crate::lang::survey::Decisions,
        project: &Project,
        files: &'a [Parsed],
    ) -> Result<Strategy<'a>> {
        let pins = &project.config.python;
        let anchors = match handlers::locate(decisions, &project.root, files, pins) {
            Ok(a) => a,
            // a file that does not parse may hide the site: say that first
            Err(
                e @ (Error::NoAgent { .. } | Error::Unlocatable { .. } | Error::NotFound { .. }),
            ) => {
                return Err(files.iter().find_map(parts::parse_error).unwrap_or(e));
            }
            Err(e) => return Err(e),
        };
        let chosen = pins.chosen_strategy();
        if chosen == Some(StrategyPin::Protocol) {
            return Ok(Strategy::Protocol(anchors, None));
        }
        // the engine-level strategy is a refinement: where it does not fit, unless pinned,
        // the protocol strategy patches the agent and a note says why
        let mut note = None;
        if let [h] = anchors.handlers.as_slice() {
            let attr = match &h.connection.reach {
                found::Reach::Attribute { attr, .. } => Some(attr.as_str()),
                found::Reach::Bind { .. } | found::Reach::Held { .. } => None,
                found::Reach::Wire => return Ok(Strategy::Protocol(anchors, None)),
            };
            match engine::locate(decisions, files, h.prompt_at(), h.class, attr, pins) {
                Ok(Some(cb)) => return Ok(Strategy::Engine(cb)),
                Ok(None) => {}
                Err(e) if chosen.is_none() => note = Some(crate::lang::fallback_note("python", &e)),
                Err(e) => return Err(e),
            }
        }
        if chosen == Some(StrategyPin::Engine) {
            let why = match anchors.handlers.len() {
                1 => "its prompt handler assigns no engine callbacks, or no LLM call has a first-delta closure".to_string(),
                n => format!("it has {n} prompt handlers"),
            };
            return Err(crate::lang::not_engine_shaped(project, "python", &why));
        }
        Ok(Strategy::Protocol(anchors, note))
    }

    fn analyze<'a>(
        &self,
        project: &'a Project,
        files: &'a [Parsed],
        strategy: Strategy<'a>,
    ) -> Result<Analysis<'a>> {
        let mut b = pieces::Builder::new(files, project)?;
        let mut note = None;
        let (shape, prompts, runtimes) = match strategy {
            Strategy::Engine(cb) => {
                b.engine_shape(&cb)?;
                (
                    Shape::Engine,
                    vec![(cb.prompt.file, cb.prompt.node)],
                    vec![],
                )
            }
            Strategy::Protocol(a, why) => {
                note = why;
                let runtimes = b.protocol(&a)?;
                let prompts = a
                    .handlers
                    .iter()
                    .map(|h| (h.anchor.site.file, h.prompt))
                    .collect();
                (Shape::Protocol(None), prompts, runtimes)
            }
        };
        let stale = runtime::stale_runtimes(files, &runtimes, &b.packages);
        Ok(Analysis {
            shape,
            parts: b.pieces.parts,
            findings: b.pieces.findings,
            prompts,
            runtimes,
            stale,
            note,
            packages: b.packages,
        })
    }

    /// [`Python::planned_findings`] of the tree's analysis, found once per tree state: verify
    /// and the plan its start-up check runs both ask.
    fn planned(&self, project: &Project) -> Result<std::sync::Arc<Vec<Finding>>> {
        project.derived.get_or_try("python.planned", || {
            let analyzed = self.analyzed(project)?;
            let (files, analysis) = analyzed.get();
            self.planned_findings(files, &analysis.parts)
        })
    }

    /// Placement facts about the code apply would insert, found on the patched text and
    /// told at the place apply would insert it.
    fn planned_findings(&self, files: &[Parsed], parts: &[Part]) -> Result<Vec<Finding>> {
        if parts.iter().all(|p| p.present.is_some()) {
            return Ok(vec![]);
        }
        let plan = parts::patched(files, parts)?;
        let mut patched: Vec<Parsed> = files.to_vec();
        // (file, byte range in the patched text, the part inserted there)
        let mut inserted: Vec<(usize, std::ops::Range<usize>, &Part)> = Vec::new();
        // each patched text parsed from the tree before the plan (only what the edits touch
        // is new), the files side by side, the longest first
        // (file, its changes, its patched text: the one text the cache and the file share)
        let mut jobs: Vec<(usize, Changes, std::sync::Arc<str>)> = Vec::new();
        for fp in plan.files.iter().filter(|f| !f.delete) {
            if let Some(i) = files.iter().position(|p| p.file.path == fp.file.path) {
                jobs.push((i, fp.changes(), fp.new_text().into()));
            }
        }
        let mut longest_first: Vec<&(usize, Changes, std::sync::Arc<str>)> = jobs.iter().collect();
        longest_first.sort_by_key(|(_, _, new)| std::cmp::Reverse(new.len()));
        crate::lang::tree::cache::on_all_cores(&longest_first, |(i, changes, new)| {
            syntax::reparse(&files[*i].file.text, changes, new);
        });
        let mut jobs = jobs.into_iter();
        for fp in plan.files.iter().filter(|f| !f.delete) {
            let Some(i) = files.iter().position(|p| p.file.path == fp.file.path) else {
                continue;
            };
            let (_, _, new_text) = jobs.next().expect("one job per patched file");
            let mut edits: Vec<&crate::plan::Edit> = fp.edits.iter().collect();
            edits.sort_by_key(|e| e.offset);
            let mut shift: isize = 0;
            for e in edits {
                let start = (e.offset as isize + shift) as usize;
                if let Some(part) = parts.iter().find(|p| {
                    p.file == i && p.offset == e.offset && p.text == e.text && p.present.is_none()
                }) {
                    inserted.push((i, start..start + e.text.len(), part));
                }
                shift += e.text.len() as isize - e.replaces as isize;
            }
            let mut file = fp.file.clone();
            file.text = new_text;
            patched[i] = parsed(file);
        }
        let ours = defined_by(parts);
        let judged = |i: usize| inserted.iter().any(|(file, _, _)| *file == i);
        let mut out = Vec::new();
        // only findings inside inserted code are told: only the files it goes into are judged
        for f in placement::findings_in(&patched, &judged, &ours, &[])
            .into_iter()
            .filter(|f| f.status != Status::Ok)
        {
            let text = &patched[f.file].file.text;
            let line_start = line_offset(text, f.line);
            let line_end = line_offset(text, f.line + 1);
            let Some((_, _, part)) = inserted.iter().find(|(file, range, _)| {
                *file == f.file
                    && range.start < line_end
                    && line_start < range.end.max(range.start + 1)
            }) else {
                continue; // already in the tree: reported by the pass over the tree itself
            };
            out.push(Finding {
                detail: format!("the {} apply would insert: {}", part.label, f.detail),
                line: part.anchor_line,
                ..f
            });
        }
        Ok(out)
    }
}

/// A file's changes: each byte range of the old text and what replaces it.
type Changes = Vec<(std::ops::Range<usize>, String)>;

pub(super) fn parsed(file: SourceFile) -> Parsed {
    Parsed::new(file, syntax::PARSER)
}

/// Byte offset of the start of a 1-based line (the text's length past the last line).
fn line_offset(text: &str, line: usize) -> usize {
    if line <= 1 {
        return 0;
    }
    text.match_indices('\n')
        .nth(line - 2)
        .map(|(i, _)| i + 1)
        .unwrap_or(text.len())
}

/// Names of the functions acp-patch's own module-level blocks define.
fn defined_by(parts: &[Part]) -> HashSet<String> {
    parts
        .iter()
        .filter(|p| p.label != protocol::RUNTIME_LABEL)
        .flat_map(|p| defined_names(&p.text))
        .collect()
}

impl Language for Python {
    fn name(&self) -> &'static str {
        "python"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["py"]
    }

    fn worth_parsing(&self, text: &str) -> bool {
        files::worth(text)
    }

    /// The prefilter's words hold detection's (`import acp`, `session/prompt`) and the
    /// marker of inserted code (`acp_progress`): a file without them is only ever read by
    /// the search for the agent's classes and runners ([`Python::parse_all`]), which reads it
    /// again.
    fn keeps(&self, project: &Project) -> Option<crate::lang::Keeps> {
        project.config.python.is_empty().then_some(files::worth)
    }

    fn syntax_error(&self, text: &str) -> Option<(usize, String)> {
        syntax::first_error(&syntax::parse(text))
    }

    fn detect(&self, project: &Project) -> bool {
        static AGENT: LazyLock<Needles> = LazyLock::new(|| {
            Needles::new(&[
                "import acp",
                "from acp",
                "\"session/prompt\"",
                "'session/prompt'",
            ])
        });
        // a dispatcher picking its handler by the method's name names no method: it writes
        // `session/update` messages and calls `getattr(self, ...)`
        let by_name = |text: &str| {
            text.contains("getattr(self")
                && (text.contains("\"session/update\"") || text.contains("'session/update'"))
        };
        project
            .files_with_extension(self.extensions())
            .any(|f| AGENT.any_in(&f.text) || by_name(&f.text))
            || project.config.python.prompt.is_some()
    }

    fn plan(&self, project: &Project) -> Result<Plan> {
        let analyzed = self.analyzed(project)?;
        let (files, analysis) = analyzed.get();
        // never write code that reads a name where it is not bound
        if let Some(f) = self
            .planned(project)?
            .iter()
            .find(|f| f.status != Status::Ok)
        {
            return Err(Error::Unsupported {
                file: files[f.file].file.rel.clone(),
                line: f.line,
                message: format!(
                    "{}; nothing was written (`acp-patch verify` lists the sites; pin them in acp-patch.toml)",
                    f.detail
                ),
            });
        }
        let mut plan = parts::plan(files, &analysis.parts)?;
        plan.notes.extend(analysis.note.clone());
        for &i in &analysis.stale {
            plan.delete(&files[i].file);
            plan.notes.push(format!(
                "{}: removed, an older runtime module; the agent's files import {}",
                files[i].file.rel,
                runtime_list(&analysis.runtimes)
            ));
        }
        Ok(plan)
    }

    fn prefetch_toolchain(&self, project: &Project) {
        interpreter::prefetch(project);
        for dir in toolchain::likely_scopes(project) {
            crate::toolchain::prefetch_fingerprint(&dir);
        }
    }

    fn startup_check(
        &self,
        project: &Project,
        files: &[crate::toolchain::Patched],
        unpatched: crate::toolchain::Unpatched,
    ) -> Result<crate::toolchain::Startup> {
        toolchain::startup(project, files, unpatched)
    }

    fn survey(&self, project: &Project) -> (Result<()>, Vec<Site>) {
        match self.surveyed(project) {
            Err(s) => (Err(s.error), s.sites),
            Ok(a) => (self.plan(project).map(drop), a.sites.clone()),
        }
    }

    fn inventory(&self, project: &Project) -> Result<parts::Inventory> {
        let analyzed = self.analyzed(project)?;
        let (files, analysis) = analyzed.get();
        Ok(parts::Inventory::new(files, analysis.parts.clone(), MARKER))
    }

    fn verify(&self, project: &Project) -> Result<Vec<Report>> {
        let analyzed = self.analyzed(project)?;
        let (files, analysis) = analyzed.get();
        let mut findings = analysis.findings.clone();
        let ours = defined_by(&analysis.parts);
        findings.extend(placement::findings(files, &ours, &analysis.prompts));
        findings.extend(self.planned(project)?.iter().cloned());
        let engine_checks = parts::engine_checks(ENGINE_EXTRA_CHECKS);
        let naming = Naming {
            language: self.name(),
            checks: if analysis.shape == Shape::Engine {
                &engine_checks
            } else {
                parts::PROTOCOL_CHECKS
            },
            shape: analysis.shape,
            callback: "agent_progress_callback",
            defines: &defined_names,
            has_function: &|p, name| {
                syntax::top_level_functions(p.tree().root_node())
                    .iter()
                    .any(|d| syntax::name_of(*d, &p.file.text) == name)
            },
            marker: MARKER,
        };
        let mut calls = placement::hook_calls(files);
        for state in calls.iter_mut() {
            state.retain(|(f, _)| !analysis.stale.contains(f));
        }
        for &i in &analysis.stale {
            findings.push(Finding {
                check: "runtime",
                status: Status::Malformed,
                file: i,
                line: 1,
                detail: format!(
                    "an older runtime module (the agent's runtime is {}), which apply removes",
                    runtime_list(&analysis.runtimes)
                ),
            });
        }
        if analysis.runtimes.len() < 2 {
            let root = project.root.display().to_string();
            let mut report =
                parts::report(&root, files, &analysis.parts, &calls, &findings, &naming)?;
            report.notes.extend(analysis.note.clone());
            return Ok(vec![report]);
        }
        // several agents (import roots), each with its runtime module: judged one by one
        let agent = agent_of_files(files, &analysis.runtimes, &analysis.packages);
        let mut reports = Vec::new();
        for (i, r) in analysis.runtimes.iter().enumerate() {
            let parts: Vec<Part> = analysis
                .parts
                .iter()
                .filter(|p| agent[p.file] == i)
                .cloned()
                .collect();
            let findings: Vec<Finding> = findings
                .iter()
                .filter(|f| agent[f.file] == i)
                .cloned()
                .collect();
            let calls = calls
                .clone()
                .map(|state| state.into_iter().filter(|(f, _)| agent[*f] == i).collect());
            let root = project.root.join(&r.root).display().to_string();
            reports.push(parts::report(
                &root, files, &parts, &calls, &findings, &naming,
            )?);
        }
        Ok(reports)
    }
}

/// The runtime modules' files, for a message.
fn runtime_list(runtimes: &[runtime::Runtime]) -> String {
    runtimes
        .iter()
        .map(|r| r.rel.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The agent (index into `runtimes`) each file belongs to: a runtime module to its own, any
/// other file to the one of its import root (files under no agent's root to the first).
fn agent_of_files(
    files: &[Parsed],
    runtimes: &[runtime::Runtime],
    packages: &package::Packages,
) -> Vec<usize> {
    files
        .iter()
        .map(|p| {
            runtimes
                .iter()
                .position(|r| r.rel == p.file.rel)
                .or_else(|| {
                    let root = packages.place(&p.file.rel).root;
                    runtimes.iter().position(|r| r.root == root)
                })
                .unwrap_or(0)
        })
        .collect()
}

/// Names of the top-level functions a rendered block defines.
fn defined_names(block: &str) -> Vec<String> {
    block
        .lines()
        .filter_map(|l| {
            l.strip_prefix("async def ")
                .or_else(|| l.strip_prefix("def "))
        })
        .filter_map(|l| l.split('(').next())
        .map(str::to_string)
        .collect()
}
