//! What the stream looks like: one thought block, a clean stdout.

use super::super::wire::{Direction, RawLine, Update, content_block_text, truncate};
use super::card::ms;
use super::{CLEAN_STDOUT, Check, ONE_THOUGHT_BLOCK};
use serde_json::Value;

/// No thought chunk after message text of the same model answer. A real tool call starts a
/// new answer (the model thinks again after the result), so each stretch between tool calls
/// is judged on its own.
pub fn one_thought_block(ups: &[Update]) -> Check {
    let thoughts = ups
        .iter()
        .filter(|u| u.tag == "agent_thought_chunk")
        .count();
    let messages = ups
        .iter()
        .filter(|u| u.tag == "agent_message_chunk")
        .count();
    let mut first_msg: Option<&Update> = None;
    let mut seen_msg = false;
    let mut late: Vec<&Update> = Vec::new();
    for u in ups {
        match u.tag.as_str() {
            "tool_call" if u.kind() != Some("think") => seen_msg = false,
            "agent_message_chunk" => {
                seen_msg = true;
                first_msg.get_or_insert(u);
            }
            "agent_thought_chunk" if seen_msg => late.push(u),
            _ => {}
        }
    }
    let mut c = Check::new(
        ONE_THOUGHT_BLOCK,
        late.is_empty(),
        if late.is_empty() {
            format!("{thoughts} thought chunk(s), none after message text ({messages} message chunk(s))")
        } else {
            format!(
                "{} thought chunk(s) after message text (first message chunk at {}): the thought block is split",
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
