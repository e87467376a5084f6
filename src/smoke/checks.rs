//! The checks, as pure functions over the recorded raw lines.
//!
//! Every check is judged on the raw JSON the agent wrote (the SDK's typed view is lenient).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::wire::{
    Direction, RawLine, TurnFrame, Update, content_block_text, truncate, turn_updates,
};

/// Names of the checks, in report order.
pub const THINK_CARD: &str = "think_card";
pub const HEARTBEAT: &str = "heartbeat";
pub const COMPLETE: &str = "complete";
pub const ONE_THOUGHT_BLOCK: &str = "one_thought_block";
pub const CLEAN_STDOUT: &str = "clean_stdout";
pub const WELL_FORMED_TOOL_CALLS: &str = "well_formed_tool_calls";
pub const TURN_ENDS: &str = "turn_ends";

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    pub passed: bool,
    /// One line saying what was found.
    pub summary: String,
    /// Supporting details (quoted lines, ids, times).
    pub evidence: Vec<String>,
    /// Numbers behind the verdict (times in ms, counts).
    pub figures: BTreeMap<String, f64>,
}

impl Check {
    fn new(name: &str, passed: bool, summary: impl Into<String>) -> Self {
        Self {
            name: name.to_string(),
            passed,
            summary: summary.into(),
            evidence: Vec::new(),
            figures: BTreeMap::new(),
        }
    }
    fn fig(mut self, k: &str, v: f64) -> Self {
        self.figures
            .insert(k.to_string(), (v * 10.0).round() / 10.0);
        self
    }
    fn ev(mut self, e: impl Into<String>) -> Self {
        self.evidence.push(e.into());
        self
    }
}

/// What the checks need besides the lines.
#[derive(Debug, Clone)]
pub struct CheckContext {
    /// The heartbeat interval the agent was given, in seconds.
    pub heartbeat_s: f64,
    /// The think card must arrive within this many ms of the prompt.
    pub think_card_max_ms: f64,
    /// Why there is no prompt response, when there is none (timeout, agent exit...).
    pub no_response_note: Option<String>,
}

impl Default for CheckContext {
    fn default() -> Self {
        Self {
            heartbeat_s: 1.0,
            think_card_max_ms: 250.0,
            no_response_note: None,
        }
    }
}

/// Runs every check over the recording.
pub fn run_all(lines: &[RawLine], ctx: &CheckContext) -> Vec<Check> {
    let frame = TurnFrame::find(lines);
    let ups = turn_updates(lines, &frame);
    vec![
        think_card(&ups, ctx),
        heartbeat(lines, &frame, &ups, ctx),
        complete(&ups),
        one_thought_block(&ups),
        clean_stdout(lines),
        well_formed_tool_calls(&ups),
        turn_ends(lines, &frame, ctx),
    ]
}

fn find_card(ups: &[Update]) -> Option<&Update> {
    ups.iter()
        .find(|u| u.tag == "tool_call" && u.kind() == Some("think"))
}

fn first_chunk(ups: &[Update]) -> Option<&Update> {
    ups.iter().find(|u| u.is_chunk())
}

fn ms(v: f64) -> String {
    format!("{v:.0} ms")
}

/// A `tool_call` with `kind: "think"` before any chunk, within the limit of the prompt.
pub fn think_card(ups: &[Update], ctx: &CheckContext) -> Check {
    let chunk = first_chunk(ups);
    let Some(card) = find_card(ups) else {
        let mut c = Check::new(
            THINK_CARD,
            false,
            "no tool_call with kind \"think\" in the turn",
        );
        for u in ups.iter().filter(|u| u.tag == "tool_call") {
            c = c.ev(format!(
                "tool_call {} kind={} title={:?} at {}",
                u.tool_call_id().unwrap_or("?"),
                u.kind()
                    .map(|k| format!("{k:?}"))
                    .unwrap_or_else(|| "(none: other)".into()),
                u.update.get("title").and_then(Value::as_str).unwrap_or(""),
                ms(u.t_ms)
            ));
        }
        if let Some(ch) = chunk {
            c = c
                .ev(format!("first {} at {}", ch.tag, ms(ch.t_ms)))
                .fig("first_chunk_ms", ch.t_ms);
        }
        return c;
    };
    let before_chunk = chunk.is_none_or(|ch| card.index < ch.index);
    let in_time = card.t_ms <= ctx.think_card_max_ms;
    let mut summary = format!(
        "think card {:?} at {} after the prompt (limit {})",
        card.tool_call_id().unwrap_or("?"),
        ms(card.t_ms),
        ms(ctx.think_card_max_ms)
    );
    if !before_chunk {
        summary.push_str(", but only after the first chunk");
    } else if !in_time {
        summary.push_str(", too late");
    }
    let mut c = Check::new(THINK_CARD, before_chunk && in_time, summary)
        .fig("latency_ms", card.t_ms)
        .fig("limit_ms", ctx.think_card_max_ms);
    if let Some(ch) = chunk {
        c = c
            .ev(format!("first {} at {}", ch.tag, ms(ch.t_ms)))
            .fig("first_chunk_ms", ch.t_ms);
    }
    c.ev(format!(
        "title {:?}, status {}",
        card.update
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(""),
        card.status().unwrap_or("(none: pending)")
    ))
}

/// Minimum number of heartbeats expected during a wait of `wait_ms`.
pub fn expected_heartbeats(wait_ms: f64, interval_s: f64) -> u64 {
    let interval_ms = interval_s * 1000.0;
    if interval_ms <= 0.0 || wait_ms <= 0.0 {
        return 0;
    }
    let n = (wait_ms / interval_ms).floor() as i64 - 1;
    let n = n.max(0) as u64;
    if wait_ms > 1.5 * interval_ms {
        n.max(1)
    } else {
        n
    }
}

/// In-progress updates of the card while waiting for the first chunk.
pub fn heartbeat(
    lines: &[RawLine],
    frame: &TurnFrame,
    ups: &[Update],
    ctx: &CheckContext,
) -> Check {
    let Some(card) = find_card(ups) else {
        return Check::new(HEARTBEAT, false, "no think card, so no heartbeat");
    };
    let id = card.tool_call_id().unwrap_or_default();
    let (end_index, end_ms, end_what) = match first_chunk(ups) {
        Some(ch) => (ch.index, ch.t_ms, "first chunk"),
        None => match frame.response_index {
            Some(i) => (i, lines[i].t_ms, "prompt response"),
            None => (
                lines.len(),
                lines.last().map(|l| l.t_ms).unwrap_or(card.t_ms),
                "end of recording",
            ),
        },
    };
    let beats: Vec<&Update> = ups
        .iter()
        .filter(|u| {
            u.tag == "tool_call_update"
                && u.tool_call_id() == Some(id)
                && u.status() == Some("in_progress")
                && u.index > card.index
                && u.index < end_index
        })
        .collect();
    let wait_ms = (end_ms - card.t_ms).max(0.0);
    let expected = expected_heartbeats(wait_ms, ctx.heartbeat_s);
    let mut stamps: Vec<f64> = vec![card.t_ms];
    stamps.extend(beats.iter().map(|b| b.t_ms));
    stamps.push(end_ms);
    let max_gap = stamps.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    let passed = beats.len() as u64 >= expected;
    let c = Check::new(
        HEARTBEAT,
        passed,
        format!(
            "{} in_progress update(s) of the card during a {} wait for the {} (expected at least {}, interval {} s)",
            beats.len(),
            ms(wait_ms),
            end_what,
            expected,
            ctx.heartbeat_s
        ),
    )
    .fig("count", beats.len() as f64)
    .fig("expected_min", expected as f64)
    .fig("wait_ms", wait_ms)
    .fig("interval_ms", ctx.heartbeat_s * 1000.0)
    .fig("max_gap_ms", max_gap);
    if beats.is_empty() {
        c
    } else {
        c.ev(format!(
            "heartbeats at {}",
            beats
                .iter()
                .map(|b| ms(b.t_ms))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// The card is completed no later than the first chunk.
pub fn complete(ups: &[Update]) -> Check {
    let Some(card) = find_card(ups) else {
        return Check::new(COMPLETE, false, "no think card to complete");
    };
    let id = card.tool_call_id().unwrap_or_default();
    let chunk = first_chunk(ups);
    let terminal = ups.iter().find(|u| {
        u.index >= card.index
            && u.tool_call_id() == Some(id)
            && matches!(u.status(), Some("completed") | Some("failed"))
    });
    let last_status = ups
        .iter()
        .filter(|u| u.tool_call_id() == Some(id))
        .filter_map(|u| u.status())
        .next_back()
        .unwrap_or("pending");
    let Some(done) = terminal else {
        let mut c = Check::new(
            COMPLETE,
            false,
            format!("the think card is never completed (last status {last_status})"),
        );
        if let Some(ch) = chunk {
            c = c.fig("first_chunk_ms", ch.t_ms);
        }
        return c;
    };
    let status = done.status().unwrap_or_default();
    let in_time = chunk.is_none_or(|ch| done.index < ch.index);
    let mut c = Check::new(
        COMPLETE,
        status == "completed" && in_time,
        match (status, in_time) {
            ("completed", true) => format!("card completed at {}", ms(done.t_ms)),
            ("completed", false) => {
                format!("card completed at {}, after the first chunk", ms(done.t_ms))
            }
            _ => format!(
                "card marked {status} at {} instead of completed",
                ms(done.t_ms)
            ),
        },
    )
    .fig("complete_ms", done.t_ms);
    if let Some(ch) = chunk {
        c = c
            .fig("first_chunk_ms", ch.t_ms)
            .ev(format!("first {} at {}", ch.tag, ms(ch.t_ms)));
    }
    c
}

/// No thought chunk after the first message chunk.
pub fn one_thought_block(ups: &[Update]) -> Check {
    let thoughts = ups
        .iter()
        .filter(|u| u.tag == "agent_thought_chunk")
        .count();
    let messages = ups
        .iter()
        .filter(|u| u.tag == "agent_message_chunk")
        .count();
    let first_msg = ups.iter().find(|u| u.tag == "agent_message_chunk");
    let late: Vec<&Update> = match first_msg {
        Some(m) => ups
            .iter()
            .filter(|u| u.tag == "agent_thought_chunk" && u.index > m.index)
            .collect(),
        None => Vec::new(),
    };
    let mut c = Check::new(
        ONE_THOUGHT_BLOCK,
        late.is_empty(),
        if late.is_empty() {
            format!("{thoughts} thought chunk(s), none after the first of {messages} message chunk(s)")
        } else {
            format!(
                "{} thought chunk(s) after the first message chunk (at {}): the thought block is split",
                late.len(),
                ms(first_msg.map(|m| m.t_ms).unwrap_or_default())
            )
        },
    )
    .fig("thought_chunks", thoughts as f64)
    .fig("message_chunks", messages as f64)
    .fig("thought_after_message", late.len() as f64);
    for u in late.iter().take(3) {
        let text = u
            .update
            .get("content")
            .map(content_block_text)
            .unwrap_or_default();
        c = c.ev(format!(
            "agent_thought_chunk at {}: {:?}",
            ms(u.t_ms),
            truncate(&text, 80)
        ));
    }
    c
}

/// Why a stdout line is not a single JSON-RPC 2.0 message (None when it is one).
pub fn jsonrpc_problem(text: &str) -> Option<String> {
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => return Some("not JSON".into()),
    };
    let Some(obj) = v.as_object() else {
        return Some(if v.is_array() {
            "a batch (array), not one message".into()
        } else {
            "JSON but not an object".into()
        });
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some("no \"jsonrpc\":\"2.0\"".into());
    }
    match obj.get("method") {
        Some(Value::String(_)) => None,
        Some(_) => Some("method is not a string".into()),
        None => {
            if !obj.contains_key("id") {
                return Some("neither a request, a notification nor a response".into());
            }
            match (obj.contains_key("result"), obj.contains_key("error")) {
                (true, false) | (false, true) => None,
                (true, true) => Some("response with both result and error".into()),
                (false, false) => Some("response with neither result nor error".into()),
            }
        }
    }
}

/// Every stdout line is a single JSON-RPC 2.0 message.
pub fn clean_stdout(lines: &[RawLine]) -> Check {
    let incoming: Vec<(usize, &RawLine)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.dir == Direction::In)
        .collect();
    let bad: Vec<(usize, &RawLine, String)> = incoming
        .iter()
        .filter_map(|(i, l)| jsonrpc_problem(&l.text).map(|p| (*i, *l, p)))
        .collect();
    let mut c = Check::new(
        CLEAN_STDOUT,
        bad.is_empty(),
        if bad.is_empty() {
            format!(
                "all {} stdout line(s) are JSON-RPC 2.0 messages",
                incoming.len()
            )
        } else {
            format!(
                "{} of {} stdout line(s) are not JSON-RPC messages",
                bad.len(),
                incoming.len()
            )
        },
    )
    .fig("lines", incoming.len() as f64)
    .fig("offending", bad.len() as f64);
    for (i, l, why) in bad.iter().take(5) {
        c = c.ev(format!(
            "line {} at {} ({why}): {:?}",
            i + 1,
            ms(l.t_ms),
            truncate(&l.text, 160)
        ));
    }
    c
}

fn status_rank(s: &str) -> Option<u8> {
    match s {
        "pending" => Some(0),
        "in_progress" => Some(1),
        "completed" | "failed" => Some(2),
        _ => None,
    }
}

/// Updates name started ids, statuses never go backwards, all calls end completed or failed.
pub fn well_formed_tool_calls(ups: &[Update]) -> Check {
    let mut status: Vec<(String, String)> = Vec::new(); // id -> current status, in start order
    let mut problems: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut n_updates = 0usize;
    for u in ups
        .iter()
        .filter(|u| u.tag == "tool_call" || u.tag == "tool_call_update")
    {
        let Some(id) = u.tool_call_id() else {
            problems.push(format!("{} without toolCallId at {}", u.tag, ms(u.t_ms)));
            continue;
        };
        let known = status.iter().position(|(k, _)| k == id);
        let new_status = match (u.status(), u.tag.as_str()) {
            (Some(s), _) => Some(s.to_string()),
            (None, "tool_call") if known.is_none() => Some("pending".to_string()),
            _ => None,
        };
        if let Some(s) = &new_status
            && status_rank(s).is_none()
        {
            problems.push(format!("{id}: unknown status {s:?} at {}", ms(u.t_ms)));
            continue;
        }
        match (u.tag.as_str(), known) {
            ("tool_call", None) => {
                status.push((
                    id.to_string(),
                    new_status.unwrap_or_else(|| "pending".into()),
                ));
                continue;
            }
            ("tool_call", Some(_)) => {
                notes.push(format!(
                    "note: {id} announced again by a tool_call at {}",
                    ms(u.t_ms)
                ));
            }
            ("tool_call_update", None) => {
                n_updates += 1;
                problems.push(format!(
                    "tool_call_update for {id:?} at {} names no started tool call",
                    ms(u.t_ms)
                ));
                continue;
            }
            _ => n_updates += 1,
        }
        let k = known.expect("known");
        if let Some(s) = new_status {
            let old = status[k].1.clone();
            let (ro, rn) = (status_rank(&old).unwrap_or(0), status_rank(&s).unwrap_or(0));
            if rn < ro || (ro == 2 && old != s) {
                problems.push(format!(
                    "{id}: status goes back from {old} to {s} at {}",
                    ms(u.t_ms)
                ));
            }
            status[k].1 = s;
        }
    }
    for (id, s) in &status {
        if status_rank(s) != Some(2) {
            problems.push(format!("{id}: still {s} when the turn ends"));
        }
    }
    let mut c = Check::new(
        WELL_FORMED_TOOL_CALLS,
        problems.is_empty(),
        if problems.is_empty() {
            format!(
                "{} tool call(s), {} update(s), all well-formed and finished",
                status.len(),
                n_updates
            )
        } else {
            format!(
                "{} problem(s) in {} tool call(s)",
                problems.len(),
                status.len()
            )
        },
    )
    .fig("tool_calls", status.len() as f64)
    .fig("updates", n_updates as f64)
    .fig("problems", problems.len() as f64);
    for p in problems.iter().take(8).chain(notes.iter().take(3)) {
        c = c.ev(p.clone());
    }
    c
}

/// The prompt response arrives with stopReason `end_turn`.
pub fn turn_ends(lines: &[RawLine], frame: &TurnFrame, ctx: &CheckContext) -> Check {
    if frame.prompt_index.is_none() {
        return Check::new(TURN_ENDS, false, "no session/prompt was sent");
    }
    let Some(ri) = frame.response_index else {
        let why = ctx
            .no_response_note
            .clone()
            .unwrap_or_else(|| "no response to session/prompt".into());
        return Check::new(TURN_ENDS, false, format!("the turn never ended: {why}"));
    };
    let t = lines[ri].t_ms;
    let resp = frame.response.as_ref().expect("response");
    let c = if let Some(err) = resp.get("error") {
        Check::new(
            TURN_ENDS,
            false,
            format!(
                "session/prompt failed at {}: {}",
                ms(t),
                truncate(&err.to_string(), 200)
            ),
        )
    } else {
        match frame.stop_reason() {
            Some("end_turn") => {
                Check::new(TURN_ENDS, true, format!("stopReason end_turn at {}", ms(t)))
            }
            Some(other) => Check::new(
                TURN_ENDS,
                false,
                format!("stopReason {other:?} at {} (expected end_turn)", ms(t)),
            ),
            None => Check::new(
                TURN_ENDS,
                false,
                format!(
                    "prompt response without stopReason at {}: {}",
                    ms(t),
                    truncate(&lines[ri].text, 200)
                ),
            ),
        }
    };
    c.fig("response_ms", t)
}

#[cfg(test)]
mod tests {
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
}
