//! Agents good and bad: what the run reports and how it ends.

use super::*;

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
