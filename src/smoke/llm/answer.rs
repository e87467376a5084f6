//! What the scripted model says, independent of the wire format each dialect gives it.

use serde_json::Value;

/// One piece of a model answer; each is streamed as one delta.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Reasoning(String),
    Text(String),
    /// A call of one of the tools the request offered.
    Tool {
        id: String,
        name: String,
        /// The arguments as the JSON text the model would stream.
        arguments: String,
    },
}

/// A whole answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub parts: Vec<Part>,
    pub model: String,
}

impl Answer {
    /// Whether the answer ends by asking for a tool (finish reason `tool_calls` / `tool_use`).
    pub fn calls_tool(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Tool { .. }))
    }

    /// Consecutive parts of one kind, as one block (an Anthropic content block, a Responses
    /// output item); each tool call is a block of its own.
    pub fn blocks(&self) -> Vec<Block<'_>> {
        let mut out: Vec<Block<'_>> = Vec::new();
        for p in &self.parts {
            match (out.last_mut(), p) {
                (Some(Block::Reasoning(d)), Part::Reasoning(t))
                | (Some(Block::Text(d)), Part::Text(t)) => d.push(t),
                (_, Part::Reasoning(t)) => out.push(Block::Reasoning(vec![t])),
                (_, Part::Text(t)) => out.push(Block::Text(vec![t])),
                (
                    _,
                    Part::Tool {
                        id,
                        name,
                        arguments,
                    },
                ) => out.push(Block::Tool {
                    id,
                    name,
                    arguments,
                }),
            }
        }
        out
    }

    /// All reasoning text.
    pub fn reasoning_text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Reasoning(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }

    /// All answer text.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// A run of same-kind parts (deltas), or one tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum Block<'a> {
    Reasoning(Vec<&'a str>),
    Text(Vec<&'a str>),
    Tool {
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
}

/// When a frame goes out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    /// At once (framing: starts, stops, the finish).
    None,
    /// After the scripted wait: the first delta.
    Wait,
    /// After the delay between deltas.
    Chunk,
}

/// One SSE event, ready to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    pub text: String,
    pub pause: Pause,
    /// The answer text the frame carries (a text delta), which a client should show.
    pub answer_text: Option<String>,
}

impl Frame {
    pub fn new(text: String, pause: Pause) -> Self {
        Self {
            text,
            pause,
            answer_text: None,
        }
    }
}

/// A streamed answer: what opens it (sent at once), the deltas and block framing, and what
/// closes it (left out when the script fails mid-stream).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stream {
    pub frames: Vec<Frame>,
    pub closing: Vec<Frame>,
}

impl Stream {
    fn waited(&self) -> bool {
        self.frames.iter().any(|f| f.pause == Pause::Wait)
    }
    /// A delta: the first content of the answer comes after the wait, later deltas after the
    /// delay between deltas.
    pub fn push_delta(&mut self, text: String) {
        let pause = if self.waited() {
            Pause::Chunk
        } else {
            Pause::Wait
        };
        self.frames.push(Frame::new(text, pause));
    }
    /// A delta of answer text (`answer` is what it carries), timed as [`Self::push_delta`].
    pub fn push_text_delta(&mut self, text: String, answer: &str) {
        self.push_delta(text);
        if let Some(f) = self.frames.last_mut() {
            f.answer_text = Some(answer.to_string());
        }
    }
    /// The start of a content block (an Anthropic `content_block_start`, a Responses
    /// `output_item.added`): content too, so the first one comes after the wait (a client
    /// may show an empty chunk for it), later ones at once.
    pub fn push_start(&mut self, text: String) {
        let pause = if self.waited() {
            Pause::None
        } else {
            Pause::Wait
        };
        self.frames.push(Frame::new(text, pause));
    }
    pub fn push(&mut self, text: String) {
        self.frames.push(Frame::new(text, Pause::None));
    }
    pub fn close(&mut self, text: String) {
        self.closing.push(Frame::new(text, Pause::None));
    }
}

/// Ids and times an answer carries.
#[derive(Debug, Clone)]
pub struct Ids {
    /// The request number (1-based), in every id.
    pub n: u64,
    /// Unix seconds.
    pub created: u64,
    /// The request asked for token usage at the end of the stream (chat's
    /// `stream_options.include_usage`).
    pub include_usage: bool,
}

/// What a request says about itself, read the dialect's way.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestFacts {
    pub stream: bool,
    pub model: Option<String>,
    /// Messages (or input items) in the request.
    pub messages: usize,
    /// Names of the tools the request offers.
    pub tools: Vec<String>,
    /// Tool results in the history (role `tool`, `function_call_output`, `tool_result`).
    pub tool_results: usize,
    /// Chat's `stream_options.include_usage`.
    pub include_usage: bool,
    /// The text of the last tool result in the history.
    pub last_tool_result: Option<String>,
}

/// The text of a tool result's content: a string, or the text of its blocks.
pub fn result_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .map(|b| {
                b.get("text")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| result_text(b))
            })
            .collect::<Vec<_>>()
            .join(""),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Whether any string in the JSON value contains `needle`.
pub fn any_string_contains(v: &Value, needle: &str) -> bool {
    match v {
        Value::String(s) => s.contains(needle),
        Value::Array(a) => a.iter().any(|x| any_string_contains(x, needle)),
        Value::Object(o) => o.values().any(|x| any_string_contains(x, needle)),
        _ => false,
    }
}

/// The number after the first `marker` in any string of the value (`[smoke session 2]`).
pub fn find_number_after(v: &Value, marker: &str) -> Option<u32> {
    match v {
        Value::String(s) => {
            let i = s.find(marker)? + marker.len();
            let digits: String = s[i..].chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        }
        Value::Array(a) => a.iter().find_map(|x| find_number_after(x, marker)),
        Value::Object(o) => o.values().find_map(|x| find_number_after(x, marker)),
        _ => None,
    }
}

/// A rough token count for usage figures (4 bytes a token).
pub fn rough_tokens(s: &str) -> u64 {
    (s.len() as u64).div_ceil(4).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_group_runs_and_split_tools() {
        let a = Answer {
            parts: vec![
                Part::Reasoning("a".into()),
                Part::Reasoning("b".into()),
                Part::Text("c".into()),
                Part::Reasoning("d".into()),
                Part::Tool {
                    id: "t".into(),
                    name: "n".into(),
                    arguments: "{}".into(),
                },
            ],
            model: "m".into(),
        };
        let b = a.blocks();
        assert_eq!(b.len(), 4);
        assert_eq!(b[0], Block::Reasoning(vec!["a", "b"]));
        assert_eq!(b[1], Block::Text(vec!["c"]));
        assert!(a.calls_tool());
        assert_eq!(a.reasoning_text(), "abd");
        assert_eq!(a.text(), "c");
    }

    #[test]
    fn string_search_walks_the_json() {
        let v = json!({"messages": [{"content": [{"text": "hi [smoke session 12] there"}]}]});
        assert!(any_string_contains(&v, "session 12"));
        assert!(!any_string_contains(&v, "nope"));
        assert_eq!(find_number_after(&v, "[smoke session "), Some(12));
        assert_eq!(find_number_after(&json!("x"), "[smoke session "), None);
    }
}
