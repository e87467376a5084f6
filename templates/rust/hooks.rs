// acp-patch: hooks
/// Per-agent state of the "Thinking..." card and of the text hold.
#[derive(Default)]
pub struct AcpThinking {
    state: {{CELL}}<AcpThinkingState>,
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

/// Wiring, once per turn before the hand-off: a progress callback that sends through
/// `send`, and a guard that closes the card and flushes held text when the turn ends,
/// fails or is cancelled (dropped).
pub fn acp_begin_turn<'a>(
    thinking: &'a {{PTR}}<AcpThinking>,
    callback: &'a {{CELL}}<Option<AcpProgressCallback>>,
    send: AcpSend,
) -> AcpTurn<'a> {
    *callback.{{LOCK}} = Some(make_agent_progress_cb(send.clone()));
    let mut state = thinking.state.{{LOCK}};
    state.send = Some(send);
    state.reasoning = false;
    AcpTurn { thinking, callback }
}

/// Ends the turn on drop: card closed, heartbeat stopped, held text sent.
pub struct AcpTurn<'a> {
    thinking: &'a {{PTR}}<AcpThinking>,
    callback: &'a {{CELL}}<Option<AcpProgressCallback>>,
}

impl Drop for AcpTurn<'_> {
    fn drop(&mut self) {
        acp_progress_complete(self.thinking, self.callback);
        acp_text_hold_flush(self.thinking);
    }
}

/// Hook A (right before the hand-off to the LLM): open the card and start the heartbeat.
pub fn acp_progress_start(thinking: &{{PTR}}<AcpThinking>, callback: &{{CELL}}<Option<AcpProgressCallback>>) {
    acp_progress_complete(thinking, callback); // a new start closes the open card first
    let Some(cb) = callback.{{LOCK}}.clone() else {
        return;
    };
    let generation = {
        let mut state = thinking.state.{{LOCK}};
        state.open = true;
        state.generation += 1;
        state.generation
    };
    cb(AcpProgressState::Start, "llm_response", None);
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
    let started = std::time::Instant::now();
    // Hook C: ticks until the card is completed or replaced (the task is aborted then too).
    let heartbeat = {{SPAWN}}(async move {
        let mut ticks = tokio::time::interval(std::time::Duration::from_secs_f64(interval));
        ticks.tick().await; // the first tick is immediate
        loop {
            ticks.tick().await;
            {
                let state = owner.state.{{LOCK}};
                if !state.open || state.generation != generation {
                    return;
                }
            }
            let elapsed = started.elapsed().as_secs_f64();
            cb(AcpProgressState::Heartbeat, "llm_response", Some(serde_json::json!({ "elapsed": elapsed })));
        }
    });
    thinking.state.{{LOCK}}.heartbeat = Some(heartbeat);
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
pub fn acp_progress_complete(thinking: &{{PTR}}<AcpThinking>, callback: &{{CELL}}<Option<AcpProgressCallback>>) {
    let (was_open, heartbeat) = {
        let mut state = thinking.state.{{LOCK}};
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
        cb(AcpProgressState::Complete, "llm_response", None);
    }
}
