//! Every piece apply inserts into a Python agent, for each shape, as `Part`s built from the
//! insertion primitives. Apply plans the missing parts; verify reports on all of them.

use super::insert::{Builder, block_statements, find_marker, line, next_statements};
use super::locate::{At, CallbackSites, EmitterSites, Shape, Sites};
use super::syntax::*;
use crate::error::Result;
use crate::lang::parts::*;
use crate::project::Project;

impl<'a> Builder<'a> {
    pub fn callback_shape(&mut self, sites: &Sites<'a>, cb: &CallbackSites<'a>) -> Result<()> {
        let llm = &cb.llm;
        let agent = llm.receiver.as_str();

        // Hooks: the three callback sites live in module-level functions beside the LLM call.
        let hooks = self.block("hooks_thread.py", "")?;
        self.module_before(
            CHECK_HOOKS,
            "hook functions",
            llm.module_anchor,
            hooks,
            "_acp_progress_start",
        );
        let start = self.site("hook_start", &[("AGENT", agent)])?;
        self.before(
            CHECK_START,
            "hook start",
            llm.start_before,
            start,
            "_acp_progress_start(",
        )?;
        if let Some(worker) = cb.worker_body {
            let module = dotted_module(&self.files[llm.module_anchor.file].file.rel);
            let begin = self.site(
                "hook_begin_turn",
                &[("AGENT", &cb.receiver), ("MODULE", &module)],
            )?;
            self.top(
                CHECK_START,
                "hook start at hand-off",
                worker,
                begin,
                "_acp_progress_begin_turn(",
            )?;
        }
        let complete = self.site("hook_complete", &[("AGENT", agent)])?;
        self.top(
            CHECK_COMPLETE,
            "hook complete at first delta",
            llm.first_delta,
            complete.clone(),
            "_acp_progress_complete(",
        )?;
        self.after(
            CHECK_COMPLETE,
            "hook complete at call returned",
            llm.returned_after,
            complete.clone(),
            "_acp_progress_complete(",
        )?;
        for e in &llm.error_paths {
            self.top(
                CHECK_COMPLETE,
                "hook complete at error path",
                *e,
                complete.clone(),
                "_acp_progress_complete(",
            )?;
        }

        // The callback attribute: declared where the callbacks are taken, passed on, stored.
        let anchor = cb.anchor_callback.as_str();
        for (def, store) in &cb.stores {
            let src = self.src(def.file);
            let param = parameters(def.node, src)
                .into_iter()
                .find(|(n, _)| n == anchor)
                .expect("store takes it")
                .1;
            self.param_after(*def, Some(param));
            let obj = store
                .node
                .named_child(0)
                .and_then(|a| a.child_by_field_name("left"))
                .and_then(|l| l.child_by_field_name("object"))
                .map(|o| text(o, src))
                .unwrap_or("self");
            let code = self.site("callback_store", &[("AGENT", obj)])?;
            self.after(
                CHECK_STORED,
                "callback stored",
                *store,
                code,
                ".agent_progress_callback = agent_progress_callback",
            )?;
        }
        for (def, kw) in &cb.passers {
            let src = self.src(def.file);
            let param = parameters(def.node, src)
                .into_iter()
                .find(|(n, _)| n == anchor)
                .expect("passer takes it")
                .1;
            self.param_after(*def, Some(param));
            if let Some(kw) = kw {
                self.keyword_after(*kw);
            }
        }

        // Helpers beside the tool-call builders; factory and text hold beside the factories.
        self.ensure_import(CHECK_HELPERS, cb.builders.file, "acp");
        let helpers = self.block("helpers.py", "")?;
        self.module_after(
            CHECK_HELPERS,
            "thinking helpers",
            At {
                file: cb.builders.file,
                node: top_level(cb.builders.node),
            },
            helpers,
            "build_thinking_start",
        );
        let send = match &cb.sender {
            Some(s) => s.clone(),
            None => {
                self.ensure_import(CHECK_FACTORY, cb.factories.file, "acp");
                let code = self.block("send.py", "")?;
                self.module_after(
                    CHECK_FACTORY,
                    "sender",
                    At {
                        file: cb.factories.file,
                        node: top_level(cb.factories.node),
                    },
                    code,
                    "_acp_send_update",
                );
                "_acp_send_update".into()
            }
        };
        self.ensure_from_import(
            CHECK_FACTORY,
            cb.factories.file,
            cb.builders.file,
            &[
                "build_thinking_start",
                "build_thinking_progress",
                "build_thinking_complete",
            ],
        )?;
        let factory = self.block("factory.py", &send)?;
        self.module_after(
            CHECK_FACTORY,
            "progress factory",
            At {
                file: cb.factories.file,
                node: top_level(cb.factories.node),
            },
            factory,
            "make_agent_progress_cb",
        );
        let hold = self.block("text_hold_thread.py", "")?;
        self.module_after(
            CHECK_HOLD,
            "text hold",
            At {
                file: cb.factories.file,
                node: top_level(cb.factories.node),
            },
            hold,
            "install_acp_text_hold",
        );

        // Wiring in the prompt handler.
        self.ensure_from_import(
            CHECK_WIRING,
            sites.prompt.file,
            cb.factories.file,
            &["make_agent_progress_cb", "install_acp_text_hold"],
        )?;
        let [conn, sid, lp] = &cb.factory_args;
        let wiring = self.site(
            "wiring_callback",
            &[
                ("AGENT", &cb.receiver),
                ("CONN", conn),
                ("SESSION_ID", sid),
                ("LOOP", lp),
            ],
        )?;
        self.after(
            CHECK_WIRING,
            "wiring",
            cb.wiring_anchor,
            wiring,
            ".agent_progress_callback =",
        )?;
        let install = self.site("text_hold_install", &[("AGENT", &cb.receiver)])?;
        self.after(
            CHECK_HOLD,
            "text hold installed",
            cb.wiring_anchor,
            install,
            "install_acp_text_hold(",
        )?;
        let end = self.site("text_hold_end_turn_callback", &[])?;
        self.after(
            CHECK_HOLD,
            "text hold flushed at turn end",
            sites.handoff,
            end.clone(),
            "_acp_text_hold.aend_turn(",
        )?;
        if let Some(t) = ancestor_in_function(sites.handoff.node, "try_statement") {
            let blocks = except_blocks(t);
            for b in blocks {
                self.top(
                    CHECK_HOLD,
                    "text hold flushed on error",
                    At {
                        file: sites.handoff.file,
                        node: b,
                    },
                    end.clone(),
                    "_acp_text_hold.aend_turn(",
                )?;
            }
        }
        Ok(())
    }

    pub fn emitter_shape(&mut self, sites: &Sites<'a>, em: &EmitterSites<'a>) -> Result<()> {
        let file = sites.prompt.file;
        let class_top = At {
            file,
            node: top_level(em.class.node),
        };
        self.ensure_import(CHECK_FACTORY, file, "asyncio");
        self.ensure_import(CHECK_HELPERS, file, "acp");
        for (name, defines, checks, label) in [
            (
                "helpers.py",
                "build_thinking_start",
                CHECK_HELPERS,
                "thinking helpers",
            ),
            ("send.py", "_acp_send_update", CHECK_FACTORY, "sender"),
            (
                "factory.py",
                "make_agent_progress_cb",
                CHECK_FACTORY,
                "progress factory",
            ),
            (
                "hooks_asyncio.py",
                "_acp_progress_start",
                CHECK_HOOKS,
                "hook functions",
            ),
            (
                "text_hold_asyncio.py",
                "_acp_text_hold",
                CHECK_HOLD,
                "text hold",
            ),
        ] {
            let code = self.block(name, "_acp_send_update")?;
            self.module_before(checks, label, class_top, code, defines);
        }
        let src = self.src(file);
        let agent = parameters(sites.prompt.node, src)
            .first()
            .map(|(n, _)| n.clone())
            .unwrap_or_else(|| "self".into());

        // The callback attribute on the agent class.
        if let Some(init) = em.init {
            let params = parameters(init.node, src);
            self.param_after(init, None);
            let me = params.first().map(|(n, _)| n.as_str()).unwrap_or("self");
            let body = init.node.child_by_field_name("body").expect("def body");
            let last_stmt = body
                .named_children(&mut body.walk())
                .filter(|n| n.kind() != "comment")
                .last()
                .expect("non-empty body");
            let code = self.site("callback_store", &[("AGENT", me)])?;
            let present = find_marker(
                block_statements(body).chain(next_statements(last_stmt)),
                ".agent_progress_callback = agent_progress_callback",
                src,
            );
            self.after(
                CHECK_STORED,
                "callback stored",
                At {
                    file,
                    node: last_stmt,
                },
                code,
                "\u{0}",
            )?;
            self.parts.last_mut().expect("pushed").present = present.or_else(|| {
                find_marker(
                    descendants_same_scope(body, "assignment").into_iter(),
                    ".agent_progress_callback = agent_progress_callback",
                    src,
                )
            });
        }

        // Wiring and turn boundaries in the prompt handler.
        let body = At {
            file,
            node: sites
                .prompt
                .node
                .child_by_field_name("body")
                .expect("def body"),
        };
        let wiring = self.site(
            "wiring_emitter",
            &[
                ("AGENT", &agent),
                ("CONN", &em.conn),
                ("SESSION_ID", &em.session_id),
            ],
        )?;
        self.top(
            CHECK_WIRING,
            "wiring",
            body,
            wiring,
            ".agent_progress_callback =",
        )?;
        let begin = self.site(
            "text_hold_begin_turn",
            &[("AGENT", &agent), ("SESSION_ID", &em.session_id)],
        )?;
        self.top(
            CHECK_HOLD,
            "text hold reset per turn",
            body,
            begin,
            "_acp_text_hold_begin_turn(",
        )?;
        // the card goes out before the hand-off, which may block the loop for a while
        let start = self.site(
            "hook_start_emitter",
            &[("AGENT", &agent), ("SESSION_ID", &em.session_id)],
        )?;
        self.before(
            CHECK_START,
            "hook start",
            sites.handoff,
            start,
            "_acp_progress_start(",
        )?;
        let complete = self.site("hook_complete", &[("AGENT", &agent)])?;
        self.after(
            CHECK_COMPLETE,
            "hook complete at turn end",
            sites.handoff,
            complete.clone(),
            "_acp_progress_complete(",
        )?;
        let end = self.site(
            "text_hold_end_turn_emitter",
            &[
                ("AGENT", &agent),
                ("SESSION_ID", &em.session_id),
                ("EMITTER", &em.emitter_name),
            ],
        )?;
        self.after(
            CHECK_HOLD,
            "text hold flushed at turn end",
            sites.handoff,
            end,
            "_acp_text_hold_end_turn(",
        )?;

        // The emitter: complete on the first update of the turn, then the hold gate.
        let ebody = At {
            file,
            node: em
                .emitter
                .node
                .child_by_field_name("body")
                .expect("def body"),
        };
        self.top(
            CHECK_COMPLETE,
            "hook complete at first update",
            ebody,
            complete,
            "_acp_progress_complete(",
        )?;
        let (sid, update) = &em.emitter_params;
        let gate = self.site(
            "text_hold_gate",
            &[
                ("AGENT", &agent),
                ("SESSION_ID", sid),
                ("UPDATE", update),
                ("EMITTER", &em.emitter_name),
            ],
        )?;
        self.top(CHECK_HOLD, "text hold gate", ebody, gate, "_acp_text_hold(")?;
        Ok(())
    }
}

/// `agent/conversation_loop.py` → `agent.conversation_loop` (imports are root-relative).
fn dotted_module(rel: &str) -> String {
    let stem = rel.trim_end_matches(".py").trim_end_matches("/__init__");
    stem.replace('/', ".")
}

/// The callback's call sites per state: `cb("start"|"heartbeat"|"complete", ...)` where `cb`
/// is `getattr(x, "agent_progress_callback", ...)` in the same function or
/// `x.agent_progress_callback` itself.
pub fn hook_calls(files: &[Parsed]) -> [Vec<(usize, usize)>; 3] {
    let mut out: [Vec<(usize, usize)>; 3] = Default::default();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_str();
        if !src.contains("agent_progress_callback") {
            continue;
        }
        for c in descendants(p.tree.root_node(), "call") {
            let Some(first) = positional_args(c).first().copied() else {
                continue;
            };
            if first.kind() != "string" {
                continue;
            }
            let state = text(first, src).trim_matches(['"', '\'']);
            let Some(k) = ["start", "heartbeat", "complete"]
                .iter()
                .position(|s| *s == state)
            else {
                continue;
            };
            let Some(f) = c.child_by_field_name("function") else {
                continue;
            };
            let is_cb = match f.kind() {
                "attribute" => f
                    .child_by_field_name("attribute")
                    .is_some_and(|a| text(a, src) == "agent_progress_callback"),
                "identifier" => {
                    let name = text(f, src);
                    enclosing_function(c).is_some_and(|def| {
                        descendants_same_scope(
                            def.child_by_field_name("body").expect("body"),
                            "assignment",
                        )
                        .iter()
                        .any(|a| {
                            a.child_by_field_name("left")
                                .is_some_and(|l| text(l, src) == name)
                                && a.child_by_field_name("right").is_some_and(|r| {
                                    r.kind() == "call"
                                        && callee_name(r, src) == "getattr"
                                        && text(r, src).contains("\"agent_progress_callback\"")
                                })
                        })
                    })
                }
                _ => false,
            };
            if is_cb {
                out[k].push((i, line(c)));
            }
        }
    }
    out
}

pub fn build<'a>(
    files: &'a [Parsed],
    project: &'a Project,
    sites: &Sites<'a>,
) -> Result<Vec<Part>> {
    let mut b = Builder::new(files, project)?;
    match &sites.shape {
        Shape::Callback(cb) => b.callback_shape(sites, cb)?,
        Shape::Emitter(em) => b.emitter_shape(sites, em)?,
    }
    Ok(b.parts)
}
