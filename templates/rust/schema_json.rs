// ---- The messages as JSON (`{{JSON}}::Value`): `session/update` notifications of protocol v1.

fn acp_session_of(n: &AcpNotification) -> String {
    n.pointer("/params/sessionId")
        .and_then(|s| s.as_str())
        .unwrap_or_default()
        .to_string()
}

fn acp_update(session: &str, update: acp_json::Value) -> AcpNotification {
    acp_json::json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session, "update": update},
    })
}

/// Open a virtual "think" tool call: clients show a spinner card while the model works.
pub fn build_thinking_start(session: &str, tool_call_id: &str) -> AcpNotification {
    acp_update(
        session,
        acp_json::json!({
            "sessionUpdate": "tool_call",
            "toolCallId": tool_call_id,
            "title": "Thinking...",
            "kind": "think",
            "status": "in_progress",
        }),
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
        acp_json::json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": tool_call_id,
            "status": "in_progress",
            "title": format!("Thinking... ({}s)", elapsed_s as u64),
        }),
    )
}

/// Close the think card (the title resets so the card does not keep a stale timer).
pub fn build_thinking_complete(session: &str, tool_call_id: &str, failed: bool) -> AcpNotification {
    acp_update(
        session,
        acp_json::json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": tool_call_id,
            "status": if failed { "failed" } else { "completed" },
            "title": "Thinking...",
        }),
    )
}

fn acp_field<'v>(n: &'v AcpNotification, name: &str) -> Option<&'v str> {
    n.pointer("/params/update")?.get(name)?.as_str()
}

/// Real turn output (text, reasoning, tool calls, plans) closes the card; bookkeeping
/// (commands, modes, usage, session info) does not.
fn acp_kind(n: &AcpNotification) -> AcpKind {
    let id = acp_field(n, "toolCallId").unwrap_or_default();
    let finished = matches!(acp_field(n, "status"), Some("completed" | "failed"));
    match acp_field(n, "sessionUpdate").unwrap_or_default() {
        "agent_thought_chunk" => AcpKind::Thought,
        "agent_message_chunk" => AcpKind::Text,
        "tool_call" | "tool_call_update" if acp_is_card(id) => AcpKind::Ours,
        "tool_call" | "tool_call_update" => AcpKind::Tool { finished },
        "plan" => AcpKind::Output,
        _ => AcpKind::Bookkeeping,
    }
}

/// The tool call an update names and whether it starts it (`tool_call`) or updates it.
fn acp_tool_call(n: &AcpNotification) -> Option<(&str, bool)> {
    let id = acp_field(n, "toolCallId")?;
    match acp_field(n, "sessionUpdate")? {
        "tool_call" => Some((id, true)),
        "tool_call_update" => Some((id, false)),
        _ => None,
    }
}

/// Appends a text chunk to the held one before it; `Err` gives it back when they differ.
fn acp_merge_text(into: &mut AcpNotification, n: AcpNotification) -> Result<(), AcpNotification> {
    let text = |v: &AcpNotification| {
        let content = v.pointer("/params/update/content")?;
        (content.get("type")?.as_str()? == "text")
            .then(|| content.get("text")?.as_str().map(str::to_string))
            .flatten()
    };
    let same_session = acp_session_of(into) == acp_session_of(&n);
    let both_text = acp_field(into, "sessionUpdate") == Some("agent_message_chunk")
        && acp_field(&n, "sessionUpdate") == Some("agent_message_chunk");
    match (same_session && both_text, text(into), text(&n)) {
        (true, Some(held), Some(next)) => {
            if let Some(slot) = into.pointer_mut("/params/update/content/text") {
                *slot = acp_json::Value::String(held + &next);
            }
            Ok(())
        }
        _ => Err(n),
    }
}
