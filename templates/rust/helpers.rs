// acp-patch: helpers
/// What the progress callback reports: the "Thinking..." card opens, ticks, closes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AcpProgressState {
    Start,
    Heartbeat,
    Complete,
}

/// Open a virtual "think" tool call: clients show a spinner card while the LLM works.
pub fn build_thinking_start(tool_call_id: &str) -> {{ACP}}::SessionUpdate {
    {{ACP}}::SessionUpdate::ToolCall(
        {{ACP}}::ToolCall::new(tool_call_id.to_string(), "Thinking...")
            .kind({{ACP}}::ToolKind::Think)
            .status({{ACP}}::ToolCallStatus::InProgress),
    )
}

/// Heartbeat for the think card: a repeated in_progress update with the elapsed time.
pub fn build_thinking_progress(tool_call_id: &str, elapsed_s: f64) -> {{ACP}}::SessionUpdate {
    {{ACP}}::SessionUpdate::ToolCallUpdate({{ACP}}::ToolCallUpdate::new(
        tool_call_id.to_string(),
        {{ACP}}::ToolCallUpdateFields::new()
            .status({{ACP}}::ToolCallStatus::InProgress)
            .title(format!("Thinking... ({}s)", elapsed_s as u64)),
    ))
}

/// Close the think card (the title resets so the card does not keep a stale timer).
pub fn build_thinking_complete(tool_call_id: &str) -> {{ACP}}::SessionUpdate {
    {{ACP}}::SessionUpdate::ToolCallUpdate({{ACP}}::ToolCallUpdate::new(
        tool_call_id.to_string(),
        {{ACP}}::ToolCallUpdateFields::new()
            .status({{ACP}}::ToolCallStatus::Completed)
            .title("Thinking...".to_string()),
    ))
}
