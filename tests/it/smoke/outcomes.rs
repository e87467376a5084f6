//! The turn's outcome, tool calls and the output formats.

use super::*;

#[test]
fn llm_error_fails_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        format!(
            "[smoke]\nagent_cmd = \"{{python}} '{}'\"\n[smoke.env]\nLLM_BASE_URL = \"{{llm_base_url}}\"\n[smoke.script]\ndelay_s = 0.2\nerror = {{ status = 503, message = \"overloaded\" }}\n",
            fixtures().join("good/agent.py").display()
        ),
    )
    .unwrap();
    let r = smoke(dir.path(), &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.passed("turn_ends"));
    assert!(
        r.check("turn_ends")["summary"]
            .as_str()
            .unwrap()
            .contains("503")
    );
    assert!(
        r.check("complete")["summary"]
            .as_str()
            .unwrap()
            .contains("failed")
    );
    assert_eq!(r.report["llm_requests"][0]["status"], 503);
    assert_group_gone(&r);
}

#[test]
fn could_not_run_exits_2() {
    // no agent command anywhere
    let empty = tempfile::tempdir().unwrap();
    let r = smoke(empty.path(), &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no agent command"), "{}", r.stderr);
    assert_eq!(r.report["passed"], false);
    assert!(r.report["error"].is_string());

    // bad --env
    let r = smoke(empty.path(), &["--agent-cmd", "true", "--env", "NOEQUALS"]);
    assert_eq!(r.code, 2, "{}", r.stderr);

    // spawn failure
    let r = smoke(empty.path(), &["--agent-cmd", "/nonexistent/agent --flag"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("could not spawn"), "{}", r.stderr);

    // initialize fails: the agent dies at once
    let t0 = Instant::now();
    let r = smoke(
        empty.path(),
        &[
            "--agent-cmd",
            "{python} -c \"import sys; print('no acp here', file=sys.stderr); sys.exit(4)\"",
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("initialize failed"), "{}", r.stderr);
    assert!(r.stderr.contains("no acp here"), "{}", r.stderr);
    assert!(t0.elapsed() < Duration::from_secs(20));
}

#[test]
fn tool_call_with_permission_is_merged_and_allowed() {
    let r = smoke(&fixtures().join("good_tool"), &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    r.assert_failing(&[]);
    assert_eq!(r.report["permission_requests"], 1);
    let reqs = r.report["llm_requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0]["kind"], "turn");
    assert_eq!(reqs[0]["answer"], "reasoning + tool call read_file");
    assert_eq!(reqs[1]["kind"], "after_tool");
    assert_eq!(reqs[1]["carries_seed"], true);
    let calls = r.report["transcript"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3);
    let read = &calls[1];
    assert_eq!(read["id"], "call_read_1");
    assert_eq!(read["kind"], "read");
    assert_eq!(read["status"], "completed");
    assert_eq!(
        read["status_history"],
        serde_json::json!(["pending", "in_progress", "completed"])
    );
    // the agent read the workspace file, and the client picked the first option
    let preview = read["content_preview"].as_str().unwrap();
    assert!(preview.contains("Token: acp-smoke-"), "{preview}");
    assert!(preview.contains("allow-once"), "{preview}");
    // the gap card after it
    assert_eq!(calls[2]["kind"], "think");
    assert_eq!(calls[2]["status"], "completed");
    assert!(r.stdout.contains("✓ read"), "{}", r.stdout);
    assert_group_gone(&r);
}

#[test]
fn an_agent_that_never_finishes_its_own_tool_call_passes_the_patch_and_fails_strict() {
    let dir = fixtures().join("tool_never_done");
    let r = smoke_case(&dir, &[], &["well_formed_tool_calls", "tool_lifecycle"]);
    assert_eq!(r.code, 0);
    assert_eq!(r.report["passed"], true);
    assert_eq!(r.report["strict"], false);
    let w = r.check("well_formed_tool_calls")["evidence"].to_string();
    assert!(
        w.contains("call_smoke_1: still pending when the turn ends"),
        "{w}"
    );
    // the gap after the tool is judged from when its result reached the model
    let gap = r.check("gap_card");
    assert!(
        gap["evidence"]
            .to_string()
            .contains("is never finished on the wire"),
        "{gap}"
    );
    assert!(r.fig("gap_card", "silence_ms") > 1000.0);
    let text = &r.stdout;
    let findings = text
        .find("Findings about the agent")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        text[findings..].contains("FAIL well_formed_tool_calls"),
        "{text}"
    );
    assert!(
        text.contains("\nPASS: 10/10 checks of the patch passed; 2 finding(s) about the agent (well_formed_tool_calls, tool_lifecycle)\n"),
        "{text}"
    );

    let r = smoke(&dir, &["--strict"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.report["passed"], false);
    assert_eq!(r.report["strict"], true);
    assert_eq!(r.failing(), ["well_formed_tool_calls", "tool_lifecycle"]);
    assert!(r.stdout.contains("failing under --strict"), "{}", r.stdout);
    assert_group_gone(&r);
}

#[test]
fn one_format_flag_prints_text_json_github_or_html_and_the_file_aliases_write_the_same() {
    let good = fixtures().join("good");
    let out_dir = tempfile::tempdir().unwrap();
    let file = out_dir.path().join("r.json");
    let _turn = crate::support::smoke_turn();
    use crate::support::path_str;
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
            .arg("smoke")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // JSON on stdout is the document --json writes
    let (code, stdout, stderr) = run(&[
        path_str(&good),
        "--delay-s",
        "0.3",
        "--format",
        "json",
        "--json",
        path_str(&file),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let doc: Value = serde_json::from_str(&stdout).expect("stdout is one JSON document");
    // the same printer writes both, byte for byte
    assert_eq!(stdout, std::fs::read_to_string(&file).unwrap());
    assert_eq!(doc["passed"], true);
    assert_eq!(doc["checks"][0]["judges"], "patch");

    // HTML on stdout, the page --html writes
    let page = out_dir.path().join("r.html");
    let (code, stdout, _) = run(&[
        path_str(&good),
        "--delay-s",
        "0.3",
        "--format",
        "html",
        "--html",
        path_str(&page),
    ]);
    assert_eq!(code, 0);
    assert!(stdout.starts_with("<!DOCTYPE html>"), "{stdout}");
    assert_eq!(stdout, std::fs::read_to_string(&page).unwrap());
    assert!(
        stdout.contains("9/9 checks of the patch passed"),
        "{stdout}"
    );

    // a reader that is gone (`| head` that quit): the run ends quietly with its verdict
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args([
            "smoke",
            path_str(&good),
            "--delay-s",
            "0.3",
            "--format",
            "json",
        ])
        .stdout(writer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");

    // GitHub: a finding about the agent is a warning, under --strict an error
    let never = fixtures().join("tool_never_done");
    let (code, stdout, stderr) = run(&[path_str(&never), "--format", "github"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with(
            "::warning title=acp-patch smoke (the agent)%3A well_formed_tool_calls::1 problem(s)"
        ),
        "{stdout}"
    );
    assert!(stderr.contains("Findings about the agent"), "{stderr}");
    let (code, stdout, _) = run(&[path_str(&never), "--format", "github", "--strict"]);
    assert_eq!(code, 1);
    assert!(
        stdout.starts_with(
            "::error title=acp-patch smoke (the agent under --strict)%3A well_formed_tool_calls::"
        ),
        "{stdout}"
    );

    // could not run: the format's error document
    let empty = tempfile::tempdir().unwrap();
    let (code, stdout, stderr) = run(&[path_str(empty.path()), "--format", "json"]);
    assert_eq!(code, 2);
    let doc: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(doc["passed"], false);
    assert!(
        doc["error"].as_str().unwrap().contains("no agent command"),
        "{doc}"
    );
    assert!(stderr.contains("no agent command"), "{stderr}");
}
