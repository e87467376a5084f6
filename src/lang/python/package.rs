//! How the agent imports its own modules: the dotted name of a file, counted from the agent's
//! package root (the folder holding its top package), never from the folder acp-patch was
//! pointed at — `apply .` at a monorepo root with the agent in `services/x/` imports
//! `my_agent.acp_progress`, not `services.x.my_agent.acp_progress`.

use super::syntax::*;
use crate::lang::parts::Parsed;
use crate::project::Project;
use std::collections::HashSet;

/// The import roots' evidence: every folder that is a regular package (holds `__init__.py`),
/// and every absolute module name the agent's own files import.
pub struct Packages {
    init_dirs: HashSet<String>,
    imported: HashSet<String>,
    /// When the folder acp-patch was pointed at is itself a package (an installed one:
    /// `site-packages/vibe`), its name and those of the packages around it, outermost first:
    /// `vibe/acp/agent.py` is imported as `vibe.acp.agent`, never `acp.agent`.
    above_root: Vec<String>,
}

impl Packages {
    pub fn new(project: &Project, files: &[Parsed]) -> Packages {
        let init_dirs = project
            .rels()
            .filter_map(|rel| rel.strip_suffix("__init__.py"))
            .map(|d| d.trim_end_matches('/').to_string())
            .collect();
        // a line scan, not the trees: the files are parsed only where an anchor may be
        let imported = files
            .iter()
            .flat_map(|p| absolute_imports(&p.file.text))
            .map(str::to_string)
            .collect();
        Packages {
            above_root: packages_around(&project.root),
            init_dirs,
            imported,
        }
    }

    /// The dotted module name of a `.py` file (relative path, `/`-separated) as the agent
    /// imports it: the package part reaches up through every folder holding `__init__.py`, or
    /// further where the agent's own absolute imports name more of the path (namespace
    /// packages); a file in no package is a top-level module.
    pub fn module_name(&self, rel: &str) -> String {
        let stem = rel.trim_end_matches(".py");
        let (dir, file) = stem.rsplit_once('/').unwrap_or(("", stem));
        let segments: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
        let mut depth = 0;
        while depth < segments.len()
            && self
                .init_dirs
                .contains(&segments[..segments.len() - depth].join("/"))
        {
            depth += 1;
        }
        for k in depth + 1..=segments.len() {
            let tail = segments[segments.len() - k..].join(".");
            if self
                .imported
                .iter()
                .any(|m| *m == tail || m.starts_with(&format!("{tail}.")))
            {
                depth = k;
            }
        }
        let mut parts: Vec<&str> = Vec::new();
        if depth == segments.len() && self.init_dirs.contains("") {
            parts.extend(self.above_root.iter().map(String::as_str));
        }
        parts.extend_from_slice(&segments[segments.len() - depth..]);
        if file != "__init__" {
            parts.push(file);
        }
        parts.join(".")
    }

    /// Where the module at `rel` sits for the import system: its import root (the folder on
    /// `sys.path` its top name is found in) and the packages it is in, outermost first — for a
    /// package's `__init__.py`, that package too. Every one of those packages has run (or is
    /// running) its `__init__` by the time the module's own code runs.
    pub fn place(&self, rel: &str) -> Place {
        let module = self.module_name(rel);
        let mut packages: Vec<String> = module.split('.').map(str::to_string).collect();
        let is_init = rel.rsplit('/').next() == Some("__init__.py");
        if !is_init || module.is_empty() {
            packages.pop();
        }
        let dir = rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        let segments: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
        let root = segments[..segments.len().saturating_sub(packages.len())].join("/");
        Place { root, packages }
    }

    /// How many of the leading packages of a module in import root `root` are folders above
    /// the tree (the tree is itself a package, e.g. an installed `site-packages/vibe`): no
    /// file can go there.
    pub fn above_tree(&self, root: &str) -> usize {
        if root.is_empty() && self.init_dirs.contains("") {
            self.above_root.len()
        } else {
            0
        }
    }

    /// The packages above the tree that its modules' names begin with (see [`Self::above_tree`]).
    pub fn names_above_tree(&self) -> &[String] {
        &self.above_root[..self.above_tree("")]
    }

    /// Whether `packages` under the import root `root` is a regular package (`__init__.py`).
    pub fn is_regular(&self, root: &str, packages: &[String]) -> bool {
        let dir = packages.join("/");
        let path = if root.is_empty() {
            dir
        } else {
            format!("{root}/{dir}")
        };
        self.init_dirs.contains(&path)
    }

    /// The statement with which a module at `importer` imports the module `name` of the
    /// package `package` (an ancestor of the importer's, or `[]`: a top-level module):
    /// absolute, or relative (`from .. import x`) where a folder on the way is no Python name.
    pub fn import_from_ancestor(&self, importer: &Place, package: &[String], name: &str) -> String {
        if package.is_empty() {
            return format!("import {name}");
        }
        if package.iter().all(|p| is_identifier(p)) {
            return format!("from {} import {name}", package.join("."));
        }
        let up = importer.packages.len() - package.len();
        format!("from {} import {name}", ".".repeat(up + 1))
    }
}

/// Where a module sits: see [`Packages::place`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The import root, relative to the tree (`""`: the tree itself).
    pub root: String,
    /// The packages the module is in, outermost first.
    pub packages: Vec<String>,
}

/// The paths a `from <module> import` in the file `from_rel` may name, relative (`.x`, `..x`
/// from the file's folder) or absolute (matched as a suffix by [`is_module_path`]): the
/// module's file and its package's `__init__.py`.
pub fn module_paths(from_rel: &str, module: &str) -> [String; 2] {
    let dots = module.chars().take_while(|c| *c == '.').count();
    let rest = module[dots..].replace('.', "/");
    let path = if dots > 0 {
        let mut dir: Vec<&str> = from_rel.split('/').collect();
        dir.pop();
        for _ in 1..dots {
            dir.pop();
        }
        let base = dir.join("/");
        [base.as_str(), rest.as_str()]
            .iter()
            .filter(|s| !s.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("/")
    } else {
        rest
    };
    [format!("{path}.py"), format!("{path}/__init__.py")]
}

/// Whether a file's relative path is one of [`module_paths`] (or ends with one).
pub fn is_module_path(rel: &str, wanted: &[String; 2]) -> bool {
    wanted.iter().any(|w| {
        rel == w
            || rel.len() > w.len()
                && rel.ends_with(w.as_str())
                && rel[..rel.len() - w.len()].ends_with('/')
    })
}

/// The names of `root` and of each folder above it while it holds `__init__.py`, outermost
/// first; empty when `root` is no package.
pub(super) fn packages_around(root: &std::path::Path) -> Vec<String> {
    let mut names = Vec::new();
    let mut dir = root.canonicalize().ok();
    while let Some(d) = dir {
        let name = d.file_name().map(|n| n.to_string_lossy().into_owned());
        match name {
            Some(name) if d.join("__init__.py").is_file() && is_identifier(&name) => {
                names.push(name);
                dir = d.parent().map(std::path::Path::to_path_buf);
            }
            _ => break,
        }
    }
    names.reverse();
    names
}

/// A Python name (the `str.isidentifier()` of ASCII and letters of any script).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_alphabetic())
        && chars.all(|c| c == '_' || c.is_alphanumeric())
}

/// The folders (`rel` prefixes ending in `/`) of copies of the SDK itself in the tree: a
/// package `acp` defining the SDK's `AgentSideConnection` (an agent shipping a fork of the
/// SDK beside its own packages). Its agents are examples and test doubles, never the agent to
/// patch (a `prompt` pin may still name one); its sends are the agent's, and stay wrapped.
pub fn vendored_sdk(files: &[Parsed]) -> Vec<String> {
    let mut dirs: Vec<String> = files
        .iter()
        .filter(|p| crate::needles::contains(&p.file.text, "class AgentSideConnection"))
        .filter_map(|p| {
            let rel = &p.file.rel;
            let at = rel
                .match_indices("acp/")
                .map(|(i, _)| i)
                .find(|&i| i == 0 || rel[..i].ends_with('/'))?;
            Some(rel[..at + "acp/".len()].to_string())
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packages(inits: &[&str], imported: &[&str]) -> Packages {
        Packages {
            init_dirs: inits.iter().map(|s| s.to_string()).collect(),
            imported: imported.iter().map(|s| s.to_string()).collect(),
            above_root: Vec::new(),
        }
    }

    /// Pointed at an installed package's own folder (`site-packages/vibe`): its name leads.
    #[test]
    fn a_root_that_is_a_package_leads_the_name() {
        let site = tempfile::tempdir().unwrap();
        let vibe = site.path().join("vibe");
        std::fs::create_dir_all(vibe.join("acp")).unwrap();
        std::fs::write(vibe.join("__init__.py"), "").unwrap();
        let p = Packages {
            init_dirs: ["", "acp"].iter().map(|s| s.to_string()).collect(),
            imported: ["acp.schema".to_string()].into(),
            above_root: packages_around(&vibe),
        };
        assert_eq!(
            p.module_name("acp/acp_progress.py"),
            "vibe.acp.acp_progress"
        );
        assert_eq!(p.module_name("cli.py"), "vibe.cli");
        // a site-packages folder is no package
        assert!(packages_around(site.path()).is_empty());
    }

    #[test]
    fn names_count_from_the_package_root() {
        let p = packages(
            &["services/x/src/my_agent", "services/x/src/my_agent/acp"],
            &[],
        );
        assert_eq!(
            p.module_name("services/x/src/my_agent/acp/acp_progress.py"),
            "my_agent.acp.acp_progress"
        );
        assert_eq!(p.module_name("agent.py"), "agent");
        assert_eq!(p.module_name("scripts/agent.py"), "agent");
        // a namespace package the agent imports by its full name
        let p = packages(&["src/ns/pkg"], &["ns.pkg.llm", "acp"]);
        assert_eq!(
            p.module_name("src/ns/pkg/acp_progress.py"),
            "ns.pkg.acp_progress"
        );
        // the SDK's own `acp` never stretches a regular package
        let p = packages(&["agent", "agent/acp"], &["acp.schema"]);
        assert_eq!(
            p.module_name("agent/acp/acp_progress.py"),
            "agent.acp.acp_progress"
        );
    }

    fn place(root: &str, packages: &[&str]) -> Place {
        Place {
            root: root.into(),
            packages: packages.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_module_sits_in_its_import_root_inside_its_packages() {
        let p = packages(
            &["src/pkg", "src/pkg/acp", "src/pkg/acp/server"],
            &["pkg.acp.acp_context"],
        );
        assert_eq!(
            p.place("src/pkg/acp/server/agent_server.py"),
            place("src", &["pkg", "acp", "server"])
        );
        // a package's `__init__` is in the package itself
        assert_eq!(
            p.place("src/pkg/acp/__init__.py"),
            place("src", &["pkg", "acp"])
        );
        assert_eq!(p.place("scripts/agent.py"), place("scripts", &[]));
        assert_eq!(p.place("agent.py"), place("", &[]));
        assert!(p.is_regular("src", &["pkg".into()]));
        assert!(!p.is_regular("", &["pkg".into()]));
        // two agents of one package name in one tree: two import roots
        let p = packages(&["a/streamy", "b/streamy"], &[]);
        assert_eq!(p.place("b/streamy/agent.py"), place("b", &["streamy"]));
    }

    #[test]
    fn the_runtime_is_imported_from_an_enclosing_package() {
        let p = packages(&[], &[]);
        let server = place("", &["pkg", "acp", "server"]);
        assert_eq!(
            p.import_from_ancestor(&server, &["pkg".into()], "acp_progress"),
            "from pkg import acp_progress"
        );
        assert_eq!(
            p.import_from_ancestor(&place("", &[]), &[], "acp_progress"),
            "import acp_progress"
        );
        // a folder that is no Python name: relative, counted from the importer's package
        let odd = place("", &["my agent", "acp"]);
        assert_eq!(
            p.import_from_ancestor(&odd, &["my agent".into()], "acp_progress"),
            "from .. import acp_progress"
        );
    }
}
