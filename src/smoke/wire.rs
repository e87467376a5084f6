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

/// The `params.sessionId` of a request or notification line.
pub fn line_session(v: &Value) -> Option<&str> {
    v.get("params")?.get("sessionId")?.as_str()
}

/// The session ids of the run, in the order their `session/new` was answered.
pub fn session_ids(lines: &[RawLine]) -> Vec<String> {
    let mut new_ids: Vec<Value> = Vec::new();
    let mut out = Vec::new();
    for l in lines {
        let Some(v) = l.json() else { continue };
        match l.dir {
            Direction::Out if v.get("method").and_then(Value::as_str) == Some("session/new") => {
                if let Some(id) = v.get("id") {
                    new_ids.push(id.clone());
                }
            }
            Direction::In if v.get("method").is_none() => {
                if let Some(id) = v.get("id")
                    && new_ids.contains(id)
                    && let Some(sid) = v
                        .get("result")
                        .and_then(|r| r.get("sessionId"))
                        .and_then(Value::as_str)
                {
                    out.push(sid.to_string());
                }
            }
            _ => {}
        }
    }
    out
}

/// The lines of one session, re-timed so that its `session/prompt` is at 0: its requests
/// and notifications both ways, and the responses to them.
pub fn session_view(lines: &[RawLine], session_id: &str) -> Vec<RawLine> {
    // ids of requests of this session, per direction of the request
    let mut out_ids: Vec<Value> = Vec::new();
    let mut in_ids: Vec<Value> = Vec::new();
    let mut keep: Vec<&RawLine> = Vec::new();
    for l in lines {
        let Some(v) = l.json() else { continue };
        if v.get("method").is_some() {
            if line_session(&v) == Some(session_id) {
                if let Some(id) = v.get("id") {
                    match l.dir {
                        Direction::Out => out_ids.push(id.clone()),
                        Direction::In => in_ids.push(id.clone()),
                    }
                }
                keep.push(l);
            }
        } else if let Some(id) = v.get("id") {
            let asked = match l.dir {
                Direction::In => &out_ids,
                Direction::Out => &in_ids,
            };
            if asked.contains(id) {
                keep.push(l);
            }
        }
    }
    let t0 = keep
        .iter()
        .find(|l| {
            l.dir == Direction::Out
                && l.json().is_some_and(|v| {
                    v.get("method").and_then(Value::as_str) == Some("session/prompt")
                })
        })
        .map(|l| l.t_ms)
        .unwrap_or(0.0);
    keep.into_iter()
        .map(|l| RawLine::new(l.dir, ((l.t_ms - t0) * 10.0).round() / 10.0, l.text.clone()))
        .collect()
}

/// Every `session/update` of the recording with the session it names.
pub fn updates_with_session(lines: &[RawLine]) -> Vec<(Option<String>, Update)> {
    let mut out = Vec::new();
    for u in session_updates(lines) {
        let sid = lines[u.index]
            .json()
            .and_then(|v| line_session(&v).map(str::to_string));
        out.push((sid, u));
    }
    out
}

/// Real turn output: what completes a think card (not bookkeeping, not the card itself, not an
/// update of a tool call `ups` never started before it, which a client has nothing to show
/// for). `ups` are the updates `u` is one of.
pub fn is_real_output(u: &Update, ups: &[Update]) -> bool {
    let started = |id: &str| {
        ups.iter()
            .find(|c| c.tag == "tool_call" && c.tool_call_id() == Some(id))
    };
    match u.tag.as_str() {
        "agent_message_chunk" | "agent_thought_chunk" | "plan" => true,
        "tool_call" => u.kind() != Some("think"),
        "tool_call_update" => u
            .tool_call_id()
            .and_then(started)
            .is_some_and(|c| c.index < u.index && c.kind() != Some("think")),
        _ => false,
    }
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
        pub fn tool(&mut self, t: f64, id: &str, kind: &str, status: &str) -> &mut Self {
            self.update(
                t,
                json!({"sessionUpdate":"tool_call","toolCallId":id,"title":"Read notes.txt","kind":kind,"status":status}),
            )
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
