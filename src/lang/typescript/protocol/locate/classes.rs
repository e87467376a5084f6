//! The class `new AgentSideConnection((conn) => new X(conn), ...)` builds, wherever it is declared.

use super::*;

/// `new AgentSideConnection((conn) => new X(conn, ...), stream)`: the class `X` and the index
/// of the factory's argument among `X`'s constructor arguments.
pub(super) fn sdk_classes<'a>(files: &'a [Parsed]) -> Vec<(usize, Node<'a>, usize, usize, usize)> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let src = p.file.text.as_str();
        if !src.contains("AgentSideConnection") {
            continue;
        }
        for n in descendants(p.tree.root_node(), "new_expression") {
            let ctor = n.child_by_field_name("constructor").map(|c| text(c, src));
            if !ctor
                .is_some_and(|c| c == "AgentSideConnection" || c.ends_with(".AgentSideConnection"))
            {
                continue;
            }
            let Some(factory) = n
                .child_by_field_name("arguments")
                .and_then(|a| named_children(a).into_iter().next())
                .and_then(|f| factory_function(f, src, p.tree.root_node()))
            else {
                continue;
            };
            let Some((param, _)) = parameter_names(factory, src).into_iter().next() else {
                continue;
            };
            for inner in descendants(factory, "new_expression") {
                let Some(class_name) = inner.child_by_field_name("constructor") else {
                    continue;
                };
                let args: Vec<Node> = inner
                    .child_by_field_name("arguments")
                    .map(named_children)
                    .unwrap_or_default();
                if let Some(k) = args
                    .iter()
                    .position(|a| a.kind() == "identifier" && text(*a, src) == param)
                {
                    for (f, class) in resolve_class(files, i, text(class_name, src)) {
                        out.push((f, class, k, i, line(n)));
                    }
                }
            }
        }
    }
    out
}

/// The factory given to `AgentSideConnection`: a function expression, or the name of a function
/// of the same file (`function makeAgent(conn) { return new X(conn) }`, `const makeAgent = ...`).
pub(super) fn factory_function<'t>(arg: Node<'t>, src: &str, root: Node<'t>) -> Option<Node<'t>> {
    if is_function(arg) {
        return Some(arg);
    }
    if arg.kind() != "identifier" {
        return None;
    }
    let name = text(arg, src);
    if let Some((_, f)) = top_level_functions(root, src)
        .into_iter()
        .find(|(n, _)| n == name)
    {
        return Some(f);
    }
    descendants(root, "variable_declarator")
        .into_iter()
        .filter(|d| {
            d.child_by_field_name("name")
                .is_some_and(|n| text(n, src) == name)
        })
        .find_map(|d| d.child_by_field_name("value").filter(|v| is_function(*v)))
}

/// The class a name means in a file: declared there, imported under another name
/// (`import { ClaudeAcpAgent as Agent }`), or a default import of a file of the tree; else
/// every class of that name in the tree.
pub(super) fn resolve_class<'t>(
    files: &'t [Parsed],
    file: usize,
    name: &str,
) -> Vec<(usize, Node<'t>)> {
    let found = classes_named(files, name);
    if let Some(here) = found.iter().find(|(f, _)| *f == file) {
        return vec![*here];
    }
    let src = files[file].file.text.as_str();
    for imp in named_children(files[file].tree.root_node())
        .into_iter()
        .filter(|n| n.kind() == "import_statement")
    {
        let Some(spec) = imp
            .child_by_field_name("source")
            .and_then(|s| string_value(s, src))
        else {
            continue;
        };
        let target = resolve_import(files, file, spec);
        for spec_node in descendants(imp, "import_specifier") {
            let alias = spec_node.child_by_field_name("alias").map(|a| text(a, src));
            let original = spec_node.child_by_field_name("name").map(|n| text(n, src));
            if alias == Some(name)
                && let Some(original) = original
            {
                let named = classes_named(files, original);
                let from_target: Vec<_> = named
                    .iter()
                    .copied()
                    .filter(|(f, _)| Some(*f) == target)
                    .collect();
                return if from_target.is_empty() {
                    named
                } else {
                    from_target
                };
            }
        }
        let default = named_children(imp)
            .into_iter()
            .find(|c| c.kind() == "import_clause")
            .and_then(|c| {
                named_children(c)
                    .into_iter()
                    .find(|n| n.kind() == "identifier")
            });
        if default.is_some_and(|d| text(d, src) == name)
            && let Some(t) = target
        {
            let tsrc = files[t].file.text.as_str();
            for e in named_children(files[t].tree.root_node())
                .into_iter()
                .filter(|n| {
                    n.kind() == "export_statement" && text(*n, tsrc).starts_with("export default")
                })
            {
                if let Some(d) = e
                    .child_by_field_name("declaration")
                    .or_else(|| e.named_child(0))
                    && matches!(
                        d.kind(),
                        "class_declaration" | "abstract_class_declaration" | "class"
                    )
                {
                    return vec![(t, d)];
                }
            }
        }
    }
    if let Some(target) = found.iter().find(|(f, _)| {
        named_children(files[file].tree.root_node())
            .iter()
            .any(|imp| {
                imp.kind() == "import_statement"
                    && imp
                        .child_by_field_name("source")
                        .and_then(|s| string_value(s, src))
                        .is_some_and(|spec| resolve_import(files, file, spec) == Some(*f))
            })
    }) {
        return vec![*target];
    }
    found
}

/// The file of the tree a relative specifier names (`./agent.js` → `agent.ts`, `./x` → `x.ts`
/// or `x/index.ts`).
pub(super) fn resolve_import(files: &[Parsed], from: usize, spec: &str) -> Option<usize> {
    if !(spec.starts_with("./") || spec.starts_with("../")) {
        return None;
    }
    let rel = &files[from].file.rel;
    let mut parts: Vec<&str> = rel.split('/').collect();
    parts.pop();
    for seg in spec.split('/') {
        match seg {
            "." | "" => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    let stem = ["js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx"]
        .iter()
        .find_map(|e| joined.strip_suffix(&format!(".{e}")))
        .unwrap_or(&joined);
    let candidates: Vec<String> = ["ts", "tsx", "mts", "cts", "js", "jsx", "mjs", "cjs"]
        .iter()
        .flat_map(|e| [format!("{stem}.{e}"), format!("{joined}/index.{e}")])
        .collect();
    files.iter().position(|p| candidates.contains(&p.file.rel))
}
