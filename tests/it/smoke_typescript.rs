//! The smoke run on our TypeScript fixture agents (2.x and 1.x SDK), unpatched and patched.

use crate::smoke::{assert_group_gone, smoke};
use crate::support::*;
use crate::typescript::link_node_modules;

fn case(name: &str) {
    let before = fixture(&format!("typescript/{name}/before"));

    let unpatched = copy_tree(&before);
    link_node_modules(unpatched.path(), name);
    let run = smoke(unpatched.path(), &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    run.assert_failing(&["think_card", "heartbeat", "complete", "one_thought_block"]);
    assert_group_gone(&run);

    let patched = copy_tree(&before);
    let apply = acp_patch(&["apply", patched.path().to_str().unwrap()], None);
    assert_eq!(apply.code, 0, "{}", apply.stderr);
    link_node_modules(patched.path(), name);
    let run = smoke(patched.path(), &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run.assert_failing(&[]);
    assert_group_gone(&run);
}

#[test]
fn sdk2_fixture_unpatched_fails_then_patched_passes_every_check() {
    case("sdk2_agent");
}

#[test]
fn sdk1_fixture_unpatched_fails_then_patched_passes_every_check() {
    case("sdk1_agent");
}

#[test]
fn verify_smoke_on_the_patched_sdk2_fixture() {
    let dir = copy_tree(&fixture("typescript/sdk2_agent/after"));
    link_node_modules(dir.path(), "sdk2_agent");
    let run = acp_patch(&["verify", "--smoke", dir.path().to_str().unwrap()], None);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("checks hold"), "{}", run.stdout);
    assert!(run.stdout.contains("PASS think_card"), "{}", run.stdout);
}

#[test]
fn sdk1_patched_llm_error_closes_the_card_on_the_error_path() {
    // the LLM fails after the wait: the card must still complete (from the `catch` block);
    // the turn itself fails because the agent reports the error, patched or not
    let dir = copy_tree(&fixture("typescript/sdk1_agent/after"));
    link_node_modules(dir.path(), "sdk1_agent");
    let config = dir.path().join("acp-patch.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("\n[smoke.script]\ndelay_s = 1.5\n\n[smoke.script.error]\nstatus = 500\n");
    std::fs::write(&config, text).unwrap();
    let run = smoke(dir.path(), &[]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    run.assert_failing(&["turn_ends"]);
    assert_group_gone(&run);
}
