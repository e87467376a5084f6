//! Output: pipes and machine formats.

use super::*;

/// Runs acp-patch with stdout a pipe whose reader is already gone (`| head` that quit).
fn run_closed_stdout(args: &[&str]) -> Ran {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn broken_pipe_on_a_dry_run_ends_quietly_with_exit_0() {
    let dir = tree(PY);
    let before = state(dir.path());
    for format in ["text", "json", "github"] {
        let ran = run_closed_stdout(&[
            "apply",
            "--dry-run",
            "--format",
            format,
            path_str(dir.path()),
        ]);
        check(dir.path(), &before, &ran, 0, &[]);
        assert!(!ran.stderr.contains("Broken pipe"), "{}", ran.stderr);
    }
}

#[test]
fn smoke_on_a_closed_stdout_ends_quietly_with_its_verdict() {
    // a run that cannot happen (no agent command) prints its document in every format but
    // text: the closed pipe ends it quietly, its exit code 2 kept
    let empty = tempfile::tempdir().unwrap();
    for format in ["text", "json", "github", "html"] {
        let ran = run_closed_stdout(&["smoke", "--format", format, path_str(empty.path())]);
        assert_eq!(ran.code, 2, "{format}: {}", ran.stderr);
        assert!(
            !ran.stderr.contains("Broken pipe"),
            "{format}: {}",
            ran.stderr
        );
        assert!(!ran.stderr.contains("writing the output"), "{}", ran.stderr);
        assert!(!ran.stderr.contains("panicked"), "{format}: {}", ran.stderr);
    }
}

#[test]
fn a_closed_stdout_never_turns_a_failure_into_exit_0() {
    // `acp-patch verify | head -1` in a pipeline: the gate must stay failing
    let dir = tree(PY);
    let before = state(dir.path());
    for format in ["text", "json", "github"] {
        let ran = run_closed_stdout(&["verify", "--format", format, path_str(dir.path())]);
        check(dir.path(), &before, &ran, 1, &[]);
        assert!(!ran.stderr.contains("Broken pipe"), "{}", ran.stderr);
    }
    // a verify that holds, and init's survey, still end quietly with 0
    let patched = tree(PY);
    assert_eq!(run(&["apply", path_str(patched.path())]).code, 0);
    let ran = run_closed_stdout(&["verify", path_str(patched.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let ran = run_closed_stdout(&["init", "--dry-run", path_str(dir.path())]);
    check(dir.path(), &before, &ran, 0, &[]);
    // refusals printed on stdout (the JSON document) keep their code: apply on a dirty
    // tree, revert of a hand-edited piece, init with no agent
    committed(dir.path());
    edit(dir.path(), "streamy/llm.py", |t| format!("{t}# edited\n"));
    let before = state(dir.path());
    let ran = run_closed_stdout(&["apply", "--format", "json", path_str(dir.path())]);
    check(dir.path(), &before, &ran, 1, &[]);
    edit(patched.path(), AGENT, |t| {
        t.replace(
            "@acp_progress.cancel_handler",
            "@acp_progress.cancel_handler  # mine",
        )
    });
    let ran = run_closed_stdout(&[
        "revert",
        "--dry-run",
        "--format",
        "json",
        path_str(patched.path()),
    ]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    let empty = tempfile::tempdir().unwrap();
    let ran = run_closed_stdout(&[
        "init",
        "--dry-run",
        "--format",
        "json",
        path_str(empty.path()),
    ]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    // a smoke run that fails (the agent crashes) exits 1 though its report went nowhere
    let ran = run_closed_stdout(&[
        "smoke",
        path_str(&fixture("smoke/crash")),
        "--timeout-s",
        "30",
    ]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
}

#[test]
fn closed_stderr_keeps_the_exit_code() {
    let dir = tree(PY);
    std::fs::set_permissions(
        dir.path().join(AGENT),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(["apply", path_str(dir.path())])
        .stderr(writer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a refusal stays a refusal");
}

#[test]
fn json_on_every_path_including_refusals() {
    let dir = tree(PY);
    committed(dir.path());
    std::fs::write(dir.path().join("streamy/llm.py"), "# edited\n").unwrap();
    let before = state(dir.path());
    let ran = run(&["apply", "--format", "json", path_str(dir.path())]);
    check(dir.path(), &before, &ran, 1, &["uncommitted changes"]);
    let doc: serde_json::Value =
        serde_json::from_str(&ran.stdout).expect("stdout is one JSON document");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["error"]["kind"], "dirty_tree");
    assert_eq!(doc["error"]["exit_code"], 1);
    // a dry run: only the document on stdout, the diff in its field
    let ran = run(&[
        "apply",
        "--dry-run",
        "--format",
        "json",
        path_str(dir.path()),
    ]);
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).expect("one document");
    assert!(
        doc["diff"]
            .as_str()
            .unwrap()
            .starts_with("diff --git a/streamy/acp_progress.py")
    );
    // verify and init refusals too
    for cmd in ["verify", "init"] {
        let ran = run(&[cmd, "--format", "json", "/nonexistent/agent"]);
        assert_eq!(ran.code, 2);
        let doc: serde_json::Value = serde_json::from_str(&ran.stdout).expect("one document");
        assert_eq!(
            (doc["ok"].clone(), doc["error"]["kind"].clone()),
            (false.into(), "missing_path".into())
        );
    }
    let ambiguous = tree(PY);
    // a second agent class whose sends go through two connections: which one is the card's?
    edit(ambiguous.path(), AGENT, |t| {
        format!(
            "{t}\n\nclass Other(acp.Agent):\n    async def prompt(self, prompt, session_id, **kwargs):\n        await self._a.session_update(session_id=session_id, update=None)\n        await self._b.session_update(session_id=session_id, update=None)\n"
        )
    });
    let ran = run(&["apply", "--format", "json", path_str(ambiguous.path())]);
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).expect("one document");
    assert_eq!(doc["error"]["kind"], "ambiguous");
    assert_eq!(doc["error"]["candidates"].as_array().unwrap().len(), 2);
}

#[test]
fn github_format_annotates_an_unlocatable_site_and_keeps_the_report_off_stdout() {
    let dir = tree(PY);
    edit(dir.path(), "acp-patch.toml", |t| {
        format!("[python]\nprompt = \"streamy/agent.py:Nope.prompt\"\n{t}")
    });
    let ran = run(&["verify", "--format", "github", path_str(dir.path())]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stdout.starts_with("::error "), "{}", ran.stdout);
    assert!(ran.stdout.contains("matches nothing"), "{}", ran.stdout);
    assert!(
        ran.stdout.lines().all(|l| l.starts_with("::")),
        "{}",
        ran.stdout
    );
    let ok = tree(PY);
    let ran = run(&["verify", "--format", "github", path_str(ok.path())]);
    assert!(
        ran.stdout.lines().all(|l| l.starts_with("::error ")),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stderr.contains("(python agent, protocol shape)"),
        "{}",
        ran.stderr
    );
}
