//! What a name of the agent's own code refers to: the function a callee or a registered
//! handler names (`self.m`, a function of the module or one it imports, `module.f`, a lambda
//! calling one), the files a `from <module> import` names and the calls of a function.

use super::super::At;
use super::super::found::is_agent_file;
use crate::lang::parts::Parsed;
use crate::lang::python::syntax::*;
use tree_sitter::Node;

/// How many `from x import y` hops a name is followed through (re-exports).
const IMPORT_DEPTH: usize = 4;

/// The function a callee expression names in the tree: `self.m` (a method of the class it
/// is read in), a function of the module or one it imports, `module.f` of an imported module
/// of the tree, or the function a lambda calls (`lambda params: handle(self, params)`).
pub fn resolve_callable<'a>(files: &'a [Parsed], file: usize, expr: Node<'a>) -> Option<At<'a>> {
    let src = files[file].file.text.as_ref();
    match expr.kind() {
        // an attribute naming a property is the value the property returns, not a function
        // (langgraph-acp 1.11.0: `Err(..., agent=self._client.agent, operation="session/prompt")`
        // registers nothing)
        "attribute" => attribute_callable(files, file, expr)
            .filter(|at| !is_property(at.node, &files[at.file].file.text)),
        "identifier" => function_named(files, file, text(expr, src), 0),
        "lambda" => {
            let body = expr.child_by_field_name("body")?;
            let call = if body.kind() == "await" {
                body.named_child(0)?
            } else {
                body
            };
            (call.kind() == "call")
                .then(|| resolve_callable(files, file, call.child_by_field_name("function")?))
                .flatten()
        }
        _ => None,
    }
}

/// Whether a function is a property's getter (`@property`, `@cached_property`,
/// `@functools.cached_property`): read as an attribute, it is never called.
fn is_property(def: Node, src: &str) -> bool {
    decorators(def).into_iter().any(|d| {
        let name = text(d, src).trim_start_matches('@').trim();
        matches!(
            name.rsplit('.').next(),
            Some("property" | "cached_property")
        )
    })
}

/// [`resolve_callable`] of `<object>.<name>`: a method of the reading class (`self.<name>`),
/// of an object it holds, or a module's function.
fn attribute_callable<'a>(files: &'a [Parsed], file: usize, expr: Node<'a>) -> Option<At<'a>> {
    let src = files[file].file.text.as_ref();
    let obj = expr.child_by_field_name("object")?;
    let name = text(expr.child_by_field_name("attribute")?, src);
    if text(obj, src) != "self" {
        if let Some(held) = held_method(files, file, obj, name) {
            return Some(held);
        }
        return (obj.kind() == "identifier")
            .then(|| {
                imported_module(files, file, text(obj, src))
                    .into_iter()
                    .find_map(|m| function_named(files, m, name, 1))
            })
            .flatten();
    }
    let class = enclosing_class(expr)?;
    methods(class)
        .into_iter()
        .find(|m| name_of(*m, src) == name)
        .map(|m| At { file, node: m })
}

/// `self.<attr>.<name>`: the method `name` of the class whose instance the reading class
/// keeps in `self.<attr>` (`self.sessions = SessionManager(...)` in one of its methods, or an
/// object its constructor is handed: `self._session = session_handler` with the parameter
/// annotated `session_handler: SessionHandler`, or the attribute itself annotated), a class of
/// the module or one it imports: a dispatcher that hands a method to an object it holds
/// (`return await self.sessions.prompt(params)`, `self._handlers["session/prompt"] =
/// self._session.handle_prompt`).
fn held_method<'a>(files: &'a [Parsed], file: usize, obj: Node<'a>, name: &str) -> Option<At<'a>> {
    let src = files[file].file.text.as_ref();
    if obj.kind() != "attribute" || text(obj.child_by_field_name("object")?, src) != "self" {
        return None;
    }
    let attr = text(obj.child_by_field_name("attribute")?, src);
    let class = enclosing_class(obj)?;
    descendants(class, "assignment").into_iter().find_map(|a| {
        let left = a.child_by_field_name("left")?;
        let right = a.child_by_field_name("right")?;
        if left.kind() != "attribute"
            || text(left.child_by_field_name("object")?, src) != "self"
            || text(left.child_by_field_name("attribute")?, src) != attr
        {
            return None;
        }
        let built = if right.kind() == "call" {
            class_named(files, file, callee_name(right, src), 0)?
        } else {
            // `self._session: SessionHandler = ...`, or a parameter annotated with the class
            let ty = a.child_by_field_name("type").or_else(|| {
                (right.kind() == "identifier")
                    .then(|| parameter_type(a, text(right, src), src))
                    .flatten()
            })?;
            annotated_classes(ty, src)
                .into_iter()
                .find_map(|c| class_read_as(files, file, c))?
        };
        let bsrc = files[built.file].file.text.as_ref();
        methods(built.node)
            .into_iter()
            .find(|m| name_of(*m, bsrc) == name)
            .map(|m| At {
                file: built.file,
                node: m,
            })
    })
}

/// The annotation of the parameter `name` of the function an assignment is in.
fn parameter_type<'a>(assignment: Node<'a>, name: &str, src: &str) -> Option<Node<'a>> {
    let def = enclosing_function(assignment)?;
    parameters(def, src)
        .into_iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, p)| p.child_by_field_name("type"))
}

/// The classes an annotation may stand for, as (module, class) names: `X`, `X | None`,
/// `Optional[X]`, `"X"`, `mod.X` (the module a name of the file stands for).
pub(in crate::lang::python) fn annotated_classes<'a>(
    ty: Node,
    src: &'a str,
) -> Vec<(Option<&'a str>, &'a str)> {
    let mut names: Vec<&'a str> = Vec::new();
    for n in descendants(ty, "attribute")
        .into_iter()
        .chain(descendants(ty, "identifier"))
    {
        if n.parent().is_none_or(|p| p.kind() != "attribute") {
            names.push(text(n, src));
        }
    }
    for s in descendants(ty, "string") {
        let t = text(s, src).trim_matches(['"', '\'']);
        names.extend(t.split(['|', '[', ']', ',', ' ']).filter(|w| !w.is_empty()));
    }
    names
        .into_iter()
        .map(|n| match n.rsplit_once('.') {
            Some((module, class)) => (Some(module), class),
            None => (None, n),
        })
        .filter(|(_, n)| !matches!(*n, "None" | "Optional" | "Union"))
        .collect()
}

/// A class of the tree by the (module, class) names a file reads it by.
fn class_read_as<'a>(
    files: &'a [Parsed],
    file: usize,
    (module, name): (Option<&str>, &str),
) -> Option<At<'a>> {
    match module {
        None => class_named(files, file, name, 0),
        Some(m) => imported_module(files, file, m)
            .into_iter()
            .find_map(|f| class_named(files, f, name, IMPORT_DEPTH)),
    }
}

/// A module-level class of a file by name, or the one it imports under that name.
fn class_named<'a>(files: &'a [Parsed], file: usize, name: &str, depth: usize) -> Option<At<'a>> {
    let src = files[file].file.text.as_ref();
    let root = files[file].tree().root_node();
    if let Some(c) = named_children(root)
        .into_iter()
        .map(|n| match n.kind() {
            "decorated_definition" => n.child_by_field_name("definition").unwrap_or(n),
            _ => n,
        })
        .find(|n| n.kind() == "class_definition" && name_of(*n, src) == name)
    {
        return Some(At { file, node: c });
    }
    if depth > IMPORT_DEPTH {
        return None;
    }
    imported_from(files, file, name)
        .into_iter()
        .find_map(|(target, orig)| class_named(files, target, &orig, depth + 1))
}

/// The class a definition is a method of (not through a nested function).
pub fn class_of(def: Node) -> Option<Node> {
    let mut cur = def.parent();
    while let Some(n) = cur {
        match n.kind() {
            "class_definition" => return Some(n),
            "function_definition" => return None,
            _ => cur = n.parent(),
        }
    }
    None
}

/// A module-level function of a file by name, or the one it imports under that name.
pub fn function_named<'a>(
    files: &'a [Parsed],
    file: usize,
    name: &str,
    depth: usize,
) -> Option<At<'a>> {
    let src = files[file].file.text.as_ref();
    let root = files[file].tree().root_node();
    if let Some(f) = top_level_functions(root)
        .into_iter()
        .find(|f| name_of(*f, src) == name)
    {
        return Some(At { file, node: f });
    }
    if depth > IMPORT_DEPTH {
        return None;
    }
    imported_from(files, file, name)
        .into_iter()
        .find_map(|(target, orig)| function_named(files, target, &orig, depth + 1))
}

/// The files (and the names there) a module-level `from <module> import <orig> as <name>` of
/// a file takes `name` from.
pub fn imported_from(files: &[Parsed], file: usize, name: &str) -> Vec<(usize, String)> {
    let src = files[file].file.text.as_ref();
    let mut out = Vec::new();
    for imp in descendants(files[file].tree().root_node(), "import_from_statement") {
        let Some(module) = imp.child_by_field_name("module_name").map(|m| text(m, src)) else {
            continue;
        };
        for (orig, local) in imported_names(imp, src) {
            if local == name {
                out.extend(
                    module_files(files, file, module)
                        .into_iter()
                        .map(|t| (t, orig.to_string())),
                );
            }
        }
    }
    out
}

/// The files of the tree a name of a file stands for as a module: `from pkg import mod`,
/// `from . import mod`, `import pkg.mod as mod`, `import mod`.
fn imported_module(files: &[Parsed], file: usize, name: &str) -> Vec<usize> {
    let src = files[file].file.text.as_ref();
    let root = files[file].tree().root_node();
    let mut out = Vec::new();
    for imp in descendants(root, "import_from_statement") {
        let Some(module) = imp.child_by_field_name("module_name").map(|m| text(m, src)) else {
            continue;
        };
        for (orig, local) in imported_names(imp, src) {
            if local == name {
                let sep = if module.ends_with('.') { "" } else { "." };
                out.extend(module_files(files, file, &format!("{module}{sep}{orig}")));
            }
        }
    }
    for imp in descendants(root, "import_statement") {
        let mut c = imp.walk();
        for n in imp.children_by_field_name("name", &mut c) {
            let (module, local) = match n.kind() {
                "aliased_import" => (
                    n.child_by_field_name("name").map(|x| text(x, src)),
                    n.child_by_field_name("alias").map(|x| text(x, src)),
                ),
                _ => (Some(text(n, src)), Some(text(n, src))),
            };
            if local == Some(name)
                && let Some(module) = module
            {
                out.extend(module_files(files, file, module));
            }
        }
    }
    out
}

/// The files of the tree a `from <module> import` may name (relative or absolute).
pub fn module_files(files: &[Parsed], from: usize, module: &str) -> Vec<usize> {
    let wanted = crate::lang::python::package::module_paths(&files[from].file.rel, module);
    files
        .iter()
        .enumerate()
        .filter(|(_, p)| crate::lang::python::package::is_module_path(&p.file.rel, &wanted))
        .map(|(i, _)| i)
        .collect()
}

/// Every call of a function of the tree (`f(...)` resolving to it, `self.f(...)` in its class).
pub fn calls_of<'a>(files: &'a [Parsed], file: usize, func: Node<'a>) -> Vec<(usize, Node<'a>)> {
    let name = name_of(func, &files[file].file.text).to_string();
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) || !p.file.text.contains(name.as_str()) {
            continue;
        }
        for c in descendants(p.tree().root_node(), "call") {
            if callee_name(c, &p.file.text) != name {
                continue;
            }
            let target = c
                .child_by_field_name("function")
                .and_then(|f| resolve_callable(files, i, f));
            if target.is_some_and(|t| t.file == file && t.node.id() == func.id()) {
                out.push((i, c));
            }
        }
    }
    out
}

/// Parsed files of a tree given as (path, text) pairs, for the wire modules' tests.
#[cfg(test)]
pub fn tree(files: &[(&str, &str)]) -> Vec<Parsed> {
    files
        .iter()
        .map(|(rel, text)| {
            let file =
                crate::source::SourceFile::from_text(rel.into(), rel.to_string(), text.to_string());
            Parsed::new(file, crate::lang::python::syntax::PARSER)
        })
        .collect()
}
