//! The incremental re-parse of a planned text from its cached tree: only what the plan's edits
//! touch is parsed again, and the new tree is cached beside the old one.

use super::{Grammar, cache, text_hash};
use std::sync::Arc;
use tree_sitter::Tree;

/// A change of a text: the bytes `old` of the text before it became `new` (a plan's edits,
/// in order, non-overlapping).
#[derive(Debug, Clone)]
pub struct Change<'a> {
    pub old: std::ops::Range<usize>,
    pub new: &'a str,
}

/// The tree of `new_text`, the text `old_text` after `changes`: the cached one, else an
/// incremental parse from `old_text`'s cached tree (only what the changes touch is parsed
/// again), else `parse(new_text, None)`; cached. `parse` is the language's parser given a
/// previous tree already edited. The cache keeps `new_text` itself, not a copy.
pub fn reparse(
    grammar: Grammar,
    old_text: &str,
    changes: &[Change],
    new_text: &Arc<str>,
    parse: impl FnOnce(&str, Option<&Tree>) -> Tree,
) -> Tree {
    let key = text_hash(grammar, new_text);
    let old = {
        let c = cache().lock().expect("no poison");
        if let Some(tree) = c.get(&key, new_text) {
            return tree;
        }
        c.get(&text_hash(grammar, old_text), old_text)
    };
    let tree = match old {
        Some(mut old) => {
            for edit in input_edits(old_text, changes) {
                old.edit(&edit);
            }
            parse(new_text, Some(&old))
        }
        None => parse(new_text, None),
    };
    let mut c = cache().lock().expect("no poison");
    if let Some(tree) = c.get(&key, new_text) {
        return tree; // another thread parsed it meanwhile
    }
    c.insert(key, new_text.clone(), &tree);
    tree
}

/// tree-sitter's edits for `changes` of `old_text`, last first: each is then told in the
/// coordinates of the text as the edits before it leave it (what precedes a change never
/// moves).
///
/// A change that starts in the whitespace between two nodes is told as starting at the last
/// byte before that whitespace (a byte that stays as it is): an edit starting there changes
/// the node the whitespace precedes, and tree-sitter then parses that node again whole (a
/// helper inserted above a 2,000-line Python function cost as much as a fresh parse of its
/// module, 22 ms; told this way, 1 ms, with the same tree).
fn input_edits(old_text: &str, changes: &[Change]) -> Vec<tree_sitter::InputEdit> {
    let point = |offset: usize| {
        let before = &old_text.as_bytes()[..offset];
        let row = memchr::memchr_iter(b'\n', before).count();
        let column = offset - memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
        tree_sitter::Point { row, column }
    };
    let mut sorted: Vec<&Change> = changes.iter().collect();
    sorted.sort_by_key(|c| c.old.start);
    // where each edit starts: never before the end of the change ahead of it
    let mut starts = Vec::with_capacity(sorted.len());
    let mut floor = 0;
    for c in &sorted {
        starts.push(edit_start(old_text.as_bytes(), c.old.start, floor));
        floor = c.old.end;
    }
    sorted
        .iter()
        .zip(starts)
        .rev()
        .map(|(c, from)| {
            let at = point(c.old.start);
            let rows = memchr::memchr_iter(b'\n', c.new.as_bytes()).count();
            let column = match memchr::memrchr(b'\n', c.new.as_bytes()) {
                Some(i) => c.new.len() - i - 1,
                None => at.column + c.new.len(),
            };
            tree_sitter::InputEdit {
                start_byte: from,
                old_end_byte: c.old.end,
                new_end_byte: c.old.start + c.new.len(),
                start_position: point(from),
                old_end_position: point(c.old.end),
                new_end_position: tree_sitter::Point {
                    row: at.row + rows,
                    column,
                },
            }
        })
        .collect()
}

/// Where the edit of a change at `start` begins: the last byte before the whitespace `start`
/// is in, when there is one at or after `floor`; else `start`.
fn edit_start(text: &[u8], start: usize, floor: usize) -> usize {
    let mut at = start;
    while at > floor && text[at - 1].is_ascii_whitespace() {
        at -= 1;
    }
    match at {
        _ if at == start => start,
        0 => start,
        _ if at - 1 < floor => start,
        _ => at - 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_in_the_whitespace_between_nodes_starts_at_the_byte_before_it() {
        let text = b"    return sp\n\n\ndef f():\n";
        let def = text.iter().position(|&b| b == b'd').unwrap();
        let p = def - 4; // the `p` of `sp`
        assert_eq!(edit_start(text, def, 0), p);
        assert_eq!(
            edit_start(text, def - 1, 0),
            p,
            "from inside the blank lines"
        );
        assert_eq!(
            edit_start(text, p + 1, 0),
            p + 1,
            "right after a token: as it is"
        );
        assert_eq!(edit_start(text, p, 0), p, "inside a token: as it is");
        assert_eq!(
            edit_start(text, def, p + 1),
            def,
            "never into the change ahead"
        );
        assert_eq!(edit_start(text, def, p), p);
        assert_eq!(
            edit_start(b"\n\ndef f(): pass\n", 2, 0),
            2,
            "only whitespace before it"
        );
        assert_eq!(edit_start(b"", 0, 0), 0);
    }

    #[test]
    fn helpers_inserted_above_a_function_give_the_tree_a_fresh_parse_gives() {
        // the shape that made an incremental parse cost a whole one: a module-level insertion
        // in the blank lines above a function, another inside it, one at the very start
        let old = "import acp\n\n\ndef g():\n    return sp\n\n\ndef run(a):\n    x = 1\n    if a:\n        y = 2\n    return x\n";
        let above = old.find("def run").unwrap();
        let inside = old.find("    if a").unwrap();
        let changes = [
            (0..0, "import acp_progress\n".to_string()),
            (above..above, "def _hook():\n    return 1\n\n\n".to_string()),
            (inside..inside, "    _hook()\n".to_string()),
        ];
        let mut new = old.to_string();
        for (range, text) in changes.iter().rev() {
            new.replace_range(range.clone(), text);
        }
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_python::LANGUAGE.into())
            .unwrap();
        let fresh = parser.parse(&new, None).unwrap();
        crate::lang::python::syntax::parse(old);
        let tree = crate::lang::python::syntax::reparse(old, &changes, &new.as_str().into());
        assert_eq!(tree.root_node().to_sexp(), fresh.root_node().to_sexp());
        let ranges = |t: &Tree| -> Vec<(String, std::ops::Range<usize>, tree_sitter::Point)> {
            let mut all = Vec::new();
            crate::lang::tree::walk(t.root_node(), &mut |n| {
                all.push((n.kind().to_string(), n.byte_range(), n.start_position()));
                true
            });
            all
        };
        assert_eq!(ranges(&tree), ranges(&fresh));
    }
}
