//! The command line as a user meets it: which flag combinations are accepted, the CI
//! surfaces (pre-commit hook, GitHub annotations), and `--check-build`, which runs the real
//! `tsc` / `cargo check` (so its cases take the CPU lock).

use crate::support::{acp_patch, copy_tree, cpu_lock, fixture, path_str, repo, snapshot_tree};
use std::path::Path;

#[test]
fn flag_combinations_accepted_and_refused() {
    let dir = copy_tree(&fixture("python/asyncio_agent/before"));
    let p = path_str(dir.path());
    // (arguments, accepted by the parser)
    let table: &[(&[&str], bool)] = &[
        (&["apply", "--dry-run", p], true),
        (&["apply", "--dry-run", "--format", "json", p], true),
        (&["apply", "--dry-run", "--format", "github", p], true),
        (&["apply", "--dry-run", "--check-build", p], true),
        (
            &[
                "apply",
                "--dry-run",
                "--allow-dirty",
                "--env-prefix",
                "X",
                p,
            ],
            true,
        ),
        (&["verify", "--format", "github", p], true),
        (&["init", "--dry-run", "--format", "json", p], true),
        (&["apply", "--format", "yaml", p], false),
        (&["verify", "--dry-run", p], false),
        (&["verify", "--allow-dirty", p], false),
        (&["apply", "--smoke", p], false),
        (&["init", "--allow-dirty", p], false),
        (&["init", "--check-build", p], false),
        (&["apply", p, p], false),
    ];
    for (args, accepted) in table {
        let run = acp_patch(args, None);
        // clap refuses with `error: ...` (exit 2); acp-patch's own messages start `acp-patch:`
        let usage = run.code == 2 && run.stderr.starts_with("error:");
        assert_eq!(!usage, *accepted, "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{args:?}");
    }
}

#[test]
fn pre_commit_hook_runs_verify() {
    let hooks = std::fs::read_to_string(repo().join(".pre-commit-hooks.yaml")).unwrap();
    assert!(hooks.contains("- id: acp-patch-verify"), "{hooks}");
    assert!(hooks.contains("entry: acp-patch verify\n"), "{hooks}");
    assert!(hooks.contains("pass_filenames: false"), "{hooks}");
    // what the hook runs: verify exits 1 on an unpatched agent, 0 on a patched one
    let before = fixture("python/asyncio_agent/before");
    assert_eq!(acp_patch(&["verify", path_str(&before)], None).code, 1);
    let dir = copy_tree(&before);
    assert_eq!(acp_patch(&["apply", path_str(dir.path())], None).code, 0);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
}

#[test]
fn readme_github_actions_example_uses_verify_format_github() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        readme.contains("- run: acp-patch verify --format github"),
        "the README's workflow example"
    );
}

#[test]
fn github_annotation_paths_are_relative_to_the_working_directory() {
    let work = tempfile::tempdir().unwrap();
    crate::support::copy_into(
        &fixture("python/asyncio_agent/before"),
        &work.path().join("services/streamy"),
    );
    let run = acp_patch(
        &["verify", "--format", "github", "services/streamy"],
        Some(work.path()),
    );
    assert_eq!(run.code, 1);
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("::error file=services/streamy/streamy/acp_progress.py,line=1,"),
        "{first}"
    );
}

// ---- --check-build --------------------------------------------------------------------

fn ts_agent() -> tempfile::TempDir {
    let dir = copy_tree(&fixture("typescript/sdk2_agent/before"));
    crate::typescript::link_node_modules(dir.path(), "sdk2_agent");
    dir
}

#[test]
fn check_build_typescript_passes_on_a_good_patch() {
    let dir = ts_agent();
    let _turn = cpu_lock();
    let run = acp_patch(
        &["apply", "--dry-run", "--check-build", path_str(dir.path())],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("--check-build: `") && run.stderr.contains("--noEmit -p"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("passes on the patched tree"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_build_typescript_refuses_a_template_tsc_rejects() {
    let dir = ts_agent();
    let templates = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(templates.path().join("typescript")).unwrap();
    // the runtime module of the protocol strategy (what a TypeScript SDK agent gets)
    let helpers =
        std::fs::read_to_string(repo().join("templates/typescript/acp-progress.ts")).unwrap();
    // parses (tree-sitter is happy), but does not typecheck
    std::fs::write(
        templates.path().join("typescript/acp-progress.ts"),
        format!("{helpers}\nconst acpWrong: number = \"not a number\";\n"),
    )
    .unwrap();
    let pristine = snapshot_tree(dir.path());
    let _turn = cpu_lock();
    let run = acp_patch(
        &[
            "apply",
            "--check-build",
            "--templates",
            path_str(templates.path()),
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("fails on the patched tree but passes on it unpatched"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("TS2322"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(pristine, snapshot_tree(dir.path()));
}

#[test]
fn check_build_says_what_is_missing_and_what_to_do() {
    let dir = copy_tree(&fixture("typescript/sdk2_agent/before"));
    std::fs::remove_file(dir.path().join("tsconfig.json")).unwrap();
    let run = acp_patch(
        &["apply", "--dry-run", "--check-build", path_str(dir.path())],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no tsconfig.json") && run.stderr.contains("leave out --check-build"),
        "{}",
        run.stderr
    );
    // a Python agent has nothing to build: apply compiles each patched file instead
    let py = copy_tree(&fixture("python/asyncio_agent/before"));
    let run = acp_patch(
        &["apply", "--dry-run", "--check-build", path_str(py.path())],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("nothing to build for a python agent"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_build_rust_runs_cargo_check_outside_the_agents_target() {
    let dir = copy_tree(&fixture("rust/trait_agent/before"));
    let target = repo().join("target/check-build/trait_agent");
    let _turn = cpu_lock();
    let run = acp_patch_env(
        &["apply", "--dry-run", "--check-build", path_str(dir.path())],
        &[("CARGO_TARGET_DIR", &target)],
    );
    assert_eq!(run.1, 0, "{}", run.0);
    assert!(run.0.contains("cargo check"), "{}", run.0);
    assert!(run.0.contains("passes on the patched tree"), "{}", run.0);
    assert!(
        !dir.path().join("target").exists(),
        "the agent's folder got a target/"
    );
}

/// (stderr, exit code) of a run with extra environment.
fn acp_patch_env(args: &[&str], env: &[(&str, &Path)]) -> (String, i32) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_acp-patch"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}
