//! Where the agent's code names a protocol method: the string (`"session/prompt"`), a constant
//! holding it (`METHOD_SESSION_PROMPT = "session/prompt"`) in the file or imported from
//! another module of the agent (re-exports followed), or an attribute of that name
//! (`protocol.SESSION_PROMPT`, `Methods.PROMPT`: a module or class constant of the tree; in a
//! `case` pattern, the dotted name).

use super::super::found::is_agent_file;
use super::resolve::imported_from;
use crate::lang::parts::Parsed;
use crate::lang::python::syntax::*;
use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use tree_sitter::Node;

/// The value of a plain string literal.
pub fn string_value<'a>(node: Node, src: &'a str) -> Option<&'a str> {
    if node.kind() != "string" || !descendants(node, "interpolation").is_empty() {
        return None;
    }
    let t = text(node, src);
    let t = t.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let q = t.chars().next()?;
    Some(t.trim_matches(q))
}

/// The names of one protocol method across the agent's files.
pub struct Method<'a> {
    files: &'a [Parsed],
    pub method: &'static str,
    /// Constants assigned the method at module level, per file.
    module_constants: HashMap<usize, HashSet<&'a str>>,
    /// Names of module- or class-level constants holding it (read as `x.NAME`).
    attributes: HashSet<&'a str>,
    /// Those and the names they are imported under anywhere (`import X as Y`): what a file's
    /// text must hold to name the method.
    names: HashSet<&'a str>,
    /// The names each file binds to the method (its constants and imports), once asked.
    local: RefCell<HashMap<usize, HashSet<String>>>,
}

impl<'a> Method<'a> {
    /// Finds the constants holding `method` (parsing only files whose text holds it).
    pub fn of(files: &'a [Parsed], method: &'static str) -> Method<'a> {
        let mut module_constants: HashMap<usize, HashSet<&'a str>> = HashMap::new();
        let mut attributes = HashSet::new();
        for (i, p) in files.iter().enumerate() {
            let src = p.file.text.as_ref();
            if !is_agent_file(p) || !src.contains(method) {
                continue;
            }
            for a in descendants(p.tree().root_node(), "assignment") {
                let (Some(left), Some(right)) = (
                    a.child_by_field_name("left"),
                    a.child_by_field_name("right"),
                ) else {
                    continue;
                };
                if left.kind() != "identifier" || string_value(right, src) != Some(method) {
                    continue;
                }
                let Some(stmt) = a.parent().filter(|s| s.kind() == "expression_statement") else {
                    continue;
                };
                let scope = stmt
                    .parent()
                    .map(|b| (b.kind(), b.parent().map(|c| c.kind())));
                let name = text(left, src);
                match scope {
                    Some(("module", _)) => {
                        module_constants.entry(i).or_default().insert(name);
                        attributes.insert(name);
                    }
                    Some(("block", Some("class_definition"))) => {
                        attributes.insert(name);
                    }
                    _ => {}
                }
            }
        }
        let names = import_aliases(files, &attributes);
        Method {
            files,
            method,
            module_constants,
            attributes,
            names,
            local: RefCell::default(),
        }
    }

    /// Whether a file's text may name the method (a literal test before its tree is read).
    pub fn may_be_named_in(&self, text: &str) -> bool {
        text.contains(self.method) || self.names.iter().any(|a| mentions_word(text, a))
    }

    /// The names file `i` binds to the method at module level: its constants and what it
    /// imports from a module of the tree under which the method is bound there.
    fn local_names(&self, i: usize, depth: usize) -> HashSet<String> {
        if let Some(known) = self.local.borrow().get(&i) {
            return known.clone();
        }
        let mut names: HashSet<String> = self
            .module_constants
            .get(&i)
            .map(|s| s.iter().map(|n| n.to_string()).collect())
            .unwrap_or_default();
        let src = self.files[i].file.text.as_ref();
        if depth < 4 && self.names.iter().any(|a| mentions_word(src, a)) {
            for imp in descendants(self.files[i].tree().root_node(), "import_from_statement") {
                for (orig, local) in imported_names(imp, src) {
                    if self.names.contains(orig)
                        && imported_from(self.files, i, local)
                            .into_iter()
                            .any(|(t, o)| self.local_names(t, depth + 1).contains(&o))
                    {
                        names.insert(local.to_string());
                    }
                }
            }
        }
        self.local.borrow_mut().insert(i, names.clone());
        names
    }

    /// Whether a node of file `i` names the method.
    pub fn named_by(&self, i: usize, node: Node) -> bool {
        let src = self.files[i].file.text.as_ref();
        match node.kind() {
            "string" => string_value(node, src) == Some(self.method),
            "identifier" => self.local_names(i, 0).contains(text(node, src)),
            "attribute" => node
                .child_by_field_name("attribute")
                .is_some_and(|a| self.attributes.contains(text(a, src))),
            // a value pattern of `match`: `case protocol.SESSION_PROMPT:`
            "dotted_name" => {
                let parts = named_children(node);
                parts.len() > 1
                    && parts
                        .last()
                        .is_some_and(|a| self.attributes.contains(text(*a, src)))
            }
            _ => false,
        }
    }

    /// Every node of file `i` that names the method (not a constant's own definition, not the
    /// name half of an attribute).
    pub fn mentions(&self, i: usize) -> Vec<Node<'a>> {
        let p = &self.files[i];
        if !is_agent_file(p) || !self.may_be_named_in(&p.file.text) {
            return Vec::new();
        }
        let root = p.tree().root_node();
        let mut out = Vec::new();
        walk(root, &mut |n| {
            let inside_attribute = n.parent().is_some_and(|a| {
                a.kind() == "attribute" && a.child_by_field_name("attribute") == Some(n)
            });
            let defined = n.parent().is_some_and(|a| {
                a.kind() == "assignment" && a.child_by_field_name("left") == Some(n)
            });
            if matches!(
                n.kind(),
                "string" | "identifier" | "attribute" | "dotted_name"
            ) && !inside_attribute
                && !defined
                && self.named_by(i, n)
            {
                out.push(n);
                return false;
            }
            !matches!(n.kind(), "import_from_statement" | "import_statement")
        });
        out
    }
}

/// The constants' names and every name an agent file imports one of them as, followed through
/// re-exports (`from .names import PROMPT as PROMPT_METHOD` in a package's `__init__`).
fn import_aliases<'a>(files: &'a [Parsed], constants: &HashSet<&'a str>) -> HashSet<&'a str> {
    let mut names = constants.clone();
    for _ in 0..4 {
        let mut added = false;
        for p in files.iter().filter(|p| is_agent_file(p)) {
            let src = p.file.text.as_ref();
            if !names.iter().any(|n| mentions_word(src, n)) {
                continue;
            }
            for imp in descendants(p.tree().root_node(), "import_from_statement") {
                for (orig, local) in imported_names(imp, src) {
                    if names.contains(orig) && names.insert(local) {
                        added = true;
                    }
                }
            }
        }
        if !added {
            break;
        }
    }
    names
}
