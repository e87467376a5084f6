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

/// A tree whose only candidate is a source file over the per-file limit (a 30 MB bundle
/// holding `session/prompt`, as qwen-code's): no agent is found, and the error itself names
/// the file not read, its size, the limit and how to raise it (no note is printed beside an
/// error), in text and JSON alike; raised, the file is read.
#[test]
fn a_tree_whose_only_file_is_over_the_size_limit_names_it_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let head = "// bundle\nconst METHOD = \"session/prompt\";\n";
    let mut text = String::with_capacity(30_000_000);
    text.push_str(head);
    let line = "var x = 1;\n";
    while text.len() + line.len() <= 30_000_000 {
        text.push_str(line);
    }
    std::fs::write(dir.path().join("bundle.js"), &text).unwrap();
    let root = path_str(dir.path());
    let why = "bundle.js: 28 MiB, more than the 16 MiB acp-patch reads of one file; not read \
               (raise the limit with ACP_PATCH_MAX_FILE_BYTES=N, in bytes)";
    let before = state(dir.path());
    for cmd in ["apply", "verify"] {
        let ran = run_env(&[cmd, root], &[]);
        check(dir.path(), &before, &ran, 1, &[]);
        assert_eq!(ran.stdout, "", "{cmd}");
        assert_eq!(
            ran.stderr,
            format!(
                "acp-patch: error: {root}: no ACP agent found (no source file imports an ACP SDK or handles `session/prompt`, and acp-patch.toml pins no prompt handler; 1 source file was not read: {why}); point acp-patch at the agent's folder, or pin the sites in acp-patch.toml\n"
            ),
            "{cmd}"
        );
        let json = run_env(&[cmd, "--format", "json", root], &[]);
        assert_eq!(json.code, 1, "{cmd}: {}", json.stderr);
        assert!(
            json.stdout
                .contains(&format!("1 source file was not read: {why}")),
            "{cmd}: {}{}",
            json.stdout,
            json.stderr
        );
    }
    // raised: the file is read (whatever it holds, it is no longer named as not read)
    let raised = run_env(
        &["verify", root],
        &[("ACP_PATCH_MAX_FILE_BYTES", "40000000")],
    );
    let all = format!("{}{}", raised.stdout, raised.stderr);
    assert!(!all.contains("not read"), "{all}");
    assert!(!all.contains("panicked"), "{all}");
}
