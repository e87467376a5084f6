//! The smoke run on real Python agents, unpatched and patched: Hermes Agent 0.19.0 installed
//! from PyPI, and `verify --smoke` (the fixture agents' own smoke runs are in fixtures.rs).

use crate::python::hermes;
use crate::smoke::{assert_group_gone, smoke};
use crate::support::*;
use std::path::{Path, PathBuf};

fn fixture_python() -> String {
    test_python()
}

#[test]
fn verify_smoke_on_the_patched_fixture() {
    let dir = copy_tree(&fixture("python/asyncio_agent/before"));
    assert_eq!(acp_patch(&["apply", path_str(dir.path())], None).code, 0);
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(["verify", "--smoke"])
        .arg(dir.path())
        .env("ACP_PATCH_PYTHON", fixture_python())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("all 10 checks hold"), "{stdout}");
    assert!(stdout.contains("PASS think_card"), "{stdout}");
}

/// A venv with `hermes-agent[acp]==VERSION` from PyPI, made once and cached under target/.
pub(crate) fn hermes_venv(version: &str) -> PathBuf {
    let venv = repo().join("target/hermes").join(format!("venv-{version}"));
    let python = venv.join("bin/python");
    let stamp = venv.join(".installed");
    if stamp.is_file() {
        return python;
    }
    let _ = std::fs::remove_dir_all(&venv);
    let ok = std::process::Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .unwrap()
        .success();
    assert!(ok, "python3 -m venv failed");
    let ok = std::process::Command::new(&python)
        .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
        .arg(format!("hermes-agent[acp]=={version}"))
        .status()
        .unwrap()
        .success();
    assert!(ok, "pip install hermes-agent[acp]=={version} failed");
    std::fs::write(&stamp, version).unwrap();
    python
}

fn hermes_smoke(root: &Path, python: &Path) -> crate::smoke::Run {
    let config = fixture("python/hermes-smoke.toml");
    smoke(
        root,
        &[
            "--config",
            config.to_str().unwrap(),
            "--python",
            python.to_str().unwrap(),
        ],
    )
}

#[test]
fn hermes_0_19_0_unpatched_then_patched() {
    let python = hermes_venv("0.19.0");
    let src = hermes("0.19.0");

    let unpatched = copy_tree(&src);
    let run = hermes_smoke(unpatched.path(), &python);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    run.assert_failing(&["think_card", "heartbeat", "complete", "one_thought_block"]);
    assert_group_gone(&run);

    let patched = copy_tree(&src);
    let apply = acp_patch(&["apply", patched.path().to_str().unwrap()], None);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    let run = hermes_smoke(patched.path(), &python);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run.assert_failing(&[]);
    assert_group_gone(&run);
}

#[test]
fn verify_smoke_json_is_one_document() {
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(["verify", "--smoke", "--format", "json"])
        .arg(fixture("python/asyncio_agent/before"))
        .env("ACP_PATCH_PYTHON", fixture_python())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let doc: serde_json::Value =
        serde_json::from_slice(&run.stdout).expect("stdout is one JSON document");
    assert_eq!(doc["verify"]["ok"], false);
    assert_eq!(doc["smoke"]["passed"], false);
    let failed: Vec<&str> = doc["smoke"]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        failed,
        ["think_card", "heartbeat", "complete", "one_thought_block"]
    );
}
