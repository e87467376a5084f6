// generated code: the crate's own lint levels are not asked of it
#![allow(
    unused,
    missing_docs,
    missing_debug_implementations,
    let_underscore,
    rust_2018_idioms,
    unreachable_pub,
    unused_qualifications,
    clippy::all,
    clippy::pedantic,
    clippy::nursery,
    clippy::restriction,
    clippy::cargo
)]

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

/// What the progress callback reports: the "Thinking..." card opens, ticks, closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcpProgressState {
    Start,
    Heartbeat,
    Complete,
}

/// The card a callback call is about.
pub struct AcpCardArgs<'a> {
    pub session: &'a str,
    pub tool_call_id: &'a str,
    pub elapsed_s: f64,
    pub failed: bool,
}

/// What an outgoing session update means for the card and the hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcpKind {
    /// The model's reasoning.
    Thought,
    /// The model's answer text.
    Text,
    /// A real tool call or an update of one; `finished` when it reached completed/failed.
    Tool { finished: bool },
    /// Other turn output (a plan, a whole message).
    Output,
    /// The session went idle: its turn is over (protocol v2).
    Idle,
    /// Bookkeeping (commands, modes, usage, session info): leaves the card open.
    Bookkeeping,
    /// One of our own cards.
    Ours,
}

/// The state of one session.
#[derive(Default)]
struct AcpSession {
    /// Where the card's updates go (the connection or channel the agent's own sends use).
    send: Option<AcpSend>,
    /// The agent's progress callback, set per turn by `begin`.
    agent_progress_callback: Option<AcpProgressCallback>,
    active: bool,
    turn: u64,
    card: Option<(String, Instant)>,
    card_generation: u64,
    /// Reasoning was seen since the last flush: the next answer text is held.
    reasoning: bool,
    held: Vec<AcpNotification>,
    hold_generation: u64,
    gap_generation: u64,
    /// Updates we pushed into a channel that comes back through the emitter.
    passthrough: VecDeque<AcpNotification>,
    timers: Vec<AcpTimer>,
    /// Ids of the tool calls this session's updates started.
    tool_calls: HashSet<String>,
}

/// The callback: builds the card's update for a state.
pub type AcpProgressCallback =
    {{PTR}}<dyn Fn(AcpProgressState, &AcpCardArgs) -> AcpNotification{{SEND_SYNC}}>;

fn acp_env_f64(name: &str) -> Option<f64> {
    std::env::var(name)
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0)
}

fn acp_debug(what: &str) {
    if std::env::var_os("{{PREFIX}}_PROGRESS_DEBUG").is_some() {
        eprintln!("acp-progress: {what}");
    }
}

/// Build the agent's progress callback: one "Thinking..." tool card per session.
pub fn make_agent_progress_cb() -> AcpProgressCallback {
    {{PTR}}::new(|state: AcpProgressState, card: &AcpCardArgs| match state {
        AcpProgressState::Start => build_thinking_start(card.session, card.tool_call_id),
        AcpProgressState::Heartbeat => {
            build_thinking_progress(card.session, card.tool_call_id, card.elapsed_s)
        }
        AcpProgressState::Complete => {
            build_thinking_complete(card.session, card.tool_call_id, card.failed)
        }
    })
}

/// A fresh id for a think card, unique within the process.
fn acp_new_card_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{ACP_CARD_PREFIX}{nanos:08x}{n:04x}")
}

const ACP_CARD_PREFIX: &str = "acp-think-";

fn acp_is_card(tool_call_id: &str) -> bool {
    tool_call_id.starts_with(ACP_CARD_PREFIX)
}

/// Hook A: open the session's card (an open one is closed first).
fn acp_progress_start(s: &mut AcpSession, session: &str) -> Vec<AcpNotification> {
    let mut out: Vec<AcpNotification> = acp_progress_complete(s, session, false)
        .into_iter()
        .collect();
    let Some(cb) = s.agent_progress_callback.clone() else {
        return out;
    };
    let id = acp_new_card_id();
    s.card_generation += 1;
    s.card = Some((id.clone(), Instant::now()));
    let card = AcpCardArgs {
        session,
        tool_call_id: &id,
        elapsed_s: 0.0,
        failed: false,
    };
    out.push(cb(AcpProgressState::Start, &card));
    out
}

/// Hook C: the card's heartbeat, while it is the same card.
fn acp_progress_heartbeat(
    s: &mut AcpSession,
    session: &str,
    card_generation: u64,
) -> Option<AcpNotification> {
    if s.card_generation != card_generation {
        return None;
    }
    let (id, since) = s.card.clone()?;
    let cb = s.agent_progress_callback.clone()?;
    let card = AcpCardArgs {
        session,
        tool_call_id: &id,
        elapsed_s: since.elapsed().as_secs_f64(),
        failed: false,
    };
    Some(cb(AcpProgressState::Heartbeat, &card))
}

/// Hook B: close the session's card (idempotent).
fn acp_progress_complete(
    s: &mut AcpSession,
    session: &str,
    failed: bool,
) -> Option<AcpNotification> {
    let (id, since) = s.card.take()?;
    s.card_generation += 1;
    let cb = s.agent_progress_callback.clone()?;
    let card = AcpCardArgs {
        session,
        tool_call_id: &id,
        elapsed_s: since.elapsed().as_secs_f64(),
        failed,
    };
    Some(cb(AcpProgressState::Complete, &card))
}

/// Held text, consecutive chunks merged; text streams directly again until reasoning.
fn acp_take_held(s: &mut AcpSession) -> Vec<AcpNotification> {
    s.reasoning = false;
    s.hold_generation += 1;
    let mut merged: Vec<AcpNotification> = Vec::new();
    for n in std::mem::take(&mut s.held) {
        match merged.last_mut() {
            Some(last) => {
                if let Err(n) = acp_merge_text(last, n) {
                    merged.push(n);
                }
            }
            None => merged.push(n),
        }
    }
    merged
}

/// The heartbeat interval, or `None` when heartbeats are off.
fn acp_heartbeat_interval() -> Option<Duration> {
    let off = std::env::var("{{PREFIX}}_HEARTBEAT_DISABLED").unwrap_or_default();
    if matches!(
        off.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes"
    ) {
        return None;
    }
    let s = acp_env_f64("{{PREFIX}}_HEARTBEAT_S")
        .filter(|s| *s > 0.0)
        .unwrap_or(30.0);
    Some(Duration::from_secs_f64(s))
}

/// Sends runtime updates of a session through its path (channels remember them so the
/// emitter lets them pass).
fn acp_send_out(s: &mut AcpSession, out: Vec<AcpNotification>) -> Vec<AcpReceipt> {
    let Some(send) = s.send.clone() else {
        if !out.is_empty() {
            acp_debug("no connection for the card: updates dropped");
        }
        return Vec::new();
    };
    let mut receipts = Vec::new();
    for n in out {
        if send.loops {
            s.passthrough.push_back(n.clone());
        }
        receipts.push((send.send)(n));
    }
    receipts
}

/// After the card opened: its heartbeat.
fn acp_arm_heartbeat(s: &mut AcpSession, session: &str) {
    let Some(every) = acp_heartbeat_interval() else {
        return;
    };
    let generation = s.card_generation;
    let key = session.to_string();
    let timer = acp_spawn_interval(every, move || {
        acp_with(|sessions| {
            let Some(s) = sessions.get_mut(&key) else {
                return false;
            };
            match acp_progress_heartbeat(s, &key, generation) {
                Some(n) => {
                    acp_send_out(s, vec![n]);
                    true
                }
                None => false,
            }
        })
    });
    s.timers.push(timer);
}

/// Opens a card now and sends it (turn start, silent gap).
fn acp_open_card(s: &mut AcpSession, session: &str) -> Vec<AcpReceipt> {
    let out = acp_progress_start(s, session);
    let receipts = acp_send_out(s, out);
    acp_arm_heartbeat(s, session);
    receipts
}

/// Ends the session's turn: card closed (failed on error), held text out, timers stopped.
fn acp_end_turn(s: &mut AcpSession, session: &str, failed: bool) -> Vec<AcpNotification> {
    let mut out: Vec<AcpNotification> = acp_progress_complete(s, session, failed)
        .into_iter()
        .collect();
    out.extend(acp_take_held(s));
    s.gap_generation += 1;
    s.active = false;
    for timer in s.timers.drain(..) {
        timer.stop();
    }
    out
}

/// The turn a prompt handler runs: ends when its response is given (or, for a guard, when
/// the last copy is dropped without one).
#[derive(Clone)]
pub struct AcpTurn(#[allow(dead_code)] {{PTR}}<AcpTurnInner>);

pub struct AcpTurnInner {
    session: String,
    turn: u64,
    /// Dropped without a response: `Some(failed)` ends the turn then.
    on_drop: Option<bool>,
}

impl Drop for AcpTurnInner {
    fn drop(&mut self) {
        if let Some(failed) = self.on_drop {
            acp_finish(&self.session, self.turn, failed);
        }
    }
}

impl AcpTurn {
    pub fn session(&self) -> &str {
        &self.0.session
    }
}

/// Turn start: records where the session's updates go, arms the card (opened, with its
/// heartbeat, when no real update came within the grace).
fn acp_begin<S: AcpSink + ?Sized>(sink: &S, session: String, on_drop: Option<bool>) -> AcpTurn {
    let send = sink.acp_sender();
    acp_runtime_seen();
    let turn = acp_with(|sessions| {
        let s = sessions.entry(session.clone()).or_default();
        if s.active {
            let out = acp_end_turn(s, &session, false);
            acp_send_out(s, out);
        }
        if send.is_some() {
            s.send = send;
        }
        s.passthrough.clear();
        s.agent_progress_callback = Some(make_agent_progress_cb());
        s.active = true;
        s.turn += 1;
        s.reasoning = false;
        let after_ms = acp_env_f64("{{PREFIX}}_THINK_AFTER_MS").unwrap_or(50.0);
        if after_ms > 0.0 {
            acp_arm_silence(s, &session, after_ms); // a turn answered within it needs no card
        } else {
            acp_open_card(s, &session);
        }
        s.turn
    });
    AcpTurn({{PTR}}::new(AcpTurnInner {
        session,
        turn,
        on_drop,
    }))
}

/// Ends a turn if it is still the session's current one; returns what to wait for.
fn acp_finish(session: &str, turn: u64, failed: bool) -> Vec<AcpReceipt> {
    acp_with(|sessions| match sessions.get_mut(session) {
        Some(s) if s.active && s.turn == turn => {
            let out = acp_end_turn(s, session, failed);
            acp_send_out(s, out)
        }
        _ => Vec::new(),
    })
}

/// What a prompt response carries: an error fails the card.
pub trait AcpOutcome {
    fn acp_failed(&self) -> bool;
}

impl<T, E> AcpOutcome for Result<T, E> {
    fn acp_failed(&self) -> bool {
        self.is_err()
    }
}

/// The session's current turn, where its response is given away from the handler (another
/// method, an actor): the response given there ends that turn.
pub fn turn_of(session: &impl std::fmt::Display) -> AcpTurn {
    let session = session.to_string();
    let turn = acp_with(|sessions| sessions.get(&session).map(|s| s.turn).unwrap_or(0));
    AcpTurn({{PTR}}::new(AcpTurnInner {
        session,
        turn,
        on_drop: None,
    }))
}

/// What the emitter sends for one update of the agent, in order: `own` is the agent's own
/// update (`None` while it is held).
pub(crate) struct AcpOut {
    pub before: Vec<AcpNotification>,
    pub own: Option<AcpNotification>,
}

/// The emitter: completes the session's open card on its first real update, holds text after
/// reasoning, arms the gap card after a tool call, ends the turn when the session goes idle.
pub(crate) fn acp_outgoing(n: AcpNotification) -> AcpOut {
    let session = acp_session_of(&n);
    let pass = |n| AcpOut {
        before: Vec::new(),
        own: Some(n),
    };
    acp_with(|sessions| {
        let Some(s) = sessions.get_mut(&session) else {
            return pass(n);
        };
        if s.passthrough.front() == Some(&n) {
            s.passthrough.pop_front();
            return pass(n);
        }
        let mut kind = acp_kind(&n);
        match acp_tool_call(&n) {
            Some((id, true)) => {
                s.tool_calls.insert(id.to_string());
            }
            // an update of a tool call never started shows nothing in a client: it leaves a card due
            Some((id, false)) if !s.tool_calls.contains(id) => kind = AcpKind::Bookkeeping,
            _ => {}
        }
        if !s.active || kind == AcpKind::Ours {
            return pass(n);
        }
        let mut before: Vec<AcpNotification> = Vec::new();
        match kind {
            AcpKind::Idle => {
                before.extend(acp_end_turn(s, &session, false));
            }
            AcpKind::Bookkeeping => before.extend(acp_take_held(s)),
            AcpKind::Thought => {
                before.extend(acp_progress_complete(s, &session, false));
                s.gap_generation += 1;
                s.reasoning = true; // sent at once, even while text is held: it joins the thought block
            }
            AcpKind::Text => {
                before.extend(acp_progress_complete(s, &session, false));
                s.gap_generation += 1;
                if s.reasoning || !s.held.is_empty() {
                    s.held.push(n);
                    if s.held.len() == 1 {
                        acp_arm_hold(s, &session);
                    }
                    return AcpOut { before, own: None };
                }
            }
            AcpKind::Tool { finished } => {
                before.extend(acp_progress_complete(s, &session, false));
                before.extend(acp_take_held(s));
                s.gap_generation += 1;
                if finished {
                    acp_arm_gap(s, &session);
                }
            }
            AcpKind::Output | AcpKind::Ours => {
                before.extend(acp_progress_complete(s, &session, false));
                before.extend(acp_take_held(s));
                s.gap_generation += 1;
            }
        }
        AcpOut {
            before,
            own: Some(n),
        }
    })
}

/// The first held text goes out when the hold expires (unless flushed before).
fn acp_arm_hold(s: &mut AcpSession, session: &str) {
    let generation = s.hold_generation;
    let hold_ms = acp_env_f64("{{PREFIX}}_THINK_HOLD_MS").unwrap_or(200.0);
    let key = session.to_string();
    let timer = acp_spawn_after(Duration::from_secs_f64(hold_ms / 1000.0), move || {
        acp_with(|sessions| {
            if let Some(s) = sessions.get_mut(&key) {
                if s.hold_generation == generation {
                    let out = acp_take_held(s);
                    acp_send_out(s, out);
                }
            }
        });
    });
    s.timers.push(timer);
}

/// After a real tool call finished: a new card if the session stays silent.
fn acp_arm_gap(s: &mut AcpSession, session: &str) {
    let gap_ms = acp_env_f64("{{PREFIX}}_THINK_GAP_MS").unwrap_or(500.0);
    if gap_ms > 0.0 {
        acp_arm_silence(s, session, gap_ms);
    }
}

/// A card once the session sends no real update for `ms` (every real update bumps the
/// generation). Decided and sent under the state's lock, so no update of the turn can be
/// sent ahead of a card opened at the same moment.
fn acp_arm_silence(s: &mut AcpSession, session: &str, ms: f64) {
    s.gap_generation += 1;
    let generation = s.gap_generation;
    let key = session.to_string();
    let timer = acp_spawn_after(Duration::from_secs_f64(ms / 1000.0), move || {
        acp_with(|sessions| {
            if let Some(s) = sessions.get_mut(&key) {
                if s.active && s.gap_generation == generation && s.card.is_none() {
                    acp_open_card(s, &key);
                }
            }
        });
    });
    s.timers.push(timer);
}
