//! Smoke-run tests: the built binary against the hostile fixture agents in fixtures/smoke/.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The checks that judge the agent's own conformance: reported, failing the run only with
/// `--strict`. Every other check judges the patch and decides the exit code.
pub(crate) const AGENT_FINDINGS: &[&str] = &["well_formed_tool_calls", "tool_lifecycle"];

/// The exit code a run with exactly these failing checks must have (without `--strict`).
pub(crate) fn exit_code_for(failing: &[&str]) -> i32 {
    i32::from(failing.iter().any(|f| !AGENT_FINDINGS.contains(f)))
}

pub(crate) fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/smoke")
}

pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) report: Value,
    pub(crate) elapsed: Duration,
    pub(crate) html: Option<String>,
}

impl Run {
    pub(crate) fn check(&self, name: &str) -> &Value {
        self.report["checks"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == name))
            .unwrap_or_else(|| panic!("no check {name} in {}\n{}", self.report, self.stdout))
    }
    pub(crate) fn passed(&self, name: &str) -> bool {
        self.check(name)["passed"].as_bool().unwrap()
    }
    pub(crate) fn fig(&self, name: &str, fig: &str) -> f64 {
        self.check(name)["figures"][fig]
            .as_f64()
            .unwrap_or_else(|| panic!("no figure {fig} in {}", self.check(name)))
    }
    /// The names of the checks the run reported, in order.
    pub(crate) fn check_names(&self) -> Vec<String> {
        self.report["checks"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .map(|c| c["name"].as_str().unwrap().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
    /// Asserts exactly these checks fail (each must be among the checks the run reported).
    pub(crate) fn assert_failing(&self, failing: &[&str]) {
        let names = self.check_names();
        assert!(
            !names.is_empty(),
            "no checks: exit {}\n--- stdout\n{}\n--- stderr\n{}",
            self.code,
            self.stdout,
            self.stderr
        );
        for f in failing {
            assert!(
                names.iter().any(|n| n == f),
                "check {f} was not run (ran {names:?})\n{}",
                self.stdout
            );
        }
        for name in &names {
            let judges = if AGENT_FINDINGS.contains(&name.as_str()) {
                "agent"
            } else {
                "patch"
            };
            assert_eq!(self.check(name)["judges"], judges, "{name}");
            assert_eq!(
                !self.passed(name),
                failing.contains(&name.as_str()),
                "check {name}: {}\n--- stdout\n{}\n--- stderr\n{}",
                self.check(name),
                self.stdout,
                self.stderr
            );
        }
    }
    /// Asserts every check of the patch passed; the agent's own findings may fail (a real
    /// agent's conformance is its own).
    pub(crate) fn assert_patch_checks_pass(&self) {
        let failing: Vec<String> = self.failing();
        let names = self.check_names();
        let of_patch: Vec<&String> = failing
            .iter()
            .filter(|f| !AGENT_FINDINGS.contains(&f.as_str()))
            .collect();
        assert!(
            of_patch.is_empty() && !names.is_empty(),
            "checks of the patch failed: {of_patch:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
    }
    /// Asserts the run reported exactly these checks, in this order.
    pub(crate) fn assert_checks(&self, names: &[&str]) {
        assert_eq!(self.check_names(), names, "{}", self.stdout);
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
        let pid = self.report["agent_pid"].as_i64().unwrap_or_else(|| {
            panic!(
                "the report names no agent process: exit {}\n--- stdout\n{}\n--- stderr\n{}",
                self.code, self.stdout, self.stderr
            )
        });
        pid as i32
    }
}

/// Every entry below `root` (hidden ones too, `.git` aside; links not followed) with its bytes
/// or link target: the agent's tree must be byte-identical after a smoke run.
pub(crate) fn tree_bytes(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == ".git") {
                continue;
            }
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&p).unwrap();
                out.push((
                    format!("{rel} -> link"),
                    target.as_os_str().as_encoded_bytes().to_vec(),
                ));
            } else if meta.is_dir() {
                out.push((format!("{rel}/"), Vec::new()));
                stack.push(p);
            } else {
                out.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

/// `git status --porcelain` of a folder inside a git work tree (None outside one).
pub(crate) fn git_status(dir: &Path) -> Option<String> {
    let out = Command::new("git")
        .args([
            "status",
            "--porcelain=v1",
            "--untracked-files=all",
            "--ignored",
            "--",
            ".",
        ])
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Asserts the tree is as it was: same entries, same bytes, same git status.
pub(crate) fn assert_tree_unchanged(
    dir: &Path,
    before: &[(String, Vec<u8>)],
    git_before: &Option<String>,
) {
    let after = tree_bytes(dir);
    if before != after.as_slice() {
        let names = |t: &[(String, Vec<u8>)]| t.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        let (b, a) = (names(before), names(&after));
        let added: Vec<_> = a.iter().filter(|n| !b.contains(n)).collect();
        let removed: Vec<_> = b.iter().filter(|n| !a.contains(n)).collect();
        let changed: Vec<_> = before
            .iter()
            .filter(|(n, x)| after.iter().any(|(m, y)| m == n && y != x))
            .map(|(n, _)| n)
            .collect();
        panic!(
            "the smoke run changed the agent's tree {}: added {added:?}, removed {removed:?}, changed {changed:?}",
            dir.display()
        );
    }
    assert_eq!(
        git_status(dir),
        *git_before,
        "git status of {} changed",
        dir.display()
    );
}

pub(crate) fn smoke(dir: &Path, extra: &[&str]) -> Run {
    smoke_env(dir, extra, &[])
}

/// `acp-patch smoke DIR EXTRA...` with extra environment for acp-patch itself; asserts the
/// agent's tree is byte-identical afterwards.
pub(crate) fn smoke_env(dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Run {
    let _turn = crate::support::smoke_turn();
    let out_dir = tempfile::tempdir().unwrap();
    let json = out_dir.path().join("report.json");
    let html = out_dir.path().join("report.html");
    let before = tree_bytes(dir);
    let git_before = git_status(dir);
    let t0 = Instant::now();
    // a latency is a benchmark's figure, not a test's: with the scripted model's default wait
    // (2.5 s) a card must come within its first second (it does within milliseconds on an
    // idle machine), so smoke runs beside each other cannot fail the check by load alone
    let limit: &[&str] = if extra
        .iter()
        .any(|a| *a == "--delay-s" || *a == "--think-card-max-ms")
    {
        &[]
    } else {
        &["--think-card-max-ms", "1000"]
    };
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .arg("smoke")
        .arg(dir)
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .args(limit)
        .args(extra)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let elapsed = t0.elapsed();
    assert_tree_unchanged(dir, &before, &git_before);
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

/// One `[[smoke]]` run of a fixture case (`case.toml`: `args`, `unpatched_fails` /
/// `patched_fails`): `acp-patch smoke DIR ARGS...`, then the exit code (0 or 1), the exact set
/// of failing checks, the agent's tree byte-identical and its process group gone.
pub(crate) fn smoke_case(dir: &Path, args: &[&str], failing: &[&str]) -> Run {
    let r = smoke(dir, args);
    assert_eq!(
        r.code,
        exit_code_for(failing),
        "smoke {} {args:?}\n{}\n{}",
        dir.display(),
        r.stdout,
        r.stderr
    );
    r.assert_failing(failing);
    assert_group_gone(&r);
    r
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
    assert!(
        r.stdout
            .contains("\nPASS: 9/9 checks of the patch passed\n"),
        "{}",
        r.stdout
    );
    let html = r.html.as_deref().unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("Here is the answer: 42."));
    assert_group_gone(&r);
}

#[test]
fn unpatched_agent_misses_the_card_and_splits_its_thoughts() {
    let r = smoke_case(
        &fixtures().join("unpatched"),
        &[],
        &["think_card", "heartbeat", "complete", "one_thought_block"],
    );
    assert_eq!(r.fig("one_thought_block", "thought_after_message"), 1.0);
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
    assert!(!r.passed("cards_well_formed"));
    assert!(r.passed("well_formed_tool_calls"));
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
fn agent_that_never_completes_its_card_fails_complete_and_cards_well_formed() {
    let r = smoke(&fixtures().join("no_complete"), &[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    r.assert_failing(&["complete", "cards_well_formed"]);
    let ev = r.check("cards_well_formed")["evidence"].to_string();
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
"conf/llm.txt" = "url={{llm_base_url}} root={{llm_root_url}} port={{llm_port}} dir={{agent_dir}} smoke={{smoke_dir}} ws={{workspace}} home={{home}}"
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
            "--keep",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.report["heartbeat_var"], "MYAGENT_HEARTBEAT_S");
    assert_eq!(r.report["gap_var"], "MYAGENT_THINK_GAP_MS");
    assert_eq!(r.report["heartbeat_s"], 0.5);
    assert!(r.fig("heartbeat", "count") >= 1.0);
    assert_eq!(r.report["transcript"]["message_text"], "Configured answer.");
    // [smoke.files] went into the kept temporary folder, not the agent's
    let smoke_dir = PathBuf::from(r.report["smoke_dir"].as_str().unwrap());
    assert_eq!(r.report["smoke_dir_kept"], true);
    assert!(r.stderr.contains("kept"), "{}", r.stderr);
    let written = std::fs::read_to_string(smoke_dir.join("conf/llm.txt")).unwrap();
    let base = r.report["llm_base_url"].as_str().unwrap();
    let root = base.trim_end_matches("/v1");
    let canon = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        written,
        format!(
            "url={base} root={root} port={} dir={} smoke={} ws={} home={}",
            root.rsplit(':').next().unwrap(),
            canon.display(),
            smoke_dir.display(),
            smoke_dir.join("workspace").display(),
            smoke_dir.join("home").display()
        )
    );
    assert!(!dir.path().join("conf").exists());
    // session/new carried the workspace as cwd; the agent got the smoke folder's home
    let lines = r.report["lines"].to_string();
    let ws = smoke_dir.join("workspace").display().to_string();
    assert!(
        lines.contains(&format!("\\\"cwd\\\":\\\"{ws}\\\"")),
        "{lines}"
    );
    let env = &r.report["env"];
    let get = |k: &str| {
        env.as_array()
            .unwrap()
            .iter()
            .find(|p| p[0] == k)
            .map(|p| p[1].as_str().unwrap().to_string())
    };
    assert_eq!(
        get("HOME").as_deref(),
        Some(smoke_dir.join("home").to_str().unwrap())
    );
    assert_eq!(get("PYTHONDONTWRITEBYTECODE").as_deref(), Some("1"));
    assert_eq!(get("MYAGENT_THINK_GAP_MS").as_deref(), Some("500"));
    std::fs::remove_dir_all(&smoke_dir).unwrap();
    assert_group_gone(&r);
}

#[test]
fn the_temporary_folder_is_removed_and_the_agent_folder_is_read_only() {
    let r = smoke(&fixtures().join("good"), &["--delay-s", "0.3"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let smoke_dir = PathBuf::from(r.report["smoke_dir"].as_str().unwrap());
    assert_eq!(r.report["smoke_dir_kept"], false);
    assert!(
        !smoke_dir.exists(),
        "{} is still there",
        smoke_dir.display()
    );
    assert!(r.stdout.contains("(removed)"), "{}", r.stdout);

    // a file aimed at the agent's folder is refused before anything runs
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[smoke]\nagent_cmd = \"true\"\n[smoke.files]\n\"{agent_dir}/.env\" = \"X=1\"\n",
    )
    .unwrap();
    let r = smoke(dir.path(), &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("read-only"), "{}", r.stderr);
    assert!(!dir.path().join(".env").exists());
}

#[test]
fn an_agent_that_writes_into_its_folder_fails_no_trace() {
    // on a copy: the agent really does litter it
    let root = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixtures().join("acp_min.py"),
        root.path().join("acp_min.py"),
    )
    .unwrap();
    crate::support::copy_into(&fixtures().join("good"), &root.path().join("good"));
    crate::support::copy_into(&fixtures().join("litters"), &root.path().join("litters"));
    let dir = root.path().join("litters");
    let _turn = crate::support::smoke_turn();
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .arg("smoke")
        .arg(&dir)
        .args(["--delay-s", "0.3", "--json"])
        .arg(root.path().join("r.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(root.path().join("r.json")).unwrap())
            .unwrap();
    let failed: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["no_trace"]);
    assert_eq!(
        report["trace"],
        serde_json::json!(["added .agent-state", "added .agent-state/last-session.txt"])
    );
    assert!(dir.join(".agent-state/last-session.txt").is_file());
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
