//! The agent tree: its root, its config and its source files, read once — in bounded
//! time and memory: a tree larger than the limits is refused before it is read.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::render::Templates;
use crate::source::{NotUtf8, SourceFile, rel_path};
use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

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
    /// Every source file of a known language, sorted by relative path.
    pub files: Vec<SourceFile>,
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
}

/// Results a language computes once per tree state, by key (see [`Project::derived`]).
/// A clone starts empty: it is another project as far as the cache knows.
#[derive(Default)]
pub struct Derived(Mutex<HashMap<&'static str, Arc<dyn Any + Send + Sync>>>);

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

    /// The defaults, with `ACP_PATCH_MAX_FILES` / `ACP_PATCH_MAX_BYTES` when set.
    pub fn from_env() -> Limits {
        let var = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
        Limits {
            max_entries: var("ACP_PATCH_MAX_FILES")
                .map_or(Self::DEFAULT.max_entries, |v| v as usize),
            max_bytes: var("ACP_PATCH_MAX_BYTES").unwrap_or(Self::DEFAULT.max_bytes),
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

    pub fn load_with(
        root: &Path,
        opts: &Options,
        limits: Limits,
        extensions: &[&str],
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
            not_utf8: Vec::new(),
            symlinks: Vec::new(),
            skipped: Vec::new(),
            leftovers: Vec::new(),
            manifests: Vec::new(),
            overlay: Vec::new(),
            derived: Derived::default(),
        };
        read_sources(&mut project, limits, extensions)?;
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
            not_utf8: Vec::new(),
            symlinks: Vec::new(),
            skipped: Vec::new(),
            leftovers: Vec::new(),
            manifests: self.manifests.clone(),
            overlay: self.overlay.clone(),
            derived: Derived::default(),
        };
        for fp in &plan.files {
            let path = &fp.file.path;
            let new = SourceFile {
                text: fp.new_text(),
                exists: !fp.delete,
                ..fp.file.clone()
            };
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
        p
    }

    pub fn files_with_extension<'a>(
        &'a self,
        exts: &'a [&'a str],
    ) -> impl Iterator<Item = &'a SourceFile> + 'a {
        self.files
            .iter()
            .filter(move |f| has_extension(&f.path, exts))
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

/// What the walk found, shared by its threads.
#[derive(Default)]
struct Found {
    sources: Mutex<Vec<(PathBuf, Option<PathBuf>)>>,
    manifests: Mutex<Vec<PathBuf>>,
    skipped: Mutex<Vec<(String, String)>>,
    entries: AtomicUsize,
    bytes: AtomicU64,
    too_deep: Mutex<Option<PathBuf>>,
    stop: AtomicBool,
}

/// Whether the ignore files above `root` ignore `root` itself, as the `*` .gitignore that uv
/// and virtualenv write into a virtual environment ignores its site-packages: pointed at such
/// a folder on purpose, acp-patch reads it (by its own ignore files) rather than nothing.
fn ignored_by_parents(root: &Path) -> bool {
    let Ok(root) = root.canonicalize() else {
        return false;
    };
    let (Some(parent), Some(name)) = (root.parent(), root.file_name()) else {
        return false;
    };
    let listed = ignore::WalkBuilder::new(parent)
        .hidden(false)
        .require_git(false)
        .max_depth(Some(1))
        .build()
        .flatten()
        .any(|e| e.depth() == 1 && e.file_name() == name);
    !listed
}

/// Walks the tree in parallel (respecting .gitignore, skipping hidden and vendored
/// folders, never following a folder link), reads every file of a known language, and
/// sorts them so every later phase is deterministic. Stops and refuses at the limits.
fn read_sources(project: &mut Project, limits: Limits, extensions: &[&str]) -> Result<()> {
    let root = project.root.clone();
    let exts: Vec<String> = extensions.iter().map(|e| e.to_string()).collect();
    let found = Found::default();
    // filter_entry must own what it touches
    let leftovers = std::sync::Arc::new(Mutex::new(Vec::new()));
    let seen_leftovers = leftovers.clone();
    ignore::WalkBuilder::new(&root)
        .hidden(false) // hidden entries are filtered below, where our leftovers are seen
        .require_git(false)
        .parents(!ignored_by_parents(&root))
        .follow_links(false)
        .filter_entry(move |e| {
            let name = e.file_name().to_string_lossy();
            if !name.starts_with('.') {
                return !(e.file_type().is_some_and(|t| t.is_dir())
                    && SKIP_DIRS.contains(&name.as_ref()));
            }
            if e.file_type().is_some_and(|t| t.is_file()) && is_leftover(&name) {
                seen_leftovers
                    .lock()
                    .expect("no poison")
                    .push(e.path().to_path_buf());
            }
            false
        })
        .build_parallel()
        .run(|| {
            Box::new(|entry| {
                if found.stop.load(Ordering::Relaxed) {
                    return ignore::WalkState::Quit;
                }
                let Ok(e) = entry else {
                    return ignore::WalkState::Continue;
                };
                if found.entries.fetch_add(1, Ordering::Relaxed) + 1 > limits.max_entries {
                    found.stop.store(true, Ordering::Relaxed);
                    return ignore::WalkState::Quit;
                }
                if e.depth() > limits.max_depth {
                    *found.too_deep.lock().expect("no poison") = Some(e.path().to_path_buf());
                    found.stop.store(true, Ordering::Relaxed);
                    return ignore::WalkState::Quit;
                }
                let Some(kind) = e.file_type() else {
                    return ignore::WalkState::Continue;
                };
                if kind.is_file() && MANIFESTS.contains(&e.file_name().to_string_lossy().as_ref()) {
                    found
                        .manifests
                        .lock()
                        .expect("no poison")
                        .push(e.path().to_path_buf());
                }
                if kind.is_dir() || !has_extension(e.path(), &exts) {
                    return ignore::WalkState::Continue;
                }
                let rel = rel_path(&root, e.path());
                let skip = |why: String| {
                    found
                        .skipped
                        .lock()
                        .expect("no poison")
                        .push((rel.clone(), why));
                };
                // a link is read through (only to a regular file), never written through
                let (meta, target) = if kind.is_symlink() {
                    let target = std::fs::read_link(e.path()).unwrap_or_default();
                    match std::fs::metadata(e.path()) {
                        Ok(m) if m.is_file() => (m, Some(target)),
                        Ok(_) => {
                            skip(format!(
                                "a symbolic link to {}, which is not a file; not read",
                                target.display()
                            ));
                            return ignore::WalkState::Continue;
                        }
                        Err(_) => {
                            skip(format!(
                                "a symbolic link to {}, which does not exist; not read",
                                target.display()
                            ));
                            return ignore::WalkState::Continue;
                        }
                    }
                } else if kind.is_file() {
                    match e.metadata() {
                        Ok(m) => (m, None),
                        Err(_) => return ignore::WalkState::Continue,
                    }
                } else {
                    return ignore::WalkState::Continue; // a FIFO, socket or device: never read
                };
                if e.path().to_str().is_none() {
                    skip("its path is not UTF-8; not read (rename it to patch it)".into());
                    return ignore::WalkState::Continue;
                }
                if meta.len() > limits.max_file_bytes {
                    skip(format!(
                        "{} MiB, more than the {} MiB acp-patch reads of one file; not read",
                        meta.len() >> 20,
                        limits.max_file_bytes >> 20
                    ));
                    return ignore::WalkState::Continue;
                }
                if found.bytes.fetch_add(meta.len(), Ordering::Relaxed) + meta.len()
                    > limits.max_bytes
                {
                    found.stop.store(true, Ordering::Relaxed);
                    return ignore::WalkState::Quit;
                }
                found
                    .sources
                    .lock()
                    .expect("no poison")
                    .push((e.into_path(), target));
                ignore::WalkState::Continue
            })
        });
    let entries = found.entries.load(Ordering::Relaxed);
    let advice = "point acp-patch at the agent's own folder";
    if let Some(deep) = found.too_deep.into_inner().expect("no poison") {
        return Err(Error::TooLarge {
            root,
            message: format!(
                "{} is more than {} folders below it; {advice}",
                rel_path(&project.root, &deep),
                limits.max_depth
            ),
        });
    }
    if entries > limits.max_entries {
        return Err(Error::TooLarge {
            root,
            message: format!(
                "it holds more than {} files and folders (not counting ignored and vendored ones); {advice}, or raise the limit with ACP_PATCH_MAX_FILES=N",
                limits.max_entries
            ),
        });
    }
    if found.bytes.load(Ordering::Relaxed) > limits.max_bytes {
        return Err(Error::TooLarge {
            root,
            message: format!(
                "its source files hold more than {} MiB; {advice}, or raise the limit with ACP_PATCH_MAX_BYTES=N",
                limits.max_bytes >> 20
            ),
        });
    }
    let mut sources = found.sources.into_inner().expect("no poison");
    sources.sort();
    // read on all cores once the walk has kept within the limits (a tree refused is never
    // read), in the sorted order
    let all = read_all(sources.iter().map(|(p, _)| p.as_path()).collect());
    for ((path, target), bytes) in sources.into_iter().zip(all) {
        let bytes = bytes.map_err(crate::error::io_err(&path))?;
        let rel = rel_path(&project.root, &path);
        if let Some(target) = target {
            project.symlinks.push((rel.clone(), target));
        }
        match SourceFile::decode(path, rel, bytes) {
            Ok(f) => project.files.push(f),
            Err(bad) => project.not_utf8.push(bad),
        }
    }
    project.manifests = found.manifests.into_inner().expect("no poison");
    project.manifests.sort();
    project.skipped = found.skipped.into_inner().expect("no poison");
    project.skipped.sort();
    project.leftovers = std::mem::take(&mut *leftovers.lock().expect("no poison"));
    project.leftovers.sort();
    Ok(())
}

/// The bytes of every file, in order, read by as many threads as there are cores.
fn read_all(paths: Vec<&Path>) -> Vec<std::io::Result<Vec<u8>>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(paths.len());
    if threads < 2 {
        return paths.into_iter().map(std::fs::read).collect();
    }
    let chunk = paths.len().div_ceil(threads);
    std::thread::scope(|s| {
        let parts: Vec<_> = paths
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(std::fs::read).collect::<Vec<_>>()))
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().expect("a read does not panic"))
            .collect()
    })
}

/// Whether a file name is one of apply's temporary files (also the older
/// `.acp-patch-XXXXXX` names).
fn is_leftover(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
        || name
            .strip_prefix(".acp-patch-")
            .is_some_and(|rest| rest.len() == 6 && rest.chars().all(|c| c.is_ascii_alphanumeric()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXTS: [&str; 2] = ["py", "ts"];

    #[test]
    fn limits_refuse_a_large_tree_with_advice() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..30 {
            std::fs::write(dir.path().join(format!("m{i}.py")), "x = 1\n").unwrap();
        }
        let small = Limits {
            max_entries: 10,
            ..Limits::DEFAULT
        };
        let err = Project::load_with(dir.path(), &Options::default(), small, &EXTS).unwrap_err();
        assert!(
            err.to_string().contains("more than 10 files and folders"),
            "{err}"
        );
        let few_bytes = Limits {
            max_bytes: 20,
            ..Limits::DEFAULT
        };
        let err =
            Project::load_with(dir.path(), &Options::default(), few_bytes, &EXTS).unwrap_err();
        assert!(err.to_string().contains("ACP_PATCH_MAX_BYTES"), "{err}");
        let p =
            Project::load_with(dir.path(), &Options::default(), Limits::DEFAULT, &EXTS).unwrap();
        assert_eq!(p.files.len(), 30);
    }

    #[test]
    fn leftover_names() {
        assert!(is_leftover(".acp-patch-tmp-123-abc"));
        assert!(is_leftover(".acp-patch-Ab12cd"));
        assert!(!is_leftover(".acp-patch-notes"));
        assert!(!is_leftover("acp-patch.toml"));
    }
}
