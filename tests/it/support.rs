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

/// A runtime module's text with its line-1 checksum made to match its body again, as an
/// earlier release would have written it (FNV-1a 64 of the text after line 1, line endings
/// read as `\n`).
pub fn resealed(module: &str) -> String {
    let (first, rest) = module.split_once('\n').expect("a module of several lines");
    let (first, _) = first.rsplit_once("; checksum ").expect("a sealed module");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in rest.replace("\r\n", "\n").replace('\r', "\n").bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("{first}; checksum {h:016x}\n{rest}")
}

/// `apply`, `apply --dry-run` and `revert` each refuse `dir` (exit 1), saying every one of
/// `says` on stderr, and write nothing.
pub fn refused_by_every_writer(dir: &Path, says: &[&str]) {
    let before = snapshot_tree(dir);
    for args in [&["apply"][..], &["apply", "--dry-run"], &["revert"]] {
        let run = acp_patch(&[args, &[path_str(dir)]].concat(), None);
        assert_eq!(run.code, 1, "{args:?}: {}", run.stderr);
        for said in says {
            assert!(
                run.stderr.contains(said),
                "{args:?} lacks {said:?}: {}",
                run.stderr
            );
        }
        assert_eq!(before, snapshot_tree(dir), "{args:?} wrote");
    }
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
    if bless() {
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

/// The one target dir every Rust fixture crate (and every tree made from one) is compiled in.
/// The SDK generations' locks pin the same versions of what they share (tokio, serde, syn, ...),
/// so cargo builds each shared dependency once for all of them: a generation's first build
/// then compiles little more than its own SDK.
pub fn rust_fixtures_target() -> PathBuf {
    repo().join("target/rust-fixtures/shared")
}

/// `cargo <cmd> --locked --quiet` on the crate in `dir`, in [`rust_fixtures_target`], taking
/// its turn with the smoke runs ([`cpu_lock`]).
pub fn cargo_fixture(cmd: &str, dir: &Path) -> std::process::Output {
    let _turn = cpu_lock();
    cargo_in_fixtures_target(cmd, dir)
}

/// `cargo build` of the crate in `dir` (see [`cargo_fixture`]), its binary `bin` copied to
/// `into` before another build of a package of the same name can replace it.
pub fn cargo_build_into(dir: &Path, bin: &str, into: &Path) -> std::process::Output {
    let _turn = cpu_lock();
    let out = cargo_in_fixtures_target("build", dir);
    if out.status.success() {
        let built = rust_fixtures_target().join("debug").join(bin);
        std::fs::create_dir_all(into.parent().unwrap()).unwrap();
        std::fs::copy(&built, into)
            .unwrap_or_else(|e| panic!("copy {} to {}: {e}", built.display(), into.display()));
    }
    out
}

fn cargo_in_fixtures_target(cmd: &str, dir: &Path) -> std::process::Output {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([cmd, "--locked", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", rust_fixtures_target())
        .output()
        .expect("run cargo")
}

/// Held (exclusively) by tests that burn both cores (cargo check, tsc, a test suite of an
/// agent): on a 2-core machine a compile next to a smoke run would push the think card past
/// its 250 ms limit, so they take turns with smoke runs ([`smoke_turn`]) and each other.
/// Everything else still runs in parallel.
pub fn cpu_lock() -> std::sync::RwLockWriteGuard<'static, ()> {
    TURNS
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Held (shared) during a smoke run: smoke runs mostly wait on their scripted model, so
/// several run at once (as many as test threads), but never beside a compiler or a build
/// ([`cpu_lock`]), whose load would skew the latencies they measure.
pub fn smoke_turn() -> std::sync::RwLockReadGuard<'static, ()> {
    TURNS
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

static TURNS: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// Held while a test provisions something shared under `target/` (a venv, an unpacked wheel):
/// two tests asking for the same one at once would otherwise build it over each other, and
/// one of them would use a half-installed venv.
pub fn provision_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Imports these modules from `tree` in a fresh process of `python` (what the agent writes
/// at import, such as its config, lands in a temporary home): the statement it ran, and its
/// stderr when an import failed.
pub fn import_modules<S: AsRef<str>>(
    python: &Path,
    tree: &Path,
    modules: &[S],
) -> Result<(), String> {
    let imports = modules
        .iter()
        .map(|m| format!("import {}", m.as_ref()))
        .collect::<Vec<_>>()
        .join("; ");
    let home = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(python)
        .args(["-c", &imports])
        .current_dir(home.path())
        .env("PYTHONPATH", tree)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_DATA_HOME", home.path().join(".local/share"))
        .output()
        .expect("run the agent's Python");
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{imports}: {}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Whether `patched` is `original` with code inserted and nothing else changed. A token diff
/// (identifier and number runs, whitespace runs, each line ending, every other character
/// alone) must delete or change no token, and every run of inserted tokens must be code a
/// codemod inserts: whole lines, or text naming acp-patch's code (`acp`, `progress`, any
/// case), or only brackets, separators and spaces (a wrapper's `)`). So `a = 1` → `a = 2  # 1`
/// is caught (it keeps every original byte, in order), and so is text written into an empty
/// file (a file apply creates is not "the original with insertions").
pub fn only_insertions(original: &str, patched: &str) -> bool {
    if original == patched {
        return true;
    }
    if original.is_empty() {
        return false;
    }
    let (old, new) = (tokens(original), tokens(patched));
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, &old, &new);
    ops.iter().all(|op| match *op {
        similar::DiffOp::Equal { .. } => true,
        similar::DiffOp::Insert {
            new_index, new_len, ..
        } => inserted_code(&new, new_index, new_index + new_len),
        similar::DiffOp::Delete { .. } | similar::DiffOp::Replace { .. } => false,
    })
}

/// The tokens [`only_insertions`] compares.
fn tokens(s: &str) -> Vec<&str> {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        let len = if rest.starts_with("\r\n") {
            2
        } else if word(c) {
            rest.find(|c: char| !word(c)).unwrap_or(rest.len())
        } else if c.is_whitespace() && c != '\n' && c != '\r' {
            rest.find(|c: char| !c.is_whitespace() || c == '\n' || c == '\r')
                .unwrap_or(rest.len())
        } else {
            c.len_utf8()
        };
        out.push(&rest[..len]);
        rest = &rest[len..];
    }
    out
}

/// Whether the inserted tokens `new[s..e]` are code a codemod inserts, at any place the
/// same insertion can slide to (a diff may align a line inserted after an equal one anywhere
/// along the repeat).
fn inserted_code(new: &[&str], mut s: usize, mut e: usize) -> bool {
    while s > 0 && new[s - 1] == new[e - 1] {
        s -= 1;
        e -= 1;
    }
    loop {
        if acceptable(new, s, e) {
            return true;
        }
        if e < new.len() && new[s] == new[e] {
            s += 1;
            e += 1;
        } else {
            return false;
        }
    }
}

fn acceptable(new: &[&str], s: usize, e: usize) -> bool {
    let eol = |t: &str| t == "\n" || t == "\r\n" || t == "\r";
    let chunk = &new[s..e];
    let whole_lines = (s == 0 || eol(new[s - 1])) && chunk.last().is_some_and(|t| eol(t));
    let names_ours = chunk.iter().any(|t| {
        let t = t.to_ascii_lowercase();
        t.contains("acp") || t.contains("progress")
    });
    let punctuation = chunk.iter().all(|t| {
        t.chars()
            .all(|c| "()[]{}>;,".contains(c) || c.is_whitespace())
    });
    whole_lines || names_ours || punctuation
}

/// Whether snapshots are to be rewritten: `ACP_PATCH_BLESS=1`, nothing else (`0`, empty or
/// any other value compares).
pub fn bless() -> bool {
    std::env::var("ACP_PATCH_BLESS").as_deref() == Ok("1")
}

#[cfg(test)]
mod tests {
    use super::only_insertions;

    #[test]
    fn only_insertions_catches_a_substitution_hidden_in_an_insertion() {
        // every original byte is still there, in order: a greedy subsequence test passes it
        assert!(!only_insertions("a = 1\n", "a = 2  # 1\n"));
        assert!(!only_insertions("x = f(conn)\n", "x = g(f(conn))\n"));
        assert!(!only_insertions("a = 1\n", "a =  1\n# 1\n"));
        // a deleted or changed token
        assert!(!only_insertions("a = 1\nb = 2\n", "a = 1\n"));
        assert!(!only_insertions("    x()\n", "        x()\n"));
        // text written into an empty file
        assert!(!only_insertions("", "import os\n"));
        // what apply does: whole lines, wrappers naming its code, their closing brackets
        assert!(only_insertions("a = 1\n", "a = 1\n"));
        assert!(only_insertions(
            "class A:\n    async def prompt(self):\n        await conn.session_update(u)\n",
            "from s import acp_progress\nclass A:\n    @acp_progress.prompt_handler(lambda self: self._conn)\n    async def prompt(self):\n        await acp_progress.emitter(conn).session_update(u)\n",
        ));
        assert!(only_insertions("a\nb\n", "a\nx = 1\nb\n"));
        assert!(only_insertions(
            "    y()\n    y()\n",
            "    y()\n    z()\n    y()\n"
        ));
        assert!(only_insertions(
            "cx.send(n)?;\r\n",
            "cx.acp_progress().send(n)?;\r\n"
        ));
        // a type wrapped in the emitter's, its generic's `>` closing it
        assert!(only_insertions(
            "<C as Client>::session_notification(&c, n)\n",
            "<crate::acp_progress::AcpEmitter<'_, C> as Client>::session_notification(&<C as crate::acp_progress::AcpEmit>::acp_progress(&c), n)\n"
        ));
    }
}
