//! Validation with the language's own compiler, where it is on the machine. The in-process
//! parsers (tree-sitter, syn) accept some code the real compiler rejects (CPython refuses a
//! parameter after `**kwargs`; a custom template can render anything), so apply compiles
//! each patched Python file with the agent's interpreter (no bytecode written) and, with
//! `--check-build`, type-checks / builds a temporary copy of the patched tree.

use crate::error::{Error, Result};
use crate::project::Project;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One file as apply would leave it.
#[derive(Debug, Clone)]
pub struct Patched {
    pub rel: String,
    /// The bytes on disk now (`None` for a file the plan creates).
    pub before: Option<String>,
    /// The bytes apply writes.
    pub after: String,
}

/// What a compiler check established beyond the errors it returns.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// Things to tell the user (no compiler found, a file the compiler rejects as it is).
    pub notes: Vec<String>,
}

/// A compile failure of one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Failure {
    pub line: usize,
    pub message: String,
}

const PY_CHECK: &str = r#"
import json, sys
items = json.loads(sys.stdin.buffer.read().decode("utf-8"))
def check(src, name):
    if src is None:
        return None
    try:
        compile(src.encode("utf-8"), name, "exec", dont_inherit=True)
    except SyntaxError as e:
        return {"line": e.lineno or 1, "message": "%s: %s" % (type(e).__name__, e.msg)}
    except (ValueError, MemoryError, RecursionError) as e:
        return {"line": 1, "message": "%s: %s" % (type(e).__name__, e)}
    return None
out = []
for it in items:
    after = check(it["after"], it["file"])
    before = check(it["before"], it["file"]) if after is not None else None
    out.append({"after": after, "before": before})
v = sys.version_info
sys.stdout.write(json.dumps({"version": "%d.%d.%d" % (v[0], v[1], v[2]), "results": out}))
"#;

#[derive(serde::Deserialize)]
struct PyResults {
    version: String,
    results: Vec<PyResult>,
}

#[derive(serde::Deserialize)]
struct PyResult {
    after: Option<Failure>,
    before: Option<Failure>,
}

/// The interpreter the agent runs on: `$ACP_PATCH_PYTHON`, else a virtualenv in the agent's
/// folder or a folder above it (up to its repository root), else `python3` on PATH.
pub fn python_for(root: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("ACP_PATCH_PYTHON") {
        return Some(PathBuf::from(p));
    }
    for dir in root.ancestors() {
        for venv in [".venv", "venv", "env"] {
            let py = dir.join(venv).join("bin").join("python");
            if py.is_file() {
                return Some(py);
            }
        }
        if dir.join(".git").exists() {
            break;
        }
    }
    find_on_path("python3")
}

pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Compiles every patched Python file with the agent's interpreter. A file that compiled
/// before and does not after is an error (nothing is written); one the interpreter cannot
/// compile even as it is (another Python version?) is noted, its patch checked by the
/// parser only.
pub fn python(project: &Project, files: &[Patched]) -> Result<Checked> {
    let mut checked = Checked::default();
    if files.is_empty() {
        return Ok(checked);
    }
    let Some(python) = python_for(&project.root) else {
        checked.notes.push(
            "no Python interpreter found (set ACP_PATCH_PYTHON): the patched files were checked with tree-sitter only".into(),
        );
        return Ok(checked);
    };
    let payload: Vec<serde_json::Value> = files
        .iter()
        .map(|f| serde_json::json!({ "file": f.rel, "before": f.before, "after": f.after }))
        .collect();
    let results = match run_python(&python, &serde_json::to_string(&payload).expect("json")) {
        Ok(r) => r,
        Err(why) => {
            checked.notes.push(format!(
                "{} could not check the patched files ({why}): they were checked with tree-sitter only",
                python.display()
            ));
            return Ok(checked);
        }
    };
    let compiler = format!("Python {} ({})", results.version, python.display());
    for (f, r) in files.iter().zip(results.results) {
        let Some(after) = r.after else { continue };
        match (&f.before, r.before) {
            (Some(_), Some(before)) => checked.notes.push(format!(
                "{}:{}: {compiler} cannot compile it as it is ({}); its patch was checked with tree-sitter only",
                f.rel, before.line, before.message
            )),
            _ => {
                return Err(Error::WouldNotCompile {
                    file: f.rel.clone(),
                    line: after.line,
                    compiler,
                    message: after.message,
                });
            }
        }
    }
    Ok(checked)
}

/// The first compile failure of each file as it is now (verify: a file holding inserted
/// code must compile). `None` when no interpreter could run.
pub fn python_failures(
    project: &Project,
    files: &[(String, String)],
) -> Option<(String, Vec<(String, Failure)>)> {
    let python = python_for(&project.root)?;
    let payload: Vec<serde_json::Value> = files
        .iter()
        .map(|(rel, text)| serde_json::json!({ "file": rel, "before": null, "after": text }))
        .collect();
    let results = run_python(&python, &serde_json::to_string(&payload).expect("json")).ok()?;
    let compiler = format!("Python {}", results.version);
    let failures = files
        .iter()
        .zip(results.results)
        .filter_map(|((rel, _), r)| r.after.map(|f| (rel.clone(), f)))
        .collect();
    Some((compiler, failures))
}

fn run_python(python: &Path, payload: &str) -> std::result::Result<PyResults, String> {
    use std::io::Write;
    let mut child = Command::new(python)
        .args(["-I", "-B", "-c", PY_CHECK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().expect("piped");
    let payload = payload.to_string();
    let writer = std::thread::spawn(move || stdin.write_all(payload.as_bytes()));
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let _ = writer.join();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().last().unwrap_or("failed").trim().to_string());
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("unreadable answer: {e}"))
}

/// `--check-build`: the language's build check (`tsc --noEmit`, `cargo check`) on a
/// temporary copy of the tree with the patch applied, before anything is written. When the
/// patched copy fails, the unpatched tree is checked too, so the message says whose fault
/// it is.
pub fn check_build(
    project: &Project,
    language: &dyn crate::lang::Language,
    files: &[Patched],
) -> Result<Option<String>> {
    let copy = tempfile::Builder::new()
        .prefix("acp-patch-check-")
        .tempdir()
        .map_err(crate::error::io_err(std::env::temp_dir()))?;
    copy_tree(&project.root, copy.path())?;
    let mut cmd = match language.build_check(project, copy.path()) {
        None => {
            return Ok(Some(format!(
                "--check-build: nothing to build for a {} agent (apply compiled each patched file)",
                language.name()
            )));
        }
        Some(Err(why)) => return Err(Error::Build { message: why }),
        Some(Ok(cmd)) => cmd,
    };
    let shown = describe(&cmd);
    for f in files {
        let dest = copy.path().join(&f.rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(crate::error::io_err(parent))?;
        }
        std::fs::write(&dest, &f.after).map_err(crate::error::io_err(&dest))?;
    }
    let patched = run_build(&mut cmd)?;
    if patched.is_none() {
        return Ok(Some(format!(
            "--check-build: `{shown}` passes on the patched tree"
        )));
    }
    let output = patched.unwrap_or_default();
    let pristine = tempfile::Builder::new()
        .prefix("acp-patch-check-")
        .tempdir()
        .map_err(crate::error::io_err(std::env::temp_dir()))?;
    copy_tree(&project.root, pristine.path())?;
    let before = match language.build_check(project, pristine.path()) {
        Some(Ok(mut c)) => run_build(&mut c)?,
        _ => None,
    };
    let message = match before {
        None => {
            format!("`{shown}` fails on the patched tree but passes on it unpatched:\n{output}")
        }
        Some(_) => format!(
            "`{shown}` fails on the unpatched tree too, so it cannot check the patch; fix the build or leave out --check-build:\n{output}"
        ),
    };
    Err(Error::Build { message })
}

fn describe(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `None` when the command passes, else its output (the first 40 lines).
fn run_build(cmd: &mut Command) -> Result<Option<String>> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::Build {
            message: format!("could not run `{}`: {e}", describe(cmd)),
        })?;
    if out.status.success() {
        return Ok(None);
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().take(40).collect();
    Ok(Some(lines.join("\n")))
}

/// Copies the agent's files (respecting .gitignore; no VCS folder, build output or
/// installed packages: those are linked, so the copy builds against the same ones).
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    const LINKED: &[&str] = &["node_modules"];
    const SKIPPED: &[&str] = &[".git", "target"];
    // packages installed above the agent (a workspace root) resolve from the copy too
    if !from.join("node_modules").exists()
        && let Some(up) = from
            .ancestors()
            .skip(1)
            .find(|d| d.join("node_modules").is_dir())
    {
        let _ = std::os::unix::fs::symlink(up.join("node_modules"), to.join("node_modules"));
    }
    for entry in ignore::WalkBuilder::new(from)
        .hidden(false)
        .require_git(false)
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !(SKIPPED.contains(&name.as_ref()) || LINKED.contains(&name.as_ref())) || e.depth() == 0
        })
        .build()
        .flatten()
    {
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let dest = to.join(rel);
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            std::fs::create_dir_all(&dest).map_err(crate::error::io_err(&dest))?;
            for linked in LINKED {
                let src = entry.path().join(linked);
                if src.is_dir() {
                    let _ = std::os::unix::fs::symlink(&src, dest.join(linked));
                }
            }
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &dest).map_err(crate::error::io_err(entry.path()))?;
        } else if kind.is_symlink()
            && let Ok(target) = std::fs::read_link(entry.path())
        {
            let _ = std::os::unix::fs::symlink(target, &dest);
        }
    }
    Ok(())
}

/// `tsc --noEmit -p DIR` with the TypeScript the agent installed (`node_modules`), else a
/// `tsc` on PATH.
pub fn tsc_command(dir: &Path) -> std::result::Result<Command, String> {
    if !dir.join("tsconfig.json").is_file() {
        return Err("no tsconfig.json in the agent's folder, so tsc cannot check it; leave out --check-build".into());
    }
    let local = dir.join("node_modules/typescript/bin/tsc");
    let mut cmd = if local.is_file() {
        let node = find_on_path("node")
            .ok_or("node is not on PATH; install Node.js or leave out --check-build")?;
        let mut c = Command::new(node);
        c.arg(local);
        c
    } else if let Some(tsc) = find_on_path("tsc") {
        Command::new(tsc)
    } else {
        return Err("no TypeScript compiler: neither node_modules/typescript nor a tsc on PATH; install typescript (npm install --save-dev typescript) or leave out --check-build".into());
    };
    cmd.args(["--noEmit", "-p"]).arg(dir).current_dir(dir);
    Ok(cmd)
}

/// `cargo check` in DIR, building into `$CARGO_TARGET_DIR` or a folder in the system's
/// temporary folder kept per agent (so a second check is quick), never the agent's target/.
pub fn cargo_check_command(root: &Path, dir: &Path) -> std::result::Result<Command, String> {
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .or_else(|| find_on_path("cargo"))
        .ok_or("cargo is not on PATH; install Rust (rustup) or leave out --check-build")?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            root.hash(&mut h);
            std::env::temp_dir().join(format!("acp-patch-check-target-{:016x}", h.finish()))
        });
    let mut cmd = Command::new(cargo);
    cmd.args(["check", "--quiet", "--message-format", "short"])
        .env("CARGO_TARGET_DIR", target)
        .current_dir(dir);
    Ok(cmd)
}
