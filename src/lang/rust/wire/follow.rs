//! Where the agent's messages go: from each `session/update` message it builds (a `json!`
//! object or a struct literal whose `method` is `"session/update"` or a constant holding it)
//! through variables, return values, a helper's parameters, `serde_json::to_string`, `?`,
//! `.as_bytes()`, `format!`, to the call that writes it — a writer macro (`println!`,
//! `writeln!`), or any call outside the crate (`tx.send(..)`, `out.write_all(..)`). Responses
//! built where a prompt is handled are followed too: their write ends the turn.

pub use super::form::Form;
use super::form::{format_tail, untailed_if_mutated};
use super::index::{At, Binding, Index};
use super::tree::{Id, Kind, Role};
use super::unit::{line_end, unframed, unit_of};
use std::collections::HashSet;

/// A write of a message: the statement (or expression) apply wraps.
#[derive(Debug, Clone)]
pub struct Sink {
    pub file: usize,
    /// The node apply replaces (a statement, or an expression whose value is used) ...
    pub unit: Id,
    /// ... through this statement (the one that ends the line, after a write of the bare
    /// message into a stream), or `unit` itself.
    pub last: Id,
    /// The value of `unit` is used: the wrapped form keeps it.
    pub expression: bool,
    /// Where the message enters `unit` (its `&` included).
    pub entry: Id,
    pub form: Form,
    /// Reached by a `session/update` message (not only by a response).
    pub update: bool,
    /// Already wrapped: the loop apply wrote, and the call it wraps.
    pub present: bool,
}

/// A call a message passes through on its way out, in the code that builds it: the card's
/// writer can be made from it (the call with the card in the message's place).
#[derive(Debug, Clone)]
pub struct Carrier {
    pub file: usize,
    pub call: Id,
    /// The node that holds the message in the call as the tree is now.
    pub entry: Id,
    /// The message's text there before apply (differs inside a wrapped write).
    pub entry_text: String,
    pub form: Form,
}

pub struct Found {
    pub sinks: Vec<Sink>,
    pub carriers: Vec<Carrier>,
}

/// Methods a message passes through unchanged (or into its text).
const THROUGH: &[&str] = &[
    "unwrap",
    "expect",
    "unwrap_or_default",
    "clone",
    "to_owned",
    "into",
    "as_str",
    "as_ref",
    "as_bytes",
    "into_bytes",
    "to_string",
    "to_vec",
    "borrow",
];
/// Calls that wrap a value without writing it.
const WRAPPERS: &[&str] = &["Ok", "Some", "new", "from"];
/// Collections a message is kept in, not written from.
const STORES: &[&str] = &[
    "push",
    "push_back",
    "push_front",
    "insert",
    "extend",
    "append",
];
const WRITER_MACROS: &[&str] = &["print", "println", "write", "writeln"];
const QUIET_MACROS: &[&str] = &[
    "eprint",
    "eprintln",
    "trace",
    "debug",
    "info",
    "warn",
    "error",
    "panic",
    "dbg",
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "unreachable",
    "todo",
];

struct Step {
    at: At,
    form: Form,
    update: bool,
    /// The path went through a prompt handler.
    via_handler: bool,
    /// Inside a wrapped write: the sink it belongs to.
    within: Option<usize>,
}

pub struct Follow<'i, 'a> {
    ix: &'i Index<'a>,
    handlers: &'i [At],
    found: Found,
    pub lost: Vec<(At, String)>,
}

fn is_update(ix: &Index, at: At) -> Option<(bool, Form)> {
    let (keys, form) = match &ix.node(at).kind {
        Kind::Json(keys) => (keys, Form::Value),
        Kind::Struct(name, fields) => (fields, Form::Struct(name.clone())),
        _ => return None,
    };
    let has = |k: &str| keys.iter().any(|(key, _)| key == k);
    if keys
        .iter()
        .any(|(k, v)| k == "method" && ix.names(v, "session/update"))
    {
        return Some((true, form));
    }
    (has("id") && (has("result") || has("error")) && !has("method")).then_some((false, form))
}

impl<'i, 'a> Follow<'i, 'a> {
    pub fn new(ix: &'i Index<'a>, handlers: &'i [At]) -> Self {
        Follow {
            ix,
            handlers,
            found: Found {
                sinks: Vec::new(),
                carriers: Vec::new(),
            },
            lost: Vec::new(),
        }
    }

    /// Every message origin of the crate: (node, is a `session/update`).
    pub fn origins(&self) -> Vec<(At, bool)> {
        let mut out = Vec::new();
        for (file, t) in self.ix.trees.iter().enumerate() {
            let Some(t) = t else { continue };
            for id in 0..t.nodes.len() {
                if let Some((update, _)) = is_update(self.ix, (file, id)) {
                    out.push(((file, id), update));
                }
            }
        }
        out
    }

    fn in_handler(&self, at: At) -> bool {
        let t = self.ix.tree(at.0);
        self.handlers
            .iter()
            .any(|h| h.0 == at.0 && t.is_inside(at.1, h.1))
    }

    /// Follows one message from where it is built; returns how many writes it reached.
    pub fn run(&mut self, origin: At) -> usize {
        let Some((update, form)) = is_update(self.ix, origin) else {
            return 0;
        };
        let mut reached = 0;
        let mut todo = vec![Step {
            at: origin,
            form,
            update,
            via_handler: self.in_handler(origin),
            within: None,
        }];
        let mut seen: HashSet<At> = HashSet::new();
        while let Some(step) = todo.pop() {
            if !seen.insert(step.at) || seen.len() > 512 {
                continue;
            }
            reached += self.step(step, &mut todo);
        }
        reached
    }

    fn lose(&mut self, at: At, why: &str) {
        self.lost.push((at, why.to_string()));
    }

    fn step(&mut self, s: Step, todo: &mut Vec<Step>) -> usize {
        let ix = self.ix;
        let file = s.at.0;
        let t = ix.tree(file);
        let via = s.via_handler || self.in_handler(s.at);
        let (top, form, wired) = self.climb(s.at, s.form.clone());
        if let Some(call) = wired {
            return self.present(s, call, form, via, todo);
        }
        let Some(parent) = t.parent(top) else {
            return 0;
        };
        let role = t.nodes[top].role;
        let next = |at: At, form: Form| Step {
            at,
            form,
            update: s.update,
            via_handler: via,
            within: s.within,
        };
        match (&t.nodes[parent].kind, role) {
            (
                Kind::Local {
                    names, wildcard, ..
                },
                Role::Init,
            ) => {
                if *wildcard {
                    return 0;
                }
                let [name] = names.as_slice() else {
                    self.lose(s.at, "a message bound by a pattern");
                    return 0;
                };
                let reads = ix.reads(file, parent, name);
                let form = untailed_if_mutated(ix, file, &reads, form);
                todo.extend(reads.into_iter().map(|r| next((file, r), form.clone())));
            }
            (Kind::Assign, Role::Rhs) => {
                let lhs = t.child(parent, Role::Lhs);
                let name = lhs.and_then(|l| match &t.nodes[l].kind {
                    Kind::Ident(n) => Some(n.clone()),
                    _ => None,
                });
                let Some(name) = name else {
                    self.lose(s.at, "a message stored in a field");
                    return 0;
                };
                let end = t.nodes[parent].span.end;
                let binder = match ix.binding((file, parent), &name) {
                    Some(Binding::Local { node, .. }) => node,
                    Some(Binding::Param { scope, .. }) => scope,
                    _ => {
                        self.lose(s.at, "a message assigned to a name bound by a pattern");
                        return 0;
                    }
                };
                for r in ix.reads(file, binder, &name) {
                    if t.nodes[r].span.start > end {
                        todo.push(next((file, r), form.clone()));
                    }
                }
            }
            (Kind::Return, Role::Operand) => self.returned(top, s.at, form, via, s.update, todo),
            (Kind::Block, Role::Tail)
                if t.parent(parent)
                    .is_some_and(|f| matches!(t.nodes[f].kind, Kind::Fn(_))) =>
            {
                self.returned(top, s.at, form, via, s.update, todo)
            }
            (Kind::Call, Role::Arg(_)) | (Kind::Method(_), Role::Arg(_)) => {
                let call = (file, parent);
                let fns = match &t.nodes[parent].kind {
                    Kind::Call => ix.resolve_call(call),
                    _ => ix.resolve_method(call, false),
                };
                if fns.is_empty() {
                    if let Kind::Method(m) = &t.nodes[parent].kind
                        && STORES.contains(&m.as_str())
                    {
                        self.lose(s.at, "a message kept in a collection");
                        return 0;
                    }
                    return self.sink(s, top, parent, &form, via);
                }
                // the message's form where it enters the call (the card takes its place there)
                self.carry(s.at, top, parent, &s.form, s.update);
                for f in fns {
                    let Some(param) = ix.param_of(call, f, role) else {
                        continue;
                    };
                    for r in ix.reads(f.0, f.1, &param) {
                        todo.push(next((f.0, r), form.clone()));
                    }
                }
            }
            (Kind::Macro { name, .. }, Role::Arg(_) | Role::Other) => {
                if WRITER_MACROS.contains(&name.as_str()) {
                    return self.sink(s, top, parent, &form, via);
                }
                if !QUIET_MACROS.contains(&name.as_str()) {
                    self.lose(s.at, "a message handed to a macro that does not write it");
                }
            }
            (Kind::Semi, Role::Body) => {}
            (Kind::Json(_) | Kind::Struct(..) | Kind::Tuple | Kind::Array, _) => {
                self.lose(s.at, "a message put into another value");
            }
            _ => self.lose(s.at, "a message used in a way acp-patch does not follow"),
        }
        0
    }

    /// A fn returns the message: its callers have it.
    fn returned(
        &mut self,
        top: Id,
        at: At,
        form: Form,
        via: bool,
        update: bool,
        todo: &mut Vec<Step>,
    ) {
        let t = self.ix.tree(at.0);
        let closure = t.ancestors(top).find(|a| {
            matches!(
                t.nodes[*a].kind,
                Kind::Fn(_) | Kind::Closure(_) | Kind::Async
            )
        });
        match closure {
            Some(f) if matches!(t.nodes[f].kind, Kind::Fn(_)) => {
                for c in self.ix.callers((at.0, f)) {
                    todo.push(Step {
                        at: c,
                        form: form.clone(),
                        update,
                        via_handler: via,
                        within: None,
                    });
                }
            }
            _ => self.lose(at, "a message returned from a closure"),
        }
    }

    /// Up through what passes a message on unchanged or as its text: `&`, `?`, `.await`,
    /// `.unwrap()`, `serde_json::to_string(..)`, `format!(..)`, `Ok(..)`, an `if`/`match`
    /// or block whose value it is. Stops at apply's own wrapper (returned as the third item).
    fn climb(&self, at: At, mut form: Form) -> (Id, Form, Option<Id>) {
        let t = self.ix.tree(at.0);
        let mut cur = at.1;
        loop {
            let Some(p) = t.parent(cur) else {
                return (cur, form, None);
            };
            let role = t.nodes[cur].role;
            match (&t.nodes[p].kind, role) {
                (Kind::Ref | Kind::Paren | Kind::Try | Kind::Await, Role::Operand) => cur = p,
                (Kind::Method(m), Role::Receiver) if THROUGH.contains(&m.as_str()) => {
                    form = match (m.as_str(), form) {
                        ("to_string", Form::Value) => Form::Text(Some(String::new())),
                        ("to_string", Form::Struct(_)) => Form::Text(None),
                        ("as_bytes" | "into_bytes", Form::Text(tail)) => Form::Bytes(tail),
                        (_, f) => f,
                    };
                    cur = p;
                }
                (Kind::Call, Role::Arg(k)) => {
                    let callee = t.child(p, Role::Callee).map(|c| &t.nodes[c].kind);
                    let path: Vec<String> = match callee {
                        Some(Kind::Ident(i)) => vec![i.clone()],
                        Some(Kind::Path(p)) => p.clone(),
                        _ => return (cur, form, None),
                    };
                    let last = path.last().map(String::as_str).unwrap_or_default();
                    let runtime = path.len() >= 2 && path[path.len() - 2] == "acp_progress";
                    if runtime && (last == "wire" || last == "wire_any") {
                        return (cur, form, Some(p));
                    }
                    let serde = path.len() == 1 || path.iter().any(|s| s == "serde_json");
                    form = match (last, k) {
                        ("to_string" | "to_string_pretty", 0) if serde => {
                            Form::Text(Some(String::new()))
                        }
                        ("to_vec" | "to_vec_pretty", 0) if serde => {
                            Form::Bytes(Some(String::new()))
                        }
                        ("to_value", 0) if serde => Form::Value,
                        (w, 0)
                            if WRAPPERS.contains(&w)
                                && self.ix.resolve_call((at.0, p)).is_empty() =>
                        {
                            form
                        }
                        _ => return (cur, form, None),
                    };
                    cur = p;
                }
                (Kind::Macro { name, .. }, Role::Arg(_) | Role::Other) if name == "format" => {
                    form = Form::Text(format_tail(self.ix, (at.0, p), cur));
                    cur = p;
                }
                (Kind::Binary(op), _) if op == "+" && matches!(form, Form::Text(_)) => {
                    form = Form::Text(None);
                    cur = p;
                }
                (Kind::Block, Role::Tail) => {
                    let outer = t.parent(p).map(|o| &t.nodes[o].kind);
                    if matches!(
                        outer,
                        Some(Kind::Fn(_) | Kind::Closure(_) | Kind::Async | Kind::For(_))
                    ) {
                        return (cur, form, None);
                    }
                    cur = p;
                }
                (Kind::If, Role::Body | Role::Else) => cur = p,
                (Kind::Arm { .. }, Role::Body) => match t.parent(p) {
                    Some(m) => cur = m,
                    None => return (cur, form, None),
                },
                _ => return (cur, form, None),
            }
        }
    }

    fn carry(&mut self, entry: At, top: Id, call: Id, form: &Form, update: bool) {
        if !update {
            return;
        }
        let t = self.ix.tree(entry.0);
        let e = extend_ref(t, entry.1, top);
        self.found.carriers.push(Carrier {
            file: entry.0,
            call,
            entry: e,
            entry_text: self.ix.text((entry.0, e)).to_string(),
            form: form.clone(),
        });
    }

    /// A write: the statement or expression apply wraps around it.
    fn sink(&mut self, s: Step, top: Id, call: Id, written: &Form, via: bool) -> usize {
        let form = s.form.clone(); // where it enters the write
        let ix = self.ix;
        let file = s.at.0;
        let t = ix.tree(file);
        if let Some(k) = s.within {
            // inside a wrapped write: the call it wraps (the card's writer can be made of it)
            let p = &self.found.sinks[k];
            let entry = extend_ref(t, s.at.1, top);
            // `for acp_message in ..wire(X)`: the message was X; `for msg in ..`: as it reads
            let entry_text = match &t.nodes[s.at.1].kind {
                Kind::Ident(n) if n == super::sites::CARD => ix.text((file, p.entry)),
                _ => ix.text((file, entry)),
            }
            .to_string();
            if p.update {
                self.found.carriers.push(Carrier {
                    file,
                    call,
                    entry,
                    entry_text,
                    form: p.form.clone(),
                });
            }
            return 1;
        }
        if !s.update && !via {
            return 0; // a response written away from any prompt handler: not the turn's end
        }
        let Some((unit, expression)) = unit_of(ix, file, call) else {
            self.lose(s.at, "a write acp-patch cannot wrap");
            return 0;
        };
        let entry = extend_ref(t, s.at.1, top);
        if !t.is_inside(entry, unit) {
            self.lose(
                s.at,
                "a message that reaches its write through a block of its own",
            );
            return 0;
        }
        self.carry(s.at, top, call, &form, s.update);
        let last = match expression {
            false if unframed(t, call, written) => line_end(ix, file, unit).unwrap_or(unit),
            _ => unit,
        };
        self.add_sink(Sink {
            file,
            unit,
            last,
            expression,
            entry,
            form,
            update: s.update,
            present: false,
        });
        1
    }

    fn add_sink(&mut self, sink: Sink) -> usize {
        match self
            .found
            .sinks
            .iter()
            .position(|x| x.file == sink.file && x.unit == sink.unit)
        {
            Some(k) => {
                self.found.sinks[k].update |= sink.update;
                k
            }
            None => {
                self.found.sinks.push(sink);
                self.found.sinks.len() - 1
            }
        }
    }

    /// A write apply wrapped already: `for P in <path>::wire(X) { S }` (or the expression
    /// form around it); the follow goes on inside, to the call it wraps.
    fn present(&mut self, s: Step, wire: Id, form: Form, via: bool, todo: &mut Vec<Step>) -> usize {
        let ix = self.ix;
        let file = s.at.0;
        let t = ix.tree(file);
        let Some(for_node) = t
            .ancestors(wire)
            .find(|a| matches!(t.nodes[*a].kind, Kind::For(_)))
        else {
            return 0;
        };
        let Kind::For(names) = &t.nodes[for_node].kind else {
            return 0;
        };
        let Some(arg) = t.nodes[wire]
            .children
            .iter()
            .copied()
            .find(|c| t.nodes[*c].role == Role::Arg(0))
        else {
            return 0;
        };
        let parent = t.parent(for_node);
        let expression_block = parent.filter(|b| {
            matches!(t.nodes[*b].kind, Kind::Block)
                && t.nodes[*b].children.first().is_some_and(|c| {
                    matches!(&t.nodes[*c].kind, Kind::Local { names, .. } if names.first().is_some_and(|n| n == "acp_sent"))
                })
        });
        let (unit, expression) = match expression_block {
            Some(b) => (b, true),
            None => (for_node, false),
        };
        if !s.update
            && !via
            && !self
                .found
                .sinks
                .iter()
                .any(|x| x.file == file && x.unit == unit)
        {
            return 0;
        }
        let k = self.add_sink(Sink {
            file,
            unit,
            last: unit,
            expression,
            entry: arg,
            form: form.clone(),
            update: s.update,
            present: true,
        });
        let Some(name) = names.first() else { return 1 };
        for r in ix.reads(file, for_node, name) {
            todo.push(Step {
                at: (file, r),
                form: form.clone(),
                update: s.update,
                via_handler: via,
                within: Some(k),
            });
        }
        1
    }

    pub fn finish(self) -> (Found, Vec<(At, String)>) {
        (self.found, self.lost)
    }
}

/// The message's node with the `&` in front of it, when the chain above starts with one.
fn extend_ref(t: &super::tree::Tree, entry: Id, top: Id) -> Id {
    match t.parent(entry) {
        Some(p) if matches!(t.nodes[p].kind, Kind::Ref) && t.is_inside(p, top) => p,
        _ => entry,
    }
}
