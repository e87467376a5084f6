//! Node helpers every tree-sitter language asks the same question with: its line, its name,
//! the nearest ancestor of a kind, the statement holding it, whether it stands on its own
//! line. A language's `syntax.rs` names its grammar's kinds and calls these.

use super::{named_children, preceding_siblings, text};
use crate::source::line_start;
use tree_sitter::Node;

/// The 1-based line a node starts on.
pub fn line(n: Node) -> usize {
    n.start_position().row + 1
}

/// The text of a node's `name` field (empty when it has none); a JavaScript class expression
/// a declaration or an assignment binds (`var Agent = class { ... }`, what bundlers emit, or
/// `Agent = class A { ... }` in esbuild's lazily initialised modules) is named by it.
pub fn name_of<'a>(node: Node, src: &'a str) -> &'a str {
    if let Some(binding) = class_binding(node) {
        return if binding.kind() == "identifier" {
            text(binding, src)
        } else {
            ""
        };
    }
    node.child_by_field_name("name")
        .map(|n| text(n, src))
        .unwrap_or("")
}

/// What binds a class expression: the name of the `variable_declarator` or the left side of
/// the assignment whose value it is.
pub fn class_binding(node: Node) -> Option<Node> {
    if node.kind() != "class" {
        return None;
    }
    let parent = node.parent()?;
    match parent.kind() {
        "variable_declarator" if parent.child_by_field_name("value") == Some(node) => {
            parent.child_by_field_name("name")
        }
        "assignment_expression" if parent.child_by_field_name("right") == Some(node) => {
            parent.child_by_field_name("left")
        }
        _ => None,
    }
}

/// The nearest ancestor (not the node itself) that `is` holds for.
pub fn ancestor<'t>(node: Node<'t>, is: impl Fn(Node<'t>) -> bool) -> Option<Node<'t>> {
    let mut cur = node.parent();
    while let Some(n) = cur {
        if is(n) {
            return Some(n);
        }
        cur = n.parent();
    }
    None
}

/// The node (or ancestor of it) whose parent `is` holds for — the statement directly in a
/// block, the item directly in the file; the outermost ancestor when none is.
pub fn child_of<'t>(node: Node<'t>, is: impl Fn(Node<'t>) -> bool) -> Node<'t> {
    let mut cur = node;
    while let Some(p) = cur.parent() {
        if is(p) {
            return cur;
        }
        cur = p;
    }
    cur
}

/// The named children of a node, comments skipped.
pub fn named_children_code(node: Node) -> Vec<Node> {
    named_children(node)
        .into_iter()
        .filter(|n| n.kind() != "comment")
        .collect()
}

/// The named children of `node`'s `field` child whose kind `keep` maps to a node (empty when
/// there is no such field).
pub fn field_children<'t>(
    node: Node<'t>,
    field: &str,
    keep: impl Fn(Node<'t>) -> Option<Node<'t>>,
) -> Vec<Node<'t>> {
    node.child_by_field_name(field)
        .map(|b| named_children(b).into_iter().filter_map(keep).collect())
        .unwrap_or_default()
}

/// Whether nothing but white space stands before `node` on its line.
pub fn own_line(src: &str, node: Node) -> bool {
    src[line_start(src, node.start_byte())..node.start_byte()]
        .trim()
        .is_empty()
}

/// Where code inserted before `node` starts: the start of its line, above the comments
/// directly over it (they describe it).
pub fn start_above_comments(src: &str, node: Node) -> usize {
    let mut first = node;
    for c in preceding_siblings(node) {
        let describes = c.kind() == "comment"
            && c.end_position().row + 1 == first.start_position().row
            && own_line(src, c);
        if !describes {
            break;
        }
        first = c;
    }
    line_start(src, first.start_byte())
}
