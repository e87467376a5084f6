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
fn init_lists_candidates_of_an_ambiguous_site_and_keeps_a_pin_of_one() {
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
    // a config that already has the [python] table pinning the prompt handler (as the
    // candidates line says to do): init adds the rest into that table, the pin kept
    edit(dir.path(), "acp-patch.toml", |t| {
        format!("[python]\nprompt = \"streamy/agent.py:StreamyAgent.prompt\"\n{t}")
    });
    let had = std::fs::read_to_string(dir.path().join("acp-patch.toml")).unwrap();
    let ran = run(&["init", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let written = std::fs::read_to_string(dir.path().join("acp-patch.toml")).unwrap();
    assert!(
        written.starts_with("[python]\nprompt = \"streamy/agent.py:StreamyAgent.prompt\"\n# "),
        "{written}"
    );
    assert!(
        written.ends_with(&had[had.find("# How").unwrap()..]),
        "{written}"
    );
    toml::from_str::<toml::Table>(&written).unwrap();
    let apply = run(&["apply", "--dry-run", path_str(dir.path())]);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
}

/// The flow init's own note gives: pin a site in the `[python]` table init wrote (or one
/// of the user's own), run init again. It adds only what the table lacks, at the table's
/// end, and keeps the user's pin, comments and order; a second init changes nothing.
#[test]
fn init_merges_into_a_table_that_holds_a_pin_and_a_second_init_is_a_no_op() {
    let dir = tree(PY);
    let smoke = std::fs::read_to_string(dir.path().join("acp-patch.toml")).unwrap();
    let config = format!(
        "[python]\n# pinned by hand\nprompt = \"streamy/agent.py:StreamyAgent.prompt\"  # keep\n\n{smoke}"
    );
    std::fs::write(dir.path().join("acp-patch.toml"), &config).unwrap();
    let added = "# connection at streamy/agent.py:30\n\
                 # connection = \"streamy/agent.py:StreamyAgent._conn\"\n";
    let toml_path = dir.path().join("acp-patch.toml");
    let shown = toml_path.display();

    let dry = run(&["init", "--dry-run", path_str(dir.path())]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert_eq!(dry.stdout, format!("[python]\n{added}"));
    assert_eq!(
        dry.stderr,
        format!(
            "acp-patch: would add 1 of 2 sites to {shown} (pins commented out); the 1 it already had (pinned or listed) are kept as they are\n"
        )
    );

    let ran = run(&["init", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(ran.stdout, "");
    assert_eq!(
        ran.stderr,
        format!(
            "acp-patch: added 1 of 2 sites to {shown} (pins commented out); the 1 it already had (pinned or listed) are kept as they are\n"
        )
    );
    let written = std::fs::read_to_string(&toml_path).unwrap();
    assert_eq!(
        written,
        format!(
            "[python]\n# pinned by hand\nprompt = \"streamy/agent.py:StreamyAgent.prompt\"  # keep\n{added}\n{smoke}"
        )
    );

    // again: nothing to add, nothing written, nothing printed to stdout
    let before = state(dir.path());
    for args in [&["init"][..], &["init", "--dry-run"][..]] {
        let again = run(&[args, &[path_str(dir.path())]].concat());
        assert_eq!(again.code, 0, "{}", again.stderr);
        assert_eq!(again.stdout, "");
        assert_eq!(
            again.stderr,
            format!(
                "acp-patch: {shown} already lists the 2 sites (pinned or listed); nothing to add\n"
            )
        );
        assert_eq!(state(dir.path()), before, "a second init wrote");
    }
    // and apply honours the pin
    let apply = run(&["apply", "--dry-run", path_str(dir.path())]);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
}

/// A config init wrote itself: a second init is a no-op too.
#[test]
fn a_second_init_on_its_own_file_changes_nothing() {
    for case in [PY, TS, RS] {
        let dir = tree(case);
        let first = run(&["init", path_str(dir.path())]);
        assert_eq!(first.code, 0, "{case}: {}", first.stderr);
        let before = state(dir.path());
        let again = run(&["init", path_str(dir.path())]);
        assert_eq!(again.code, 0, "{case}: {}", again.stderr);
        assert!(
            again.stderr.contains("(pinned or listed); nothing to add"),
            "{case}: {}",
            again.stderr
        );
        assert_eq!(state(dir.path()), before, "{case}: a second init wrote");
    }
}

#[test]
fn legacy_temp_file_names_are_cleaned_too() {
    let dir = tree(PY);
    std::fs::write(dir.path().join("streamy/.acp-patch-a1B2c3"), "half a file").unwrap();
    let ran = run(&["apply", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!dir.path().join("streamy/.acp-patch-a1B2c3").exists());
}
