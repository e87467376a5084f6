//! Safety.

use super::*;

/// Applies to a variant of the fixture and checks that every original line survives, in
/// order and byte for byte, and that the result compiles.
fn style_case(transform: impl Fn(&str) -> String, check: impl Fn(&str)) -> tempfile::TempDir {
    let dir = copy_tree(&fixture_before());
    let path = dir.path().join("streamy/agent.py");
    let original = transform(&std::fs::read_to_string(&path).unwrap());
    std::fs::write(&path, &original).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let patched = std::fs::read_to_string(&path).unwrap();
    assert!(
        only_insertions(&original, &patched),
        "untouched bytes changed"
    );
    check(&patched);
    py_compile("python3", dir.path(), &py_files(dir.path()));
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
    dir
}

fn runtime_module(dir: &tempfile::TempDir) -> String {
    std::fs::read_to_string(dir.path().join("streamy/acp_progress.py")).unwrap()
}

fn spaces_to_tabs(s: &str) -> String {
    s.lines()
        .map(|l| {
            let n = l.len() - l.trim_start_matches(' ').len();
            format!("{}{}\n", "\t".repeat(n / 4), &l[n / 4 * 4..])
        })
        .collect()
}

#[test]
fn style_tabs_are_kept_for_inserted_lines() {
    let no_spaces = |text: &str| {
        assert!(
            text.lines().all(|l| !l.starts_with(' ')),
            "a space-indented line was inserted"
        );
    };
    let dir = style_case(spaces_to_tabs, no_spaces);
    no_spaces(&runtime_module(&dir)); // the new module reads like its neighbours
}

#[test]
fn style_two_space_indent_is_kept() {
    let dir = style_case(
        |s| {
            s.lines()
                .map(|l| {
                    let n = l.len() - l.trim_start_matches(' ').len();
                    format!("{}{}\n", "  ".repeat(n / 4), &l[n / 4 * 4..])
                })
                .collect()
        },
        |patched| {
            assert!(
                patched.contains("\n  def __init__(self, client"),
                "class body indent changed"
            );
            assert!(
                patched.contains(
                    "\n  @acp_progress.prompt_handler(lambda self: self._conn)\n  async def prompt("
                ),
                "{patched}"
            );
        },
    );
    assert!(runtime_module(&dir).contains("\n    async def prompt(self, *args, **kwargs):\n"));
}

#[test]
fn style_crlf_is_kept_for_inserted_lines() {
    let crlf = |text: &str| {
        assert_eq!(
            text.matches('\n').count(),
            text.matches("\r\n").count(),
            "a bare LF was inserted"
        )
    };
    let dir = style_case(|s| s.replace('\n', "\r\n"), crlf);
    crlf(&runtime_module(&dir));
}

#[test]
fn style_bom_is_kept() {
    let dir = style_case(
        |s| format!("\u{feff}{s}"),
        |patched| {
            assert!(patched.starts_with('\u{feff}'));
            assert_eq!(patched.matches('\u{feff}').count(), 1);
        },
    );
    assert!(
        !runtime_module(&dir).starts_with('\u{feff}'),
        "a new file gets no BOM"
    );
}

#[test]
fn style_no_final_newline_is_kept() {
    let _dir = style_case(
        |s| s.trim_end().to_string(),
        |patched| assert!(!patched.ends_with('\n')),
    );
}

#[test]
fn syntax_error_in_a_file_to_patch_aborts_with_its_location() {
    let dir = copy_tree(&fixture_before());
    let path = dir.path().join("streamy/agent.py");
    let mut agent = std::fs::read_to_string(&path).unwrap();
    agent.push_str("\n\ndef broken(:\n    pass\n");
    std::fs::write(&path, &agent).unwrap();
    let line = agent
        .lines()
        .position(|l| l.starts_with("def broken"))
        .unwrap()
        + 1;
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("streamy/agent.py:{line}")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(before, snapshot_tree(dir.path()));
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 2, "{}", verify.stderr);
}

#[test]
fn syntax_error_elsewhere_is_reported_and_left_alone() {
    let dir = copy_tree(&fixture_before());
    let broken = "import acp\n\ndef oops(:\n    pass\n";
    std::fs::write(dir.path().join("streamy/scratch.py"), broken).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("streamy/scratch.py:3: does not parse"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("streamy/scratch.py")).unwrap(),
        broken
    );
    let clean = applied(FIXTURE);
    std::fs::write(clean.path().join("streamy/scratch.py"), broken).unwrap();
    assert_same_tree(dir.path(), clean.path());
}

#[test]
fn dirty_git_tree_is_refused_unless_allowed() {
    let dir = copy_tree(&fixture_before());
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "init"]);
    std::fs::write(dir.path().join("streamy/llm.py"), "# edited\n").unwrap();
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("uncommitted changes"), "{}", run.stderr);
    assert!(run.stderr.contains("streamy/llm.py"), "{}", run.stderr);
    assert!(run.stderr.contains("--allow-dirty"), "{}", run.stderr);
    assert_eq!(before, snapshot_tree(dir.path()));
    // a dry run writes nothing, so it is allowed
    assert_eq!(
        acp_patch(&["apply", "--dry-run", path_str(dir.path())], None).code,
        0
    );
    let run = acp_patch(&["apply", "--allow-dirty", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn read_only_file_is_refused_and_nothing_is_written() {
    use std::os::unix::fs::PermissionsExt;
    let dir = copy_tree(&fixture_before());
    let path = dir.path().join("streamy/agent.py");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("streamy/agent.py: is read-only"),
        "{}",
        run.stderr
    );
    assert_eq!(before, snapshot_tree(dir.path()));
}

#[test]
fn apply_keeps_file_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = copy_tree(&fixture_before());
    let path = dir.path().join("streamy/agent.py");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    assert_eq!(acp_patch(&["apply", path_str(dir.path())], None).code, 0);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750);
}

#[test]
fn an_agent_without_an_sdk_or_its_method_name_is_found_by_its_prompt_pin() {
    let dir = copy_tree(&fixture("python/raw_functions").join("before"));
    // nothing names `session/prompt`: detection has only the pin to go by
    edit(
        &dir.path().join("wirefn/main.py"),
        "case \"session/prompt\":",
        "case m if m.endswith(\"/prompt\"):",
    );
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no ACP agent found")
            && run.stderr.contains("acp-patch.toml pins no prompt handler"),
        "{}",
        run.stderr
    );
    write(
        dir.path(),
        "acp-patch.toml",
        "[python]\nprompt = \"wirefn/prompt.py:handle_prompt\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(dir.path().join("wirefn/prompt.py"))
            .unwrap()
            .contains("acp_progress"),
        "the pinned handler is patched"
    );
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
}
