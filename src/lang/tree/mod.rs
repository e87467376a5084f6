//! Language-neutral helpers over any tree-sitter tree (shared by every language module), and
//! the cache of every parse of a run (`cache`).

pub(crate) mod cache;
pub mod flow;
mod nodes;
pub mod query;

pub use nodes::*;

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

/// One cursor pass: `named_child(i)` scans from the first child, so a loop of it (like
/// one of `prev_sibling`) is quadratic in the number of children.
pub fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// The siblings before `node` (named or not), nearest first, in one pass over the parent.
pub fn preceding_siblings(node: Node) -> Vec<Node> {
    let Some(parent) = node.parent() else {
        return Vec::new();
    };
    let mut cursor = parent.walk();
    let mut before: Vec<Node> = parent
        .children(&mut cursor)
        .take_while(|n| *n != node)
        .collect();
    before.reverse();
    before
}

/// The siblings after `node` (named or not), nearest first, in one pass over the parent.
pub fn following_siblings(node: Node) -> Vec<Node> {
    let Some(parent) = node.parent() else {
        return Vec::new();
    };
    let mut cursor = parent.walk();
    parent
        .children(&mut cursor)
        .skip_while(|n| *n != node)
        .skip(1)
        .collect()
}

/// Pre-order walk; `f` returns whether to descend into the node. Iterative (one tree
/// cursor, no recursion), so a deeply nested file cannot overflow the stack.
pub fn walk<'t>(node: Node<'t>, f: &mut dyn FnMut(Node<'t>) -> bool) {
    let mut cursor = node.walk();
    let mut descend = f(node);
    loop {
        if descend && cursor.goto_first_child() {
            descend = f(cursor.node());
            continue;
        }
        // no (wanted) children: the next sibling, else climb until one has a next sibling
        loop {
            if cursor.node() == node {
                return;
            }
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
        descend = f(cursor.node());
    }
}

/// Every descendant (and the node itself) of a kind.
pub fn descendants<'t>(node: Node<'t>, kind: &str) -> Vec<Node<'t>> {
    if let Some(found) = crate::lang::tree::cache::descendants_of_root(node, kind) {
        return found;
    }
    let mut out = Vec::new();
    let names = [kind];
    let mut kinds = Kinds::new(&names);
    walk(node, &mut |n| {
        if kinds.of(n).is_some() {
            out.push(n);
        }
        true
    });
    out
}

/// Which of some kind names a node has, learnt once per kind id: a walk then compares a
/// number per node, not a name (a node's name is looked up from its id, so the two agree).
pub struct Kinds<'k> {
    names: &'k [&'k str],
    /// kind id → 0: not learnt yet, 1: none of the names, i + 2: `names[i]`.
    learnt: Vec<u8>,
}

impl<'k> Kinds<'k> {
    pub fn new(names: &'k [&'k str]) -> Self {
        Kinds {
            names,
            learnt: Vec::new(),
        }
    }

    /// The index in the names of the node's kind, if it is one of them.
    pub fn of(&mut self, n: Node) -> Option<usize> {
        let id = n.kind_id() as usize;
        let find = |names: &[&str]| names.iter().position(|k| *k == n.kind());
        if id >= 4096 {
            return find(self.names); // the error symbol's id: rare, not learnt
        }
        if id >= self.learnt.len() {
            self.learnt.resize(id + 1, 0);
        }
        if self.learnt[id] == 0 {
            self.learnt[id] = find(self.names).map_or(1, |i| i as u8 + 2);
        }
        match self.learnt[id] {
            1 => None,
            v => Some(v as usize - 2),
        }
    }
}

pub fn text<'a>(node: Node, src: &'a str) -> &'a str {
    &src[node.byte_range()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ts(src: &str) -> Tree {
        let mut p = tree_sitter::Parser::new();
        p.set_language(&tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into())
            .unwrap();
        p.parse(src, None).unwrap()
    }

    #[test]
    fn walk_visits_in_pre_order_and_honours_skips() {
        let tree = parse_ts("f(a, g(b)); h(c);");
        let mut seen = Vec::new();
        walk(tree.root_node(), &mut |n| {
            if n.is_named() {
                seen.push(n.kind().to_string());
            }
            n.kind() != "arguments"
        });
        assert_eq!(
            seen,
            [
                "program",
                "expression_statement",
                "call_expression",
                "identifier",
                "arguments",
                "expression_statement",
                "call_expression",
                "identifier",
                "arguments"
            ]
        );
        // a walk of a subtree stays inside it
        let first = tree.root_node().named_child(0).unwrap();
        assert_eq!(descendants(first, "identifier").len(), 4);
    }

    #[test]
    fn deep_nesting_does_not_overflow_the_stack() {
        let n = 200_000;
        let src = format!("x = {}{};", "[".repeat(n), "]".repeat(n));
        let tree = parse_ts(&src);
        assert!(descendants(tree.root_node(), "array").len() >= n);
        assert!(first_error(&tree).is_none());
    }
}
