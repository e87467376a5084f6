//! The agent tree: its root, its config and its source files, read once.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::render::Templates;
use crate::source::SourceFile;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Folders that never hold the agent's own code.
const SKIP_DIRS: &[&str] = &[
    "node_modules",
    "__pycache__",
    "site-packages",
    ".venv",
    "venv",
    "target",
    ".git",
    ".tox",
];

#[derive(Debug, Clone)]
pub struct Project {
    pub root: PathBuf,
    pub config: Config,
    pub env_prefix: String,
    pub templates: Templates,
    /// Every source file of a known language, sorted by relative path.
    pub files: Vec<SourceFile>,
    /// Other files a language reads and may edit (a `Cargo.toml`) as they would be after a
    /// change not written yet: revert re-plans the reverted tree in memory. Read them with
    /// [`Project::read_source`].
    pub overlay: Vec<SourceFile>,
}

/// Options shared by apply and verify.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub config: Option<PathBuf>,
    pub env_prefix: Option<String>,
    pub templates: Option<PathBuf>,
}

impl Project {
    pub fn load(root: &Path, opts: &Options) -> Result<Project> {
        if !root.exists() {
            return Err(Error::MissingPath {
                path: root.to_path_buf(),
            });
        }
        let root = root.canonicalize().map_err(crate::error::io_err(root))?;
        if !root.is_dir() {
            return Err(Error::NoAgent {
                root: root.clone(),
                detail: "the path is a file, not the agent's folder".into(),
            });
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
        let templates = Templates {
            override_dir: opts
                .templates
                .clone()
                .or_else(|| config.templates.dir.clone()),
        };
        let files = read_sources(&root)?;
        Ok(Project {
            root,
            config,
            env_prefix,
            templates,
            files,
            overlay: Vec::new(),
        })
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

    pub fn files_with_extension<'a>(
        &'a self,
        exts: &'a [&'a str],
    ) -> impl Iterator<Item = &'a SourceFile> + 'a {
        self.files.iter().filter(move |f| {
            f.path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| exts.contains(&e))
        })
    }
}

/// Walks the tree in parallel (respecting .gitignore), reads every file of a known
/// language, and sorts them so every later phase is deterministic.
fn read_sources(root: &Path) -> Result<Vec<SourceFile>> {
    let exts: Vec<&str> = crate::lang::all()
        .iter()
        .flat_map(|l| l.extensions().iter().copied())
        .collect();
    let paths = Mutex::new(Vec::new());
    ignore::WalkBuilder::new(root)
        .hidden(true)
        .require_git(false)
        .filter_entry(|e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && SKIP_DIRS.contains(&e.file_name().to_string_lossy().as_ref()))
        })
        .build_parallel()
        .run(|| {
            Box::new(|entry| {
                if let Ok(e) = entry
                    && e.file_type().is_some_and(|t| t.is_file())
                    && e.path()
                        .extension()
                        .and_then(|x| x.to_str())
                        .is_some_and(|x| exts.contains(&x))
                {
                    paths.lock().expect("no poison").push(e.into_path());
                }
                ignore::WalkState::Continue
            })
        });
    let mut paths = paths.into_inner().expect("no poison");
    paths.sort();
    let mut files = Vec::with_capacity(paths.len());
    for p in paths {
        if let Some(f) = SourceFile::read(root, &p)? {
            files.push(f);
        }
    }
    Ok(files)
}
