//! Which Python runs the compile and start-up checks: the one the agent runs on. A
//! requirement the agent declares (`requires-python` in its pyproject.toml, `Requires-Python`
//! in the installed `*.dist-info/METADATA` of its package, `.python-version`) picks among the
//! interpreters on the machine; an interpreter named by the user (`--python`,
//! `$ACP_PATCH_PYTHON`) or the agent's own virtual environment is taken as it is.

mod pyenv;

use crate::project::Project;
use crate::toolchain::find_on_path;
use std::path::{Path, PathBuf};

/// A Python version, `(major, minor, micro)`.
pub type Version = (u32, u32, u32);

/// What the agent says it runs on, and where it says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The specifier as written, e.g. `>=3.12`.
    pub spec: String,
    /// Where it was read, e.g. `pyproject.toml requires-python`.
    pub source: String,
    clauses: Vec<Clause>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Clause {
    op: String,
    /// The version's numbers as written (`3.12` is `[3, 12]`).
    release: Vec<u32>,
    /// `==3.12.*`
    wildcard: bool,
}

impl Requirement {
    /// A PEP 440 specifier set of the forms Python requirements use (`>=3.10`, `>=3.9,<4`,
    /// `~=3.11`, `==3.12.*`, `!=3.10.0`); `None` when a clause is of another form.
    pub fn parse(spec: &str, source: &str) -> Option<Requirement> {
        let clauses = spec
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(parse_clause)
            .collect::<Option<Vec<_>>>()?;
        (!clauses.is_empty()).then(|| Requirement {
            spec: spec.trim().to_string(),
            source: source.to_string(),
            clauses,
        })
    }

    pub fn allows(&self, v: Version) -> bool {
        self.clauses.iter().all(|c| c.allows(v))
    }
}

fn parse_clause(c: &str) -> Option<Clause> {
    let op_len = c
        .find(|ch: char| ch.is_ascii_digit() || ch.is_whitespace())
        .unwrap_or(c.len());
    let (op, rest) = c.split_at(op_len);
    let op = if op.is_empty() { "==" } else { op };
    if !["==", "!=", ">=", "<=", ">", "<", "~=", "==="].contains(&op) {
        return None;
    }
    let rest = rest.trim();
    let (rest, wildcard) = match rest.strip_suffix(".*") {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let release = rest
        .split('.')
        .map(|n| n.parse::<u32>().ok())
        .collect::<Option<Vec<_>>>()?;
    (!release.is_empty() && (!wildcard || matches!(op, "==" | "!="))).then(|| Clause {
        op: op.to_string(),
        release,
        wildcard,
    })
}

impl Clause {
    fn allows(&self, v: Version) -> bool {
        let have = [v.0, v.1, v.2];
        let n = self.release.len();
        // compare on the clause's own precision, padding it with zeros (3.12 == 3.12.0)
        let want: Vec<u32> = (0..3.max(n))
            .map(|i| self.release.get(i).copied().unwrap_or(0))
            .collect();
        let got: Vec<u32> = (0..want.len())
            .map(|i| have.get(i).copied().unwrap_or(0))
            .collect();
        let prefix = |len: usize| got[..len.min(3)] == self.release[..len.min(3)];
        match self.op.as_str() {
            "==" | "===" if self.wildcard => prefix(n),
            "!=" if self.wildcard => !prefix(n),
            "==" | "===" => got == want,
            "!=" => got != want,
            ">=" => got >= want,
            "<=" => got <= want,
            ">" => got > want,
            "<" => got < want,
            // ~=3.11 is >=3.11,==3.*; ~=3.11.2 is >=3.11.2,==3.11.*
            "~=" => got >= want && n >= 2 && got[..n - 1] == self.release[..n - 1],
            _ => false,
        }
    }
}

/// The requirement the agent declares, looked for from its folder up to its repository root:
/// pyproject.toml's `requires-python`, then the installed metadata of a package whose
/// `RECORD` lists a file of the patch, then `.python-version`.
pub fn requirement(project: &Project, files: &[String]) -> Option<Requirement> {
    for dir in agent_dirs(&project.root) {
        let pyproject = dir.join("pyproject.toml");
        if let Ok(text) = std::fs::read_to_string(&pyproject)
            && let Ok(doc) = text.parse::<toml::Table>()
            && let Some(spec) = doc
                .get("project")
                .and_then(|p| p.get("requires-python"))
                .and_then(|s| s.as_str())
        {
            let source = format!(
                "{} requires-python",
                crate::source::rel_path(&project.root, &pyproject)
            );
            return Requirement::parse(spec, &source);
        }
    }
    if let Some(r) = installed_requirement(project, files) {
        return Some(r);
    }
    for dir in agent_dirs(&project.root) {
        let file = dir.join(".python-version");
        if let Ok(text) = std::fs::read_to_string(&file) {
            let first = text.lines().map(str::trim).find(|l| !l.is_empty())?;
            let source = crate::source::rel_path(&project.root, &file);
            // pyenv's form: a version prefix (`3.12`, `3.12.1`)
            return Requirement::parse(&format!("=={first}.*"), &source)
                .or_else(|| Requirement::parse(&format!("=={first}"), &source));
        }
    }
    None
}

/// The agent's folder and those above it, up to the repository root (the folder with `.git`).
fn agent_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in root.ancestors() {
        out.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            break;
        }
    }
    out
}

/// `Requires-Python` of the installed package the patched files belong to: a `*.dist-info`
/// in the agent's folder or the folder above it whose RECORD lists one of them.
fn installed_requirement(project: &Project, files: &[String]) -> Option<Requirement> {
    for site in project.root.ancestors().take(2) {
        let Ok(entries) = std::fs::read_dir(site) else {
            continue;
        };
        let mut infos: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "dist-info"))
            .collect();
        infos.sort();
        for info in infos {
            let record = std::fs::read_to_string(info.join("RECORD")).unwrap_or_default();
            let prefix = crate::source::rel_path(site, &project.root);
            let owns = files.iter().any(|rel| {
                let in_site = if prefix.is_empty() || prefix == "." {
                    rel.clone()
                } else {
                    format!("{prefix}/{rel}")
                };
                record
                    .lines()
                    .any(|l| l.split(',').next() == Some(in_site.as_str()))
            });
            if !owns {
                continue;
            }
            let metadata = std::fs::read_to_string(info.join("METADATA")).unwrap_or_default();
            let spec = metadata
                .lines()
                .take_while(|l| !l.is_empty())
                .find_map(|l| l.strip_prefix("Requires-Python:"))?;
            let name = info.file_name()?.to_string_lossy().into_owned();
            return Requirement::parse(spec, &format!("{name}/METADATA Requires-Python"));
        }
    }
    None
}

/// The interpreter chosen, and why.
#[derive(Debug, Clone)]
pub struct Choice {
    pub python: PathBuf,
    /// Its version when known without running it (a `python3.12` file name, a pyenv folder).
    pub version: Option<Version>,
    /// `--python`, `$ACP_PATCH_PYTHON`, `the agent's virtual environment`, `PATH`, ...
    pub source: &'static str,
}

/// What the search found: the interpreter to use (if any) and the requirement it was chosen
/// for.
#[derive(Debug, Clone)]
pub struct Found {
    pub choice: Option<Choice>,
    pub requirement: Option<Requirement>,
    /// Every interpreter looked at, for the note when none satisfies the requirement.
    pub seen: Vec<Choice>,
}

/// The interpreter for the agent at `project`: the one named (`--python`, then
/// `$ACP_PATCH_PYTHON`), else a virtual environment in the agent's folder or beside it (a
/// `.venv`/`venv`/`env` in it or a folder above it, up to the repository root, or the
/// environment the folder is installed in), else the first interpreter on PATH or in the usual
/// install places (pyenv, uv, /usr/local/bin, /usr/bin) that satisfies the agent's
/// requirement, else `python3` on PATH (the caller says the requirement is not met).
pub fn find(project: &Project, files: &[String]) -> Found {
    let requirement = requirement(project, files);
    let named = |python: PathBuf, source| Found {
        choice: Some(Choice {
            version: version_from_name(&python),
            python,
            source,
        }),
        requirement: requirement.clone(),
        seen: vec![],
    };
    if let Some(p) = &project.python {
        return named(p.clone(), "--python");
    }
    if let Some(p) = std::env::var_os("ACP_PATCH_PYTHON") {
        // a relative path names a file from here, not from the tree the checks run in
        let p = PathBuf::from(p);
        let p = if p.components().count() > 1 {
            std::path::absolute(&p).unwrap_or(p)
        } else {
            p
        };
        return named(p, "$ACP_PATCH_PYTHON");
    }
    if let Some(venv) = agent_venv(&project.root) {
        return named(venv, "the agent's virtual environment");
    }
    let seen = installed();
    let choice = match &requirement {
        None => seen.first().cloned(),
        Some(r) => seen
            .iter()
            .find(|c| c.version.is_some_and(|v| r.allows(v)))
            .or(seen.first())
            .cloned(),
    };
    Found {
        choice,
        requirement,
        seen,
    }
}

/// A virtual environment in the agent's folder or above it (up to the repository root), or
/// the one the agent is installed in (a folder above it holds `pyvenv.cfg`).
fn agent_venv(root: &Path) -> Option<PathBuf> {
    for dir in agent_dirs(root) {
        for venv in [".venv", "venv", "env"] {
            let py = dir.join(venv).join("bin").join("python");
            if py.is_file() && dir.join(venv).join("pyvenv.cfg").is_file() {
                return Some(py);
            }
        }
    }
    root.ancestors()
        .find(|d| d.join("pyvenv.cfg").is_file())
        .map(|d| d.join("bin").join("python"))
        .filter(|p| p.is_file())
}

/// What the search of the machine's interpreters depends on: a search made under other
/// values (a test that changes PATH) is made again.
fn search_key() -> [Option<std::ffi::OsString>; 4] {
    ["PATH", "HOME", "PYENV_ROOT", "UV_PYTHON_INSTALL_DIR"].map(std::env::var_os)
}

type Search = ([Option<std::ffi::OsString>; 4], Vec<Choice>);

fn searches() -> &'static std::sync::Mutex<Vec<std::sync::Arc<std::sync::OnceLock<Search>>>> {
    static SEARCHES: std::sync::OnceLock<
        std::sync::Mutex<Vec<std::sync::Arc<std::sync::OnceLock<Search>>>>,
    > = std::sync::OnceLock::new();
    SEARCHES.get_or_init(Default::default)
}

/// Starts the search of the machine's interpreters on a thread of its own (it runs a
/// `python3` for its version), so the start-up check finds it done: called when the tree
/// holds a Python agent and no interpreter is named, before the tree is analysed.
pub fn prefetch(project: &Project) {
    if project.python.is_some() || std::env::var_os("ACP_PATCH_PYTHON").is_some() {
        return;
    }
    let slot = std::sync::Arc::new(std::sync::OnceLock::new());
    searches().lock().expect("no poison").push(slot.clone());
    let key = search_key();
    std::thread::spawn(move || {
        slot.get_or_init(|| (key, search_installed()));
    });
}

/// The interpreters on the machine, in the order they are preferred: `python3` on PATH,
/// `python3.N` on PATH (oldest first), then pyenv's and uv's installs and the system's (the
/// prefetched search when it was made under the same environment).
fn installed() -> Vec<Choice> {
    let key = search_key();
    let slots: Vec<_> = searches().lock().expect("no poison").clone();
    for slot in slots {
        // waits for a search still running
        let (k, found) = slot.get_or_init(|| (key.clone(), search_installed()));
        if *k == key {
            return found.clone();
        }
    }
    search_installed()
}

fn search_installed() -> Vec<Choice> {
    let mut out: Vec<Choice> = Vec::new();
    // `known`: the version an install folder's name says (no need to run it)
    let push =
        |python: PathBuf, known: Option<Version>, source: &'static str, out: &mut Vec<Choice>| {
            // a `python3` whose name does not say its version is run once: its version, and the
            // interpreter it is (a pyenv shim is a shell script that runs another each time,
            // resolved by pyenv's rule without running it when it can be)
            let (python, version) = match known.or_else(|| version_from_name(&python)) {
                Some(v) => (python, Some(v)),
                None => match pyenv::resolve(&python)
                    .map(|(v, exe)| (v, Some(exe)))
                    .or_else(|| probe(&python))
                {
                    Some((v, exe)) => (exe.unwrap_or(python), Some(v)),
                    None => (python, None),
                },
            };
            let real = python.canonicalize().unwrap_or_else(|_| python.clone());
            if out
                .iter()
                .any(|c| c.python.canonicalize().unwrap_or_else(|_| c.python.clone()) == real)
            {
                return;
            }
            out.push(Choice {
                python,
                version,
                source,
            });
        };
    if let Some(p) = find_on_path("python3") {
        push(p, None, "PATH", &mut out);
    }
    let path_dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    // pyenv's shims run whichever version pyenv selects, not the one their name says
    let plain: Vec<PathBuf> = path_dirs
        .iter()
        .filter(|d| !d.ends_with("shims"))
        .cloned()
        .collect();
    for p in versioned_in(&plain) {
        push(p, None, "PATH", &mut out);
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".pyenv")));
    let uv = std::env::var_os("UV_PYTHON_INSTALL_DIR")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".local/share/uv/python")));
    for (root, source) in [(pyenv.map(|p| p.join("versions")), "pyenv"), (uv, "uv")] {
        let Some(root) = root else { continue };
        let Ok(entries) = std::fs::read_dir(&root) else {
            continue;
        };
        let mut found: Vec<(Version, PathBuf)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let python = e.path().join("bin/python3");
                // `3.12.1` (pyenv), `cpython-3.12.1-linux-x86_64-gnu` (uv)
                let v = name.strip_prefix("cpython-").unwrap_or(&name);
                let v = parse_version(v.split('-').next()?)?;
                python.is_file().then_some((v, python))
            })
            .collect();
        found.sort();
        for (v, python) in found {
            push(python, Some(v), source, &mut out);
        }
    }
    for p in versioned_in(&[PathBuf::from("/usr/local/bin"), PathBuf::from("/usr/bin")]) {
        push(p, None, "the system", &mut out);
    }
    out
}

/// `python3.N` files in the folders, oldest version first.
fn versioned_in(dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut found: Vec<(Version, PathBuf)> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if let Some(v) = version_from_name(&p)
                && p.is_file()
            {
                found.push((v, p));
            }
        }
    }
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// `python3.12` → 3.12.0 (a name without the micro version stands for the line).
fn version_from_name(p: &Path) -> Option<Version> {
    let name = p.file_name()?.to_str()?;
    let v = name.strip_prefix("python")?;
    (v.matches('.').count() == 1)
        .then(|| parse_version(v))
        .flatten()
}

pub fn parse_version(v: &str) -> Option<Version> {
    let mut it = v.split('.').map(|n| n.parse::<u32>().ok());
    let major = it.next()??;
    let minor = it.next()??;
    let micro = it.next().flatten().unwrap_or(0);
    Some((major, minor, micro))
}

/// Runs the interpreter for its version (a `python3` whose name does not say it) and the
/// executable it is (`sys.executable`, when that is a file).
fn probe(python: &Path) -> Option<(Version, Option<PathBuf>)> {
    let out = std::process::Command::new(python)
        .args([
            "-I",
            "-c",
            "import sys; print('%d.%d.%d' % sys.version_info[:3]); print(sys.executable)",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let version = parse_version(lines.next()?.trim())?;
    let exe = lines
        .next()
        .map(|l| PathBuf::from(l.trim()))
        .filter(|p| p.is_absolute() && p.is_file());
    Some((version, exe))
}

pub fn show(v: Version) -> String {
    format!("{}.{}.{}", v.0, v.1, v.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(s: &str) -> Requirement {
        Requirement::parse(s, "test").unwrap()
    }

    #[test]
    fn specifiers_of_python_requirements() {
        assert!(req(">=3.12").allows((3, 12, 0)));
        assert!(req(">=3.12").allows((3, 13, 0)));
        assert!(!req(">=3.12").allows((3, 11, 7)));
        assert!(req(">=3.9, <4").allows((3, 11, 7)));
        assert!(!req(">=3.9,<3.11").allows((3, 11, 7)));
        assert!(req("~=3.11").allows((3, 13, 0)));
        assert!(!req("~=3.11.2").allows((3, 12, 0)));
        assert!(req("==3.12.*").allows((3, 12, 1)));
        assert!(!req("==3.12.*").allows((3, 13, 0)));
        assert!(req("!=3.10.0").allows((3, 10, 1)));
        assert!(req(">3.11").allows((3, 11, 1)));
        assert!(Requirement::parse(">=3.12; python_version", "t").is_none());
    }

    #[test]
    fn versions_from_names() {
        assert_eq!(
            version_from_name(Path::new("/usr/bin/python3.12")),
            Some((3, 12, 0))
        );
        assert_eq!(version_from_name(Path::new("/usr/bin/python3")), None);
        assert_eq!(
            version_from_name(Path::new("/usr/bin/python3.11-config")),
            None
        );
    }
}
