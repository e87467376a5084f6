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
