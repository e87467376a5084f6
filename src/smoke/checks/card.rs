//! The think card: opened soon after the prompt, kept alive, completed at the first real
//! output — or none at all when the turn's first real output came within the card's limit
//! (the runtime's grace: nobody waited).

use serde_json::Value;

use super::super::wire::{RawLine, TurnFrame, Update, is_real_output};
use super::{COMPLETE, Check, CheckContext, HEARTBEAT, THINK_CARD};

pub(super) fn find_card(ups: &[Update]) -> Option<&Update> {
    ups.iter()
        .find(|u| u.tag == "tool_call" && u.kind() == Some("think"))
}

pub(super) fn first_chunk(ups: &[Update]) -> Option<&Update> {
    ups.iter().find(|u| u.is_chunk())
}

/// The turn's first real output: a chunk, a plan, a tool call other than a think card or an
/// update of one (what completes a card; bookkeeping such as usage does not).
fn first_real(ups: &[Update]) -> Option<&Update> {
    ups.iter().find(|u| is_real(ups, u))
}

fn is_real(ups: &[Update], u: &Update) -> bool {
    is_real_output(u, ups)
}

/// The turn answered within the grace: no card before its first real output, which came
/// within the card's own limit. Its cards, if any, can only be gap cards after a tool call.
pub(super) fn answered_in_grace<'a>(ups: &'a [Update], ctx: &CheckContext) -> Option<&'a Update> {
    let real = first_real(ups)?;
    let card_first = find_card(ups).is_some_and(|c| c.index < real.index);
    (!card_first && real.t_ms <= ctx.think_card_max_ms).then_some(real)
}

/// A turn that ended within the card's limit with nothing said (no real update, no card), on
/// its own (no cancel: a user who cancels a silent turn was waiting): the prompt response came
/// first, so nobody waited, and the runtime's grace opens no card.
pub(super) struct EndedInGrace {
    response_ms: f64,
}

pub(super) fn ended_in_grace(
    lines: &[RawLine],
    frame: &TurnFrame,
    ups: &[Update],
    ctx: &CheckContext,
) -> Option<EndedInGrace> {
    let response_ms = lines[frame.response_index?].t_ms;
    let on_its_own = ctx.cancel_at_ms.is_none() && frame.stop_reason() != Some("cancelled");
    (on_its_own
        && first_real(ups).is_none()
        && find_card(ups).is_none()
        && response_ms <= ctx.think_card_max_ms)
        .then_some(EndedInGrace { response_ms })
}

impl EndedInGrace {
    pub(super) fn check(&self, name: &str, ctx: &CheckContext) -> Check {
        Check::new(
            name,
            true,
            format!(
                "no card needed: the turn ended {} after the prompt with nothing said, within the limit ({})",
                ms(self.response_ms),
                ms(ctx.think_card_max_ms)
            ),
        )
        .fig("response_ms", self.response_ms)
        .fig("limit_ms", ctx.think_card_max_ms)
    }
}

fn no_card_needed(name: &str, real: &Update, ctx: &CheckContext) -> Check {
    Check::new(
        name,
        true,
        format!(
            "no card needed: the first real update ({}) came {} after the prompt, within the limit ({})",
            real.tag,
            ms(real.t_ms),
            ms(ctx.think_card_max_ms)
        ),
    )
    .fig("first_real_ms", real.t_ms)
    .fig("limit_ms", ctx.think_card_max_ms)
}

/// A turn answered within the grace: passes unless a card shows after the answer began
/// without a finished tool call before it (a gap card has one).
fn think_card_in_grace(ups: &[Update], real: &Update, ctx: &CheckContext) -> Check {
    let finished_tool = |before: usize| {
        ups.iter().any(|u| {
            u.index < before
                && is_real(ups, u)
                && u.tag.starts_with("tool_call")
                && matches!(u.status(), Some("completed") | Some("failed"))
        })
    };
    let late = ups.iter().find(|u| {
        u.tag == "tool_call"
            && u.kind() == Some("think")
            && u.index > real.index
            && !finished_tool(u.index)
    });
    match late {
        None => no_card_needed(THINK_CARD, real, ctx),
        Some(card) => Check::new(
            THINK_CARD,
            false,
            format!(
                "think card {:?} at {}, after the turn's first real update ({} at {}) with no tool call before it: a card opens before the answer or not at all",
                card.tool_call_id().unwrap_or("?"),
                ms(card.t_ms),
                real.tag,
                ms(real.t_ms)
            ),
        )
        .fig("latency_ms", card.t_ms)
        .fig("first_real_ms", real.t_ms),
    }
}

pub(super) fn ms(v: f64) -> String {
    format!("{v:.0} ms")
}

/// A `tool_call` with `kind: "think"` before any chunk, within the limit of the prompt; or
/// none, when the first real update came within that limit.
pub fn think_card(ups: &[Update], ctx: &CheckContext) -> Check {
    if let Some(real) = answered_in_grace(ups, ctx) {
        return think_card_in_grace(ups, real, ctx);
    }
    let chunk = first_chunk(ups);
    let Some(card) = find_card(ups) else {
        let mut c = Check::new(
            THINK_CARD,
            false,
            "no tool_call with kind \"think\" in the turn",
        );
        for u in ups.iter().filter(|u| u.tag == "tool_call") {
            c = c.ev(format!(
                "tool_call {} kind={} title={:?} at {}",
                u.tool_call_id().unwrap_or("?"),
                u.kind()
                    .map(|k| format!("{k:?}"))
                    .unwrap_or_else(|| "(none: other)".into()),
                u.update.get("title").and_then(Value::as_str).unwrap_or(""),
                ms(u.t_ms)
            ));
        }
        if let Some(ch) = chunk {
            c = c
                .ev(format!("first {} at {}", ch.tag, ms(ch.t_ms)))
                .fig("first_chunk_ms", ch.t_ms);
        }
        return c;
    };
    let before_chunk = chunk.is_none_or(|ch| card.index < ch.index);
    let in_time = card.t_ms <= ctx.think_card_max_ms;
    let mut summary = format!(
        "think card {:?} at {} after the prompt (limit {})",
        card.tool_call_id().unwrap_or("?"),
        ms(card.t_ms),
        ms(ctx.think_card_max_ms)
    );
    if !before_chunk {
        summary.push_str(", but only after the first chunk");
    } else if !in_time {
        summary.push_str(", too late");
    }
    let mut c = Check::new(THINK_CARD, before_chunk && in_time, summary)
        .fig("latency_ms", card.t_ms)
        .fig("limit_ms", ctx.think_card_max_ms);
    if before_chunk && !in_time {
        // the runtime's grace timer fires on the agent's event loop: it cannot while the
        // agent's own code runs without awaiting
        c = c.ev(
            "the card is due a short grace after the prompt (THINK_AFTER_MS under the agent's \
             env prefix, 50 ms by default); this late, the agent kept its event loop busy \
             meanwhile: THINK_AFTER_MS=0 opens the card at the prompt's entry"
                .to_string(),
        );
    }
    if let Some(ch) = chunk {
        c = c
            .ev(format!("first {} at {}", ch.tag, ms(ch.t_ms)))
            .fig("first_chunk_ms", ch.t_ms);
    }
    c.ev(format!(
        "title {:?}, status {}",
        card.update
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or(""),
        card.status().unwrap_or("(none: pending)")
    ))
}

/// Minimum number of heartbeats expected during a wait of `wait_ms`.
pub fn expected_heartbeats(wait_ms: f64, interval_s: f64) -> u64 {
    let interval_ms = interval_s * 1000.0;
    if interval_ms <= 0.0 || wait_ms <= 0.0 {
        return 0;
    }
    let n = (wait_ms / interval_ms).floor() as i64 - 1;
    let n = n.max(0) as u64;
    if wait_ms > 1.5 * interval_ms {
        n.max(1)
    } else {
        n
    }
}

/// In-progress updates of the card while waiting for the first chunk.
pub fn heartbeat(
    lines: &[RawLine],
    frame: &TurnFrame,
    ups: &[Update],
    ctx: &CheckContext,
) -> Check {
    if let Some(real) = answered_in_grace(ups, ctx) {
        return no_card_needed(HEARTBEAT, real, ctx);
    }
    let Some(card) = find_card(ups) else {
        return Check::new(HEARTBEAT, false, "no think card, so no heartbeat");
    };
    let id = card.tool_call_id().unwrap_or_default();
    // the wait the card covers ends at the turn's first real update after it (what completes
    // the card): a chunk, or a tool call the model asked for before it said anything (a gap
    // card after that tool call is a card of its own)
    let end = ups.iter().find(|u| u.index > card.index && is_real(ups, u));
    let (end_index, end_ms, end_what) = match end {
        Some(u) if u.is_chunk() => (u.index, u.t_ms, "first chunk"),
        Some(u) => (u.index, u.t_ms, "first real update"),
        None => match frame.response_index {
            Some(i) => (i, lines[i].t_ms, "prompt response"),
            None => (
                lines.len(),
                lines.last().map(|l| l.t_ms).unwrap_or(card.t_ms),
                "end of recording",
            ),
        },
    };
    let beats: Vec<&Update> = ups
        .iter()
        .filter(|u| {
            u.tag == "tool_call_update"
                && u.tool_call_id() == Some(id)
                // an update that leaves the status out keeps it (ACP sends only the fields
                // that changed; codex-acp drops unchanged ones): the card is still running
                && matches!(u.status(), None | Some("in_progress"))
                && u.index > card.index
                && u.index < end_index
        })
        .collect();
    let wait_ms = (end_ms - card.t_ms).max(0.0);
    let expected = expected_heartbeats(wait_ms, ctx.heartbeat_s);
    let mut stamps: Vec<f64> = vec![card.t_ms];
    stamps.extend(beats.iter().map(|b| b.t_ms));
    stamps.push(end_ms);
    let max_gap = stamps.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    let passed = beats.len() as u64 >= expected;
    let c = Check::new(
        HEARTBEAT,
        passed,
        format!(
            "{} in_progress update(s) of the card during a {} wait for the {} (expected at least {}, interval {} s)",
            beats.len(),
            ms(wait_ms),
            end_what,
            expected,
            ctx.heartbeat_s
        ),
    )
    .fig("count", beats.len() as f64)
    .fig("expected_min", expected as f64)
    .fig("wait_ms", wait_ms)
    .fig("interval_ms", ctx.heartbeat_s * 1000.0)
    .fig("max_gap_ms", max_gap);
    if beats.is_empty() {
        c
    } else {
        c.ev(format!(
            "heartbeats at {}",
            beats
                .iter()
                .map(|b| ms(b.t_ms))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// The card is completed no later than the first chunk.
pub fn complete(ups: &[Update], ctx: &CheckContext) -> Check {
    if let Some(real) = answered_in_grace(ups, ctx) {
        return no_card_needed(COMPLETE, real, ctx);
    }
    let Some(card) = find_card(ups) else {
        return Check::new(COMPLETE, false, "no think card to complete");
    };
    let id = card.tool_call_id().unwrap_or_default();
    let chunk = first_chunk(ups);
    let terminal = ups.iter().find(|u| {
        u.index >= card.index
            && u.tool_call_id() == Some(id)
            && matches!(u.status(), Some("completed") | Some("failed"))
    });
    let last_status = ups
        .iter()
        .filter(|u| u.tool_call_id() == Some(id))
        .filter_map(|u| u.status())
        .next_back()
        .unwrap_or("pending");
    let Some(done) = terminal else {
        let mut c = Check::new(
            COMPLETE,
            false,
            format!("the think card is never completed (last status {last_status})"),
        );
        if let Some(ch) = chunk {
            c = c.fig("first_chunk_ms", ch.t_ms);
        }
        return c;
    };
    let status = done.status().unwrap_or_default();
    let in_time = chunk.is_none_or(|ch| done.index < ch.index);
    let mut c = Check::new(
        COMPLETE,
        status == "completed" && in_time,
        match (status, in_time) {
            ("completed", true) => format!("card completed at {}", ms(done.t_ms)),
            ("completed", false) => {
                format!("card completed at {}, after the first chunk", ms(done.t_ms))
            }
            _ => format!(
                "card marked {status} at {} instead of completed",
                ms(done.t_ms)
            ),
        },
    )
    .fig("complete_ms", done.t_ms);
    if let Some(ch) = chunk {
        c = c
            .fig("first_chunk_ms", ch.t_ms)
            .ev(format!("first {} at {}", ch.tag, ms(ch.t_ms)));
    }
    c
}
