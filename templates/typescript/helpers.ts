// acp-patch: helpers
type AcpProgressCallback = (state: string, name: string, args?: Record<string, unknown>) => void;

/** Open a virtual "think" tool call: clients show a spinner card while the LLM works. */
function buildThinkingStart(toolCallId: string) {
    return { sessionUpdate: "tool_call", toolCallId, title: "Thinking...", kind: "think", status: "in_progress" } as const;
}

/** Heartbeat for the think card: a repeated in_progress update with the elapsed time. */
function buildThinkingProgress(toolCallId: string, elapsed: number) {
    return { sessionUpdate: "tool_call_update", toolCallId, status: "in_progress", title: `Thinking... (${Math.floor(elapsed)}s)` } as const;
}

/** Close the think card (the title resets so the card does not keep a stale timer). */
function buildThinkingComplete(toolCallId: string) {
    return { sessionUpdate: "tool_call_update", toolCallId, status: "completed", title: "Thinking..." } as const;
}
