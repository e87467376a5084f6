//! What the walk reads.

use super::*;

#[test]
fn vendored_copies_under_node_modules_venv_and_gitignored_folders_are_ignored() {
    let dir = tree(PY);
    for vendored in [
        "node_modules/streamy-copy",
        ".venv/lib/streamy-copy",
        "third_party/streamy-copy",
    ] {
        crate::support::copy_into(&fixture(PY).join("streamy"), &dir.path().join(vendored));
    }
    std::fs::write(dir.path().join(".gitignore"), "third_party/\n").unwrap();
    let ran = apply_case(
        dir.path(),
        &["--dry-run"],
        0,
        &["would insert 5 pieces into 2 files"],
    );
    assert!(!ran.stdout.contains("streamy-copy"), "{}", ran.stdout);
}

#[test]
fn path_is_a_file() {
    let dir = tree(PY);
    let file = dir.path().join(AGENT);
    let before = state(dir.path());
    for cmd in ["apply", "verify"] {
        let ran = run(&[cmd, path_str(&file)]);
        check(
            dir.path(),
            &before,
            &ran,
            2,
            &["is a file", "point acp-patch at the agent's folder"],
        );
    }
}

#[test]
fn path_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    for cmd in ["apply", "verify", "init"] {
        let ran = run(&[cmd, path_str(&missing)]);
        check(
            dir.path(),
            &state(dir.path()),
            &ran,
            2,
            &["nope: no such file or folder"],
        );
    }
}

#[test]
fn path_is_the_filesystem_root_refused_in_bounded_time() {
    // the default limits (100,000 entries, 128 MiB of sources) hold on any machine; a lower one keeps the test
    // quick where / is small: either way the walk stops and says what to do
    for args in [
        &["apply", "--dry-run", "/"][..],
        &["apply", "/"],
        &["verify", "/"],
    ] {
        let ran = run_env(args, &[("ACP_PATCH_MAX_FILES", "20000")]);
        let all = format!("{}{}", ran.stdout, ran.stderr);
        assert_eq!(ran.code, 2, "{all}");
        assert!(all.contains("too large to read"), "{all}");
        assert!(
            all.contains("point acp-patch at the agent's own folder"),
            "{all}"
        );
        assert!(!all.contains("panicked"));
    }
}

#[test]
fn tree_deeper_than_the_limit_is_refused() {
    let dir = tree(PY);
    let mut deep = dir.path().to_path_buf();
    for i in 0..70 {
        deep.push(format!("d{i}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("x.py"), "x = 1\n").unwrap();
    apply_case(
        dir.path(),
        &[],
        2,
        &[
            "more than 64 folders below it",
            "point acp-patch at the agent's own folder",
        ],
    );
}

#[test]
fn empty_folder_has_no_agent() {
    let dir = tempfile::tempdir().unwrap();
    let before = state(dir.path());
    let ran = run(&["apply", path_str(dir.path())]);
    check(
        dir.path(),
        &before,
        &ran,
        1,
        &[
            "no ACP agent found",
            "point acp-patch at the agent's folder",
        ],
    );
}
