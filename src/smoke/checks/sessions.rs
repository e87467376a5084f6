//! Several sessions at once: no update crosses from one session to another.

use std::collections::{BTreeMap, BTreeSet};

use super::super::llm::{SESSION_MARKER, session_tag};
use super::super::wire::{RawLine, updates_with_session};
use super::card::ms;
use super::{Check, SESSIONS_ISOLATED};

/// Whether `text` is session `k`'s: the scripted LLM's tag of its answer, or its prompt's
/// marker (`[smoke session k]`) as an agent answering without a model echoes it.
fn carries(text: &str, k: u32) -> bool {
    text.contains(&session_tag(k)) || text.contains(&format!("{SESSION_MARKER}{k}]"))
}

/// What one session showed, for the isolation check.
#[derive(Debug, Clone, Default)]
pub struct SessionText {
    pub session_id: String,
    /// 1-based: the `[smoke session k]` of its prompt.
    pub number: u32,
    pub message_text: String,
    pub thought_text: String,
}

/// Every update names a session of the run; no session updates a tool call only another
/// session started; each session's answer carries its own tag (the scripted LLM tags the
/// answer of the prompt marked `[smoke session k]` with ` [session k]`; an agent that answers
/// without a model, e.g. an echo, shows its prompt's marker instead) and no other's.
pub fn sessions_isolated(lines: &[RawLine], sessions: &[SessionText]) -> Check {
    let known: BTreeSet<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
    let mut problems: Vec<String> = Vec::new();
    // An agent that names two sessions alike (an id from the clock, two `session/new` in one
    // millisecond) mixes them up at the source; said first, the crossings below follow from it.
    for (i, s) in sessions.iter().enumerate() {
        if let Some(o) = sessions[..i].iter().find(|o| o.session_id == s.session_id) {
            problems.push(format!(
                "session/new answered sessions {} and {} with the same id {:?}: their updates cannot be told apart (make the agent's session ids unique, e.g. a counter or a random UUID)",
                o.number, s.number, s.session_id
            ));
        }
    }
    let mut started: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let all = updates_with_session(lines);
    for (sid, u) in &all {
        match sid {
            Some(s) if known.contains(s.as_str()) => {
                if u.tag == "tool_call"
                    && let Some(id) = u.tool_call_id()
                {
                    started.entry(s.clone()).or_default().insert(id.to_string());
                }
            }
            Some(s) => problems.push(format!(
                "{} at {} names session {s:?}, which the run never opened",
                u.tag,
                ms(u.t_ms)
            )),
            None => problems.push(format!("{} at {} names no session", u.tag, ms(u.t_ms))),
        }
    }
    for (sid, u) in &all {
        let (Some(sid), Some(id)) = (sid, u.tool_call_id()) else {
            continue;
        };
        // (an update naming a session the run never opened is reported above)
        if u.tag != "tool_call_update"
            || !known.contains(sid.as_str())
            || started.get(sid).is_some_and(|s| s.contains(id))
        {
            continue;
        }
        if let Some((other, _)) = started
            .iter()
            .find(|(o, ids)| *o != sid && ids.contains(id))
        {
            problems.push(format!(
                "tool_call_update at {} for {id:?} carries session {sid:?}, but session {other:?} started that tool call",
                ms(u.t_ms)
            ));
        }
    }
    for s in sessions {
        for (what, text) in [("answer", &s.message_text), ("reasoning", &s.thought_text)] {
            if text.is_empty() {
                continue;
            }
            if !carries(text, s.number) {
                problems.push(format!(
                    "session {}'s {what} lacks its tag {:?}",
                    s.number,
                    session_tag(s.number).trim()
                ));
            }
            for o in sessions.iter().filter(|o| o.number != s.number) {
                if carries(text, o.number) {
                    problems.push(format!(
                        "session {}'s {what} shows session {}'s text",
                        s.number, o.number
                    ));
                }
            }
        }
    }
    let mut c = Check::new(
        SESSIONS_ISOLATED,
        problems.is_empty(),
        if problems.is_empty() {
            format!(
                "{} sessions, {} update(s), each on its own session; every answer carries its own session's tag",
                sessions.len(),
                all.len()
            )
        } else {
            format!("{} crossing(s) between sessions", problems.len())
        },
    )
    .fig("sessions", sessions.len() as f64)
    .fig("updates", all.len() as f64)
    .fig("crossings", problems.len() as f64);
    for p in problems.iter().take(8) {
        c = c.ev(p.clone());
    }
    c
}
