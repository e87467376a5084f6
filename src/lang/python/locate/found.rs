//! What the Python locators find, shared by the SDK locator (`handlers`, `sends`), the
//! connection finder (`connection`) and the no-SDK one (`wire`): the handlers, sends and
//! connections of an agent, and which files hold agent code.

use super::At;
use crate::lang::anchors::{Connection, PromptHandler, SendSite, Site};
use crate::lang::parts::{AgentFiles, Parsed, TestFiles};
use crate::lang::python::syntax::*;
use std::cell::{OnceCell, RefCell};
use std::collections::{HashMap, HashSet};
use tree_sitter::Node;

use crate::lang::python::RUNTIME_MARKER;

/// An agent class the SDK calls, with its handlers.
pub struct Handler<'a> {
    pub class: At<'a>,
    pub class_name: String,
    /// `async def prompt` (own or inherited from a class in the tree): where it is, and its
    /// qualified name (`Agent.prompt`) as a `prompt` pin names it.
    pub anchor: PromptHandler,
    pub prompt: Node<'a>,
    pub cancel: Option<At<'a>>,
    pub connection: Conn<'a>,
    /// Extra keyword arguments the agent's sends pass with a literal value (`source="x"`).
    pub send_kwargs: Vec<(String, String)>,
}

/// One SDK send of a session update: `<receiver>.session_update(...)`.
pub struct Send<'a> {
    /// Where the call is; `wrapped`: already `acp_progress.emitter(<receiver>)`
    /// (`acp_progress.wire(...)`).
    pub anchor: SendSite,
    pub call: Node<'a>,
    pub receiver: Node<'a>,
    /// A write of the agent's own JSON-RPC message (no SDK): wrapped with `acp_progress.wire`.
    pub wire: bool,
}

impl<'a> Handler<'a> {
    /// The prompt handler, with its file.
    pub fn prompt_at(&self) -> At<'a> {
        At {
            file: self.anchor.site.file,
            node: self.prompt,
        }
    }
}

/// The prompt handler anchor of `prompt`: its site and qualified name.
pub fn prompt_anchor(files: &[Parsed], prompt: At) -> PromptHandler {
    PromptHandler {
        site: Site::of_node(prompt.file, prompt.node),
        name: qualified_name(prompt.node, &files[prompt.file].file.text),
    }
}

impl<'a> Send<'a> {
    pub fn new(call: At<'a>, receiver: Node<'a>, wrapped: bool, wire: bool) -> Send<'a> {
        Send {
            anchor: SendSite {
                site: Site::of_node(call.file, call.node),
                wrapped,
            },
            call: call.node,
            receiver,
            wire,
        }
    }

    /// The call, with its file.
    pub fn at(&self) -> At<'a> {
        At {
            file: self.anchor.site.file,
            node: self.call,
        }
    }
}

pub struct Anchors<'a> {
    pub handlers: Vec<Handler<'a>>,
    pub sends: Vec<Send<'a>>,
}

impl Anchors<'_> {
    /// Files the protocol strategy inserts calls of the runtime into, each once, in order.
    pub fn runtime_importers(&self) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for h in &self.handlers {
            out.push(h.anchor.site.file);
            out.extend(h.cancel.map(|c| c.file));
            if let Reach::Bind { .. } = &h.connection.reach {
                out.push(h.connection.at.file);
            }
        }
        out.extend(self.sends.iter().map(|s| s.anchor.site.file));
        out.sort();
        out.dedup();
        out
    }
}

/// Files that are neither tests nor acp-patch's runtime module: where agent code lives.
const AGENT_FILES: AgentFiles = AgentFiles {
    tests: TestFiles {
        dirs: &["tests", "test", "testing"],
        prefixes: &["test_"],
        suffixes: &["_test.py"],
        infixes: &[],
        names: &["conftest.py"],
    },
    runtime_marker: RUNTIME_MARKER,
    foreign: None,
};

pub fn is_agent_file(p: &Parsed) -> bool {
    AGENT_FILES.holds(p)
}

/// The connection the card goes out on (anchor 3): the shared anchor (where it is taken
/// from, the expression the handler reads it with, the name a `connection` pin uses) and how
/// the handler reaches it.
#[derive(Clone)]
pub struct Conn<'a> {
    pub anchor: Connection,
    /// The statement or function it is taken from (the anchor's site, as a node).
    pub at: At<'a>,
    pub reach: Reach,
}

/// How the prompt handler reaches its connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    /// `self.<attr>`, assigned from what the SDK hands over (or what the agent's sends use);
    /// `how` says which.
    Attribute { attr: String, how: &'static str },
    /// `on_connect(self, <param>)` keeps it nowhere the handler can read: bound there (`at`
    /// is the method).
    Bind { param: String },
    /// No SDK: the agent's own writer of `session/update` messages, the anchor's text a
    /// lambda of the handler's arguments (`wire=` of the decorator); `at` is the function it
    /// is taken from.
    Wire,
    /// No send in the tree and nothing of the class keeps the connection: an installed base
    /// class (`base`, as the class names it) holds it and sends every update on it. The runtime
    /// finds it on the agent at the turn's start and relays its sends (`at` is the class).
    Held { base: String },
}

impl<'a> Conn<'a> {
    /// `self.<attr>` of class `class_name`, taken from the statement `at`.
    pub fn attribute(at: At<'a>, class_name: &str, attr: String, how: &'static str) -> Self {
        Conn {
            anchor: Connection {
                site: Site::of_node(at.file, at.node),
                text: format!("self.{attr}"),
                pin: Some(format!("{class_name}.{attr}")),
            },
            at,
            reach: Reach::Attribute { attr, how },
        }
    }

    /// Bound in `on_connect` (`method`) from its parameter `param`.
    pub fn bind(method: At<'a>, class_name: &str, param: String) -> Self {
        Conn {
            anchor: Connection {
                site: Site::of_node(method.file, method.node),
                text: param.clone(),
                pin: Some(format!("{class_name}.on_connect")),
            },
            at: method,
            reach: Reach::Bind { param },
        }
    }

    /// Held by the installed base class `base` of the class `class`.
    pub fn held(class: At<'a>, base: String) -> Self {
        Conn {
            anchor: Connection {
                site: Site::of_node(class.file, class.node),
                text: String::new(),
                pin: None,
            },
            at: class,
            reach: Reach::Held { base },
        }
    }

    /// The agent's own writer, `lambda`, taken from the function `at`.
    pub fn wire(at: At<'a>, lambda: String) -> Self {
        Conn {
            anchor: Connection {
                site: Site::of_node(at.file, at.node),
                text: lambda,
                pin: None,
            },
            at,
            reach: Reach::Wire,
        }
    }
}

/// The class definitions of the agent's files, found by name: a file is parsed and indexed
/// only once a name is asked for that its text defines (or, for subclasses, mentions).
pub(super) struct Classes<'a> {
    files: &'a [Parsed],
    /// file → its class definitions, for the files indexed so far.
    indexed: RefCell<HashMap<usize, Vec<At<'a>>>>,
    /// The names each agent file's text may define (a literal scan, done once).
    defined: OnceCell<Vec<HashSet<&'a str>>>,
}

impl<'a> Classes<'a> {
    pub(super) fn of(files: &'a [Parsed]) -> Classes<'a> {
        Classes {
            files,
            indexed: RefCell::default(),
            defined: OnceCell::new(),
        }
    }

    /// Every class definition of file `i`.
    fn in_file(&self, i: usize) -> Vec<At<'a>> {
        self.indexed
            .borrow_mut()
            .entry(i)
            .or_insert_with(|| {
                descendants(self.files[i].tree().root_node(), "class_definition")
                    .into_iter()
                    .map(|c| At { file: i, node: c })
                    .collect()
            })
            .clone()
    }

    /// The agent files whose text passes `may_hold`.
    fn agent_files(&self, may_hold: impl Fn(&str) -> bool) -> Vec<usize> {
        (0..self.files.len())
            .filter(|&i| is_agent_file(&self.files[i]) && may_hold(&self.files[i].file.text))
            .collect()
    }

    /// Classes of this name, the one in `file` first.
    pub(super) fn named(&self, name: &str, file: usize) -> Vec<At<'a>> {
        let defined = self.defined.get_or_init(|| {
            self.files
                .iter()
                .map(|p| match is_agent_file(p) {
                    true => class_names(&p.file.text).collect(),
                    false => HashSet::new(),
                })
                .collect()
        });
        let mut all: Vec<At<'a>> = (0..self.files.len())
            .filter(|&i| defined[i].contains(name))
            .flat_map(|i| self.in_file(i))
            .filter(|c| name_of(c.node, &self.files[c.file].file.text) == name)
            .collect();
        if all.iter().any(|c| c.file == file) {
            all.retain(|c| c.file == file);
        }
        all
    }

    /// The classes deriving directly from one of `of`.
    pub(super) fn subclasses(&self, of: &[At<'a>]) -> Vec<At<'a>> {
        let names: HashSet<&str> = of
            .iter()
            .map(|c| name_of(c.node, &self.files[c.file].file.text))
            .collect();
        self.agent_files(|text| names.iter().any(|n| mentions_word(text, n)))
            .into_iter()
            .flat_map(|i| self.in_file(i))
            .filter(|c| {
                self.bases(self.files, *c)
                    .iter()
                    .any(|b| of.iter().any(|x| x.node == b.node))
            })
            .collect()
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
