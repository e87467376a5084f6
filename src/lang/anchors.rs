//! The four anchors the ACP protocol fixes in every agent, in one vocabulary for every
//! language (see `agent-shapes.md`): the prompt handler the SDK calls ([`PromptHandler`]),
//! each call that puts a session update on the wire ([`SendSite`]), the connection those
//! calls are made on ([`Connection`]) and where a turn ends ([`TurnEnd`]). Each holds a typed
//! location ([`Site`]) and, where `acp-patch.toml` can pin it, the name a pin uses.
//!
//! A language finds its anchors with its own parser and keeps what only it needs (tree-sitter
//! nodes, `syn` spans, styles) in a field beside the shared part.

use crate::error::{Candidate, Location};
use crate::source::SourceFile;
use std::ops::Range;

/// Where an anchor is: a file of the tree (its index among the files a language read), the
/// anchor's bytes in that file's text, and the 1-based line its first byte is on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Site {
    pub file: usize,
    pub range: Range<usize>,
    pub line: usize,
}

impl Site {
    /// The site of `range` in `source` (file `file` of the tree): its line is counted from
    /// the text, so it is always the line of `range.start`.
    pub fn new(file: usize, source: &SourceFile, range: Range<usize>) -> Site {
        Site {
            file,
            line: source.line_of(range.start),
            range,
        }
    }

    /// The site of a tree-sitter node of file `file`: tree-sitter counts rows by `\n` as
    /// [`SourceFile::line_of`] does, so its row is the same line, without a scan of the text.
    pub fn of_node(file: usize, node: tree_sitter::Node) -> Site {
        Site {
            file,
            range: node.byte_range(),
            line: node.start_position().row + 1,
        }
    }

    /// `file:line`, the file named by its path relative to the root (`rel`).
    pub fn location(&self, rel: &str) -> Location {
        Location {
            file: rel.to_string(),
            line: self.line,
        }
    }
}

/// What a pin names: `file:name`, as `acp-patch.toml` writes it (`name` in the language's
/// spelling, e.g. `Agent.prompt`, `StreamAgent::prompt`).
pub fn pin_value(rel: &str, name: &str) -> String {
    format!("{rel}:{name}")
}

/// The prompt handler the SDK calls for `session/prompt` (anchor 1): where a turn begins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptHandler {
    pub site: Site,
    /// What a `prompt` pin names in the handler's file: `Class.method`, a function's name,
    /// `Type::prompt`, `serve::closure#1`.
    pub name: String,
}

impl PromptHandler {
    /// The handler as a candidate of the `prompt` site (`file:line`, its pin name), `rel`
    /// its file's path.
    pub fn candidate(&self, rel: &str) -> Candidate {
        Candidate {
            location: self.site.location(rel),
            name: self.name.clone(),
        }
    }
}

/// One call that puts a session update on the wire (anchor 2): an SDK send, or a JSON-RPC
/// `session/update` message handed to the agent's own writer. Sends are not pinned one by one:
/// every one is wrapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendSite {
    pub site: Site,
    /// The emitter already wraps it (a patched tree).
    pub wrapped: bool,
}

/// The connection the start card goes out on (anchor 3), where the handler can read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connection {
    pub site: Site,
    /// The expression the handler reads it with (`self._conn`, `this.client`, `&cx`), or for
    /// an agent without an SDK the card's writer built from the agent's own.
    pub text: String,
    /// What a `connection` pin names (`Agent._conn`), when it can be pinned.
    pub pin: Option<String>,
}

/// Where a turn ends (anchor 4): the handler's return or a response to the prompt request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnEnd {
    pub site: Site,
    /// The turn end already stands there (a patched tree).
    pub wrapped: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> SourceFile {
        SourceFile::decode("a.py".into(), "a.py".into(), text.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn a_site_is_on_the_line_of_its_first_byte() {
        let f = source("a = 1\n\nconn.session_update(x)\n");
        let at = f.text.find("conn").unwrap();
        let s = Site::new(3, &f, at..at + 4);
        assert_eq!((s.file, s.line, s.range.clone()), (3, 3, 7..11));
        assert_eq!(s.location("pkg/a.py").to_string(), "pkg/a.py:3");
        assert_eq!(
            pin_value("pkg/a.py", "Agent.prompt"),
            "pkg/a.py:Agent.prompt"
        );
    }

    #[test]
    fn a_node_site_has_the_line_the_text_gives() {
        let text =
            "class A:\r\n    async def prompt(self):\r\n        await conn.session_update(1)\n";
        let f = source(text);
        let mut parser = tree_sitter::Parser::new();
        parser
            .set_language(&tree_sitter_python::LANGUAGE.into())
            .unwrap();
        let tree = parser.parse(f.text.as_bytes(), None).unwrap();
        let mut all = Vec::new();
        crate::lang::tree::walk(tree.root_node(), &mut |n| {
            all.push(n);
            true
        });
        for n in all {
            assert_eq!(Site::of_node(0, n), Site::new(0, &f, n.byte_range()));
        }
    }
}
