//! What the Python locators find, shared by the SDK locator (`anchors`), the connection
//! finder (`connection`) and the no-SDK one (`wire`): the handlers, sends and connections of
//! an agent, the runtime module's names, and which files hold agent code.

use super::locate::At;
use super::syntax::*;
use crate::lang::parts::Parsed;
use std::collections::{BTreeMap, HashSet};
use tree_sitter::Node;

/// The first line of the runtime module acp-patch writes; files starting with it are ours.
pub const RUNTIME_MARKER: &str = "# acp-patch: runtime module";
/// The runtime module's file name, and the name agent files import it as.
pub const RUNTIME_FILE: &str = "acp_progress.py";
pub const RUNTIME_NAME: &str = "acp_progress";

/// An agent class the SDK calls, with its handlers.
pub struct Handler<'a> {
    pub class: At<'a>,
    pub class_name: String,
    /// `async def prompt` (own or inherited from a class in the tree).
    pub prompt: At<'a>,
    pub cancel: Option<At<'a>>,
    pub connection: Connection<'a>,
    /// Extra keyword arguments the agent's sends pass with a literal value (`source="x"`).
    pub send_kwargs: Vec<(String, String)>,
}

/// One SDK send of a session update: `<receiver>.session_update(...)`.
pub struct Send<'a> {
    pub call: At<'a>,
    pub receiver: Node<'a>,
    /// Already `acp_progress.emitter(<receiver>)` (`acp_progress.wire(...)`).
    pub wrapped: bool,
    /// A write of the agent's own JSON-RPC message (no SDK): wrapped with `acp_progress.wire`.
    pub wire: bool,
}

pub struct Anchors<'a> {
    pub handlers: Vec<Handler<'a>>,
    pub sends: Vec<Send<'a>>,
}

/// Files that are neither tests nor acp-patch's runtime module: where agent code lives.
pub fn is_agent_file(p: &Parsed) -> bool {
    const TESTS: crate::lang::parts::TestFiles = crate::lang::parts::TestFiles {
        dirs: &["tests", "test", "testing"],
        prefixes: &["test_"],
        suffixes: &["_test.py"],
        infixes: &[],
        names: &["conftest.py"],
    };
    !(TESTS.holds(&p.file.rel) || p.file.text.starts_with(RUNTIME_MARKER))
}

/// Where the card's connection comes from.
#[derive(Clone)]
pub enum Connection<'a> {
    /// `self.<attr>`, assigned from what the SDK hands over (or what the agent's sends use).
    Attribute {
        attr: String,
        at: At<'a>,
        how: &'static str,
    },
    /// `on_connect(self, conn)` keeps it nowhere we can read: bind it there.
    Bind { method: At<'a>, param: String },
    /// No SDK: the agent's own writer of `session/update` messages, as a lambda of the
    /// handler's arguments (`wire=` of the decorator); `at` is the function it is taken from.
    Wire { lambda: String, at: At<'a> },
}

/// Every class definition of the agent's files, by name.
pub(super) struct Classes<'a> {
    pub(super) by_name: BTreeMap<String, Vec<At<'a>>>,
}

impl<'a> Classes<'a> {
    pub(super) fn of(files: &'a [Parsed]) -> Classes<'a> {
        let mut by_name: BTreeMap<String, Vec<At<'a>>> = BTreeMap::new();
        for (i, p) in files.iter().enumerate() {
            if !is_agent_file(p) {
                continue;
            }
            for c in descendants(p.tree.root_node(), "class_definition") {
                by_name
                    .entry(name_of(c, &p.file.text).to_string())
                    .or_default()
                    .push(At { file: i, node: c });
            }
        }
        Classes { by_name }
    }

    /// Classes of this name, the one in `file` first.
    pub(super) fn named(&self, name: &str, file: usize) -> Vec<At<'a>> {
        let mut all = self.by_name.get(name).cloned().unwrap_or_default();
        if all.iter().any(|c| c.file == file) {
            all.retain(|c| c.file == file);
        }
        all
    }

    /// The in-tree classes a class derives from.
    pub(super) fn bases(&self, files: &[Parsed], class: At<'a>) -> Vec<At<'a>> {
        let src = &files[class.file].file.text;
        superclasses(class.node)
            .into_iter()
            .filter_map(|b| {
                let name = base_name(b, src)?;
                Some(self.named(name, class.file))
            })
            .flatten()
            .filter(|b| b.node != class.node)
            .collect()
    }

    /// A method of a class, its own or inherited from a class in the tree.
    pub(super) fn method(&self, files: &[Parsed], class: At<'a>, name: &str) -> Option<At<'a>> {
        let mut seen = HashSet::new();
        let mut queue = vec![class];
        while let Some(c) = queue.pop() {
            if !seen.insert((c.file, c.node.id())) {
                continue;
            }
            let src = &files[c.file].file.text;
            if let Some(m) = methods(c.node)
                .into_iter()
                .find(|m| name_of(*m, src) == name)
            {
                return Some(At {
                    file: c.file,
                    node: m,
                });
            }
            queue.extend(self.bases(files, c).into_iter().rev());
        }
        None
    }
}
