//! Language-neutral helpers over any tree-sitter tree (shared by every language module).

use tree_sitter::{Node, Tree};

/// The first ERROR or MISSING node: (0-based byte offset, message).
pub fn first_error(tree: &Tree) -> Option<(usize, String)> {
    let root = tree.root_node();
    if !root.has_error() {
        return None;
    }
    let mut found = None;
    walk(root, &mut |n| {
        if found.is_none() && (n.is_error() || n.is_missing()) {
            let msg = if n.is_missing() {
                format!("missing `{}`", n.kind())
            } else {
                "invalid syntax".to_string()
            };
            found = Some((n.start_byte(), msg));
        }
        found.is_none()
    });
    found.or(Some((0, "invalid syntax".into())))
}

pub fn named_children(node: Node) -> Vec<Node> {
    (0..node.named_child_count())
        .filter_map(|i| node.named_child(i as u32))
        .collect()
}

/// Pre-order walk; `f` returns whether to descend into the node.
pub fn walk<'t>(node: Node<'t>, f: &mut dyn FnMut(Node<'t>) -> bool) {
    if !f(node) {
        return;
    }
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        walk(child, f);
    }
}

/// Every descendant (and the node itself) of a kind.
pub fn descendants<'t>(node: Node<'t>, kind: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    walk(node, &mut |n| {
        if n.kind() == kind {
            out.push(n);
        }
        true
    });
    out
}

pub fn text<'a>(node: Node, src: &'a str) -> &'a str {
    &src[node.byte_range()]
}
