//! A session's timeline drawn as an inline SVG (no script). Every mark carries `data-kind`
//! and `data-t-ms`, and the SVG its scale (`data-x0`, `data-ms-per-px`), so the picture can be
//! checked against the transcript.

use super::esc;
use crate::smoke::timeline::Timeline;
use std::fmt::Write as _;

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
    fn marks_are_drawn_where_their_time_says() {
        let mut r = Rec::new();
        r.card(3.0, "think-1", "think", None)
            .tcu(1003.0, "think-1", Some("in_progress"))
            .tcu(2500.0, "think-1", Some("completed"))
            .message(4601.0, "Answer")
            .end(4700.0, "end_turn");
        let t = Timeline::from_lines(&r.lines, &[]);
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
