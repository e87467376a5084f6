//! Smoke-run tests: the built binary against the hostile fixture agents in fixtures/smoke/.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/smoke")
}

pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    report: Value,
    elapsed: Duration,
    html: Option<String>,
}

impl Run {
    fn check(&self, name: &str) -> &Value {
        self.report["checks"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == name))
            .unwrap_or_else(|| panic!("no check {name} in {}\n{}", self.report, self.stdout))
    }
    fn passed(&self, name: &str) -> bool {
        self.check(name)["passed"].as_bool().unwrap()
    }
    fn fig(&self, name: &str, fig: &str) -> f64 {
        self.check(name)["figures"][fig].as_f64().unwrap()
    }
    /// Asserts exactly these checks fail.
    pub(crate) fn assert_failing(&self, failing: &[&str]) {
        let all = [
            "think_card",
            "heartbeat",
            "complete",
            "one_thought_block",
            "clean_stdout",
            "well_formed_tool_calls",
            "turn_ends",
        ];
        for name in all {
            assert_eq!(
                !self.passed(name),
                failing.contains(&name),
                "check {name}: {}\n--- stdout\n{}\n--- stderr\n{}",
                self.check(name),
                self.stdout,
                self.stderr
            );
        }
    }
    /// The names of the checks that failed.
    pub(crate) fn failing(&self) -> Vec<String> {
        self.report["checks"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .filter(|c| c["passed"] == false)
                    .filter_map(|c| c["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_else(|| vec![format!("no report: {}", self.stderr)])
    }
    fn pgid(&self) -> i32 {
        self.report["agent_pid"].as_i64().unwrap() as i32
    }
}

pub(crate) fn smoke(dir: &Path, extra: &[&str]) -> Run {
    let _turn = crate::support::cpu_lock();
    let out_dir = tempfile::tempdir().unwrap();
    let json = out_dir.path().join("report.json");
    let html = out_dir.path().join("report.html");
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .arg("smoke")
        .arg(dir)
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .args(extra)
        .output()
        .unwrap();
    let elapsed = t0.elapsed();
    let report = std::fs::read_to_string(&json)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        report,
        elapsed,
        html: std::fs::read_to_string(&html).ok(),
    }
}

/// Live (non-zombie) processes in the process group.
fn live_in_group(pgid: i32) -> Vec<String> {
    let mut live = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp ...
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() > 2 && f[2] == pgid.to_string() && f[0] != "Z" {
            live.push(stat);
        }
    }
    live
}

pub(crate) fn assert_group_gone(run: &Run) {
    let pgid = run.pgid();
    assert!(pgid > 1);
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let live = live_in_group(pgid);
        if live.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "processes left in group {pgid}: {live:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn well_behaved_agent_passes_everything() {
    let r = smoke(&fixtures().join("good"), &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    r.assert_failing(&[]);
    assert!(r.fig("think_card", "latency_ms") <= 250.0);
    assert!(r.fig("heartbeat", "count") >= 1.0);
    assert!(r.fig("heartbeat", "count") >= r.fig("heartbeat", "expected_min"));
    assert_eq!(r.report["stop_reason"], "end_turn");
    assert_eq!(r.report["heartbeat_var"], "ACP_HEARTBEAT_S");
    let t = &r.report["transcript"];
    assert_eq!(t["tool_calls"][0]["kind"], "think");
    assert_eq!(t["tool_calls"][0]["status"], "completed");
    assert_eq!(t["message_text"], "Here is the answer: 42.");
    // the raw lines carry times relative to the prompt
    let lines = r.report["lines"].as_array().unwrap();
    assert!(lines.iter().any(|l| l["dir"] == "out" && l["t_ms"] == 0.0));
    assert!(r.stdout.contains("✓ think"), "{}", r.stdout);
    assert!(r.stdout.contains("PASS: 7/7"), "{}", r.stdout);
    let html = r.html.as_deref().unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Here is the answer: 42."));
    assert_group_gone(&r);
}

#[test]
fn unpatched_agent_misses_the_card_and_splits_its_thoughts() {
    let r = smoke(&fixtures().join("unpatched"), &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    r.assert_failing(&["think_card", "heartbeat", "complete", "one_thought_block"]);
    assert_eq!(r.fig("one_thought_block", "thought_after_message"), 1.0);
    assert_group_gone(&r);
}

#[test]
fn junk_on_stdout_is_caught_and_quoted_and_escaped_in_html() {
    let r = smoke(&fixtures().join("junk_stdout"), &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    r.assert_failing(&["clean_stdout"]);
    let ev = r.check("clean_stdout")["evidence"].to_string();
    assert!(ev.contains("DEBUG: got a prompt"), "{ev}");
    let html = r.html.as_deref().unwrap();
    assert!(html.contains("DEBUG: got a prompt &lt;b&gt;&amp;&lt;/b&gt;"));
    assert!(!html.contains("<b>&</b>"));
    assert_group_gone(&r);
}

#[test]
fn hanging_agent_times_out_and_its_whole_group_is_killed() {
    let r = smoke(&fixtures().join("hang"), &["--timeout-s", "3"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(!r.passed("turn_ends"));
    assert!(!r.passed("complete"));
    assert!(!r.passed("well_formed_tool_calls"));
    assert!(r.passed("think_card"));
    let s = r.check("turn_ends")["summary"].as_str().unwrap();
    assert!(s.contains("3 s timeout"), "{s}");
    assert!(r.elapsed < Duration::from_secs(20), "{:?}", r.elapsed);
    // it ignores SIGTERM and stdin EOF and started a grandchild: all gone
    assert_group_gone(&r);
}

#[test]
fn crashing_agent_is_reported_with_its_stderr_without_waiting_for_the_timeout() {
    let r = smoke(&fixtures().join("crash"), &["--timeout-s", "30"]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(!r.passed("turn_ends"));
    let s = r.check("turn_ends")["summary"].as_str().unwrap();
    assert!(s.contains("exit code 3"), "{s}");
    assert!(r.elapsed < Duration::from_secs(15), "{:?}", r.elapsed);
    assert!(
        r.stdout.contains("boom in the middle of the turn"),
        "{}",
        r.stdout
    );
    assert!(r.report["stderr_tail"].to_string().contains("boom"));
    assert_group_gone(&r);
}

#[test]
fn agent_that_never_completes_its_card_fails_complete_and_well_formed() {
    let r = smoke(&fixtures().join("no_complete"), &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    r.assert_failing(&["complete", "well_formed_tool_calls"]);
    let ev = r.check("well_formed_tool_calls")["evidence"].to_string();
    assert!(ev.contains("still in_progress"), "{ev}");
    assert_group_gone(&r);
}

#[test]
fn config_file_env_prefix_files_placeholders_and_env_override() {
    let dir = tempfile::tempdir().unwrap();
    let good = fixtures().join("good/agent.py");
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        format!(
            r#"env_prefix = "MYAGENT"
[smoke]
agent_cmd = "{{python}} '{}'"
[smoke.env]
ACP_FIXTURE_PREFIX = "MYAGENT"
LLM_BASE_URL = "http://127.0.0.1:1/wrong"
[smoke.files]
"conf/llm.txt" = "url={{llm_base_url}} port={{llm_port}} dir={{agent_dir}}"
[smoke.script]
delay_s = 1.2
answer = ["Configured ", "answer."]
answer_after = []
"#,
            good.display()
        ),
    )
    .unwrap();
    let r = smoke(
        dir.path(),
        &[
            "--env",
            "LLM_BASE_URL={llm_base_url}",
            "--heartbeat-s",
            "0.5",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.report["heartbeat_var"], "MYAGENT_HEARTBEAT_S");
    assert_eq!(r.report["heartbeat_s"], 0.5);
    assert!(r.fig("heartbeat", "count") >= 1.0);
    assert_eq!(r.report["transcript"]["message_text"], "Configured answer.");
    let written = std::fs::read_to_string(dir.path().join("conf/llm.txt")).unwrap();
    let base = r.report["llm_base_url"].as_str().unwrap();
    let canon = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        written,
        format!(
            "url={base} port={} dir={}",
            base.rsplit(':').next().unwrap().trim_end_matches("/v1"),
            canon.display()
        )
    );
    // session/new carried the absolute agent folder as cwd
    let lines = r.report["lines"].to_string();
    assert!(
        lines.contains(&format!("\\\"cwd\\\":\\\"{}\\\"", canon.display())),
        "{lines}"
    );
    assert_group_gone(&r);
}

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
    assert_eq!(r.report["llm_requests"].as_array().unwrap().len(), 2);
    let calls = r.report["transcript"]["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    let read = &calls[1];
    assert_eq!(read["id"], "call_read_1");
    assert_eq!(read["kind"], "read");
    assert_eq!(read["status"], "completed");
    assert_eq!(
        read["status_history"],
        serde_json::json!(["pending", "in_progress", "completed"])
    );
    // the client picked the first option
    assert!(
        read["content_preview"]
            .as_str()
            .unwrap()
            .contains("allow-once")
    );
    assert!(r.stdout.contains("✓ read"), "{}", r.stdout);
    assert_group_gone(&r);
}
