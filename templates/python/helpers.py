# acp-patch: helpers
def build_thinking_start(tool_call_id):
    """Open a virtual "think" tool call: clients show a spinner card while the LLM works."""
    return acp.start_tool_call(tool_call_id, "Thinking...", kind="think", status="in_progress")


def build_thinking_progress(tool_call_id, elapsed):
    """Heartbeat for the think card: a repeated in_progress update with the elapsed time."""
    return acp.update_tool_call(tool_call_id, status="in_progress", title=f"Thinking... ({int(elapsed)}s)")


def build_thinking_complete(tool_call_id):
    """Close the think card (the title resets so the card does not keep a stale timer)."""
    return acp.update_tool_call(tool_call_id, status="completed", title="Thinking...")
