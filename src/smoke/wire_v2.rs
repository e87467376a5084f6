//! Protocol v2's wire read the way the checks read v1: the checks judge a turn that ends with
//! the prompt's response, a card that opens with a `tool_call`. In v2 a tool call is created by
//! its first `tool_call_update`, the prompt's response only says it was accepted, and the turn
//! is the session's foreground work, ending when a `state_update` goes idle after running.
//! The report keeps the raw lines; only the checks, the transcript and the timeline see this.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::wire::{Direction, RawLine, line_session};

/// What is known of one session while reading.
#[derive(Default)]
struct Session {
    /// The id of its prompt request whose turn is in progress.
    prompt: Option<Value>,
    /// Foreground work was reported since that prompt.
    ran: bool,
    /// Tool call ids created so far.
    tool_calls: HashSet<String>,
}

/// The v2 recording as v1 lines: a tool call's first update is its `tool_call`; the prompt's
/// acceptance is dropped and the idle that ends the turn's work answers the prompt (its stop
/// reason, or the error an `error` stop reason carries).
pub fn as_v1(lines: &[RawLine]) -> Vec<RawLine> {
    let mut sessions: HashMap<String, Session> = HashMap::new();
    let mut prompt_ids: Vec<Value> = Vec::new();
    let mut out = Vec::with_capacity(lines.len());
    for l in lines {
        let Some(mut v) = l.json() else {
            out.push(l.clone());
            continue;
        };
        let method = v.get("method").and_then(Value::as_str).map(str::to_string);
        match (l.dir, method.as_deref()) {
            (Direction::Out, Some("session/prompt")) => {
                if let (Some(sid), Some(id)) = (line_session(&v), v.get("id")) {
                    let s = sessions.entry(sid.to_string()).or_default();
                    s.prompt = Some(id.clone());
                    s.ran = false;
                    prompt_ids.push(id.clone());
                }
                out.push(l.clone());
            }
            // the acceptance of a prompt is not its turn's end (a refusal is)
            (Direction::In, None)
                if v.get("result").is_some()
                    && v.get("id").is_some_and(|id| prompt_ids.contains(id)) => {}
            (Direction::In, Some("session/update")) => {
                let sid = line_session(&v).unwrap_or_default().to_string();
                let s = sessions.entry(sid).or_default();
                let update = &mut v["params"]["update"];
                match update.get("sessionUpdate").and_then(Value::as_str) {
                    Some("tool_call_update") => {
                        let id = update
                            .get("toolCallId")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string();
                        if s.tool_calls.insert(id) {
                            update["sessionUpdate"] = json!("tool_call");
                            out.push(RawLine::new(l.dir, l.t_ms, v.to_string()));
                        } else {
                            out.push(l.clone());
                        }
                    }
                    Some("state_update") => {
                        out.push(l.clone());
                        match update.get("state").and_then(Value::as_str) {
                            Some("running" | "requires_action") => s.ran = s.prompt.is_some(),
                            Some("idle") if s.ran => {
                                let id = s.prompt.take().unwrap_or(Value::Null);
                                s.ran = false;
                                let answer = match update.get("stopReason") {
                                    Some(r) if r == "error" => json!({"jsonrpc": "2.0", "id": id,
                                        "error": update.get("error").cloned().unwrap_or(json!({"code": -32603, "message": "stopReason error"}))}),
                                    r => json!({"jsonrpc": "2.0", "id": id,
                                        "result": {"stopReason": r.cloned().unwrap_or(Value::Null)}}),
                                };
                                out.push(RawLine::new(l.dir, l.t_ms, answer.to_string()));
                            }
                            _ => {}
                        }
                    }
                    _ => out.push(l.clone()),
                }
            }
            _ => out.push(l.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(dir: Direction, t: f64, v: Value) -> RawLine {
        RawLine::new(dir, t, v.to_string())
    }

    fn up(t: f64, update: Value) -> RawLine {
        line(
            Direction::In,
            t,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":update}}),
        )
    }

    #[test]
    fn a_v2_turn_reads_as_a_v1_turn() {
        let lines = vec![
            up(-5.0, json!({"sessionUpdate":"state_update","state":"idle"})),
            line(
                Direction::Out,
                0.0,
                json!({"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}),
            ),
            line(
                Direction::In,
                1.0,
                json!({"jsonrpc":"2.0","id":7,"result":{"messageId":"m1"}}),
            ),
            up(
                2.0,
                json!({"sessionUpdate":"state_update","state":"running"}),
            ),
            up(
                3.0,
                json!({"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"think","status":"in_progress","title":"Thinking..."}),
            ),
            up(
                900.0,
                json!({"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}),
            ),
            up(
                901.0,
                json!({"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"hi"}}),
            ),
            up(
                950.0,
                json!({"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}),
            ),
        ];
        let v1 = as_v1(&lines);
        let texts: Vec<Value> = v1.iter().map(|l| l.json().unwrap()).collect();
        // the acceptance is gone, the idle answers the prompt
        assert_eq!(v1.len(), lines.len());
        assert!(!texts.iter().any(|v| v["result"]["messageId"] == "m1"));
        assert_eq!(texts[3]["params"]["update"]["sessionUpdate"], "tool_call");
        assert_eq!(
            texts[4]["params"]["update"]["sessionUpdate"],
            "tool_call_update"
        );
        assert_eq!(
            texts[7],
            json!({"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}})
        );
        assert_eq!(v1[7].t_ms, 950.0);
        let frame = super::super::wire::TurnFrame::find(&v1);
        assert_eq!(frame.stop_reason(), Some("end_turn"));
    }
}
