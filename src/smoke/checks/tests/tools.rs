//! Tool-call turns: the gap card after a tool call and the tool call's lifecycle.

use super::*;

pub(super) fn tool_ctx() -> CheckContext {
    CheckContext {
        tool: Some(ToolExpectation {
            name: "read_file".into(),
            call_id: "call_1".into(),
            result_carries_seed: Some(true),
            tool_result: None,
            not_asked: None,
            results_at_ms: vec![1750.0],
        }),
        ..CheckContext::default()
    }
}

/// A tool turn: card, thought, the read tool, `gap` (a card in the silence, or not), answer.
fn tool_turn(gap_card: bool) -> Rec {
    let mut r = Rec::new();
    r.card(2.0, "c1", "think", None)
        .tcu(1002.0, "c1", Some("in_progress"))
        .tcu(1500.0, "c1", Some("completed"))
        .thought(1501.0, "let me read")
        .tool(1600.0, "call_1", "read", "pending")
        .tcu(1650.0, "call_1", Some("in_progress"))
        .tcu(1700.0, "call_1", Some("completed"));
    if gap_card {
        r.card(2201.0, "c2", "think", Some("in_progress"))
            .tcu(3700.0, "c2", Some("completed"));
    }
    r.thought(3701.0, "so")
        .message(3900.0, "done")
        .end(4000.0, "end_turn");
    r
}

#[test]
fn a_tool_turn_with_a_gap_card_passes_and_without_one_fails() {
    let checks = run_all(&tool_turn(true).lines, &tool_ctx());
    for c in &checks {
        assert!(c.passed, "{c:?}");
    }
    let gap = by_name(&checks, GAP_CARD);
    assert_eq!(gap.figures["open_after_ms"], 501.0);
    assert_eq!(gap.figures["silence_ms"], 2001.0);
    // a thought after the tool call starts a new answer: still one block each
    assert!(by_name(&checks, ONE_THOUGHT_BLOCK).passed);
    let lc = by_name(&checks, TOOL_LIFECYCLE);
    assert!(
        lc.summary.contains("pending → in_progress → completed"),
        "{lc:?}"
    );

    let checks = run_all(&tool_turn(false).lines, &tool_ctx());
    let gap = by_name(&checks, GAP_CARD);
    assert!(!gap.passed);
    assert!(
        gap.summary
            .contains("no think card in the 2001 ms of silence"),
        "{gap:?}"
    );
    // gap cards off: no gap_card check at all
    let off = CheckContext {
        gap_ms: 0.0,
        ..tool_ctx()
    };
    assert!(
        run_all(&tool_turn(false).lines, &off)
            .iter()
            .all(|c| c.name != GAP_CARD)
    );
}

#[test]
fn a_late_gap_card_or_one_left_open_fails() {
    let mut r = Rec::new();
    r.card(2.0, "c1", "think", None)
        .tcu(500.0, "c1", Some("completed"))
        .thought(501.0, "x")
        .tool(600.0, "call_1", "read", "in_progress")
        .tcu(700.0, "call_1", Some("completed"))
        .card(1900.0, "c2", "think", None)
        .message(2500.0, "y")
        .tcu(2600.0, "c2", Some("completed"))
        .end(2700.0, "end_turn");
    let checks = run_all(&r.lines, &tool_ctx());
    let gap = by_name(&checks, GAP_CARD);
    assert!(!gap.passed);
    assert!(gap.summary.contains("opened 1200 ms after"), "{gap:?}");
    assert!(gap.summary.contains("after agent_message_chunk"), "{gap:?}");
}

#[test]
fn tool_lifecycle_needs_a_finished_call_whose_result_reached_the_model() {
    let mut ctx = tool_ctx();
    ctx.tool.as_mut().unwrap().result_carries_seed = None;
    let checks = run_all(&tool_turn(true).lines, &ctx);
    let lc = by_name(&checks, TOOL_LIFECYCLE);
    assert!(!lc.passed);
    assert!(
        lc.summary.contains("no model call carried a tool result"),
        "{lc:?}"
    );

    let mut r = Rec::new();
    r.tool(10.0, "call_1", "read", "pending")
        .tcu(20.0, "call_1", Some("failed"))
        .end(30.0, "end_turn");
    let checks = run_all(&r.lines, &tool_ctx());
    let lc = by_name(&checks, TOOL_LIFECYCLE);
    assert!(lc.summary.contains("ends failed"), "{lc:?}");

    let r = Rec::new();
    let mut ctx = tool_ctx();
    ctx.tool.as_mut().unwrap().not_asked = Some("not offered".into());
    let checks = run_all(&r.lines, &ctx);
    let lc = by_name(&checks, TOOL_LIFECYCLE);
    assert!(!lc.passed);
    assert_eq!(lc.evidence, vec!["not offered"]);
}

#[test]
fn a_card_closed_by_a_tool_call_is_judged_on_its_own_wait() {
    // the model asks for the tool before it says anything (no reasoning shown): the card
    // closes on the tool call, and the gap card after it beats on its own (langchain-acp)
    let mut r = Rec::new();
    r.card(2.0, "c1", "think", None)
        .tcu(1002.0, "c1", Some("in_progress"))
        .tcu(2002.0, "c1", Some("in_progress"))
        .tcu(2600.0, "c1", Some("completed"))
        .tool(2601.0, "call_1", "read", "in_progress")
        .tcu(2650.0, "call_1", Some("completed"))
        .card(3150.0, "c2", "think", Some("in_progress"))
        .tcu(4150.0, "c2", Some("in_progress"))
        .tcu(4700.0, "c2", Some("completed"))
        .message(4701.0, "done")
        .end(4800.0, "end_turn");
    let checks = run_all(&r.lines, &tool_ctx());
    let hb = by_name(&checks, HEARTBEAT);
    assert!(hb.passed, "{hb:?}");
    assert_eq!(hb.figures["count"], 2.0);
    assert_eq!(hb.figures["wait_ms"], 2599.0);
    assert!(hb.summary.contains("first real update"), "{hb:?}");
}
