//! How the turn ends: its stop reason, and after a cancel, no card left open and nothing
//! said after the answer.

use super::super::wire::{
    RawLine, TurnFrame, Update, is_real_output, session_updates, truncate, turn_updates,
};
use super::card::ms;
use super::{CARDS_CLOSED_ON_CANCEL, Check, CheckContext, QUIET_AFTER_CANCEL, TURN_ENDS};

/// The prompt response arrives with the expected stopReason (`end_turn`; `cancelled` after
/// a cancel).
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
        let want = ctx.expected_stop.as_str();
        match frame.stop_reason() {
            Some(got) if got == want => {
                Check::new(TURN_ENDS, true, format!("stopReason {got} at {}", ms(t)))
            }
            Some(other) => Check::new(
                TURN_ENDS,
                false,
                format!("stopReason {other:?} at {} (expected {want})", ms(t)),
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

/// The ids of the think cards of the turn (`tool_call` with kind `think`), in order.
pub(super) fn card_ids(ups: &[Update]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for u in ups {
        if u.tag == "tool_call"
            && u.kind() == Some("think")
            && let Some(id) = u.tool_call_id()
            && !ids.iter().any(|i| i == id)
        {
            ids.push(id.to_string());
        }
    }
    ids
}

/// After a cancel, every think card is completed (or failed) by the time the answer comes.
pub fn cards_closed_on_cancel(lines: &[RawLine], frame: &TurnFrame, cancel_at_ms: f64) -> Check {
    let ups = turn_updates(lines, frame);
    let ids = card_ids(&ups);
    let answer = frame
        .response_index
        .map(|i| format!("the answer at {}", ms(lines[i].t_ms)))
        .unwrap_or_else(|| "the end of the recording (no answer)".into());
    if ids.is_empty() {
        return Check::new(
            CARDS_CLOSED_ON_CANCEL,
            true,
            format!("no think card was opened, none left open at {answer}"),
        )
        .fig("cards", 0.0)
        .fig("cancel_ms", cancel_at_ms);
    }
    let mut open = Vec::new();
    let mut closed_at = Vec::new();
    for id in &ids {
        let last = ups
            .iter()
            .filter(|u| u.tool_call_id() == Some(id.as_str()))
            .filter_map(|u| u.status().map(|s| (s, u.t_ms)))
            .next_back();
        match last {
            Some(("completed" | "failed", t)) => closed_at.push(format!("{id} at {}", ms(t))),
            Some((s, _)) => open.push(format!("{id} still {s}")),
            None => open.push(format!("{id} still pending")),
        }
    }
    let mut c = Check::new(
        CARDS_CLOSED_ON_CANCEL,
        open.is_empty(),
        if open.is_empty() {
            format!(
                "{} think card(s), all closed by {answer} (cancel sent at {})",
                ids.len(),
                ms(cancel_at_ms)
            )
        } else {
            format!(
                "{} of {} think card(s) left open at {answer} (cancel sent at {})",
                open.len(),
                ids.len(),
                ms(cancel_at_ms)
            )
        },
    )
    .fig("cards", ids.len() as f64)
    .fig("open", open.len() as f64)
    .fig("cancel_ms", cancel_at_ms);
    for e in open.iter().chain(closed_at.iter()) {
        c = c.ev(e.clone());
    }
    c
}

/// After the cancelled turn's answer, the session says nothing more (no chunk, no tool call
/// or card update); bookkeeping updates may still come.
pub fn quiet_after_cancel(lines: &[RawLine], frame: &TurnFrame) -> Check {
    let Some(ri) = frame.response_index else {
        return Check::new(
            QUIET_AFTER_CANCEL,
            false,
            "the cancelled turn was never answered",
        );
    };
    let answer_ms = lines[ri].t_ms;
    let all = session_updates(lines);
    let late: Vec<Update> = all
        .iter()
        .filter(|u| u.index > ri && is_real_output(u, &all))
        .cloned()
        .collect();
    let mut c = Check::new(
        QUIET_AFTER_CANCEL,
        late.is_empty(),
        if late.is_empty() {
            format!("nothing after the answer at {}", ms(answer_ms))
        } else {
            format!(
                "{} update(s) after the answer at {}",
                late.len(),
                ms(answer_ms)
            )
        },
    )
    .fig("late_updates", late.len() as f64)
    .fig("answer_ms", answer_ms);
    for u in late.iter().take(5) {
        c = c.ev(format!("{} at {}", u.tag, ms(u.t_ms)));
    }
    c
}
