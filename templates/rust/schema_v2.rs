
// ---- Protocol v2 messages ({{ACP}}): the turn ends when the session goes idle.

use {{ACP}} as acp_schema;

type AcpNotification = acp_schema::UpdateSessionNotification;

fn acp_session_of(n: &AcpNotification) -> String {
    n.session_id.to_string()
}

fn acp_update(session: &str, update: acp_schema::SessionUpdate) -> AcpNotification {
    acp_schema::UpdateSessionNotification::new(session.to_string(), update)
}

/// Open a virtual "think" tool call: clients show a spinner card while the model works.
pub fn build_thinking_start(session: &str, tool_call_id: &str) -> AcpNotification {
    acp_update(
        session,
        acp_schema::SessionUpdate::ToolCallUpdate(
            acp_schema::ToolCallUpdate::new(tool_call_id.to_string())
                .title("Thinking...".to_string())
                .kind(acp_schema::ToolKind::Think)
                .status(acp_schema::ToolCallStatus::InProgress),
        ),
    )
}

/// Heartbeat for the think card: a repeated in_progress update with the elapsed time.
pub fn build_thinking_progress(
    session: &str,
    tool_call_id: &str,
    elapsed_s: f64,
) -> AcpNotification {
    acp_update(
        session,
        acp_schema::SessionUpdate::ToolCallUpdate(
            acp_schema::ToolCallUpdate::new(tool_call_id.to_string())
                .status(acp_schema::ToolCallStatus::InProgress)
                .title(format!("Thinking... ({}s)", elapsed_s as u64)),
        ),
    )
}

/// Close the think card (the title resets so the card does not keep a stale timer).
pub fn build_thinking_complete(session: &str, tool_call_id: &str, failed: bool) -> AcpNotification {
    let status = if failed {
        acp_schema::ToolCallStatus::Failed
    } else {
        acp_schema::ToolCallStatus::Completed
    };
    acp_update(
        session,
        acp_schema::SessionUpdate::ToolCallUpdate(
            acp_schema::ToolCallUpdate::new(tool_call_id.to_string())
                .status(status)
                .title("Thinking...".to_string()),
        ),
    )
}

/// Protocol v2 has no separate start: a tool-call update creates the call it names.
fn acp_tool_call(_n: &AcpNotification) -> Option<(&str, bool)> {
    None
}

/// Real turn output (text, reasoning, tool calls, plans, terminals) closes the card;
/// bookkeeping (state, commands, modes, usage, session info) does not; idle ends the turn.
fn acp_kind(n: &AcpNotification) -> AcpKind {
    match &n.update {
        acp_schema::SessionUpdate::AgentThoughtChunk(_)
        | acp_schema::SessionUpdate::AgentThought(_) => AcpKind::Thought,
        acp_schema::SessionUpdate::AgentMessageChunk(_) => AcpKind::Text,
        acp_schema::SessionUpdate::AgentMessage(_) => AcpKind::Output,
        acp_schema::SessionUpdate::ToolCallUpdate(update)
            if acp_is_card(&update.tool_call_id.0) =>
        {
            AcpKind::Ours
        }
        acp_schema::SessionUpdate::ToolCallUpdate(update) => AcpKind::Tool {
            finished: matches!(
                update.status.value(),
                Some(acp_schema::ToolCallStatus::Completed)
                    | Some(acp_schema::ToolCallStatus::Failed)
            ),
        },
        acp_schema::SessionUpdate::ToolCallContentChunk(_)
        | acp_schema::SessionUpdate::PlanUpdate(_)
        | acp_schema::SessionUpdate::TerminalUpdate(_)
        | acp_schema::SessionUpdate::TerminalOutputChunk(_) => AcpKind::Output,
        acp_schema::SessionUpdate::StateUpdate(acp_schema::StateUpdate::Idle(_)) => AcpKind::Idle,
        _ => AcpKind::Bookkeeping,
    }
}

/// Appends a text chunk to the held one of the same message; `Err` gives it back otherwise.
fn acp_merge_text(into: &mut AcpNotification, n: AcpNotification) -> Result<(), AcpNotification> {
    if let (
        acp_schema::SessionUpdate::AgentMessageChunk(held),
        acp_schema::SessionUpdate::AgentMessageChunk(next),
    ) = (&mut into.update, &n.update)
    {
        if held.message_id == next.message_id {
            if let (acp_schema::ContentBlock::Text(held), acp_schema::ContentBlock::Text(next)) =
                (&mut held.content, &next.content)
            {
                held.text.push_str(&next.text);
                return Ok(());
            }
        }
    }
    Err(n)
}
