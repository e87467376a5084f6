//! The patched Python agent still imports: the runtime module sits in a package every
//! importing module is already in, so the inserted import runs no package code the module did
//! not run before (fixtures/python/init_imports_server: `__init__` files that import the
//! server); every agent of a tree gets its own runtime module and its own verify report
//! (fixtures/python/two_agent_trees). Each module is imported by the fixture venv's Python.

use crate::support::*;
use std::path::Path;
use std::process::Command;

const CYCLIC: &str = "python/init_imports_server";
const TWO: &str = "python/two_agent_trees";

fn applied(case: &str) -> tempfile::TempDir {
    let dir = copy_tree(&fixture(case).join("before"));
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    dir
}

/// Imports `module` in a fresh interpreter with `root` on the path (no bytecode written);
/// the last line of the traceback when it fails.
fn import(root: &Path, module: &str) -> Result<(), String> {
    let out = Command::new(test_python())
        .args([
            "-B",
            "-c",
            "import importlib, sys; importlib.import_module(sys.argv[1])",
        ])
        .arg(module)
        .env("PYTHONPATH", root)
        .current_dir(root)
        .output()
        .expect("python");
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(err.lines().last().unwrap_or_default().to_string())
}

/// Every module of the package, each imported first in its own interpreter: whichever the
/// agent's start imports first, no import cycle forms.
const CYCLIC_MODULES: &[&str] = &[
    "cyclic.acp.acp_context",
    "cyclic.acp.server.agent_server",
    "cyclic.acp.server",
    "cyclic.acp",
    "cyclic",
    "cyclic.__main__",
    "cyclic.acp_progress",
];

#[test]
fn a_package_whose_init_files_import_the_server_still_imports_patched() {
    let dir = applied(CYCLIC);
    for rel in [
        "cyclic/acp/acp_context.py",
        "cyclic/acp/server/agent_server.py",
    ] {
        let text = std::fs::read_to_string(dir.path().join(rel)).unwrap();
        assert!(
            text.contains("\nfrom cyclic import acp_progress\n"),
            "{rel} imports the runtime from elsewhere:\n{text}"
        );
    }
    for module in CYCLIC_MODULES {
        if let Err(e) = import(dir.path(), module) {
            panic!("the patched agent's `import {module}` fails: {e}");
        }
    }
}

#[test]
fn a_runtime_an_older_apply_wrote_beside_the_prompt_handler_moves_into_the_package() {
    // the tree as the acp-patch that wrote the runtime beside the prompt handler left it: the
    // agent died at start (`acp_context` imports `server/`, which imports `acp_context`)
    let dir = applied(CYCLIC);
    let root = dir.path();
    let fresh = snapshot_tree(root);
    std::fs::rename(
        root.join("cyclic/acp_progress.py"),
        root.join("cyclic/acp/server/acp_progress.py"),
    )
    .unwrap();
    for rel in [
        "cyclic/acp/acp_context.py",
        "cyclic/acp/server/agent_server.py",
    ] {
        let path = root.join(rel);
        let text = std::fs::read_to_string(&path).unwrap().replace(
            "from cyclic import acp_progress",
            "from cyclic.acp.server import acp_progress",
        );
        std::fs::write(&path, text).unwrap();
    }
    let err = import(root, "cyclic").expect_err("the old placement forms a cycle");
    assert!(err.contains("circular import"), "{err}");

    let v = acp_patch(&["verify", path_str(root)], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "cyclic/acp/server/acp_progress.py:1: an older runtime module (the agent's runtime is cyclic/acp_progress.py), which apply removes"
        ),
        "{}",
        v.stdout
    );
    let run = acp_patch(&["apply", path_str(root)], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("cyclic/acp/server/acp_progress.py: removed, an older runtime module"),
        "{}",
        run.stderr
    );
    for piece in [
        "cyclic/acp/acp_context.py:9  import of the runtime module",
        "cyclic/acp/server/agent_server.py:18  import of the runtime module",
        "cyclic/acp_progress.py:1  runtime module",
    ] {
        assert!(run.stderr.contains(piece), "{piece}:\n{}", run.stderr);
    }
    import(root, "cyclic").expect("the moved runtime imports");
    assert_eq!(
        fresh,
        snapshot_tree(root),
        "not the tree a fresh apply writes"
    );
    let v = acp_patch(&["verify", path_str(root)], None);
    assert_eq!(v.code, 0, "{}", v.stdout);
}

#[test]
fn each_agent_of_a_tree_gets_its_own_runtime_module_and_imports() {
    let dir = applied(TWO);
    for agent in ["a", "b"] {
        let root = dir.path().join(agent);
        assert!(root.join("streamy/acp_progress.py").is_file(), "{agent}/");
        if let Err(e) = import(&root, "streamy.agent") {
            panic!("{agent}/streamy/agent.py does not import patched: {e}");
        }
        let v = acp_patch(&["verify", path_str(&root)], None);
        assert_eq!(v.code, 0, "verify {agent}:\n{}{}", v.stdout, v.stderr);
    }
    let v = acp_patch(&["verify", "--format", "json", path_str(dir.path())], None);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    let doc: serde_json::Value = serde_json::from_str(&v.stdout).unwrap();
    let roots: Vec<String> = doc["agents"]
        .as_array()
        .expect("one report per agent")
        .iter()
        .map(|r| r["root"].as_str().unwrap().to_string())
        .collect();
    let canon = dir.path().canonicalize().unwrap();
    assert_eq!(
        roots,
        [canon.join("a"), canon.join("b")].map(|p| p.display().to_string())
    );
}

#[test]
fn verify_fails_the_agent_whose_runtime_module_is_gone_and_passes_the_other() {
    let dir = applied(TWO);
    std::fs::remove_file(dir.path().join("b/streamy/acp_progress.py")).unwrap();
    let v = acp_patch(&["verify", "--format", "json", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}{}", v.stdout, v.stderr);
    let doc: serde_json::Value = serde_json::from_str(&v.stdout).unwrap();
    let ok: Vec<bool> = doc["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["ok"].as_bool().unwrap())
        .collect();
    assert_eq!(ok, [true, false], "{}", v.stdout);
    let runtime = doc["agents"][1]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "runtime")
        .unwrap()
        .clone();
    assert_eq!(runtime["status"], "malformed", "{runtime}");
    assert_eq!(
        runtime["insert_at"], "b/streamy/acp_progress.py:1",
        "{runtime}"
    );
    let b = acp_patch(&["verify", path_str(&dir.path().join("b"))], None);
    assert_eq!(b.code, 1, "{}", b.stdout);
}
