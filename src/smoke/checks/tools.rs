//! Tool calls: well-formed by toolCallId (the patch's think cards, and the agent's own tool
//! calls apart), the scripted call through its lifecycle, and the card in the gap after it.

use super::super::transcript::Transcript;
use super::super::wire::{RawLine, TurnFrame, Update, is_real_output};
use super::card::ms;
use super::{
    CARDS_WELL_FORMED, Check, CheckContext, GAP_CARD, TOOL_LIFECYCLE, ToolExpectation,
    WELL_FORMED_TOOL_CALLS,
};

fn status_rank(s: &str) -> Option<u8> {
    match s {
        "pending" => Some(0),
        "in_progress" => Some(1),
        "completed" | "failed" => Some(2),
        _ => None,
    }
}

/// The think cards (the patch's): each goes pending / in_progress → completed by its
/// `toolCallId`, never back, and is finished when the turn ends.
pub fn cards_well_formed(ups: &[Update]) -> Check {
    well_formed(CARDS_WELL_FORMED, ups, true)
}

/// The agent's own tool calls (a finding about the agent): updates name started ids,
/// statuses never go backwards, all calls end completed or failed.
pub fn well_formed_tool_calls(ups: &[Update]) -> Check {
    well_formed(WELL_FORMED_TOOL_CALLS, ups, false)
}

/// Judges the tool-call updates of the cards (`cards`) or of everything else.
fn well_formed(name: &str, ups: &[Update], cards: bool) -> Check {
    let card_ids = super::turn::card_ids(ups);
    let is_card = |u: &Update| {
        u.kind() == Some("think")
            || u.tool_call_id()
                .is_some_and(|id| card_ids.iter().any(|c| c == id))
    };
    let what = if cards {
        "think card(s)"
    } else {
        "tool call(s)"
    };
    let mut status: Vec<(String, String)> = Vec::new(); // id -> current status, in start order
    let mut problems: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut n_updates = 0usize;
    for u in ups
        .iter()
        .filter(|u| u.tag == "tool_call" || u.tag == "tool_call_update")
        .filter(|u| is_card(u) == cards)
    {
        let Some(id) = u.tool_call_id() else {
            problems.push(format!("{} without toolCallId at {}", u.tag, ms(u.t_ms)));
            continue;
        };
        let known = status.iter().position(|(k, _)| k == id);
        let new_status = match (u.status(), u.tag.as_str()) {
            (Some(s), _) => Some(s.to_string()),
            (None, "tool_call") if known.is_none() => Some("pending".to_string()),
            _ => None,
        };
        if let Some(s) = &new_status
            && status_rank(s).is_none()
        {
            problems.push(format!("{id}: unknown status {s:?} at {}", ms(u.t_ms)));
            continue;
        }
        match (u.tag.as_str(), known) {
            ("tool_call", None) => {
                status.push((
                    id.to_string(),
                    new_status.unwrap_or_else(|| "pending".into()),
                ));
                continue;
            }
            ("tool_call", Some(_)) => {
                notes.push(format!(
                    "note: {id} announced again by a tool_call at {}",
                    ms(u.t_ms)
                ));
            }
            ("tool_call_update", None) => {
                n_updates += 1;
                problems.push(format!(
                    "tool_call_update for {id:?} at {} names no started tool call",
                    ms(u.t_ms)
                ));
                continue;
            }
            _ => n_updates += 1,
        }
        let k = known.expect("known");
        if let Some(s) = new_status {
            let old = status[k].1.clone();
            let (ro, rn) = (status_rank(&old).unwrap_or(0), status_rank(&s).unwrap_or(0));
            if rn < ro || (ro == 2 && old != s) {
                problems.push(format!(
                    "{id}: status goes back from {old} to {s} at {}",
                    ms(u.t_ms)
                ));
            }
            status[k].1 = s;
        }
    }
    for (id, s) in &status {
        if status_rank(s) != Some(2) {
            problems.push(format!("{id}: still {s} when the turn ends"));
        }
    }
    let mut c = Check::new(
        name,
        problems.is_empty(),
        if problems.is_empty() {
            format!(
                "{} {what}, {} update(s), all well-formed and finished",
                status.len(),
                n_updates
            )
        } else {
            format!("{} problem(s) in {} {what}", problems.len(), status.len())
        },
    )
    .fig("tool_calls", status.len() as f64)
    .fig("updates", n_updates as f64)
    .fig("problems", problems.len() as f64);
    for p in problems.iter().take(8).chain(notes.iter().take(3)) {
        c = c.ev(p.clone());
    }
    c
}

/// The scripted tool call shows as a block that goes pending / in_progress → completed by
/// its `toolCallId`, and its result reached the model.
pub fn tool_lifecycle(ups: &[Update], tool: &ToolExpectation) -> Check {
    let t = Transcript::from_updates(ups);
    let real: Vec<_> = t.tool_calls.iter().filter(|c| c.kind != "think").collect();
    let returned = |c: Check| match &tool.tool_result {
        Some(r) if tool.result_carries_seed != Some(true) => {
            c.ev(format!("the tool result the model got: {r:?}"))
        }
        _ => c,
    };
    if real.is_empty() {
        let mut c = Check::new(
            TOOL_LIFECYCLE,
            false,
            format!(
                "no tool call in the turn (the script asked for {:?})",
                tool.name
            ),
        )
        .fig("tool_calls", 0.0);
        if let Some(why) = &tool.not_asked {
            c = c.ev(why.clone());
        }
        return returned(c);
    }
    let mut problems: Vec<String> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for c in &real {
        if c.orphan {
            problems.push(format!(
                "{}: updated, but never started by a tool_call",
                c.id
            ));
        }
        if c.status != "completed" {
            problems.push(format!("{}: ends {}, not completed", c.id, c.status));
        }
        lines.push(format!(
            "[tool] {} {} {:?} id {}{}: {} (first {}, last {})",
            c.icon(),
            c.kind,
            c.title,
            c.id,
            if c.id == tool.call_id {
                " (the model's call id)"
            } else {
                ""
            },
            c.status_history.join(" → "),
            ms(c.first_ms),
            ms(c.last_ms)
        ));
    }
    match tool.result_carries_seed {
        Some(true) => {}
        Some(false) => problems.push(
            "the tool result the agent sent to the model does not carry the workspace file's token"
                .into(),
        ),
        None => problems.push("no model call carried a tool result".into()),
    }
    let first = real[0];
    let mut c = Check::new(
        TOOL_LIFECYCLE,
        problems.is_empty(),
        if problems.is_empty() {
            format!(
                "{} tool call(s) shown as blocks, {} by its toolCallId, its result sent to the model",
                real.len(),
                first.status_history.join(" → ")
            )
        } else {
            format!("{} problem(s): {}", problems.len(), problems.join("; "))
        },
    )
    .fig("tool_calls", real.len() as f64)
    .fig("first_ms", first.first_ms)
    .fig("last_ms", first.last_ms);
    for l in lines.into_iter().take(5) {
        c = c.ev(l);
    }
    returned(c)
}

fn is_tool_update(u: &Update) -> bool {
    u.tag == "tool_call" || u.tag == "tool_call_update"
}

/// After a real tool call finishes, if the model stays silent longer than the gap, a new
/// think card opens (within the gap plus the card limit) and completes before the next output.
/// A tool call the agent never finishes on the wire (its own conformance, judged by
/// `well_formed_tool_calls`) still ran: the silence then starts when its result reached the
/// model (the model call that carried it).
pub fn gap_card(lines: &[RawLine], frame: &TurnFrame, ups: &[Update], ctx: &CheckContext) -> Check {
    let real: Vec<&Update> = ups.iter().filter(|u| is_real_output(u, ups)).collect();
    // a gap follows the last update of a run of tool-call updates
    let gaps: Vec<usize> = (0..real.len())
        .filter(|&j| is_tool_update(real[j]) && real.get(j + 1).is_none_or(|n| !is_tool_update(n)))
        .collect();
    if gaps.is_empty() {
        return Check::new(
            GAP_CARD,
            false,
            "no real tool call in the turn, so no gap after one to cover",
        );
    }
    let end = frame
        .response_index
        .map(|i| (i, lines[i].t_ms, "the answer"))
        .unwrap_or((
            lines.len(),
            lines.last().map(|l| l.t_ms).unwrap_or(0.0),
            "the end",
        ));
    let mut problems: Vec<String> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut unfinished: Vec<String> = Vec::new();
    let mut c = Check::new(GAP_CARD, true, String::new());
    for (g, &j) in gaps.iter().enumerate() {
        let done = real[j];
        let id = done.tool_call_id().unwrap_or("?");
        let (next_index, next_ms, next_what) = match real.get(j + 1) {
            Some(n) => (n.index, n.t_ms, n.tag.as_str()),
            None => end,
        };
        let finished = matches!(done.status(), Some("completed") | Some("failed"));
        let result_at = ctx.tool.as_ref().and_then(|t| {
            t.results_at_ms
                .iter()
                .copied()
                .find(|&at| at >= done.t_ms && at <= next_ms)
        });
        let (start, ran) = match (finished, result_at) {
            (true, _) => (done.t_ms, "finished"),
            (false, Some(at)) => {
                unfinished.push(format!(
                    "tool call {id} is never finished on the wire (last update at {}); its result reached the model at {}",
                    ms(done.t_ms),
                    ms(at)
                ));
                (at, "ran (its result reached the model)")
            }
            (false, None) => {
                problems.push(format!(
                    "tool call {id} is not finished (last update at {}) and no model call carried its result before {next_what} at {}",
                    ms(done.t_ms),
                    ms(next_ms)
                ));
                continue;
            }
        };
        let silence = next_ms - start;
        let label = if gaps.len() > 1 {
            format!("gap {}: ", g + 1)
        } else {
            String::new()
        };
        c = c.fig(&format!("{label}silence_ms").replace(": ", "."), silence);
        if silence <= ctx.gap_ms {
            notes.push(format!(
                "{label}{next_what} came {} after tool call {id} {ran}, within the {} gap: no card needed",
                ms(silence),
                ms(ctx.gap_ms)
            ));
            continue;
        }
        let card = ups.iter().find(|u| {
            u.tag == "tool_call"
                && u.kind() == Some("think")
                && u.index > done.index
                && u.index < next_index
        });
        let Some(card) = card else {
            problems.push(format!(
                "{label}no think card in the {} of silence after tool call {id} {ran} at {} ({next_what} at {})",
                ms(silence),
                ms(start),
                ms(next_ms)
            ));
            continue;
        };
        let card_id = card.tool_call_id().unwrap_or("?");
        let open_after = card.t_ms - start;
        let limit = ctx.gap_ms + ctx.think_card_max_ms;
        c = c
            .fig(
                &format!("{label}open_after_ms").replace(": ", "."),
                open_after,
            )
            .fig("limit_ms", limit);
        if open_after > limit {
            problems.push(format!(
                "{label}card {card_id} opened {} after the tool call {ran} (limit {})",
                ms(open_after),
                ms(limit)
            ));
        }
        let closed = ups.iter().find(|u| {
            u.tool_call_id() == Some(card_id)
                && u.index > card.index
                && matches!(u.status(), Some("completed") | Some("failed"))
        });
        match closed {
            Some(done_u) if done_u.status() == Some("completed") && done_u.index < next_index => {
                notes.push(format!(
                    "{label}card {card_id} opened {} after tool call {id} {ran}, completed at {}, before {next_what} at {}",
                    ms(open_after),
                    ms(done_u.t_ms),
                    ms(next_ms)
                ));
            }
            Some(done_u) if done_u.status() != Some("completed") => problems.push(format!(
                "{label}card {card_id} marked {} at {}",
                done_u.status().unwrap_or("?"),
                ms(done_u.t_ms)
            )),
            Some(done_u) => problems.push(format!(
                "{label}card {card_id} completed at {}, after {next_what} at {}",
                ms(done_u.t_ms),
                ms(next_ms)
            )),
            None => problems.push(format!("{label}card {card_id} is never completed")),
        }
    }
    c.passed = problems.is_empty();
    c.summary = if problems.is_empty() {
        notes.first().cloned().unwrap_or_default()
    } else {
        problems.join("; ")
    };
    for n in notes
        .into_iter()
        .skip(usize::from(c.passed))
        .chain(unfinished)
    {
        c = c.ev(n);
    }
    c.fig("gaps", gaps.len() as f64)
}
