//! The turn on one time axis: prompt, think cards (with heartbeats), gap cards, tool calls,
//! thought and message chunks, the model calls and the answer — as marks taken from the raw
//! lines, drawn as an inline SVG (no script). Every mark carries `data-kind` and `data-t-ms`,
//! and the SVG its scale (`data-x0`, `data-ms-per-px`), so the picture can be checked against
//! the transcript.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use super::llm::LlmRequest;
use super::print::esc;
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

/// Geometry of the drawing.
pub const WIDTH: f64 = 960.0;
pub const X0: f64 = 120.0;
const RIGHT: f64 = 20.0;
const ROW: f64 = 26.0;
const TOP: f64 = 24.0;

/// The rows, top to bottom: (row name, mark kinds drawn in it, span kinds drawn in it).
const ROWS: &[(&str, &[&str], &[&str])] = &[
    ("prompt / answer", &["prompt", "cancel", "answer"], &[]),
    (
        "think cards",
        &["card_open", "gap_card_open", "heartbeat", "card_complete"],
        &["card", "gap_card"],
    ),
    (
        "tool calls",
        &["tool_start", "tool_update", "tool_done"],
        &["tool"],
    ),
    ("thought", &["thought"], &[]),
    ("message", &["message"], &[]),
    ("model calls", &["llm_request"], &["llm"]),
];

fn colour(kind: &str) -> &'static str {
    match kind {
        "prompt" | "answer" => "#222",
        "cancel" => "#c0392b",
        "card_open" | "card_complete" | "card" => "#b7791f",
        "gap_card_open" | "gap_card" => "#d69e2e",
        "heartbeat" => "#975a16",
        "tool_start" | "tool_update" | "tool_done" | "tool" => "#2b6cb0",
        "thought" => "#718096",
        "message" => "#1a7f37",
        _ => "#805ad5",
    }
}

/// Milliseconds per pixel for an axis ending at `end_ms`.
pub fn ms_per_px(end_ms: f64) -> f64 {
    let span = end_ms.max(100.0) * 1.02;
    span / (WIDTH - X0 - RIGHT)
}

/// The inline SVG of one session's timeline.
pub fn svg(t: &Timeline, title: &str) -> String {
    let scale = ms_per_px(t.end_ms);
    let x = |ms: f64| X0 + ms.max(0.0) / scale;
    let height = TOP + ROW * ROWS.len() as f64 + 30.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" role=\"img\" aria-label=\"{}\" data-x0=\"{X0}\" data-ms-per-px=\"{scale:.6}\" data-end-ms=\"{:.1}\">",
        esc(title),
        t.end_ms
    );
    let _ = write!(s, "<title>{}</title>", esc(title));
    // rows
    for (i, (name, _, _)) in ROWS.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        let _ = write!(
            s,
            "<text x=\"4\" y=\"{:.1}\" font-size=\"12\" fill=\"#444\">{}</text><line x1=\"{X0}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#eee\"/>",
            y + 16.0,
            esc(name),
            y + ROW,
            WIDTH - RIGHT,
            y + ROW
        );
    }
    // the axis, with ticks every second (or 100 ms for short turns)
    let axis_y = TOP + ROW * ROWS.len() as f64 + 4.0;
    let _ = write!(
        s,
        "<line x1=\"{X0}\" y1=\"{axis_y:.1}\" x2=\"{:.1}\" y2=\"{axis_y:.1}\" stroke=\"#999\"/>",
        WIDTH - RIGHT
    );
    let step = if t.end_ms > 20_000.0 {
        5000.0
    } else if t.end_ms > 2_000.0 {
        1000.0
    } else {
        100.0
    };
    let mut tick = 0.0;
    while tick <= t.end_ms * 1.02 {
        let tx = x(tick);
        let _ = write!(
            s,
            "<line x1=\"{tx:.1}\" y1=\"{axis_y:.1}\" x2=\"{tx:.1}\" y2=\"{:.1}\" stroke=\"#999\"/><text x=\"{tx:.1}\" y=\"{:.1}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#666\">{}</text>",
            axis_y + 4.0,
            axis_y + 16.0,
            if step >= 1000.0 {
                format!("{} s", tick / 1000.0)
            } else {
                format!("{tick} ms")
            }
        );
        tick += step;
    }
    for (i, (_, mark_kinds, span_kinds)) in ROWS.iter().enumerate() {
        let y = TOP + ROW * i as f64;
        for sp in t.spans.iter().filter(|sp| span_kinds.contains(&sp.kind)) {
            let (x1, x2) = (x(sp.from_ms), x(sp.to_ms));
            let _ = write!(
                s,
                "<rect class=\"span {}\" data-kind=\"{}\" data-from-ms=\"{:.1}\" data-to-ms=\"{:.1}\" x=\"{x1:.2}\" y=\"{:.1}\" width=\"{:.2}\" height=\"10\" rx=\"2\" fill=\"{}\" fill-opacity=\"0.3\"><title>{}</title></rect>",
                sp.kind,
                sp.kind,
                sp.from_ms,
                sp.to_ms,
                y + 8.0,
                (x2 - x1).max(1.0),
                colour(sp.kind),
                esc(&format!(
                    "{:.0}–{:.0} ms: {}",
                    sp.from_ms, sp.to_ms, sp.label
                ))
            );
        }
        for m in t.marks.iter().filter(|m| mark_kinds.contains(&m.kind)) {
            let mx = x(m.t_ms);
            let (y1, y2, w) = match m.kind {
                "heartbeat" | "thought" | "message" | "tool_update" => (y + 6.0, y + 20.0, 1.5),
                _ => (y + 3.0, y + 23.0, 2.5),
            };
            let _ = write!(
                s,
                "<line class=\"mark {}\" data-kind=\"{}\" data-t-ms=\"{:.1}\"{} x1=\"{mx:.2}\" y1=\"{y1:.1}\" x2=\"{mx:.2}\" y2=\"{y2:.1}\" stroke=\"{}\" stroke-width=\"{w}\"><title>{}</title></line>",
                m.kind,
                m.kind,
                m.t_ms,
                m.id.as_ref()
                    .map(|id| format!(" data-id=\"{}\"", esc(id)))
                    .unwrap_or_default(),
                colour(m.kind),
                esc(&format!("{:.0} ms: {}", m.t_ms, m.label))
            );
        }
    }
    s.push_str("</svg>");
    s
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
        let svg = svg(&t, "session 1 <x>");
        assert!(svg.starts_with("<svg class=\"timeline\""));
        assert!(!svg.contains("<script"));
        assert!(svg.contains("aria-label=\"session 1 &lt;x&gt;\""));
        // the heartbeat is where its time says
        let scale = ms_per_px(4700.0);
        let want = format!("x1=\"{:.2}\"", X0 + 1003.0 / scale);
        let hb = svg
            .split("<line")
            .find(|l| l.contains("data-kind=\"heartbeat\""))
            .unwrap();
        assert!(hb.contains(&want), "{hb} / {want}");
        assert!(hb.contains("data-id=\"think-1\""));
    }
}
