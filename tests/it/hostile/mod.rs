//! The hostile battery: trees a new user really has (odd encodings, links, huge files,
//! vendored copies, read-only folders, no git, a broken git, two runs at once, a killed
//! run, a closed pipe, ...). Every case checks one invariant:
//!
//! - each file is byte-identical, or patched (its bytes kept in order, only code inserted,
//!   its mode and owner kept) and building; a new file is a runtime module, read and built;
//! - on a non-zero exit the tree is byte-identical (links, modes and owners included);
//! - the exit code is the documented one, and the message names the file and what to do;
//! - no panic text, no temporary file left.
//!
//! Each test is named after what it guards. Nothing here runs a real agent; every patched
//! package is built (Python compiled, `tsc`, `node --check`, `cargo check`).

mod config;
mod cpython;
mod git;
mod init;
mod interrupted;
mod links;
mod output;
mod permissions;
mod several_agents;
mod style;
mod walk;

use crate::support::{acp_patch, fixture, git, path_str};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

// ---- the invariant ----------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File { bytes: Vec<u8>, mode: u32, uid: u32 },
    Link(PathBuf),
    Dir(u32),
}

/// Every entry below `root` (links recorded, never followed; `.git` skipped).
fn state(root: &Path) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".git" || rel.ends_with("/.git") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let entry = if meta.file_type().is_symlink() {
                Entry::Link(std::fs::read_link(&p).unwrap())
            } else if meta.is_dir() {
                stack.push(p.clone());
                Entry::Dir(meta.mode())
            } else {
                Entry::File {
                    bytes: std::fs::read(&p).unwrap_or_default(),
                    mode: meta.mode(),
                    uid: meta.uid(),
                }
            };
            out.insert(rel, entry);
        }
    }
    out
}

/// Whether `patched` is `original` with code inserted and nothing else changed (see
/// [`crate::support::only_insertions`]); a file that is not UTF-8 must be byte-identical.
fn only_insertions(original: &[u8], patched: &[u8]) -> bool {
    match (std::str::from_utf8(original), std::str::from_utf8(patched)) {
        (Ok(a), Ok(b)) => crate::support::only_insertions(a, b),
        _ => original == patched,
    }
}

fn python() -> String {
    std::env::var("ACP_PATCH_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// CPython compiles each file (no bytecode written); the failure message otherwise.
fn py_compiles(files: &[PathBuf]) -> Result<(), String> {
    if files.is_empty() {
        return Ok(());
    }
    let out = Command::new(python())
        .args([
            "-B",
            "-c",
            "import sys\nfor p in sys.argv[1:]:\n    compile(open(p, 'rb').read(), p, 'exec', dont_inherit=True)",
        ])
        .args(files)
        .output()
        .expect("run python");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl From<crate::support::Run> for Ran {
    fn from(r: crate::support::Run) -> Ran {
        Ran {
            code: r.code,
            stdout: r.stdout,
            stderr: r.stderr,
        }
    }
}

/// Runs acp-patch with extra environment (and `PATH` replaced when given).
fn run_env(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_acp-patch"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run acp-patch");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn run(args: &[&str]) -> Ran {
    acp_patch(args, None).into()
}

/// The invariant, for one run on `dir` whose state was `before`.
fn check(dir: &Path, before: &BTreeMap<String, Entry>, ran: &Ran, code: i32, says: &[&str]) {
    let all = format!("{}\n{}", ran.stdout, ran.stderr);
    for bad in [
        "panicked",
        "RUST_BACKTRACE",
        "stack overflow",
        "fatal runtime error",
    ] {
        assert!(!all.contains(bad), "panic text ({bad}):\n{all}");
    }
    assert_eq!(ran.code, code, "exit code; output:\n{all}");
    for s in says {
        assert!(all.contains(s), "the message should say `{s}`:\n{all}");
    }
    let after = state(dir);
    for name in after.keys() {
        let base = name.rsplit('/').next().unwrap_or(name);
        assert!(
            !base.starts_with(".acp-patch-tmp-"),
            "a temporary file was left: {name}"
        );
    }
    if code != 0 {
        assert!(after == *before, "a refusal changed the tree:\n{all}");
        return;
    }
    let mut compile = Vec::new();
    let mut built: Vec<String> = Vec::new();
    for (name, entry) in &after {
        match (before.get(name), entry) {
            (Some(old), new) if old == new => {}
            (
                Some(Entry::File {
                    bytes: old,
                    mode: old_mode,
                    uid: old_uid,
                }),
                Entry::File { bytes, mode, uid },
            ) => {
                assert!(
                    only_insertions(old, bytes),
                    "{name}: untouched bytes changed"
                );
                assert_eq!(
                    (old_mode, old_uid),
                    (mode, uid),
                    "{name}: mode or owner changed"
                );
                if name.ends_with(".py") {
                    compile.push(dir.join(name));
                }
                built.push(name.clone());
            }
            // a new file is read too: only acp-patch's runtime module (or init's config) is one
            (None, Entry::File { bytes, .. }) => {
                let text = String::from_utf8_lossy(bytes);
                let first = text.split(['\n', '\r']).next().unwrap_or("");
                let base = name.rsplit('/').next().unwrap_or(name);
                assert!(
                    first.contains("acp-patch: runtime module, generated — do not edit; acp-patch apply updates it, acp-patch revert removes it; checksum ")
                        || base == "acp-patch.toml" && text.parse::<toml::Table>().is_ok(),
                    "{name}: a new file that is neither a runtime module nor acp-patch.toml:\n{}",
                    &text[..text.len().min(300)]
                );
                if name.ends_with(".py") {
                    compile.push(dir.join(name));
                }
                built.push(name.clone());
            }
            (old, new) => panic!("{name}: changed from {old:?} to {new:?}"),
        }
    }
    for name in before.keys() {
        assert!(after.contains_key(name), "{name} was removed");
    }
    py_compiles(&compile).unwrap_or_else(|e| panic!("a patched file does not compile: {e}"));
    builds(dir, before, &built);
}

/// Every TypeScript / JavaScript and Rust package apply changed builds: `tsc --noEmit` (the
/// TypeScript fixture's provisioned node_modules), `node --check` for JavaScript, `cargo
/// check` in the Rust fixture's shared target dir. A package that did not build before the
/// patch either (a hostile file tsc cannot take) is not apply's to answer for.
fn builds(dir: &Path, before: &BTreeMap<String, Entry>, changed: &[String]) {
    let mut packages: Vec<(String, &str)> = Vec::new();
    for name in changed {
        let kind = match name.rsplit('.').next() {
            Some("ts" | "mts" | "cts" | "tsx") => "tsc",
            Some("js" | "mjs" | "cjs") => {
                let out = Command::new("node")
                    .arg("--check")
                    .arg(dir.join(name))
                    .output()
                    .expect("node");
                assert!(
                    out.status.success(),
                    "{name}: node --check fails:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                continue;
            }
            Some("rs") | Some("toml") if !name.ends_with("acp-patch.toml") => "cargo",
            _ => continue,
        };
        let manifest = if kind == "tsc" {
            "tsconfig.json"
        } else {
            "Cargo.toml"
        };
        let mut pkg = Path::new(name).parent();
        while let Some(p) = pkg {
            if dir.join(p).join(manifest).is_file() {
                break;
            }
            pkg = p.parent();
        }
        let pkg = pkg.map(|p| p.to_string_lossy().into_owned());
        if let Some(pkg) = pkg
            && !packages.contains(&(pkg.clone(), kind))
        {
            packages.push((pkg, kind));
        }
    }
    for (pkg, kind) in packages {
        if let Err(e) = build(&dir.join(&pkg), kind) {
            // the same package as it was: built from the recorded state
            let was = tempfile::tempdir().unwrap();
            for (name, entry) in before {
                if let Entry::File { bytes, .. } = entry {
                    let p = was.path().join(name);
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(&p, bytes).unwrap();
                }
            }
            assert!(
                build(&was.path().join(&pkg), kind).is_err(),
                "{pkg}: the patched package does not build (it did before):\n{e}"
            );
        }
    }
}

/// One build check of a package folder.
fn build(pkg: &Path, kind: &str) -> Result<(), String> {
    let out = if kind == "tsc" {
        let _turn = crate::support::cpu_lock();
        let deps = "sdk2_agent"; // the TypeScript fixture these trees are copied from
        let copy = crate::support::copy_tree(pkg);
        crate::typescript::link_node_modules(copy.path(), deps);
        let tsc = crate::typescript::node_modules(deps).join("typescript/bin/tsc");
        Command::new("node")
            .arg(tsc)
            .args(["--noEmit", "-p"])
            .arg(copy.path())
            .output()
            .expect("node")
    } else {
        // in the Rust fixtures' target dir: its dependencies are built once
        crate::support::cargo_fixture("check", pkg)
    };
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

// ---- trees --------------------------------------------------------------------------------

const PY: &str = "python/asyncio_agent/before";
const CALLBACK: &str = "python/callback_agent/before";
const TS: &str = "typescript/sdk2_agent/before";
const RS: &str = "rust/trait_agent/before";
const AGENT: &str = "streamy/agent.py";

fn tree(rel: &str) -> tempfile::TempDir {
    crate::support::copy_tree(&fixture(rel))
}

fn edit(dir: &Path, rel: &str, f: impl FnOnce(String) -> String) {
    let p = dir.join(rel);
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, f(text)).unwrap();
}

fn committed(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "init"]);
}

/// apply on `dir`, then the invariant.
fn apply_case(dir: &Path, extra: &[&str], code: i32, says: &[&str]) -> Ran {
    let before = state(dir);
    let mut args = vec!["apply"];
    args.extend_from_slice(extra);
    args.push(path_str(dir));
    let ran = run(&args);
    check(dir, &before, &ran, code, says);
    ran
}

fn verify_ok(dir: &Path) {
    let v = run(&["verify", path_str(dir)]);
    assert_eq!(v.code, 0, "verify after apply:\n{}{}", v.stdout, v.stderr);
}
