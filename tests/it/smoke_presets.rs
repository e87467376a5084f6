//! The presets against the real agents, installed from their registries into target/:
//! `acp-patch smoke` on the agent's folder with nothing else said detects the agent and runs
//! it the preset's way; each test asserts the exact checks that pass and fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::smoke::{Run, assert_group_gone, smoke};
use crate::support::*;

/// The Claude adapter's package folder (scripts/provision/claude-agent-acp.sh, run by
/// scripts/test.sh; run here too when the variable is unset, it is a no-op once cached).
fn claude_agent_acp() -> PathBuf {
    if let Some(p) = std::env::var_os("ACP_PATCH_TEST_CLAUDE_ACP") {
        return PathBuf::from(p);
    }
    let _provisioning = crate::support::provision_lock();
    let out = Command::new("bash")
        .arg(repo().join("scripts/provision/claude-agent-acp.sh"))
        .output()
        .expect("run the provisioning script");
    assert!(
        out.status.success(),
        "provisioning failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// One smoke run of a Claude adapter tree with its preset: `failing` is the exact set of
/// failing checks. (A patched tree is one more call: `claude_case(&patched, &[], &[])`.)
pub(crate) fn claude_case(tree: &Path, extra: &[&str], failing: &[&str]) -> Run {
    let r = smoke(tree, extra);
    assert_eq!(
        r.code,
        if failing.is_empty() { 0 } else { 1 },
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    r.assert_failing(failing);
    assert_eq!(
        r.report["preset"]["name"], "claude-agent-acp",
        "{}",
        r.stdout
    );
    // its Claude Code spoke Anthropic Messages to the scripted LLM, and only that (its
    // start-up probe `HEAD /` is answered 404 and listed)
    for q in r.report["llm_requests"].as_array().unwrap() {
        let known = q["path"] == "/v1/messages" && q["status"] == 200;
        let probe = q["method"] == "HEAD" && q["path"] == "/";
        assert!(known || probe, "unexpected request {q}");
    }
    assert_group_gone(&r);
    r
}

#[test]
fn claude_agent_acp_0_23_1_unpatched_full_turn_with_a_tool_call() {
    let tree = claude_agent_acp();
    let version: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tree.join("package.json")).unwrap()).unwrap();
    assert_eq!(version["version"], "0.23.1");
    // nothing but the folder: the preset is detected from its package.json
    let r = claude_case(
        &tree,
        &[],
        &[
            "think_card",
            "heartbeat",
            "complete",
            "one_thought_block",
            "gap_card",
        ],
    );
    assert_eq!(
        r.report["preset"]["why"],
        "detected: package.json names @zed-industries/claude-agent-acp"
    );
    let turn: Vec<&serde_json::Value> = r.report["llm_requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["path"] == "/v1/messages")
        .collect();
    assert_eq!(turn.len(), 2, "{}", r.stdout);
    assert_eq!(turn[0]["kind"], "turn");
    assert_eq!(turn[0]["auth"], "x-api-key");
    assert_eq!(turn[0]["answer"], "reasoning + tool call Read");
    assert_eq!(turn[1]["kind"], "after_tool");
    assert_eq!(turn[1]["carries_seed"], true);
    // Claude Code's Read ran on the workspace file and showed as a block
    let t = &r.report["transcript"];
    let read = t["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "toolu_smoke_1")
        .unwrap_or_else(|| panic!("no Read tool call: {t}"));
    assert_eq!(read["kind"], "read");
    assert_eq!(read["status"], "completed");
    assert!(
        read["content_preview"]
            .as_str()
            .unwrap()
            .contains("Token: acp-smoke-")
    );
    assert_eq!(t["message_text"], "Here is the answer: 42.");
    let gap = r.check("gap_card")["summary"].as_str().unwrap();
    assert!(gap.contains("no think card in the"), "{gap}");
    if r.report["network"]
        .as_str()
        .unwrap()
        .contains("only loopback")
    {
        eprintln!("claude-agent-acp ran in a loopback-only network namespace");
    }
}

#[test]
fn claude_agent_acp_0_23_1_unpatched_cancel_and_two_sessions() {
    let tree = claude_agent_acp();
    let r = claude_case(
        &tree,
        &["--cancel-after", "800"],
        &["think_card", "heartbeat", "complete"],
    );
    assert_eq!(r.report["stop_reason"], "cancelled");
    let r = claude_case(
        &tree,
        &["--sessions", "2", "--no-tool-call"],
        &["think_card", "heartbeat", "complete", "one_thought_block"],
    );
    assert!(r.passed("sessions_isolated"));
    for s in r.report["sessions"].as_array().unwrap() {
        let n = s["number"].as_u64().unwrap();
        assert_eq!(
            s["transcript"]["message_text"],
            format!("Here is the answer: 42. [session {n}]")
        );
    }
}

/// Hermes Agent 0.19.0's tree (the wheel, unpacked) and its venv from PyPI.
fn hermes_0_19_0() -> (PathBuf, PathBuf) {
    (
        crate::python::hermes("0.19.0"),
        crate::smoke_python::hermes_venv("0.19.0"),
    )
}

#[test]
fn hermes_0_19_0_preset_unpatched_then_patched() {
    let (src, python) = hermes_0_19_0();
    // Hermes 0.19.0 shows its read_file call (`tool_call`, pending) but never completes it
    // over ACP (its step callback's completion does not reach the client): findings about
    // the agent, patched or not. The tool ran all the same (its result reached the model), so
    // the gap after it is judged from then.
    let hermes_own = ["well_formed_tool_calls", "tool_lifecycle"];
    let dir = copy_tree(&src);
    let r = smoke(dir.path(), &["--python", path_str(&python)]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let mut failing = vec![
        "think_card",
        "heartbeat",
        "complete",
        "one_thought_block",
        "gap_card",
    ];
    failing.extend(hermes_own);
    r.assert_failing(&failing);
    assert_eq!(r.report["preset"]["name"], "hermes");
    assert!(
        r.report["preset"]["why"]
            .as_str()
            .unwrap()
            .contains("acp_adapter/__main__.py"),
        "{}",
        r.report["preset"]
    );
    let turn = r.report["llm_requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["kind"] == "after_tool")
        .count();
    assert_eq!(turn, 1, "{}", r.stdout);
    let gap = r.check("gap_card")["summary"].as_str().unwrap();
    assert!(gap.contains("no think card in the"), "{gap}");
    assert_group_gone(&r);

    let dir = copy_tree(&src);
    let apply = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    // the card opens at the prompt handler's entry: the default 250 ms limit holds; the patch
    // passes, Hermes' own tool call is reported as what it is
    let r = smoke(dir.path(), &["--python", path_str(&python)]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    r.assert_failing(&hermes_own);
    assert!(
        r.check("gap_card")["evidence"]
            .to_string()
            .contains("its result reached the model"),
        "{}",
        r.check("gap_card")
    );
    assert!(
        r.stdout
            .contains("2 finding(s) about the agent (well_formed_tool_calls, tool_lifecycle)"),
        "{}",
        r.stdout
    );
    assert_group_gone(&r);
    eprintln!(
        "hermes 0.19.0 (preset): card {} ms after the prompt",
        r.fig("think_card", "latency_ms")
    );
    let strict = smoke(dir.path(), &["--python", path_str(&python), "--strict"]);
    assert_eq!(strict.code, 1, "{}", strict.stdout);
    assert_group_gone(&strict);
}

/// pi-acp 0.0.34's package folder, the `pi` it runs and the Node pi needs (>= 22.19), from
/// scripts/provision/pi-acp.sh; None (with the reason printed) where it cannot provision.
fn pi_acp() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let _provisioning = crate::support::provision_lock();
    let out = Command::new("bash")
        .arg(repo().join("scripts/provision/pi-acp.sh"))
        .output()
        .expect("run the provisioning script");
    if out.status.code() == Some(3) {
        eprintln!("skipped: {}", String::from_utf8_lossy(&out.stderr).trim());
        return None;
    }
    assert!(
        out.status.success(),
        "provisioning failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<PathBuf> = text.lines().map(PathBuf::from).collect();
    assert_eq!(lines.len(), 3, "{text}");
    Some((lines[0].clone(), lines[1].clone(), lines[2].clone()))
}

/// The environment the pi-acp preset needs on top: pi's command, and pi's Node first on PATH.
fn pi_env(pi: &Path, node_bin: &Path) -> Vec<String> {
    vec![
        "--env".into(),
        format!("PI_ACP_PI_COMMAND={}", pi.display()),
        "--env".into(),
        format!(
            "PATH={}:{}",
            node_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    ]
}

fn pi_case(tree: &Path, extra: &[String], failing: &[&str]) -> Run {
    let args: Vec<&str> = extra.iter().map(String::as_str).collect();
    let r = smoke(tree, &args);
    assert_eq!(
        r.code,
        1.min(failing.len() as i32),
        "{}\n{}",
        r.stdout,
        r.stderr
    );
    r.assert_failing(failing);
    assert_eq!(r.report["preset"]["name"], "pi-acp");
    assert_eq!(r.report["heartbeat_var"], "PI_ACP_HEARTBEAT_S");
    // pi called the chat dialect, read the workspace file with its `read` tool
    let reqs = r.report["llm_requests"].as_array().unwrap();
    let kinds: Vec<&str> = reqs.iter().map(|q| q["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["turn", "after_tool"], "{}", r.stdout);
    assert_eq!(reqs[0]["path"], "/v1/chat/completions");
    assert_eq!(reqs[1]["carries_seed"], true);
    assert_eq!(
        r.report["transcript"]["message_text"],
        "Here is the answer: 42."
    );
    assert_group_gone(&r);
    r
}

#[test]
fn pi_acp_0_0_34_with_pi_0_87_1_unpatched_then_patched() {
    let Some((pkg, pi, node_bin)) = pi_acp() else {
        return;
    };
    // the npm package as installed, its preset detected
    let env = pi_env(&pi, &node_bin);
    let r = pi_case(
        &pkg,
        &env,
        &[
            "think_card",
            "heartbeat",
            "complete",
            "one_thought_block",
            "gap_card",
        ],
    );
    assert_eq!(
        r.report["preset"]["why"],
        "detected: package.json names pi-acp"
    );

    // its sources (from the package's source map), patched, run with tsx
    let dir = copy_tree(&crate::typescript::pi_acp("0.0.34"));
    let apply = acp_patch(
        &["apply", "--env-prefix", "PI_ACP", path_str(dir.path())],
        None,
    );
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    crate::typescript::link_node_modules(dir.path(), "pi-acp");
    let mut args: Vec<String> = vec![
        "--preset".into(),
        "pi-acp".into(),
        "--agent-cmd".into(),
        "node --import tsx src/index.ts".into(),
    ];
    args.extend(env);
    // main's pi-acp patch has no card in the silence after a tool call yet (issue 9 adds it)
    let r = pi_case(dir.path(), &args, &["gap_card"]);
    assert!(r.fig("think_card", "latency_ms") <= 250.0);
    eprintln!(
        "pi-acp patched: card {} ms after the prompt",
        r.fig("think_card", "latency_ms")
    );
}

/// mistral-vibe 3.0.3's tree: its wheel from PyPI (the wheel is the source), unpacked once
/// under target/ with its dist-info (whose METADATA names the package).
fn mistral_vibe_3_0_3() -> PathBuf {
    let cache = repo().join("target/agents/mistral-vibe-src/3.0.3");
    let tree = cache.join("tree");
    let _provisioning = crate::support::provision_lock();
    if tree.join("vibe/acp/entrypoint.py").is_file() {
        return tree;
    }
    let _ = std::fs::remove_dir_all(&cache);
    let wheels = cache.join("wheels");
    let ok = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .args([
            "--python-version",
            "3.12",
            "--only-binary=:all:",
            "mistral-vibe==3.0.3",
            "-d",
        ])
        .arg(&wheels)
        .status()
        .unwrap()
        .success();
    assert!(ok, "pip download mistral-vibe==3.0.3 failed");
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a wheel");
    let partial = cache.join("tree.partial");
    let ok = Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&partial)
        .status()
        .unwrap()
        .success();
    assert!(ok, "unzip failed");
    std::fs::rename(&partial, &tree).unwrap();
    tree
}

#[test]
fn mistral_vibe_3_0_3_preset_unpatched() {
    // the venv (Python 3.12, mistral-vibe's pinned dependencies) comes from
    // scripts/provision/python-agent.sh; scripts/test.sh points ACP_PATCH_TEST_VIBE_PYTHON at
    // its interpreter
    let Some(python) = std::env::var_os("ACP_PATCH_TEST_VIBE_PYTHON").map(PathBuf::from) else {
        eprintln!(
            "skipped: ACP_PATCH_TEST_VIBE_PYTHON (a Python with mistral-vibe 3.0.3) is unset"
        );
        return;
    };
    let dir = copy_tree(&mistral_vibe_3_0_3());
    let r = smoke(dir.path(), &["--python", path_str(&python)]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    r.assert_failing(&[
        "think_card",
        "heartbeat",
        "complete",
        "one_thought_block",
        "gap_card",
    ]);
    assert_eq!(r.report["preset"]["name"], "mistral-vibe");
    assert!(
        r.report["preset"]["why"]
            .as_str()
            .unwrap()
            .contains("METADATA names mistral-vibe")
    );
    let after_tool: Vec<&serde_json::Value> = r.report["llm_requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["kind"] == "after_tool")
        .collect();
    assert_eq!(after_tool.len(), 1, "{}", r.stdout);
    assert_eq!(after_tool[0]["carries_seed"], true);
    assert!(
        r.report["transcript"]["message_text"]
            .as_str()
            .unwrap()
            .contains("Here is the answer: 42.")
    );
    assert_group_gone(&r);
}
