//! Real agents' own ACP test suites, unpatched and patched: every test must end the same way.
//!
//! The agents' repositories are not on the registries, and CI has no GitHub, so each suite runs
//! on a checkout named by an environment variable (skipped, saying so, without one):
//! `ACP_PATCH_VIBE_SRC` (mistralai/mistral-vibe at v2.18.4) and `ACP_PATCH_KIMI_SRC`
//! (MoonshotAI/kimi-cli at 1.49.0). The checkout is copied twice, each copy's locked
//! dependencies installed with uv from PyPI (`uv sync --frozen`, the cache under target/),
//! acp-patch applied (no pin) to one, and the same ACP tests run in both. Their own assertions
//! pin the stream a client sees (a slash command answered at once, "the first tool_call of the
//! turn"), so a card where nobody waited fails them. Their own timeouts (1–10 s to start a
//! subprocess) fail some tests on a loaded machine either way: a test that ends differently is
//! run again in both copies, twice, and fails the suite only when it never ends the same way
//! patched as unpatched (the others are printed as flaky, with every outcome).

use crate::support::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Suite {
    name: &'static str,
    /// The variable naming the checkout.
    var: &'static str,
    /// The lowest CPython the agent runs on here (kimi-cli 1.49.0 hits a typing bug of 3.12.1).
    python: &'static str,
    /// The test files that drive the agent's ACP side.
    tests: &'static [&'static str],
    /// Extra pytest arguments: a wider per-test timeout than the suite's own, for loaded machines.
    pytest: &'static [&'static str],
}

const VIBE: Suite = Suite {
    name: "mistral-vibe",
    var: "ACP_PATCH_VIBE_SRC",
    python: "3.12",
    tests: &["tests/acp"],
    pytest: &["-n", "2", "-o", "timeout=300"],
};

const KIMI: Suite = Suite {
    name: "kimi-cli",
    var: "ACP_PATCH_KIMI_SRC",
    python: "3.13",
    tests: &[
        "tests/acp",
        "tests/core/test_auth_error_handling.py",
        "tests/ui_and_conv/test_acp_convert.py",
        "tests/ui_and_conv/test_acp_server_auth.py",
    ],
    pytest: &[],
};

#[test]
fn mistral_vibe_acp_tests_pass_patched_exactly_as_unpatched() {
    run_suite(&VIBE);
}

#[test]
fn kimi_cli_acp_tests_pass_patched_exactly_as_unpatched() {
    run_suite(&KIMI);
}

fn run_suite(suite: &Suite) {
    let Some(src) = std::env::var_os(suite.var).map(PathBuf::from) else {
        eprintln!(
            "{}: skipped (set {} to a checkout of its repository)",
            suite.name, suite.var
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // two copies, each with its own environment: the unpatched one stays for the reruns
    let copy = |name: &str| {
        let root = dir.path().join(name).join(suite.name);
        std::fs::create_dir_all(root.parent().unwrap()).unwrap();
        let copied = Command::new("cp")
            .arg("-a")
            .arg(&src)
            .arg(&root)
            .status()
            .unwrap();
        assert!(copied.success(), "copying {}", src.display());
        let _ = std::fs::remove_dir_all(root.join(".venv"));
        install(suite, &root);
        root
    };
    let unpatched = copy("unpatched");
    let root = copy("patched");

    let before = pytest(suite, &unpatched, &[]);
    let run = acp_patch(&["apply", "--allow-dirty", path_str(&root)], None);
    assert_eq!(run.code, 0, "{}: apply failed:\n{}", suite.name, run.stderr);
    assert!(
        run.stderr.contains("runtime module"),
        "{}: no runtime module written:\n{}",
        suite.name,
        run.stderr
    );
    let after = pytest(suite, &root, &[]);
    let count =
        |m: &BTreeMap<String, String>, what: &str| m.values().filter(|o| *o == what).count();
    eprintln!(
        "{}: {} tests; unpatched {} passed, {} failed; patched {} passed, {} failed",
        suite.name,
        before.len(),
        count(&before, "PASSED"),
        count(&before, "FAILED") + count(&before, "ERROR"),
        count(&after, "PASSED"),
        count(&after, "FAILED") + count(&after, "ERROR"),
    );
    assert!(!before.is_empty(), "{}: no test ran", suite.name);
    let only_patched: Vec<String> = after
        .keys()
        .filter(|id| !before.contains_key(*id))
        .map(|id| format!("{id}: only patched"))
        .collect();
    assert!(
        only_patched.is_empty(),
        "{}: tests that ran only patched:\n{}",
        suite.name,
        only_patched.join("\n")
    );
    // every outcome each test had, per tree
    type Seen = BTreeMap<String, [Vec<String>; 2]>;
    let mut seen: Seen = BTreeMap::new();
    let record = |seen: &mut Seen, b: &BTreeMap<String, String>, a: &BTreeMap<String, String>| {
        for (id, outcome) in b {
            seen.entry(id.clone()).or_default()[0].push(outcome.clone());
        }
        for (id, outcome) in a {
            seen.entry(id.clone()).or_default()[1].push(outcome.clone());
        }
    };
    record(&mut seen, &before, &after);
    let differ = |seen: &Seen| -> Vec<String> {
        seen.iter()
            .filter(|(_, [b, a])| !b.iter().any(|o| a.contains(o)))
            .map(|(id, _)| id.clone())
            .collect()
    };
    // Their own timeouts (1-10 s to start a subprocess or reach a point) fail tests on a
    // loaded machine either way; a test that ended differently is run again in both trees,
    // twice: it differs when it never ends the same way patched as unpatched.
    let first = differ(&seen);
    for _ in 0..2 {
        let again = differ(&seen);
        if again.is_empty() {
            break;
        }
        let b = pytest(suite, &unpatched, &again);
        let a = pytest(suite, &root, &again);
        record(&mut seen, &b, &a);
    }
    let changed = differ(&seen);
    for id in first.iter().filter(|id| !changed.contains(id)) {
        let [b, a] = &seen[id];
        eprintln!(
            "{}: {id} flaky on this machine (unpatched {}; patched {})",
            suite.name,
            b.join(", "),
            a.join(", ")
        );
    }
    assert!(
        changed.is_empty(),
        "{}: tests that end differently patched (every run):\n{}",
        suite.name,
        changed
            .iter()
            .map(|id| {
                let [b, a] = &seen[id];
                format!("{id}: unpatched {}; patched {}", b.join(", "), a.join(", "))
            })
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `uv sync --frozen`: the agent's locked dependencies (and test tools) in `.venv`.
fn install(suite: &Suite, root: &Path) {
    let python = std::fs::read_dir(std::env::var("HOME").unwrap() + "/.pyenv/versions")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&format!("{}.", suite.python)))
        })
        .map(|p| p.join("bin/python"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(format!("python{}", suite.python)));
    let _lock = provision_lock();
    let out = Command::new(uv())
        .args(["sync", "--frozen", "-q", "--python"])
        .arg(&python)
        .current_dir(root)
        .env("UV_CACHE_DIR", repo().join("target/uv-cache"))
        .env("UV_PYTHON_DOWNLOADS", "never")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}: uv sync failed:\n{}",
        suite.name,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn uv() -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("scripts/provision/uv.sh"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// Runs the suite's ACP tests (or only `ids`); every test id with its outcome (PASSED, FAILED,
/// ERROR, SKIPPED...).
fn pytest(suite: &Suite, root: &Path, ids: &[String]) -> BTreeMap<String, String> {
    let tools = uv().parent().unwrap().to_path_buf(); // the agent's tests start it with `uv run`
    let path = format!(
        "{}:{}",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(root.join(".venv/bin/python"))
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-rA"])
        .args(suite.pytest)
        .args(if ids.is_empty() {
            suite.tests.iter().map(|t| t.to_string()).collect()
        } else {
            ids.to_vec()
        })
        .current_dir(root)
        .env("PATH", path)
        .env("UV_CACHE_DIR", repo().join("target/uv-cache"))
        .env("UV_PYTHON_DOWNLOADS", "never")
        .env("UV_OFFLINE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let outcomes = short_summary(&stdout);
    assert!(
        !outcomes.is_empty(),
        "{}: pytest reported no test:\n{stdout}\n{}",
        suite.name,
        String::from_utf8_lossy(&out.stderr)
    );
    outcomes
}

/// The `-rA` short summary: `PASSED tests/x.py::test_y`, `FAILED tests/x.py::test_z - why`.
fn short_summary(stdout: &str) -> BTreeMap<String, String> {
    let summary = stdout
        .rsplit_once("short test summary info")
        .map_or("", |(_, s)| s);
    summary
        .lines()
        .filter_map(|line| {
            let (outcome, rest) = line.split_once(' ')?;
            let known = ["PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"];
            known.contains(&outcome).then(|| {
                let id = rest.split(" - ").next().unwrap_or(rest).trim();
                (id.to_string(), outcome.to_string())
            })
        })
        .collect()
}

#[test]
fn the_short_summary_is_read_per_test() {
    let out = "...\n=== short test summary info ===\nPASSED tests/a.py::t1\nFAILED tests/a.py::t2 - AssertionError: x\nSKIPPED [1] tests/b.py:3: no uv\n=== 1 failed ===\n";
    let m = short_summary(out);
    assert_eq!(m.get("tests/a.py::t1").map(String::as_str), Some("PASSED"));
    assert_eq!(m.get("tests/a.py::t2").map(String::as_str), Some("FAILED"));
    assert_eq!(
        m.get("[1] tests/b.py:3: no uv").map(String::as_str),
        Some("SKIPPED")
    );
    assert_eq!(m.len(), 3);
}
