//! What verify proves about inserted code beyond its presence: every name it reads is bound
//! where it reads it (a parameter, an earlier assignment on the way there, a module name, an
//! attribute of the agent), the card starts before the prompt handler's first send, and no
//! gate returns nothing from a function that returns a value. Inserted code is recognised
//! by its markers wherever it is — so a hand-placed or stale patch is judged too.

use super::locate::handlers::is_agent_file;
use super::scope::{BUILTINS, binds, is_bound, load_identifiers};
use super::syntax::*;
use crate::lang::parts::{Finding, Parsed};
use crate::lang::python::RUNTIME_NAME;
use crate::needles::Needles;
use crate::report::Status;
use std::collections::HashSet;
use std::sync::LazyLock;
use tree_sitter::Node;

/// Text that marks a statement as acp-patch's (engine-level sites and older runtimes).
const STATEMENT_MARKERS: &[&str] = &[
    "_acp_progress_",
    "agent_progress_callback",
    "_acp_text_hold",
    "install_acp_text_hold",
    "make_agent_progress_cb",
];
/// Decorators acp-patch inserts.
const DECORATOR_MARKERS: &[&str] = &["acp_progress.", "acp_thinking_turn"];

/// Placement findings for the tree as it is. `ours` names the functions acp-patch's own
/// module-level blocks define (their bodies are template code, tested on their own);
/// `prompts` are the prompt handlers (file, def node).
pub fn findings(
    files: &[Parsed],
    ours: &HashSet<String>,
    prompts: &[(usize, Node)],
) -> Vec<Finding> {
    findings_in(files, &|_| true, ours, prompts)
}

/// [`findings`] in the files `judged` picks (the others are still read for what they
/// define): a plan's own code is judged only where it is inserted.
pub fn findings_in(
    files: &[Parsed],
    judged: &dyn Fn(usize) -> bool,
    ours: &HashSet<String>,
    prompts: &[(usize, Node)],
) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !judged(i) || !is_agent_file(p) {
            continue;
        }
        let src = p.file.text.as_ref();
        // one scan rules out a file without inserted code (most files), before the two that
        // list each kind of marker
        static ANY: LazyLock<Needles> =
            LazyLock::new(|| Needles::new(&[STATEMENT_MARKERS, DECORATOR_MARKERS].concat()));
        static STATEMENT: LazyLock<Needles> = LazyLock::new(|| Needles::new(STATEMENT_MARKERS));
        static DECORATOR: LazyLock<Needles> = LazyLock::new(|| Needles::new(DECORATOR_MARKERS));
        if !ANY.any_in(src) {
            continue;
        }
        let statement_marks = Marks(STATEMENT.all_in(src));
        let decorator_marks = Marks(DECORATOR.all_in(src));
        let ctx = Ctx {
            files,
            file: i,
            src,
            ours,
        };
        walk(p.tree().root_node(), &mut |n| {
            // every case below needs a marker starting inside the node: a subtree without one
            // holds nothing to judge
            if !statement_marks.start_within(n) && !decorator_marks.start_within(n) {
                return false;
            }
            match n.kind() {
                "function_definition" if ours.contains(name_of(n, src)) => return false,
                "decorator" if decorator_marks.within(n) => {
                    ctx.check_reads(n, "decorator", &mut out);
                    return false;
                }
                "call"
                    if callee_object(n, src) == Some(RUNTIME_NAME)
                        && enclosing_function(n).is_some() =>
                {
                    // the wrapped receiver is the agent's own code: only our name counts
                    let f = n.child_by_field_name("function").expect("callee");
                    ctx.check_reads_of(
                        &[f.child_by_field_name("object").expect("object")],
                        n,
                        &mut out,
                    );
                    if callee_name(n, src) != "emitter" {
                        ctx.check_reads(
                            n.child_by_field_name("arguments").expect("args"),
                            "call",
                            &mut out,
                        );
                    }
                }
                // the cheap text tests first: `enclosing_function` climbs the tree
                "keyword_argument"
                    if name_of(n, src) == "agent_progress_callback"
                        && enclosing_function(n).is_some() =>
                {
                    // a keyword passed on in the agent's own call: only its value is ours
                    ctx.check_reads(n, "keyword", &mut out);
                    return false;
                }
                "expression_statement" | "return_statement" | "raise_statement"
                    if statement_marks.within(n)
                        && marked_outside_keywords(n, src)
                        && enclosing_function(n).is_some() =>
                {
                    ctx.check_reads(n, "statement", &mut out);
                    return false;
                }
                "if_statement" => {
                    if let Some(cond) = n.child_by_field_name("condition")
                        && statement_marks.within(cond)
                        && enclosing_function(n).is_some()
                    {
                        ctx.check_reads(cond, "gate", &mut out);
                        ctx.check_gate(n, &mut out);
                    }
                }
                _ => {}
            }
            true
        });
    }
    for (file, def) in prompts {
        start_before_first_send(files, *file, *def, &mut out);
    }
    out.sort_by_key(|f| (f.file, f.line));
    out.dedup_by(|a, b| a.file == b.file && a.line == b.line && a.detail == b.detail);
    out
}

/// Where a file's markers are (start and end offsets, by start): whether a node's text
/// holds one is then a search, not a scan of the text (a file's statements nest).
struct Marks(Vec<(usize, usize)>);

impl Marks {
    /// Whether a marker starts inside `n`'s text.
    fn start_within(&self, n: Node) -> bool {
        let first = self.0.partition_point(|&(s, _)| s < n.start_byte());
        self.0.get(first).is_some_and(|&(s, _)| s < n.end_byte())
    }

    /// Whether `n`'s text holds a whole marker.
    fn within(&self, n: Node) -> bool {
        let (start, end) = (n.start_byte(), n.end_byte());
        let first = self.0.partition_point(|&(s, _)| s < start);
        self.0[first..]
            .iter()
            .take_while(|&&(s, _)| s < end)
            .any(|&(_, e)| e <= end)
    }
}

/// Whether a statement holds acp-patch's code beyond `agent_progress_callback=` keywords it
/// passes on (those are checked on their own).
fn marked_outside_keywords(stmt: Node, src: &str) -> bool {
    let whole = text(stmt, src);
    // no marker in the whole statement: none outside its keywords either (a keyword taken
    // out holds one, so nothing is taken out)
    if !STATEMENT_MARKERS.iter().any(|m| whole.contains(m)) {
        return false;
    }
    let mut rest = whole.to_string();
    for k in descendants(stmt, "keyword_argument") {
        if name_of(k, src) == "agent_progress_callback" {
            rest = rest.replace(text(k, src), "");
        }
    }
    STATEMENT_MARKERS.iter().any(|m| rest.contains(m))
}

struct Ctx<'a> {
    files: &'a [Parsed],
    file: usize,
    src: &'a str,
    /// acp-patch's own functions: one that is missing is reported as such (the block
    /// "lacks" it), not as an unbound read at every call
    ours: &'a HashSet<String>,
}

impl Ctx<'_> {
    fn check_reads(&self, node: Node, _what: &str, out: &mut Vec<Finding>) {
        let mut reads = Vec::new();
        load_identifiers(node, self.src, &mut Vec::new(), &mut reads);
        let before = out.len();
        self.check_reads_of(&reads, node, out);
        let mut names: Vec<String> = Vec::new();
        // `lambda self: self.x` in a decorator: `x` must be an attribute of the class
        for lambda in descendants(node, "lambda") {
            let Some(param) = lambda
                .child_by_field_name("parameters")
                .and_then(|ps| named_children(ps).into_iter().next())
                .filter(|p| p.kind() == "identifier")
            else {
                continue;
            };
            let me = text(param, self.src);
            let Some(class) = enclosing_class(node) else {
                continue;
            };
            for a in descendants(lambda, "attribute") {
                let obj = a.child_by_field_name("object").expect("object");
                if obj.kind() == "identifier" && text(obj, self.src) == me {
                    let attr = text(a.child_by_field_name("attribute").expect("attr"), self.src);
                    if !instance_has_attribute(self.files, self.file, class, attr) {
                        out.push(Finding {
                            check: "bound",
                            status: Status::Malformed,
                            file: self.file,
                            line: a.start_position().row + 1,
                            detail: format!(
                                "reads `{me}.{attr}`, but no method of `{}` (its bases, or the classes composing it) assigns `{attr}`",
                                name_of(class, self.src)
                            ),
                        });
                    } else {
                        names.push(format!("{me}.{attr}"));
                    }
                }
            }
        }
        // say what was proven where the inserted code reads the agent's own names
        for r in &reads {
            let name = text(*r, self.src).to_string();
            if !BUILTINS.contains(&name.as_str()) && name != RUNTIME_NAME && !names.contains(&name)
            {
                names.push(name);
            }
        }
        if out.len() == before && !names.is_empty() {
            out.push(Finding {
                check: "bound",
                status: Status::Ok,
                file: self.file,
                line: node.start_position().row + 1,
                detail: format!(
                    "reads {}: bound there",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
    }

    fn check_reads_of(&self, reads: &[Node], _stmt: Node, out: &mut Vec<Finding>) {
        for r in reads {
            let name = text(*r, self.src);
            if !self.ours.contains(name) && !is_bound(name, *r, self.src) {
                out.push(Finding {
                    check: "bound",
                    status: Status::Malformed,
                    file: self.file,
                    line: r.start_position().row + 1,
                    detail: format!(
                        "inserted code reads `{name}` in `{}` before it is bound there",
                        enclosing_function(*r)
                            .map(|f| qualified_name(f, self.src))
                            .unwrap_or_else(|| "<module>".into())
                    ),
                });
            }
        }
    }

    /// `if <acp-patch gate>: return` in a function that returns a value drops that value.
    fn check_gate(&self, if_stmt: Node, out: &mut Vec<Finding>) {
        let Some(body) = if_stmt.child_by_field_name("consequence") else {
            return;
        };
        let bare = named_children(body)
            .into_iter()
            .any(|s| s.kind() == "return_statement" && s.named_child_count() == 0);
        let Some(f) = enclosing_function(if_stmt) else {
            return;
        };
        let fbody = f.child_by_field_name("body").expect("body");
        let returns_value = descendants_same_scope(fbody, "return_statement")
            .iter()
            .any(|r| {
                r.named_child_count() > 0 && r.named_child(0).is_some_and(|v| v.kind() != "none")
            })
            || f.child_by_field_name("return_type")
                .is_some_and(|t| !matches!(text(t, self.src), "None" | "\"None\""));
        if bare && returns_value {
            out.push(Finding {
                check: "coalescing",
                status: Status::Malformed,
                file: self.file,
                line: if_stmt.start_position().row + 1,
                detail: format!(
                    "the gate returns nothing from `{}`, whose callers expect a value",
                    qualified_name(f, self.src)
                ),
            });
        }
    }
}

/// The start must run before the handler's first send: a start statement placed after it
/// (a hand-placed or stale patch) leaves the client without a card until then.
fn start_before_first_send(files: &[Parsed], file: usize, def: Node, out: &mut Vec<Finding>) {
    let src = files[file].file.text.as_ref();
    let Some(body) = def.child_by_field_name("body") else {
        return;
    };
    let calls = descendants_same_scope(body, "call");
    let first_send = calls
        .iter()
        .filter(|c| matches!(callee_name(**c, src), "session_update" | "sessionUpdate"))
        .map(|c| c.start_byte())
        .min();
    let first_start = calls
        .iter()
        .filter(|c| {
            matches!(
                callee_name(**c, src),
                "_acp_progress_start" | "_acp_progress_begin_turn"
            )
        })
        .map(|c| c.start_byte())
        .min();
    if let (Some(send), Some(start)) = (first_send, first_start)
        && start > send
    {
        let line = |b: usize| files[file].file.line_of(b);
        out.push(Finding {
            check: "hook.start",
            status: Status::Malformed,
            file,
            line: line(start),
            detail: format!(
                "the card starts after the prompt handler's first send at line {}",
                line(send)
            ),
        });
    }
}

/// Whether a class (or a class of the tree it derives from) has attribute `attr`: bound in
/// its body, or assigned as `<self>.attr = ...` in one of its methods.
/// Whether `self.<attr>` is bound on an instance of `class`: the class or one of its bases
/// assigns it, or `class` is a mixin and every most-derived class of the agent's modules that
/// composes it (`class Agent(PromptMixin, SessionMixin, ...)`) has it through its own bases.
fn instance_has_attribute(files: &[Parsed], file: usize, class: Node, attr: &str) -> bool {
    if class_has_attribute(files, file, class, attr, &mut HashSet::new()) {
        return true;
    }
    let leaves = composers(files, file, class);
    !leaves.is_empty()
        && leaves
            .iter()
            .all(|(f, c)| class_has_attribute(files, *f, *c, attr, &mut HashSet::new()))
}

/// The most-derived classes of the agent's files that have `class` among their bases
/// (directly or through other classes): the classes whose instances run its methods.
fn composers<'t>(files: &'t [Parsed], file: usize, class: Node<'t>) -> Vec<(usize, Node<'t>)> {
    let subclasses = |f: usize, c: Node| -> Vec<(usize, Node<'t>)> {
        let name = name_of(c, &files[f].file.text).to_string();
        let mut out = Vec::new();
        for (i, p) in files.iter().enumerate() {
            if !is_agent_file(p) {
                continue;
            }
            let src = p.file.text.as_ref();
            for d in descendants(p.tree().root_node(), "class_definition") {
                if superclasses(d)
                    .into_iter()
                    .any(|b| base_name(b, src) == Some(name.as_str()))
                {
                    out.push((i, d));
                }
            }
        }
        out
    };
    let mut seen: HashSet<(usize, usize)> = HashSet::from([(file, class.id())]);
    let mut todo = subclasses(file, class);
    let mut leaves = Vec::new();
    while let Some((f, c)) = todo.pop() {
        if !seen.insert((f, c.id())) {
            continue;
        }
        let below = subclasses(f, c);
        if below.is_empty() {
            leaves.push((f, c));
        }
        todo.extend(below);
    }
    leaves
}

fn class_has_attribute(
    files: &[Parsed],
    file: usize,
    class: Node,
    attr: &str,
    seen: &mut HashSet<(usize, usize)>,
) -> bool {
    if !seen.insert((file, class.id())) {
        return false;
    }
    let src = files[file].file.text.as_ref();
    let body = class.child_by_field_name("body").expect("class body");
    for s in named_children(body) {
        let annotated = s.kind() == "expression_statement"
            && s.named_child(0).is_some_and(|a| {
                a.kind() == "assignment"
                    && a.child_by_field_name("left")
                        .is_some_and(|l| text(l, src) == attr)
            });
        if annotated || binds(s, attr, src) {
            return true;
        }
    }
    for m in methods(class) {
        let Some((me, _)) = parameters(m, src).first().cloned() else {
            continue;
        };
        let assigned = descendants(m, "assignment").iter().any(|a| {
            a.child_by_field_name("left").is_some_and(|l| {
                l.kind() == "attribute"
                    && l.child_by_field_name("object")
                        .is_some_and(|o| text(o, src) == me)
                    && l.child_by_field_name("attribute")
                        .is_some_and(|x| text(x, src) == attr)
            })
        });
        if assigned {
            return true;
        }
    }
    for base in superclasses(class) {
        let Some(base_name) = base_name(base, src) else {
            continue;
        };
        for (i, p) in files.iter().enumerate() {
            for c in descendants(p.tree().root_node(), "class_definition") {
                if name_of(c, &p.file.text) == base_name
                    && class_has_attribute(files, i, c, attr, seen)
                {
                    return true;
                }
            }
        }
    }
    false
}

/// The callback's call sites per state: `cb("start"|"heartbeat"|"complete", ...)` where `cb`
/// is `getattr(x, "agent_progress_callback", ...)` in the same function or
/// `x.agent_progress_callback` itself.
pub fn hook_calls(files: &[Parsed]) -> [Vec<(usize, usize)>; 3] {
    let mut out: [Vec<(usize, usize)>; 3] = Default::default();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_ref();
        if !crate::needles::contains(src, "agent_progress_callback") {
            continue;
        }
        for c in descendants(p.tree().root_node(), "call") {
            let Some(first) = positional_args(c).first().copied() else {
                continue;
            };
            if first.kind() != "string" {
                continue;
            }
            let state = text(first, src).trim_matches(['"', '\'']);
            let Some(k) = ["start", "heartbeat", "complete"]
                .iter()
                .position(|s| *s == state)
            else {
                continue;
            };
            let Some(f) = c.child_by_field_name("function") else {
                continue;
            };
            let is_cb = match f.kind() {
                "attribute" => f
                    .child_by_field_name("attribute")
                    .is_some_and(|a| text(a, src) == "agent_progress_callback"),
                "identifier" => {
                    let name = text(f, src);
                    enclosing_function(c).is_some_and(|def| {
                        descendants_same_scope(
                            def.child_by_field_name("body").expect("body"),
                            "assignment",
                        )
                        .iter()
                        .any(|a| {
                            a.child_by_field_name("left")
                                .is_some_and(|l| text(l, src) == name)
                                && a.child_by_field_name("right").is_some_and(|r| {
                                    r.kind() == "call"
                                        && callee_name(r, src) == "getattr"
                                        && text(r, src).contains("\"agent_progress_callback\"")
                                })
                        })
                    })
                }
                _ => false,
            };
            if is_cb {
                out[k].push((i, c.start_position().row + 1));
            }
        }
    }
    out
}
