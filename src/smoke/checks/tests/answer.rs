//! The answer as the user reads it: in order, once, whole (also after a cancel).

use super::*;

fn answer_ctx(sent: &[(f64, &str)]) -> CheckContext {
    CheckContext {
        answer: Some(
            sent.iter()
                .map(|(t, s)| SentText {
                    t_ms: *t,
                    text: s.to_string(),
                })
                .collect(),
        ),
        ..CheckContext::default()
    }
}

/// A turn whose message chunks are `chunks` (after a thought), answered at 2710 ms.
fn answered(chunks: &[&str]) -> Rec {
    let mut r = Rec::new();
    r.card(3.0, "think-1", "think", None)
        .tcu(1003.0, "think-1", Some("in_progress"))
        .tcu(2500.0, "think-1", Some("completed"))
        .thought(2501.0, "hmm");
    for (i, c) in chunks.iter().enumerate() {
        r.message(2600.0 + i as f64, c);
    }
    r.end(2710.0, "end_turn");
    r
}

fn intact(r: &Rec, ctx: &CheckContext) -> Check {
    by_name(&run_all(&r.lines, ctx), ANSWER_INTACT).clone()
}

#[test]
fn the_answer_must_arrive_in_order_once_and_whole() {
    // two model calls (a tool call between), their text in the order of the calls
    let ctx = answer_ctx(&[(2000.0, " done"), (0.0, "Answer")]);
    let c = intact(&answered(&["Ans", "wer", " done"]), &ctx);
    assert!(c.passed, "{c:?}");
    assert!(
        c.summary.contains("intact: 11 character(s) in 3 chunk(s)"),
        "{c:?}"
    );
    assert_eq!(c.judges, Judges::Patch);
    // the agent's own line breaks are not a loss
    let c = intact(&answered(&["\n\nAnswer done"]), &ctx);
    assert!(c.passed, "{c:?}");
    assert!(c.summary.contains("up to whitespace"), "{c:?}");

    // held text thrown away, doubled, reordered
    for (chunks, what) in [
        (&["Answer"][..], "text was lost"),
        (&[][..], "no message text reached the client"),
        (&["Answer done", "Answer done"][..], "added or doubled"),
        (&[" done", "Answer"][..], "reordered or changed"),
    ] {
        let c = intact(&answered(chunks), &ctx);
        assert!(!c.passed, "{chunks:?}: {c:?}");
        assert!(c.summary.contains(what), "{chunks:?}: {c:?}");
        assert!(
            c.evidence[0].contains("the model sent: \"Answer done\""),
            "{c:?}"
        );
    }
    let c = intact(&answered(&[" done", "Answer"]), &ctx);
    assert!(
        c.evidence[2]
            .contains("at character 0: the model \"Answerdone\", the client \"doneAnswer\""),
        "{c:?}"
    );

    // text after the turn ended
    let mut r = answered(&["Answer"]);
    r.message(2800.0, " done");
    let c = intact(&r, &ctx);
    assert!(!c.passed, "{c:?}");
    assert!(
        c.summary
            .contains("1 message chunk(s) after the turn ended"),
        "{c:?}"
    );
    assert_eq!(c.figures["after_turn_chunks"], 1.0);

    // not judged when the script fails the model calls
    assert!(
        run_all(&answered(&["x"]).lines, &CheckContext::default())
            .iter()
            .all(|c| c.name != ANSWER_INTACT)
    );
}

#[test]
fn after_a_cancel_the_text_up_to_it_must_be_intact() {
    let mut ctx = answer_ctx(&[(0.0, "Answer done")]);
    ctx.cancel_at_ms = Some(2650.0);
    ctx.expected_stop = "cancelled".into();
    let mut r = answered(&["Ans"]);
    r.lines.pop();
    r.end(2700.0, "cancelled");
    let c = intact(&r, &ctx);
    assert!(c.passed, "{c:?}");
    assert!(c.summary.contains("3 of the 11"), "{c:?}");
    let mut r = answered(&["wer"]);
    r.lines.pop();
    r.end(2700.0, "cancelled");
    assert!(!intact(&r, &ctx).passed);
}

// ---- the grace: no card where nobody waited ------------------------------------------------

#[test]
fn a_turn_answered_within_the_limit_needs_no_card() {
    let mut r = Rec::new();
    r.update(
        1.0,
        serde_json::json!({"sessionUpdate": "available_commands_update", "availableCommands": []}),
    )
    .message(3.0, "/help: the commands")
    .end(5.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    for c in &checks {
        assert!(c.passed, "{c:?}");
    }
    for name in [THINK_CARD, HEARTBEAT, COMPLETE] {
        let c = by_name(&checks, name);
        assert!(c.summary.starts_with("no card needed"), "{c:?}");
        assert_eq!(c.figures["first_real_ms"], 3.0);
    }
}

#[test]
fn a_turn_that_ends_within_the_limit_with_nothing_said_needs_no_card() {
    // andromity 0.2.24 answers end_turn at once and works on in the background: nobody waited
    let mut r = Rec::new();
    r.end(2.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    for name in [THINK_CARD, HEARTBEAT, COMPLETE] {
        let c = by_name(&checks, name);
        assert!(c.passed, "{c:?}");
        assert_eq!(
            c.summary,
            "no card needed: the turn ended 2 ms after the prompt with nothing said, within the limit (250 ms)"
        );
    }
    // past the limit, the wait had no card
    let mut r = Rec::new();
    r.end(400.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    for name in [THINK_CARD, HEARTBEAT, COMPLETE] {
        assert!(!by_name(&checks, name).passed, "{name}");
    }
    // a silent turn the user cancelled within the limit was waited for
    let mut r = Rec::new();
    r.end(120.0, "cancelled");
    let ctx = CheckContext {
        cancel_at_ms: Some(100.0),
        expected_stop: "cancelled".into(),
        ..CheckContext::default()
    };
    let checks = run_all(&r.lines, &ctx);
    for name in [THINK_CARD, HEARTBEAT, COMPLETE] {
        assert!(!by_name(&checks, name).passed, "{name}");
    }
}

#[test]
fn an_update_of_a_tool_call_never_started_is_not_output() {
    // a client shows nothing for it (box-agent 0.9.7's activity updates at once): the turn
    // still waited for its card
    let mut r = Rec::new();
    r.tcu(2.0, "activity-1", Some("pending"))
        .message(2600.0, "x")
        .end(2700.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    for name in [THINK_CARD, HEARTBEAT, COMPLETE] {
        assert!(!by_name(&checks, name).passed, "{name}");
    }
    // an update of a tool call started before it is output
    let mut r = Rec::new();
    r.tool(1.0, "c1", "read", "pending")
        .tcu(2.0, "c1", Some("completed"))
        .message(3.0, "x")
        .end(5.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    assert!(
        by_name(&checks, THINK_CARD)
            .summary
            .starts_with("no card needed")
    );
}

#[test]
fn an_answer_after_the_limit_without_a_card_still_fails() {
    let mut r = Rec::new();
    r.message(251.0, "x").end(260.0, "end_turn");
    let checks = run_all(&r.lines, &CheckContext::default());
    for name in [THINK_CARD, HEARTBEAT, COMPLETE] {
        assert!(!by_name(&checks, name).passed, "{name}");
    }
}

#[test]
fn a_card_after_the_answer_began_fails_unless_a_tool_call_finished_before_it() {
    // the grace's card opening late, after the first chunk
    let mut r = Rec::new();
    r.message(3.0, "hi")
        .card(60.0, "t", "think", None)
        .tcu(61.0, "t", Some("completed"))
        .end(70.0, "end_turn");
    let ups = turn_updates(&r.lines, &TurnFrame::find(&r.lines));
    let c = think_card(&ups, &CheckContext::default());
    assert!(!c.passed, "{c:?}");
    assert!(
        c.summary.contains("after the turn's first real update"),
        "{c:?}"
    );

    // a tool call answered at once, then a gap card in the silence after it
    let mut r = Rec::new();
    r.tool(5.0, "c1", "read", "in_progress")
        .tcu(10.0, "c1", Some("completed"))
        .card(600.0, "t", "think", None)
        .tcu(900.0, "t", Some("completed"))
        .message(901.0, "done")
        .end(910.0, "end_turn");
    let ups = turn_updates(&r.lines, &TurnFrame::find(&r.lines));
    let c = think_card(&ups, &CheckContext::default());
    assert!(c.passed, "{c:?}");
}
