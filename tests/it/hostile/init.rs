//! Init.

use super::*;

#[test]
fn init_pins_are_ones_apply_honours() {
    for case in [PY, CALLBACK, TS, RS] {
        let dir = tree(case);
        let expected = run(&["apply", "--dry-run", path_str(dir.path())]);
        assert_eq!(expected.code, 0, "{case}: {}", expected.stderr);
        let had = std::fs::read_to_string(dir.path().join("acp-patch.toml")).ok();
        let ran = apply_like_init(dir.path());
        assert!(ran.contains("# "), "{case}: {ran}");
        // uncomment every pin line: apply must give the same patch
        let pinned: String = ran
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(pin) if pin.contains(" = \"") => format!("{pin}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        let pins = pinned
            .lines()
            .filter(|l| l.contains(" = \"") && !l.starts_with('#'))
            .count();
        assert!(pins >= 1, "{case}: no pin in\n{ran}");
        std::fs::write(
            dir.path().join("acp-patch.toml"),
            format!("{}{pinned}", had.unwrap_or_default()),
        )
        .unwrap();
        let pinned_run = run(&["apply", "--dry-run", path_str(dir.path())]);
        assert_eq!(pinned_run.code, 0, "{case}: {}", pinned_run.stderr);
        assert_eq!(
            pinned_run.stdout, expected.stdout,
            "{case}: the pins moved the patch"
        );
    }
}

/// `init` on a copy of the tree: the text it appends (the copy is written, then read).
fn apply_like_init(dir: &Path) -> String {
    let copy = crate::support::copy_tree(dir);
    let had = std::fs::read_to_string(copy.path().join("acp-patch.toml")).unwrap_or_default();
    let before = state(copy.path());
    let ran = run(&["init", path_str(copy.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let after = state(copy.path());
    let changed: Vec<&String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        changed,
        ["acp-patch.toml"],
        "init writes acp-patch.toml only"
    );
    let written = std::fs::read_to_string(copy.path().join("acp-patch.toml")).unwrap();
    assert!(written.starts_with(&had), "init kept the existing config");
    let dry = run(&["init", "--dry-run", path_str(dir)]);
    assert_eq!(
        dry.stdout,
        written[had.len()..],
        "init --dry-run prints what init writes"
    );
    written[had.len()..].to_string()
}

#[test]
fn init_lists_candidates_of_an_ambiguous_site_and_refuses_to_overwrite_pins() {
    let dir = tree(PY);
    edit(dir.path(), AGENT, |t| {
        format!(
            "{t}\n\nclass Other(acp.Agent):\n    async def prompt(self, prompt, session_id, **kwargs):\n        return None\n"
        )
    });
    let ran = run(&["init", "--dry-run", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("2 candidates"), "{}", ran.stdout);
    assert!(
        ran.stdout
            .contains("# prompt = \"streamy/agent.py:StreamyAgent.prompt\""),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("# prompt = \"streamy/agent.py:Other.prompt\""),
        "{}",
        ran.stdout
    );
    // a config that already has the [python] table is not written over
    edit(dir.path(), "acp-patch.toml", |t| {
        format!("[python]\nprompt = \"streamy/agent.py:StreamyAgent.prompt\"\n{t}")
    });
    let before = state(dir.path());
    let ran = run(&["init", path_str(dir.path())]);
    check(
        dir.path(),
        &before,
        &ran,
        1,
        &["acp-patch.toml: already exists", "init --dry-run"],
    );
}

#[test]
fn legacy_temp_file_names_are_cleaned_too() {
    let dir = tree(PY);
    std::fs::write(dir.path().join("streamy/.acp-patch-a1B2c3"), "half a file").unwrap();
    let ran = run(&["apply", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!dir.path().join("streamy/.acp-patch-a1B2c3").exists());
}
