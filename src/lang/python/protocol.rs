//! The protocol-anchored strategy: the few insertions that call the runtime module
//! ([`super::runtime`]) — its import in each file, a decorator on each prompt handler and
//! cancel, every SDK send wrapped as `acp_progress.emitter(<receiver>)`, and a connection
//! binding where the agent keeps the connection nowhere the decorator can read it.

use super::RUNTIME_NAME;
use super::locate::At;
use super::locate::found::Reach;
use super::locate::handlers::Anchors;
use super::pieces::{Builder, line};
use super::runtime::{Runtime, runtimes};
use super::syntax::*;
use crate::error::Result;
use crate::lang::parts::*;
use crate::report::Status;

const CHECK_PROMPT: &[&str] = &["hook.start", "turn_end"];
pub use crate::lang::parts::RUNTIME_LABEL;

impl<'a> Builder<'a> {
    /// The protocol strategy's parts; returns the runtime modules they import.
    pub fn protocol(&mut self, anchors: &Anchors<'a>) -> Result<Vec<Runtime>> {
        let runtimes = runtimes(self.files, anchors.runtime_importers(), &self.packages);
        for r in &runtimes {
            let module_file = self
                .files
                .iter()
                .position(|p| p.file.rel == r.rel)
                .expect("the runtime module's file is in the list (created when missing)");
            self.runtime_module(module_file, r.importers[0])?;
        }

        for h in &anchors.handlers {
            let src = self.src(h.anchor.site.file);
            let me = parameters(h.prompt, src)
                .first()
                .map(|(n, _)| n.clone())
                .unwrap_or_else(|| "self".into());
            let mut args: Vec<String> = Vec::new();
            let (at, site) = (h.connection.at, &h.connection.anchor.site);
            match &h.connection.reach {
                Reach::Attribute { attr, how } => {
                    args.push(format!("lambda {me}: {me}.{attr}"));
                    let detail = format!("`{}.{attr}` {how}", h.class_name);
                    self.finding("connection", Status::Ok, site.file, site.line, detail);
                }
                Reach::Wire => {
                    args.push(format!("wire={}", h.connection.anchor.text));
                    let detail = format!(
                        "the agent's own writer of `session/update` messages, as {} calls it",
                        qualified_name(at.node, self.src(at.file))
                    );
                    self.finding("connection", Status::Ok, site.file, site.line, detail);
                }
                Reach::Held { base } => {
                    let detail = format!(
                        "held by `{}`'s installed base class `{base}`, which sends every update: found on the agent at the turn's start (the attribute answering `session_update` and `request_permission`), its sends relayed",
                        h.class_name
                    );
                    self.finding("connection", Status::Ok, site.file, site.line, detail);
                    let detail = format!(
                        "none in the tree: `{base}` (installed) sends every update, each passing the relay on the connection"
                    );
                    self.finding("sends", Status::Ok, site.file, site.line, detail);
                }
                Reach::Bind { param } => {
                    let method = at;
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
                }
            }
            args.extend(h.send_kwargs.iter().map(|(k, v)| format!("{k}={v}")));
            self.decorator(
                CHECK_PROMPT,
                "prompt handler: start and turn end",
                h.prompt_at(),
                format!("@{RUNTIME_NAME}.prompt_handler({})", args.join(", ")),
                &format!("{RUNTIME_NAME}.prompt_handler("),
            )?;
            if let Some(cancel) = h.cancel {
                self.decorator(
                    CHECK_TURN_END,
                    "cancel handler",
                    cancel,
                    format!("@{RUNTIME_NAME}.cancel_handler"),
                    &format!("{RUNTIME_NAME}.cancel_handler"),
                )?;
            }
        }
        for s in &anchors.sends {
            self.wrap_send(s.anchor.site.file, s.receiver, s.anchor.wrapped, s.wire);
        }
        for r in &runtimes {
            for &file in &r.importers {
                self.import_runtime(file, r);
            }
        }
        Ok(runtimes)
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
}
