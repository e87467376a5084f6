//! An agent installed into a Python environment (pip, uv, pipx): the interpreter says, from
//! the distribution's own record (`importlib.metadata`), where its files are.

use super::{Ecosystem, Installed};
use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Run by the environment's interpreter with NAME: the distribution of that name, else the
/// one whose console script NAME is; its version, where it is installed, its top-level
/// folders (from RECORD) and the package its console script starts in. Python 3.8+.
const QUERY: &str = r#"
import json, sys
from importlib import metadata as m
name = sys.argv[1]
norm = lambda s: s.lower().replace("_", "-").replace(".", "-")
dist, entry = None, None
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
scripts = [ep for ep in dist.entry_points if ep.group == "console_scripts"]
for ep in scripts:
    if ep.name == name or entry is None:
        entry = ep.value.split(":")[0].split(".")[0]
tops = set()
for f in dist.files or []:
    parts = f.parts
    if len(parts) > 1 and parts[0] not in ("..", "__pycache__") and not parts[0].endswith((".dist-info", ".egg-info", ".data")):
        tops.add(parts[0])
direct = dist.read_text("direct_url.json") or "{}"
print(json.dumps({
    "name": dist.metadata["Name"],
    "version": dist.version,
    "site": str(dist.locate_file("")),
    "tops": sorted(tops),
    "entry": entry,
    "editable": json.loads(direct).get("dir_info", {}).get("editable", False),
    "url": json.loads(direct).get("url"),
    "python": sys.executable,
}))
"#;

#[derive(serde::Deserialize)]
struct Found {
    name: String,
    version: String,
    site: PathBuf,
    tops: Vec<String>,
    entry: Option<String>,
    editable: bool,
    url: Option<String>,
    python: PathBuf,
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
    if found.editable {
        return Err(Error::InstalledShape {
            name: name.to_string(),
            message: format!(
                "{} {} is installed editable from {}: patch its source tree there (`acp-patch apply <that folder>`)",
                found.name,
                found.version,
                found.url.as_deref().unwrap_or("a source tree")
            ),
        });
    }
    let top = match found.tops.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(Error::InstalledShape {
                name: name.to_string(),
                message: format!(
                    "{} {} installs no package folder (a single module?) in {}: point acp-patch at its files",
                    found.name,
                    found.version,
                    found.site.display()
                ),
            });
        }
        several => match &found.entry {
            Some(entry) if several.contains(entry) => entry.clone(),
            _ => {
                return Err(Error::InstalledShape {
                    name: name.to_string(),
                    message: format!(
                        "{} {} installs several packages ({}) and no console script says which is the agent: run `acp-patch apply {}/<package>`",
                        found.name,
                        found.version,
                        several.join(", "),
                        found.site.display()
                    ),
                });
            }
        },
    };
    Ok(Some(Installed {
        name: name.to_string(),
        package: found.name,
        version: found.version,
        ecosystem: Ecosystem::Python,
        root: found.site.join(top),
        install_dir: found.site,
        python: Some(found.python),
    }))
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
