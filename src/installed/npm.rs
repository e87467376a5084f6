//! An agent installed with npm: `./node_modules/NAME`, `$(npm root -g)/NAME`, or the
//! package a bin on PATH links into.

use super::{Ecosystem, Installed};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

#[derive(serde::Deserialize)]
struct PackageJson {
    name: Option<String>,
    version: Option<String>,
}

/// The package in `dir` (a folder with a package.json below a `node_modules`).
fn package_at(name: &str, dir: &Path) -> Result<Option<Installed>> {
    let manifest = dir.join("package.json");
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        return Ok(None);
    };
    let pkg: PackageJson = serde_json::from_str(&text).map_err(|e| Error::InstalledShape {
        name: name.to_string(),
        message: format!(
            "{}: not a package.json acp-patch can read: {e}",
            manifest.display()
        ),
    })?;
    let package = pkg.name.unwrap_or_else(|| {
        dir.file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned()
    });
    // node_modules/<name> or node_modules/@scope/<name>
    let install_dir = dir
        .ancestors()
        .skip(1)
        .find(|a| a.file_name().is_some_and(|n| n == "node_modules"))
        .unwrap_or_else(|| dir.parent().unwrap_or(dir))
        .to_path_buf();
    Ok(Some(Installed {
        name: name.to_string(),
        package,
        version: pkg.version.unwrap_or_else(|| "unknown".into()),
        ecosystem: Ecosystem::Npm,
        root: dir.to_path_buf(),
        install_dir,
        python: None,
        via: None,
    }))
}

/// A bin on PATH that is a link into a package below a `node_modules` (what `npm install -g`
/// puts in `<prefix>/bin`): that package.
pub fn from_bin(name: &str, script: &Path) -> Result<Option<Installed>> {
    let Ok(real) = script.canonicalize() else {
        return Ok(None);
    };
    let in_node_modules = real
        .ancestors()
        .any(|a| a.file_name().is_some_and(|n| n == "node_modules"));
    if !in_node_modules {
        return Ok(None);
    }
    // the nearest folder with a package.json whose parent is node_modules or an @scope in it
    for dir in real.ancestors().skip(1) {
        let parent = dir.parent().and_then(Path::file_name);
        let grandparent = dir
            .parent()
            .and_then(Path::parent)
            .and_then(Path::file_name);
        let at_package = parent.is_some_and(|p| p == "node_modules")
            || (parent.is_some_and(|p| p.to_string_lossy().starts_with('@'))
                && grandparent.is_some_and(|g| g == "node_modules"));
        if at_package && dir.join("package.json").is_file() {
            return package_at(name, dir);
        }
    }
    Ok(None)
}

/// `npm root -g` (the global prefix's `node_modules`; `NPM_CONFIG_PREFIX` moves it).
fn global_root() -> Option<PathBuf> {
    let out = std::process::Command::new("npm")
        .args(["root", "-g"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let root = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !root.trim().is_empty()).then(|| PathBuf::from(root.trim()))
}

/// An npm package named `name` in `./node_modules`, then in npm's global root.
pub fn find(name: &str, looked: &mut Vec<String>) -> Result<Option<Installed>> {
    let valid = !name.is_empty()
        && !name.starts_with('.')
        && name.split('/').count() <= 2
        && !name.split('/').any(|p| p.is_empty() || p == "..");
    if !valid {
        return Ok(None);
    }
    let mut roots = vec![PathBuf::from("node_modules")];
    match global_root() {
        Some(g) => roots.push(g),
        None => looked.push("npm's global root (`npm root -g` did not answer)".into()),
    }
    for root in roots {
        let dir = root.join(name);
        if let Some(found) = package_at(name, &dir)? {
            let root = root.canonicalize().unwrap_or(root);
            return Ok(Some(Installed {
                root: root.join(name),
                install_dir: root,
                ..found
            }));
        }
        looked.push(root.display().to_string());
    }
    Ok(None)
}
