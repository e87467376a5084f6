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
            .files
            .iter()
            .filter_map(|f| f.rel.strip_suffix("__init__.py"))
            .map(|d| d.trim_end_matches('/').to_string())
            .collect();
        let mut imported = HashSet::new();
        for p in files {
            let src = p.file.text.as_str();
            for n in descendants(p.tree.root_node(), "import_statement") {
                for m in named_children(n) {
                    let name = match m.kind() {
                        "aliased_import" => m.child_by_field_name("name"),
                        _ => Some(m),
                    };
                    if let Some(name) = name.filter(|n| n.kind() == "dotted_name") {
                        imported.insert(text(name, src).to_string());
                    }
                }
            }
            for n in descendants(p.tree.root_node(), "import_from_statement") {
                if let Some(m) = n
                    .child_by_field_name("module_name")
                    .filter(|m| m.kind() == "dotted_name")
                {
                    imported.insert(text(m, src).to_string());
                }
            }
        }
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

    /// The statement with which the module at `importer` (relative path) imports the module at
    /// `target` under its own name: absolute from the package root, or relative (`from . import
    /// x`) where a folder on the way is no Python name (`my agent/`) but both sit in one package.
    pub fn import_for(&self, importer: &str, target: &str) -> Option<String> {
        let module = self.module_name(target);
        if module.split('.').all(is_identifier) {
            return Some(Self::import_statement(&module));
        }
        let dir = |rel: &str| {
            rel.rsplit_once('/')
                .map(|(d, _)| d.to_string())
                .unwrap_or_default()
        };
        let (from, to) = (dir(importer), dir(target));
        let name = target.rsplit('/').next()?.trim_end_matches(".py");
        let inside = from == to || from.starts_with(&format!("{to}/"));
        if !inside || !self.init_dirs.contains(&from) || !is_identifier(name) {
            return None;
        }
        let up = from[to.len()..].matches('/').count();
        Some(format!("from {} import {name}", ".".repeat(up + 1)))
    }

    /// The statement importing module `module` (dotted) under the name of its last part.
    pub fn import_statement(module: &str) -> String {
        match module.rsplit_once('.') {
            Some((package, name)) => format!("from {package} import {name}"),
            None => format!("import {module}"),
        }
    }
}

/// The names of `root` and of each folder above it while it holds `__init__.py`, outermost
/// first; empty when `root` is no package.
fn packages_around(root: &std::path::Path) -> Vec<String> {
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
        assert_eq!(
            Packages::import_statement("agent.acp.acp_progress"),
            "from agent.acp import acp_progress"
        );
        assert_eq!(
            Packages::import_statement("acp_progress"),
            "import acp_progress"
        );
    }
}
