//! Rust agents on the `agent-client-protocol` crate, patched by what the SDK contract fixes
//! (the protocol strategy): the prompt handlers the SDK calls, every SDK send of a session
//! update, the connection the SDK hands over, the turn's end. Files are parsed with `syn`
//! (byte offsets from `proc-macro2` span locations); edits are spliced into the original text.

mod handlers;
mod manifest;
mod modules;
mod pieces;
mod runtime;
mod scan;
mod sdk;
mod toolchain;
mod verify;
mod wire;

use crate::error::{Candidate, Error, Location, Result};
use crate::lang::Language;
use crate::lang::parts::{self, Finding, Naming, ParsedSource, Part, parse_error};
use crate::plan::Plan;
use crate::project::Project;
use crate::report::Report;
use crate::source::SourceFile;
use handlers::{Collected, Handler, Style};
use manifest::Manifest;
use modules::{Modules, RootKind};
use pieces::{Lookup, TurnEnd};
use sdk::Dialect;
use std::collections::BTreeSet;
use syn::spanned::Spanned;

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
    shape: String,
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

    fn analyze(&self, project: &Project) -> Result<Analysis> {
        if project.config.rust.emitter.is_some() || project.config.rust.handoff.is_some() {
            return Err(Error::Config {
                path: project.root.join(crate::config::FILE_NAME),
                message: "[rust] `emitter` and `handoff` are no longer used: every SDK send of a session update goes through the emitter and the card opens at the prompt handler's entry; remove them".into(),
            });
        }
        let files = self.parse_all(project);
        let manifest = match Manifest::load(project)? {
            Some(m) => m,
            None => return wire::parts::analyze(project, files),
        };
        let mut files = files;
        if manifest.sdk_version < (0, 8) {
            return Err(Error::Unsupported {
                file: manifest.file.rel.clone(),
                line: 1,
                message: format!(
                    "{} {} builds messages with struct literals (before 0.8); acp-patch inserts code for 0.8 and later",
                    manifest::SDK,
                    manifest.sdk_version_text
                ),
            });
        }
        let texts: Vec<&str> = files
            .iter()
            .filter(|p| !is_runtime_module(p))
            .map(|p| p.file.text.as_str())
            .collect();
        let dialect =
            Dialect::of(manifest.sdk_version, &texts).map_err(|message| Error::Unsupported {
                file: manifest.file.rel.clone(),
                line: 1,
                message,
            })?;
        let doc: toml_edit::DocumentMut =
            manifest
                .file
                .text
                .parse()
                .map_err(|e: toml_edit::TomlError| Error::Config {
                    path: manifest.file.path.clone(),
                    message: e.to_string(),
                })?;
        let modules = Modules::load(&files, &project.root, &doc);
        let runtime_files: BTreeSet<usize> = files
            .iter()
            .enumerate()
            .filter(|(_, p)| is_runtime_module(p))
            .map(|(i, _)| i)
            .collect();
        let collected = handlers::collect(&files, &runtime_files);
        let sdk = manifest.sdk_ident.clone();

        let located = locate(
            &files,
            &collected,
            &modules,
            dialect,
            project,
            &runtime_files,
        );
        let located = match located {
            Ok(l) => l,
            Err(e @ (Error::NoAgent { .. } | Error::NotFound { .. })) => {
                return Err(files.iter().find_map(parse_error).unwrap_or(e));
            }
            Err(e) => return Err(e),
        };

        // The runtime module beside each crate root that owns code calling it.
        let mut touched: Vec<usize> = located.handlers.iter().map(|h| h.file).collect();
        touched.extend(
            located
                .sends
                .iter()
                .filter(|(_, s)| !s.is_empty())
                .map(|(f, _)| *f),
        );
        touched.extend(located.turn_ends.iter().map(|t| t.file));
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
        let findings = verify::findings(&verify::Input {
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
            shape: dialect.shape().to_string(),
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
                    file: SourceFile::new_file(path.clone(), rel, rfile.style.clone()),
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

/// The sites of the protocol strategy.
struct Located {
    handlers: Vec<Handler>,
    sends: Vec<(usize, Vec<scan::SendSite>)>,
    turn_ends: Vec<TurnEnd>,
    escaping: BTreeSet<usize>,
}

fn candidate(files: &[Parsed], h: &Handler) -> Candidate {
    Candidate {
        location: Location {
            file: files[h.file].file.rel.clone(),
            line: h.line,
        },
        name: h.name.clone(),
    }
}

/// A pin `path/to/file.rs:Name` → (file, name).
fn split_pin(pin: &str) -> (String, Option<String>) {
    match pin.split_once(".rs:") {
        Some((file, name)) => (
            format!("{}.rs", file.trim_start_matches("./")),
            Some(name.to_string()),
        ),
        None => (pin.trim_start_matches("./").to_string(), None),
    }
}

fn pin_matches(pin: &(String, Option<String>), c: &Candidate) -> bool {
    c.location.file == pin.0 && pin.1.as_ref().is_none_or(|n| *n == c.name)
}

fn locate(
    files: &[Parsed],
    c: &Collected,
    modules: &Modules,
    dialect: Dialect,
    project: &Project,
    runtime_files: &BTreeSet<usize>,
) -> Result<Located> {
    let pins = &project.config.rust;
    let owned = |f: usize| modules.root_of(f).is_some() && !runtime_files.contains(&f);
    // a module of the crate that does not parse may hold sends: refuse rather than miss them
    if let Some(e) = files
        .iter()
        .enumerate()
        .filter(|(i, _)| owned(*i))
        .find_map(|(_, p)| parse_error(p))
    {
        return Err(e);
    }
    let (mut found, refused) = handlers::prompt_handlers(files, c, dialect);
    found.retain(|h| owned(h.file));

    // a pin picks one handler: a found one, or a method returning the prompt's response
    if let Some(pin) = &pins.prompt {
        let pin = split_pin(pin);
        let mut pool: Vec<Handler> = found.clone();
        for (file, ty, f) in &c.methods {
            if !owned(*file)
                || pool
                    .iter()
                    .any(|h| h.file == *file && h.name == format!("{ty}::{}", f.sig.ident))
            {
                continue;
            }
            if f.sig.inputs.iter().any(|i| matches!(i, syn::FnArg::Typed(t) if handlers::type_name(&t.ty).as_deref() == Some("PromptRequest")))
                && let Ok(h) = handlers::method_handler(files, *file, ty, f)
            {
                pool.push(h);
            }
        }
        let seen: Vec<Candidate> = pool.iter().map(|h| candidate(files, h)).collect();
        let picked: Vec<Handler> = pool
            .into_iter()
            .filter(|h| pin_matches(&pin, &candidate(files, h)))
            .collect();
        if picked.is_empty() {
            return Err(Error::NotFound {
                site: "ACP prompt handler",
                detail: format!(
                    "the pin `prompt` names {}{}, which is not a prompt handler acp-patch can patch",
                    pin.0,
                    pin.1.as_ref().map(|n| format!(":{n}")).unwrap_or_default()
                ),
                pin_key: "rust.prompt",
                candidates: seen,
            });
        }
        found = picked;
    } else if let Some(r) = refused.first()
        && found.is_empty()
    {
        return Err(Error::Unsupported {
            file: files[r.file].file.rel.clone(),
            line: r.line,
            message: r.message.clone(),
        });
    }
    if found.is_empty() {
        let pinnable: Vec<Candidate> = c
            .methods
            .iter()
            .filter(|(file, _, _)| owned(*file))
            .filter_map(|(file, ty, f)| handlers::method_handler(files, *file, ty, f).ok())
            .map(|h| candidate(files, &h))
            .collect();
        return Err(Error::NotFound {
            site: "ACP prompt handler",
            detail: match dialect {
                Dialect::Trait => "no `async fn prompt(&self, args: PromptRequest)` in an `impl Agent for ..` block".into(),
                _ => "no closure (or fn) registered with `.on_receive_request(..)` takes a `PromptRequest`, a responder and the connection".into(),
            },
            pin_key: "rust.prompt",
            candidates: pinnable,
        });
    }

    // `acp-patch init` lists the handler when there is one (with several, all are patched)
    if let [one] = found.as_slice() {
        let c = candidate(files, one);
        crate::lang::survey::record("ACP prompt handler", "rust.prompt", &[&c], Some(&c));
    }

    // the connection of each wrapped handler
    for h in found.iter_mut() {
        if !matches!(h.style, Style::Wrap { .. }) {
            continue;
        }
        let (sink, sink_from) =
            wrap_sink(files, c, modules, dialect, h, pins.connection.as_deref())?;
        h.style = Style::Wrap { sink, sink_from };
    }

    // every SDK send in the crate's own modules
    let mut sends = Vec::new();
    let mut responds = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !owned(i) || p.ast.is_none() {
            continue;
        }
        let (s, r) = scan::scan(&p.file.text, dialect.send_method());
        let s = s
            .into_iter()
            .filter(|site| !own_method_call(c, dialect, i, site))
            .collect();
        sends.push((i, s));
        responds.push((i, r));
    }

    // where each prompt's response is given
    let mut turn_ends = Vec::new();
    let mut escaping = BTreeSet::new();
    for (k, h) in found.iter().enumerate() {
        let Style::Entry { responder, .. } = &h.style else {
            continue;
        };
        if responder_escapes(&files[h.file].file.text, h, responder) {
            escaping.insert(k);
        }
    }
    for (file, sites) in &responds {
        for site in sites {
            if !dialect.response_ends_turn() && site.method == "respond" {
                continue; // protocol v2: a plain response starts the turn's work, idle ends it
            }
            let scopes = handlers::scopes_at(c, *file, site.at);
            let Some(binder) = scopes
                .iter()
                .find(|s| s.bindings.iter().any(|b| b.name == site.receiver))
            else {
                continue;
            };
            let lexical = found.iter().position(|h| {
                h.file == *file
                    && h.span == binder.span
                    && matches!(&h.style, Style::Entry { responder, .. } if *responder == site.receiver)
            });
            if let Some(k) = lexical {
                turn_ends.push(TurnEnd {
                    file: *file,
                    site: site.clone(),
                    handler: Some(k),
                    lookup: None,
                });
                continue;
            }
            if handlers::binds_prompt_responder(binder, &site.receiver) != Some(true) {
                continue;
            }
            let from: Vec<&handlers::Scope> = scopes
                .iter()
                .copied()
                .skip_while(|s| s.span != binder.span)
                .collect();
            let Some((scope, key)) = handlers::session_key(&from) else {
                return Err(Error::Unsupported {
                    file: files[*file].file.rel.clone(),
                    line: site.line,
                    message: format!(
                        "the prompt's response is given here, but no `PromptRequest` or `SessionId` is in scope to tell its session; pass the request (or its session id) along with `{}`",
                        site.receiver
                    ),
                });
            };
            turn_ends.push(TurnEnd {
                file: *file,
                site: site.clone(),
                handler: None,
                lookup: Some(Lookup {
                    file: *file,
                    scope: scope.span.clone(),
                    kind: scope.kind,
                    key,
                }),
            });
        }
    }
    if dialect.response_ends_turn() {
        for &k in &escaping {
            let h = &found[k];
            if !turn_ends.iter().any(|t| t.handler.is_none())
                && !turn_ends.iter().any(|t| t.handler == Some(k))
            {
                return Err(Error::NotFound {
                    site: "turn end",
                    detail: format!(
                        "{} ({}:{}) hands its responder on, and no `respond(..)` on a binding typed `Responder<PromptResponse>` was found; give the binding that receives it that type",
                        h.name, files[h.file].file.rel, h.line
                    ),
                    pin_key: "rust.prompt",
                    candidates: Vec::new(),
                });
            }
        }
    }
    Ok(Located {
        handlers: found,
        sends,
        turn_ends,
        escaping,
    })
}

/// Whether a call of the SDK's send method name calls the crate's own method of that name
/// instead (`SessionClient::send_notification(&self, update: SessionUpdate)` in codex-acp):
/// it takes a bare `SessionUpdate` (no SDK send does), or its receiver is of a type of the
/// crate that defines such a method (`self` in that impl, a binding or field declared so).
fn own_method_call(c: &Collected, dialect: Dialect, file: usize, site: &scan::SendSite) -> bool {
    if dialect.local() {
        return false; // the trait API's sends are `Client` trait calls: any `Client` takes them
    }
    if site.takes_update {
        return true;
    }
    let method = dialect.send_method();
    let own: Vec<&str> = c
        .methods
        .iter()
        .filter(|(_, _, f)| f.sig.ident == method)
        .map(|(_, ty, _)| ty.as_str())
        .collect();
    if own.is_empty() {
        return false;
    }
    let names = |ty: &str| -> bool {
        ty.split(|ch: char| !(ch.is_alphanumeric() || ch == '_'))
            .any(|w| own.contains(&w))
    };
    let enclosing = c
        .methods
        .iter()
        .filter(|(f, _, m)| *f == file && m.span().byte_range().contains(&site.dot))
        .min_by_key(|(_, _, m)| m.span().byte_range().len())
        .map(|(_, ty, _)| ty.as_str());
    match &site.receiver {
        scan::Receiver::SelfValue => enclosing.is_some_and(|ty| own.contains(&ty)),
        scan::Receiver::SelfField(field) => enclosing.is_some_and(|ty| {
            c.structs.iter().any(|(_, st)| {
                st.ident == ty
                    && st.fields.iter().any(|f| {
                        f.ident.as_ref().is_some_and(|i| i == field)
                            && names(&quote::ToTokens::to_token_stream(&f.ty).to_string())
                    })
            })
        }),
        scan::Receiver::Binding(name) => handlers::scopes_at(c, file, site.dot)
            .iter()
            .find_map(|s| s.bindings.iter().find(|b| b.name == *name))
            .and_then(|b| b.ty.as_deref())
            .is_some_and(names),
        scan::Receiver::Other => false,
    }
}

/// Whether the responder is used other than as the receiver of a method call (passed on,
/// moved into a message): its response is then given elsewhere.
fn responder_escapes(src: &str, h: &Handler, responder: &str) -> bool {
    let body = &src[h.expr.clone()];
    let Ok(stream) = body.parse::<proc_macro2::TokenStream>() else {
        return false;
    };
    fn walk(stream: proc_macro2::TokenStream, name: &str) -> bool {
        let tokens: Vec<proc_macro2::TokenTree> = stream.into_iter().collect();
        for (i, t) in tokens.iter().enumerate() {
            match t {
                proc_macro2::TokenTree::Group(g) if walk(g.stream(), name) => return true,
                proc_macro2::TokenTree::Ident(id) if id == name => {
                    let method_call = matches!(tokens.get(i + 1), Some(proc_macro2::TokenTree::Punct(p)) if p.as_char() == '.');
                    let field = i > 0
                        && matches!(&tokens[i - 1], proc_macro2::TokenTree::Punct(p) if p.as_char() == '.');
                    if !method_call && !field {
                        return true;
                    }
                }
                _ => {}
            }
        }
        false
    }
    walk(stream, responder)
}

/// The trait API's card path for a wrapped handler: a pin, the field (or static) the agent's
/// own sends use, or the one candidate.
fn wrap_sink(
    files: &[Parsed],
    c: &Collected,
    modules: &Modules,
    dialect: Dialect,
    h: &Handler,
    pin: Option<&str>,
) -> Result<(String, String)> {
    let ty = h.self_ty.clone().unwrap_or_default();
    if !dialect.local() {
        // a builder-API method: its connection parameter
        let method = c
            .methods
            .iter()
            .find(|(file, mty, f)| {
                *file == h.file && *mty == ty && format!("{ty}::{}", f.sig.ident) == h.name
            })
            .map(|(_, _, f)| f);
        if let Some(f) = method {
            for i in &f.sig.inputs {
                if let syn::FnArg::Typed(t) = i
                    && quote::ToTokens::to_token_stream(&*t.ty)
                        .to_string()
                        .contains("ConnectionTo")
                    && let syn::Pat::Ident(id) = &*t.pat
                {
                    // a clone: the body moves the parameter into its `async move` block
                    return Ok((
                        format!("&{}.clone()", id.ident),
                        format!("the handler's connection `{}`", id.ident),
                    ));
                }
            }
        }
        return Err(Error::Unsupported {
            file: files[h.file].file.rel.clone(),
            line: h.line,
            message: format!(
                "{} takes no `ConnectionTo<Client>` for the card; pin the closure that calls it instead",
                h.name
            ),
        });
    }
    let used = handlers::fields_used_by_sends(files, c, &ty, dialect.send_method());
    let path_of = |f: usize| modules.path_of(f).map(<[String]>::to_vec);
    let found = handlers::sink_candidates(files, c, &ty, &path_of, &used);
    let listed: Vec<Candidate> = found.iter().map(|s| s.candidate(files)).collect();
    let describe = |s: &handlers::SinkCandidate| {
        if s.expr.starts_with("&self.") {
            format!("the agent's field `{}`", s.name)
        } else {
            format!("the static `{}`", s.name)
        }
    };
    if let Some(pin) = pin {
        let pin = split_pin(pin);
        return match found
            .iter()
            .find(|s| pin_matches(&pin, &s.candidate(files)))
        {
            Some(s) => Ok((s.expr.clone(), describe(s))),
            None => Err(Error::NotFound {
                site: "connection for the think card",
                detail: format!(
                    "the pin `connection` names {}{}, which is no field of {ty} or static holding the connection or a channel of session updates",
                    pin.0,
                    pin.1.as_ref().map(|n| format!(":{n}")).unwrap_or_default()
                ),
                pin_key: "rust.connection",
                candidates: listed,
            }),
        };
    }
    let preferred: Vec<&handlers::SinkCandidate> =
        found.iter().filter(|s| s.used_by_sends).collect();
    let pick = match (found.as_slice(), preferred.as_slice()) {
        ([one], _) => Some(one),
        (_, [one]) => Some(*one),
        _ => None,
    };
    if let Some(s) = pick {
        let all: Vec<&Candidate> = listed.iter().collect();
        crate::lang::survey::record(
            "connection for the think card",
            "rust.connection",
            &all,
            Some(&s.candidate(files)),
        );
        return Ok((s.expr.clone(), describe(s)));
    }
    if found.is_empty() {
        return Err(Error::NotFound {
            site: "connection for the think card",
            detail: format!(
                "no field of {ty} (nor a static) holds the `AgentSideConnection` behind an `Rc`/`Arc` (e.g. `Rc<OnceCell<AgentSideConnection>>`) or a channel `Sender` of session notifications; keep one on the agent so {} can reach the client",
                h.name
            ),
            pin_key: "rust.connection",
            candidates: Vec::new(),
        });
    }
    let found: Vec<(usize, Candidate)> = found
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s.candidate(files)))
        .collect();
    parts::choose(
        found,
        None,
        "connection for the think card",
        "rust.connection",
        String::new,
    )
    .map(|_| (String::new(), String::new()))
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

    /// Rust source, or (for the dependency edit) a Cargo manifest.
    fn syntax_error(&self, text: &str) -> Option<(usize, String)> {
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

    /// The SDK in `Cargo.toml` and a source naming it; or, without it, a source naming
    /// `session/prompt` (a JSON-RPC loop of the agent's own) or a `prompt` pin.
    fn detect(&self, project: &Project) -> bool {
        let Ok(manifest) = std::fs::read_to_string(project.root.join("Cargo.toml")) else {
            return false;
        };
        let mut sources = project.files_with_extension(self.extensions());
        if manifest.contains(manifest::SDK) {
            sources.any(|f| f.text.contains("agent_client_protocol"))
        } else {
            project.config.rust.prompt.is_some() || sources.any(|f| wire::mentions_prompt(&f.text))
        }
    }

    fn plan(&self, project: &Project) -> Result<Plan> {
        let a = self.analyze(project)?;
        parts::plan(&a.files, &a.parts)
    }

    fn build_check(
        &self,
        project: &Project,
        dir: &std::path::Path,
    ) -> Option<std::result::Result<std::process::Command, String>> {
        Some(toolchain::cargo_check_command(&project.root, dir))
    }

    fn inventory(&self, project: &Project) -> Result<parts::Inventory> {
        let a = self.analyze(project)?;
        Ok(parts::Inventory::new(&a.files, a.parts, "acp_progress"))
    }

    fn verify(&self, project: &Project) -> Result<Vec<Report>> {
        let a = self.analyze(project)?;
        let naming = Naming {
            language: self.name(),
            checks: parts::PROTOCOL_CHECKS,
            shape: a.shape.clone(),
            callback: "agent_progress_callback",
            defines: &|_| Vec::new(),
            has_function: &|_, _| false, // tree-sitter files only; see report_any
            marker: "acp_progress",
        };
        let root = project.root.display().to_string();
        let calls = verify::hook_calls(&a.files);
        let report = parts::report_any(
            &root,
            &a.files,
            &a.parts,
            &calls,
            &a.findings,
            &naming,
            &|_, _| true,
        )?;
        Ok(vec![report])
    }
}
