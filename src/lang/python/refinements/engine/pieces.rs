//! The pieces of the callback-shaped (engine-level) strategy: hooks in the engine's LLM call
//! lifecycle, the callback declared and stored, thinking helpers and the progress factory
//! beside the adapter's own, the wiring in the prompt handler (or its helper), the text hold
//! on the engine's callbacks, and the card opened at the prompt handler's entry.

use super::EngineSites;
use crate::error::Result;
use crate::lang::parts::*;
use crate::lang::python::locate::At;
use crate::lang::python::pieces::Builder;
use crate::lang::python::syntax::*;

impl<'a> Builder<'a> {
    pub fn engine_shape(&mut self, cb: &EngineSites<'a>) -> Result<()> {
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
            let module = self
                .packages
                .module_name(&self.files[llm.module_anchor.file].file.rel);
            let begin = self.site(
                "hook_begin_turn",
                &[("AGENT", &cb.prompt_receiver), ("MODULE", &module)],
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

        // The card opens at the prompt handler's entry; the factory made during the turn
        // takes it over (the engine's hooks then drive it), the turn's end closes it if not.
        let turn = self.block("turn_thread.py", "")?;
        self.module_after(
            CHECK_START,
            "prompt-entry card",
            At {
                file: cb.factories.file,
                node: top_level(cb.factories.node),
            },
            turn,
            "acp_thinking_turn",
        );
        let src = self.src(cb.prompt.file);
        let me = parameters(cb.prompt.node, src)
            .first()
            .map(|(n, _)| n.clone())
            .unwrap_or_else(|| "self".into());
        self.decorator(
            CHECK_START,
            "hook start at prompt entry",
            cb.prompt,
            format!(
                "@acp_thinking_turn(lambda {me}: {me}.{})",
                cb.connection_attr
            ),
            "acp_thinking_turn(",
        )?;

        // Wiring in the prompt handler (or the helper that wires the callbacks).
        self.ensure_from_import(
            CHECK_WIRING,
            cb.prompt.file,
            cb.factories.file,
            &[
                "acp_thinking_turn",
                "install_acp_text_hold",
                "make_agent_progress_cb",
            ],
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
        let install = self.site("text_hold_install", &[("AGENT", &cb.prompt_receiver)])?;
        self.after(
            CHECK_HOLD,
            "text hold installed",
            cb.hold_anchor,
            install,
            "install_acp_text_hold(",
        )?;
        let end = self.site("text_hold_end_turn_callback", &[])?;
        self.after(
            CHECK_HOLD,
            "text hold flushed at turn end",
            cb.handoff,
            end.clone(),
            "_acp_text_hold.aend_turn(",
        )?;
        if let Some(t) = ancestor_in_function(cb.handoff.node, "try_statement") {
            let blocks = except_blocks(t);
            for b in blocks {
                self.top(
                    CHECK_HOLD,
                    "text hold flushed on error",
                    At {
                        file: cb.handoff.file,
                        node: b,
                    },
                    end.clone(),
                    "_acp_text_hold.aend_turn(",
                )?;
            }
        }
        Ok(())
    }
}
