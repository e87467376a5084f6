
// ---- Protocol v2 messages ({{ACP}}): the turn ends when the session goes idle.

type AcpNotification = {{ACP}}::UpdateSessionNotification;

fn acp_session_of(n: &AcpNotification) -> String {
    n.session_id.to_string()
}

fn acp_update(session: &str, update: {{ACP}}::SessionUpdate) -> AcpNotification {
    {{ACP}}::UpdateSessionNotification::new(session.to_string(), update)
}

/// Open a virtual "think" tool call: clients show a spinner card while the model works.
pub fn build_thinking_start(session: &str, tool_call_id: &str) -> AcpNotification {
    acp_update(
        session,
        {{ACP}}::SessionUpdate::ToolCallUpdate(
            {{ACP}}::ToolCallUpdate::new(tool_call_id.to_string())
                .title("Thinking...".to_string())
                .kind({{ACP}}::ToolKind::Think)
                .status({{ACP}}::ToolCallStatus::InProgress),
        ),
    )
}

/// Heartbeat for the think card: a repeated in_progress update with the elapsed time.
pub fn build_thinking_progress(session: &str, tool_call_id: &str, elapsed_s: f64) -> AcpNotification {
    acp_update(
        session,
        {{ACP}}::SessionUpdate::ToolCallUpdate(
            {{ACP}}::ToolCallUpdate::new(tool_call_id.to_string())
                .status({{ACP}}::ToolCallStatus::InProgress)
                .title(format!("Thinking... ({}s)", elapsed_s as u64)),
        ),
    )
}

/// Close the think card (the title resets so the card does not keep a stale timer).
pub fn build_thinking_complete(session: &str, tool_call_id: &str, failed: bool) -> AcpNotification {
    let status = if failed {
        {{ACP}}::ToolCallStatus::Failed
    } else {
        {{ACP}}::ToolCallStatus::Completed
    };
    acp_update(
        session,
        {{ACP}}::SessionUpdate::ToolCallUpdate(
            {{ACP}}::ToolCallUpdate::new(tool_call_id.to_string())
                .status(status)
                .title("Thinking...".to_string()),
        ),
    )
}

/// Real turn output (text, reasoning, tool calls, plans, terminals) closes the card;
/// bookkeeping (state, commands, modes, usage, session info) does not; idle ends the turn.
fn acp_kind(n: &AcpNotification) -> AcpKind {
    match &n.update {
        {{ACP}}::SessionUpdate::AgentThoughtChunk(_) | {{ACP}}::SessionUpdate::AgentThought(_) => {
            AcpKind::Thought
        }
        {{ACP}}::SessionUpdate::AgentMessageChunk(_) => AcpKind::Text,
        {{ACP}}::SessionUpdate::AgentMessage(_) => AcpKind::Output,
        {{ACP}}::SessionUpdate::ToolCallUpdate(update) if acp_is_card(&update.tool_call_id.0) => {
            AcpKind::Ours
        }
        {{ACP}}::SessionUpdate::ToolCallUpdate(update) => AcpKind::Tool {
            finished: matches!(
                update.status.value(),
                Some({{ACP}}::ToolCallStatus::Completed) | Some({{ACP}}::ToolCallStatus::Failed)
            ),
        },
        {{ACP}}::SessionUpdate::ToolCallContentChunk(_)
        | {{ACP}}::SessionUpdate::PlanUpdate(_)
        | {{ACP}}::SessionUpdate::TerminalUpdate(_)
        | {{ACP}}::SessionUpdate::TerminalOutputChunk(_) => AcpKind::Output,
        {{ACP}}::SessionUpdate::StateUpdate({{ACP}}::StateUpdate::Idle(_)) => AcpKind::Idle,
        _ => AcpKind::Bookkeeping,
    }
}

/// Appends a text chunk to the held one of the same message; `Err` gives it back otherwise.
fn acp_merge_text(into: &mut AcpNotification, n: AcpNotification) -> Result<(), AcpNotification> {
    if let (
        {{ACP}}::SessionUpdate::AgentMessageChunk(held),
        {{ACP}}::SessionUpdate::AgentMessageChunk(next),
    ) = (&mut into.update, &n.update)
    {
        if held.message_id == next.message_id {
            if let ({{ACP}}::ContentBlock::Text(held), {{ACP}}::ContentBlock::Text(next)) =
                (&mut held.content, &next.content)
            {
                held.text.push_str(&next.text);
                return Ok(());
            }
        }
    }
    Err(n)
}
