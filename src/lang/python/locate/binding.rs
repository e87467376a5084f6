//! Which classes the SDK is handed, found on the syntax tree: each class given to a runner
//! (`run_agent(X())`, `AgentSideConnection(lambda conn: X(conn), ...)`) however the value gets
//! there (a variable, a `cast`, a factory of the module, the agent's own runner and what its
//! callers pass), and every subclass of the SDK's `Agent`, directly or through the tree's
//! classes (generic bases too).

use super::At;
use super::found::{Classes, is_agent_file};
use crate::lang::parts::Parsed;
use crate::lang::python::syntax::*;
use std::collections::{HashMap, HashSet};
use tree_sitter::Node;

/// SDK entry points that take the agent (object or factory).
const RUNNERS: &[&str] = &["run_agent", "AgentSideConnection"];

/// Names a module binds to the SDK (imports anywhere in it, lazy ones included):
/// local name → the SDK name's last part, and the aliases of the `acp` package itself.
struct SdkNames {
    names: HashMap<String, String>,
    modules: HashSet<String>,
}

impl SdkNames {
    fn of(p: &Parsed) -> SdkNames {
        let src = p.file.text.as_ref();
        let mut names = HashMap::new();
        let mut modules = HashSet::new();
        if !mentions_sdk(src) {
            return SdkNames { names, modules };
        }
        let root = p.tree().root_node();
        let is_sdk = |m: &str| m == "acp" || m.starts_with("acp.");
        for n in descendants(root, "import_statement") {
            for m in named_children(n) {
                let (module, alias) = match m.kind() {
                    "aliased_import" => (
                        m.child_by_field_name("name").map(|x| text(x, src)),
                        m.child_by_field_name("alias").map(|x| text(x, src)),
                    ),
                    _ => (Some(text(m, src)), None),
                };
                if module.is_some_and(is_sdk) {
                    modules.insert(alias.unwrap_or("acp").to_string());
                }
            }
        }
        for n in descendants(root, "import_from_statement") {
            let Some(module) = n.child_by_field_name("module_name").map(|m| text(m, src)) else {
                continue;
            };
            if !is_sdk(module) {
                continue;
            }
            for (orig, local) in imported_names(n, src) {
                let last = orig.rsplit('.').next().unwrap_or(orig).to_string();
                names.insert(local.to_string(), last);
            }
        }
        SdkNames { names, modules }
    }

    /// The SDK name an expression refers to (`Agent`, `run_agent`), if it is one.
    fn resolve(&self, expr: Node, src: &str) -> Option<String> {
        match expr.kind() {
            "identifier" => self.names.get(text(expr, src)).cloned(),
            "attribute" => {
                let mut root = expr;
                while root.kind() == "attribute" {
                    root = root.child_by_field_name("object")?;
                }
                if root.kind() != "identifier" || !self.modules.contains(text(root, src)) {
                    return None;
                }
                Some(text(expr.child_by_field_name("attribute")?, src).to_string())
            }
            _ => None,
        }
    }
}

/// The agent classes the SDK calls: each class handed to a runner (`run_agent(X())`,
/// `AgentSideConnection(lambda conn: X(conn), ...)`, through a variable, a `cast`, a typed
/// parameter), and every subclass of the SDK's `Agent`, directly or through classes in the
/// tree.
pub(super) fn bound_classes<'a>(files: &'a [Parsed], classes: &Classes<'a>) -> Vec<At<'a>> {
    let mut bound: Vec<At<'a>> = Vec::new();
    let push = |c: At<'a>, bound: &mut Vec<At<'a>>| {
        if !bound.iter().any(|b| b.node == c.node) {
            bound.push(c);
        }
    };
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        let sdk = SdkNames::of(p);
        if sdk.names.is_empty() && sdk.modules.is_empty() {
            continue; // nothing in it resolves to the SDK
        }
        let src = p.file.text.as_ref();
        for c in descendants(p.tree().root_node(), "class_definition") {
            if superclasses(c)
                .iter()
                .any(|b| sdk.resolve(*b, src).as_deref() == Some("Agent"))
            {
                push(At { file: i, node: c }, &mut bound);
            }
        }
        for call in descendants(p.tree().root_node(), "call") {
            let Some(f) = call.child_by_field_name("function") else {
                continue;
            };
            if !sdk
                .resolve(f, src)
                .is_some_and(|n| RUNNERS.contains(&n.as_str()))
            {
                continue;
            }
            if let Some(arg) = agent_argument(call, src) {
                for (file, name) in handed_classes(files, i, arg) {
                    for c in classes.named(&name, file) {
                        push(c, &mut bound);
                    }
                }
            }
        }
    }
    // subclasses of bound classes are bound too
    loop {
        let before = bound.len();
        for c in classes.subclasses(&bound.clone()) {
            push(c, &mut bound);
        }
        if bound.len() == before {
            break;
        }
    }
    bound.sort_by_key(|c| (c.file, c.node.start_byte()));
    bound
}

/// Top-level functions of a module that hand one of their parameters to the SDK's connection
/// (`def serve(agent, ...): ... AgentSideConnection(agent, ...)`): the agent's own runners,
/// whose callers hand over the agent.
pub fn runners_defined(root: Node, src: &str) -> Vec<String> {
    top_level_functions(root)
        .into_iter()
        .filter(|f| {
            let params = parameters(*f, src);
            descendants(*f, "call").into_iter().any(|call| {
                RUNNERS.contains(&callee_name(call, src))
                    && agent_argument(call, src).is_some_and(|a| {
                        a.kind() == "identifier" && params.iter().any(|(n, _)| n == text(a, src))
                    })
            })
        })
        .map(|f| name_of(f, src).to_string())
        .collect()
}

/// What a runner call (`run_agent(x)`, `AgentSideConnection(x, ...)`) is handed as the agent.
fn agent_argument<'t>(call: Node<'t>, src: &str) -> Option<Node<'t>> {
    keyword_arg(call, "agent", src)
        .or_else(|| keyword_arg(call, "to_agent", src))
        .and_then(|k| k.child_by_field_name("value"))
        .or_else(|| positional_args(call).first().copied())
}

/// (file, class name) of what an expression handed to the SDK may be: the classes it
/// constructs, and when it is a parameter of the agent's own runner (`def run(agent, ...):
/// AgentSideConnection(agent, ...)`), what each call of that runner in the tree hands over.
fn handed_classes(files: &[Parsed], file: usize, expr: Node) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut todo = vec![(file, expr, 0)];
    while let Some((f, e, depth)) = todo.pop() {
        let src = files[f].file.text.as_ref();
        out.extend(class_names_of(e, src, 0).into_iter().map(|n| (f, n)));
        if depth >= 3 || e.kind() != "identifier" {
            continue;
        }
        let Some(runner) = enclosing_function(e) else {
            continue;
        };
        let params = parameters(runner, src);
        let Some(k) = params.iter().position(|(n, _)| n == text(e, src)) else {
            continue;
        };
        let (param, runner_name) = (params[k].0.clone(), name_of(runner, src).to_string());
        // `self` is not among a method's call arguments
        let k = if params
            .first()
            .is_some_and(|(n, _)| n == "self" || n == "cls")
        {
            k.saturating_sub(1)
        } else {
            k
        };
        for (j, p) in files.iter().enumerate() {
            let psrc = p.file.text.as_ref();
            if !is_agent_file(p) || !psrc.contains(runner_name.as_str()) {
                continue;
            }
            for call in descendants(p.tree().root_node(), "call") {
                if callee_name(call, psrc) != runner_name {
                    continue;
                }
                let given = keyword_arg(call, &param, psrc)
                    .and_then(|kw| kw.child_by_field_name("value"))
                    .or_else(|| positional_args(call).get(k).copied());
                if let Some(given) = given {
                    todo.push((j, given, depth + 1));
                }
            }
        }
    }
    out
}

/// Class names an expression constructs: `X(...)`, `cast(T, x)`, `lambda conn: X(conn)`, a call
/// of a factory of the module (its return annotation, what it returns), or a name assigned one
/// of those (or annotated with a class) in the enclosing function or module.
fn class_names_of(expr: Node, src: &str, depth: usize) -> Vec<String> {
    if depth > 4 {
        return vec![];
    }
    match expr.kind() {
        "call" => {
            let name = callee_name(expr, src);
            if name == "cast" {
                return positional_args(expr)
                    .last()
                    .map(|a| class_names_of(*a, src, depth + 1))
                    .unwrap_or_default();
            }
            let mut out = vec![name.to_string()];
            // a factory of the same module: what its annotation names and its returns build
            for f in top_level_functions(top_level(expr).parent().unwrap_or(expr)) {
                if name_of(f, src) != name {
                    continue;
                }
                if let Some(t) = f.child_by_field_name("return_type") {
                    out.extend(
                        descendants(t, "identifier")
                            .into_iter()
                            .map(|i| text(i, src).to_string()),
                    );
                }
                if let Some(body) = f.child_by_field_name("body") {
                    for r in descendants_same_scope(body, "return_statement") {
                        if let Some(v) = r.named_child(0) {
                            out.extend(class_names_of(v, src, depth + 1));
                        }
                    }
                }
            }
            out
        }
        "lambda" => expr
            .child_by_field_name("body")
            .map(|b| class_names_of(b, src, depth + 1))
            .unwrap_or_default(),
        "parenthesized_expression" | "await" => expr
            .named_child(0)
            .map(|b| class_names_of(b, src, depth + 1))
            .unwrap_or_default(),
        "identifier" => {
            let name = text(expr, src);
            // the class itself, handed over as the connection's factory
            let mut out = vec![name.to_string()];
            // the scope that binds the name: the enclosing function, or (a closure reads its
            // outer function's names: `agent = X()`, then `async def main(): await
            // run_agent(agent)`) the nearest function around it that does, else the module
            let mut scope = enclosing_function(expr);
            loop {
                let mut binds = false;
                if let Some(f) = scope {
                    for (n, param) in parameters(f, src) {
                        if n != name {
                            continue;
                        }
                        binds = true;
                        if let Some(t) = param.child_by_field_name("type") {
                            out.extend(
                                descendants(t, "identifier")
                                    .into_iter()
                                    .map(|i| text(i, src).to_string()),
                            );
                        }
                    }
                }
                let body = scope
                    .and_then(|f| f.child_by_field_name("body"))
                    .unwrap_or_else(|| top_level(expr).parent().unwrap_or(expr));
                for a in descendants_same_scope(body, "assignment") {
                    if a.child_by_field_name("left")
                        .is_some_and(|l| l.kind() == "identifier" && text(l, src) == name)
                        && let Some(r) = a.child_by_field_name("right")
                    {
                        binds = true;
                        out.extend(class_names_of(r, src, depth + 1));
                    }
                }
                match scope {
                    Some(f) if !binds => scope = enclosing_function(f),
                    _ => break,
                }
            }
            out
        }
        _ => vec![],
    }
}
