
// ---- Protocol v1 messages ({{ACP}}).

use {{ACP}} as acp_schema;

type AcpNotification = acp_schema::SessionNotification;

fn acp_session_of(n: &AcpNotification) -> String {
    n.session_id.to_string()
}

fn acp_update(session: &str, update: acp_schema::SessionUpdate) -> AcpNotification {
    acp_schema::SessionNotification::new(session.to_string(), update)
}

/// Open a virtual "think" tool call: clients show a spinner card while the model works.
pub fn build_thinking_start(session: &str, tool_call_id: &str) -> AcpNotification {
    acp_update(
        session,
        acp_schema::SessionUpdate::ToolCall(
            acp_schema::ToolCall::new(tool_call_id.to_string(), "Thinking...")
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
        acp_schema::SessionUpdate::ToolCallUpdate(acp_schema::ToolCallUpdate::new(
            tool_call_id.to_string(),
            acp_schema::ToolCallUpdateFields::new()
                .status(acp_schema::ToolCallStatus::InProgress)
                .title(format!("Thinking... ({}s)", elapsed_s as u64)),
        )),
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
        acp_schema::SessionUpdate::ToolCallUpdate(acp_schema::ToolCallUpdate::new(
            tool_call_id.to_string(),
            acp_schema::ToolCallUpdateFields::new()
                .status(status)
                .title("Thinking...".to_string()),
        )),
    )
}

fn acp_finished(status: Option<&acp_schema::ToolCallStatus>) -> bool {
    matches!(
        status,
        Some(acp_schema::ToolCallStatus::Completed) | Some(acp_schema::ToolCallStatus::Failed)
    )
}

/// Real turn output (text, reasoning, tool calls, plans) closes the card; bookkeeping
/// (commands, modes, usage, session info) does not.
fn acp_kind(n: &AcpNotification) -> AcpKind {
    match &n.update {
        acp_schema::SessionUpdate::AgentThoughtChunk(_) => AcpKind::Thought,
        acp_schema::SessionUpdate::AgentMessageChunk(_) => AcpKind::Text,
        acp_schema::SessionUpdate::ToolCall(call) if acp_is_card(&call.tool_call_id.0) => {
            AcpKind::Ours
        }
        acp_schema::SessionUpdate::ToolCall(call) => AcpKind::Tool {
            finished: acp_finished(Some(&call.status)),
        },
        acp_schema::SessionUpdate::ToolCallUpdate(update)
            if acp_is_card(&update.tool_call_id.0) =>
        {
            AcpKind::Ours
        }
        acp_schema::SessionUpdate::ToolCallUpdate(update) => AcpKind::Tool {
            finished: acp_finished(update.fields.status.as_ref()),
        },
        acp_schema::SessionUpdate::Plan(_) => AcpKind::Output,
        _ => AcpKind::Bookkeeping,
    }
}

/// The tool call an update names and whether it starts it (`tool_call`) or updates it.
fn acp_tool_call(n: &AcpNotification) -> Option<(&str, bool)> {
    match &n.update {
        acp_schema::SessionUpdate::ToolCall(call) => Some((&call.tool_call_id.0, true)),
        acp_schema::SessionUpdate::ToolCallUpdate(update) => Some((&update.tool_call_id.0, false)),
        _ => None,
    }
}

/// Appends a text chunk to the held one before it; `Err` gives it back when they differ.
fn acp_merge_text(into: &mut AcpNotification, n: AcpNotification) -> Result<(), AcpNotification> {
    if let (
        acp_schema::SessionUpdate::AgentMessageChunk(held),
        acp_schema::SessionUpdate::AgentMessageChunk(next),
    ) = (&mut into.update, &n.update)
    {
        if let (acp_schema::ContentBlock::Text(held), acp_schema::ContentBlock::Text(next)) =
            (&mut held.content, &next.content)
        {
            held.text.push_str(&next.text);
            return Ok(());
        }
    }
    Err(n)
}
