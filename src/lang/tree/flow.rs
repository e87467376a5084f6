//! Where a value goes after it is built, for any language: a `session/update` message a
//! hand-rolled agent builds is followed through what passes it on unchanged (parentheses,
//! `await`, string interpolation, the JSON encoder), variables, return values (to every call
//! of the function), lists of messages and the loops over them, up to the call that is handed
//! it — the writer. The walk is one; a language is a table (`Rules`): its node kinds and
//! the four answers only it has.

use super::{descendants, line, text};
use crate::lang::parts::Parsed;
use tree_sitter::Node;

/// Where a value is bound to a name: `kind`'s `value` field holds it and its `name` field is
/// the name (else the walk stops with `lost`).
pub struct Bind {
    pub kind: &'static str,
    pub value: &'static str,
    pub name: &'static str,
    pub lost: &'static str,
}

/// A language's node kinds, as the walk reads them.
pub struct Rules {
    /// Nodes that hand the value of their child on unchanged (or as its text).
    pub through: &'static [&'static str],
    /// Nodes that hold a call's arguments, and how many levels up the call is.
    pub arguments: &'static [(&'static str, usize)],
    /// The kinds of a call.
    pub calls: &'static [&'static str],
    /// The kinds of a function (the scope of its names).
    pub functions: &'static [&'static str],
    pub binds: &'static [Bind],
    pub returns: &'static str,
    /// Functions whose body is an expression (its value is returned): (kind, body field).
    pub expression_bodies: &'static [(&'static str, &'static str)],
    /// A literal list of values: a message in one makes a list of messages.
    pub collections: &'static [&'static str],
    /// A loop over a list: (kind, list field, variable field).
    pub loops: &'static [(&'static str, &'static str, &'static str)],
    /// A value built and dropped.
    pub statement: &'static str,
    /// Where an identifier is not a read of the name: (parent kind, the field it is in, or any).
    pub not_reads: &'static [(&'static str, Option<&'static str>)],
    // what only the language can answer:
    /// The call a value passes through unchanged when `parent` holds it (`json.dumps(m)`,
    /// `m.encode()`, `JSON.stringify(m)`).
    pub encoder: for<'a> fn(parent: Node<'a>, src: &str) -> Option<Node<'a>>,
    /// Every call of a function of the tree.
    pub calls_of: for<'a> fn(&'a [Parsed], usize, Node<'a>) -> Calls<'a>,
    /// The parameter of the function `call` calls that the argument `arg` is bound to, or why
    /// it cannot be told.
    pub parameter: for<'a> fn(
        files: &'a [Parsed],
        file: usize,
        call: Node<'a>,
        arg: Node<'a>,
    ) -> Result<Parameter<'a>, &'static str>,
    /// The names a loop variable binds.
    pub loop_names: for<'a> fn(var: Node<'a>, src: &str) -> Vec<(String, Node<'a>)>,
}

impl Rules {
    pub fn enclosing_function<'a>(&self, node: Node<'a>) -> Option<Node<'a>> {
        super::ancestor(node, |n| self.functions.contains(&n.kind()))
    }
}

/// Calls in the tree: (file, call).
pub type Calls<'a> = Vec<(usize, Node<'a>)>;

/// A name a list of messages is bound to in the function it is handed to: (file, the name,
/// the node that declares it).
pub type Parameter<'a> = (usize, String, Node<'a>);

/// A call a value reaches, and the node of its arguments that carries it.
#[derive(Debug, Clone, Copy)]
pub struct Sink<'a> {
    pub file: usize,
    pub call: Node<'a>,
    pub carried: Node<'a>,
}

/// Where following a value stopped without reaching a call, for the refusal.
#[derive(Debug, Clone)]
pub struct Lost {
    pub file: usize,
    pub line: usize,
    pub why: &'static str,
}

/// Where following stopped, as a refusal lists it: `file:line: why; ...`.
pub fn lost_text(files: &[Parsed], lost: &[Lost]) -> String {
    lost.iter()
        .map(|l| format!("{}:{}: {}", files[l.file].file.rel, l.line, l.why))
        .collect::<Vec<_>>()
        .join("; ")
}

/// How many nodes one value is followed through before the walk gives up.
const MOST: usize = 256;

/// Follows the value built at `origin` to every call it is handed to, in the order met.
pub fn follow<'a>(
    rules: &Rules,
    files: &'a [Parsed],
    file: usize,
    origin: Node<'a>,
) -> (Vec<Sink<'a>>, Vec<Lost>) {
    let mut sinks: Vec<Sink<'a>> = Vec::new();
    let mut lost = Vec::new();
    // (file, node holding the value, whether it is a list of them)
    let mut todo = vec![(file, origin, false)];
    let mut seen: Vec<(usize, usize, usize)> = Vec::new();
    while let Some((file, node, many)) = todo.pop() {
        let key = (file, node.start_byte(), node.end_byte());
        if seen.contains(&key) || seen.len() > MOST {
            continue;
        }
        seen.push(key);
        let src = files[file].file.text.as_ref();
        let mut cur = node;
        let parent = loop {
            let Some(parent) = cur.parent() else {
                break None;
            };
            if rules.through.contains(&parent.kind()) {
                cur = parent;
            } else if let Some(call) = (rules.encoder)(parent, src) {
                cur = call;
            } else {
                break Some(parent);
            }
        };
        let Some(parent) = parent else { continue };
        let kind = parent.kind();
        let mut lose = |why: &'static str| {
            lost.push(Lost {
                file,
                line: line(cur),
                why,
            })
        };
        let field_is = |field: &str| parent.child_by_field_name(field) == Some(cur);
        if let Some((_, up)) = rules.arguments.iter().find(|(k, _)| *k == kind) {
            let call = (0..*up).try_fold(parent, |n, _| n.parent());
            let Some(call) = call.filter(|c| rules.calls.contains(&c.kind())) else {
                lose("a message handed to something that is not a call");
                continue;
            };
            if !many {
                if !sinks.iter().any(|s| s.file == file && s.call == call) {
                    sinks.push(Sink {
                        file,
                        call,
                        carried: node,
                    });
                }
                continue;
            }
            // a list of messages handed to a function of the agent: its parameter
            match (rules.parameter)(files, file, call, cur) {
                Ok((f, name, decl)) => {
                    for r in reads(rules, files, f, decl, &name) {
                        todo.push((f, r, true));
                    }
                }
                Err(why) => lose(why),
            }
        } else if let Some(bind) = rules.binds.iter().find(|b| b.kind == kind) {
            if !field_is(bind.value) {
                lose("a message put into another value");
                continue;
            }
            match parent.child_by_field_name(bind.name) {
                Some(n) if n.kind() == "identifier" => {
                    for r in reads(rules, files, file, n, text(n, src)) {
                        todo.push((file, r, many));
                    }
                }
                _ => lose(bind.lost),
            }
        } else if kind == rules.returns {
            match rules.enclosing_function(parent) {
                Some(func) => {
                    for (f, call) in (rules.calls_of)(files, file, func) {
                        todo.push((f, call, many));
                    }
                }
                None => lose("a return outside a function"),
            }
        } else if let Some((_, body)) = rules.expression_bodies.iter().find(|(k, _)| *k == kind)
            && field_is(body)
        {
            for (f, call) in (rules.calls_of)(files, file, parent) {
                todo.push((f, call, many));
            }
        } else if rules.collections.contains(&kind) && !many {
            todo.push((file, parent, true));
        } else if let Some((_, list, var)) = rules.loops.iter().find(|(k, _, _)| *k == kind)
            && many
            && field_is(list)
        {
            let names = parent
                .child_by_field_name(var)
                .map(|v| (rules.loop_names)(v, src));
            match names.as_deref() {
                Some([(name, decl)]) => {
                    for r in reads(rules, files, file, *decl, name) {
                        todo.push((file, r, false));
                    }
                }
                _ => lose("a loop over messages without one loop variable"),
            }
        } else if kind != rules.statement {
            lose("a message put into another value");
        }
    }
    (sinks, lost)
}

/// The reads of the name `decl` binds, after it, in the function (or module) it is declared
/// in: every identifier of that name but those the language says are not reads (what is
/// assigned to, an attribute's name, ...).
pub fn reads<'a>(
    rules: &Rules,
    files: &'a [Parsed],
    file: usize,
    decl: Node<'a>,
    name: &str,
) -> Vec<Node<'a>> {
    let src = files[file].file.text.as_ref();
    let scope = rules
        .enclosing_function(decl)
        .and_then(|f| f.child_by_field_name("body"))
        .unwrap_or_else(|| files[file].tree().root_node());
    descendants(scope, "identifier")
        .into_iter()
        .filter(|n| *n != decl && text(*n, src) == name && n.start_byte() > decl.start_byte())
        .filter(|n| {
            n.parent().is_none_or(|p| {
                !rules.not_reads.iter().any(|(k, field)| {
                    p.kind() == *k && field.is_none_or(|f| p.child_by_field_name(f) == Some(*n))
                })
            })
        })
        .collect()
}
