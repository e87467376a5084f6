//! Runs of the check script on a copy of the tree as the patch leaves it (made only when the
//! answer is not in the cache).

use super::*;

/// The copy of the tree as the check imports it (the patch's files written over the
/// agent's), made only when a check is not answered from the cache.
pub(super) struct TreeCopy<'p> {
    project: &'p Project,
    /// The package names the tree sits in (an installed `site-packages/vibe`): the copy is
    /// made under them, so `import vibe.…` finds it.
    above: Vec<String>,
    /// The folder of the tree copied (relative; empty: the whole tree): see [`copied_scope`].
    scope: String,
    /// Files written over the agent's (`None`: removed).
    overrides: std::collections::BTreeMap<String, Option<String>>,
    made: Option<(tempfile::TempDir, PathBuf)>,
    /// [`crate::toolchain::tree_fingerprint`] of the agent's tree, taken once.
    fingerprint: Option<String>,
}

impl<'p> TreeCopy<'p> {
    pub(super) fn new(project: &'p Project, above: Vec<String>, scope: String) -> Self {
        TreeCopy {
            project,
            above,
            scope,
            overrides: Default::default(),
            made: None,
            fingerprint: None,
        }
    }

    /// Writes (or, for `None`, removes) a file in the copy; never through a link to the
    /// original.
    pub(super) fn put(&mut self, rel: &str, text: Option<&str>) -> Result<()> {
        self.overrides
            .insert(rel.to_string(), text.map(str::to_string));
        match &self.made {
            Some((_, tree)) => write_over(tree, rel, text),
            None => Ok(()),
        }
    }

    /// The copy's folder, made on first use.
    fn path(&mut self) -> Result<PathBuf> {
        if let Some((_, tree)) = &self.made {
            return Ok(tree.clone());
        }
        let dir = tempfile::Builder::new()
            .prefix("acp-patch-start-")
            .tempdir()
            .map_err(crate::error::io_err(std::env::temp_dir()))?;
        let mut tree = dir
            .path()
            .canonicalize()
            .map_err(crate::error::io_err(dir.path()))?;
        for (i, name) in self.above.iter().enumerate() {
            tree.push(name);
            std::fs::create_dir_all(&tree).map_err(crate::error::io_err(&tree))?;
            if i + 1 < self.above.len() {
                let init = tree.join("__init__.py");
                std::fs::write(&init, "").map_err(crate::error::io_err(&init))?;
            }
        }
        let (from, to) = if self.scope.is_empty() {
            (self.project.root.clone(), tree.clone())
        } else {
            let to = tree.join(&self.scope);
            std::fs::create_dir_all(&to).map_err(crate::error::io_err(&to))?;
            (self.project.root.join(&self.scope), to)
        };
        crate::toolchain::copy_tree(&from, &to, crate::toolchain::CopyMode::ReadOnly(&["py"]))?;
        for (rel, text) in &self.overrides {
            write_over(&tree, rel, text.as_deref())?;
        }
        self.made = Some((dir, tree.clone()));
        Ok(tree)
    }

    /// The cache key of one run of the check on the copy as it stands.
    fn key(
        &mut self,
        python: &Path,
        texts: &[(&str, &str)],
        modules: &[Module],
        user_home: Option<&Path>,
    ) -> String {
        use crate::toolchain::cache::Key;
        let root = &self.project.root;
        let fingerprint = self
            .fingerprint
            .get_or_insert_with(|| crate::toolchain::tree_fingerprint(root, &self.scope))
            .clone();
        let mut k = Key::new("python-startup");
        k.text(CHECK)
            .text(&python.display().to_string())
            .stamp_of(python)
            .text(&fingerprint)
            .text(&self.scope)
            .text(&self.above.join("/"));
        for (rel, text) in &self.overrides {
            k.text(rel).text(text.as_deref().unwrap_or("\0removed"));
        }
        k.text("compile");
        for (rel, text) in texts {
            k.text(rel).text(text);
        }
        k.text("imports");
        for m in modules {
            k.text(&m.name).text(&m.root);
        }
        k.text(&IMPORT_TIMEOUT_S.to_string())
            .text(
                &user_home
                    .map(|h| h.display().to_string())
                    .unwrap_or_default(),
            )
            .environment();
        k.finish()
    }
}

/// What makes a folder a Python project of its own.
const MANIFESTS: &[&str] = &["pyproject.toml", "setup.py", "setup.cfg"];

/// The folders a check will likely copy, known before the analysis: for each file that
/// imports the SDK, the project [`copied_scope`] would give its import root (taken here as the
/// folder above its regular packages); the whole tree when one is the tree, or no file
/// imports the SDK. A guess that only decides what is listed ahead
/// ([`crate::toolchain::prefetch_fingerprint`]): a scope it misses is listed when asked.
pub(in crate::lang::python) fn likely_scopes(project: &Project) -> Vec<PathBuf> {
    let packages: std::collections::HashSet<&str> = project
        .rels()
        .filter_map(|rel| rel.strip_suffix("__init__.py"))
        .map(|dir| dir.trim_end_matches('/'))
        .collect();
    let parent = |rel: &str| {
        rel.rsplit_once('/')
            .map_or(String::new(), |(d, _)| d.to_string())
    };
    let mut scopes: Vec<String> = Vec::new();
    for f in project.files_with_extension(&["py"]) {
        if !crate::lang::python::syntax::mentions_sdk(&f.text) {
            continue;
        }
        let mut root = parent(&f.rel);
        while !root.is_empty() && packages.contains(root.as_str()) {
            root = parent(&root);
        }
        let scope = project_of(project, &root);
        if scope.is_empty() {
            return vec![project.root.clone()];
        }
        scopes.push(scope);
    }
    if scopes.is_empty() {
        return vec![project.root.clone()];
    }
    // a project inside another is listed with it
    scopes.sort();
    scopes.dedup();
    let all = scopes.clone();
    scopes.retain(|s| !all.iter().any(|o| s.starts_with(&format!("{o}/"))));
    scopes.iter().map(|s| project.root.join(s)).collect()
}

/// The project of an import root (relative, `/`-separated): the nearest folder at or above it
/// that holds a manifest, else the import root itself; the whole tree (empty) when the root is
/// the tree or above it, or no folder below the tree but the tree itself holds a manifest.
fn project_of(project: &Project, import_root: &str) -> String {
    let holds_manifest = |dir: &str| {
        MANIFESTS
            .iter()
            .any(|m| project.root.join(dir).join(m).is_file())
    };
    if import_root.is_empty() || import_root.split('/').any(|s| s == "..") {
        return String::new();
    }
    let dirs: Vec<&str> = import_root.split('/').collect();
    match (1..=dirs.len())
        .rev()
        .find(|&n| holds_manifest(&dirs[..n].join("/")))
    {
        Some(own) => dirs[..own].join("/"),
        // the tree itself is the project (`src/` beside its `pyproject.toml`)
        None if holds_manifest("") => String::new(),
        None => import_root.to_string(),
    }
}

/// The folder of the tree a check copies: the agent's own project — the nearest folder at
/// or above each import root that holds a Python project's manifest, else the import root
/// (what `import` reaches from there, and what its own modules read beside themselves) —
/// never the rest of a monorepo around it. The whole tree when an import root is the tree
/// or above it, or there is none.
pub(super) fn copied_scope(project: &Project, modules: &[Module]) -> String {
    let mut scope: Option<Vec<String>> = None;
    for m in modules {
        let own = project_of(project, &m.root);
        if own.is_empty() {
            return own;
        }
        let dirs: Vec<String> = own.split('/').map(str::to_string).collect();
        scope = Some(match scope {
            None => dirs,
            Some(s) => s
                .into_iter()
                .zip(&dirs)
                .take_while(|(a, b)| a == *b)
                .map(|(a, _)| a)
                .collect(),
        });
    }
    scope.map(|s| s.join("/")).unwrap_or_default()
}

pub(super) fn write_over(tree: &Path, rel: &str, text: Option<&str>) -> Result<()> {
    let dest = tree.join(rel);
    let _ = std::fs::remove_file(&dest);
    let Some(text) = text else { return Ok(()) };
    if let Some(dir) = dest.parent() {
        std::fs::create_dir_all(dir).map_err(crate::error::io_err(dir))?;
    }
    std::fs::write(&dest, text).map_err(crate::error::io_err(&dest))
}

/// One run of the check script: compile `texts`, import `modules` from the copy — or the
/// answer a run on the same inputs gave, while what it saw is unchanged
/// ([`crate::toolchain::cache`]).
pub(super) fn run(
    python: &Path,
    copy: &mut TreeCopy,
    texts: &[(&str, &str)],
    modules: &[Module],
) -> std::result::Result<Answer, String> {
    use crate::toolchain::cache;
    let user_home = std::env::var_os("HOME").map(PathBuf::from);
    let cached = cache::dir("python-startup").map(|dir| {
        let key = copy.key(python, texts, modules, user_home.as_deref());
        (dir, key)
    });
    if let Some((dir, key)) = &cached
        && let Some(answer) = cache::load::<Answer>(dir, key)
    {
        return Ok(answer);
    }
    let tree = copy.path().map_err(|e| e.to_string())?;
    let answer = run_check(python, &tree, texts, modules, user_home)?;
    if let Some((dir, key)) = &cached
        && let Some(seen) = &answer.seen
        && answer.imports.iter().all(ImportResult::is_settled)
    {
        cache::store(dir, key, seen.clone(), &answer);
    }
    Ok(answer)
}

/// One run of the check script on the copy at `tree`.
pub(super) fn run_check(
    python: &Path,
    tree: &Path,
    texts: &[(&str, &str)],
    modules: &[Module],
    user_home: Option<PathBuf>,
) -> std::result::Result<Answer, String> {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    let mut roots: Vec<String> = modules
        .iter()
        .map(|m| path_of(tree, &m.root))
        .collect::<Vec<_>>();
    roots.sort();
    roots.dedup();
    let home = tempfile::Builder::new()
        .prefix("acp-patch-start-home-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    let payload = serde_json::json!({
        "compile": texts.iter().map(|(f, t)| serde_json::json!({"file": f, "text": t})).collect::<Vec<_>>(),
        "imports": modules.iter().map(|m| m.name.clone()).collect::<Vec<_>>(),
        "sys_path": roots,
        "tree": tree.display().to_string(),
        "timeout_s": IMPORT_TIMEOUT_S,
        "user_home": user_home.map(|h| h.display().to_string()),
    });
    // what the agent writes at import (config, caches) goes into a home of its own

    let mut cmd = Command::new(python);
    cmd.args(["-I", "-B", "-c", CHECK])
        .current_dir(tree)
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_DATA_HOME", home.path().join(".local/share"))
        .env("XDG_CACHE_HOME", home.path().join(".cache"))
        .env("XDG_STATE_HOME", home.path().join(".local/state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().expect("piped");
    let body = payload.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(body.as_bytes()));
    let timeout = std::time::Duration::from_secs(IMPORT_TIMEOUT_S * (modules.len() as u64 + 1));
    let out = crate::toolchain::wait_group(child, timeout).map_err(|e| e.to_string())?;
    let _ = writer.join();
    let Some(out) = out else {
        return Err(format!("it did not finish within {} s", timeout.as_secs()));
    };
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().last().unwrap_or("failed").trim().to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("unreadable answer: {e}"))
}

pub(super) fn path_of(tree: &Path, rel: &str) -> String {
    if rel.is_empty() {
        tree.display().to_string()
    } else {
        tree.join(rel).display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What is listed ahead: the project of each file importing the SDK (else the folder above
    /// its packages), a project inside another listed with it; the whole tree once a file
    /// importing it is a module of the tree's own top.
    #[test]
    fn the_likely_scopes_are_the_projects_of_the_files_importing_the_sdk() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        let scopes = || {
            let project = crate::lang::load(dir.path(), &Default::default()).unwrap();
            let root = project.root.clone();
            let got: Vec<String> = likely_scopes(&project)
                .iter()
                .map(|d| d.strip_prefix(&root).unwrap().display().to_string())
                .collect();
            got
        };
        write("agents/one/pyproject.toml", "");
        write("agents/one/src/one/server.py", "import acp\n");
        write("agents/one/tools/nested/setup.py", "");
        write("agents/one/tools/nested/n.py", "from acp import Agent\n");
        write("agents/two/setup.cfg", "");
        write("agents/two/two.py", "import acp.schema\n");
        write("lib/unrelated.py", "import json\n");
        assert_eq!(scopes(), ["agents/one", "agents/two"]);
        // no manifest: the folder above the file's packages
        write("bare/x/__init__.py", "");
        write("bare/x/agent.py", "import acp\n");
        write("bare/top.py", "import acp\n");
        assert_eq!(scopes(), ["agents/one", "agents/two", "bare"]);
        write("loose.py", "import acp\n");
        assert_eq!(scopes(), [""]);
    }

    fn module(root: &str) -> Module {
        Module {
            rel: format!("{root}/pkg/agent.py"),
            name: "pkg.agent".into(),
            root: root.into(),
        }
    }

    /// The check copies the agent's own project out of a monorepo, and the whole tree when
    /// the tree is the project or an import root is the tree or above it.
    #[test]
    fn the_copy_is_the_agents_own_project() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "").unwrap();
        };
        write("python/bare/pkg/agent.py");
        write("python/proj/pyproject.toml");
        write("python/proj/src/pkg/agent.py");
        let project = crate::lang::load(dir.path(), &Default::default()).unwrap();
        let scope = |roots: &[&str]| {
            let modules: Vec<Module> = roots.iter().map(|r| module(r)).collect();
            copied_scope(&project, &modules)
        };
        assert_eq!(scope(&["python/bare"]), "python/bare");
        assert_eq!(scope(&["python/proj/src"]), "python/proj");
        assert_eq!(scope(&["python/bare", "python/proj/src"]), "python");
        assert_eq!(scope(&[""]), "");
        assert_eq!(scope(&["../.."]), "");
        assert_eq!(scope(&[]), "");
        write("pyproject.toml");
        let project = crate::lang::load(dir.path(), &Default::default()).unwrap();
        let modules = [module("python/bare")];
        assert_eq!(copied_scope(&project, &modules), "");
        let modules = [module("python/proj/src")];
        assert_eq!(copied_scope(&project, &modules), "python/proj");
    }
}
