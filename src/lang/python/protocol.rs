//! The protocol-anchored strategy: the runtime module written beside the prompt handler, and
//! the few insertions that call it — one import per file, a decorator on each prompt handler
//! and cancel, every SDK send wrapped as `acp_progress.emitter(<receiver>)`, and a connection
//! binding where the agent keeps the connection nowhere the decorator can read it.

use super::anchors::{Anchors, Connection, RUNTIME_FILE, RUNTIME_MARKER, RUNTIME_NAME};
use super::insert::{Builder, line};
use super::locate::At;
use super::syntax::*;
use crate::error::{Error, Result};
use crate::lang::parts::*;
use crate::render::{fill, reindent};
use crate::report::Status;
use crate::source::line_end_after;

pub const CHECK_MODULE: &[&str] = &[
    "runtime",
    "hook.start",
    "hook.heartbeat",
    "hook.complete",
    "coalescing",
];
const CHECK_PROMPT: &[&str] = &["hook.start", "turn_end"];
pub const RUNTIME_LABEL: &str = "runtime module";

/// Where the runtime module goes: beside the first prompt handler's module.
pub fn runtime_rel(files: &[Parsed], anchors: &Anchors) -> String {
    let first = anchors
        .handlers
        .iter()
        .map(|h| files[h.prompt.file].file.rel.as_str())
        .min()
        .expect("at least one prompt handler");
    match first.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{RUNTIME_FILE}"),
        None => RUNTIME_FILE.to_string(),
    }
}

impl<'a> Builder<'a> {
    pub fn protocol(&mut self, anchors: &Anchors<'a>) -> Result<()> {
        let rel = runtime_rel(self.files, anchors);
        let module_file = self
            .files
            .iter()
            .position(|p| p.file.rel == rel)
            .expect("the runtime module's file is in the list (created when missing)");
        self.runtime_module(module_file, anchors)?;
        let mut importers: Vec<usize> = Vec::new();

        for h in &anchors.handlers {
            let src = self.src(h.prompt.file);
            let me = parameters(h.prompt.node, src)
                .first()
                .map(|(n, _)| n.clone())
                .unwrap_or_else(|| "self".into());
            let mut args: Vec<String> = Vec::new();
            match &h.connection {
                Connection::Attribute { attr, at, how } => {
                    args.push(format!("lambda {me}: {me}.{attr}"));
                    self.findings.push(Finding {
                        check: "connection",
                        status: Status::Ok,
                        file: at.file,
                        line: line(at.node),
                        detail: format!("`{}.{attr}` {how}", h.class_name),
                    });
                }
                Connection::Wire { lambda, at } => {
                    args.push(format!("wire={lambda}"));
                    self.findings.push(Finding {
                        check: "connection",
                        status: Status::Ok,
                        file: at.file,
                        line: line(at.node),
                        detail: format!(
                            "the agent's own writer of `session/update` messages, as {} calls it",
                            qualified_name(at.node, self.src(at.file))
                        ),
                    });
                }
                Connection::Bind { method, param } => {
                    let msrc = self.src(method.file);
                    let mself = parameters(method.node, msrc)
                        .first()
                        .map(|(n, _)| n.clone())
                        .unwrap_or_else(|| "self".into());
                    let body = At {
                        file: method.file,
                        node: method.node.child_by_field_name("body").expect("def body"),
                    };
                    self.top(
                        CHECK_CONNECTION,
                        "connection binding",
                        body,
                        format!("{RUNTIME_NAME}.bind({mself}, {param})\n"),
                        &format!("{RUNTIME_NAME}.bind("),
                    )?;
                    importers.push(method.file);
                }
            }
            args.extend(h.send_kwargs.iter().map(|(k, v)| format!("{k}={v}")));
            self.decorator(
                CHECK_PROMPT,
                "prompt handler: start and turn end",
                h.prompt,
                format!("@{RUNTIME_NAME}.prompt_handler({})", args.join(", ")),
                &format!("{RUNTIME_NAME}.prompt_handler("),
            )?;
            importers.push(h.prompt.file);
            if let Some(cancel) = h.cancel {
                self.decorator(
                    CHECK_TURN_END,
                    "cancel handler",
                    cancel,
                    format!("@{RUNTIME_NAME}.cancel_handler"),
                    &format!("{RUNTIME_NAME}.cancel_handler"),
                )?;
                importers.push(cancel.file);
            }
        }
        for s in &anchors.sends {
            self.wrap_send(s.call.file, s.receiver, s.wrapped, s.wire);
            importers.push(s.call.file);
        }
        importers.sort();
        importers.dedup();
        for file in importers {
            self.import_runtime(file, &rel)?;
        }
        Ok(())
    }

    /// The runtime module: created when missing, replaced whole when it is an older one.
    fn runtime_module(&mut self, file: usize, anchors: &Anchors) -> Result<()> {
        let template = self.project.templates.get("python/acp_progress.py")?;
        let style = &self.files[anchors.handlers[0].prompt.file].file.style;
        let rendered = reindent(
            &fill(&template, &[("PREFIX", &self.project.env_prefix)]),
            "",
            &style.indent_unit,
            style.eol,
        );
        let existing = &self.files[file].file;
        let (replaces, present) = if !existing.exists {
            (0, None)
        } else if existing.text == rendered {
            (0, Some(1))
        } else if existing.text.starts_with(RUNTIME_MARKER) {
            (existing.text.len(), None) // an older runtime: brought up to date
        } else {
            return Err(Error::Unsupported {
                file: existing.rel.clone(),
                line: 1,
                message: format!(
                    "a module of this name exists and is not acp-patch's runtime module; rename it so `{RUNTIME_FILE}` can be written here"
                ),
            });
        };
        self.push(CHECK_MODULE, RUNTIME_LABEL, file, 0, rendered, present);
        self.parts.last_mut().expect("pushed").replaces = replaces;
        Ok(())
    }

    /// `acp_progress.emitter(` before a send's receiver and `)` after it. On a patched tree
    /// the receiver is the wrapper call: both pieces are there at its exact ends (a `)` occurs
    /// many times on a line), unless it is spelled otherwise (the agent's own: left alone).
    fn wrap_send(&mut self, file: usize, receiver: tree_sitter::Node, wrapped: bool, wire: bool) {
        let open = format!("{RUNTIME_NAME}.{}(", if wire { "wire" } else { "emitter" });
        let (start, end) = (receiver.start_byte(), receiver.end_byte());
        let ours = wrapped && {
            let src = self.src(file);
            let args = receiver.child_by_field_name("arguments");
            let inner = args.and_then(|a| a.named_child(0));
            args.is_some_and(|a| a.named_child_count() == 1)
                && inner.is_some_and(|i| src[start..end] == format!("{open}{})", text(i, src)))
        };
        let present = wrapped.then(|| line(receiver));
        let pieces = [(start, open), (end, ")".to_string())];
        for (offset, piece) in pieces {
            self.push(
                CHECK_SENDS,
                "send wrapped",
                file,
                offset,
                if wrapped && !ours {
                    String::new()
                } else {
                    piece.clone()
                },
                present,
            );
            if ours {
                let at = if piece == ")" { end - 1 } else { start };
                self.parts.last_mut().expect("pushed").present_at = Some(at);
            }
        }
    }

    /// The module-level import of the runtime module, spelled from the package root.
    fn import_runtime(&mut self, file: usize, runtime: &str) -> Result<()> {
        let p = &self.files[file];
        let src = p.file.text.as_str();
        let root = p.tree.root_node();
        let present = named_children(root)
            .into_iter()
            .find(|n| {
                matches!(n.kind(), "import_statement" | "import_from_statement")
                    && text(*n, src).contains(RUNTIME_NAME)
            })
            .map(line);
        let eol = p.file.style.eol;
        let Some(import) = self.packages.import_for(&p.file.rel, runtime) else {
            return Err(Error::Unsupported {
                file: p.file.rel.clone(),
                line: 1,
                message: format!(
                    "cannot import {runtime} from here: a folder on the way is no Python name and the two are not in one package"
                ),
            });
        };
        let statement = format!("{import}{eol}");
        let offset = match last_top_level_import(root) {
            Some(imp) => line_end_after(src, imp.end_byte()),
            None => after_module_docstring(root, src),
        };
        self.push(
            CHECK_RUNTIME,
            "import of the runtime module",
            file,
            offset,
            statement,
            present,
        );
        Ok(())
    }
}

/// Where a first import goes in a module without imports: after its docstring and the
/// comments that open it.
fn after_module_docstring(root: tree_sitter::Node, src: &str) -> usize {
    let mut offset = 0;
    for n in named_children(root) {
        let doc = n.kind() == "expression_statement"
            && n.named_child(0).is_some_and(|s| s.kind() == "string");
        if n.kind() != "comment" && !doc {
            break;
        }
        offset = line_end_after(src, n.end_byte());
        if doc {
            break;
        }
    }
    offset
}
