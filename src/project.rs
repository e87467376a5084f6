//! The agent tree: its root, its config and its source files, read once — in bounded
//! time and memory: a tree larger than the limits is refused before it is read.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::render::Templates;
use crate::source::{NotUtf8, SourceFile, rel_path};
use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

mod walk;

#[cfg(test)]
use walk::is_leftover;
use walk::read_sources;

/// Folders that never hold the agent's own code.
const SKIP_DIRS: &[&str] = &[
    "node_modules",
    "__pycache__",
    "site-packages",
    "venv",
    "target",
];

/// Names of apply's temporary files (`.acp-patch-tmp-<pid>-<random>`): never read, and
/// removed by the next apply when the run that made them is gone.
pub const TEMP_PREFIX: &str = ".acp-patch-tmp-";

#[derive(Debug, Clone)]
pub struct Project {
    pub root: PathBuf,
    pub config: Config,
    pub env_prefix: String,
    pub templates: Templates,
    /// The Python interpreter the user named (`--python`), for the toolchain checks.
    pub python: Option<PathBuf>,
    /// Every source file of a known language a step may read, sorted by relative path.
    pub files: Vec<SourceFile>,
    /// Source files read and found to hold nothing any language looks for (see
    /// [`Project::load_keeping`]): listed by path, their text not kept; [`Project::source`]
    /// and [`Project::dormant_sources`] read them again when a step asks.
    pub dormant: Vec<Dormant>,
    /// Source files that are not UTF-8: never patched, named when they matter.
    pub not_utf8: Vec<NotUtf8>,
    /// Source files reached through a symbolic link (relative path → link target): read,
    /// never written through.
    pub symlinks: Vec<(String, PathBuf)>,
    /// Files of a known language not read, and why (too large, a link to a non-file, ...).
    pub skipped: Vec<(String, String)>,
    /// Temporary files an interrupted apply left behind.
    pub leftovers: Vec<PathBuf>,
    /// Package manifests and build configs (`Cargo.toml`, `package.json`, ...) a language may
    /// read beside the sources, by path.
    pub manifests: Vec<PathBuf>,
    /// Other files a language reads and may edit (a `Cargo.toml`) as they would be after a
    /// change not written yet: revert re-plans the reverted tree in memory. Read them with
    /// [`Project::read_source`].
    pub overlay: Vec<SourceFile>,
    /// What the languages derive from this tree state (a language's analysis), computed
    /// once and shared by plan, verify and inventory. A project is never changed after it is
    /// made (`after` makes another), so nothing here goes stale.
    pub derived: Derived,
    /// What [`Project::after`] made this tree from (`None` for a tree read from disk).
    origin: Option<Origin>,
}

/// A source file whose text a run does not keep (see [`Project::dormant`]).
#[derive(Debug, Clone)]
pub struct Dormant {
    pub path: PathBuf,
    pub rel: String,
}

/// Which files' texts a run keeps: `(path, text)` → keep. A file turned down costs its
/// read and this test, and no memory after.
pub type Keep = dyn Fn(&Path, &str) -> bool + Sync;

/// What decides [`Keep`] for a tree, given the tree as its config reads it (no files yet).
pub type KeepFor<'a> = &'a dyn Fn(&Project) -> Box<Keep>;

/// The tree a plan was laid over: its cache, and the files the plan changed as they were
/// there. A plan that puts every one of them back (revert of what apply planned) leaves
/// that tree, whose analysis is then shared instead of made again.
#[derive(Debug, Clone)]
struct Origin {
    derived: Derived,
    exts: Vec<String>,
    /// Path → the text there (`None`: no such file).
    before: Vec<(PathBuf, Option<Arc<str>>)>,
}

/// Results a language computes once per tree state, by key (see [`Project::derived`]).
/// A clone starts empty: it is another project as far as the cache knows.
#[derive(Default)]
pub struct Derived(Arc<Mutex<HashMap<&'static str, Arc<dyn Any + Send + Sync>>>>);

impl Clone for Derived {
    fn clone(&self) -> Self {
        Derived::default()
    }
}

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Derived")
    }
}

impl Derived {
    /// The same cache (for a tree known to be the same state).
    fn shared(&self) -> Derived {
        Derived(self.0.clone())
    }

    /// The value under `key`, made by `make` on the first call that succeeds (a failure is
    /// not kept: the next call makes it again, and fails the same way).
    pub fn get_or_try<T: Any + Send + Sync, E>(
        &self,
        key: &'static str,
        make: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<Arc<T>, E> {
        if let Some(v) = self.0.lock().expect("no poison").get(key) {
            return Ok(v.clone().downcast::<T>().expect("one type per key"));
        }
        let v = Arc::new(make()?);
        self.0
            .lock()
            .expect("no poison")
            .insert(key, v.clone() as Arc<dyn Any + Send + Sync>);
        Ok(v)
    }
}

/// File names of package manifests and build configs (see [`Project::manifests`]).
pub const MANIFESTS: &[&str] = &[
    "Cargo.toml",
    "Cargo.lock",
    "package.json",
    "tsconfig.json",
    "pyproject.toml",
    "setup.cfg",
];

/// Options shared by apply and verify.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub config: Option<PathBuf>,
    pub env_prefix: Option<String>,
    pub templates: Option<PathBuf>,
    /// The interpreter for the compile and start-up checks (`--python`).
    pub python: Option<PathBuf>,
}

/// How much of a tree acp-patch reads before it refuses it (`apply /` must end quickly,
/// in bounded memory, with advice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Directory entries walked (files and folders, ignored ones excluded).
    pub max_entries: usize,
    /// Total bytes of source files read.
    pub max_bytes: u64,
    /// Bytes of one source file: a larger one is not read (and said so).
    pub max_file_bytes: u64,
    /// Folder depth below the root.
    pub max_depth: usize,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        max_entries: 100_000,
        max_bytes: 128 << 20,
        max_file_bytes: 16 << 20,
        max_depth: 64,
    };

    /// The defaults, with `ACP_PATCH_MAX_FILES` / `ACP_PATCH_MAX_BYTES` /
    /// `ACP_PATCH_MAX_FILE_BYTES` when set.
    pub fn from_env() -> Limits {
        let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
        Limits {
            max_entries: var("ACP_PATCH_MAX_FILES")
                .map_or(Self::DEFAULT.max_entries, |v| v as usize),
            max_bytes: var("ACP_PATCH_MAX_BYTES").unwrap_or(Self::DEFAULT.max_bytes),
            max_file_bytes: var("ACP_PATCH_MAX_FILE_BYTES").unwrap_or(Self::DEFAULT.max_file_bytes),
            ..Self::DEFAULT
        }
    }
}

impl Project {
    /// Reads the tree at `root`: the files whose names end in one of `extensions` (the
    /// languages' own, `lang::extensions()`), within the limits the environment sets.
    pub fn load(root: &Path, opts: &Options, extensions: &[&str]) -> Result<Project> {
        Self::load_with(root, opts, Limits::from_env(), extensions)
    }

    /// [`Project::load`], keeping in memory only the texts `keep_for(the project as its config
    /// reads it)` keeps: the others are listed in [`Project::dormant`].
    pub fn load_keeping(
        root: &Path,
        opts: &Options,
        extensions: &[&str],
        keep_for: KeepFor,
    ) -> Result<Project> {
        Self::load_inner(root, opts, Limits::from_env(), extensions, Some(keep_for))
    }

    pub fn load_with(
        root: &Path,
        opts: &Options,
        limits: Limits,
        extensions: &[&str],
    ) -> Result<Project> {
        Self::load_inner(root, opts, limits, extensions, None)
    }

    fn load_inner(
        root: &Path,
        opts: &Options,
        limits: Limits,
        extensions: &[&str],
        keep_for: Option<KeepFor>,
    ) -> Result<Project> {
        if std::fs::symlink_metadata(root).is_err() {
            return Err(Error::MissingPath {
                path: root.to_path_buf(),
            });
        }
        let root = root.canonicalize().map_err(crate::error::io_err(root))?;
        if !root.is_dir() {
            return Err(Error::NotAFolder { path: root });
        }
        let config = Config::load(&root, opts.config.as_deref())?;
        let env_prefix = opts
            .env_prefix
            .clone()
            .or_else(|| config.env_prefix.clone())
            .unwrap_or_else(|| "ACP".into());
        if env_prefix.is_empty()
            || !env_prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(Error::Config {
                path: root.join(crate::config::FILE_NAME),
                message: format!(
                    "env prefix `{env_prefix}` must be letters, digits and `_` (e.g. ACP)"
                ),
            });
        }
        let override_dir = match &opts.templates {
            Some(dir) => Some(check_templates_dir(dir, "--templates")?),
            None => match &config.templates.dir {
                Some(dir) => Some(check_templates_dir(dir, "[templates] dir")?),
                None => None,
            },
        };
        let templates = Templates { override_dir };
        let mut project = Project {
            root,
            config,
            env_prefix,
            templates,
            python: opts.python.clone(),
            files: Vec::new(),
            dormant: Vec::new(),
            not_utf8: Vec::new(),
            symlinks: Vec::new(),
            skipped: Vec::new(),
            leftovers: Vec::new(),
            manifests: Vec::new(),
            overlay: Vec::new(),
            derived: Derived::default(),
            origin: None,
        };
        let keep: Box<Keep> = match keep_for {
            Some(f) => f(&project),
            None => Box::new(|_: &Path, _: &str| true),
        };
        read_sources(&mut project, limits, extensions, &keep)?;
        Ok(project)
    }

    /// A file beside the sources (e.g. `root/Cargo.toml`): the overlay's version if it has
    /// one, else the disk's; `None` when it does not exist or is not UTF-8.
    pub fn read_source(&self, path: &Path) -> Result<Option<SourceFile>> {
        if let Some(f) = self.overlay.iter().find(|f| f.path == path) {
            return Ok(f.exists.then(|| f.clone()));
        }
        if !path.is_file() {
            return Ok(None);
        }
        SourceFile::read(&self.root, path)
    }

    /// The tree as `plan` leaves it, in memory: source files of the endings `exts` replaced,
    /// created or dropped (the others are left out); any other file the plan changes (a
    /// `Cargo.toml`) in the overlay. Apply verifies its plan on it, revert its revert.
    pub fn after(&self, plan: &crate::plan::Plan, exts: &[&str]) -> Project {
        let mut p = Project {
            root: self.root.clone(),
            config: self.config.clone(),
            env_prefix: self.env_prefix.clone(),
            templates: self.templates.clone(),
            python: self.python.clone(),
            files: self.files_with_extension(exts).cloned().collect(),
            dormant: (self.dormant.iter())
                .filter(|d| has_extension(&d.path, exts))
                .cloned()
                .collect(),
            not_utf8: Vec::new(),
            symlinks: Vec::new(),
            skipped: Vec::new(),
            leftovers: Vec::new(),
            manifests: self.manifests.clone(),
            overlay: self.overlay.clone(),
            derived: Derived::default(),
            origin: None,
        };
        let mut before = Vec::new();
        for fp in &plan.files {
            if has_extension(&fp.file.path, exts) {
                let was = p.files.iter().find(|f| f.path == fp.file.path);
                before.push((fp.file.path.clone(), was.map(|f| f.text.clone())));
            }
            let path = &fp.file.path;
            // a file the plan writes is one whose text the tree now holds
            p.dormant.retain(|d| &d.path != path);
            let new = fp.file.with_text(fp.new_text(), !fp.delete);
            match p.files.iter().position(|f| &f.path == path) {
                Some(i) if fp.delete => {
                    p.files.remove(i);
                }
                Some(i) => p.files[i] = new,
                None if !fp.delete && has_extension(path, exts) => {
                    let at = p.files.partition_point(|f| f.rel < new.rel);
                    p.files.insert(at, new);
                }
                None => {
                    p.overlay.retain(|f| &f.path != path);
                    p.overlay.push(new);
                }
            }
        }
        let exts: Vec<String> = exts.iter().map(|e| e.to_string()).collect();
        if let Some(origin) = &self.origin
            && origin.exts == exts
            && plan
                .files
                .iter()
                .all(|fp| has_extension(&fp.file.path, &exts))
            && p.puts_back(origin, &before)
        {
            // the plan undid the one this tree came from: it is that tree again
            p.derived = origin.derived.shared();
        } else if plan
            .files
            .iter()
            .all(|fp| has_extension(&fp.file.path, &exts))
        {
            p.origin = Some(Origin {
                derived: self.derived.shared(),
                exts,
                before,
            });
        }
        p
    }

    /// Whether every file `origin`'s plan changed, and every file the plan that made this
    /// tree changed (`changed`), is here as it was in `origin`'s tree.
    fn puts_back(&self, origin: &Origin, changed: &[(PathBuf, Option<Arc<str>>)]) -> bool {
        let here = |path: &Path| self.files.iter().find(|f| f.path == path).map(|f| &f.text);
        let as_before = |path: &Path, was: &Option<Arc<str>>| here(path) == was.as_ref();
        origin.before.iter().all(|(path, was)| as_before(path, was))
            && changed.iter().all(|(path, _)| {
                origin
                    .before
                    .iter()
                    .any(|(p, was)| p == path && as_before(path, was))
            })
    }

    pub fn files_with_extension<'a>(
        &'a self,
        exts: &'a [&'a str],
    ) -> impl Iterator<Item = &'a SourceFile> + 'a {
        self.files
            .iter()
            .filter(move |f| has_extension(&f.path, exts))
    }

    /// The source file at `rel` (of a known language): the text held, or for a dormant file
    /// the disk's (`None` when there is no such file, or it is no longer readable as UTF-8).
    pub fn source(&self, rel: &str) -> Option<SourceFile> {
        if let Some(f) = self.files.iter().find(|f| f.rel == rel) {
            return Some(f.clone());
        }
        let d = self.dormant.iter().find(|d| d.rel == rel)?;
        SourceFile::read(&self.root, &d.path).ok().flatten()
    }

    /// The dormant files of the endings `exts`, each read again when the iterator reaches it
    /// (one text at a time; a file gone or no longer UTF-8 is passed over).
    pub fn dormant_sources<'a>(
        &'a self,
        exts: &'a [&'a str],
    ) -> impl Iterator<Item = SourceFile> + 'a {
        self.dormant
            .iter()
            .filter(move |d| has_extension(&d.path, exts))
            .filter_map(|d| SourceFile::read(&self.root, &d.path).ok().flatten())
    }

    /// [`Project::dormant_sources`], read only where `by_path` admits the relative path and
    /// decoded only where `by_bytes` admits the bytes read: a search for a few names passes
    /// over most files unread, the rest undecoded.
    pub fn dormant_sources_where<'a>(
        &'a self,
        exts: &'a [&'a str],
        by_path: impl Fn(&str) -> bool + 'a,
        by_bytes: impl Fn(&str, &[u8]) -> bool + 'a,
    ) -> impl Iterator<Item = SourceFile> + 'a {
        self.dormant
            .iter()
            .filter(move |d| has_extension(&d.path, exts) && by_path(&d.rel))
            .filter_map(move |d| {
                let bytes = std::fs::read(&d.path).ok()?;
                if !by_bytes(&d.rel, &bytes) {
                    return None;
                }
                SourceFile::decode(d.path.clone(), rel_path(&self.root, &d.path), bytes).ok()
            })
    }

    /// Drops the texts of the files of the endings `exts`: they become dormant.
    pub fn make_dormant(&mut self, exts: &[&str]) {
        let (gone, kept): (Vec<SourceFile>, Vec<SourceFile>) = std::mem::take(&mut self.files)
            .into_iter()
            .partition(|f| has_extension(&f.path, exts));
        if gone.is_empty() {
            self.files = kept;
            return;
        }
        self.files = kept;
        self.dormant.extend(gone.into_iter().map(|f| Dormant {
            path: f.path,
            rel: f.rel,
        }));
        self.dormant.sort_by(|a, b| a.path.cmp(&b.path)); // the walk's order
    }

    /// The relative path of every source file read, its text kept or not.
    pub fn rels(&self) -> impl Iterator<Item = &str> {
        self.files
            .iter()
            .map(|f| f.rel.as_str())
            .chain(self.dormant.iter().map(|d| d.rel.as_str()))
    }

    /// The link target when `rel` was read through a symbolic link.
    pub fn symlink_target(&self, rel: &str) -> Option<&Path> {
        self.symlinks
            .iter()
            .find(|(r, _)| r == rel)
            .map(|(_, t)| t.as_path())
    }
}

fn has_extension<S: AsRef<str>>(path: &Path, exts: &[S]) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| exts.iter().any(|x| x.as_ref() == e))
}

/// A template override folder must exist and hold only templates acp-patch knows (a
/// misspelt file would otherwise be ignored without a word).
fn check_templates_dir(dir: &Path, given_by: &str) -> Result<PathBuf> {
    if !dir.is_dir() {
        return Err(Error::Config {
            path: dir.to_path_buf(),
            message: format!(
                "the templates folder ({given_by}) does not exist or is not a folder; give a folder laid out like templates/ (e.g. python/factory.py)"
            ),
        });
    }
    let known: Vec<&str> = Templates::names().collect();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(crate::error::io_err(&d))?;
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let rel = rel_path(dir, &p);
            let doc =
                rel.ends_with(".md") || rel.rsplit('/').next().is_some_and(|n| n.starts_with('.'));
            if !doc && !known.contains(&rel.as_str()) {
                let lang = rel.split('/').next().unwrap_or("");
                let same: Vec<&str> = known
                    .iter()
                    .copied()
                    .filter(|k| k.starts_with(&format!("{lang}/")))
                    .collect();
                return Err(Error::Config {
                    path: p.clone(),
                    message: format!(
                        "not a template acp-patch knows, so it would be ignored; the templates are: {}",
                        if same.is_empty() {
                            known.join(", ")
                        } else {
                            same.join(", ")
                        }
                    ),
                });
            }
        }
    }
    Ok(dir.to_path_buf())
}

#[cfg(test)]
mod tests;
