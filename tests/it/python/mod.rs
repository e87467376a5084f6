//! apply / verify on Python agents beyond the fixture cases (fixtures/python/*, run by
//! fixtures.rs: snapshots, apply twice, compile, smoke, revert): Hermes Agent as published,
//! pins and their errors, what verify proves about placement, style and safety cases.

mod hermes_published;
mod pins;
mod placement;
mod safety;

pub(crate) use hermes_published::hermes;

use crate::support::*;
use std::path::{Path, PathBuf};

const FIXTURE: &str = "python/asyncio_agent";
const CALLBACK_FIXTURE: &str = "python/callback_agent";

fn fixture_before() -> PathBuf {
    fixture(FIXTURE).join("before")
}

/// A copy of a fixture's before/ tree, applied.
fn applied(case: &str) -> tempfile::TempDir {
    let dir = copy_tree(&fixture(case).join("before"));
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    dir
}

/// Python files of a tree, relative, for py_compile.
fn py_files(root: &Path) -> Vec<String> {
    walk(root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().to_string())
        .collect()
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn verify_json_lists_the_missing_protocol_checks() {
    let json = acp_patch(
        &["verify", "--format", "json", path_str(&fixture_before())],
        None,
    );
    assert_eq!(json.code, 1);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["shape"], "protocol");
    let missing: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "missing")
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        missing,
        [
            "runtime",
            "hook.start",
            "hook.heartbeat",
            "hook.complete",
            "sends",
            "turn_end",
            "coalescing"
        ]
    );
}

#[test]
fn env_prefix_renames_every_variable() {
    let dir = copy_tree(&fixture_before());
    let run = acp_patch(
        &[
            "apply",
            "--dry-run",
            "--env-prefix",
            "PI_ACP",
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(run.code, 0);
    for var in [
        "PI_ACP_THINK_HOLD_MS",
        "PI_ACP_THINK_GAP_MS",
        "PI_ACP_HEARTBEAT_S",
        "PI_ACP_HEARTBEAT_DISABLED",
    ] {
        assert!(run.stdout.contains(var), "{var} missing");
    }
    let stray = run
        .stdout
        .lines()
        .filter(|l| l.contains("\"ACP_") || l.contains(" ACP_"))
        .count();
    assert_eq!(stray, 0, "an ACP_ variable was left unprefixed");
    let bad = acp_patch(
        &[
            "apply",
            "--dry-run",
            "--env-prefix",
            "PI-ACP",
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}
