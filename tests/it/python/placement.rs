//! What verify proves about placement.

use super::*;

#[test]
fn an_unwrapped_send_is_reported_with_its_place() {
    let dir = applied("python/inline_sends");
    let agent = dir.path().join("inline/agent.py");
    let text = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(
        &agent,
        format!("{text}\n\nasync def late(conn, session_id):\n    await conn.session_update(session_id=session_id, update=acp.update_agent_message_text(\"late\"))\n"),
    )
    .unwrap();
    let line = std::fs::read_to_string(&agent)
        .unwrap()
        .lines()
        .position(|l| l.contains("update_agent_message_text(\"late\")"))
        .unwrap()
        + 1;
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  sends"), "{}", v.stdout);
    assert!(
        v.stdout.contains(&format!(
            "apply inserts the send wrapped at inline/agent.py:{line}"
        )),
        "{}",
        v.stdout
    );
    assert_eq!(acp_patch(&["apply", path_str(dir.path())], None).code, 0);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
}

/// The trap seen on a Hermes fork: the wiring reads `conn` on the prompt handler's first line,
/// before the function assigns it. It compiles; every prompt would fail.
#[test]
fn a_wiring_that_reads_conn_before_it_is_assigned_is_reported() {
    let dir = applied(CALLBACK_FIXTURE);
    let server = dir.path().join("bridge/server.py");
    let text = std::fs::read_to_string(&server).unwrap();
    let wiring = text
        .lines()
        .find(|l| l.contains(".agent_progress_callback = make_agent_progress_cb("))
        .unwrap()
        .to_string();
    let moved = text.replacen(&format!("{wiring}\n"), "", 1).replacen(
        "        conn = self._conn\n",
        &format!("{wiring}\n        conn = self._conn\n"),
        1,
    );
    std::fs::write(&server, &moved).unwrap();
    let line = moved.lines().position(|l| l == wiring).unwrap() + 1;
    py_compile("python3", dir.path(), &["bridge/server.py".to_string()]);
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  bound"), "{}", v.stdout);
    assert!(
        v.stdout.contains(&format!(
            "bridge/server.py:{line}: inserted code reads `conn` in `BridgeAgent.prompt` before it is bound there"
        )),
        "{}",
        v.stdout
    );
}

#[test]
fn a_template_that_reads_an_unbound_name_is_refused_and_nothing_is_written() {
    let dir = copy_tree(&fixture(CALLBACK_FIXTURE).join("before"));
    let templates = tempfile::tempdir().unwrap();
    let sites = std::fs::read_to_string(repo().join("templates/python/sites.py")).unwrap();
    write(
        templates.path(),
        "python/sites.py",
        &sites.replace(
            "make_agent_progress_cb({{CONN}}, {{SESSION_ID}}, {{LOOP}}) if {{CONN}} else None",
            "make_agent_progress_cb(connection, {{SESSION_ID}}, {{LOOP}})",
        ),
    );
    let before = snapshot_tree(dir.path());
    let run = acp_patch(
        &[
            "apply",
            "--templates",
            path_str(templates.path()),
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("bridge/server.py:36: the wiring apply would insert: inserted code reads `connection` in `BridgeAgent.prompt` before it is bound there; nothing was written"),
        "{}",
        run.stderr
    );
    assert_eq!(before, snapshot_tree(dir.path()));
    let v = acp_patch(
        &[
            "verify",
            "--templates",
            path_str(templates.path()),
            path_str(dir.path()),
        ],
        None,
    );
    assert!(v.stdout.contains("malformed  bound"), "{}", v.stdout);
}

#[test]
fn a_decorator_reading_an_attribute_the_agent_never_sets_is_reported() {
    let dir = applied(FIXTURE);
    let agent = dir.path().join("streamy/agent.py");
    edit(
        &agent,
        "prompt_handler(lambda self: self._conn)",
        "prompt_handler(lambda self: self._connection)",
    );
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "reads `self._connection`, but no method of `StreamyAgent` (its bases, or the classes composing it) assigns `_connection`"
        ),
        "{}",
        v.stdout
    );
}

/// A prompt handler in a mixin reads what the class composing it assigns; a composed class
/// that no longer assigns it leaves the read unbound.
#[test]
fn a_mixins_read_is_bound_by_the_class_composing_it_and_only_by_it() {
    let dir = applied("python/mixin_agent");
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert!(
        v.stdout
            .contains("composed/prompts.py:15 (reads `self._conn`: bound there)"),
        "{}",
        v.stdout
    );
    let agent = dir.path().join("composed/agent.py");
    edit(&agent, "        self._conn: Any = conn\n", "");
    edit(
        &agent,
        "        self._conn = conn\n",
        "        self._connection = conn\n",
    );
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "reads `self._conn`, but no method of `PromptMixin` (its bases, or the classes composing it) assigns `_conn`"
        ),
        "{}",
        v.stdout
    );
}

#[test]
fn a_start_after_the_handlers_first_send_is_reported() {
    let dir = applied(CALLBACK_FIXTURE);
    let server = dir.path().join("bridge/server.py");
    // an older, hand-placed start below a send the handler makes first
    edit(
        &server,
        "        conn = self._conn\n",
        "        conn = self._conn\n        await conn.session_update(session_id=session_id, update=None)\n        _acp_progress_start(self._agent)\n",
    );
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    let text = std::fs::read_to_string(&server).unwrap();
    let at = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let (send, start) = (at("update=None)"), at("_acp_progress_start(self._agent)"));
    assert!(
        v.stdout.contains(&format!(
            "bridge/server.py:{start}: the card starts after the prompt handler's first send at line {send}"
        )),
        "{}",
        v.stdout
    );
}

#[test]
fn a_gate_returning_nothing_from_a_value_returning_function_is_reported() {
    let dir = applied(FIXTURE);
    let agent = dir.path().join("streamy/agent.py");
    // what an older acp-patch inserted into an emitter whose callers use its result
    edit(
        &agent,
        "    async def _emit(self, session_id: str, update: Any) -> None:\n",
        "    async def _emit(self, session_id: str, update: Any) -> bool:\n        if await _acp_text_hold(self, session_id, update, self._emit):\n            return\n",
    );
    edit(
        &agent,
        "session_update(session_id=session_id, update=update)\n",
        "session_update(session_id=session_id, update=update)\n        return True\n",
    );
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "the gate returns nothing from `StreamyAgent._emit`, whose callers expect a value"
        ),
        "{}",
        v.stdout
    );
}

#[test]
fn partially_patched_tree_gets_only_the_missing_pieces() {
    let dir = applied(FIXTURE);
    let path = dir.path().join("streamy/agent.py");
    let patched = std::fs::read_to_string(&path).unwrap();
    edit(
        &path,
        "    @acp_progress.prompt_handler(lambda self: self._conn)\n",
        "",
    );
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 1);
    assert!(
        verify.stdout.contains("malformed  hook.start"),
        "{}",
        verify.stdout
    );
    assert!(
        verify.stdout.contains("missing    turn_end")
            || verify.stdout.contains("malformed  turn_end"),
        "{}",
        verify.stdout
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("inserted 1 pieces"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), patched);
}

#[test]
fn duplicated_hook_call_is_reported() {
    let dir = applied(FIXTURE);
    let path = dir.path().join("streamy/agent.py");
    let patched = std::fs::read_to_string(&path).unwrap();
    let extra = "\n\ndef _stray(agent):\n    callback = getattr(agent, \"agent_progress_callback\", None)\n    callback(\"start\", \"llm_response\", {})\n";
    std::fs::write(&path, format!("{patched}{extra}")).unwrap();
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 1, "{}", verify.stdout);
    assert!(
        verify.stdout.contains("duplicated hook.start"),
        "{}",
        verify.stdout
    );
    assert!(
        verify.stdout.contains("2 calls with \"start\""),
        "{}",
        verify.stdout
    );
}

#[test]
fn machine_output_apply_json_and_github_annotations() {
    let dir = copy_tree(&fixture_before());
    let run = acp_patch(
        &[
            "apply",
            "--dry-run",
            "--format",
            "json",
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(run.code, 0);
    // stdout holds only the JSON outcome; the dry run's diff is its `diff` field
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["language"], "python");
    assert_eq!(v["written"], false);
    assert_eq!(
        v["files"],
        serde_json::json!(["streamy/acp_progress.py", "streamy/agent.py"])
    );
    assert_eq!(v["placed"].as_array().unwrap().len(), 5);
    let text = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(v["diff"].as_str().unwrap(), text.stdout);

    let gh = acp_patch(
        &["verify", "--format", "github", path_str(dir.path())],
        None,
    );
    assert_eq!(gh.code, 1);
    let annotations: Vec<&str> = gh
        .stdout
        .lines()
        .filter(|l| l.starts_with("::error "))
        .collect();
    assert_eq!(annotations.len(), 7, "{}", gh.stdout);
    assert_eq!(
        annotations.len(),
        gh.stdout.lines().count(),
        "only annotations on stdout"
    );
    assert!(
        annotations[0].starts_with(
            "::error file=streamy/acp_progress.py,line=1,title=acp-patch verify%3A runtime::runtime missing: apply inserts"
        ),
        "{}",
        annotations[0]
    );
}
