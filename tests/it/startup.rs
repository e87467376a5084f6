//! The start-up check (issue 15): apply imports every patched module with the agent's own
//! interpreter before writing, verify reports it as its `starts` row, and both use a Python
//! that satisfies the agent's requirement — or say honestly that none is on the machine.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// acp-patch with a controlled environment: which Pythons it can find is the point here.
fn run(args: &[&str], env: &[(&str, &str)], unset: &[&str]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_acp-patch"));
    cmd.args(args).env_remove("ACP_PATCH_PYTHON");
    for k in unset {
        cmd.env_remove(k);
    }
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

fn py312_agent() -> tempfile::TempDir {
    copy_tree(&fixture("python/requires_py312/tree"))
}

/// A PATH whose first folder has only a `python3` that is Python 3.11 (Debian's, else the
/// one the test venv was made from).
fn path_with_311_first(extra: &str) -> (tempfile::TempDir, String) {
    let bin = tempfile::tempdir().unwrap();
    let py311 = ["/usr/bin/python3.11", "/usr/local/bin/python3.11"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(test_python()));
    std::os::unix::fs::symlink(&py311, bin.path().join("python3")).unwrap();
    let path = format!("{}:{extra}", bin.path().display());
    (bin, path)
}

fn version_of(python: &Path) -> (u32, u32) {
    let out = Command::new(python)
        .args([
            "-c",
            "import sys; print(sys.version_info[0], sys.version_info[1])",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace().map(|n| n.parse().unwrap());
    (it.next().unwrap(), it.next().unwrap())
}

/// apply and verify agree on the tree; neither calls a file malformed that fails unpatched.
fn apply_and_verify_agree(dir: &Path, env: &[(&str, &str)], unset: &[&str]) -> (Run, Run) {
    let root = path_str(dir);
    let before = run(&["verify", root], env, unset);
    assert_eq!(before.code, 1, "{}{}", before.stdout, before.stderr);
    assert!(!before.stdout.contains("malformed"), "{}", before.stdout);
    let apply = run(&["apply", root], env, unset);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    let after = run(&["verify", root], env, unset);
    assert_eq!(after.code, 0, "{}{}", after.stdout, after.stderr);
    // what could not be started here (fails unpatched too) leaves the row unchecked
    assert!(
        after.stdout.contains("all 11 checks hold\n")
            || after
                .stdout
                .contains("10 of 11 checks hold; not run in full here: starts (see its row)\n"),
        "{}",
        after.stdout
    );
    assert!(!after.stdout.contains("malformed"), "{}", after.stdout);
    (apply, after)
}

/// No Python >= 3.12 to be found (3.11 first on PATH, no pyenv or uv installs under HOME):
/// apply writes and verify holds, both saying which requirement and which interpreter.
#[test]
fn a_312_agent_with_only_311_at_hand_gets_an_honest_note() {
    let dir = py312_agent();
    let home = tempfile::tempdir().unwrap();
    let (_bin, path) = path_with_311_first("/usr/bin:/bin");
    let env = [("PATH", path.as_str()), ("HOME", path_str(home.path()))];
    let unset = ["PYENV_ROOT", "UV_PYTHON_INSTALL_DIR"];
    let (apply, after) = apply_and_verify_agree(dir.path(), &env, &unset);
    // the system folders may hold a newer Python on another machine: then it is used
    let system_312 = ["/usr/bin", "/usr/local/bin"]
        .iter()
        .any(|d| (12..=20).any(|minor| Path::new(d).join(format!("python3.{minor}")).is_file()));
    for out in [&apply.stderr, &after.stderr] {
        if system_312 {
            assert!(!out.contains("does not satisfy"), "{out}");
        } else {
            assert!(
                out.contains("the agent requires Python >=3.12 (pyproject.toml requires-python)")
                    && out.contains("Python 3.11.")
                    && out.contains("does not satisfy it"),
                "{out}"
            );
            assert!(
                out.contains("modern/agent.py:9: Python 3.11.")
                    && out.contains("cannot compile it unpatched either (SyntaxError"),
                "{out}"
            );
        }
    }
    // the module that could not compile is not listed as started
    if !system_312 {
        assert!(
            after.stdout.contains(
                "  unchecked  starts          modern.acp_progress\n                             - modern.agent: not started here (it does not compile unpatched either, see the notes)\n10 of 11 checks hold; not run in full here: starts (see its row)\n"
            ),
            "{}",
            after.stdout
        );
    }
}

/// `--python` (or `$ACP_PATCH_PYTHON`) naming a Python 3.11: used as named, and the note says
/// it does not satisfy the agent's requirement; apply and verify agree.
#[test]
fn a_named_311_for_a_312_agent_is_used_and_said_to_fall_short() {
    let (_bin, path) = path_with_311_first("/usr/bin:/bin");
    let py311 = Path::new(&path.split(':').next().unwrap().to_string()).join("python3");
    assert_eq!(version_of(&py311), (3, 11));
    for how in ["--python", "ACP_PATCH_PYTHON"] {
        let dir = py312_agent();
        let root = path_str(dir.path());
        let py = path_str(&py311);
        let (args_extra, env): (Vec<&str>, Vec<(&str, &str)>) = match how {
            "--python" => (vec!["--python", py], vec![]),
            _ => (vec![], vec![("ACP_PATCH_PYTHON", py)]),
        };
        let with = |cmd: &[&str]| -> Vec<String> {
            cmd.iter()
                .chain(args_extra.iter())
                .chain([&root])
                .map(|s| s.to_string())
                .collect()
        };
        let apply_args = with(&["apply"]);
        let apply = run(
            &apply_args.iter().map(String::as_str).collect::<Vec<_>>(),
            &env,
            &[],
        );
        assert_eq!(apply.code, 0, "{how}: {}", apply.stderr);
        let verify_args = with(&["verify"]);
        let verify = run(
            &verify_args.iter().map(String::as_str).collect::<Vec<_>>(),
            &env,
            &[],
        );
        assert_eq!(verify.code, 0, "{how}: {}{}", verify.stdout, verify.stderr);
        let source = if how == "--python" {
            "from --python"
        } else {
            "from $ACP_PATCH_PYTHON"
        };
        for out in [&apply.stderr, &verify.stderr] {
            assert!(
                out.contains("requires Python >=3.12") && out.contains(source),
                "{how}: {out}"
            );
        }
    }
}

/// A Python that satisfies the requirement and has the agent's dependencies (mistral-vibe's
/// provisioned 3.12 venv holds the ACP SDK): nothing to note, and the patched agent imports.
#[test]
fn a_312_agent_with_a_312_interpreter_compiles_and_starts() {
    let Ok(py312) = std::env::var("ACP_PATCH_TEST_VIBE_PYTHON") else {
        panic!("ACP_PATCH_TEST_VIBE_PYTHON is unset: run the tests with scripts/test.sh");
    };
    let dir = py312_agent();
    let (_bin, path) = path_with_311_first("/usr/bin:/bin");
    let env = [("PATH", path.as_str())];
    let root = path_str(dir.path());
    let apply = run(&["apply", "--python", &py312, root], &env, &[]);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    assert!(!apply.stderr.contains("note:"), "{}", apply.stderr);
    let verify = run(&["verify", "--python", &py312, root], &env, &[]);
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    assert!(
        verify
            .stdout
            .contains("  ok         starts          modern.acp_progress, modern.agent\n"),
        "{}",
        verify.stdout
    );
    // and found by its requirement when only PATH names it (3.11 first)
    let bin = Path::new(&py312).parent().unwrap();
    let path = format!("{path}:{}", bin.display());
    let found = run(
        &["verify", root],
        &[("PATH", path.as_str())],
        &["PYENV_ROOT"],
    );
    assert_eq!(found.code, 0, "{}{}", found.stdout, found.stderr);
    assert!(
        !found.stderr.contains("does not satisfy"),
        "{}",
        found.stderr
    );
}

/// A runtime template that imports the agent's module back: the patched agent dies at start
/// with a circular import. apply refuses before writing, naming the module and the last line
/// of the traceback; verify on the same tree reports the same failure as its `starts` row.
#[test]
fn a_patch_that_forms_an_import_cycle_is_refused_and_verify_agrees() {
    let dir = copy_tree(&fixture("python/asyncio_agent/before"));
    let templates = tempfile::tempdir().unwrap();
    let original =
        std::fs::read_to_string(repo().join("templates/python/acp_progress.py")).unwrap();
    let cyclic = original.replacen(
        "\nimport asyncio\n",
        "\nimport asyncio\n\nfrom streamy.agent import StreamyAgent as _AGENT\n",
        1,
    );
    assert_ne!(cyclic, original);
    std::fs::create_dir_all(templates.path().join("python")).unwrap();
    std::fs::write(templates.path().join("python/acp_progress.py"), cyclic).unwrap();
    let env = [("ACP_PATCH_PYTHON", test_python())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let t = path_str(templates.path());
    let root = path_str(dir.path());
    let pristine = snapshot_tree(dir.path());

    let apply = run(&["apply", "--templates", t, root], &env, &[]);
    assert_eq!(apply.code, 1, "{}", apply.stderr);
    assert!(
        apply.stderr.contains(
            "the patched agent would not start: `import streamy.acp_progress` fails with Python"
        ) && apply
            .stderr
            .contains("(most likely due to a circular import)")
            && apply.stderr.contains("Nothing was written"),
        "{}",
        apply.stderr
    );
    assert_eq!(pristine, snapshot_tree(dir.path()), "apply wrote something");

    let verify = run(&["verify", "--templates", t, root], &env, &[]);
    assert_eq!(verify.code, 1, "{}", verify.stdout);
    let row = verify
        .stdout
        .lines()
        .skip_while(|l| !l.contains(" starts "))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        row.starts_with("  malformed  starts")
            && row.contains("`import streamy.acp_progress` fails with Python")
            && row.contains("circular import"),
        "{}",
        verify.stdout
    );
    let json = run(
        &["apply", "--format", "json", "--templates", t, root],
        &env,
        &[],
    );
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["error"]["kind"], "would_not_start", "{}", json.stdout);
}

/// The check's answer is kept between runs (a pre-commit hook asks the same of the same tree):
/// a second dry run on the unchanged tree starts no interpreter for it and says the same; a
/// file of the tree touched, and the check runs again.
#[test]
fn an_unchanged_tree_is_not_started_twice_and_a_changed_one_is() {
    let dir = copy_tree(&fixture("python/asyncio_agent/before"));
    let root = path_str(dir.path());
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("checks.log");
    let wrapper = scratch.path().join("python");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ncase \"$*\" in *-B*) echo check >> '{}';; esac\nexec '{}' \"$@\"\n",
            log.display(),
            test_python()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = scratch.path().join("cache");
    let env = [("ACP_PATCH_CACHE_DIR", path_str(&cache))];
    let python = path_str(&wrapper);
    let checks = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let first = run(&["apply", "--dry-run", "--python", python, root], &env, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(checks(), 1, "{}", first.stderr);
    let again = run(&["apply", "--dry-run", "--python", python, root], &env, &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(checks(), 1, "answered from the cache");
    assert_eq!((again.stdout, again.stderr), (first.stdout, first.stderr));
    // a file of the tree rewritten (another size): the check runs again
    let readme = dir.path().join("notes.txt");
    std::fs::write(&readme, "changed\n").unwrap();
    let changed = run(&["apply", "--dry-run", "--python", python, root], &env, &[]);
    assert_eq!(changed.code, 0, "{}", changed.stderr);
    assert_eq!(checks(), 2, "{}", changed.stderr);
    // the cache off: every run checks
    let off = [("ACP_PATCH_CACHE_DIR", "")];
    let uncached = run(&["apply", "--dry-run", "--python", python, root], &off, &[]);
    assert_eq!(uncached.code, 0, "{}", uncached.stderr);
    assert_eq!(checks(), 3);
}

/// The `starts` row of a tree whose agent module the interpreter cannot import, unpatched
/// too: `streamy.agent` importing a dependency that interpreter lacks (acp-amp: the SDK
/// missing), then writing to stdout at import (workflows-acp: a dependency that prints).
/// The row lists only what started and names what did not, and why; it is never a plain ok,
/// and verify still holds (exit 0) since the patch is not to blame.
#[test]
fn a_module_not_started_here_is_never_listed_as_started() {
    let python = test_python();
    let (major, minor) = version_of(Path::new(&python));
    let version = Command::new(&python)
        .args(["-c", "import platform; print(platform.python_version())"])
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    assert!(
        version.starts_with(&format!("{major}.{minor}")),
        "{version}"
    );
    let pad = " ".repeat(29);
    let lacks = format!("Python {version} lacks `no_such_dependency_here`, see the notes");
    let prints = "it fails unpatched too: it writes 6 bytes to stdout at import (stdout carries the protocol), see the notes";
    // (the line the agent module gets, whether the package's __init__ still imports it,
    // the row's lines)
    for (line, init_imports_agent, expected) in [
        (
            "import no_such_dependency_here",
            true,
            vec![
                format!(
                    "  unchecked  starts          - streamy.acp_progress: not started here ({lacks})"
                ),
                format!("{pad}- streamy.agent: not started here ({lacks})"),
            ],
        ),
        (
            "import no_such_dependency_here",
            false,
            vec![
                "  unchecked  starts          streamy.acp_progress".to_string(),
                format!("{pad}- streamy.agent: not started here ({lacks})"),
            ],
        ),
        (
            "print('hello')",
            false,
            vec![
                "  unchecked  starts          streamy.acp_progress".to_string(),
                format!("{pad}- streamy.agent: not started here ({prints})"),
            ],
        ),
    ] {
        let dir = copy_tree(&fixture("python/asyncio_agent/before"));
        let agent = dir.path().join("streamy/agent.py");
        let text = std::fs::read_to_string(&agent).unwrap();
        let text = text.replacen(
            "from __future__ import annotations\n",
            &format!("from __future__ import annotations\n{line}\n"),
            1,
        );
        std::fs::write(&agent, text).unwrap();
        if !init_imports_agent {
            std::fs::write(
                dir.path().join("streamy/__init__.py"),
                "\"\"\"Streamy.\"\"\"\n",
            )
            .unwrap();
        }
        let root = path_str(dir.path());
        let apply = run(&["apply", "--python", &python, root], &[], &[]);
        assert_eq!(apply.code, 0, "{line}: {}", apply.stderr);
        let verify = run(&["verify", "--python", &python, root], &[], &[]);
        assert_eq!(verify.code, 0, "{line}: {}{}", verify.stdout, verify.stderr);
        let rows: Vec<&str> = verify
            .stdout
            .lines()
            .skip_while(|l| !l.contains(" starts "))
            .collect();
        let mut expected = expected.clone();
        expected.push("10 of 11 checks hold; not run in full here: starts (see its row)".into());
        assert_eq!(rows, expected, "{line}: {}", verify.stdout);
        assert!(
            verify
                .stderr
                .contains("note: `import streamy.agent` fails with Python"),
            "{line}: {}",
            verify.stderr
        );
        let json = run(
            &["verify", "--format", "json", "--python", &python, root],
            &[],
            &[],
        );
        assert_eq!(json.code, 0, "{line}: {}", json.stderr);
        let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
        let starts = doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "starts")
            .unwrap()
            .clone();
        assert_eq!(starts["status"], "unchecked", "{starts}");
        if !init_imports_agent {
            assert_eq!(starts["locations"][0], "streamy.acp_progress", "{starts}");
            assert!(
                starts["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with("streamy.agent: not started here ("),
                "{starts}"
            );
        }
    }
}
