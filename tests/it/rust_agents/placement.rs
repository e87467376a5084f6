//! Verify proves placement.

use super::*;

#[test]
fn verify_reports_an_unwrapped_send_with_its_location() {
    let dir = applied(&case("free_fn_agent"));
    edit(
        dir.path(),
        "src/main.rs",
        "connection.acp_progress().send_notification(",
        "connection.send_notification(",
    );
    let run = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("malformed  sends"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("apply inserts the emitter at src/main.rs:"),
        "{}",
        run.stdout
    );
}

#[test]
fn verify_reports_a_start_that_is_not_the_handlers_first_statement() {
    let dir = applied(&case("closure_agent_5"));
    let start = "                    let acp_turn = crate::acp_progress::begin(&cx, &request.session_id);\n";
    edit(dir.path(), "src/main.rs", start, "");
    edit(
        dir.path(),
        "src/main.rs",
        "                    cx.clone().spawn(async move {\n",
        &format!("{start}                    cx.clone().spawn(async move {{\n"),
    );
    let run = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("malformed  hook.start"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("is not its first statement"),
        "{}",
        run.stdout
    );
}

#[test]
fn verify_reports_a_turn_end_that_reads_an_unbound_turn() {
    let dir = applied(&case("free_fn_agent"));
    edit(
        dir.path(),
        "src/main.rs",
        "    let acp_turn = crate::acp_progress::turn_of(&request.session_id);\n",
        "",
    );
    let run = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("malformed  bound"), "{}", run.stdout);
    assert!(
        run.stdout.contains("which no statement before it binds"),
        "{}",
        run.stdout
    );
    // apply puts the lookup back, and all holds again
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
}

#[test]
fn an_edited_runtime_module_is_refused_and_an_earlier_releases_is_written_again() {
    let c = case("v1_agent");
    let dir = applied(&c);
    let module = dir.path().join("src/acp_progress.rs");
    let text = std::fs::read_to_string(&module).unwrap();
    let call = "    out.push(cb(AcpProgressState::Start, &card));\n";
    assert!(text.contains(call));
    let edited = text.replacen(call, &format!("{call}{call}"), 1);
    std::fs::write(&module, &edited).unwrap();
    let line = edited[..edited.find(call).unwrap() + call.len()]
        .lines()
        .count()
        + 1;
    let at = format!("src/acp_progress.rs:{line}: the runtime module was edited by hand");
    let run = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("malformed  runtime"), "{}", run.stdout);
    assert!(run.stdout.contains(&at), "{}", run.stdout);
    assert!(
        run.stdout.contains("duplicated hook.start"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("the runtime module was edited by hand (src/acp_progress.rs:{line}), so `acp-patch apply` and `acp-patch revert` refuse the tree: restore it (undo the edit) or remove it")),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("apply` inserts what is missing"),
        "{}",
        run.stdout
    );
    refused_by_every_writer(dir.path(), &[&at]);
    // the same text as an earlier release wrote it (its checksum matching): replaced whole
    std::fs::write(&module, resealed(&edited)).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_same_tree(dir.path(), applied(&c).path());
}

#[test]
fn env_prefix_renames_every_variable() {
    let dir = copy_tree(&case("v1_agent").before());
    let run = acp_patch(
        &["apply", "--env-prefix", "STREAM", path_str(dir.path())],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let module = std::fs::read_to_string(dir.path().join("src/acp_progress.rs")).unwrap();
    for var in [
        "STREAM_HEARTBEAT_S",
        "STREAM_HEARTBEAT_DISABLED",
        "STREAM_THINK_HOLD_MS",
        "STREAM_THINK_GAP_MS",
    ] {
        assert!(module.contains(&format!("\"{var}\"")), "{var} missing");
    }
    assert!(!module.contains("\"ACP_"), "an ACP_ variable is left");
}

#[test]
fn verify_reports_a_turn_started_again_in_a_helper_the_handler_calls() {
    // as an earlier acp-patch left zeph-acp: a helper handed the request, the responder and
    // the connection opened a turn of its own, which ends the handler's at once
    let dir = applied(&case("helper_fn_agent"));
    edit(
        dir.path(),
        "src/prompt.rs",
        ") -> tokio::sync::oneshot::Sender<()> {\n",
        ") -> tokio::sync::oneshot::Sender<()> {\n    let _acp_turn = crate::acp_progress::begin(&cx, &request.session_id);\n",
    );
    let run = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("malformed  hook.start"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "spawn_cancel_watch, which is not a prompt handler the SDK calls, starts a turn of its own"
        ),
        "{}",
        run.stdout
    );
}
