// acp-patch: text hold
type AcpTextHoldState = { reasoning: boolean; held: unknown[]; flushing: boolean; timer?: ReturnType<typeof setTimeout>; emit?: (update: never) => unknown };
const acpTextHoldStates = new WeakMap<object, Map<unknown, AcpTextHoldState>>();

/** The hold of one session of an owner (`key`: the session id, when one owner serves many). */
function acpTextHoldState(owner: object, key: unknown): AcpTextHoldState {
    let states = acpTextHoldStates.get(owner);
    if (!states) {
        states = new Map();
        acpTextHoldStates.set(owner, states);
    }
    let state = states.get(key);
    if (!state) {
        state = { reasoning: false, held: [], flushing: false };
        states.set(key, state);
    }
    return state;
}

/**
 * Called first in the emitter. True = the update was held: the caller must not send it.
 * Once reasoning was seen in the turn, the first answer text is held for {{PREFIX}}_THINK_HOLD_MS
 * (default 200; 0 = next tick) so a trailing reasoning delta still joins the thought block.
 * Held text goes out before any other update, when the hold expires and at turn end.
 */
function acpTextHold<U>(owner: object, update: U, emit: (update: U) => unknown, key?: unknown): boolean {
    const state = acpTextHoldState(owner, key);
    if (state.flushing) {
        return false; // our own flush re-entering the emitter: send as is
    }
    state.emit = emit as (update: never) => unknown;
    const kind = (update as { sessionUpdate?: unknown } | null | undefined)?.sessionUpdate;
    if (kind === "agent_thought_chunk") {
        state.reasoning = true; // sent at once, even while text is held: it joins the thought block
        return false;
    }
    if (kind === "agent_message_chunk" && (state.reasoning || state.held.length > 0)) {
        state.held.push(update);
        if (state.held.length === 1) {
            const ms = Number(process.env.{{PREFIX}}_THINK_HOLD_MS ?? "200");
            state.timer = setTimeout(() => void acpTextHoldFlush(owner, key), Number.isFinite(ms) && ms >= 0 ? ms : 200);
        }
        return true;
    }
    if (state.held.length > 0) {
        void acpTextHoldFlush(owner, key); // tool calls and anything else: held text goes first
    }
    return false;
}

/**
 * Send held text now (consecutive text chunks merged into one update); after it, text streams
 * directly. With a key, that session's hold; without, every hold of the owner (cancel).
 */
async function acpTextHoldFlush(owner: object, ...key: unknown[]): Promise<void> {
    const states = acpTextHoldStates.get(owner);
    if (!states) {
        return;
    }
    if (key.length === 0) {
        await Promise.all(Array.from(states.keys(), (k) => acpTextHoldFlush(owner, k)));
        return;
    }
    const state = acpTextHoldState(owner, key[0]);
    state.reasoning = false;
    clearTimeout(state.timer);
    state.timer = undefined;
    const held = state.held;
    state.held = [];
    const emit = state.emit;
    if (held.length === 0 || !emit) {
        return;
    }
    type Chunk = { content?: { type?: unknown; text?: unknown } };
    const merged: unknown[] = [];
    for (const update of held) {
        const previous = merged[merged.length - 1] as Chunk | undefined;
        const content = (update as Chunk).content;
        if (previous?.content?.type === "text" && content?.type === "text") {
            merged[merged.length - 1] = { ...previous, content: { ...previous.content, text: `${previous.content.text ?? ""}${content.text ?? ""}` } };
        } else {
            merged.push(update);
        }
    }
    for (const update of merged) {
        state.flushing = true;
        let sent: unknown;
        try {
            sent = emit(update as never);
        } finally {
            state.flushing = false;
        }
        await sent;
    }
}
