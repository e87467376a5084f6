//! Where the classes an agent's modules take from elsewhere may be defined. A module needs
//! the bases of its classes and (for the modules that import the SDK) the capitalised names
//! it imports; each is looked for only in the files its import can name: `List` from
//! `typing` or a `Usage` of another package in the same tree is never read, nor parsed.

use crate::lang::python::syntax::*;
use std::collections::HashMap;
use tree_sitter::Node;

/// The module a name comes from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// An absolute module (`a.b`): a file whose path holds `a/b`, as the module itself or a
    /// module of that package (one its `__init__` may re-export).
    Absolute(Vec<String>),
    /// A relative import, resolved against the importer: the module's path in the tree
    /// (`""`: the tree's top), and the modules below it.
    Relative(String),
}

impl Source {
    /// Whether the file at `rel` (`/`-separated, relative to the tree) may be this module or
    /// one of its package. `above` names the packages around the tree (pointed at an installed
    /// package's folder: `vibe/acp/x.py` is `rel` `acp/x.py`).
    pub fn admits(&self, rel: &str, above: &[String]) -> bool {
        let stem = rel.strip_suffix(".py").unwrap_or(rel);
        let stem = match stem.strip_suffix("__init__") {
            Some(dir) => dir.trim_end_matches('/'),
            None => stem,
        };
        match self {
            Source::Relative(module) => {
                module.is_empty()
                    || stem == module
                    || stem
                        .strip_prefix(module.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            }
            Source::Absolute(module) => {
                // the module's first name is a folder around the tree or in the path
                let Some(first) = module.first() else {
                    return false;
                };
                if !above.contains(first) && !stem.contains(first.as_str()) {
                    return false;
                }
                let path: Vec<&str> = above
                    .iter()
                    .map(String::as_str)
                    .chain(stem.split('/').filter(|s| !s.is_empty()))
                    .collect();
                !module.is_empty() && path.windows(module.len()).any(|w| w == module)
            }
        }
    }
}

/// Class names the module at `rel` takes from elsewhere, each with the modules it may come
/// from: the bases of its classes that it imports, and (`imports`) the capitalised names it
/// imports (`from m import Agent, Mixin as M` gives `Agent` and `Mixin` from `m`). A base the
/// module defines itself needs nothing; one it neither defines nor imports (a builtin) is
/// looked for only in the modules it star-imports.
pub fn needed(root: Node, src: &str, rel: &str, imports: bool) -> Vec<(String, Source)> {
    let bound = Imports::of(root, src, rel);
    let mut out = Vec::new();
    if imports {
        for (original, source) in bound.names.values() {
            if original.starts_with(|c: char| c.is_ascii_uppercase()) {
                out.push((original.clone(), source.clone()));
            }
        }
        out.sort();
    }
    let defined: Vec<&str> = class_names(src).collect();
    for class in descendants(root, "class_definition") {
        for base in superclasses(class) {
            out.extend(bound.base(base, src, &defined));
        }
    }
    out
}

/// The classes among `searched` that the module at `rel` imports rather than defines (a module
/// re-exporting them: `from .impl import Base` in `compat.py`), each with where it imports it
/// from: the search goes on there.
pub fn reexported(
    root: Node,
    src: &str,
    rel: &str,
    searched: impl Fn(&str) -> bool,
) -> Vec<(String, Source)> {
    let defined: Vec<&str> = class_names(src).collect();
    let mut out: Vec<(String, Source)> = Imports::of(root, src, rel)
        .names
        .into_iter()
        .filter(|(local, _)| searched(local) && !defined.contains(&local.as_str()))
        .map(|(_, from)| from)
        .collect();
    out.sort();
    out
}

/// Whether a text may import `name` (a literal test: it imports something and names it as a
/// word; an import spans lines inside parentheses).
pub fn may_import(text: &str, name: &str) -> bool {
    crate::needles::contains(text, "import") && mentions_word(text, name)
}

/// What a module's imports bind: a local name → (the name in its module, that module), and
/// a local name → the module it is (`import a.b as m`), with the star-imported modules.
#[derive(Default)]
struct Imports {
    names: HashMap<String, (String, Source)>,
    modules: HashMap<String, Source>,
    stars: Vec<Source>,
}

impl Imports {
    fn of(root: Node, src: &str, rel: &str) -> Imports {
        let mut out = Imports::default();
        for imp in descendants(root, "import_from_statement") {
            let Some(module) = imp.child_by_field_name("module_name") else {
                continue;
            };
            let source = module_source(module, src, rel);
            for n in named_children(imp) {
                if n.id() == module.id() {
                    continue;
                }
                let (name, alias) = match n.kind() {
                    "dotted_name" => (n, n),
                    "aliased_import" => match (
                        n.child_by_field_name("name"),
                        n.child_by_field_name("alias"),
                    ) {
                        (Some(name), Some(alias)) => (name, alias),
                        _ => continue,
                    },
                    "wildcard_import" => {
                        out.stars.push(source.clone());
                        continue;
                    }
                    _ => continue,
                };
                let name = text(name, src).to_string();
                // `from pkg import sub` may bind a module: `sub.Base` is then looked for there
                out.modules
                    .insert(text(alias, src).to_string(), submodule(&source, &name));
                out.names
                    .insert(text(alias, src).to_string(), (name, source.clone()));
            }
        }
        for imp in descendants(root, "import_statement") {
            for n in named_children(imp) {
                let (module, bound) = match n.kind() {
                    "dotted_name" => {
                        let first = text(n, src).split('.').next().unwrap_or_default();
                        (first.to_string(), first.to_string())
                    }
                    "aliased_import" => match (
                        n.child_by_field_name("name"),
                        n.child_by_field_name("alias"),
                    ) {
                        (Some(name), Some(alias)) => {
                            (text(name, src).to_string(), text(alias, src).to_string())
                        }
                        _ => continue,
                    },
                    _ => continue,
                };
                out.modules
                    .insert(bound, Source::Absolute(segments(&module)));
            }
        }
        out
    }

    /// The class a base names and where to look for it; `None` when the module defines it or
    /// nothing says where it comes from.
    fn base(&self, base: Node, src: &str, defined: &[&str]) -> Vec<(String, Source)> {
        match base.kind() {
            "identifier" => {
                let name = text(base, src);
                if let Some((original, source)) = self.names.get(name) {
                    vec![(original.clone(), source.clone())]
                } else if defined.contains(&name) {
                    Vec::new()
                } else {
                    self.stars
                        .iter()
                        .map(|s| (name.to_string(), s.clone()))
                        .collect()
                }
            }
            "attribute" => {
                let (Some(object), Some(name)) = (
                    base.child_by_field_name("object"),
                    base.child_by_field_name("attribute"),
                ) else {
                    return Vec::new();
                };
                let dotted = text(object, src);
                let (first, rest) = dotted.split_once('.').unwrap_or((dotted, ""));
                let source = match self.modules.get(first) {
                    Some(module) => rest
                        .split('.')
                        .filter(|s| !s.is_empty())
                        .fold(module.clone(), |m, s| submodule(&m, s)),
                    None => Source::Absolute(segments(dotted)),
                };
                vec![(text(name, src).to_string(), source)]
            }
            "subscript" => base
                .child_by_field_name("value")
                .map(|v| self.base(v, src, defined))
                .unwrap_or_default(),
            _ => Vec::new(),
        }
    }
}

fn segments(dotted: &str) -> Vec<String> {
    dotted
        .split('.')
        .filter(|s| !s.is_empty())
        .map(|s| s.trim().to_string())
        .collect()
}

fn submodule(source: &Source, name: &str) -> Source {
    match source {
        Source::Absolute(m) => Source::Absolute(m.iter().cloned().chain([name.into()]).collect()),
        Source::Relative(m) if m.is_empty() => Source::Relative(name.into()),
        Source::Relative(m) => Source::Relative(format!("{m}/{name}")),
    }
}

/// The module an import names: `a.b`, or `..x` against the importer's folder; a relative
/// import reaching above the tree keeps only the names below (`x`), as an absolute one.
fn module_source(module: Node, src: &str, rel: &str) -> Source {
    if module.kind() != "relative_import" {
        return Source::Absolute(segments(text(module, src)));
    }
    let spelled = text(module, src);
    let dots = spelled.chars().take_while(|c| *c == '.').count();
    let below = segments(&spelled[dots..]);
    let mut dir: Vec<&str> = rel.split('/').collect();
    dir.pop(); // the importer's own file
    for _ in 1..dots {
        if dir.pop().is_none() {
            return Source::Absolute(below);
        }
    }
    let path: Vec<String> = dir.iter().map(|s| s.to_string()).chain(below).collect();
    Source::Relative(path.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(src: &str, rel: &str, imports: bool) -> Vec<(String, Source)> {
        needed(parse(src).root_node(), src, rel, imports)
    }

    fn abs(m: &str) -> Source {
        Source::Absolute(segments(m))
    }

    #[test]
    fn a_module_needs_its_imported_bases_and_capitalised_imports_from_where_it_imports_them() {
        let src = "from acp import run_agent\nfrom .adapter import Adapter as A, helper\nfrom typing import Generic\nimport os\nimport pkg.mod as mod\nfrom base import *\n\nclass Local: pass\n\nclass B(A, Generic[T], mod.Base, Local, Mixin, Exception, metaclass=M):\n    pass\n";
        let rel = "agent/server.py";
        let local = Source::Relative("agent/adapter".into());
        assert_eq!(
            needs(src, rel, true),
            [
                ("Adapter".to_string(), local.clone()),
                ("Generic".into(), abs("typing")),
                ("Adapter".into(), local.clone()),
                ("Generic".into(), abs("typing")),
                ("Base".into(), abs("pkg.mod")),
                ("Mixin".into(), abs("base")),
                ("Exception".into(), abs("base")),
            ]
        );
        assert_eq!(needs(src, rel, false)[0], ("Adapter".to_string(), local));
    }

    #[test]
    fn a_module_that_imports_a_searched_class_passes_the_search_on() {
        let src = "from .impl import Base, Other as O\nfrom x import Mine\nclass Mine: pass\n";
        assert_eq!(
            reexported(parse(src).root_node(), src, "pkg/compat.py", |n| n != "O"),
            [("Base".to_string(), Source::Relative("pkg/impl".into()))]
        );
        assert!(may_import(src, "Base"));
        assert!(may_import(
            "from a import (\n    X,\n    Base,\n)\n",
            "Base"
        ));
        assert!(!may_import("class Base: pass\n", "Base"));
        assert!(!may_import("from a import BaseX\n", "Base"));
    }

    #[test]
    fn relative_imports_resolve_against_the_importer() {
        let src =
            "from ..core.base import Base\nfrom . import mixins\nclass A(Base, mixins.M): pass\n";
        assert_eq!(
            needs(src, "pkg/acp/agent.py", false),
            [
                ("Base".to_string(), Source::Relative("pkg/core/base".into())),
                ("M".into(), Source::Relative("pkg/acp/mixins".into())),
            ]
        );
        // above the tree: the names below, anywhere
        assert_eq!(
            needs(src, "agent.py", false)[0],
            ("Base".to_string(), abs("core.base"))
        );
    }

    #[test]
    fn a_module_admits_the_files_its_import_can_name() {
        let m = abs("hermes.agent");
        assert!(m.admits("hermes/agent.py", &[]));
        assert!(m.admits("src/hermes/agent/__init__.py", &[]));
        assert!(m.admits("src/hermes/agent/core.py", &[])); // re-exported by the package
        assert!(!m.admits("hermes/agents.py", &[]));
        assert!(!m.admits("other/agent.py", &[]));
        assert!(!abs("typing").admits("libcst/_nodes/expression.py", &[]));
        // pointed at the package's own folder
        assert!(m.admits("agent/core.py", &["hermes".into()]));
        let r = Source::Relative("pkg/base".into());
        assert!(r.admits("pkg/base.py", &[]));
        assert!(r.admits("pkg/base/__init__.py", &[]));
        assert!(r.admits("pkg/base/x.py", &[]));
        assert!(!r.admits("pkg/based.py", &[]));
        assert!(!r.admits("other/pkg/base.py", &[]));
        assert!(Source::Relative(String::new()).admits("anything.py", &[]));
    }
}
