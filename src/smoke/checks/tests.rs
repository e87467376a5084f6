use super::*;
use crate::smoke::wire::test_lines::Rec;

fn by_name<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks.iter().find(|c| c.name == name).unwrap()
}

fn good() -> Rec {
    let mut r = Rec::new();
    r.card(3.0, "think-1", "think", None)
        .tcu(1003.0, "think-1", Some("in_progress"))
        .tcu(2003.0, "think-1", Some("in_progress"))
        .tcu(2500.0, "think-1", Some("completed"))
        .thought(2501.0, "hmm")
        .thought(2540.0, " more")
        .message(2600.0, "Answer")
        .message(2700.0, " done")
        .end(2710.0, "end_turn");
    r
}

#[test]
fn a_good_turn_passes_everything() {
    let checks = run_all(&good().lines, &CheckContext::default());
    for c in &checks {
        assert!(c.passed, "{c:?}");
    }
    assert_eq!(checks.len(), 7);
    let hb = by_name(&checks, HEARTBEAT);
    assert_eq!(hb.figures["count"], 2.0);
    assert_eq!(hb.figures["expected_min"], 1.0);
    assert_eq!(by_name(&checks, THINK_CARD).figures["latency_ms"], 3.0);
}

#[test]
fn expected_heartbeat_minimum() {
    assert_eq!(expected_heartbeats(2500.0, 1.0), 1);
    assert_eq!(expected_heartbeats(1400.0, 1.0), 0);
    assert_eq!(expected_heartbeats(1600.0, 1.0), 1);
    assert_eq!(expected_heartbeats(5200.0, 1.0), 4);
    assert_eq!(expected_heartbeats(900.0, 1.0), 0);
    assert_eq!(expected_heartbeats(5200.0, 0.5), 9);
}

#[test]
fn unpatched_turn_fails_card_heartbeat_complete_and_thought_block() {
    let mut r = Rec::new();
    r.thought(2500.0, "a")
        .message(2600.0, "b")
        .thought(2700.0, "late")
        .message(2800.0, "c")
        .end(2900.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    assert!(!by_name(&checks, THINK_CARD).passed);
    assert!(!by_name(&checks, HEARTBEAT).passed);
    assert!(!by_name(&checks, COMPLETE).passed);
    let otb = by_name(&checks, ONE_THOUGHT_BLOCK);
    assert!(!otb.passed);
    assert_eq!(otb.figures["thought_after_message"], 1.0);
    assert!(otb.evidence[0].contains("late"));
    assert!(by_name(&checks, CLEAN_STDOUT).passed);
    assert!(by_name(&checks, WELL_FORMED_TOOL_CALLS).passed);
    assert!(by_name(&checks, TURN_ENDS).passed);
}

#[test]
fn late_or_misnamed_card_fails() {
    let mut r = Rec::new();
    r.card(400.0, "t", "think", Some("in_progress"))
        .tcu(500.0, "t", Some("completed"))
        .message(600.0, "x")
        .end(700.0, "end_turn");
    let c = think_card(
        &turn_updates(&r.lines, &TurnFrame::find(&r.lines)),
        &CheckContext::default(),
    );
    assert!(!c.passed);
    assert_eq!(c.figures["latency_ms"], 400.0);

    let mut r = Rec::new();
    r.card(4.0, "t", "thinking", None).message(600.0, "x");
    let checks = run_all(&r.lines, &CheckContext::default());
    let c = by_name(&checks, THINK_CARD);
    assert!(!c.passed);
    assert!(c.evidence[0].contains("\"thinking\""), "{c:?}");

    // a card after the first chunk
    let mut r = Rec::new();
    r.thought(2.0, "x").card(4.0, "t", "think", None);
    let checks = run_all(&r.lines, &CheckContext::default());
    assert!(!by_name(&checks, THINK_CARD).passed);
}

#[test]
fn too_few_heartbeats_fail() {
    let mut r = Rec::new();
    r.card(3.0, "t", "think", None)
        .tcu(4000.0, "t", Some("in_progress"))
        .tcu(5000.0, "t", Some("completed"))
        .message(5001.0, "x")
        .end(5002.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    let hb = by_name(&checks, HEARTBEAT);
    assert!(!hb.passed);
    assert_eq!(hb.figures["expected_min"], 3.0);
    assert_eq!(hb.figures["count"], 1.0);
    assert!(hb.figures["max_gap_ms"] >= 3997.0);
}

#[test]
fn card_completed_after_first_chunk_or_never() {
    let mut r = Rec::new();
    r.card(3.0, "t", "think", None)
        .thought(100.0, "x")
        .tcu(200.0, "t", Some("completed"))
        .end(300.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    assert!(!by_name(&checks, COMPLETE).passed);
    assert!(by_name(&checks, WELL_FORMED_TOOL_CALLS).passed);

    let mut r = Rec::new();
    r.card(3.0, "t", "think", None)
        .tcu(50.0, "t", Some("in_progress"))
        .message(100.0, "x")
        .end(300.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    let c = by_name(&checks, COMPLETE);
    assert!(!c.passed);
    assert!(c.summary.contains("never completed"), "{c:?}");
    let w = by_name(&checks, WELL_FORMED_TOOL_CALLS);
    assert!(!w.passed);
    assert!(
        w.evidence.iter().any(|e| e.contains("still in_progress")),
        "{w:?}"
    );
}

#[test]
fn junk_on_stdout_is_quoted() {
    let mut r = good();
    r.raw(10.0, "loading model...");
    r.raw(11.0, "[1,2]");
    r.raw(12.0, r#"{"id":1,"result":{}}"#);
    let checks = run_all(&r.lines, &CheckContext::default());
    let c = by_name(&checks, CLEAN_STDOUT);
    assert!(!c.passed);
    assert_eq!(c.figures["offending"], 3.0);
    assert!(c.evidence[0].contains("loading model..."));
    assert!(c.evidence[0].contains("not JSON"));
    assert!(c.evidence[1].contains("batch"));
    assert!(c.evidence[2].contains("jsonrpc"));
}

#[test]
fn tool_call_ordering_problems() {
    let mut r = Rec::new();
    r.card(1.0, "a", "think", Some("in_progress"))
        .tcu(2.0, "a", Some("pending"))
        .tcu(3.0, "ghost", Some("in_progress"))
        .tcu(4.0, "a", Some("completed"))
        .tcu(5.0, "a", Some("failed"))
        .card(6.0, "b", "read", None)
        .tcu(7.0, "b", Some("weird"))
        .end(8.0, "end_turn");
    let ups = turn_updates(&r.lines, &TurnFrame::find(&r.lines));
    let c = well_formed_tool_calls(&ups);
    assert!(!c.passed);
    let all = c.evidence.join("\n");
    assert!(all.contains("from in_progress to pending"), "{all}");
    assert!(all.contains("\"ghost\""), "{all}");
    assert!(all.contains("from completed to failed"), "{all}");
    assert!(all.contains("unknown status \"weird\""), "{all}");
    assert!(all.contains("b: still pending"), "{all}");
}

#[test]
fn turn_end_verdicts() {
    let mut r = Rec::new();
    r.end(10.0, "cancelled");
    let checks = run_all(&r.lines, &CheckContext::default());
    assert!(!by_name(&checks, TURN_ENDS).passed);

    let r = Rec::new();
    let ctx = CheckContext {
        no_response_note: Some("timed out after 3 s".into()),
        ..CheckContext::default()
    };
    let checks = run_all(&r.lines, &ctx);
    let c = by_name(&checks, TURN_ENDS);
    assert!(!c.passed);
    assert!(c.summary.contains("timed out after 3 s"));

    let mut r = Rec::new();
    r.raw(
        5.0,
        r#"{"jsonrpc":"2.0","id":"p1","error":{"code":-32603,"message":"boom"}}"#,
    );
    let checks = run_all(&r.lines, &CheckContext::default());
    let c = by_name(&checks, TURN_ENDS);
    assert!(!c.passed);
    assert!(c.summary.contains("boom"));
}
