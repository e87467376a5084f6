//! Real Python agents acp-patch was never written for, from PyPI with no pin and no hand edit:
//! mistral-vibe 3.0.3 and gptme 0.35.1 (provisioned into target/agents/ by scripts/test.sh).
//! apply → every patched file compiles and imports with the agent's own CPython, verify
//! holds, a second apply is a no-op, and the dry-run diff is what apply writes.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A provisioned agent: `<root>/src` (the wheel's packages) and `<root>/venv`.
pub(crate) fn agent(var: &str) -> PathBuf {
    let root = std::env::var_os(var).unwrap_or_else(|| {
        panic!("{var} is unset: run the tests with scripts/test.sh (it provisions the agent)")
    });
    PathBuf::from(root)
}

pub(crate) fn mistral_vibe() -> PathBuf {
    agent("ACP_PATCH_TEST_MISTRAL_VIBE")
}

pub(crate) fn gptme() -> PathBuf {
    agent("ACP_PATCH_TEST_GPTME")
}

struct Patched {
    dir: tempfile::TempDir,
    dry_run: String,
    placed: String,
}

/// acp-patch with the agent's own interpreter for its compile checks (these agents need
/// Python >= 3.12; a user points ACP_PATCH_PYTHON at it, or keeps a `.venv` beside the tree).
fn acp_patch(args: &[&str], python: &Path) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(args)
        .env("ACP_PATCH_PYTHON", python)
        .output()
        .expect("run acp-patch");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// apply (after a dry run), then everything the issue asks of a real agent.
fn patch_real_agent(root: &Path, modules: &[&str]) -> Patched {
    let src = root.join("src");
    let python = root.join("venv/bin/python");
    let acp_patch = |args: &[&str], _: Option<&Path>| acp_patch(args, &python);
    let dir = copy_tree(&src);
    let before = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(before.code, 1, "{}{}", before.stdout, before.stderr);
    assert!(
        before.stdout.contains("protocol shape"),
        "{}",
        before.stdout
    );

    let dry = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let placed: String = dry
        .stderr
        .lines()
        .filter(|l| l.starts_with("  "))
        .map(|l| format!("{l}\n"))
        .collect();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);

    // every patched file compiles with the agent's CPython, and the patched modules import
    let changed: Vec<String> = placed
        .lines()
        .map(|l| l.trim().split(':').next().unwrap().to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    py_compile(path_str(&python), dir.path(), &changed);
    if let Err(e) = import_modules(&python, dir.path(), modules) {
        panic!("{e}");
    }

    let after = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(after.code, 0, "{}{}", after.stdout, after.stderr);
    // acp-patch's own start-up check imported every patched module with the agent's CPython
    let proven = started(&after.stdout);
    for rel in changed.iter().filter(|r| !r.ends_with("__main__.py")) {
        let module = rel
            .trim_end_matches(".py")
            .trim_end_matches("/__init__")
            .replace('/', ".");
        assert!(proven.contains(&module), "{module} not started: {proven:?}");
    }
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(again.code, 0);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);

    let pristine = copy_tree(&src);
    let diff = pristine.path().join("../acp-patch-real.diff");
    std::fs::write(&diff, &dry.stdout).unwrap();
    git(pristine.path(), &["apply", path_str(&diff)]);
    let _ = std::fs::remove_file(&diff);
    assert_same_tree(dir.path(), pristine.path());
    Patched {
        dir,
        dry_run: dry.stdout,
        placed,
    }
}

#[test]
fn mistral_vibe_3_0_3() {
    let p = patch_real_agent(
        &mistral_vibe(),
        &[
            "vibe.acp.agent",
            "vibe.acp.commands.controller",
            "vibe.acp.tool_io",
            "vibe.acp_progress",
        ],
    );
    assert_snapshot(&fixture("python/mistral-vibe-3.0.3.placed.txt"), &p.placed);
    // its prompt carries @override: our decorator goes directly above the def, below it
    assert!(
        p.dry_run.contains(
            "     @override\n+    @acp_progress.prompt_handler(lambda self: self.client)\n     async def prompt("
        ),
        "{}",
        p.dry_run
    );
    // sends in other classes (the command controller's `self._client()`) are wrapped too
    assert!(
        p.dry_run
            .contains("+        await acp_progress.emitter(self._client()).session_update("),
        "controller sends"
    );
    // the runtime module is in the top-level package, which every patched module is in
    assert!(p.dir.path().join("vibe/acp_progress.py").is_file());
    assert!(p.dry_run.contains("\n+from vibe import acp_progress\n"));
}

#[test]
fn gptme_0_35_1() {
    let p = patch_real_agent(&gptme(), &["gptme.acp.agent", "gptme.acp_progress"]);
    assert_snapshot(&fixture("python/gptme-0.35.1.placed.txt"), &p.placed);
    // `acp` is imported lazily there: the runtime module needs it only when a card is sent;
    // the agent's sends pass `source=`, so the card's first updates do too
    assert!(
        p.dry_run.contains(
            "+    @acp_progress.prompt_handler(lambda self: self._conn, source=\"gptme\")\n"
        ),
        "{}",
        p.dry_run
    );
    // the worker-thread closure's send, inside run_coroutine_threadsafe(...)
    assert!(
        p.dry_run
            .contains("+                    acp_progress.emitter(self._conn).session_update("),
        "thread closure send"
    );
}
