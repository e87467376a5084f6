//! The smoke machinery's modes — a tool-call turn, a cancel, two sessions at once — on the
//! hand-written agents of fixtures/smoke/ in each dialect of the scripted LLM: the "patched"
//! agent passes every check, the unpatched one fails exactly the checks it should. Plus the
//! hostile agents that each new check must catch.

use crate::smoke::{Run, assert_group_gone, fixtures, smoke};

/// (patched folder, unpatched folder, the dialect's path)
const DIALECTS: &[(&str, &str, &str, &str)] = &[
    ("openai-chat", "good", "unpatched", "/v1/chat/completions"),
    (
        "openai-responses",
        "good_responses",
        "unpatched_responses",
        "/v1/responses",
    ),
    (
        "anthropic-messages",
        "good_anthropic",
        "unpatched_anthropic",
        "/v1/messages",
    ),
];

const BASE: &[&str] = &[
    "think_card",
    "heartbeat",
    "complete",
    "one_thought_block",
    "answer_intact",
    "clean_stdout",
    "cards_well_formed",
    "turn_ends",
];

/// The checks of a run in report order: the patch's (BASE, the mode's, no_trace), then the
/// findings about the agent (its tool calls; the scripted one's lifecycle in a tool turn).
fn with(
    extra: &[&'static str],
    last: &[&'static str],
    findings: &[&'static str],
) -> Vec<&'static str> {
    let mut v: Vec<&str> = BASE.to_vec();
    v.extend(extra);
    v.extend(last);
    v.push("no_trace");
    v.push("well_formed_tool_calls");
    v.extend(findings);
    v
}

fn dialect(name: &str) -> (&'static str, &'static str, &'static str) {
    let d = DIALECTS.iter().find(|d| d.0 == name).unwrap();
    (d.1, d.2, d.3)
}

fn every_request_used(r: &Run, path: &str) {
    for q in r.report["llm_requests"].as_array().unwrap() {
        assert_eq!(q["path"], path, "{q}");
        assert_eq!(q["status"], 200, "{q}");
    }
}

const TOOL: &[&str] = &[
    "--tool-call",
    "--prompt",
    "Read notes.txt and summarise it.",
    "--delay-s",
    "1.5",
];

fn tool_turn(name: &str) {
    let (good, unpatched, path) = dialect(name);
    let r = smoke(&fixtures().join(good), TOOL);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    r.assert_checks(&with(&["gap_card"], &[], &["tool_lifecycle"]));
    r.assert_failing(&[]);
    every_request_used(&r, path);
    let reqs = r.report["llm_requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 2, "{}", r.stdout);
    assert_eq!(reqs[1]["carries_seed"], true);
    // the read tool call, as a block by its id, between the first card and the gap card
    let calls = r.report["transcript"]["tool_calls"].as_array().unwrap();
    let kinds: Vec<&str> = calls.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["think", "read", "think"]);
    assert_eq!(calls[1]["id"], "call_smoke_1");
    assert_eq!(
        calls[1]["status_history"],
        serde_json::json!(["pending", "in_progress", "completed"])
    );
    let open_after = r.fig("gap_card", "open_after_ms");
    assert!((400.0..=750.0).contains(&open_after), "{open_after}");
    assert!(r.stdout.contains("[tool] ✓ read"), "{}", r.stdout);
    assert_group_gone(&r);

    let r = smoke(&fixtures().join(unpatched), TOOL);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    r.assert_failing(&[
        "think_card",
        "heartbeat",
        "complete",
        "one_thought_block",
        "gap_card",
    ]);
    let gap = r.check("gap_card")["summary"].as_str().unwrap();
    assert!(gap.contains("no think card in the"), "{gap}");
    assert_group_gone(&r);
}

fn cancel(name: &str) {
    let (good, unpatched, path) = dialect(name);
    let args = ["--cancel-after", "400"];
    let r = smoke(&fixtures().join(good), &args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    r.assert_checks(&with(
        &["cards_closed_on_cancel", "quiet_after_cancel"],
        &[],
        &[],
    ));
    r.assert_failing(&[]);
    assert_eq!(r.report["stop_reason"], "cancelled");
    every_request_used(&r, path);
    // the model call was abandoned when the cancel came (long before the scripted answer)
    let call = &r.report["llm_requests"][0];
    assert_eq!(call["closed_early"], true);
    let gone = call["done_ms"].as_f64().unwrap();
    assert!((390.0..1500.0).contains(&gone), "{call}");
    let answer = r.fig("turn_ends", "response_ms");
    assert!((390.0..1500.0).contains(&answer), "{answer}");
    assert_group_gone(&r);

    let r = smoke(&fixtures().join(unpatched), &args);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    r.assert_failing(&["think_card", "heartbeat", "complete"]);
    assert_eq!(r.report["stop_reason"], "cancelled");
    assert_group_gone(&r);
}

fn two_sessions(name: &str) {
    let (good, unpatched, path) = dialect(name);
    let args = ["--sessions", "2"];
    let r = smoke(&fixtures().join(good), &args);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    r.assert_checks(&with(&[], &["sessions_isolated"], &[]));
    r.assert_failing(&[]);
    every_request_used(&r, path);
    let sessions = r.report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2);
    for (k, s) in sessions.iter().enumerate() {
        let n = k + 1;
        let text = s["transcript"]["message_text"].as_str().unwrap();
        assert_eq!(text, format!("Here is the answer: 42. [session {n}]"));
        let cards: Vec<&serde_json::Value> = s["transcript"]["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == "think")
            .collect();
        assert_eq!(cards.len(), 1, "session {n}");
        assert_eq!(cards[0]["status"], "completed");
        assert!(r.fig("heartbeat", &format!("s{n}.count")) >= 1.0);
        assert!(r.fig("think_card", &format!("s{n}.latency_ms")) <= 250.0);
        // one model call each, told apart by the prompt's marker
        let mine = r.report["llm_requests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|q| q["session"] == n)
            .count();
        assert_eq!(mine, 1, "session {n}");
    }
    assert_ne!(sessions[0]["session_id"], sessions[1]["session_id"]);
    assert_group_gone(&r);

    let r = smoke(&fixtures().join(unpatched), &args);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    r.assert_failing(&["think_card", "heartbeat", "complete", "one_thought_block"]);
    assert_group_gone(&r);
}

#[test]
fn chat_tool_call_turn() {
    tool_turn("openai-chat");
}
#[test]
fn chat_cancel() {
    cancel("openai-chat");
}
#[test]
fn chat_two_sessions() {
    two_sessions("openai-chat");
}
#[test]
fn responses_tool_call_turn() {
    tool_turn("openai-responses");
}
#[test]
fn responses_cancel() {
    cancel("openai-responses");
}
#[test]
fn responses_two_sessions() {
    two_sessions("openai-responses");
}
#[test]
fn anthropic_tool_call_turn() {
    tool_turn("anthropic-messages");
}
#[test]
fn anthropic_cancel() {
    cancel("anthropic-messages");
}
#[test]
fn anthropic_two_sessions() {
    two_sessions("anthropic-messages");
}

#[test]
fn an_older_patch_without_gap_cards_fails_gap_card_only() {
    let r = smoke(&fixtures().join("no_gap"), &[]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    r.assert_failing(&["gap_card"]);
    let s = r.check("gap_card")["summary"].as_str().unwrap();
    assert!(s.contains("no think card in the"), "{s}");
    assert_group_gone(&r);
}

#[test]
fn a_sloppy_cancel_leaves_its_card_open_and_keeps_talking() {
    let r = smoke(
        &fixtures().join("sloppy_cancel"),
        &["--cancel-after", "400"],
    );
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    r.assert_failing(&[
        "complete",
        "answer_intact",
        "cards_well_formed",
        "cards_closed_on_cancel",
        "quiet_after_cancel",
    ]);
    let a = r.check("answer_intact")["summary"].as_str().unwrap();
    assert!(a.contains("message chunk(s) after the turn ended"), "{a}");
    assert!(r.fig("quiet_after_cancel", "late_updates") >= 3.0);
    assert_group_gone(&r);
}

#[test]
fn crossed_sessions_are_caught() {
    let r = smoke(&fixtures().join("crossed"), &["--sessions", "2"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(!r.passed("sessions_isolated"), "{}", r.stdout);
    let ev = r.check("sessions_isolated")["evidence"].to_string();
    assert!(ev.contains("shows session"), "{ev}");
    assert_group_gone(&r);
}

#[test]
fn the_agent_runs_with_only_loopback() {
    // as root the run gets a network namespace of its own: the scripted LLM is reachable,
    // an address outside is not (the agent logs what it saw)
    let r = smoke(&fixtures().join("net_probe"), &["--delay-s", "0.3"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let network = r.report["network"].as_str().unwrap();
    let stderr = r.report["stderr_tail"].to_string();
    if network.contains("only loopback") {
        assert!(
            stderr.contains("network probe: OSError: Network is unreachable"),
            "{stderr}"
        );
    } else {
        eprintln!("not isolated here: {network}");
    }
    let r = smoke(
        &fixtures().join("net_probe"),
        &["--delay-s", "0.3", "--network", "host"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(r.report["network"].as_str().unwrap().contains("host"));
}

#[test]
fn a_text_hold_that_drops_doubles_or_reorders_the_answer_fails_answer_intact() {
    for (folder, what) in [
        ("hold_drop", "no message text reached the client"),
        ("hold_double", "text was added or doubled"),
        ("hold_reorder", "text was reordered or changed"),
    ] {
        let r = smoke(&fixtures().join(folder), &["--delay-s", "0.5"]);
        assert_eq!(r.code, 1, "{folder}: {}\n{}", r.stdout, r.stderr);
        r.assert_failing(&["answer_intact"]);
        let c = r.check("answer_intact");
        assert!(
            c["summary"].as_str().unwrap().contains(what),
            "{folder}: {c}"
        );
        assert!(
            c["evidence"][0]
                .as_str()
                .unwrap()
                .contains("the model sent: \"Here is the answer: 42.\""),
            "{folder}: {c}"
        );
        assert_eq!(
            r.report["llm_requests"][0]["text_sent"],
            "Here is the answer: 42."
        );
        assert_group_gone(&r);
    }
}

#[test]
fn whole_answers_not_streamed_arrive_intact_in_every_dialect() {
    for (name, ..) in DIALECTS {
        let (good, _, path) = dialect(name);
        let r = smoke(
            &fixtures().join(good),
            &["--env", "LLM_STREAM=0", "--tool-call", "--delay-s", "0.5"],
        );
        assert_eq!(r.code, 0, "{name}: {}\n{}", r.stdout, r.stderr);
        r.assert_failing(&[]);
        every_request_used(&r, path);
        let reqs = r.report["llm_requests"].as_array().unwrap();
        assert_eq!(reqs.len(), 2, "{name}: {}", r.stdout);
        assert!(reqs.iter().all(|q| q["stream"] == false), "{name}");
        assert_eq!(reqs[1]["text_sent"], "Here is the answer: 42.");
        assert_eq!(r.fig("answer_intact", "model_calls"), 2.0);
        assert_eq!(r.fig("answer_intact", "message_chunks"), 1.0);
        assert_group_gone(&r);
    }
}
