// acp-patch: text_hold
/// Called first in the emitter, after Hook B. `None` = the update was held: do not send it.
///
/// Once reasoning was seen in the turn, the first answer text is held for
/// {{PREFIX}}_THINK_HOLD_MS (default 200; 0 = the next tick) so a trailing reasoning delta
/// still joins the thought block; held text goes out before any other update, when the
/// hold expires, and at turn end (also on error and cancel).
pub fn acp_text_hold(
    thinking: &{{PTR}}<AcpThinking>,
    session: &str,
    update: {{ACP}}::SessionUpdate,
) -> Option<{{ACP}}::SessionUpdate> {
    let mut sessions = thinking.sessions.{{LOCK}};
    let Some(state) = sessions.get_mut(session).filter(|s| s.send.is_some()) else {
        return Some(update); // outside a patched turn: send as is
    };
    match update {
        {{ACP}}::SessionUpdate::AgentThoughtChunk(_) => {
            state.reasoning = true; // sent at once, even while text is held: it joins the thought block
            Some(update)
        }
        {{ACP}}::SessionUpdate::AgentMessageChunk(_) if state.reasoning || !state.held.is_empty() => {
            state.held.push(update);
            if state.held.len() == 1 {
                state.hold_generation += 1;
                let generation = state.hold_generation;
                let hold_ms = std::env::var("{{PREFIX}}_THINK_HOLD_MS")
                    .ok()
                    .and_then(|s| s.trim().parse::<f64>().ok())
                    .filter(|ms| ms.is_finite() && *ms >= 0.0)
                    .unwrap_or(200.0);
                let owner = thinking.clone();
                let key = session.to_string();
                drop(sessions);
                {{SPAWN}}(async move {
                    tokio::time::sleep(std::time::Duration::from_secs_f64(hold_ms / 1000.0)).await;
                    let current = owner.sessions.{{LOCK}}.get(&key).map(|s| s.hold_generation);
                    if current == Some(generation) {
                        acp_text_hold_flush(&owner, &key);
                    }
                });
            }
            None
        }
        other => {
            drop(sessions);
            acp_text_hold_flush(thinking, session); // tool calls and anything else: held text first
            Some(other)
        }
    }
}

/// Send held text now, consecutive text chunks merged into one update; then text streams
/// directly until reasoning is seen again.
pub fn acp_text_hold_flush(thinking: &{{PTR}}<AcpThinking>, session: &str) {
    let (held, send) = {
        let mut sessions = thinking.sessions.{{LOCK}};
        let Some(state) = sessions.get_mut(session) else {
            return;
        };
        state.reasoning = false;
        state.hold_generation += 1;
        (std::mem::take(&mut state.held), state.send.clone())
    };
    let Some(send) = send else {
        return;
    };
    let mut merged: Vec<{{ACP}}::SessionUpdate> = Vec::new();
    for update in held {
        if let {{ACP}}::SessionUpdate::AgentMessageChunk(chunk) = &update {
            if let {{ACP}}::ContentBlock::Text(text) = &chunk.content {
                if let Some({{ACP}}::SessionUpdate::AgentMessageChunk(previous)) = merged.last_mut() {
                    if let {{ACP}}::ContentBlock::Text(previous) = &mut previous.content {
                        previous.text.push_str(&text.text);
                        continue;
                    }
                }
            }
        }
        merged.push(update);
    }
    for update in merged {
        send(update);
    }
}
