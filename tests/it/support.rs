//! Shared helpers: running the binary, copying fixtures, comparing trees, snapshots.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn fixture(rel: &str) -> PathBuf {
    repo().join("fixtures").join(rel)
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn acp_patch(args: &[&str], cwd: Option<&Path>) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_acp-patch"));
    cmd.args(args);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let out: Output = cmd.output().expect("run acp-patch");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// [`acp_patch`] with extra environment variables.
pub fn acp_patch_env(args: &[&str], env: &[(&str, String)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_acp-patch"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out: Output = cmd.output().expect("run acp-patch");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The modules (Python) or files (TypeScript) verify's `starts` row proves to load; panics
/// when the row fails or proved nothing ("not started here").
pub fn started(verify_stdout: &str) -> Vec<String> {
    let row = verify_stdout
        .lines()
        .find(|l| l.trim_start().starts_with("ok") && l.contains(" starts "))
        .unwrap_or_else(|| panic!("no passing starts row:\n{verify_stdout}"));
    let list = row.split(" starts ").nth(1).unwrap().trim();
    assert!(
        !list.is_empty() && !list.contains("not started"),
        "nothing started:\n{verify_stdout}"
    );
    list.split(", ").map(str::to_string).collect()
}

/// A fresh temporary copy of a folder.
pub fn copy_tree(from: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    copy_into(from, dir.path());
    dir
}

pub fn copy_into(from: &Path, to: &Path) {
    for entry in walk(from) {
        let rel = entry.strip_prefix(from).unwrap();
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &dest).unwrap();
    }
}

/// Every file below a folder (skipping caches), sorted.
pub fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if name == "__pycache__" || name == ".git" {
                continue;
            }
            // a linked folder (node_modules provisioned for a run) is not part of the tree
            let linked = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
            if p.is_dir() && !linked {
                stack.push(p);
            } else if linked && p.is_dir() {
                continue;
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Relative path → bytes of every file.
pub fn snapshot_tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    walk(root)
        .into_iter()
        .map(|p| {
            (
                p.strip_prefix(root).unwrap().to_string_lossy().to_string(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

pub fn assert_same_tree(a: &Path, b: &Path) {
    let (sa, sb) = (snapshot_tree(a), snapshot_tree(b));
    let names = |s: &[(String, Vec<u8>)]| s.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&sa), names(&sb), "file lists differ");
    for ((n, x), (_, y)) in sa.iter().zip(sb.iter()) {
        assert!(
            x == y,
            "{n} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// Compares with a snapshot file; `ACP_PATCH_BLESS=1` rewrites it.
pub fn assert_snapshot(path: &Path, actual: &str) {
    if std::env::var_os("ACP_PATCH_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_else(|_| {
        panic!(
            "missing snapshot {} (ACP_PATCH_BLESS=1 writes it)",
            path.display()
        )
    });
    if expected != actual {
        let diff = similar::TextDiff::from_lines(&expected, actual)
            .unified_diff()
            .header("expected", "actual")
            .to_string();
        panic!("snapshot {} differs:\n{diff}", path.display());
    }
}

pub fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git")
        .status
        .success();
    assert!(ok, "git {args:?} failed");
}

/// The venv python with the ACP SDK (provisioned by scripts/test.sh).
pub fn test_python() -> String {
    std::env::var("ACP_PATCH_TEST_PYTHON")
        .expect("ACP_PATCH_TEST_PYTHON is unset: run the tests with scripts/test.sh")
}

/// `python -m py_compile` on files: they must compile.
pub fn py_compile(python: &str, dir: &Path, files: &[String]) {
    let out = Command::new(python)
        .arg("-m")
        .arg("py_compile")
        .args(files)
        .current_dir(dir)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "py_compile failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Replaces the temp root in a report so it can be snapshotted.
pub fn normalize(s: &str, root: &Path) -> String {
    let canon = root.canonicalize().unwrap();
    s.replace(&canon.display().to_string(), "<root>")
        .replace(&root.display().to_string(), "<root>")
}

/// Held by tests that measure time (smoke runs) and by those that burn both cores (cargo check,
/// tsc): on a 2-core machine a compile next to a smoke run would push the think card past its
/// 250 ms limit, so they take turns. Everything else still runs in parallel.
pub fn cpu_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Held while a test provisions something shared under `target/` (a venv, an unpacked wheel):
/// two tests asking for the same one at once would otherwise build it over each other, and
/// one of them would use a half-installed venv.
pub fn provision_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Whether `patched` is `original` with text inserted: the original bytes must appear in it
/// in order (greedy subsequence match), so no untouched byte changed.
pub fn only_insertions(original: &str, patched: &str) -> bool {
    let mut rest = patched.bytes();
    original.bytes().all(|b| rest.any(|p| p == b))
}
