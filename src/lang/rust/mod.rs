//! Rust agents on an ACP SDK crate (`agent-client-protocol`, `sacp`), patched by what the SDK contract fixes
//! (the protocol strategy): the prompt handlers the SDK calls, every SDK send of a session
//! update, the connection the SDK hands over, the turn's end. Files are parsed with `syn`
//! (byte offsets from `proc-macro2` span locations); edits are spliced into the original text.

mod locate;
mod manifest;
mod modules;
mod pieces;
mod placement;
mod runtime;
mod sdk;
mod syntax;
mod toolchain;
mod wire;

use crate::error::{Error, Result};
use crate::lang::Language;
use crate::lang::parts::{self, Finding, HookCalls, Naming, ParsedSource, Part, parse_error};
use crate::lang::survey::{self, Decisions, Site, Stopped, Surveyed};
use crate::plan::Plan;
use crate::project::Project;
use crate::report::Report;
use crate::report::Shape;
use crate::source::SourceFile;
use manifest::Manifest;
use modules::{Modules, RootKind};
use sdk::Dialect;
use std::collections::BTreeSet;
use std::sync::Arc;

pub struct Rust;

pub(crate) struct Parsed {
    pub file: SourceFile,
    /// `None` for a file that does not parse, for the manifest, and for a module to create.
    pub ast: Option<syn::File>,
    /// The first syntax error: (byte offset, message).
    pub error: Option<(usize, String)>,
}

impl ParsedSource for Parsed {
    fn source(&self) -> &SourceFile {
        &self.file
    }

    fn syntax_error(&self) -> Option<&(usize, String)> {
        self.error.as_ref()
    }
}

/// Bracket nesting syn is given at most: it recurses per level and would overflow the
/// stack on a file nested thousands deep (real code stays far below).
const MAX_NESTING: usize = 256;

fn parse(text: &str) -> std::result::Result<syn::File, (usize, String)> {
    if let Some(at) = crate::source::nested_deeper_than(text, MAX_NESTING) {
        return Err((
            at,
            format!("brackets nested more than {MAX_NESTING} deep; acp-patch does not parse it"),
        ));
    }
    syn::parse_file(text).map_err(|e| (e.span().byte_range().start.min(text.len()), e.to_string()))
}

pub(crate) struct Analysis {
    files: Vec<Parsed>,
    parts: Vec<Part>,
    findings: Vec<Finding>,
    shape: Shape,
    /// What apply says besides its edits (modules left as they are, and why).
    notes: Vec<String>,
}

/// A file of a kept analysis: its text and first syntax error, without the syntax tree
/// (plan, verify and inventory read no tree, and `proc-macro2`'s spans are tied to the
/// thread that parsed them, so a tree is no value to share).
pub(crate) struct Checked {
    file: SourceFile,
    error: Option<(usize, String)>,
}

impl ParsedSource for Checked {
    fn source(&self) -> &SourceFile {
        &self.file
    }

    fn syntax_error(&self) -> Option<&(usize, String)> {
        self.error.as_ref()
    }
}

/// One analysis of a tree state, shared by plan, verify, inventory and init's survey of the
/// same project (see [`Project::derived`]).
pub(crate) struct Analyzed {
    files: Vec<Checked>,
    parts: Vec<Part>,
    findings: Vec<Finding>,
    shape: Shape,
    notes: Vec<String>,
    /// The runtime module's progress callback calls (what verify reports them by).
    calls: HookCalls,
}

impl Analyzed {
    fn new(a: Analysis) -> Analyzed {
        let calls = placement::hook_calls(&a.files);
        Analyzed {
            files: a
                .files
                .into_iter()
                .map(|p| Checked {
                    file: p.file,
                    error: p.error,
                })
                .collect(),
            parts: a.parts,
            findings: a.findings,
            shape: a.shape,
            notes: a.notes,
            calls,
        }
    }
}

fn is_runtime_module(p: &Parsed) -> bool {
    p.file.text.starts_with(runtime::MARKER)
}

impl Rust {
    fn parse_all(&self, project: &Project) -> Vec<Parsed> {
        project
            .files_with_extension(self.extensions())
            .map(|f| {
                let (ast, error) = match parse(&f.text) {
                    Ok(ast) => (Some(ast), None),
                    Err(e) => (None, Some(e)),
                };
                Parsed {
                    file: f.clone(),
                    ast,
                    error,
                }
            })
            .collect()
    }

    /// The analysis of the tree, computed once per project (plan, verify and inventory
    /// share it; see [`Project::derived`]).
    fn analyze(&self, project: &Project) -> Result<Arc<Surveyed<Analyzed>>> {
        self.surveyed(project).map_err(|s| s.error)
    }

    /// The analysis with the sites it decided, computed once per project; or why it stopped
    /// with the sites decided before the stop.
    fn surveyed(
        &self,
        project: &Project,
    ) -> std::result::Result<Arc<Surveyed<Analyzed>>, Box<Stopped>> {
        project.derived.get_or_try("rust.analysis", || {
            survey::surveyed(|decisions| self.analyze_now(project, decisions).map(Analyzed::new))
        })
    }

    fn analyze_now(&self, project: &Project, decisions: &Decisions) -> Result<Analysis> {
        if project.config.rust.emitter.is_some() || project.config.rust.handoff.is_some() {
            return Err(Error::Config {
                path: project.root.join(crate::config::FILE_NAME),
                message: "[rust] `emitter` and `handoff` are no longer used: every SDK send of a session update goes through the emitter and the card opens at the prompt handler's entry; remove them".into(),
            });
        }
        let files = self.parse_all(project);
        let manifest = match Manifest::load(project)? {
            Some(m) => m,
            None => return wire::parts::analyze(decisions, project, files),
        };
        let mut files = files;
        let texts: Vec<&str> = files
            .iter()
            .filter(|p| !is_runtime_module(p))
            .map(|p| p.file.text.as_ref())
            .collect();
        let dialect = manifest
            .sdk
            .dialect(manifest.sdk_version, &manifest.sdk_version_text, &texts)
            .map_err(|message| Error::Unsupported {
                file: manifest.file.rel.clone(),
                line: 1,
                message,
            })?;
        let modules::Layout {
            modules,
            runtime_files,
        } = modules::Layout::read(&manifest, &files, &project.root)?;
        let collected = syntax::collect(&files, &runtime_files);
        let sdk = manifest.sdk_ident.clone();
        // beside a v1 agent on 1.x–3.x, the modules on the draft protocol v2 stay as they are
        let left: BTreeSet<usize> = match dialect {
            Dialect::Builder {
                schema_v1: true, ..
            } => (0..files.len())
                .filter(|&i| {
                    modules::owned(&modules, &runtime_files, i)
                        && sdk::uses_builder_v2(&files[i].file.text)
                })
                .collect(),
            _ => BTreeSet::new(),
        };
        let notes: Vec<String> = left
            .iter()
            .map(|&i| format!(
                "{}: left as it is: it uses the draft protocol v2 of {} {} (`Agent.v2()`, `V2ConnectionTo`), which acp-patch does not patch on 1.x–3.x; the agent's protocol v1 is patched",
                files[i].file.rel,
                manifest.sdk.name(),
                manifest.sdk_version_text,
            ))
            .collect();

        let located = locate::locate(
            decisions,
            &files,
            &collected,
            &modules,
            dialect,
            project,
            &runtime_files.union(&left).copied().collect(),
        );
        let located = match located {
            Ok(l) => l,
            Err(e @ (Error::NoAgent { .. } | Error::NotFound { .. })) => {
                return Err(files.iter().find_map(parse_error).unwrap_or(e));
            }
            Err(e) => return Err(e),
        };

        // The runtime module beside each crate root that owns code calling it.
        let mut touched: Vec<usize> = located
            .handlers
            .iter()
            .map(|h| h.anchor.site.file)
            .collect();
        touched.extend(
            located
                .sends
                .iter()
                .filter(|(_, s)| !s.is_empty())
                .map(|(f, _)| *f),
        );
        touched.extend(located.turn_ends.iter().map(|t| t.respond.anchor.site.file));
        let (module_files, lib_shared) = place_runtime(&mut files, project, &modules, &touched)?;
        let tokio_sync = manifest.tokio_has("sync");
        let futures = manifest.depends_on("futures");
        let module_text = runtime::render(project, dialect, &sdk, tokio_sync, futures)?;
        let mfile = files.len();
        files.push(Parsed {
            file: manifest.file.clone(),
            ast: None,
            error: None,
        });
        let parts = pieces::build(&pieces::Input {
            files: &files,
            collected: &collected,
            modules: &modules,
            handlers: &located.handlers,
            sends: &located.sends,
            turn_ends: &located.turn_ends,
            escaping: &located.escaping,
            manifest: Some((mfile, &manifest)),
            module_text: &module_text,
            module_files: &module_files,
            lib_shared,
        })?;
        let findings = placement::findings(&placement::Input {
            files: &files,
            collected: &collected,
            handlers: &located.handlers,
            turn_ends: &located.turn_ends,
            module_files: &module_files,
            module_text: &module_text,
            dialect,
        });
        Ok(Analysis {
            files,
            parts,
            findings,
            shape: dialect.shape(),
            notes,
        })
    }
}

/// Where the runtime module goes: beside each crate root owning a file in `touched` (the
/// library's alone when it and binaries both do: it is declared `pub` there). Returns
/// (root, module file) pairs, a new (empty) file pushed onto `files` for one not there yet,
/// and whether the library shares it.
fn place_runtime(
    files: &mut Vec<Parsed>,
    project: &Project,
    modules: &Modules,
    touched: &[usize],
) -> Result<(Vec<(usize, usize)>, bool)> {
    let mut needed: BTreeSet<usize> = BTreeSet::new();
    for &file in touched {
        match modules.root_of(file) {
            Some(r) => {
                needed.insert(r);
            }
            None => {
                return Err(Error::Unsupported {
                    file: files[file].file.rel.clone(),
                    line: 1,
                    message: "no crate root (src/main.rs, src/lib.rs, src/bin/*.rs) declares this file's module; acp-patch declares its runtime in the crate root".into(),
                });
            }
        }
    }
    let lib_shared = needed.len() > 1
        && needed
            .iter()
            .any(|r| modules.roots[*r].kind == RootKind::Lib);
    let declaring: Vec<usize> = if lib_shared {
        needed
            .iter()
            .copied()
            .filter(|r| modules.roots[*r].kind == RootKind::Lib)
            .collect()
    } else {
        needed.iter().copied().collect()
    };
    let mut module_files = Vec::new();
    for root in declaring {
        let rfile = &files[modules.roots[root].file].file;
        let dir = rfile.path.parent().unwrap_or(&project.root);
        let dir = if rfile.rel.contains("src/bin/") {
            dir.parent().unwrap_or(dir)
        } else {
            dir
        };
        let path = dir.join(runtime::FILE);
        let idx = match files.iter().position(|p| p.file.path == path) {
            Some(i) => i,
            None => {
                let rel = path
                    .strip_prefix(&project.root)
                    .map(|r| r.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_else(|_| runtime::FILE.to_string());
                files.push(Parsed {
                    file: SourceFile::new_file(path.clone(), rel, rfile.style().clone()),
                    ast: None,
                    error: None,
                });
                files.len() - 1
            }
        };
        module_files.push((root, idx));
    }
    for &(_, m) in &module_files {
        let f = &files[m].file;
        if f.exists && !f.text.starts_with(runtime::MARKER) {
            return Err(Error::Unsupported {
                file: f.rel.clone(),
                line: 1,
                message: format!(
                    "this file is not acp-patch's runtime module, and apply writes the runtime to {}; rename it (nothing was written)",
                    f.rel
                ),
            });
        }
    }
    Ok((module_files, lib_shared))
}

/// Whether a source names the crate imported as `ident`: the word (`use sacp::..`,
/// `use agent_client_protocol as acp;`), not a longer name holding it (`sacp_cbor`).
fn names_crate(text: &str, ident: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(ident).any(|(at, _)| {
        !word(text[..at].chars().next_back()) && !word(text[at + ident.len()..].chars().next())
    })
}

/// [`Rust::syntax_error`], computed.
fn syntax_error_now(text: &str) -> Option<(usize, String)> {
    match parse(text) {
        Ok(_) => None,
        Err(e) => {
            let manifest = text.contains("[package]") || text.contains("[dependencies]");
            if manifest && text.parse::<toml_edit::DocumentMut>().is_ok() {
                None
            } else {
                Some(e)
            }
        }
    }
}

impl Language for Rust {
    fn name(&self) -> &'static str {
        "rust"
    }

    fn extensions(&self) -> &'static [&'static str] {
        &["rs"]
    }

    fn worth_parsing(&self, _text: &str) -> bool {
        true // module declarations matter in every file
    }

    /// Every file of a crate at the root (the one place an agent is looked for, see
    /// [`Language::detect`]: module declarations matter in every file); elsewhere only what
    /// names ACP or holds inserted code.
    fn keeps(&self, project: &Project) -> Option<crate::lang::Keeps> {
        static KEEP: std::sync::LazyLock<crate::needles::Needles> =
            std::sync::LazyLock::new(|| {
                crate::needles::Needles::new(&[
                    "agent_client_protocol",
                    "acp",
                    "session/prompt",
                    runtime::MARKER,
                ])
            });
        let a_crate = project.root.join("Cargo.toml").is_file();
        (!a_crate && project.config.rust.is_empty()).then_some(|text: &str| KEEP.any_in(text))
    }

    /// Rust source, or (for the dependency edit) a Cargo manifest. Kept per text: apply
    /// checks each planned text, then revert's refusal checks the same texts again.
    fn syntax_error(&self, text: &str) -> Option<(usize, String)> {
        type Kept = std::collections::HashMap<String, Option<(usize, String)>>;
        static KEPT: std::sync::Mutex<Option<Kept>> = std::sync::Mutex::new(None);
        if let Some(hit) = KEPT
            .lock()
            .expect("no poison")
            .as_ref()
            .and_then(|k| k.get(text))
        {
            return hit.clone();
        }
        let error = syntax_error_now(text);
        let mut kept = KEPT.lock().expect("no poison");
        let kept = kept.get_or_insert_with(Default::default);
        if kept.len() >= 64 {
            kept.clear(); // a long-lived process (the tests) sees many texts: keep it small
        }
        kept.insert(text.to_string(), error.clone());
        error
    }

    /// An SDK (`agent-client-protocol`, `sacp`) in `Cargo.toml` and a source naming it; or,
    /// without one, a source naming `session/prompt` (a JSON-RPC loop of the agent's own) or a
    /// `prompt` pin.
    fn detect(&self, project: &Project) -> bool {
        let Ok(manifest) = std::fs::read_to_string(project.root.join("Cargo.toml")) else {
            return false;
        };
        let mut sources = project.files_with_extension(self.extensions());
        if let Some((_, ident)) = manifest::names_sdk(&manifest) {
            sources.any(|f| names_crate(&f.text, &ident))
        } else {
            project.config.rust.prompt.is_some() || sources.any(|f| wire::mentions_prompt(&f.text))
        }
    }

    fn plan(&self, project: &Project) -> Result<Plan> {
        let a = &self.analyze(project)?.value;
        let mut plan = parts::plan(&a.files, &a.parts)?;
        plan.notes.extend(a.notes.iter().cloned());
        Ok(plan)
    }

    fn survey(&self, project: &Project) -> (Result<()>, Vec<Site>) {
        match self.surveyed(project) {
            Err(s) => (Err(s.error), s.sites),
            Ok(a) => (
                parts::plan(&a.value.files, &a.value.parts).map(drop),
                a.sites.clone(),
            ),
        }
    }

    fn build_check(
        &self,
        project: &Project,
        dir: &std::path::Path,
    ) -> Option<std::result::Result<std::process::Command, String>> {
        Some(toolchain::cargo_check_command(&project.root, dir))
    }

    fn inventory(&self, project: &Project) -> Result<parts::Inventory> {
        let a = &self.analyze(project)?.value;
        Ok(parts::Inventory::new(
            &a.files,
            a.parts.clone(),
            "acp_progress",
        ))
    }

    fn verify(&self, project: &Project) -> Result<Vec<Report>> {
        let a = &self.analyze(project)?.value;
        let naming = Naming {
            language: self.name(),
            checks: parts::PROTOCOL_CHECKS,
            shape: a.shape,
            callback: "agent_progress_callback",
            defines: &|_| Vec::new(),
            has_function: &|_, _| false, // tree-sitter files only; see report_any
            marker: "acp_progress",
        };
        let root = project.root.display().to_string();
        let report = parts::report_any(
            &root,
            &a.files,
            &a.parts,
            &a.calls,
            &a.findings,
            &naming,
            &|_, _| true,
        )?;
        Ok(vec![report])
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_source_names_the_sdk_crate_by_its_whole_name() {
        let names = super::names_crate;
        assert!(names("use sacp::schema::PromptRequest;", "sacp"));
        assert!(names(
            "use agent_client_protocol as acp;",
            "agent_client_protocol"
        ));
        assert!(names("fn f(cx: sacp::JrConnectionCx<L>) {}", "sacp"));
        assert!(!names("use sacp_cbor::Decoder;", "sacp"));
        assert!(!names("use my_sacp::X;", "sacp"));
    }
}
