//! What CPython rejects.

use super::*;

#[test]
fn kwargs_typed_var_keyword_gets_the_callback_parameter_before_it() {
    let dir = tree(CALLBACK);
    edit(dir.path(), "engine/core.py", |t| {
        t.replacen(
            "        tool_progress_callback=None,\n    ):",
            "        tool_progress_callback=None,\n        **kwargs: object,\n    ):",
            1,
        )
    });
    apply_case(dir.path(), &[], 0, &["inserted"]);
    let core = std::fs::read_to_string(dir.path().join("engine/core.py")).unwrap();
    assert!(
        core.contains("agent_progress_callback=None,\n        **kwargs: object,"),
        "{core}"
    );
    verify_ok(dir.path());
}

#[test]
fn a_bad_template_is_named_as_the_template_with_the_compilers_line() {
    let dir = tree(PY);
    let templates = tempfile::tempdir().unwrap();
    let runtime =
        std::fs::read_to_string(crate::support::repo().join("templates/python/acp_progress.py"))
            .unwrap();
    let template = templates.path().join("python/acp_progress.py");
    std::fs::create_dir_all(template.parent().unwrap()).unwrap();
    let line = runtime.lines().count() + 3;
    // tree-sitter accepts a parameter after **kwargs; CPython does not: CPython's line
    std::fs::write(
        &template,
        format!("{runtime}\n\ndef build_thinking_extra(**kw, extra=None):\n    return kw\n"),
    )
    .unwrap();
    let at = format!("{}:{line}: this template", template.display());
    let args = ["--templates", path_str(templates.path())];
    apply_case(
        dir.path(),
        &args,
        2,
        &[&at, "SyntaxError", "Python", "fix the template"],
    );
    // one the parser rejects already: the parser's line
    std::fs::write(
        &template,
        format!("{runtime}\n\ndef build_thinking_extra(:\n    return 1\n"),
    )
    .unwrap();
    let ran = apply_case(
        dir.path(),
        &args,
        2,
        &[&at, "does not parse", "fix the template"],
    );
    assert!(!ran.stderr.contains("a bug in acp-patch"), "{}", ran.stderr);
}

#[test]
fn verify_reports_a_patched_file_cpython_rejects() {
    let dir = tree(PY);
    apply_case(dir.path(), &[], 0, &["inserted"]);
    edit(dir.path(), "streamy/acp_progress.py", |t| {
        t.replacen("def build_thinking_start(", "def build_thinking_start(**kw, x=None) -> None:\n    pass\n\n\ndef _was_build_thinking_start(", 1)
    });
    let v = run(&["verify", path_str(dir.path())]);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  parses"), "{}", v.stdout);
    assert!(v.stdout.contains("SyntaxError"), "{}", v.stdout);
}

#[test]
fn hand_renamed_hook_function_reapply_inserts_no_duplicates() {
    // the engine-level shape inserts its hook functions into the agent's own module (the
    // protocol shape's runtime module, edited by hand, is replaced whole instead)
    const HOOKS: &str = "engine/loop.py";
    let dir = tree(CALLBACK);
    apply_case(dir.path(), &[], 0, &["inserted"]);
    let patched = std::fs::read_to_string(dir.path().join(HOOKS)).unwrap();
    // each hook function renamed in turn (definition and calls): re-apply refuses, naming
    // the missing function, instead of inserting the others again or calling the old name
    for name in [
        "_acp_progress_start",
        "_acp_progress_heartbeat",
        "_acp_progress_complete",
    ] {
        std::fs::write(
            dir.path().join(HOOKS),
            patched.replace(name, "_renamed_by_hand"),
        )
        .unwrap();
        let lacks = format!("lacks `{name}`");
        let ran = apply_case(
            dir.path(),
            &[],
            1,
            &["verify fails", &lacks, "fix these by hand"],
        );
        assert!(!ran.stderr.contains("nothing to do"), "{}", ran.stderr);
    }
}
