//! Shape knowledge as data: a tree-sitter query (an `.scm` file beside the locator that uses
//! it, embedded in the binary) and its matches under a node, each read by capture name. A new
//! syntactic shape of an anchor is a pattern added to the query (and a fixture folder), not a
//! hand-written walk.

use tree_sitter::{Language, Node, Query, QueryCursor, StreamingIterator};

/// The query compiled for each grammar of a language (TypeScript has two: `.ts` and `.tsx`),
/// the one of a tree's grammar run on it.
pub struct ShapeQuery {
    queries: Vec<(Language, Query)>,
}

/// One match: the nodes of its captures, by capture index.
pub struct Captures<'q, 't> {
    names: &'q [&'q str],
    nodes: Vec<Option<Node<'t>>>,
}

impl ShapeQuery {
    /// The query `source` in each of a language's grammars. A query that does not compile is
    /// a bug of the binary, caught by the query's own test: it panics with tree-sitter's
    /// message.
    pub fn new(grammars: &[Language], source: &str) -> ShapeQuery {
        let queries = grammars
            .iter()
            .map(|g| {
                let q = Query::new(g, source)
                    .unwrap_or_else(|e| panic!("query does not compile: {e}\n{source}"));
                (g.clone(), q)
            })
            .collect();
        ShapeQuery { queries }
    }

    /// The matches under `node` that reach into the bytes `range`, in the order tree-sitter
    /// gives them (by where they start), their text predicates (`#eq?`, `#any-of?`,
    /// `#match?`) checked against `src`. Tree-sitter skips the subtrees outside `range`: a
    /// locator that knows from a literal scan where its matches can be reads only the nodes
    /// around each place, not a whole long file.
    pub fn matches_in<'t>(
        &self,
        node: Node<'t>,
        src: &str,
        range: std::ops::Range<usize>,
    ) -> Vec<Captures<'_, 't>> {
        let grammar = node.language();
        let Some((_, query)) = self.queries.iter().find(|(g, _)| *g == *grammar) else {
            panic!("the query is not compiled for the grammar of the tree it is run on");
        };
        let names = query.capture_names();
        let mut cursor = QueryCursor::new();
        cursor.set_byte_range(range);
        let mut found = cursor.matches(query, node, src.as_bytes());
        let mut out = Vec::new();
        while let Some(m) = found.next() {
            let mut nodes = vec![None; names.len()];
            for c in m.captures() {
                nodes[c.index as usize] = Some(c.node);
            }
            out.push(Captures { names, nodes });
        }
        out
    }
}

impl<'t> Captures<'_, 't> {
    /// The node captured as `@name`, if the match has it.
    pub fn get(&self, name: &str) -> Option<Node<'t>> {
        let i = self.names.iter().position(|n| *n == name)?;
        self.nodes[i]
    }

    /// The node captured as `@name`, which every match of the query has.
    pub fn node(&self, name: &str) -> Node<'t> {
        self.get(name)
            .unwrap_or_else(|| panic!("every match captures @{name}"))
    }
}
