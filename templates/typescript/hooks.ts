// acp-patch: hooks
type AcpProgressOwner = { agentProgressCallback?: AcpProgressCallback };
const acpProgressStates = new WeakMap<object, { open: boolean; started: number; timer?: ReturnType<typeof setInterval> }>();

/** Hook A (hand-off to the model): open the "Thinking..." card and arm the heartbeat. */
function acpProgressStart(owner: AcpProgressOwner): void {
    acpProgressComplete(owner); // a new start closes the open card first
    const callback = owner.agentProgressCallback;
    if (!callback) {
        return;
    }
    const state: { open: boolean; started: number; timer?: ReturnType<typeof setInterval> } = { open: true, started: Date.now() };
    acpProgressStates.set(owner, state);
    try {
        callback("start", "llm_response", {});
    } catch {
        // a failing callback must not fail the turn
    }
    const disabled = (process.env.{{PREFIX}}_HEARTBEAT_DISABLED ?? "").trim().toLowerCase();
    if (disabled === "1" || disabled === "true" || disabled === "yes") {
        return;
    }
    const seconds = Number(process.env.{{PREFIX}}_HEARTBEAT_S ?? "30");
    const interval = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 30000;
    const timer = setInterval(() => {
        const current = owner.agentProgressCallback;
        if (!state.open || acpProgressStates.get(owner) !== state || !current) {
            clearInterval(timer);
            return;
        }
        try {
            current("heartbeat", "llm_response", { elapsed: (Date.now() - state.started) / 1000 });
        } catch {
            // a failing callback must not fail the turn
        }
    }, interval);
    timer.unref?.(); // never keeps the process alive
    state.timer = timer;
}

/** Hook B (first update of the turn; also turn end, error and cancel): close the card. Idempotent. */
function acpProgressComplete(owner: AcpProgressOwner): void {
    const state = acpProgressStates.get(owner);
    if (!state) {
        return;
    }
    acpProgressStates.delete(owner);
    clearInterval(state.timer);
    if (!state.open) {
        return;
    }
    state.open = false;
    const callback = owner.agentProgressCallback;
    if (!callback) {
        return;
    }
    try {
        callback("complete", "llm_response", {});
    } catch {
        // a failing callback must not fail the turn
    }
}

/** Hook B at the emitter: the first real update of the turn (a chunk, a tool call) closes the card. */
function acpProgressOnUpdate(owner: AcpProgressOwner, update: unknown): void {
    const kind = (update as { sessionUpdate?: unknown } | null | undefined)?.sessionUpdate;
    if (kind === "session_info_update" || kind === "usage_update" || kind === "available_commands_update" || kind === "current_mode_update") {
        return; // bookkeeping, not the model at work
    }
    acpProgressComplete(owner);
}
