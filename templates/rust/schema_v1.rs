
// ---- Protocol v1 messages ({{ACP}}).

type AcpNotification = {{ACP}}::SessionNotification;

fn acp_session_of(n: &AcpNotification) -> String {
    n.session_id.to_string()
}

fn acp_update(session: &str, update: {{ACP}}::SessionUpdate) -> AcpNotification {
    {{ACP}}::SessionNotification::new(session.to_string(), update)
}

/// Open a virtual "think" tool call: clients show a spinner card while the model works.
pub fn build_thinking_start(session: &str, tool_call_id: &str) -> AcpNotification {
    acp_update(
        session,
        {{ACP}}::SessionUpdate::ToolCall(
            {{ACP}}::ToolCall::new(tool_call_id.to_string(), "Thinking...")
                .kind({{ACP}}::ToolKind::Think)
                .status({{ACP}}::ToolCallStatus::InProgress),
        ),
    )
}

/// Heartbeat for the think card: a repeated in_progress update with the elapsed time.
pub fn build_thinking_progress(session: &str, tool_call_id: &str, elapsed_s: f64) -> AcpNotification {
    acp_update(
        session,
        {{ACP}}::SessionUpdate::ToolCallUpdate({{ACP}}::ToolCallUpdate::new(
            tool_call_id.to_string(),
            {{ACP}}::ToolCallUpdateFields::new()
                .status({{ACP}}::ToolCallStatus::InProgress)
                .title(format!("Thinking... ({}s)", elapsed_s as u64)),
        )),
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
        {{ACP}}::SessionUpdate::ToolCallUpdate({{ACP}}::ToolCallUpdate::new(
            tool_call_id.to_string(),
            {{ACP}}::ToolCallUpdateFields::new()
                .status(status)
                .title("Thinking...".to_string()),
        )),
    )
}

fn acp_finished(status: Option<&{{ACP}}::ToolCallStatus>) -> bool {
    matches!(
        status,
        Some({{ACP}}::ToolCallStatus::Completed) | Some({{ACP}}::ToolCallStatus::Failed)
    )
}

/// Real turn output (text, reasoning, tool calls, plans) closes the card; bookkeeping
/// (commands, modes, usage, session info) does not.
fn acp_kind(n: &AcpNotification) -> AcpKind {
    match &n.update {
        {{ACP}}::SessionUpdate::AgentThoughtChunk(_) => AcpKind::Thought,
        {{ACP}}::SessionUpdate::AgentMessageChunk(_) => AcpKind::Text,
        {{ACP}}::SessionUpdate::ToolCall(call) if acp_is_card(&call.tool_call_id.0) => AcpKind::Ours,
        {{ACP}}::SessionUpdate::ToolCall(call) => AcpKind::Tool {
            finished: acp_finished(Some(&call.status)),
        },
        {{ACP}}::SessionUpdate::ToolCallUpdate(update) if acp_is_card(&update.tool_call_id.0) => {
            AcpKind::Ours
        }
        {{ACP}}::SessionUpdate::ToolCallUpdate(update) => AcpKind::Tool {
            finished: acp_finished(update.fields.status.as_ref()),
        },
        {{ACP}}::SessionUpdate::Plan(_) => AcpKind::Output,
        _ => AcpKind::Bookkeeping,
    }
}

/// Appends a text chunk to the held one before it; `Err` gives it back when they differ.
fn acp_merge_text(into: &mut AcpNotification, n: AcpNotification) -> Result<(), AcpNotification> {
    if let (
        {{ACP}}::SessionUpdate::AgentMessageChunk(held),
        {{ACP}}::SessionUpdate::AgentMessageChunk(next),
    ) = (&mut into.update, &n.update)
    {
        if let ({{ACP}}::ContentBlock::Text(held), {{ACP}}::ContentBlock::Text(next)) =
            (&mut held.content, &next.content)
        {
            held.text.push_str(&next.text);
            return Ok(());
        }
    }
    Err(n)
}
