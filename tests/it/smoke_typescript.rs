//! Smoke runs of patched TypeScript fixture agents beyond the cases' own runs
//! (typescript::cases::smoke): verify --smoke, the LLM's error paths, the process group gone.

use crate::smoke::{assert_group_gone, smoke};
use crate::support::*;
use crate::typescript::{applied, link_node_modules};

#[test]
fn verify_smoke_on_the_patched_sdk2_fixture() {
    let dir = applied("sdk2_agent");
    link_node_modules(dir.path(), "sdk2_agent");
    let run = acp_patch(&["verify", "--smoke", dir.path().to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("checks hold"), "{}", run.stdout);
    assert!(run.stdout.contains("PASS think_card"), "{}", run.stdout);
}

/// The LLM fails after the wait: the card must still be closed (the turn rejects and the turn
/// cover closes it); the turn itself fails because the agent reports the error.
fn llm_error_closes_the_card(name: &str, error: &str, failing: &[&str]) {
    let dir = applied(name);
    let deps = if name == "inline_switch" {
        name
    } else {
        "sdk1_agent"
    };
    link_node_modules(dir.path(), deps);
    let config = dir.path().join("acp-patch.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    let text = match text.find("[smoke.script]") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    std::fs::write(
        &config,
        format!("{text}\n[smoke.script]\ndelay_s = 1.5\n\n[smoke.script.error]\n{error}\n"),
    )
    .unwrap();
    let run = smoke(dir.path(), &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    run.assert_failing(failing);
    assert_group_gone(&run);
}

#[test]
fn sdk1_patched_llm_error_closes_the_card() {
    // nothing came before the error: the card closes marked failed (which `complete` reports)
    llm_error_closes_the_card("sdk1_agent", "status = 500", &["complete", "turn_ends"]);
}

#[test]
fn inline_switch_patched_mid_stream_error_closes_the_card() {
    // the reasoning before the error closed the card: completed
    llm_error_closes_the_card("inline_switch", "mid_stream = true", &["turn_ends"]);
}

// ---- @zed-industries/claude-agent-acp 0.23.1 as npm installs it (compiled JavaScript) ------

/// The installed adapter (scripts/provision/claude-agent-acp.sh) copied into a temporary
/// folder, its dependencies linked from the install.
fn claude_dist() -> tempfile::TempDir {
    let _provisioning = crate::support::provision_lock();
    let out = std::process::Command::new("bash")
        .arg(repo().join("scripts/provision/claude-agent-acp.sh"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pkg = std::path::PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    drop(_provisioning);
    let dir = copy_tree(&pkg);
    let deps = pkg.parent().unwrap().parent().unwrap(); // .../node_modules
    std::os::unix::fs::symlink(deps, dir.path().join("node_modules")).unwrap();
    dir
}

#[test]
fn claude_agent_acp_0_23_1_from_npm_patched_passes_every_check() {
    let dir = claude_dist();
    let root = dir.path();
    let v = acp_patch(&["verify", path_str(root)], None);
    assert_eq!(v.code, 1, "{}{}", v.stdout, v.stderr);
    let fresh = claude_dist();
    let dry = acp_patch(&["apply", "--dry-run", path_str(fresh.path())], None);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let run = acp_patch(&["apply", path_str(root)], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let placed: String = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("  "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_snapshot(
        &fixture("typescript/claude-agent-acp-0.23.1-npm.placed.txt"),
        &placed,
    );
    // the dry run's diff is what apply wrote
    let diff = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(diff.path(), &dry.stdout).unwrap();
    git(fresh.path(), &["apply", path_str(diff.path())]);
    for rel in ["dist/acp-agent.js", "dist/acp-progress.js"] {
        assert_eq!(
            std::fs::read(fresh.path().join(rel)).unwrap(),
            std::fs::read(root.join(rel)).unwrap(),
            "{rel}"
        );
    }
    for rel in ["dist/acp-agent.js", "dist/acp-progress.js"] {
        let out = std::process::Command::new("node")
            .arg("--check")
            .arg(root.join(rel))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{rel}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // the patched module loads in node (its imports resolve), writing nothing to stdout
    let out = std::process::Command::new("node")
        .args(["--input-type=module", "-e", "await import(process.argv[1])"])
        .arg(root.join("dist/acp-agent.js"))
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "patched dist/acp-agent.js does not load:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v = acp_patch(&["verify", path_str(root)], None);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    assert_eq!(
        started(&v.stdout),
        ["dist/acp-agent.js", "dist/acp-progress.js"],
        "{}",
        v.stdout
    );
    assert_snapshot(
        &fixture("typescript/claude-agent-acp-0.23.1-npm.verify-after.txt"),
        &normalize(&v.stdout, root),
    );
    let again = acp_patch(&["apply", path_str(root)], None);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);

    // end to end, the preset's way (Anthropic Messages, a tool call): every check passes
    let r = crate::smoke_presets::claude_case(root, &[], &[]);
    eprintln!(
        "claude-agent-acp (patched, npm): card {} ms after the prompt",
        r.fig("think_card", "latency_ms")
    );
    let r = crate::smoke_presets::claude_case(root, &["--sessions", "2"], &[]);
    assert!(r.passed("sessions_isolated"));
    let r = crate::smoke_presets::claude_case(root, &["--cancel-after", "800"], &[]);
    assert_eq!(r.report["stop_reason"], "cancelled");
}
