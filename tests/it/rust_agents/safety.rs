//! Style and safety.

use super::*;

/// Applies to a variant of a fixture and checks that every original byte survives, in order,
/// that the result re-parses (verify) and that a second apply is a no-op.
fn style_case(transform: impl Fn(&str) -> String, check: impl Fn(&str)) {
    let dir = copy_tree(&case("v1_agent").before());
    for rel in ["src/agent.rs", "src/main.rs"] {
        let path = dir.path().join(rel);
        std::fs::write(&path, transform(&std::fs::read_to_string(&path).unwrap())).unwrap();
    }
    let originals: Vec<String> = ["src/agent.rs", "src/main.rs"]
        .iter()
        .map(|r| std::fs::read_to_string(dir.path().join(r)).unwrap())
        .collect();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for (rel, original) in ["src/agent.rs", "src/main.rs"].iter().zip(&originals) {
        let patched = std::fs::read_to_string(dir.path().join(rel)).unwrap();
        assert!(
            only_insertions(original, &patched),
            "{rel}: untouched bytes changed"
        );
        syn::parse_file(&patched).expect("the patched file parses");
        check(&patched);
    }
    check(&std::fs::read_to_string(dir.path().join("src/acp_progress.rs")).unwrap());
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
}

#[test]
fn style_tabs_are_kept_for_inserted_lines() {
    style_case(
        |s| {
            s.lines()
                .map(|l| {
                    let n = l.len() - l.trim_start_matches(' ').len();
                    format!("{}{}\n", "\t".repeat(n / 4), &l[n / 4 * 4..])
                })
                .collect()
        },
        |patched| {
            assert!(
                patched.lines().all(|l| !l.starts_with("    ")),
                "a space-indented line was inserted"
            )
        },
    );
}

#[test]
fn style_crlf_is_kept_for_inserted_lines() {
    style_case(
        |s| s.replace('\n', "\r\n"),
        |patched| {
            assert_eq!(
                patched.matches('\n').count(),
                patched.matches("\r\n").count(),
                "a bare LF was inserted"
            )
        },
    );
}

#[test]
fn style_no_final_newline_is_kept() {
    let dir = copy_tree(&case("v1_agent").before());
    let path = dir.path().join("src/agent.rs");
    let original = std::fs::read_to_string(&path)
        .unwrap()
        .trim_end()
        .to_string();
    std::fs::write(&path, &original).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let patched = std::fs::read_to_string(&path).unwrap();
    assert!(!patched.ends_with('\n'));
    assert!(only_insertions(&original, &patched));
}

#[test]
fn syntax_error_in_a_file_to_patch_aborts_with_its_location() {
    let dir = copy_tree(&case("v1_agent").before());
    let path = dir.path().join("src/agent.rs");
    let mut agent = std::fs::read_to_string(&path).unwrap();
    agent.push_str("\nfn broken( {\n}\n");
    std::fs::write(&path, &agent).unwrap();
    let snap = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("src/agent.rs:"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(snap, snapshot_tree(dir.path()));
}

#[test]
fn syntax_error_elsewhere_is_reported_and_left_alone() {
    let c = case("v1_agent");
    let dir = copy_tree(&c.before());
    let broken = "use agent_client_protocol as acp;\n\nfn oops( {\n}\n";
    std::fs::write(dir.path().join("src/scratch.rs"), broken).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("src/scratch.rs:3: does not parse"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/scratch.rs")).unwrap(),
        broken
    );
    let _ = std::fs::remove_file(dir.path().join("src/scratch.rs"));
    assert_same_tree(dir.path(), applied(&c).path());
}

#[test]
fn partially_patched_tree_gets_only_the_missing_pieces() {
    let c = case("v1_agent");
    let dir = applied(&c);
    let start = "                    let acp_turn = crate::acp_progress::begin(&connection, &request.session_id);\n";
    edit(dir.path(), "src/main.rs", start, "");
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 1);
    assert!(
        verify
            .stdout
            .contains("apply inserts the hook start at src/main.rs:"),
        "{}",
        verify.stdout
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("inserted 1 pieces"), "{}", run.stderr);
    assert_same_tree(dir.path(), applied(&c).path());
}
