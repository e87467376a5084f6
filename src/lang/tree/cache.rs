//! Every tree-sitter parse of a run, kept for the run: apply and verify analyse the same
//! files several times (the plan, verify's report, revert's inventory, the tree as the plan
//! leaves it, the start-up check), and each text is parsed once. A tree is keyed by its
//! grammar and its whole text (a hit compares the text), so a copy of a file (the planned
//! tree verify re-reads from a temporary folder) is a hit too.
//!
//! The kind searches over a whole cached tree ([`descendants_of_root`]) are kept as well:
//! the analyses ask each file for its calls, classes and imports again and again.

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};
use tree_sitter::{Node, Tree};

mod reparse;
pub use reparse::{Change, reparse};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Grammar {
    Python,
    TypeScript,
    Tsx,
}

struct Entry {
    /// The file's own text where the caller shares it (no copy), else a copy.
    text: Arc<str>,
    tree: Tree,
}

#[derive(Default)]
struct Cache {
    /// (grammar, hash of the text) → entries with that hash.
    by_text: HashMap<(Grammar, u64), Vec<Arc<Entry>>>,
    /// The id of a cached tree's root's first child → the cached trees with that first child,
    /// each with its [`RootKey`]. Children live in the tree's shared subtree memory (every copy
    /// of the tree has the same ids) and cached trees are never freed, so an id is never
    /// reused for another tree during the run; an incremental parse shares the subtrees its
    /// edits left alone, so two trees may share a first child, never all their children.
    roots: HashMap<usize, Vec<(RootKey, Arc<Entry>)>>,
    /// root key → kind → the nodes of that kind, in pre-order, from the cached tree.
    kinds: HashMap<RootKey, HashMap<Box<str>, Arc<Vec<Node<'static>>>>>,
    /// Texts a thread is parsing now: another thread that wants one waits for it ([`PARSED`])
    /// instead of parsing it a second time.
    parsing: std::collections::HashSet<(Grammar, u64)>,
}

/// Woken whenever a parse in [`Cache::parsing`] ends.
static PARSED: std::sync::Condvar = std::sync::Condvar::new();

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn text_hash(grammar: Grammar, text: &str) -> (Grammar, u64) {
    let mut h = DefaultHasher::new();
    text.hash(&mut h);
    (grammar, h.finish())
}

/// A cached tree's root, told apart from every other tree's: the ids of all its children.
/// Two trees with the same children are the same tree (same nodes at the same bytes), so
/// they may share answers; a tree an incremental parse made from another differs in the
/// children its edits touched.
type RootKey = u64;

/// The id of the node's first child, to find candidate roots by, and the node's [`RootKey`].
fn root_key(node: Node) -> Option<(usize, RootKey)> {
    let first = node.child(0)?.id();
    let mut h = DefaultHasher::new();
    let mut cursor = node.walk();
    for child in node.children(&mut cursor) {
        child.id().hash(&mut h);
    }
    Some((first, h.finish()))
}

/// The first child's id alone, to rule out a node no cached tree has as its root cheaply.
fn first_child_id(node: Node) -> Option<usize> {
    node.child(0).map(|c| c.id())
}

/// The tree of `text` in `grammar`: the cached one (a cheap copy), else `parse(text)`,
/// cached.
pub fn parse(grammar: Grammar, text: &str, parse: impl FnOnce(&str) -> Tree) -> Tree {
    parse_kept(grammar, text, || Arc::from(text), parse)
}

/// [`parse`] of a text the caller shares: the cache keeps that text, not a copy of it.
pub fn parse_shared(grammar: Grammar, text: &Arc<str>, parse: impl FnOnce(&str) -> Tree) -> Tree {
    parse_kept(grammar, text, || text.clone(), parse)
}

fn parse_kept(
    grammar: Grammar,
    text: &str,
    kept: impl FnOnce() -> Arc<str>,
    parse: impl FnOnce(&str) -> Tree,
) -> Tree {
    let key = text_hash(grammar, text);
    {
        let mut c = cache().lock().expect("no poison");
        loop {
            if let Some(tree) = c.get(&key, text) {
                return tree;
            }
            if !c.parsing.contains(&key) {
                break;
            }
            // being parsed on another thread (or a text with the same hash: parsed here
            // once that one is done)
            c = PARSED.wait(c).expect("no poison");
        }
        c.parsing.insert(key);
    }
    // the waiters are woken once the tree is in the cache (or the parse panicked)
    let _parsing = Parsing(key);
    let tree = parse(text);
    let mut c = cache().lock().expect("no poison");
    if let Some(tree) = c.get(&key, text) {
        return tree; // another thread parsed it meanwhile
    }
    c.insert(key, kept(), &tree);
    drop(c);
    tree
}

/// A text being parsed on this thread: when the parse ends (or panics), other threads
/// waiting for it are woken.
struct Parsing((Grammar, u64));

impl Drop for Parsing {
    fn drop(&mut self) {
        let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
        c.parsing.remove(&self.0);
        PARSED.notify_all();
    }
}

impl Cache {
    fn get(&self, key: &(Grammar, u64), text: &str) -> Option<Tree> {
        self.by_text
            .get(key)
            .and_then(|list| list.iter().find(|e| &*e.text == text))
            .map(|e| e.tree.clone())
    }

    fn insert(&mut self, key: (Grammar, u64), text: Arc<str>, tree: &Tree) {
        let entry = Arc::new(Entry {
            text,
            tree: tree.clone(),
        });
        if let Some((first, k)) = root_key(entry.tree.root_node()) {
            let same_first = self.roots.entry(first).or_default();
            // the same children again (another text parsed to the same tree): the first stays
            if !same_first.iter().any(|(other, _)| *other == k) {
                same_first.push((k, entry.clone()));
            }
        }
        self.by_text.entry(key).or_default().push(entry);
    }
}

/// Parses every text not cached yet, on all cores (the trees are then cache hits).
pub fn prefetch(grammar: Grammar, texts: &[&Arc<str>], parse: fn(&str) -> Tree) {
    let missing: Vec<&Arc<str>> = {
        let c = cache().lock().expect("no poison");
        texts
            .iter()
            .copied()
            .filter(|t| {
                !c.by_text
                    .get(&text_hash(grammar, t))
                    .is_some_and(|list| list.iter().any(|e| *e.text == ***t))
            })
            .collect()
    };
    if cores().min(missing.len()) < 2 {
        return; // parsed on demand
    }
    on_all_cores(&missing, |text| {
        index(parse_shared(grammar, text, parse).root_node());
    });
}

/// Gathers the kinds every analysis asks a file for ([`INDEXED`]) from a cached tree now, on
/// the calling thread: the threads that parse side by side do it beside the parse, and the
/// analysis, which runs on one thread, finds them ready.
pub fn index(root: Node) {
    let _ = descendants_of_root(root, INDEXED[0]);
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `f` of every item, on all cores: each thread takes the next item not taken yet, so the
/// first items (put the longest first) start first.
pub fn on_all_cores<T: Sync>(items: &[T], f: impl Fn(&T) + Sync) {
    let threads = cores().min(items.len());
    if threads < 2 {
        items.iter().for_each(f);
        return;
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    f(item);
                }
            });
        }
    });
}

/// Kinds the analyses ask every file for: the first question about any of them gathers
/// all of them in one walk.
const INDEXED: &[&str] = &[
    "call",
    "class_definition",
    "function_definition",
    "import_statement",
    "import_from_statement",
    "call_expression",
    "new_expression",
    "variable_declarator",
    "class_declaration",
    "abstract_class_declaration",
    "export_statement",
    "member_expression",
];

/// Every node of `kind` below (and not counting) the root `node` of a cached tree, in
/// pre-order, as [`crate::lang::tree::descendants`] finds them; `None` when `node` is not
/// the root of a cached tree.
pub fn descendants_of_root<'t>(node: Node<'t>, kind: &str) -> Option<Vec<Node<'t>>> {
    let first = first_child_id(node)?;
    let entry = {
        let c = cache().lock().expect("no poison");
        let candidates = c.roots.get(&first)?;
        // one tree with that first child (no re-parse of it): that one, as cheap as the
        // first child's id (the byte range is checked below); several (a file and its
        // planned text): told apart by all the children, read only then
        let (key, entry) = match candidates.as_slice() {
            [(key, entry)] => (*key, entry.clone()),
            _ => {
                let (_, key) = root_key(node)?;
                let (_, entry) = candidates.iter().find(|(k, _)| *k == key)?;
                (key, entry.clone())
            }
        };
        if let Some(found) = c.kinds.get(&key).and_then(|k| k.get(kind)) {
            return Some(found.iter().copied().collect());
        }
        (key, entry)
    };
    let (key, entry) = entry;
    let root = entry.tree.root_node();
    if root.kind() == kind || root.byte_range() != node.byte_range() {
        return None; // the root itself (its id differs per copy), or not this tree's root
    }
    let wanted: Vec<&str> = if INDEXED.contains(&kind) {
        INDEXED
            .iter()
            .copied()
            .filter(|k| *k != root.kind())
            .collect()
    } else {
        vec![kind]
    };
    // kind id → slot in `found`, learnt from each id's name as the walk meets it
    let mut slot_of = crate::lang::tree::Kinds::new(&wanted);
    let mut found: Vec<Vec<Node<'static>>> = vec![Vec::new(); wanted.len()];
    crate::lang::tree::walk(root, &mut |n| {
        if let Some(slot) = slot_of.of(n) {
            // SAFETY: the node points into `entry.tree`, which the cache holds (and never
            // frees) for the rest of the run
            found[slot].push(unsafe { std::mem::transmute::<Node<'_>, Node<'static>>(n) });
        }
        true
    });
    let mut c = cache().lock().expect("no poison");
    let kinds = c.kinds.entry(key).or_default();
    let mut out = None;
    for (k, nodes) in wanted.iter().zip(found) {
        let nodes = Arc::new(nodes);
        if *k == kind {
            out = Some(nodes.iter().copied().collect());
        }
        kinds.entry((*k).into()).or_insert(nodes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walked<'t>(root: Node<'t>, kind: &str) -> Vec<Node<'t>> {
        let mut out = Vec::new();
        crate::lang::tree::walk(root, &mut |n| {
            if n.kind() == kind {
                out.push(n);
            }
            true
        });
        out
    }

    /// Threads that want the same text while it is being parsed wait for that parse: the
    /// text is parsed once.
    #[test]
    fn a_text_being_parsed_is_waited_for_not_parsed_again() {
        let src = "def waited_for(a):\n    return a\n";
        let parses = std::sync::atomic::AtomicUsize::new(0);
        let slow = |text: &str| {
            parses.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&tree_sitter_python::LANGUAGE.into())
                .unwrap();
            parser.parse(text, None).unwrap()
        };
        let trees: Vec<String> = std::thread::scope(|s| {
            let all: Vec<_> = (0..4)
                .map(|_| s.spawn(|| parse(Grammar::Python, src, slow).root_node().to_sexp()))
                .collect();
            all.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(parses.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert!(trees.iter().all(|t| *t == trees[0]));
    }

    #[test]
    fn a_cached_tree_answers_as_a_fresh_walk_of_its_copy() {
        let src = "import acp\nclass A(acp.Agent):\n    async def prompt(self, p):\n        f(g(1), h())\n        class B: pass\n";
        let a = crate::lang::python::syntax::parse(src);
        let b = crate::lang::python::syntax::parse(src);
        assert_eq!(a.root_node().to_sexp(), b.root_node().to_sexp());
        for kind in [
            "call",
            "class_definition",
            "identifier",
            "import_statement",
            "module",
        ] {
            let want = walked(b.root_node(), kind);
            let got = crate::lang::tree::descendants(b.root_node(), kind);
            assert_eq!(got, want, "{kind}");
            assert_eq!(
                got.iter().map(|n| n.byte_range()).collect::<Vec<_>>(),
                want.iter().map(|n| n.byte_range()).collect::<Vec<_>>()
            );
            // asked again, of the other copy: the kept answer
            assert_eq!(
                crate::lang::tree::descendants(a.root_node(), kind)
                    .iter()
                    .map(|n| (n.kind(), n.byte_range()))
                    .collect::<Vec<_>>(),
                want.iter()
                    .map(|n| (n.kind(), n.byte_range()))
                    .collect::<Vec<_>>()
            );
        }
        // a subtree is walked, never answered from the cache
        let class = walked(a.root_node(), "class_definition")[0];
        assert_eq!(
            crate::lang::tree::descendants(class, "call"),
            walked(class, "call")
        );
    }

    #[test]
    fn trees_parsed_apart_are_not_confused() {
        let one = crate::lang::python::syntax::parse("f(1)\n");
        let mut p = tree_sitter::Parser::new();
        p.set_language(&tree_sitter_python::LANGUAGE.into())
            .unwrap();
        let other = p.parse("g(2)\nh(3)\n", None).unwrap();
        assert_eq!(
            crate::lang::tree::descendants(one.root_node(), "call").len(),
            1
        );
        assert_eq!(
            crate::lang::tree::descendants(other.root_node(), "call").len(),
            2
        );
    }

    #[test]
    fn an_incremental_parse_gives_the_tree_a_fresh_parse_gives() {
        let old = "import acp\n\nclass A(acp.Agent):\n    async def prompt(self, p):\n        await self.conn.session_update(p)\n        return 1\n";
        let plain = |t: &str| {
            let mut parser = tree_sitter::Parser::new();
            parser
                .set_language(&tree_sitter_python::LANGUAGE.into())
                .unwrap();
            parser.parse(t, None).unwrap()
        };
        let changes = [
            (0..0, "import acp_progress  # inserted\n".to_string()),
            (56..56, "\n        acp_progress.start()\n".to_string()),
            (old.len() - 9..old.len() - 1, "return 2 + 3".to_string()),
        ];
        let mut new = old.to_string();
        for (range, text) in changes.iter().rev() {
            new.replace_range(range.clone(), text);
        }
        crate::lang::python::syntax::parse(old);
        let tree = crate::lang::python::syntax::reparse(old, &changes, &new.as_str().into());
        assert_eq!(
            tree.root_node().to_sexp(),
            plain(&new).root_node().to_sexp()
        );
        assert_eq!(tree.root_node().end_byte(), new.len());
        // the two trees share the subtrees the edits left alone: each still answers for
        // itself, from its own kept index (not a walk per question)
        let before = crate::lang::python::syntax::parse(old);
        for (root, text) in [(before.root_node(), old), (tree.root_node(), new.as_str())] {
            for kind in ["call", "class_definition", "function_definition"] {
                let want: Vec<_> = walked(root, kind).iter().map(|n| n.byte_range()).collect();
                let got: Vec<_> = crate::lang::tree::descendants(root, kind)
                    .iter()
                    .map(|n| n.byte_range())
                    .collect();
                assert_eq!(got, want, "{kind} in {text:?}");
            }
        }
    }

    #[test]
    fn trees_sharing_their_first_statement_each_keep_their_own_index() {
        // an edit below the first statement: the two trees share the root's first child
        let old = "import acp\n\ndef f():\n    g(1)\n";
        let at = old.find("g(1)").unwrap();
        let changes = [(at..at, "h()\n    ".to_string())];
        let mut new = old.to_string();
        new.insert_str(at, &changes[0].1);
        let before = crate::lang::python::syntax::parse(old);
        let after = crate::lang::python::syntax::reparse(old, &changes, &new.as_str().into());
        assert_eq!(
            before.root_node().child(0).map(|c| c.id()),
            after.root_node().child(0).map(|c| c.id()),
            "the edit was meant to leave the first statement shared"
        );
        for (root, calls) in [(before.root_node(), 1), (after.root_node(), 2)] {
            let kept = descendants_of_root(root, "call").expect("answered from the index");
            assert_eq!(kept.len(), calls);
            assert_eq!(
                kept.iter().map(|n| n.byte_range()).collect::<Vec<_>>(),
                walked(root, "call")
                    .iter()
                    .map(|n| n.byte_range())
                    .collect::<Vec<_>>()
            );
        }
    }
}
