//! An agent installed into a Python environment (pip, uv, pipx): the interpreter says, from
//! the distribution's own record (`importlib.metadata`), where its files are.

use super::{Ecosystem, Installed};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Run by the environment's interpreter with NAME: the distribution of that name, else the
/// one whose console script NAME is; its version, where it is installed, its top-level
/// folders (from RECORD) and the console script it starts with (NAME, else one that starts
/// in its own packages, else the first). A launcher (its console script starts in a module
/// another distribution installs, as gptme-acp's `gptme.acp.__main__:main`) comes with that
/// distribution, found by its RECORD; if none installs the module, where Python finds it
/// (`find_spec` of its top-level name, which runs no code) and the launcher's requirements
/// missing from the environment. Python 3.8+.
const QUERY: &str = r#"
import json, re, sys
from importlib import metadata as m
name = sys.argv[1]

def tops(d):
    found = set()
    for f in d.files or []:
        parts = f.parts
        if len(parts) > 1 and parts[0] not in ("..", "__pycache__") and not parts[0].endswith((".dist-info", ".egg-info", ".data")):
            found.add(parts[0])
    return sorted(found)

def info(d):
    direct = json.loads(d.read_text("direct_url.json") or "{}")
    return {
        "name": d.metadata["Name"],
        "version": d.version,
        "site": str(d.locate_file("")),
        "tops": tops(d),
        "editable": direct.get("dir_info", {}).get("editable", False),
        "url": direct.get("url"),
    }

def owns(d, module):
    # a file of the module (a/b/c.py, a/b/c.cpython-312-x86_64-linux-gnu.so) or of its
    # package (a/b/c/...) in d's RECORD; without a RECORD, its top_level.txt
    want = module.split(".")
    n = len(want)
    if d.files is None:
        return want[0] in (d.read_text("top_level.txt") or "").split()
    for f in d.files:
        parts = list(f.parts)
        if len(parts) > n and parts[:n] == want:
            return True
        if len(parts) == n and parts[:-1] == want[:-1] and "." in parts[-1] and parts[-1].split(".")[0] == want[-1]:
            return True
    return False

dist = None
try:
    dist = m.distribution(name)
except m.PackageNotFoundError:
    for d in m.distributions():
        if any(ep.group == "console_scripts" and ep.name == name for ep in d.entry_points):
            dist = d
            break
if dist is None:
    print(json.dumps(None))
    sys.exit(0)
out = info(dist)
out["python"] = sys.executable
own = out["tops"]
module_of = lambda ep: ep.value.split(":")[0].strip()
scripts = [ep for ep in dist.entry_points if ep.group == "console_scripts"]
script = next((ep for ep in scripts if ep.name == name), None) \
    or next((ep for ep in scripts if module_of(ep).split(".")[0] in own), None) \
    or (scripts[0] if scripts else None)
out["script"] = script.name if script else None
out["entry"] = script.value.strip() if script else None
out["launcher"] = None
module = module_of(script) if script else None
if module and module.split(".")[0] not in own and not owns(dist, module):
    runs = next((d for d in m.distributions() if owns(d, module)), None)
    launcher = {"module": module, "runs": runs and info(runs), "where": None, "missing": []}
    if runs is None:
        import importlib.util
        try:
            spec = importlib.util.find_spec(module.split(".")[0])
        except Exception:
            spec = None
        if spec is not None:
            launcher["where"] = (list(spec.submodule_search_locations or []) or [spec.origin])[0]
        for req in dist.requires or []:
            if "extra" in req.partition(";")[2]:
                continue
            wanted = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", req.strip())
            if not wanted:
                continue
            try:
                m.distribution(wanted.group(0))
            except m.PackageNotFoundError:
                launcher["missing"].append(wanted.group(0))
    out["launcher"] = launcher
print(json.dumps(out))
"#;

/// A distribution, as [`QUERY`] describes it.
#[derive(serde::Deserialize)]
struct Dist {
    name: String,
    version: String,
    site: PathBuf,
    tops: Vec<String>,
    editable: bool,
    url: Option<String>,
}

#[derive(serde::Deserialize)]
struct Found {
    #[serde(flatten)]
    dist: Dist,
    python: PathBuf,
    /// The console script it starts with, and its entry point (`module:function`).
    script: Option<String>,
    entry: Option<String>,
    /// Its console script starts in a module it does not install.
    launcher: Option<Launcher>,
}

#[derive(serde::Deserialize)]
struct Launcher {
    /// The entry point's module.
    module: String,
    /// The distribution that installs it.
    runs: Option<Dist>,
    /// Without one, where Python finds the module's top-level package or module.
    #[serde(rename = "where")]
    location: Option<PathBuf>,
    /// The launcher's requirements not installed in the environment.
    missing: Vec<String>,
}

/// The interpreter a console script runs with: its shebang (`#!/venv/bin/python`,
/// `#!/usr/bin/env python3`), or pip's `/bin/sh` trampoline for long paths
/// (`'''exec' /venv/bin/python "$0" "$@"`).
pub fn shebang_interpreter(script: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = vec![0u8; 4096];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let head = String::from_utf8_lossy(&head[..n]);
    let mut lines = head.lines();
    let first = lines.next()?.strip_prefix("#!")?.trim();
    let mut words = first.split_whitespace();
    let program = words.next()?;
    let python_like = |p: &str| {
        Path::new(p)
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("python"))
    };
    if program.ends_with("/env") {
        let word = words.find(|w| !w.starts_with('-'))?;
        return python_like(word).then(|| PathBuf::from(word));
    }
    if python_like(program) {
        return Some(PathBuf::from(program));
    }
    if program.ends_with("/sh") {
        let exec = lines.next()?.strip_prefix("'''exec' ")?;
        let path = exec.split_whitespace().next()?;
        return python_like(path).then(|| PathBuf::from(path));
    }
    None
}

/// `name` in the environment of `python`; `None` (and a word in `looked`) when it is not
/// there or the interpreter cannot run.
pub fn find(name: &str, python: &Path, looked: &mut Vec<String>) -> Result<Option<Installed>> {
    let out = std::process::Command::new(python)
        .args(["-c", QUERY, name])
        // as the console script sees the environment (user site included), but not a
        // distribution that happens to lie in the caller's folder
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .output();
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            looked.push(format!(
                "{} (failed: {})",
                python.display(),
                err.lines().last().unwrap_or("no message")
            ));
            return Ok(None);
        }
        Err(e) => {
            looked.push(format!("{} (could not run: {e})", python.display()));
            return Ok(None);
        }
    };
    let found: Option<Found> =
        serde_json::from_slice(&out.stdout).map_err(|e| Error::InstalledShape {
            name: name.to_string(),
            message: format!(
                "{} answered what acp-patch cannot read: {e}",
                python.display()
            ),
        })?;
    let Some(found) = found else {
        looked.push(format!(
            "the environment of {} (no distribution or console script `{name}`)",
            python.display()
        ));
        return Ok(None);
    };
    // an editable install lists no package in its record: refused as such, not taken for a
    // launcher
    let dist = &found.dist;
    refuse_editable(name, dist)?;
    if let Some(launcher) = &found.launcher {
        return launched(name, &found, launcher).map(Some);
    }
    let entry_top = found
        .entry
        .as_deref()
        .map(|e| e.split(':').next().unwrap_or(e).trim())
        .map(|module| module.split('.').next().unwrap_or(module));
    let top = match dist.tops.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(Error::InstalledShape {
                name: name.to_string(),
                message: format!(
                    "{} {} installs no package folder (a single module?) in {}: point acp-patch at its files",
                    dist.name,
                    dist.version,
                    dist.site.display()
                ),
            });
        }
        several => match entry_top {
            Some(entry) if several.iter().any(|t| t == entry) => entry.to_string(),
            _ => {
                return Err(Error::InstalledShape {
                    name: name.to_string(),
                    message: format!(
                        "{} {} installs several packages ({}) and no console script says which is the agent: run `acp-patch apply {}/<package>`",
                        dist.name,
                        dist.version,
                        several.join(", "),
                        dist.site.display()
                    ),
                });
            }
        },
    };
    Ok(Some(installed(
        name,
        &found.dist,
        &top,
        &found.python,
        None,
    )))
}

/// The distribution's package `top` as the place to patch; `via` says how a launcher led
/// there.
fn installed(name: &str, dist: &Dist, top: &str, python: &Path, via: Option<String>) -> Installed {
    Installed {
        name: name.to_string(),
        package: dist.name.clone(),
        version: dist.version.clone(),
        ecosystem: Ecosystem::Python,
        root: dist.site.join(top),
        install_dir: dist.site.clone(),
        python: Some(python.to_path_buf()),
        via,
    }
}

fn refuse_editable(name: &str, dist: &Dist) -> Result<()> {
    if !dist.editable {
        return Ok(());
    }
    Err(Error::InstalledShape {
        name: name.to_string(),
        message: format!(
            "{} {} is installed editable from {}: patch its source tree there (`acp-patch apply <that folder>`)",
            dist.name,
            dist.version,
            dist.url.as_deref().unwrap_or("a source tree")
        ),
    })
}

/// A launcher: its console script starts in a module another distribution installs, so the
/// agent is there (the package that module is in, which is that distribution's, manifest
/// included); when no distribution installs it, an error saying what the script runs.
fn launched(name: &str, found: &Found, launcher: &Launcher) -> Result<Installed> {
    let module = launcher.module.as_str();
    let runs = format!(
        "{} {}'s console script {} runs {}",
        found.dist.name,
        found.dist.version,
        found.script.as_deref().unwrap_or(name),
        found.entry.as_deref().unwrap_or(module)
    );
    let top = module.split('.').next().unwrap_or(module);
    let Some(owner) = &launcher.runs else {
        let mut message = format!(
            "{runs}, but no distribution in the environment of {} installs {module}",
            found.python.display()
        );
        if let Some(location) = &launcher.location {
            message.push_str(&format!(
                "; Python finds {top} at {}, which no distribution's record lists: run `acp-patch apply {}`",
                location.display(),
                location.display()
            ));
        }
        match launcher.missing.as_slice() {
            [] if launcher.location.is_none() => message.push_str(&format!(
                "; install the distribution that provides {module}, then pass it to --installed"
            )),
            [] => {}
            [one] => message.push_str(&format!(
                "; {} requires {one}, which is not installed there: install it, then run `acp-patch apply --installed {one}`",
                found.dist.name
            )),
            several => message.push_str(&format!(
                "; {} requires {}, not installed there: install them, then pass --installed the one that provides {module}",
                found.dist.name,
                several.join(", ")
            )),
        }
        return Err(Error::InstalledShape {
            name: name.to_string(),
            message,
        });
    };
    refuse_editable(name, owner)?;
    if !owner.tops.iter().any(|t| t == top) {
        return Err(Error::InstalledShape {
            name: name.to_string(),
            message: format!(
                "{runs}, from distribution {} {}, which installs {top} as a single module in {}, not a package folder: point acp-patch at its files",
                owner.name,
                owner.version,
                owner.site.display()
            ),
        });
    }
    let via = format!(
        "{runs}, from distribution {} {}: patching that",
        owner.name, owner.version
    );
    Ok(installed(name, owner, top, &found.python, Some(via)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpreters_from_shebangs() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            ("#!/venv/bin/python\nimport x\n", Some("/venv/bin/python")),
            ("#!/usr/bin/env python3\n", Some("python3")),
            ("#!/usr/bin/env -S python3.12 -u\n", Some("python3.12")),
            (
                "#!/bin/sh\n'''exec' /very/long/venv/bin/python3 \"$0\" \"$@\"\n' '''\n",
                Some("/very/long/venv/bin/python3"),
            ),
            ("#!/usr/bin/env node\n", None),
            ("#!/bin/bash\necho hi\n", None),
            ("no shebang\n", None),
        ];
        for (i, (text, want)) in cases.iter().enumerate() {
            let script = dir.path().join(format!("s{i}"));
            std::fs::write(&script, text).unwrap();
            assert_eq!(
                shebang_interpreter(&script),
                want.map(PathBuf::from),
                "{text}"
            );
        }
    }
}
