//! TypeScript agents (`@agentclientprotocol/sdk` 0.x/1.x `AgentSideConnection`, 2.x
//! `agent().onRequest(...)`, `@zed-industries/agent-client-protocol`, or a JSON-RPC loop of
//! their own), parsed with tree-sitter-typescript (its TSX grammar for `.tsx`).
//!
//! Two strategies: engine-shaped agents (pi-acp: a session class hands the turn to an engine
//! and settles it later) keep the engine strategy in `refinements/engine/`; every other agent gets the
//! protocol strategy (`protocol.rs`, over the anchors of `locate/`).

mod locate;
mod pieces;
mod placement;
mod protocol;
mod refinements;
mod runtime;
mod style;
pub(crate) mod syntax;
mod toolchain;

use refinements::engine;

use crate::config::StrategyPin;
use crate::error::Result;
use crate::lang::Language;
use crate::lang::parts::{self, Naming, Parsed, Part};
use crate::lang::survey::{self, Decisions, Site, Stopped, Surveyed};
use crate::plan::Plan;
use crate::project::Project;
use crate::report::Report;
use crate::report::Shape;
use syntax::*;

pub struct TypeScript;

const SDKS: &[&str] = &[
    "@agentclientprotocol/sdk",
    "@zed-industries/agent-client-protocol",
];

/// Words a file must hold to take part in an agent (a cheap test that saves parsing); a
/// `ClientSideConnection` built and handed to a class shows that class is the client side.
const WORDS: &[&str] = &[
    "prompt",
    "session",
    "AgentSideConnection",
    "ClientSideConnection",
    "acpProgress",
    "agentProgressCallback",
];

/// Words of a file that may hold an anchor: the SDK's connection, a send, the inserted code;
/// with the methods' names as [`locate::may_name_method`] finds them.
const ANCHOR_WORDS: &[&str] = &[
    "AgentSideConnection",
    "sessionUpdate",
    "acpProgress",
    "agentProgressCallback",
];

/// Whether a file may hold an anchor (and is worth parsing before anything asks for it).
pub(crate) fn may_hold_anchor(text: &str) -> bool {
    static ANCHORS: std::sync::LazyLock<crate::needles::Needles> =
        std::sync::LazyLock::new(|| crate::needles::Needles::new(ANCHOR_WORDS));
    ANCHORS.any_in(text)
        || ["session/prompt", "session/update", "session/cancel"]
            .iter()
            .any(|m| locate::may_name_method(text, m))
}

/// Files parsed with the TSX grammar: `.tsx`, and JavaScript (JSX allowed; JavaScript has no
/// `<T>x` casts, the one thing TSX reads differently).
fn is_tsx(path: &std::path::Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e == "tsx" || JS.contains(&e))
}

/// JavaScript endings: an agent's files are read as JavaScript only when it has no TypeScript
/// sources (e.g. an installed package's `dist/`), so compiled output beside sources is never
/// patched.
const JS: &[&str] = &["js", "mjs", "cjs", "jsx"];
const TS: &[&str] = &["ts", "mts", "cts", "tsx"];

pub(crate) fn is_js(rel: &str) -> bool {
    rel.rsplit('.').next().is_some_and(|e| JS.contains(&e))
}

/// What the strategies give verify and apply.
enum Analysis {
    Engine {
        files: Vec<Parsed>,
        parts: Vec<Part>,
    },
    /// With the note saying why the engine-level refinement was not used, if it was tried.
    Protocol(protocol::Analysis, Option<String>),
}

impl TypeScript {
    fn parse_all(&self, project: &Project) -> Vec<Parsed> {
        let sources = |exts: &'static [&'static str]| {
            project
                .files_with_extension(exts)
                .filter(|f| !f.rel.ends_with(".d.ts") && self.worth_parsing(&f.text))
        };
        let exts = if sources(TS).next().is_some() { TS } else { JS };
        let parse =
            |f: &crate::source::SourceFile| Parsed::new(f.clone(), syntax::parser(is_tsx(&f.path)));
        let wanted: Vec<&crate::source::SourceFile> = sources(exts).collect();
        // only a file that can hold an anchor is parsed up front; another (a bundle's chunk that
        // says `prompt` and `session` but nothing of ACP) is parsed when a search reaches it by
        // a word it holds (a class's name), else never: its tree would cost ten times its size
        for tsx in [false, true] {
            let texts: Vec<&std::sync::Arc<str>> = wanted
                .iter()
                .filter(|f| is_tsx(&f.path) == tsx && may_hold_anchor(&f.text))
                .map(|f| &f.text)
                .collect();
            syntax::prefetch(&texts, tsx);
        }
        let mut parsed: Vec<Parsed> = wanted.into_iter().map(parse).collect();
        // an agent that builds its own `session/update` messages may write them in a module
        // that names nothing of ACP (a transport): the modules its files import are read too
        let raw = parsed.iter().any(|p| {
            p.file.text.contains("\"session/update\"") || p.file.text.contains("'session/update'")
        });
        // (followed from the files that may hold an anchor and the modules they reach, never
        // from a file that only says `prompt` or `session`: a bundle's chunks are read for
        // their imports no more than for anything else)
        let followed = parsed.len();
        let mut next = 0;
        while raw && next < parsed.len() {
            let from = &parsed[next];
            next += 1;
            if next <= followed && !may_hold_anchor(&from.file.text) {
                continue;
            }
            let wanted: Vec<String> = relative_imports(from);
            for rel in wanted {
                if parsed.iter().any(|p| p.file.rel == rel) {
                    continue;
                }
                if rel.rsplit('.').next().is_some_and(|e| exts.contains(&e))
                    && !rel.ends_with(".d.ts")
                    && let Some(f) = project.source(&rel)
                {
                    parsed.push(parse(&f));
                }
            }
        }
        parsed
    }

    #[cfg(test)]
    pub(crate) fn parse_for_tests(&self, project: &Project) -> Vec<Parsed> {
        self.parse_all(project)
    }

    /// The analysis of the tree, computed once per project (plan, verify and inventory
    /// share it; see [`Project::derived`]).
    fn analyze(&self, project: &Project) -> Result<std::sync::Arc<Surveyed<Analysis>>> {
        self.surveyed(project).map_err(|s| s.error)
    }

    /// The analysis with the sites it decided, computed once per project; or why it stopped
    /// with the sites decided before the stop.
    fn surveyed(
        &self,
        project: &Project,
    ) -> std::result::Result<std::sync::Arc<Surveyed<Analysis>>, Box<Stopped>> {
        project.derived.get_or_try("typescript.analysis", || {
            survey::surveyed(|decisions| self.analyze_now(project, decisions))
        })
    }

    fn analyze_now(&self, project: &Project, decisions: &Decisions) -> Result<Analysis> {
        let files = self.parse_all(project);
        let javascript = files.iter().any(|p| is_js(&p.file.rel));
        let chosen = project.config.typescript.chosen_strategy();
        if chosen == Some(StrategyPin::Engine) && javascript {
            let why = "the engine-level strategy patches TypeScript sources, and the tree has JavaScript only";
            return Err(crate::lang::not_engine_shaped(project, "typescript", why));
        }
        // the engine-level strategy is a refinement: where it does not fit, unless pinned,
        // the protocol strategy patches the agent and a note says why
        let mut note = None;
        let engine_shaped = chosen == Some(StrategyPin::Engine)
            || (chosen.is_none()
                && !javascript
                && engine::probe(&files, &project.config.typescript));
        if engine_shaped {
            match engine::analyze(decisions, project, &files) {
                Ok(parts) => return Ok(Analysis::Engine { files, parts }),
                Err(e) if chosen.is_none() => {
                    note = Some(crate::lang::fallback_note("typescript", &e))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(Analysis::Protocol(
            protocol::analyze(decisions, project, files)?,
            note,
        ))
    }
}

impl Language for TypeScript {
    fn name(&self) -> &'static str {
        "typescript"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["ts", "mts", "cts", "tsx", "js", "mjs", "cjs", "jsx"]
    }

    fn worth_parsing(&self, text: &str) -> bool {
        static WORTH: std::sync::LazyLock<crate::needles::Needles> =
            std::sync::LazyLock::new(|| crate::needles::Needles::new(WORDS));
        WORTH.any_in(text)
    }

    /// The prefilter's words (they hold `session/prompt` and the markers of inserted code)
    /// and the SDKs' names (detection): a module without them is read again when an agent
    /// of its own JSON-RPC imports it ([`TypeScript::parse_all`]).
    fn keeps(&self, project: &Project) -> Option<crate::lang::Keeps> {
        static KEEP: std::sync::LazyLock<crate::needles::Needles> =
            std::sync::LazyLock::new(|| crate::needles::Needles::new(&[WORDS, SDKS].concat()));
        project
            .config
            .typescript
            .is_empty()
            .then_some(|text: &str| KEEP.any_in(text))
    }

    fn syntax_error(&self, text: &str) -> Option<(usize, String)> {
        syntax::first_error(&syntax::parse(text, false))
    }

    fn syntax_error_at(&self, path: &std::path::Path, text: &str) -> Option<(usize, String)> {
        syntax::first_error(&syntax::parse(text, is_tsx(path)))
    }

    fn detect(&self, project: &Project) -> bool {
        // one scan of each text for all of them (a tree may hold thousands of files)
        static AGENT: std::sync::LazyLock<crate::needles::Needles> =
            std::sync::LazyLock::new(|| {
                crate::needles::Needles::new(
                    // `new AgentSideConnection(` (`new acp.AgentSideConnection(`): the SDK
                    // imported under another name (`from "@org/utils/acp"`, `from "#acp"`)
                    &[
                        SDKS,
                        &[
                            "\"session/prompt\"",
                            "'session/prompt'",
                            "AgentSideConnection(",
                        ],
                    ]
                    .concat(),
                )
            });
        project
            .files_with_extension(self.extensions())
            .any(|f| AGENT.any_in(&f.text))
    }

    fn plan(&self, project: &Project) -> Result<Plan> {
        match &self.analyze(project)?.value {
            Analysis::Engine { files, parts } => parts::plan(files, parts),
            Analysis::Protocol(a, note) => {
                let mut plan = parts::plan(&a.files, &a.parts)?;
                plan.notes.extend(note.clone());
                plan.notes.extend(a.notes.iter().cloned());
                Ok(plan)
            }
        }
    }

    fn survey(&self, project: &Project) -> (Result<()>, Vec<Site>) {
        match self.surveyed(project) {
            Err(s) => (Err(s.error), s.sites),
            Ok(a) => (self.plan(project).map(drop), a.sites.clone()),
        }
    }

    fn build_check(
        &self,
        _project: &Project,
        dir: &std::path::Path,
    ) -> Option<std::result::Result<std::process::Command, String>> {
        Some(toolchain::tsc_command(dir))
    }

    fn startup_check(
        &self,
        project: &Project,
        files: &[crate::toolchain::Patched],
        unpatched: crate::toolchain::Unpatched,
    ) -> Result<crate::toolchain::Startup> {
        toolchain::startup(project, files, unpatched)
    }

    fn inventory(&self, project: &Project) -> Result<parts::Inventory> {
        Ok(match &self.analyze(project)?.value {
            Analysis::Engine { files, parts } => {
                parts::Inventory::new(files, parts.clone(), "acpProgress")
            }
            Analysis::Protocol(a, _) => {
                parts::Inventory::new(&a.files, a.parts.clone(), runtime::NS)
            }
        })
    }

    fn verify(&self, project: &Project) -> Result<Vec<Report>> {
        let root = project.root.display().to_string();
        let has_function = |p: &Parsed, name: &str| {
            top_level_functions(p.tree().root_node(), &p.file.text)
                .iter()
                .any(|(n, _)| n == name)
        };
        let mut strategy_note = Vec::new();
        let mut report = match &self.analyze(project)?.value {
            Analysis::Engine { files, parts } => {
                let naming = Naming {
                    language: self.name(),
                    checks: parts::ENGINE_CHECKS,
                    shape: Shape::Engine,
                    callback: "agentProgressCallback",
                    defines: &defined_names,
                    has_function: &has_function,
                    marker: "acpProgress",
                };
                parts::report(&root, files, parts, &hook_calls(files), &[], &naming)
            }
            Analysis::Protocol(a, note) => {
                strategy_note.extend(note.clone());
                strategy_note.extend(a.notes.iter().cloned());
                let naming = Naming {
                    language: self.name(),
                    checks: parts::PROTOCOL_CHECKS,
                    shape: Shape::Protocol(None),
                    callback: "agentProgressCallback",
                    defines: &protocol::defined_names,
                    has_function: &has_function,
                    marker: runtime::NS,
                };
                // one set of hook calls per runtime module (a monorepo's agents have one each,
                // every one checked current byte for byte): count the first module's, and any
                // call outside the modules
                let mut calls = hook_calls(&a.files);
                let first_module = a
                    .files
                    .iter()
                    .enumerate()
                    .filter(|(_, p)| runtime::is_runtime_module(&p.file.text))
                    .min_by_key(|(_, p)| p.file.rel.clone())
                    .map(|(i, _)| i);
                for state in calls.iter_mut() {
                    state.retain(|(f, _)| {
                        Some(*f) == first_module
                            || !runtime::is_runtime_module(&a.files[*f].file.text)
                    });
                }
                parts::report(&root, &a.files, &a.parts, &calls, &a.findings, &naming)
            }
        }?;
        report.notes.extend(strategy_note);
        Ok(vec![report])
    }
}

/// Names of the top-level functions a rendered block defines.
fn defined_names(block: &str) -> Vec<String> {
    block
        .lines()
        .filter_map(|l| {
            l.strip_prefix("async function ")
                .or_else(|| l.strip_prefix("function "))
        })
        .filter_map(|l| l.split(['(', '<']).next())
        .map(str::to_string)
        .collect()
}

/// The callback's call sites per state: `cb("start"|"heartbeat"|"complete", ...)` where `cb`
/// is `x.agentProgressCallback` or a `const` holding it.
pub fn hook_calls(files: &[Parsed]) -> [Vec<(usize, usize)>; 3] {
    let mut out: [Vec<(usize, usize)>; 3] = Default::default();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        if !src.contains("agentProgressCallback") {
            continue;
        }
        let root = p.tree().root_node();
        let holders: Vec<&str> = descendants(root, "variable_declarator")
            .into_iter()
            .filter(|d| {
                d.child_by_field_name("value")
                    .is_some_and(|v| text(v, src).ends_with(".agentProgressCallback"))
            })
            .filter_map(|d| d.child_by_field_name("name").map(|n| text(n, src)))
            .collect();
        for c in descendants(root, "call_expression") {
            let Some(state) = arguments(c).first().and_then(|a| string_value(*a, src)) else {
                continue;
            };
            let Some(k) = ["start", "heartbeat", "complete"]
                .iter()
                .position(|s| *s == state)
            else {
                continue;
            };
            let (obj, name) = callee(c, src);
            let is_cb = (!obj.is_empty() && name == "agentProgressCallback")
                || (obj.is_empty() && holders.contains(&name));
            if is_cb {
                out[k].push((i, line(c)));
            }
        }
    }
    out
}

/// The files of the tree a file's relative `import` / `export ... from` specifiers may name
/// (`./x.js` → `x.ts`, `./x` → `x.ts` or `x/index.ts`), as relative paths.
fn relative_imports(p: &Parsed) -> Vec<String> {
    let src = p.file.text.as_ref();
    let mut out = Vec::new();
    for stmt in named_children(p.tree().root_node()) {
        if !matches!(stmt.kind(), "import_statement" | "export_statement") {
            continue;
        }
        let Some(spec) = stmt
            .child_by_field_name("source")
            .and_then(|s| string_value(s, src))
        else {
            continue;
        };
        out.extend(relative_targets(&p.file.rel, spec));
    }
    out
}

/// The files a relative specifier in the file `from` may name (`./x.js` → `x.ts`, `./x` →
/// `x.ts` or `x/index.ts`), in the order they are tried; none for a package's name.
pub(crate) fn relative_targets(from: &str, spec: &str) -> Vec<String> {
    if !(spec.starts_with("./") || spec.starts_with("../")) {
        return Vec::new();
    }
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    for seg in spec.split('/') {
        match seg {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    let stem = JS
        .iter()
        .chain(TS)
        .find_map(|e| joined.strip_suffix(&format!(".{e}")))
        .unwrap_or(&joined);
    TS.iter()
        .chain(JS)
        .flat_map(|e| [format!("{stem}.{e}"), format!("{joined}/index.{e}")])
        .collect()
}

use crate::lang::tree::line;
