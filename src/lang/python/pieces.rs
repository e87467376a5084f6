//! Every piece apply inserts, as planned insertions with a presence check each. Apply
//! plans the parts that are missing; verify reports on all of them — one computation.

use super::locate::{At, CallbackSites, EmitterSites, Shape, Sites};
use super::syntax::*;
use crate::error::{Error, Result};
use crate::lang::parts::*;
use crate::project::Project;
use crate::render::{fill, reindent};
use crate::source::{indent_at, line_end_after, line_start};
use tree_sitter::Node;

pub struct Builder<'a> {
    files: &'a [Parsed],
    project: &'a Project,
    sites: std::collections::HashMap<String, String>,
    pub parts: Vec<Part>,
}

fn line(n: Node) -> usize {
    n.start_position().row + 1
}

/// The statement text of `marker`'s first appearance among `nodes`, as a line number.
fn find_marker<'t>(
    nodes: impl Iterator<Item = Node<'t>>,
    marker: &str,
    src: &str,
) -> Option<usize> {
    nodes
        .filter(|n| n.kind() != "comment")
        .find(|n| text(*n, src).contains(marker))
        .map(line)
}

fn prev_statements(stmt: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    std::iter::successors(stmt.prev_named_sibling(), |n| n.prev_named_sibling())
        .filter(|n| n.kind() != "comment")
        .take(3)
}

fn next_statements(stmt: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    std::iter::successors(stmt.next_named_sibling(), |n| n.next_named_sibling())
        .filter(|n| n.kind() != "comment")
        .take(4)
}

fn block_statements(block: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    let mut c = block.walk();
    let v: Vec<Node> = block
        .named_children(&mut c)
        .filter(|n| n.kind() != "comment")
        .take(6)
        .collect();
    v.into_iter()
}

impl<'a> Builder<'a> {
    pub fn new(files: &'a [Parsed], project: &'a Project) -> Result<Builder<'a>> {
        let raw = project.templates.get("python/sites.py")?;
        let mut sites = std::collections::HashMap::new();
        let mut current: Option<(String, String)> = None;
        for l in raw.lines() {
            if let Some(name) = l.strip_prefix("# site: ") {
                if let Some((n, body)) = current.take() {
                    sites.insert(n, body);
                }
                current = Some((name.trim().to_string(), String::new()));
            } else if let Some((_, body)) = current.as_mut() {
                body.push_str(l);
                body.push('\n');
            }
        }
        if let Some((n, body)) = current {
            sites.insert(n, body);
        }
        Ok(Builder {
            files,
            project,
            sites,
            parts: Vec::new(),
        })
    }

    fn site(&self, name: &str, vars: &[(&str, &str)]) -> Result<String> {
        let t = self.sites.get(name).ok_or_else(|| Error::Config {
            path: "templates/python/sites.py".into(),
            message: format!("no `# site: {name}` section"),
        })?;
        Ok(fill(t, vars))
    }

    fn block(&self, name: &str, send: &str) -> Result<String> {
        let t = self.project.templates.get(&format!("python/{name}"))?;
        Ok(fill(
            &t,
            &[("PREFIX", &self.project.env_prefix), ("SEND", send)],
        ))
    }

    fn src(&self, file: usize) -> &'a str {
        &self.files[file].file.text
    }

    fn push(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        file: usize,
        offset: usize,
        text: String,
        present: Option<usize>,
    ) {
        let anchor_line = self.files[file].file.line_of(offset);
        self.parts.push(Part {
            checks,
            label,
            file,
            offset,
            text,
            present,
            anchor_line,
        });
    }

    fn unsupported(&self, at: At, message: &str) -> Error {
        Error::Unsupported {
            file: self.files[at.file].file.rel.clone(),
            line: line(at.node),
            message: message.to_string(),
        }
    }

    /// Code lines before a statement, at its indentation.
    fn before(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        stmt: At,
        code: String,
        marker: &str,
    ) -> Result<()> {
        let src = self.src(stmt.file);
        // Comments right above a statement describe it: new code goes above them.
        let mut first = stmt.node;
        while let Some(c) = first.prev_sibling().filter(|c| {
            c.kind() == "comment"
                && c.end_position().row + 1 == first.start_position().row
                && src[line_start(src, c.start_byte())..c.start_byte()]
                    .trim()
                    .is_empty()
        }) {
            first = c;
        }
        let start = line_start(src, first.start_byte());
        if !src[line_start(src, stmt.node.start_byte())..stmt.node.start_byte()]
            .trim()
            .is_empty()
        {
            return Err(self.unsupported(stmt, "the statement shares its line with other code; put it on its own line or pin another site"));
        }
        let style = &self.files[stmt.file].file.style;
        let text = reindent(
            &code,
            indent_at(src, stmt.node.start_byte()),
            &style.indent_unit,
            style.eol,
        );
        let present = find_marker(prev_statements(stmt.node), marker, src);
        self.push(checks, label, stmt.file, start, text, present);
        Ok(())
    }

    /// Code lines after a statement, at its indentation.
    fn after(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        stmt: At,
        code: String,
        marker: &str,
    ) -> Result<()> {
        let src = self.src(stmt.file);
        let style = &self.files[stmt.file].file.style;
        let offset = line_end_after(src, stmt.node.end_byte());
        let mut text = reindent(
            &code,
            indent_at(src, stmt.node.start_byte()),
            &style.indent_unit,
            style.eol,
        );
        if offset == src.len() && !src.ends_with('\n') {
            // keep "no final newline": the new lines go before the end, not after it
            text = format!("{}{}", style.eol, text.trim_end_matches(['\r', '\n']));
        }
        let present = find_marker(next_statements(stmt.node), marker, src);
        self.push(checks, label, stmt.file, offset, text, present);
        Ok(())
    }

    /// Code lines at the top of a block (after a docstring and nonlocal/global lines).
    fn top(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        block: At,
        code: String,
        marker: &str,
    ) -> Result<()> {
        let src = self.src(block.file);
        let present = find_marker(block_statements(block.node), marker, src);
        let first = first_body_statement(block.node)
            .ok_or_else(|| self.unsupported(block, "empty block"))?;
        if line(first) == line(block.node.parent().unwrap_or(block.node)) {
            return Err(self.unsupported(
                block,
                "the block is on the same line as its header; put its body on its own lines",
            ));
        }
        self.before(
            checks,
            label,
            At {
                file: block.file,
                node: first,
            },
            code,
            "\u{0}",
        )?;
        self.parts.last_mut().expect("just pushed").present = present;
        Ok(())
    }

    /// A module-level block before a top-level statement (decorators included).
    fn module_before(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        top: At,
        code: String,
        defines: &str,
    ) {
        let f = &self.files[top.file];
        let style = &f.file.style;
        let offset = line_start(&f.file.text, top.node.start_byte());
        let text = format!(
            "{}{}{}",
            reindent(&code, "", &style.indent_unit, style.eol),
            style.eol,
            style.eol
        );
        let present = defined_at(f, defines);
        self.push(checks, label, top.file, offset, text, present);
    }

    /// A module-level block after a top-level statement.
    fn module_after(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        top: At,
        code: String,
        defines: &str,
    ) {
        let f = &self.files[top.file];
        let style = &f.file.style;
        let src = &f.file.text;
        let offset = line_end_after(src, top.node.end_byte());
        let body = reindent(&code, "", &style.indent_unit, style.eol);
        let text = if offset == src.len() && !src.ends_with('\n') {
            format!(
                "{eol}{eol}{eol}{}",
                body.trim_end_matches(['\r', '\n']),
                eol = style.eol
            )
        } else {
            format!("{eol}{eol}{body}", eol = style.eol)
        };
        let present = defined_at(f, defines);
        self.push(checks, label, top.file, offset, text, present);
    }

    /// `import name` after the last top-level import, unless the module has it.
    fn ensure_import(&mut self, checks: &'static [&'static str], file: usize, module: &str) {
        let f = &self.files[file];
        let root = f.tree.root_node();
        if imports_module(root, &f.file.text, module) {
            return;
        }
        let eol = f.file.style.eol;
        let (offset, text) = match last_top_level_import(root) {
            Some(imp) => (
                line_end_after(&f.file.text, imp.end_byte()),
                format!("import {module}{eol}"),
            ),
            None => (0, format!("import {module}{eol}")),
        };
        self.push(checks, "import", file, offset, text, None);
    }

    /// `from <m> import a, b` in `file`, where <m> is spelled as the module already imports
    /// other names of `provider`; present when every name is imported or defined there.
    fn ensure_from_import(
        &mut self,
        checks: &'static [&'static str],
        file: usize,
        provider: usize,
        names: &[&str],
    ) -> Result<()> {
        if file == provider {
            return Ok(());
        }
        let f = &self.files[file];
        let src = f.file.text.as_str();
        let root = f.tree.root_node();
        let imports: Vec<Node> = descendants(root, "import_from_statement");
        let has = |name: &str| {
            imports.iter().any(|i| {
                let mut c = i.walk();
                i.children_by_field_name("name", &mut c).any(|n| {
                    let n = if n.kind() == "aliased_import" {
                        n.child_by_field_name("alias").unwrap_or(n)
                    } else {
                        n
                    };
                    text(n, src) == name
                })
            }) || defined_at(f, name).is_some()
        };
        if names.iter().all(|n| has(n)) {
            let line = imports
                .iter()
                .find(|i| text(**i, src).contains(names[0]))
                .map(|i| line(*i))
                .unwrap_or(1);
            self.push(checks, "import", file, 0, String::new(), Some(line));
            return Ok(());
        }
        let p = &self.files[provider];
        let provided: Vec<&str> = top_level_functions(p.tree.root_node())
            .into_iter()
            .map(|d| name_of(d, &p.file.text))
            .collect();
        let existing = imports.iter().find(|i| {
            let mut c = i.walk();
            i.children_by_field_name("name", &mut c).any(|n| {
                let n = if n.kind() == "aliased_import" {
                    n.child_by_field_name("name").unwrap_or(n)
                } else {
                    n
                };
                provided.contains(&text(n, src))
            })
        });
        let Some(existing) = existing else {
            return Err(Error::Unsupported {
                file: f.file.rel.clone(),
                line: 1,
                message: format!(
                    "imports nothing from {} yet; add an import of it by hand",
                    p.file.rel
                ),
            });
        };
        let module = text(
            existing
                .child_by_field_name("module_name")
                .expect("from-import has a module"),
            src,
        );
        let mut sorted = names.to_vec();
        sorted.sort();
        let eol = f.file.style.eol;
        let code = format!("from {module} import {}{eol}", sorted.join(", "));
        let offset = line_end_after(src, existing.end_byte());
        let indent = indent_at(src, existing.start_byte()).to_string();
        self.push(
            checks,
            "import",
            file,
            offset,
            format!("{indent}{code}"),
            None,
        );
        Ok(())
    }

    /// A keyword parameter beside `anchor` in a signature (own line if the anchor has one).
    /// A keyword parameter `agent_progress_callback` appended to a signature (before a
    /// `**kwargs`, so positional callers keep working), annotated like `style` if given, on its
    /// own line when the parameters are one per line.
    fn param_after(&mut self, def: At, style: Option<Node>) {
        let f = &self.files[def.file];
        let src = f.file.text.as_str();
        let present = parameters(def.node, src)
            .iter()
            .find(|(n, _)| n == "agent_progress_callback")
            .map(|(_, n)| line(*n));
        let params_node = def.node.child_by_field_name("parameters").expect("params");
        let Some(anchor) = named_children(params_node)
            .into_iter()
            .rfind(|p| !matches!(p.kind(), "comment" | "dictionary_splat_pattern"))
        else {
            return; // `def f():` has nothing to append after; hooks read the attribute with getattr
        };
        let own_line = src[line_start(src, anchor.start_byte())..anchor.start_byte()]
            .trim()
            .is_empty()
            && line(params_node) != line(anchor);
        let param = match style {
            Some(st) if st.kind() == "typed_default_parameter" => {
                let name = text(st.child_by_field_name("name").expect("name"), src);
                format!("agent_progress_callback{}", &text(st, src)[name.len()..])
            }
            _ => "agent_progress_callback=None".into(),
        };
        let text = if own_line {
            format!(
                ",{}{}{param}",
                f.file.style.eol,
                indent_at(src, anchor.start_byte())
            )
        } else {
            format!(", {param}")
        };
        self.push(
            CHECK_DECLARED,
            "callback parameter",
            def.file,
            anchor.end_byte(),
            text,
            present,
        );
    }

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
            let Some(kw) = kw else { continue };
            let call = kw
                .node
                .parent()
                .and_then(|a| a.parent())
                .expect("keyword in a call");
            let present = keyword_arg(call, "agent_progress_callback", src).map(line);
            let own_line = src[line_start(src, kw.node.start_byte())..kw.node.start_byte()]
                .trim()
                .is_empty();
            let text = if own_line {
                format!(
                    ",{}{}agent_progress_callback=agent_progress_callback",
                    self.files[kw.file].file.style.eol,
                    indent_at(src, kw.node.start_byte())
                )
            } else {
                ", agent_progress_callback=agent_progress_callback".to_string()
            };
            self.push(
                CHECK_DECLARED,
                "callback passed on",
                kw.file,
                kw.node.end_byte(),
                text,
                present,
            );
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

/// The line of a top-level `def name` in a parsed file.
fn defined_at(p: &Parsed, name: &str) -> Option<usize> {
    top_level_functions(p.tree.root_node())
        .into_iter()
        .find(|d| name_of(*d, &p.file.text) == name)
        .map(line)
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
