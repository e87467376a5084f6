use super::*;
use crate::smoke::wire::test_lines::Rec;

mod answer;
mod tools;
use tools::tool_ctx;

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
    assert_eq!(checks.len(), 8);
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
    assert!(by_name(&checks, CARDS_WELL_FORMED).passed);
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

    // (after the limit: a real tool call within it would be an answer that needs no card)
    let mut r = Rec::new();
    r.card(300.0, "t", "thinking", None).message(600.0, "x");
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
fn heartbeats_that_leave_the_unchanged_status_out_count() {
    // codex-acp sends a tool_call_update without the fields that did not change: the
    // heartbeat's `status: "in_progress"` is dropped, its new title kept
    let mut r = Rec::new();
    r.card(3.0, "t", "think", None)
        .tcu(1003.0, "t", None)
        .tcu(2003.0, "t", None)
        .tcu(2500.0, "t", Some("completed"))
        .thought(2501.0, "x")
        .message(2600.0, "y")
        .end(2700.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    let hb = by_name(&checks, HEARTBEAT);
    assert!(hb.passed, "{hb:?}");
    assert_eq!(hb.figures["count"], 2.0);
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
    assert!(by_name(&checks, CARDS_WELL_FORMED).passed);

    let mut r = Rec::new();
    r.card(3.0, "t", "think", None)
        .tcu(50.0, "t", Some("in_progress"))
        .message(100.0, "x")
        .end(300.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    let c = by_name(&checks, COMPLETE);
    assert!(!c.passed);
    assert!(c.summary.contains("never completed"), "{c:?}");
    // a card left open is the patch's fault; the agent's own tool calls are fine
    let w = by_name(&checks, CARDS_WELL_FORMED);
    assert!(!w.passed);
    assert_eq!(w.judges, Judges::Patch);
    assert!(
        w.evidence.iter().any(|e| e.contains("still in_progress")),
        "{w:?}"
    );
    assert!(by_name(&checks, WELL_FORMED_TOOL_CALLS).passed);
    assert!(!verdict(&checks, false));
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
    // the card's problems are the patch's
    let c = cards_well_formed(&ups);
    assert!(!c.passed);
    let all = c.evidence.join("\n");
    assert!(all.contains("from in_progress to pending"), "{all}");
    assert!(all.contains("from completed to failed"), "{all}");
    assert!(!all.contains("ghost") && !all.contains("b:"), "{all}");
    // the rest are the agent's
    let c = well_formed_tool_calls(&ups);
    assert!(!c.passed);
    assert_eq!(c.judges, Judges::Agent);
    let all = c.evidence.join("\n");
    assert!(all.contains("\"ghost\""), "{all}");
    assert!(all.contains("unknown status \"weird\""), "{all}");
    assert!(all.contains("b: still pending"), "{all}");
    assert!(!all.contains("a:"), "{all}");
}

/// Hermes 0.19.0's shape: its read_file call is shown (pending) and never finished on the
/// wire; the tool ran all the same (its result reached the model) and a card covers the wait.
fn never_finished_tool_turn(gap_card: bool) -> Rec {
    let mut r = Rec::new();
    r.card(2.0, "c1", "think", None)
        .tcu(1002.0, "c1", Some("in_progress"))
        .tcu(1500.0, "c1", Some("completed"))
        .thought(1501.0, "let me read")
        .tool(1600.0, "call_1", "read", "pending");
    if gap_card {
        r.card(1750.0, "c2", "think", Some("in_progress"))
            .tcu(3700.0, "c2", Some("completed"));
    }
    r.thought(3701.0, "so")
        .message(3900.0, "done")
        .end(4000.0, "end_turn");
    r
}

#[test]
fn an_agent_that_never_finishes_its_tool_call_is_a_finding_and_the_gap_is_still_judged() {
    let mut ctx = tool_ctx();
    ctx.tool.as_mut().unwrap().results_at_ms = vec![1700.0];
    let checks = run_all(&never_finished_tool_turn(true).lines, &ctx);
    let failing: Vec<&str> = checks
        .iter()
        .filter(|c| !c.passed)
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(failing, [WELL_FORMED_TOOL_CALLS, TOOL_LIFECYCLE]);
    assert!(
        checks
            .iter()
            .filter(|c| !c.passed)
            .all(|c| c.judges == Judges::Agent)
    );
    assert!(verdict(&checks, false));
    assert!(!verdict(&checks, true));
    let gap = by_name(&checks, GAP_CARD);
    // from when the result reached the model
    assert_eq!(gap.figures["silence_ms"], 2001.0);
    assert_eq!(gap.figures["open_after_ms"], 50.0);
    assert!(
        gap.evidence
            .iter()
            .any(|e| e.contains("its result reached the model at 1700 ms")),
        "{gap:?}"
    );

    // no card in that silence: the patch fails
    let checks = run_all(&never_finished_tool_turn(false).lines, &ctx);
    let gap = by_name(&checks, GAP_CARD);
    assert!(!gap.passed);
    assert!(
        gap.summary
            .contains("no think card in the 2001 ms of silence"),
        "{gap:?}"
    );
    assert!(!verdict(&checks, false));

    // nothing says the tool ran: the gap cannot be judged, and the patch is not cleared
    ctx.tool.as_mut().unwrap().results_at_ms.clear();
    let checks = run_all(&never_finished_tool_turn(true).lines, &ctx);
    let gap = by_name(&checks, GAP_CARD);
    assert!(!gap.passed);
    assert!(
        gap.summary.contains("no model call carried its result"),
        "{gap:?}"
    );
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

#[test]
fn cancel_checks() {
    let ctx = CheckContext {
        cancel_at_ms: Some(400.0),
        expected_stop: "cancelled".into(),
        ..CheckContext::default()
    };
    let mut r = Rec::new();
    r.card(2.0, "c1", "think", None)
        .tcu(402.0, "c1", Some("completed"))
        .end(403.0, "cancelled")
        .update(
            500.0,
            serde_json::json!({"sessionUpdate":"usage_update","used":1,"size":2}),
        );
    let checks = run_all(&r.lines, &ctx);
    for c in &checks {
        assert!(c.passed, "{c:?}");
    }
    let mut r = Rec::new();
    r.card(2.0, "c1", "think", None)
        .end(403.0, "end_turn")
        .thought(900.0, "late");
    let checks = run_all(&r.lines, &ctx);
    assert!(!by_name(&checks, CARDS_CLOSED_ON_CANCEL).passed);
    assert!(!by_name(&checks, QUIET_AFTER_CANCEL).passed);
    assert!(
        by_name(&checks, TURN_ENDS)
            .summary
            .contains("expected cancelled")
    );
}

#[test]
fn sessions_merge_into_one_row_each() {
    let a = run_all(&good().lines, &CheckContext::default());
    let mut r = Rec::new();
    r.message(500.0, "x").end(510.0, "end_turn");
    let b = run_all(&r.lines, &CheckContext::default());
    let merged = merge_sessions(&[a.clone(), b]);
    assert_eq!(merged.len(), a.len());
    let card = by_name(&merged, THINK_CARD);
    assert!(!card.passed);
    assert!(
        card.summary.starts_with("session 1: think card"),
        "{card:?}"
    );
    assert!(
        card.summary.contains("; session 2: no tool_call"),
        "{card:?}"
    );
    assert_eq!(card.figures["s1.latency_ms"], 3.0);
    assert!(by_name(&merged, TURN_ENDS).passed);
    // one session: the rows as they are
    assert_eq!(merge_sessions(std::slice::from_ref(&a)), a);
}

#[test]
fn no_trace_lists_what_changed() {
    assert!(no_trace(&[], 10, true, false).passed);
    let c = no_trace(&["added .hermes".into()], 10, false, false);
    assert!(!c.passed);
    assert_eq!(c.evidence, vec!["added .hermes"]);
}

#[test]
fn sessions_isolated_catches_foreign_ids_and_crossed_text() {
    use crate::smoke::wire::{Direction, RawLine};
    let up = |t: f64, sid: &str, u: serde_json::Value| {
        RawLine::new(
            Direction::In,
            t,
            serde_json::json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":sid,"update":u}})
                .to_string(),
        )
    };
    let card = |id: &str| serde_json::json!({"sessionUpdate":"tool_call","toolCallId":id,"title":"Thinking...","kind":"think"});
    let beat = |id: &str| serde_json::json!({"sessionUpdate":"tool_call_update","toolCallId":id,"status":"in_progress"});
    let lines = vec![
        up(1.0, "a", card("ca")),
        up(2.0, "b", card("cb")),
        up(3.0, "b", beat("ca")), // a's heartbeat on b
        up(4.0, "zzz", beat("cb")),
    ];
    let texts = vec![
        SessionText {
            session_id: "a".into(),
            number: 1,
            message_text: "answer [session 1] answer [session 2]".into(),
            thought_text: String::new(),
        },
        SessionText {
            session_id: "b".into(),
            number: 2,
            message_text: String::new(),
            thought_text: String::new(),
        },
    ];
    let c = sessions_isolated(&lines, &texts);
    assert!(!c.passed);
    let all = c.evidence.join("\n");
    assert!(
        all.contains("names session \"zzz\", which the run never opened"),
        "{all}"
    );
    assert!(
        all.contains("for \"ca\" carries session \"b\", but session \"a\" started"),
        "{all}"
    );
    assert!(
        all.contains("session 1's answer shows session 2's text"),
        "{all}"
    );
    assert_eq!(c.figures["crossings"], 3.0, "{all}");

    let ok = sessions_isolated(&lines[..2], &[texts[1].clone()]);
    assert!(!ok.passed, "session a is not one of the run's");

    // an echo agent's answers carry their prompts' markers: its own passes, another's crosses
    let echo = |n: u32, text: &str| SessionText {
        session_id: ["a", "b"][n as usize - 1].into(),
        number: n,
        message_text: text.into(),
        thought_text: String::new(),
    };
    let own = [
        echo(1, "You said: hi [smoke session 1]"),
        echo(2, "You said: hi [smoke session 2]"),
    ];
    assert!(sessions_isolated(&lines[..2], &own).passed);
    let crossed = [
        echo(1, "You said: hi [smoke session 2]"),
        echo(2, "You said: hi [smoke session 2]"),
    ];
    let c = sessions_isolated(&lines[..2], &crossed);
    assert!(!c.passed);
    assert!(
        c.evidence
            .join("\n")
            .contains("session 1's answer lacks its tag"),
        "{:?}",
        c.evidence
    );

    // two sessions the agent named alike: said as the cause, before the crossings it brings
    let twins = [echo(1, "You said: hi [smoke session 1]"), {
        let mut s = echo(2, "You said: hi [smoke session 2]");
        s.session_id = "a".into();
        s
    }];
    let c = sessions_isolated(&lines[..1], &twins);
    assert!(!c.passed);
    assert_eq!(
        c.evidence[0],
        "session/new answered sessions 1 and 2 with the same id \"a\": their updates cannot be told apart (make the agent's session ids unique, e.g. a counter or a random UUID)"
    );
}
