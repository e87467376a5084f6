//! The answer arrives intact: the message text the client assembles is the text the scripted
//! model sent — in order, once, nothing lost in a text hold, nothing after the turn ends.

use super::super::wire::{
    RawLine, TurnFrame, Update, content_block_text, session_updates, truncate,
};
use super::card::ms;
use super::{ANSWER_INTACT, Check, CheckContext};

/// Text the model wrote to the agent in one model call of the session.
#[derive(Debug, Clone, PartialEq)]
pub struct SentText {
    /// When the call came (ms after the session's prompt).
    pub t_ms: f64,
    pub text: String,
}

fn message_text(u: &Update) -> Option<String> {
    (u.tag == "agent_message_chunk")
        .then(|| u.update.get("content"))
        .flatten()
        .filter(|c| c.get("type").and_then(|t| t.as_str()) == Some("text"))
        .map(content_block_text)
}

/// Without whitespace: agents add line breaks of their own between answers or around them.
fn squeezed(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The text without the reasoning an agent shows inline, in `<think>…</think>` (or
/// `<thinking>…</thinking>`) tags: the model's reasoning, not its answer.
fn without_inline_reasoning(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    loop {
        let open = ["<think>", "<thinking>"]
            .iter()
            .filter_map(|t| rest.find(t).map(|i| (i, *t)))
            .min();
        let Some((i, tag)) = open else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..i]);
        let close = tag.replacen('<', "</", 1);
        match rest[i..].find(&close) {
            Some(j) => rest = &rest[i + j + close.len()..],
            None => return out, // still open at the end: all of it reasoning
        }
    }
}

/// Where two texts part (in characters), and the few characters after it on each side.
fn first_difference(a: &str, b: &str) -> (usize, String, String) {
    let at = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let tail = |s: &str| s.chars().skip(at).take(24).collect::<String>();
    (at, tail(a), tail(b))
}

/// The session's message text (chunks of the turn, in order) against what the model sent
/// (its calls in order); after a cancel the text up to the cancel (a prefix); and no message
/// chunk after the turn's answer.
pub fn answer_intact(
    lines: &[RawLine],
    frame: &TurnFrame,
    ups: &[Update],
    sent: &[SentText],
    ctx: &CheckContext,
) -> Check {
    let chunks: Vec<String> = ups.iter().filter_map(message_text).collect();
    let shown: String = chunks.concat();
    let mut calls: Vec<&SentText> = sent.iter().collect();
    calls.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
    let model: String = calls.iter().map(|c| c.text.as_str()).collect();
    let late: Vec<Update> = match frame.response_index {
        Some(ri) => session_updates(lines)
            .into_iter()
            .filter(|u| u.index > ri && u.tag == "agent_message_chunk")
            .collect(),
        None => Vec::new(),
    };
    let (s_shown, s_model) = (squeezed(&shown), squeezed(&model));
    let cancelled = ctx.cancel_at_ms.is_some();
    let n = shown.chars().count();
    let m = model.chars().count();
    let verdict: Result<String, String> = if shown == model {
        Ok(format!(
            "the answer arrived intact: {n} character(s) in {} chunk(s), as the model sent them in {} call(s)",
            chunks.len(),
            calls.len()
        ))
    } else if s_shown == s_model {
        Ok(format!(
            "the answer arrived intact up to whitespace (the agent's own line breaks): {n} character(s) shown for the model's {m}"
        ))
    } else if squeezed(&without_inline_reasoning(&shown)) == s_model {
        Ok(format!(
            "the answer arrived intact beside the reasoning the agent shows inline in <think> tags: {n} character(s) shown for the model's {m}"
        ))
    } else if cancelled && s_model.starts_with(&s_shown) {
        Ok(format!(
            "the text up to the cancel arrived intact: {n} of the {m} character(s) the model sent"
        ))
    } else if shown.is_empty() {
        Err(format!(
            "no message text reached the client; the model sent {m} character(s)"
        ))
    } else {
        let what = if s_shown.len() < s_model.len() {
            "text was lost"
        } else if s_shown.len() > s_model.len() {
            "text was added or doubled"
        } else {
            "text was reordered or changed"
        };
        Err(format!(
            "the message text the client assembled is not what the model sent: {what} ({n} character(s) shown, {m} sent)"
        ))
    };
    let (passed, mut summary) = match verdict {
        Ok(s) => (late.is_empty(), s),
        Err(s) => (false, s),
    };
    if !late.is_empty() {
        summary.push_str(&format!(
            "; {} message chunk(s) after the turn ended",
            late.len()
        ));
    }
    let mut c = Check::new(ANSWER_INTACT, passed, summary)
        .fig("shown_chars", n as f64)
        .fig("sent_chars", m as f64)
        .fig("message_chunks", chunks.len() as f64)
        .fig("model_calls", calls.len() as f64)
        .fig("after_turn_chunks", late.len() as f64);
    if !passed {
        c = c
            .ev(format!("the model sent: {:?}", truncate(&model, 200)))
            .ev(format!("the client shows: {:?}", truncate(&shown, 200)));
        if s_shown != s_model && !shown.is_empty() {
            let (at, a, b) = first_difference(&s_model, &s_shown);
            c = c.ev(format!(
                "first difference (whitespace aside) at character {at}: the model {a:?}, the client {b:?}"
            ));
        }
        for u in late.iter().take(3) {
            c = c.ev(format!(
                "agent_message_chunk at {} after the answer: {:?}",
                ms(u.t_ms),
                truncate(&message_text(u).unwrap_or_default(), 80)
            ));
        }
    }
    c
}
