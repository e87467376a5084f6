//! Every piece apply inserts into a TypeScript agent, as planned insertions with a presence
//! check each. Apply plans the parts that are missing; verify reports on all of them — one
//! computation.

use super::locate::{Generation, Sites};
use crate::error::{Error, Result};
use crate::lang::parts::*;
use crate::lang::pieces::{Pieces, PresentAt};
use crate::lang::typescript::style::{CodeStyle, detect, restyle};
use crate::lang::typescript::syntax::*;
use crate::project::Project;
use crate::render::{fill, reindent};
use crate::source::{indent_at, line_end_after};
use tree_sitter::Node;

use crate::lang::tree::{line, own_line, start_above_comments};

/// The engine shape's builder: the shared one ([`Pieces`]) on the file that holds the agent's
/// class, in that file's style.
struct Builder<'a> {
    pieces: Pieces<'a, Parsed>,
    project: &'a Project,
    file: usize,
    style: CodeStyle,
    sites: std::collections::HashMap<String, String>,
}

crate::lang::pieces::extends_pieces!(Builder);

impl<'a> Builder<'a> {
    fn src(&self) -> &'a str {
        self.pieces.src(self.file)
    }

    fn template(&self, name: &str) -> Result<String> {
        let t = self.project.templates.get(&format!("typescript/{name}"))?;
        Ok(fill(&t, &[("PREFIX", &self.project.env_prefix)]))
    }

    fn site(&self, name: &str, vars: &[(&str, &str)]) -> Result<String> {
        let t = self.sites.get(name).ok_or_else(|| Error::Config {
            path: "templates/typescript/sites.ts".into(),
            message: format!("no `// site: {name}` section"),
        })?;
        Ok(fill(t, vars))
    }

    /// Template code in the file's style, at `base` indentation.
    fn render(&self, code: &str, base: &str) -> String {
        let style = &self.files[self.file].file.style();
        reindent(
            &restyle(code, self.style),
            base,
            &style.indent_unit,
            style.eol,
        )
    }

    /// `text` inserted at `offset` of the class's file.
    fn put(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        offset: usize,
        text: String,
        present: Option<usize>,
    ) {
        let file = self.file;
        self.pieces.push(checks, label, file, offset, text, present);
    }

    /// The refusal of a shape apply cannot patch, at a node.
    fn refuse(&self, n: Node, message: &str) -> Error {
        self.pieces.unsupported(self.file, line(n), message)
    }

    /// Code lines before a statement, at its indentation.
    fn before(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        stmt: Node,
        code: &str,
        marker: &str,
    ) -> Result<()> {
        if !own_line(self.src(), stmt) {
            return Err(self.refuse(
                stmt,
                "the statement shares its line with other code; put it on its own line",
            ));
        }
        let src = self.src();
        let text = self.render(code, indent_at(src, stmt.start_byte()));
        let present = find_marker(
            crate::lang::tree::preceding_siblings(stmt)
                .into_iter()
                .filter(|n| n.is_named()),
            3,
            marker,
            src,
        );
        let offset = start_above_comments(src, stmt);
        self.put(checks, label, offset, text, present);
        Ok(())
    }

    /// Code lines after a statement, at its indentation.
    fn after(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        stmt: Node,
        code: &str,
        marker: &str,
    ) -> Result<()> {
        let src = self.src();
        let eol = self.files[self.file].file.style().eol;
        let offset = line_end_after(src, stmt.end_byte());
        if src[stmt.end_byte()..offset].trim() != "" {
            return Err(self.refuse(
                stmt,
                "the statement shares its last line with other code; put it on its own line",
            ));
        }
        let text = self.render(code, indent_at(src, stmt.start_byte()));
        let text = crate::lang::pieces::at_end_of_file(src, offset, text, eol);
        let present = find_marker(
            crate::lang::tree::following_siblings(stmt)
                .into_iter()
                .filter(|n| n.is_named()),
            4,
            marker,
            src,
        );
        self.put(checks, label, offset, text, present);
        Ok(())
    }

    /// Code lines at the top of a block.
    fn top(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        block: Node,
        code: &str,
        marker: &str,
    ) -> Result<()> {
        let src = self.src();
        let stmts = statements(block);
        let present = find_marker(stmts.iter().copied(), 6, marker, src);
        match stmts.first() {
            Some(first) => {
                if first.start_position().row == block.start_position().row {
                    return Err(self.refuse(
                        block,
                        "the block's first statement is on the line of its `{`; put it on its own line",
                    ));
                }
                self.before(checks, label, *first, code, "\u{0}")?;
                self.parts.last_mut().expect("just pushed").present = present;
                self.opened_from_empty(block, code);
            }
            None => {
                // `{}`: open the block
                let style = &self.files[self.file].file.style();
                let indent = indent_at(src, block.start_byte()).to_string();
                let inner = format!("{indent}{}", style.indent_unit);
                let body = self.render(code, &inner);
                let close = block.end_byte() - 1;
                let between = &src[block.start_byte() + 1..close];
                if !between.trim().is_empty() {
                    return Err(self.refuse(block, "a block holding only comments"));
                }
                let text = if between.contains('\n') {
                    body
                } else {
                    format!("{}{body}{indent}", style.eol)
                };
                let offset = if between.contains('\n') {
                    line_end_after(src, block.start_byte())
                } else {
                    close
                };
                self.put(checks, label, offset, text, present);
            }
        }
        Ok(())
    }

    /// A block apply opened from `{}` holds just the inserted lines between its braces: the
    /// last part's text is then that whole inside, so revert gives `{}` back. (An empty
    /// block written over two lines looks the same once patched; it comes back as `{}`.)
    fn opened_from_empty(&mut self, block: Node, code: &str) {
        let src = self.src();
        if statements(block).len() != 1 || self.parts.last().is_none_or(|p| p.present.is_none()) {
            return;
        }
        let style = &self.files[self.file].file.style();
        let indent = indent_at(src, block.start_byte()).to_string();
        let inner = format!("{indent}{}", style.indent_unit);
        let text = format!("{}{}{indent}", style.eol, self.render(code, &inner));
        if src[block.start_byte() + 1..block.end_byte() - 1] == text {
            self.parts.last_mut().expect("checked").text = text;
        }
    }

    /// A top-level block before the class's top-level statement (and its comments).
    fn module_before(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        top: Node,
        code: &str,
        defines: &str,
    ) {
        let eol = self.files[self.file].file.style().eol;
        let offset = start_above_comments(self.src(), top);
        let text = format!("{}{eol}", self.render(code, ""));
        let present = top_level_functions(self.files[self.file].tree().root_node(), self.src())
            .into_iter()
            .find(|(n, _)| n == defines)
            .map(|(_, d)| line(d));
        self.put(checks, label, offset, text, present);
    }
}

/// The line of the first of the next `limit` statements whose text contains `marker`.
fn find_marker<'t>(
    nodes: impl Iterator<Item = Node<'t>>,
    limit: usize,
    marker: &str,
    src: &str,
) -> Option<usize> {
    nodes
        .filter(|n| n.kind() != "comment")
        .take(limit)
        .find(|n| {
            // a compound statement counts by its first line only (`if (acpTextHold(...)) {`)
            let t = text(*n, src);
            let head = if n.kind() == "expression_statement" || n.kind() == "lexical_declaration" {
                t
            } else {
                t.lines().next().unwrap_or("")
            };
            head.contains(marker)
        })
        .map(line)
}

pub fn build<'a>(files: &'a [Parsed], project: &'a Project, s: &Sites<'a>) -> Result<Vec<Part>> {
    let p = &files[s.file];
    let mut b = Builder {
        pieces: Pieces::new(files, PresentAt::Line),
        project,
        file: s.file,
        style: detect(p.tree().root_node(), &p.file.text),
        sites: crate::render::sections(&project.templates.get("typescript/sites.ts")?, "// site: "),
    };
    let src = b.src();

    // Module-level blocks, before the class.
    let class_top = top_level(s.class);
    let factory = match s.generation {
        Generation::V1 => "factory_v1.ts",
        Generation::V2 => "factory_v2.ts",
    };
    let factory = fill(
        &b.template(factory)?,
        &[("CALLBACK", b.template("factory_callback.ts")?.trim_end())],
    );
    for (code, defines, checks, label) in [
        (
            b.template("helpers.ts")?,
            "buildThinkingStart",
            CHECK_HELPERS,
            "thinking helpers",
        ),
        (
            factory,
            "makeAgentProgressCb",
            CHECK_FACTORY,
            "progress factory",
        ),
        (
            b.template("hooks.ts")?,
            "acpProgressStart",
            CHECK_HOOKS,
            "hook functions",
        ),
        (
            b.template("text_hold.ts")?,
            "acpTextHold",
            CHECK_HOLD,
            "text hold",
        ),
    ] {
        b.module_before(checks, label, class_top, &code, defines);
    }

    // The callback property, and a constructor that can take one.
    let class_body = s.class.child_by_field_name("body").expect("class body");
    let members = statements(class_body);
    let declared = members
        .iter()
        .find(|m| {
            m.kind() == "public_field_definition"
                && m.child_by_field_name("name")
                    .is_some_and(|n| text(n, src) == "agentProgressCallback")
        })
        .map(|m| line(*m));
    let anchor = s
        .ctor
        .or_else(|| {
            members
                .iter()
                .copied()
                .find(|m| m.kind() == "method_definition")
        })
        .ok_or_else(|| b.refuse(s.class, "the class has no methods"))?;
    let property = b.site("property", &[])?;
    b.before(
        CHECK_DECLARED,
        "callback property",
        anchor,
        &property,
        "\u{0}",
    )?;
    b.parts.last_mut().expect("pushed").present = declared;

    let ctor = s.ctor.ok_or_else(|| {
        b.refuse(
            s.class,
            "the class has no constructor; add one (even an empty one) so the callback can be passed in",
        )
    })?;
    let params = parameters(ctor, src);
    let present = params
        .iter()
        .find(|(n, _)| n == "agentProgressCallback")
        .map(|(_, n)| line(*n));
    let plist = ctor.child_by_field_name("parameters").expect("parameters");
    let param = restyle("agentProgressCallback?: AcpProgressCallback", b.style);
    // (a list that holds only the callback parameter was empty before apply)
    let only_ours = params.len() == 1 && present.is_some();
    let (offset, inserted) = match params.last().filter(|_| !only_ours) {
        None => (plist.start_byte() + 1, param),
        Some((_, last)) => {
            if text(*last, src).starts_with("...") {
                return Err(b.refuse(*last, "the constructor ends with a rest parameter"));
            }
            let after = &src[last.end_byte()..plist.end_byte() - 1];
            let multi_line = after.contains('\n') || own_line(b.src(), *last);
            if multi_line {
                let eol = p.file.style().eol;
                let indent = indent_at(src, last.start_byte());
                if after.trim_start().starts_with(',') {
                    // trailing comma: a new line after it, with its own trailing comma
                    let comma = last.end_byte() + after.find(',').expect("comma") + 1;
                    (comma, format!("{eol}{indent}{param},"))
                } else {
                    (last.end_byte(), format!(",{eol}{indent}{param}"))
                }
            } else {
                (last.end_byte(), format!(", {param}"))
            }
        }
    };
    b.put(
        CHECK_STORED,
        "callback parameter",
        offset,
        inserted,
        present,
    );
    let store = b.site("callback_store", &[])?;
    let cbody = body(ctor).expect("constructor body");
    match statements(cbody).last() {
        Some(last) => {
            let present = statements(cbody)
                .iter()
                .find(|n| {
                    text(**n, src).contains("this.agentProgressCallback = agentProgressCallback")
                })
                .map(|n| line(*n));
            b.after(CHECK_STORED, "callback stored", *last, &store, "\u{0}")?;
            b.parts.last_mut().expect("pushed").present = present;
            b.opened_from_empty(cbody, &store);
        }
        None => b.top(
            CHECK_STORED,
            "callback stored",
            cbody,
            &store,
            "this.agentProgressCallback = agentProgressCallback",
        )?,
    }

    // Wiring and turn boundaries.
    let turn_body = body(s.turn_method).expect("method body");
    let wiring = b.site(
        "wiring",
        &[("CONN", &s.conn), ("SESSION_ID", &s.session_id)],
    )?;
    b.top(
        CHECK_WIRING,
        "wiring",
        turn_body,
        &wiring,
        "this.agentProgressCallback = makeAgentProgressCb(",
    )?;
    // per-session holds: the turn's session id inside the turn method; elsewhere every hold
    let turn_key = match &s.hold_key {
        Some(_) => format!(", {}", s.session_id),
        None => String::new(),
    };
    let begin = b.site("text_hold_begin_turn", &[("KEY", &turn_key)])?;
    b.top(
        CHECK_HOLD,
        "text hold reset per turn",
        turn_body,
        &begin,
        "acpTextHoldFlush(this",
    )?;
    let start = b.site("hook_start", &[])?;
    b.before(
        CHECK_START,
        "hook start",
        s.handoff,
        &start,
        "acpProgressStart(",
    )?;
    let complete = b.site("hook_complete", &[])?;
    let end_turn = |b: &Builder, at: Node| -> Result<String> {
        let awaits = enclosing_function(at).is_some_and(is_async);
        let in_turn = {
            let mut cur = at.parent();
            while cur.is_some_and(|n| n != s.turn_method) {
                cur = cur.and_then(|n| n.parent());
            }
            cur.is_some()
        };
        b.site(
            "text_hold_end_turn",
            &[
                ("AWAIT", if awaits { "await" } else { "void" }),
                ("KEY", if in_turn { turn_key.as_str() } else { "" }),
            ],
        )
    };
    let flush = end_turn(&b, s.turn_end)?;
    b.top(
        CHECK_COMPLETE,
        "hook complete at turn end",
        s.turn_end,
        &complete,
        "acpProgressComplete(",
    )?;
    b.top(
        CHECK_HOLD,
        "text hold flushed at turn end",
        s.turn_end,
        &flush,
        "acpTextHoldFlush(",
    )?;
    for block in s.error_blocks.iter().chain(s.cancel.iter()) {
        let flush = end_turn(&b, *block)?;
        let (l1, l2) = if Some(*block) == s.cancel {
            ("hook complete on cancel", "text hold flushed on cancel")
        } else {
            ("hook complete on error", "text hold flushed on error")
        };
        b.top(
            CHECK_COMPLETE,
            l1,
            *block,
            &complete,
            "acpProgressComplete(",
        )?;
        b.top(CHECK_HOLD, l2, *block, &flush, "acpTextHoldFlush(")?;
    }

    // The emitter: complete on the first update of the turn, then the hold gate.
    let ebody = body(s.emitter).expect("emitter body");
    if s.emitter.child_by_field_name("return_type").is_some()
        && !is_async(s.emitter)
        && !text(
            s.emitter.child_by_field_name("return_type").expect("type"),
            src,
        )
        .contains("void")
    {
        return Err(b.refuse(
            s.emitter,
            "the emitter returns a value; acp-patch supports `async` or `void` emitters (pin another with `emitter`)",
        ));
    }
    let first_update = b.site(
        "hook_complete_first_update",
        &[("UPDATE", &s.emitter_params[s.update_param])],
    )?;
    b.top(
        CHECK_COMPLETE,
        "hook complete at first update",
        ebody,
        &first_update,
        "acpProgressOnUpdate(",
    )?;
    let args: Vec<String> = s
        .emitter_params
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if i == s.update_param {
                "held".to_string()
            } else {
                n.clone()
            }
        })
        .collect();
    let gate = b.site(
        "text_hold_gate",
        &[
            ("UPDATE", &s.emitter_params[s.update_param]),
            ("EMITTER", &s.emitter_name),
            ("ARGS", &args.join(", ")),
            (
                "KEY",
                &s.hold_key
                    .as_ref()
                    .map(|k| format!(", {k}"))
                    .unwrap_or_default(),
            ),
        ],
    )?;
    b.top(CHECK_HOLD, "text hold gate", ebody, &gate, "acpTextHold(")?;
    Ok(b.pieces.parts)
}
