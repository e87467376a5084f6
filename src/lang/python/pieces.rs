//! The insertion primitives every piece is made of: code before or after a statement, at the
//! top of a block, a module-level block, an import, a parameter. Each records where it would
//! go and whether it is already there, in the file's own indentation and line endings.

use super::locate::At;
use super::package::Packages;
use super::syntax::*;
use crate::error::{Error, Result};
use crate::lang::parts::*;
use crate::lang::pieces::{Pieces, PresentAt, at_end_of_file};
use crate::lang::tree::{own_line, start_above_comments};
use crate::project::Project;
use crate::render::{fill, reindent};
use crate::source::{indent_at, line_end_after, line_start};
use tree_sitter::Node;

/// Python's builder: the shared one ([`Pieces`], its parts and findings) with the templates
/// and the packages it renders from.
pub struct Builder<'a> {
    pub pieces: Pieces<'a, Parsed>,
    pub(super) project: &'a Project,
    /// The tree's package map, shared with the analysis it builds (computed once).
    pub(super) packages: std::sync::Arc<Packages>,
    sites: std::collections::HashMap<String, String>,
}

crate::lang::pieces::extends_pieces!(Builder);

pub(super) use crate::lang::tree::line;

/// The statement text of `marker`'s first appearance among `nodes`, as a line number.
pub(super) fn find_marker<'t>(
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
    crate::lang::tree::preceding_siblings(stmt)
        .into_iter()
        .filter(|n| n.is_named() && n.kind() != "comment")
        .take(3)
}

pub(super) fn next_statements(stmt: Node<'_>) -> impl Iterator<Item = Node<'_>> {
    crate::lang::tree::following_siblings(stmt)
        .into_iter()
        .filter(|n| n.is_named() && n.kind() != "comment")
        .take(4)
}

pub(super) fn block_statements(block: Node<'_>) -> impl Iterator<Item = Node<'_>> {
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
        let sites = crate::render::sections(&project.templates.get("python/sites.py")?, "# site: ");
        Ok(Builder {
            pieces: Pieces::new(files, PresentAt::Line),
            project,
            packages: std::sync::Arc::new(Packages::new(project, files)),
            sites,
        })
    }

    pub(super) fn site(&self, name: &str, vars: &[(&str, &str)]) -> Result<String> {
        let t = self.sites.get(name).ok_or_else(|| Error::Config {
            path: "templates/python/sites.py".into(),
            message: format!("no `# site: {name}` section"),
        })?;
        Ok(fill(t, vars))
    }

    pub(super) fn block(&self, name: &str, send: &str) -> Result<String> {
        let t = self.project.templates.get(&format!("python/{name}"))?;
        Ok(fill(
            &t,
            &[("PREFIX", &self.project.env_prefix), ("SEND", send)],
        ))
    }

    /// The refusal of a shape apply cannot patch, at a node.
    pub(super) fn refuse(&self, at: At, message: &str) -> Error {
        self.pieces.unsupported(at.file, line(at.node), message)
    }

    /// Code lines before a statement, at its indentation.
    pub(super) fn before(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        stmt: At,
        code: String,
        marker: &str,
    ) -> Result<()> {
        let src = self.src(stmt.file);
        // Comments right above a statement describe it: new code goes above them.
        let start = start_above_comments(src, stmt.node);
        if !own_line(src, stmt.node) {
            return Err(self.refuse(stmt, "the statement shares its line with other code; put it on its own line or pin another site"));
        }
        let style = &self.files[stmt.file].file.style();
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
    pub(super) fn after(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        stmt: At,
        code: String,
        marker: &str,
    ) -> Result<()> {
        let src = self.src(stmt.file);
        let style = &self.files[stmt.file].file.style();
        let offset = line_end_after(src, stmt.node.end_byte());
        let text = reindent(
            &code,
            indent_at(src, stmt.node.start_byte()),
            &style.indent_unit,
            style.eol,
        );
        let text = at_end_of_file(src, offset, text, style.eol);
        let present = find_marker(next_statements(stmt.node), marker, src);
        self.push(checks, label, stmt.file, offset, text, present);
        Ok(())
    }

    /// Code lines at the top of a block (after a docstring and nonlocal/global lines).
    pub(super) fn top(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        block: At,
        code: String,
        marker: &str,
    ) -> Result<()> {
        let src = self.src(block.file);
        let present = find_marker(block_statements(block.node), marker, src);
        let first =
            first_body_statement(block.node).ok_or_else(|| self.refuse(block, "empty block"))?;
        if line(first) == line(block.node.parent().unwrap_or(block.node)) {
            return Err(self.refuse(
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

    /// A decorator line directly above a definition (below its other decorators).
    pub(super) fn decorator(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        def: At,
        code: String,
        marker: &str,
    ) -> Result<()> {
        let src = self.src(def.file);
        let present = decorators(def.node)
            .into_iter()
            .find(|d| text(*d, src).contains(marker))
            .map(line);
        if !src[line_start(src, def.node.start_byte())..def.node.start_byte()]
            .trim()
            .is_empty()
        {
            return Err(self.refuse(def, "the definition shares its line with other code"));
        }
        let eol = self.files[def.file].file.style().eol;
        let indent = indent_at(src, def.node.start_byte()).to_string();
        self.push(
            checks,
            label,
            def.file,
            line_start(src, def.node.start_byte()),
            format!("{indent}{code}{eol}"),
            present,
        );
        Ok(())
    }

    /// A module-level block before a top-level statement (decorators included).
    pub(super) fn module_before(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        top: At,
        code: String,
        defines: &str,
    ) {
        let f = &self.files[top.file];
        let style = &f.file.style();
        let offset = line_start(&f.file.text, top.node.start_byte());
        let text = format!(
            "{}{}{}",
            reindent(&code, "", &style.indent_unit, style.eol),
            style.eol,
            style.eol
        );
        let present = block_defined_at(f, &code, defines);
        self.push(checks, label, top.file, offset, text, present);
    }

    /// A module-level block after a top-level statement.
    pub(super) fn module_after(
        &mut self,
        checks: &'static [&'static str],
        label: &'static str,
        top: At,
        code: String,
        defines: &str,
    ) {
        let f = &self.files[top.file];
        let style = &f.file.style();
        let src = &f.file.text;
        let offset = line_end_after(src, top.node.end_byte());
        let body = reindent(&code, "", &style.indent_unit, style.eol);
        let text = at_end_of_file(src, offset, format!("{0}{0}{body}", style.eol), style.eol);
        let present = block_defined_at(f, &code, defines);
        self.push(checks, label, top.file, offset, text, present);
    }

    /// `import name` after the last top-level import, unless the module has it. The line
    /// apply adds carries a comment, so revert takes out that one and never the agent's own.
    pub(super) fn ensure_import(
        &mut self,
        checks: &'static [&'static str],
        file: usize,
        module: &str,
    ) {
        let f = &self.files[file];
        let root = f.tree().root_node();
        let src = f.file.text.as_ref();
        let eol = f.file.style().eol;
        let text = format!("import {module}{ADDED_IMPORT}{eol}");
        if imports_module(root, src, module) {
            let added = named_children(root).into_iter().find(|n| {
                n.kind() == "import_statement"
                    && text_of_line(src, n.start_byte()) == text.trim_end_matches(['\r', '\n'])
            });
            if let Some(added) = added {
                let start = line_start(src, added.start_byte());
                self.push(checks, "import", file, start, text, Some(line(added)));
            }
            return;
        }
        let offset = match last_top_level_import(root) {
            Some(imp) => line_end_after(src, imp.end_byte()),
            None => 0,
        };
        self.push(checks, "import", file, offset, text, None);
    }

    /// `from <m> import a, b` in `file`, where <m> is spelled as the module already imports
    /// other names of `provider`; present when every name is imported or defined there.
    pub(super) fn ensure_from_import(
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
        let src = f.file.text.as_ref();
        let root = f.tree().root_node();
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
        let mut sorted = names.to_vec();
        sorted.sort();
        let eol = f.file.style().eol;
        let missing: Vec<&str> = names.iter().copied().filter(|n| !has(n)).collect();
        if missing.is_empty() {
            // the line as apply writes it is apply's (revert takes it out); any other form
            // is the agent's own and stays
            let found = imports.iter().find(|i| text(**i, src).contains(names[0]));
            let (line, offset, text) = match found {
                Some(i) => {
                    let module = i
                        .child_by_field_name("module_name")
                        .map(|m| text(m, src))
                        .unwrap_or("");
                    let own = format!("from {module} import {}", sorted.join(", "));
                    let ours = text(*i, src) == own
                        && text_of_line(src, i.start_byte()).trim_start() == own;
                    let start = line_start(src, i.start_byte());
                    let indent = indent_at(src, i.start_byte());
                    (
                        line(*i),
                        start,
                        if ours {
                            format!("{indent}{own}{eol}")
                        } else {
                            String::new()
                        },
                    )
                }
                None => (1, 0, String::new()),
            };
            self.push(checks, "import", file, offset, text, Some(line));
            return Ok(());
        }
        let p = &self.files[provider];
        let provided: Vec<&str> = top_level_functions(p.tree().root_node())
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
        // only the names still missing: a tree patched by an older acp-patch keeps its line
        let mut sorted = missing;
        sorted.sort();
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
    pub(super) fn param_after(&mut self, def: At, style: Option<Node>) {
        let f = &self.files[def.file];
        let src = f.file.text.as_ref();
        let present = parameters(def.node, src)
            .iter()
            .find(|(n, _)| n == "agent_progress_callback")
            .map(|(_, n)| line(*n));
        let params_node = def.node.child_by_field_name("parameters").expect("params");
        // `**kwargs` ends a signature, typed (`**kwargs: Any`, a typed_parameter) or not:
        // CPython rejects a parameter after it, though tree-sitter accepts one
        let is_var_keyword = |p: &Node| {
            p.kind() == "dictionary_splat_pattern"
                || (p.kind() == "typed_parameter"
                    && named_children(*p)
                        .first()
                        .is_some_and(|c| c.kind() == "dictionary_splat_pattern"))
        };
        let Some(anchor) = named_children(params_node)
            .into_iter()
            .rfind(|p| p.kind() != "comment" && !is_var_keyword(p))
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
                f.file.style().eol,
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

    /// `agent_progress_callback=agent_progress_callback` after a keyword argument of a call.
    pub(super) fn keyword_after(&mut self, kw: At) {
        let src = self.src(kw.file);
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
                self.files[kw.file].file.style().eol,
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
}

/// Where a module-level block already is: at any function it defines, not only at its
/// first (`defines`). A block one of whose functions was renamed by hand is still there
/// (verify reports the missing name); inserting it again would duplicate the others.
fn block_defined_at(p: &Parsed, code: &str, defines: &str) -> Option<usize> {
    defined_at(p, defines).or_else(|| {
        super::defined_names(code)
            .iter()
            .filter_map(|name| defined_at(p, name))
            .min()
    })
}

/// The comment on an `import` line apply adds (see `ensure_import`).
const ADDED_IMPORT: &str = "  # added by acp-patch";

/// The text of the line holding `offset`, without its line ending.
fn text_of_line(src: &str, offset: usize) -> &str {
    let start = line_start(src, offset);
    src[start..line_end_after(src, offset)].trim_end_matches(['\r', '\n'])
}

/// The line of a top-level `def name` in a parsed file.
fn defined_at(p: &Parsed, name: &str) -> Option<usize> {
    top_level_functions(p.tree().root_node())
        .into_iter()
        .find(|d| name_of(*d, &p.file.text) == name)
        .map(line)
}
