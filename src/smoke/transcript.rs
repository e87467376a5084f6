//! The turn as a client shows it: message text, thought text and tool calls merged by
//! `toolCallId` (see the tool-call-blocks plan). Pure: built from the recorded raw lines.

use serde::Serialize;
use serde_json::Value;

use super::wire::{RawLine, TurnFrame, Update, content_block_text, truncate, turn_updates};

/// One block under the agent bubble, in order of first appearance.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Consecutive `agent_message_chunk`s.
    Message { text: String, first_ms: f64 },
    /// Consecutive `agent_thought_chunk`s.
    Thought { text: String, first_ms: f64 },
    /// A tool call; `index` points into [`Transcript::tool_calls`].
    Tool { index: usize },
}

/// A tool call merged over its `tool_call` and `tool_call_update`s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallView {
    pub id: String,
    pub kind: String,
    pub title: String,
    /// The latest status (a `tool_call` without one reads as `pending`).
    pub status: String,
    /// Every status reported, in order (the implied `pending` included).
    pub status_history: Vec<String>,
    /// Text of the latest `content`, cut short.
    pub content_preview: String,
    pub first_ms: f64,
    pub last_ms: f64,
    /// Number of `tool_call_update`s merged in.
    pub updates: usize,
    /// True when the first thing seen for this id was an update (never started).
    pub orphan: bool,
}

impl ToolCallView {
    pub fn icon(&self) -> &'static str {
        status_icon(&self.status)
    }
}

/// ○ pending, ⟳ in_progress, ✓ completed, ✗ failed, ? anything else.
pub fn status_icon(status: &str) -> &'static str {
    match status {
        "pending" => "○",
        "in_progress" => "⟳",
        "completed" => "✓",
        "failed" => "✗",
        _ => "?",
    }
}

/// The whole turn, merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Transcript {
    pub blocks: Vec<Block>,
    pub tool_calls: Vec<ToolCallView>,
    /// All message text of the turn.
    pub message_text: String,
    /// All thought text of the turn.
    pub thought_text: String,
    /// Other `sessionUpdate` tags seen (plan, usage_update, ...), with counts.
    pub other_updates: Vec<(String, usize)>,
}

impl Transcript {
    /// Builds the transcript of the turn from the raw lines.
    pub fn from_lines(lines: &[RawLine]) -> Self {
        let frame = TurnFrame::find(lines);
        Self::from_updates(&turn_updates(lines, &frame))
    }

    pub fn from_updates(updates: &[Update]) -> Self {
        let mut t = Transcript::default();
        for u in updates {
            match u.tag.as_str() {
                "agent_message_chunk" | "agent_thought_chunk" => {
                    let text = u
                        .update
                        .get("content")
                        .map(content_block_text)
                        .unwrap_or_default();
                    let is_msg = u.tag == "agent_message_chunk";
                    if is_msg {
                        t.message_text.push_str(&text);
                    } else {
                        t.thought_text.push_str(&text);
                    }
                    match (t.blocks.last_mut(), is_msg) {
                        (Some(Block::Message { text: acc, .. }), true)
                        | (Some(Block::Thought { text: acc, .. }), false) => acc.push_str(&text),
                        _ => t.blocks.push(if is_msg {
                            Block::Message {
                                text,
                                first_ms: u.t_ms,
                            }
                        } else {
                            Block::Thought {
                                text,
                                first_ms: u.t_ms,
                            }
                        }),
                    }
                }
                "tool_call" | "tool_call_update" => t.merge_tool(u),
                other => match t.other_updates.iter_mut().find(|(k, _)| k == other) {
                    Some((_, n)) => *n += 1,
                    None => t.other_updates.push((other.to_string(), 1)),
                },
            }
        }
        t
    }

    fn merge_tool(&mut self, u: &Update) {
        let Some(id) = u.tool_call_id() else { return };
        let is_start = u.tag == "tool_call";
        let idx = match self.tool_calls.iter().position(|c| c.id == id) {
            Some(i) => i,
            None => {
                self.tool_calls.push(ToolCallView {
                    id: id.to_string(),
                    kind: "other".into(),
                    title: String::new(),
                    status: "pending".into(),
                    status_history: Vec::new(),
                    content_preview: String::new(),
                    first_ms: u.t_ms,
                    last_ms: u.t_ms,
                    updates: 0,
                    orphan: !is_start,
                });
                self.blocks.push(Block::Tool {
                    index: self.tool_calls.len() - 1,
                });
                self.tool_calls.len() - 1
            }
        };
        let c = &mut self.tool_calls[idx];
        c.last_ms = u.t_ms;
        if !is_start {
            c.updates += 1;
        }
        if let Some(k) = u.kind() {
            c.kind = k.to_string();
        }
        if let Some(title) = u.update.get("title").and_then(Value::as_str) {
            c.title = title.to_string();
        }
        let status = match (u.status(), is_start) {
            (Some(s), _) => Some(s.to_string()),
            (None, true) => Some("pending".to_string()),
            (None, false) => None,
        };
        if let Some(s) = status {
            c.status = s.clone();
            c.status_history.push(s);
        }
        if let Some(content) = u.update.get("content").and_then(Value::as_array) {
            c.content_preview = truncate(&content_preview(content), 200);
        } else if c.content_preview.is_empty()
            && let Some(out) = u.update.get("rawOutput")
        {
            c.content_preview = truncate(&out.to_string(), 200);
        }
    }

    /// The tool call with the given id.
    pub fn tool(&self, id: &str) -> Option<&ToolCallView> {
        self.tool_calls.iter().find(|c| c.id == id)
    }
}

/// Text of a tool call `content` array: text blocks, diffs and terminals.
fn content_preview(content: &[Value]) -> String {
    content
        .iter()
        .map(|item| match item.get("type").and_then(Value::as_str) {
            Some("content") => item
                .get("content")
                .map(content_block_text)
                .unwrap_or_default(),
            Some("diff") => format!(
                "diff {}",
                item.get("path").and_then(Value::as_str).unwrap_or("?")
            ),
            Some("terminal") => format!(
                "terminal {}",
                item.get("terminalId")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            ),
            _ => item.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smoke::wire::test_lines::Rec;
    use serde_json::json;

    #[test]
    fn merges_tool_calls_by_id_and_keeps_order() {
        let mut r = Rec::new();
        r.card(1.0, "think", "think", None)
            .tcu(900.0, "think", Some("in_progress"))
            .update(
                950.0,
                json!({"sessionUpdate":"tool_call","toolCallId":"read-1","title":"Read a.txt","kind":"read","status":"in_progress"}),
            )
            .tcu(1000.0, "think", Some("completed"))
            .thought(1001.0, "Let me ")
            .thought(1002.0, "think.")
            .update(
                1100.0,
                json!({"sessionUpdate":"tool_call_update","toolCallId":"read-1","status":"completed",
                       "content":[{"type":"content","content":{"type":"text","text":"hello file"}}]}),
            )
            .message(1200.0, "Hi ")
            .message(1201.0, "there")
            .end(1300.0, "end_turn");
        let t = Transcript::from_lines(&r.lines);
        assert_eq!(t.tool_calls.len(), 2);
        let think = t.tool("think").unwrap();
        assert_eq!(think.kind, "think");
        assert_eq!(think.status, "completed");
        assert_eq!(
            think.status_history,
            vec!["pending", "in_progress", "completed"]
        );
        assert_eq!(think.first_ms, 1.0);
        assert_eq!(think.last_ms, 1000.0);
        assert_eq!(think.updates, 2);
        assert_eq!(think.icon(), "✓");
        let read = t.tool("read-1").unwrap();
        assert_eq!(read.content_preview, "hello file");
        assert_eq!(read.title, "Read a.txt");
        assert_eq!(
            t.blocks,
            vec![
                Block::Tool { index: 0 },
                Block::Tool { index: 1 },
                Block::Thought {
                    text: "Let me think.".into(),
                    first_ms: 1001.0
                },
                Block::Message {
                    text: "Hi there".into(),
                    first_ms: 1200.0
                },
            ]
        );
        assert_eq!(t.message_text, "Hi there");
        assert_eq!(t.thought_text, "Let me think.");
    }

    #[test]
    fn missing_status_on_tool_call_reads_as_pending_and_kind_as_other() {
        let mut r = Rec::new();
        r.update(
            5.0,
            json!({"sessionUpdate":"tool_call","toolCallId":"x","title":"Something"}),
        );
        r.tcu(6.0, "x", None); // an update without status keeps the status
        let t = Transcript::from_lines(&r.lines);
        let x = t.tool("x").unwrap();
        assert_eq!(x.status, "pending");
        assert_eq!(x.kind, "other");
        assert_eq!(x.icon(), "○");
        assert_eq!(x.status_history, vec!["pending"]);
    }

    #[test]
    fn status_follows_updates_in_order_even_backwards() {
        let mut r = Rec::new();
        r.card(1.0, "a", "think", Some("in_progress"))
            .tcu(2.0, "a", Some("failed"))
            .tcu(3.0, "a", Some("in_progress"));
        let t = Transcript::from_lines(&r.lines);
        let a = t.tool("a").unwrap();
        assert_eq!(a.status, "in_progress");
        assert_eq!(a.icon(), "⟳");
        assert_eq!(
            a.status_history,
            vec!["in_progress", "failed", "in_progress"]
        );
    }

    #[test]
    fn split_thought_blocks_stay_split_and_orphans_are_marked() {
        let mut r = Rec::new();
        r.thought(1.0, "a").message(2.0, "b").thought(3.0, "c").tcu(
            4.0,
            "ghost",
            Some("completed"),
        );
        let t = Transcript::from_lines(&r.lines);
        assert_eq!(t.blocks.len(), 4);
        assert!(matches!(t.blocks[2], Block::Thought { .. }));
        assert!(t.tool("ghost").unwrap().orphan);
    }

    #[test]
    fn lines_before_the_prompt_and_after_the_response_are_not_part_of_the_turn() {
        let mut r = Rec::new();
        r.message(1.0, "in")
            .end(2.0, "end_turn")
            .message(3.0, "late");
        let t = Transcript::from_lines(&r.lines);
        assert_eq!(t.message_text, "in");
    }
}
