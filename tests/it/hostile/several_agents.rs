//! Several agents, odd names.

use super::*;

#[test]
fn python_and_typescript_agents_in_one_tree_are_both_patched() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::copy_into(&fixture(PY), &dir.path().join("py"));
    crate::support::copy_into(&fixture(TS), &dir.path().join("ts"));
    let ran = apply_case(dir.path(), &[], 0, &["(python and typescript agent)"]);
    assert!(ran.stderr.contains("py/streamy/agent.py"), "{}", ran.stderr);
    assert!(ran.stderr.contains("ts/src/agent.ts"), "{}", ran.stderr);
    let v = run(&["verify", "--format", "json", path_str(dir.path())]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    let doc: serde_json::Value = serde_json::from_str(&v.stdout).unwrap();
    assert_eq!(doc["agents"].as_array().unwrap().len(), 2);
}

#[test]
fn typescript_file_importing_the_sdk_without_an_agent_is_noted_not_fatal() {
    let dir = tree(PY);
    std::fs::write(
        dir.path().join("client.ts"),
        "import * as acp from \"@agentclientprotocol/sdk\";\n// a client: sessionUpdate is what it receives\nexport const c = acp;\n",
    )
    .unwrap();
    apply_case(
        dir.path(),
        &[],
        0,
        &[
            "typescript files here look like part of an ACP agent (an SDK import, or the `session/prompt` method named) but hold no agent",
            "inserted",
        ],
    );
}

#[test]
fn file_name_with_a_tab_gives_a_diff_git_apply_accepts() {
    let dir = tree(PY);
    std::fs::rename(dir.path().join("streamy"), dir.path().join("stre\tamy")).unwrap();
    edit(dir.path(), "acp-patch.toml", |t| t);
    let pristine = tempfile::tempdir().unwrap();
    crate::support::copy_into(dir.path(), pristine.path());
    let dry = run(&["apply", "--dry-run", path_str(dir.path())]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout.starts_with(
            "diff --git \"a/stre\\tamy/acp_progress.py\" \"b/stre\\tamy/acp_progress.py\""
        ),
        "{}",
        &dry.stdout[..200]
    );
    let patch = pristine.path().join("p.diff");
    std::fs::write(&patch, &dry.stdout).unwrap();
    git(pristine.path(), &["apply", "p.diff"]);
    std::fs::remove_file(&patch).unwrap();
    apply_case(dir.path(), &[], 0, &["inserted"]);
    assert_eq!(
        std::fs::read(dir.path().join("stre\tamy/agent.py")).unwrap(),
        std::fs::read(pristine.path().join("stre\tamy/agent.py")).unwrap()
    );
}

#[test]
fn non_ascii_file_name_gives_a_diff_git_apply_accepts() {
    let dir = tree(PY);
    std::fs::rename(dir.path().join("streamy"), dir.path().join("strüme")).unwrap();
    let pristine = tempfile::tempdir().unwrap();
    crate::support::copy_into(dir.path(), pristine.path());
    let dry = run(&["apply", "--dry-run", path_str(dir.path())]);
    assert!(
        dry.stdout
            .starts_with("diff --git \"a/str\\303\\274me/acp_progress.py\""),
        "{}",
        &dry.stdout[..100]
    );
    std::fs::write(pristine.path().join("p.diff"), &dry.stdout).unwrap();
    git(pristine.path(), &["apply", "p.diff"]);
}
