//! The turn on one time axis: prompt, think cards (with heartbeats), gap cards, tool calls,
//! thought and message chunks, the model calls and the answer — as marks taken from the raw
//! lines; the HTML report draws them (`output/smoke/svg.rs`).

use serde::Serialize;
use serde_json::Value;

use super::llm::LlmRequest;
use super::wire::{Direction, RawLine, TurnFrame, session_updates};

/// One point in time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Mark {
    /// `prompt`, `cancel`, `answer`, `card_open`, `gap_card_open`, `heartbeat`,
    /// `card_complete`, `tool_start`, `tool_update`, `tool_done`, `thought`, `message`,
    /// `llm_request`.
    pub kind: &'static str,
    pub t_ms: f64,
    /// The tool call (card) id, for tool marks.
    pub id: Option<String>,
    pub label: String,
}

/// A stretch of time: a card open, a tool call running, a model call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Span {
    /// `card`, `gap_card`, `tool`, `llm`.
    pub kind: &'static str,
    pub from_ms: f64,
    pub to_ms: f64,
    pub label: String,
}

/// The timeline of one session.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timeline {
    pub marks: Vec<Mark>,
    pub spans: Vec<Span>,
    /// The last time on the axis.
    pub end_ms: f64,
}

impl Timeline {
    /// From a session's lines (times relative to its prompt) and the model calls it made
    /// (times relative to the same prompt).
    pub fn from_lines(lines: &[RawLine], llm: &[LlmRequest]) -> Self {
        let mut t = Timeline::default();
        let frame = TurnFrame::find(lines);
        if let Some(i) = frame.prompt_index {
            t.mark("prompt", lines[i].t_ms, None, "session/prompt sent".into());
        }
        for l in lines {
            if l.dir == Direction::Out
                && l.json().is_some_and(|v| {
                    v.get("method").and_then(Value::as_str) == Some("session/cancel")
                })
            {
                t.mark("cancel", l.t_ms, None, "session/cancel sent".into());
            }
        }
        if let Some(i) = frame.response_index {
            let what = match frame.stop_reason() {
                Some(s) => format!("answer: stopReason {s}"),
                None => "answer: an error".into(),
            };
            t.mark("answer", lines[i].t_ms, None, what);
        }
        // tool calls by id: kind, open time, status
        struct Open {
            id: String,
            think: bool,
            gap: bool,
            from: f64,
            title: String,
        }
        let mut open: Vec<Open> = Vec::new();
        let mut cards_seen = 0usize;
        for u in session_updates(lines) {
            let id = u.tool_call_id().map(str::to_string);
            match u.tag.as_str() {
                "agent_thought_chunk" => t.mark("thought", u.t_ms, None, chunk_label(&u.update)),
                "agent_message_chunk" => t.mark("message", u.t_ms, None, chunk_label(&u.update)),
                "tool_call" => {
                    let Some(id) = id else { continue };
                    let title = u
                        .update
                        .get("title")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let think = u.kind() == Some("think");
                    if open.iter().any(|o| o.id == id) {
                        continue;
                    }
                    let gap = think && cards_seen > 0;
                    if think {
                        cards_seen += 1;
                    }
                    let kind = match (think, gap) {
                        (true, false) => "card_open",
                        (true, true) => "gap_card_open",
                        _ => "tool_start",
                    };
                    t.mark(kind, u.t_ms, Some(id.clone()), format!("{title} ({id})"));
                    if matches!(u.status(), Some("completed") | Some("failed")) {
                        t.mark(
                            if think { "card_complete" } else { "tool_done" },
                            u.t_ms,
                            Some(id.clone()),
                            format!("{id} {}", u.status().unwrap_or_default()),
                        );
                    }
                    open.push(Open {
                        id,
                        think,
                        gap,
                        from: u.t_ms,
                        title,
                    });
                }
                "tool_call_update" => {
                    let Some(id) = id else { continue };
                    let Some(o) = open.iter().find(|o| o.id == id) else {
                        continue;
                    };
                    let status = u.status().unwrap_or_default();
                    let done = matches!(status, "completed" | "failed");
                    let kind = match (o.think, done) {
                        (true, true) => "card_complete",
                        (true, false) => "heartbeat",
                        (false, true) => "tool_done",
                        (false, false) => "tool_update",
                    };
                    // a heartbeat is an in_progress update of a card; other card updates
                    // without a status are drawn as heartbeats too (the card is alive)
                    t.mark(
                        kind,
                        u.t_ms,
                        Some(id.clone()),
                        format!("{id} {}", if status.is_empty() { "update" } else { status }),
                    );
                    if done {
                        let span_kind = match (o.think, o.gap) {
                            (true, false) => "card",
                            (true, true) => "gap_card",
                            _ => "tool",
                        };
                        let (from, title) = (o.from, o.title.clone());
                        t.spans.push(Span {
                            kind: span_kind,
                            from_ms: from,
                            to_ms: u.t_ms,
                            label: format!("{title} ({id}): {status}"),
                        });
                        open.retain(|x| x.id != id);
                    }
                }
                _ => {}
            }
        }
        let last = lines.last().map(|l| l.t_ms).unwrap_or(0.0);
        // cards and tools still open run to the end of the axis
        for o in open {
            let kind = match (o.think, o.gap) {
                (true, false) => "card",
                (true, true) => "gap_card",
                _ => "tool",
            };
            t.spans.push(Span {
                kind,
                from_ms: o.from,
                to_ms: last,
                label: format!("{} ({}): never closed", o.title, o.id),
            });
        }
        for q in llm {
            let to = q.done_ms.unwrap_or(last).max(q.t_ms);
            t.mark(
                "llm_request",
                q.t_ms,
                None,
                format!("{} {} ({}): {}", q.method, q.path, q.kind, q.answer),
            );
            t.spans.push(Span {
                kind: "llm",
                from_ms: q.t_ms,
                to_ms: to,
                label: format!("{} {}: {}", q.method, q.path, q.answer),
            });
        }
        t.end_ms = t
            .marks
            .iter()
            .map(|m| m.t_ms)
            .chain(t.spans.iter().map(|s| s.to_ms))
            .chain([last])
            .fold(0.0, f64::max);
        t.marks.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
        t
    }

    fn mark(&mut self, kind: &'static str, t_ms: f64, id: Option<String>, label: String) {
        self.marks.push(Mark {
            kind,
            t_ms,
            id,
            label,
        });
    }

    /// How many marks of a kind.
    pub fn count(&self, kind: &str) -> usize {
        self.marks.iter().filter(|m| m.kind == kind).count()
    }
}

fn chunk_label(update: &Value) -> String {
    let text = update
        .get("content")
        .map(super::wire::content_block_text)
        .unwrap_or_default();
    super::wire::truncate(&text, 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smoke::wire::test_lines::Rec;

    #[test]
    fn marks_follow_the_lines() {
        let mut r = Rec::new();
        r.card(3.0, "think-1", "think", None)
            .tcu(1003.0, "think-1", Some("in_progress"))
            .tcu(2500.0, "think-1", Some("completed"))
            .thought(2501.0, "hmm")
            .tool(2600.0, "call_1", "read", "pending")
            .tcu(2650.0, "call_1", Some("completed"))
            .card(3200.0, "think-2", "think", Some("in_progress"))
            .tcu(4600.0, "think-2", Some("completed"))
            .message(4601.0, "Answer")
            .end(4700.0, "end_turn");
        let t = Timeline::from_lines(&r.lines, &[]);
        let kinds: Vec<(&str, f64)> = t.marks.iter().map(|m| (m.kind, m.t_ms)).collect();
        assert_eq!(
            kinds,
            vec![
                ("prompt", 0.0),
                ("card_open", 3.0),
                ("heartbeat", 1003.0),
                ("card_complete", 2500.0),
                ("thought", 2501.0),
                ("tool_start", 2600.0),
                ("tool_done", 2650.0),
                ("gap_card_open", 3200.0),
                ("card_complete", 4600.0),
                ("message", 4601.0),
                ("answer", 4700.0),
            ]
        );
        let spans: Vec<(&str, f64, f64)> = t
            .spans
            .iter()
            .map(|s| (s.kind, s.from_ms, s.to_ms))
            .collect();
        assert_eq!(
            spans,
            vec![
                ("card", 3.0, 2500.0),
                ("tool", 2600.0, 2650.0),
                ("gap_card", 3200.0, 4600.0)
            ]
        );
        assert_eq!(t.end_ms, 4700.0);
    }
}
