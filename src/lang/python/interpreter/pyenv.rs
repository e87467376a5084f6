//! A pyenv shim resolved the way pyenv resolves it, without running it. A shim is a shell
//! script that runs `pyenv exec`: some ten shell processes, a tenth of a second of CPU that
//! every command paid before its first check. pyenv's rule (`pyenv-version-name`):
//! `$PYENV_VERSION`, else the first `.python-version` in `$PYENV_DIR` (the current folder)
//! or a folder above it, else `$PYENV_ROOT/version`. Only a plain answer is taken: the first
//! version selected is installed under a full `X.Y.Z` name and holds the command. Anything
//! else (`system`, a prefix pyenv completes, a virtualenv, a missing install) is left to
//! running the shim.

use super::{Version, parse_version};
use std::path::{Path, PathBuf};

/// The interpreter the pyenv shim `shim` runs here, and its version; `None` when `shim` is
/// no pyenv shim or pyenv's selection is not plain.
pub fn resolve(shim: &Path) -> Option<(Version, PathBuf)> {
    let dir = match std::env::var_os("PYENV_DIR") {
        Some(d) => PathBuf::from(d),
        None => std::env::current_dir().ok()?,
    };
    resolve_from(shim, &dir, std::env::var("PYENV_VERSION").ok().as_deref())
}

/// [`resolve`] from folder `dir` with `$PYENV_VERSION` given.
fn resolve_from(shim: &Path, dir: &Path, env_version: Option<&str>) -> Option<(Version, PathBuf)> {
    let shims = shim.parent()?;
    if shims.file_name()? != "shims" {
        return None;
    }
    let root = shims.parent()?;
    if !root.join("libexec/pyenv").is_file() {
        return None;
    }
    let selected = match env_version.filter(|v| !v.trim().is_empty()) {
        Some(v) => v.split(':').next()?.trim().to_string(),
        None => dir
            .ancestors()
            .find_map(|d| first_version(&d.join(".python-version")))
            .or_else(|| first_version(&root.join("version")))?,
    };
    let version = full_version(&selected)?;
    let python = root
        .join("versions")
        .join(&selected)
        .join("bin")
        .join(shim.file_name()?);
    python.is_file().then_some((version, python))
}

/// The first version a pyenv version file names: its first word on the first line that is
/// neither empty nor a comment.
fn first_version(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .filter_map(|l| l.split_whitespace().next())
        .find(|w| !w.starts_with('#'))
        .map(str::to_string)
}

/// `3.12.4` as a version; `None` for a prefix (`3.12`, which pyenv completes to the newest
/// install) or a name that is not a version.
fn full_version(name: &str) -> Option<Version> {
    let parts: Vec<&str> = name.split('.').collect();
    (parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()))
        .then(|| parse_version(name))
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pyenv root with versions 3.11.7 and 3.12.4 installed, `global` its global version.
    fn pyenv(global: &str) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        for p in ["libexec/pyenv", "shims/python3"] {
            std::fs::create_dir_all(r.join(p).parent().unwrap()).unwrap();
            std::fs::write(r.join(p), "#!/usr/bin/env bash\n").unwrap();
        }
        for v in ["3.11.7", "3.12.4"] {
            std::fs::create_dir_all(r.join("versions").join(v).join("bin")).unwrap();
            std::fs::write(r.join("versions").join(v).join("bin/python3"), "").unwrap();
        }
        std::fs::write(r.join("version"), global).unwrap();
        t
    }

    #[test]
    fn a_shim_runs_the_version_pyenv_selects() {
        let t = pyenv("# global\n3.11.7\n");
        let r = t.path();
        let shim = r.join("shims/python3");
        let at = |v: Version| {
            let name = format!("{}.{}.{}", v.0, v.1, v.2);
            Some((v, r.join("versions").join(name).join("bin/python3")))
        };
        // the global version, from a folder without a version file
        let project = r.join("project/src");
        std::fs::create_dir_all(&project).unwrap();
        assert_eq!(resolve_from(&shim, &project, None), at((3, 11, 7)));
        // a `.python-version` above the folder wins, and $PYENV_VERSION over it
        std::fs::write(r.join("project/.python-version"), "3.12.4 3.11.7\n").unwrap();
        assert_eq!(resolve_from(&shim, &project, None), at((3, 12, 4)));
        assert_eq!(
            resolve_from(&shim, &project, Some("3.11.7:3.12.4")),
            at((3, 11, 7))
        );
    }

    #[test]
    fn what_pyenv_would_complete_or_look_up_is_left_to_running_the_shim() {
        let t = pyenv("system\n");
        let r = t.path();
        let shim = r.join("shims/python3");
        // `system`, a prefix, a version not installed, a command the install lacks
        assert_eq!(resolve_from(&shim, r, None), None);
        assert_eq!(resolve_from(&shim, r, Some("3.12")), None);
        assert_eq!(resolve_from(&shim, r, Some("3.13.0")), None);
        assert_eq!(
            resolve_from(&r.join("shims/python3.12"), r, Some("3.12.4")),
            None
        );
        // not a shim: no pyenv beside its folder
        std::fs::remove_file(r.join("libexec/pyenv")).unwrap();
        assert_eq!(resolve_from(&shim, r, Some("3.12.4")), None);
    }
}
