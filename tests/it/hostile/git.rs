//! Git.

use super::*;

#[test]
fn subfolder_of_a_git_repo_with_changes_elsewhere() {
    let repo = tempfile::tempdir().unwrap();
    crate::support::copy_into(&fixture(PY), &repo.path().join("services/streamy"));
    std::fs::write(repo.path().join("README.md"), "repo\n").unwrap();
    committed(repo.path());
    std::fs::write(repo.path().join("README.md"), "edited\n").unwrap();
    let agent = repo.path().join("services/streamy");
    apply_case(&agent, &[], 0, &["inserted"]);
}

#[test]
fn dirty_subfolder_of_a_git_repo_is_refused() {
    let repo = tempfile::tempdir().unwrap();
    crate::support::copy_into(&fixture(PY), &repo.path().join("services/streamy"));
    committed(repo.path());
    let agent = repo.path().join("services/streamy");
    std::fs::write(agent.join("streamy/llm.py"), "# edited\n").unwrap();
    apply_case(
        &agent,
        &[],
        1,
        &["uncommitted changes", "streamy/llm.py", "--allow-dirty"],
    );
}

#[test]
fn no_git_repo_at_all() {
    let dir = tree(PY);
    apply_case(dir.path(), &[], 0, &["inserted"]);
}

/// A `PATH` of the test's own tools with `git` replaced (or removed).
fn path_with_git(script: Option<&str>) -> (tempfile::TempDir, String) {
    let bin = tempfile::tempdir().unwrap();
    for tool in ["python3", "node"] {
        if let Some(p) = acp_patch_find(tool) {
            std::os::unix::fs::symlink(p, bin.path().join(tool)).unwrap();
        }
    }
    if let Some(body) = script {
        let git = bin.path().join("git");
        std::fs::write(&git, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = bin.path().display().to_string();
    (bin, path)
}

fn acp_patch_find(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

#[test]
fn git_missing_from_path_in_a_repo_refuses_not_skips() {
    let dir = tree(PY);
    committed(dir.path());
    std::fs::write(dir.path().join("streamy/llm.py"), "# edited\n").unwrap();
    let (_bin, path) = path_with_git(None);
    let before = state(dir.path());
    let ran = run_env(&["apply", path_str(dir.path())], &[("PATH", &path)]);
    check(
        dir.path(),
        &before,
        &ran,
        1,
        &["`git` is not on PATH", "install git", "--allow-dirty"],
    );
    let ran = run_env(
        &["apply", "--allow-dirty", path_str(dir.path())],
        &[("PATH", &path)],
    );
    check(dir.path(), &before, &ran, 0, &["inserted"]);
}

#[test]
fn git_status_failing_dubious_ownership_refuses_not_skips() {
    let dir = tree(PY);
    committed(dir.path());
    let (_bin, path) = path_with_git(Some(
        "echo \"fatal: detected dubious ownership in repository at '$PWD'\" >&2; exit 128",
    ));
    let before = state(dir.path());
    let ran = run_env(&["apply", path_str(dir.path())], &[("PATH", &path)]);
    check(
        dir.path(),
        &before,
        &ran,
        1,
        &["`git status` failed", "dubious ownership", "--allow-dirty"],
    );
}
