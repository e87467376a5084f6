// acp-patch: hooks
/// State of the "Thinking..." card and of the text hold, per session (one agent object
/// may serve several sessions at once: cards and held text never cross sessions).
#[derive(Default)]
pub struct AcpThinking {
    sessions: {{CELL}}<std::collections::HashMap<String, AcpThinkingState>>,
}

#[derive(Default)]
struct AcpThinkingState {
    /// The agent's notification path for this turn (set by `acp_begin_turn`).
    send: Option<AcpSend>,
    open: bool,
    generation: u64,
    heartbeat: Option<tokio::task::JoinHandle<()>>,
    /// Reasoning was seen in this turn: the first answer text is held.
    reasoning: bool,
    held: Vec<{{ACP}}::SessionUpdate>,
    hold_generation: u64,
}

/// Wiring, once per turn before the hand-off: the session's notification path (`send`),
/// the agent's progress callback, and a guard that closes the card and flushes held text
/// when the turn ends, fails or is cancelled (dropped).
pub fn acp_begin_turn<'a>(
    thinking: &'a {{PTR}}<AcpThinking>,
    callback: &'a {{CELL}}<Option<AcpProgressCallback>>,
    session: String,
    send: AcpSend,
) -> AcpTurn<'a> {
    {
        let mut callback = callback.{{LOCK}};
        if callback.is_none() {
            *callback = Some(make_agent_progress_cb(thinking.clone()));
        }
    }
    let mut sessions = thinking.sessions.{{LOCK}};
    let state = sessions.entry(session.clone()).or_default();
    state.send = Some(send);
    state.reasoning = false;
    AcpTurn {
        thinking,
        callback,
        session,
    }
}

/// Ends the turn on drop: card closed, heartbeat stopped, held text sent.
pub struct AcpTurn<'a> {
    thinking: &'a {{PTR}}<AcpThinking>,
    callback: &'a {{CELL}}<Option<AcpProgressCallback>>,
    session: String,
}

impl Drop for AcpTurn<'_> {
    fn drop(&mut self) {
        acp_progress_complete(self.thinking, self.callback, &self.session);
        acp_text_hold_flush(self.thinking, &self.session);
    }
}

/// The progress callback's args for a session (plus extra fields such as `elapsed`).
fn acp_progress_args(session: &str, elapsed: Option<f64>) -> Option<serde_json::Value> {
    let mut args = serde_json::json!({ "session": session });
    if let Some(elapsed) = elapsed {
        args["elapsed"] = serde_json::json!(elapsed);
    }
    Some(args)
}

/// Hook A (right before the hand-off to the LLM): open the card and start the heartbeat.
pub fn acp_progress_start(
    thinking: &{{PTR}}<AcpThinking>,
    callback: &{{CELL}}<Option<AcpProgressCallback>>,
    session: &str,
) {
    acp_progress_complete(thinking, callback, session); // a new start closes the open card first
    let Some(cb) = callback.{{LOCK}}.clone() else {
        return;
    };
    let generation = {
        let mut sessions = thinking.sessions.{{LOCK}};
        let state = sessions.entry(session.to_string()).or_default();
        state.open = true;
        state.generation += 1;
        state.generation
    };
    cb(AcpProgressState::Start, "llm_response", acp_progress_args(session, None));
    let disabled = std::env::var("{{PREFIX}}_HEARTBEAT_DISABLED").unwrap_or_default();
    if matches!(disabled.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes") {
        return;
    }
    let interval = std::env::var("{{PREFIX}}_HEARTBEAT_S")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(30.0);
    let owner = thinking.clone();
    let key = session.to_string();
    let started = std::time::Instant::now();
    // Hook C: ticks until the card is completed or replaced (the task is aborted then too).
    let heartbeat = {{SPAWN}}(async move {
        let mut ticks = tokio::time::interval(std::time::Duration::from_secs_f64(interval));
        ticks.tick().await; // the first tick is immediate
        loop {
            ticks.tick().await;
            {
                let sessions = owner.sessions.{{LOCK}};
                match sessions.get(&key) {
                    Some(state) if state.open && state.generation == generation => {}
                    _ => return,
                }
            }
            let elapsed = started.elapsed().as_secs_f64();
            cb(AcpProgressState::Heartbeat, "llm_response", acp_progress_args(&key, Some(elapsed)));
        }
    });
    if let Some(state) = thinking.sessions.{{LOCK}}.get_mut(session) {
        state.heartbeat = Some(heartbeat);
    }
}

/// Whether an update is real output of the turn (the model's text or reasoning, a tool
/// call, a plan): bookkeeping updates (commands, mode, usage, session info) leave the card open.
pub fn acp_is_turn_output(update: &{{ACP}}::SessionUpdate) -> bool {
    matches!(
        update,
        {{ACP}}::SessionUpdate::AgentMessageChunk(_)
            | {{ACP}}::SessionUpdate::AgentThoughtChunk(_)
            | {{ACP}}::SessionUpdate::ToolCall(_)
            | {{ACP}}::SessionUpdate::ToolCallUpdate(_)
            | {{ACP}}::SessionUpdate::Plan(_)
    )
}

/// Hook B (first update after the hand-off, and turn end): close the card. Idempotent.
pub fn acp_progress_complete(
    thinking: &{{PTR}}<AcpThinking>,
    callback: &{{CELL}}<Option<AcpProgressCallback>>,
    session: &str,
) {
    let (was_open, heartbeat) = {
        let mut sessions = thinking.sessions.{{LOCK}};
        let Some(state) = sessions.get_mut(session) else {
            return;
        };
        let was_open = std::mem::replace(&mut state.open, false);
        if was_open {
            state.generation += 1;
        }
        (was_open, state.heartbeat.take())
    };
    if let Some(heartbeat) = heartbeat {
        heartbeat.abort();
    }
    if !was_open {
        return;
    }
    let cb = callback.{{LOCK}}.clone();
    if let Some(cb) = cb {
        cb(AcpProgressState::Complete, "llm_response", acp_progress_args(session, None));
    }
}
