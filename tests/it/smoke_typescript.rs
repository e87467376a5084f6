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
