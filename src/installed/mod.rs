//! `--installed NAME`: an agent the user did not clone, installed with pip/uv/pipx into a
//! Python environment or with npm into a `node_modules`. Finds the package's folder, checks
//! it can be written, and keeps a manifest beside the package (no git there): what apply
//! changed, so that revert and a later apply (after the package manager reinstalled or
//! upgraded the agent) know what they find.

mod manifest;
mod npm;
mod python;

use crate::commands::{
    self, ApplyOptions, ApplyOutcome, RevertOptions, RevertOutcome, VerifyOutcome,
};
use crate::error::{Error, Result};
use crate::project::Options;
use std::path::{Path, PathBuf};

pub use manifest::Manifest;

/// Where an installed agent lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// What the user named (a console script, a distribution or an npm package).
    pub name: String,
    /// The distribution's or npm package's own name.
    pub package: String,
    pub version: String,
    pub ecosystem: Ecosystem,
    /// The folder acp-patch patches: the distribution's top-level package, or the npm
    /// package's folder.
    pub root: PathBuf,
    /// `site-packages` or `node_modules`: the manifest goes in its `.acp-patch/` folder.
    pub install_dir: PathBuf,
    /// The environment's interpreter (Python).
    pub python: Option<PathBuf>,
    /// How NAME led to another distribution's package: a launcher's console script starts
    /// in a module that distribution installs (said before where it is installed).
    pub via: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ecosystem {
    Python,
    Npm,
}

impl Installed {
    pub fn manifest_path(&self) -> PathBuf {
        self.install_dir
            .join(".acp-patch")
            .join(format!("{}.json", self.package.replace('/', "+")))
    }
}

/// Finds `name`: with `python`, in that interpreter's environment only; else through the
/// console script on PATH (an npm bin links into its package, a Python one names its
/// interpreter in its shebang), then `./node_modules`, then npm's global root, then the
/// environment of `python3` on PATH.
pub fn locate(name: &str, python: Option<&Path>) -> Result<Installed> {
    let mut looked = Vec::new();
    if let Some(py) = python {
        return python::find(name, py, &mut looked)?.ok_or_else(|| not_installed(name, looked));
    }
    if let Some(script) = on_path(name) {
        if let Some(found) = npm::from_bin(name, &script)? {
            return Ok(found);
        }
        if let Some(py) = python::shebang_interpreter(&script) {
            if let Some(found) = python::find(name, &py, &mut looked)? {
                return Ok(found);
            }
        } else {
            looked.push(format!(
                "{} (on PATH, neither an npm bin nor a Python script)",
                script.display()
            ));
        }
    } else {
        looked.push(format!("PATH (no `{name}`)"));
    }
    if let Some(found) = npm::find(name, &mut looked)? {
        return Ok(found);
    }
    if let Some(found) = python::find(name, Path::new("python3"), &mut looked)? {
        return Ok(found);
    }
    Err(not_installed(name, looked))
}

fn not_installed(name: &str, looked: Vec<String>) -> Error {
    Error::NotInstalled {
        name: name.to_string(),
        looked,
    }
}

/// `name` on PATH, as a shell would find it.
fn on_path(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Refuses a package folder (or the folder its manifest goes in) this user cannot write.
fn check_writable(found: &Installed) -> Result<()> {
    let manifest_dir = found.manifest_path();
    let manifest_dir = manifest_dir.parent().expect("a file in .acp-patch/");
    let dirs = [
        found.root.as_path(),
        if manifest_dir.exists() {
            manifest_dir
        } else {
            &found.install_dir
        },
    ];
    for dir in dirs {
        if !writable(dir) {
            return Err(Error::NotWritable {
                name: found.package.clone(),
                dir: dir.to_path_buf(),
            });
        }
    }
    Ok(())
}

fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path; access() only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// `apply --installed NAME`.
pub fn apply(found: &Installed, opts: &ApplyOptions) -> Result<ApplyOutcome> {
    if !opts.dry_run {
        check_writable(found)?;
    }
    let previous = Manifest::read(&found.manifest_path())?;
    // what happened since the last apply, said before this one changes the files
    let since = previous.as_ref().map(|m| m.since(found));
    // the manifest is the record here, not git: a site-packages folder is no work tree
    let mut outcome = commands::apply(
        &found.root,
        &ApplyOptions {
            common: opts.common.clone(),
            allow_dirty: true,
            ..opts.clone()
        },
    )?;
    let path = found.manifest_path();
    match &previous {
        Some(_) if !outcome.nothing_to_do() => outcome.notes.extend(since),
        Some(_) => outcome.notes.push(format!(
            "{} {} is patched as recorded in {}",
            found.package,
            found.version,
            path.display()
        )),
        None => {}
    }
    if outcome.written {
        let manifest = Manifest::after_apply(found, &outcome, previous.as_ref());
        manifest.write(&path)?;
        outcome
            .notes
            .push(format!("recorded what changed in {}", path.display()));
    }
    Ok(outcome)
}

/// `verify --installed NAME`: verify on the package's folder, with a word on its manifest.
pub fn verify(found: &Installed, opts: &Options) -> Result<VerifyOutcome> {
    let mut outcome = commands::verify(&found.root, opts)?;
    let path = found.manifest_path();
    outcome.notes.push(match Manifest::read(&path)? {
        Some(m) => m.state(found),
        None => format!(
            "{} {} at {}: no manifest ({}), so acp-patch has not patched it there",
            found.package,
            found.version,
            found.root.display(),
            path.display()
        ),
    });
    Ok(outcome)
}

/// `revert --installed NAME`: revert on the package's folder, then the manifest goes.
pub fn revert(found: &Installed, opts: &RevertOptions) -> Result<RevertOutcome> {
    if !opts.dry_run {
        check_writable(found)?;
    }
    let path = found.manifest_path();
    let previous = Manifest::read(&path)?;
    let since = previous.as_ref().map(|m| m.since(found));
    let mut outcome = commands::revert(
        &found.root,
        &RevertOptions {
            common: opts.common.clone(),
            allow_dirty: true,
            ..opts.clone()
        },
    )?;
    if previous.is_some() {
        outcome.notes.extend(since);
        if !opts.dry_run {
            std::fs::remove_file(&path).map_err(crate::error::io_err(&path))?;
            let _ = std::fs::remove_dir(path.parent().expect("in .acp-patch/"));
            outcome
                .notes
                .push(format!("removed the manifest {}", path.display()));
        }
    }
    Ok(outcome)
}
