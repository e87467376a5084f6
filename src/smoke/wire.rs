//! The recorded wire: raw lines with their direction and time, and read-only views of them.
//!
//! Everything the checks and the transcript judge comes from these raw lines, never from the
//! SDK's typed view (which is lenient: unknown kinds become `other`, unknown updates vanish).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which way a line travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Agent stdout → client.
    In,
    /// Client → agent stdin.
    Out,
}

/// One raw line, as written on the pipe (without its newline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RawLine {
    pub dir: Direction,
    /// Milliseconds since `session/prompt` was sent (negative before it).
    pub t_ms: f64,
    pub text: String,
}

impl RawLine {
    pub fn new(dir: Direction, t_ms: f64, text: impl Into<String>) -> Self {
        Self {
            dir,
            t_ms,
            text: text.into(),
        }
    }

    /// Parses the line as JSON (None when it is not JSON).
    pub fn json(&self) -> Option<Value> {
        serde_json::from_str(&self.text).ok()
    }
}

/// A `session/update` notification from the agent.
#[derive(Debug, Clone)]
pub struct Update {
    /// Index of the line in the recording.
    pub index: usize,
    pub t_ms: f64,
    /// The `sessionUpdate` tag.
    pub tag: String,
    /// The `update` object.
    pub update: Value,
}

impl Update {
    pub fn tool_call_id(&self) -> Option<&str> {
        self.update.get("toolCallId").and_then(Value::as_str)
    }
    pub fn status(&self) -> Option<&str> {
        self.update.get("status").and_then(Value::as_str)
    }
    pub fn kind(&self) -> Option<&str> {
        self.update.get("kind").and_then(Value::as_str)
    }
    pub fn is_chunk(&self) -> bool {
        self.tag == "agent_message_chunk" || self.tag == "agent_thought_chunk"
    }
}

/// Where the turn sits in the recording.
#[derive(Debug, Clone, Default)]
pub struct TurnFrame {
    /// Index of the outgoing `session/prompt` request.
    pub prompt_index: Option<usize>,
    /// Its JSON-RPC id.
    pub prompt_id: Option<Value>,
    /// Index of the agent's response to it.
    pub response_index: Option<usize>,
    /// The response itself.
    pub response: Option<Value>,
}

impl TurnFrame {
    pub fn find(lines: &[RawLine]) -> Self {
        let mut frame = TurnFrame::default();
        for (i, line) in lines.iter().enumerate() {
            if line.dir != Direction::Out {
                continue;
            }
            if let Some(v) = line.json()
                && v.get("method").and_then(Value::as_str) == Some("session/prompt")
            {
                frame.prompt_index = Some(i);
                frame.prompt_id = v.get("id").cloned();
            }
        }
        if let (Some(pi), Some(id)) = (frame.prompt_index, frame.prompt_id.as_ref()) {
            for (i, line) in lines.iter().enumerate().skip(pi + 1) {
                if line.dir != Direction::In {
                    continue;
                }
                if let Some(v) = line.json()
                    && v.get("method").is_none()
                    && v.get("id") == Some(id)
                    && (v.get("result").is_some() || v.get("error").is_some())
                {
                    frame.response_index = Some(i);
                    frame.response = Some(v);
                    break;
                }
            }
        }
        frame
    }

    /// The index one past the last line of the turn.
    pub fn end(&self, lines: &[RawLine]) -> usize {
        self.response_index.unwrap_or(lines.len())
    }

    /// `stopReason` of a successful response.
    pub fn stop_reason(&self) -> Option<&str> {
        self.response
            .as_ref()?
            .get("result")?
            .get("stopReason")?
            .as_str()
    }
}

/// Every `session/update` from the agent, in order.
pub fn session_updates(lines: &[RawLine]) -> Vec<Update> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.dir == Direction::In)
        .filter_map(|(i, l)| {
            let v = l.json()?;
            if v.get("method").and_then(Value::as_str) != Some("session/update") {
                return None;
            }
            let update = v.get("params")?.get("update")?.clone();
            let tag = update.get("sessionUpdate")?.as_str()?.to_string();
            Some(Update {
                index: i,
                t_ms: l.t_ms,
                tag,
                update,
            })
        })
        .collect()
}

/// The `session/update`s of the turn: after the prompt, up to its response.
pub fn turn_updates(lines: &[RawLine], frame: &TurnFrame) -> Vec<Update> {
    let start = frame.prompt_index.map(|i| i + 1).unwrap_or(0);
    let end = frame.end(lines);
    session_updates(lines)
        .into_iter()
        .filter(|u| u.index >= start && u.index < end)
        .collect()
}

/// The text of a content block (`{"type":"text","text":..}`), or a short tag for other kinds.
pub fn content_block_text(block: &Value) -> String {
    match block.get("type").and_then(Value::as_str) {
        Some("text") => block
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        Some(other) => format!("[{other}]"),
        None => String::new(),
    }
}

/// Cuts `s` to at most `max` characters, marking the cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max).collect();
        out.push('…');
        out
    }
}

#[cfg(test)]
pub(crate) mod test_lines {
    //! Builders for synthetic recordings.
    use super::*;
    use serde_json::json;

    pub struct Rec {
        pub lines: Vec<RawLine>,
    }

    impl Rec {
        pub fn new() -> Self {
            let mut r = Rec { lines: Vec::new() };
            r.lines.push(RawLine::new(
                Direction::Out,
                0.0,
                json!({"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"s","prompt":[]}}).to_string(),
            ));
            r
        }
        pub fn update(&mut self, t: f64, update: Value) -> &mut Self {
            self.lines.push(RawLine::new(
                Direction::In,
                t,
                json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":update}}).to_string(),
            ));
            self
        }
        pub fn card(&mut self, t: f64, id: &str, kind: &str, status: Option<&str>) -> &mut Self {
            let mut u = json!({"sessionUpdate":"tool_call","toolCallId":id,"title":"Thinking...","kind":kind});
            if let Some(s) = status {
                u["status"] = json!(s);
            }
            self.update(t, u)
        }
        pub fn tcu(&mut self, t: f64, id: &str, status: Option<&str>) -> &mut Self {
            let mut u = json!({"sessionUpdate":"tool_call_update","toolCallId":id});
            if let Some(s) = status {
                u["status"] = json!(s);
            }
            self.update(t, u)
        }
        pub fn thought(&mut self, t: f64, text: &str) -> &mut Self {
            self.update(
                t,
                json!({"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":text}}),
            )
        }
        pub fn message(&mut self, t: f64, text: &str) -> &mut Self {
            self.update(
                t,
                json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":text}}),
            )
        }
        pub fn raw(&mut self, t: f64, text: &str) -> &mut Self {
            self.lines
                .push(RawLine::new(Direction::In, t, text.to_string()));
            self
        }
        pub fn end(&mut self, t: f64, stop: &str) -> &mut Self {
            self.lines.push(RawLine::new(
                Direction::In,
                t,
                json!({"jsonrpc":"2.0","id":"p1","result":{"stopReason":stop}}).to_string(),
            ));
            self
        }
    }
}
