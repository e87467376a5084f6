//! Config and templates.

use super::*;

#[test]
fn missing_templates_folder_is_an_error() {
    let dir = tree(PY);
    apply_case(
        dir.path(),
        &["--templates", "/nonexistent/templates"],
        2,
        &["/nonexistent/templates", "does not exist"],
    );
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[templates]\ndir = \"my-templates\"\n",
    )
    .unwrap();
    apply_case(dir.path(), &[], 2, &["my-templates", "does not exist"]);
}

#[test]
fn misspelt_template_file_is_an_error() {
    let dir = tree(PY);
    let templates = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(templates.path().join("python")).unwrap();
    std::fs::write(templates.path().join("python/factroy.py"), "x = 1\n").unwrap();
    apply_case(
        dir.path(),
        &["--templates", path_str(templates.path())],
        2,
        &[
            "factroy.py",
            "not a template acp-patch knows",
            "python/factory.py",
        ],
    );
}

#[test]
fn config_that_is_a_directory_is_an_error() {
    let dir = tree(PY);
    std::fs::remove_file(dir.path().join("acp-patch.toml")).unwrap();
    std::fs::create_dir(dir.path().join("acp-patch.toml")).unwrap();
    apply_case(
        dir.path(),
        &[],
        2,
        &["acp-patch.toml", "is a folder, not a file"],
    );
    let v = run(&["verify", path_str(dir.path())]);
    assert_eq!(v.code, 2);
}

#[test]
fn pin_to_a_missing_function_names_what_it_looked_for() {
    let dir = tree(PY);
    edit(dir.path(), "acp-patch.toml", |t| {
        format!("[python]\nprompt = \"streamy/agent.py:StreamyAgent.promt\"\n{t}")
    });
    apply_case(
        dir.path(),
        &[],
        1,
        &[
            "matches nothing",
            "`StreamyAgent.promt` in streamy/agent.py",
            "streamy/agent.py:StreamyAgent.prompt",
        ],
    );
}

#[test]
fn pin_to_a_missing_file_names_what_it_looked_for() {
    let dir = tree(CALLBACK);
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[python]\nfactories = \"bridge/nope.py\"\n",
    )
    .unwrap();
    apply_case(
        dir.path(),
        &[],
        1,
        &["the pin `factories`", "bridge/nope.py", "path/to/module.py"],
    );
}

#[test]
fn advice_never_suggests_a_factories_pin_apply_would_not_honour() {
    let dir = tree(CALLBACK);
    edit(dir.path(), "bridge/server.py", |t| {
        t.replace(
            "make_reasoning_cb(conn, session_id, loop)",
            "(lambda text: None)",
        )
        .replace(
            "make_message_cb(conn, session_id, loop)",
            "(lambda text: None)",
        )
        .replace("make_tool_cb(conn, session_id, loop)", "(lambda *a: None)")
    });
    // the engine-level refinement does not fit: the protocol strategy patches it, and the
    // note says why, suggesting only the pin apply honours (`strategy`), no `factories =`
    let ran = apply_case(
        dir.path(),
        &[],
        0,
        &[
            "patched with the protocol strategy",
            "bridge/server.py:23",
            "make_*_cb(conn, session_id, loop",
            "no pin replaces that call",
            "`[python] strategy = \"engine\"`",
        ],
    );
    assert!(!ran.stderr.contains("factories ="), "{}", ran.stderr);
}
