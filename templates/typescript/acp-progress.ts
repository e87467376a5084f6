// acp-patch: runtime module, generated — do not edit; acp-patch apply updates it, acp-patch revert removes it
//
// A "Thinking..." card for every silent wait of an ACP agent, and one thought block per answer.
// The agent's prompt handlers run through `turn` / `handler` (the turn's start and end), its
// `session/cancel` handlers through `cancel` / `cancelHandler`, and every send of a session update
// through `emitter(connection)`, which forwards the call unchanged (same arguments, same promise)
// after closing the session's card and holding text as described below. State is per session id.
// Needs nothing but the JavaScript runtime and never writes to stdout (stdout is the protocol).

type AcpUpdate = { sessionUpdate?: unknown; toolCallId?: unknown; status?: unknown; content?: unknown };
type AcpTimer = { unref?: () => unknown };
type AcpHost = {
    process?: { env?: Record<string, string | undefined>; stderr?: { write(text: string): unknown } };
    setTimeout(callback: () => void, ms: number): AcpTimer;
    clearTimeout(timer: AcpTimer | undefined): void;
    setInterval(callback: () => void, ms: number): AcpTimer;
    clearInterval(timer: AcpTimer | undefined): void;
};
const host = globalThis as unknown as AcpHost;

type AcpState = { sessions: Map<string, AcpSession>; ownCards: Set<unknown>; proxies: WeakMap<object, object>; passing: number };
const ACP_STATE = Symbol.for("acp-patch.acp-progress.v1");
const shared = globalThis as unknown as { [key: symbol]: AcpState | undefined };
/** Shared by every copy of this module in the process (one per package of a monorepo). */
const acpState: AcpState = shared[ACP_STATE] ?? (shared[ACP_STATE] = { sessions: new Map(), ownCards: new Set(), proxies: new WeakMap(), passing: 0 });

/** The progress callback: "start" opens the card, "heartbeat" refreshes it, "complete" closes it. */
export type AcpProgressCallback = (state: "start" | "heartbeat" | "complete", name: string, args?: { elapsed?: number; failed?: boolean }) => void;

/** Open a virtual "think" tool call: clients show a spinner card while the model works. */
export function buildThinkingStart(toolCallId: string) {
    return { sessionUpdate: "tool_call", toolCallId, title: "Thinking...", kind: "think", status: "in_progress" } as const;
}

/** Heartbeat for the think card: a repeated in_progress update with the elapsed time. */
export function buildThinkingProgress(toolCallId: string, elapsed: number) {
    return { sessionUpdate: "tool_call_update", toolCallId, status: "in_progress", title: `Thinking... (${Math.floor(elapsed)}s)` } as const;
}

/** Close the think card (failed when the turn failed; the title drops the timer). */
export function buildThinkingComplete(toolCallId: string, failed = false) {
    return { sessionUpdate: "tool_call_update", toolCallId, status: failed ? "failed" : "completed", title: "Thinking..." } as const;
}

/** Build agentProgressCallback: one "Thinking..." card at a time, each update sent with `send`. */
export function makeAgentProgressCb(send: (update: object) => unknown): AcpProgressCallback {
    let open: string | undefined;
    const post = (update: object): void => {
        try {
            const sent = send(update);
            if (isThenable(sent)) {
                sent.then(undefined, (error: unknown) => debug("a card update failed", error));
            }
        } catch (error) {
            debug("a card update failed", error); // the client is gone: not worth failing the turn
        }
    };
    return (state, _name, args) => {
        if (state === "start") {
            if (open !== undefined) {
                post(buildThinkingComplete(open));
            }
            open = `think-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
            acpState.ownCards.add(open);
            post(buildThinkingStart(open));
        } else if (state === "heartbeat") {
            if (open !== undefined) {
                post(buildThinkingProgress(open, args?.elapsed ?? 0));
            }
        } else if (open !== undefined) {
            const toolCallId = open;
            open = undefined;
            post(buildThinkingComplete(toolCallId, args?.failed === true));
            acpState.ownCards.delete(toolCallId);
        }
    };
}

type AcpHeld = { update: AcpUpdate; send: (update: AcpUpdate) => unknown };
/** `send`: the writer the card opened on; its heartbeats and completion go out the same way. */
type AcpCard = { started: number; heartbeat: AcpTimer | undefined; send: ((update: object) => unknown) | undefined };
type AcpSession = {
    id: string;
    /** Set per prompt from the connection the SDK hands over; later sends refine `send`. */
    agentProgressCallback: AcpProgressCallback | undefined;
    send: ((update: object) => unknown) | undefined;
    turns: number;
    cancelled: boolean;
    card: AcpCard | undefined;
    reasoning: boolean;
    held: AcpHeld[];
    holdTimer: AcpTimer | undefined;
    gapTimer: AcpTimer | undefined;
    /** Ids of the tool calls this session's updates started. */
    toolCalls: Set<unknown>;
};
function sessionOf(sessionId: string): AcpSession {
    let session = acpState.sessions.get(sessionId);
    if (!session) {
        session = { id: sessionId, agentProgressCallback: undefined, send: undefined, turns: 0, cancelled: false, card: undefined, reasoning: false, held: [], holdTimer: undefined, gapTimer: undefined, toolCalls: new Set() };
        acpState.sessions.set(sessionId, session);
    }
    return session;
}

function env(name: string): string | undefined {
    return host.process?.env?.[`{{PREFIX}}_${name}`];
}

function envMs(name: string, fallback: number): number {
    const value = Number(env(name) ?? fallback);
    return Number.isFinite(value) && value >= 0 ? value : fallback;
}

function debug(message: string, error?: unknown): void {
    if (!env("DEBUG")) {
        return;
    }
    try {
        host.process?.stderr?.write(`acp-progress: ${message}${error === undefined ? "" : `: ${String(error)}`}\n`);
    } catch {
        // stderr is gone too
    }
}

let unsentSaid = false;

/** Says once, on stderr, that a turn found no connection to send its card on. */
function sayUnsent(): void {
    if (unsentSaid) {
        return;
    }
    unsentSaid = true;
    try {
        host.process?.stderr?.write(`acp-progress: thinking card not sent: no connection found on the agent; it runs on without it\n`);
    } catch {
        // stderr is gone too
    }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
    return (typeof value === "object" || typeof value === "function") && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** Runs one of our own sends: an emitter it reaches (a wrapped send inside a wrapped send) forwards it as is. */
function pass<T>(send: () => T): T {
    acpState.passing += 1;
    try {
        return send();
    } finally {
        acpState.passing -= 1;
    }
}

/** How to send a card with the connection the SDK handed over (or the agent's own writer). */
function senderFor(conn: unknown, sessionId: string): ((update: object) => unknown) | undefined {
    if (typeof conn === "function") {
        const write = conn as (params: { sessionId: string; update: object }) => unknown;
        return (update) => pass(() => write({ sessionId, update }));
    }
    if (typeof conn !== "object" || conn === null) {
        return undefined;
    }
    const client = conn as { sessionUpdate?: unknown; notify?: unknown };
    const sessionUpdate = client.sessionUpdate;
    if (typeof sessionUpdate === "function") {
        return (update) => pass(() => sessionUpdate.call(client, { sessionId, update }));
    }
    const notify = client.notify;
    if (typeof notify === "function") {
        return (update) => pass(() => notify.call(client, "session/update", { sessionId, update }));
    }
    return undefined;
}

/** Hook A: the wait for the model begins; opens the card and arms the heartbeat. */
function openCard(session: AcpSession): void {
    closeCard(session, false); // a new start closes the open card first
    const callback = session.agentProgressCallback;
    if (!callback || !session.send) {
        return; // no connection to show it on (yet)
    }
    const card: AcpCard = { started: Date.now(), heartbeat: undefined, send: session.send };
    session.card = card;
    try {
        callback("start", "llm_response", {});
    } catch (error) {
        debug("the start hook failed", error);
    }
    const disabled = (env("HEARTBEAT_DISABLED") ?? "").trim().toLowerCase();
    if (disabled === "1" || disabled === "true" || disabled === "yes") {
        return;
    }
    const seconds = Number(env("HEARTBEAT_S") ?? "30");
    const interval = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 30000;
    const timer = host.setInterval(() => {
        const current = session.agentProgressCallback;
        if (session.card !== card || !current) {
            host.clearInterval(timer);
            return;
        }
        onCardWriter(session, card, () => {
            try {
                current("heartbeat", "llm_response", { elapsed: (Date.now() - card.started) / 1000 });
            } catch (error) {
                debug("the heartbeat hook failed", error);
            }
        });
    }, interval);
    timer.unref?.(); // never keeps the process alive
    card.heartbeat = timer;
}

/** Hook B: the first real output (or the turn's end) closes the card. Idempotent. */
function closeCard(session: AcpSession, failed: boolean): void {
    const card = session.card;
    if (!card) {
        return;
    }
    session.card = undefined;
    host.clearInterval(card.heartbeat);
    const callback = session.agentProgressCallback;
    if (!callback) {
        return;
    }
    onCardWriter(session, card, () => {
        try {
            callback("complete", "llm_response", { failed });
        } catch (error) {
            debug("the complete hook failed", error);
        }
    });
}

/**
 * Runs a hook of `card` on the writer the card opened on: an agent whose own sends take another
 * writer (its own stdout beside the SDK's connection) would otherwise complete the card before
 * its start is on the wire.
 */
function onCardWriter(session: AcpSession, card: AcpCard, hook: () => void): void {
    const send = session.send;
    session.send = card.send ?? send;
    try {
        hook();
    } finally {
        session.send = send;
    }
}

function clearGap(session: AcpSession): void {
    host.clearTimeout(session.gapTimer);
    session.gapTimer = undefined;
}

/**
 * A card once the session stays silent (no real update) for `ms`: {{PREFIX}}_THINK_AFTER_MS after the
 * prompt (a turn answered within it needs none), {{PREFIX}}_THINK_GAP_MS after a tool call finished.
 */
function armGap(session: AcpSession, ms = envMs("THINK_GAP_MS", 500)): void {
    clearGap(session);
    if (ms <= 0 || session.cancelled) {
        return;
    }
    const timer = host.setTimeout(() => {
        if (session.gapTimer === timer) {
            session.gapTimer = undefined;
            if (session.turns > 0 && !session.cancelled && !session.card) {
                openCard(session);
            }
        }
    }, ms);
    timer.unref?.();
    session.gapTimer = timer;
}

/** Sends held text now (consecutive text chunks merged into one update); after it, text streams directly. */
function flush(session: AcpSession): Promise<void> {
    host.clearTimeout(session.holdTimer);
    session.holdTimer = undefined;
    session.reasoning = false;
    const held = session.held;
    session.held = [];
    const merged: AcpHeld[] = [];
    for (const entry of held) {
        const previous = merged.length > 0 ? merged[merged.length - 1] : undefined;
        const before = previous?.update.content as { type?: unknown; text?: unknown } | undefined;
        const content = entry.update.content as { type?: unknown; text?: unknown } | undefined;
        if (previous && before?.type === "text" && content?.type === "text") {
            const text = `${String(before.text ?? "")}${String(content.text ?? "")}`;
            previous.update = { ...previous.update, content: { ...before, text } };
        } else {
            merged.push({ ...entry });
        }
    }
    const sent: Promise<unknown>[] = [];
    for (const entry of merged) {
        try {
            sent.push(Promise.resolve(entry.send(entry.update)).catch((error: unknown) => debug("sending held text failed", error)));
        } catch (error) {
            debug("sending held text failed", error);
        }
    }
    return Promise.all(sent).then(() => undefined);
}

const REAL = new Set<unknown>(["agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"]);

/**
 * One session update on its way out, with `send` forwarding it (or another update in its place)
 * exactly as the agent's call would. Bookkeeping (commands, modes, session info, usage, anything
 * unknown, an update of a tool call never started) passes. Real output closes the card first. Once reasoning was seen in a turn, the first
 * answer text is held for {{PREFIX}}_THINK_HOLD_MS (default 200; 0 = next tick): thoughts arriving
 * meanwhile go out at once (they join the thought block), more text joins the held text, and held
 * text goes out before anything else, when the hold expires and at the turn's end.
 */
function forward(sessionId: string, update: AcpUpdate, send: (update: AcpUpdate) => unknown): unknown {
    const session = sessionOf(sessionId);
    session.send = send; // later cards go out the way the agent's own updates do
    const kind = update.sessionUpdate;
    if (kind === "tool_call" && update.toolCallId !== undefined) {
        session.toolCalls.add(update.toolCallId);
    }
    // an update of a tool call never started shows nothing in a client: it leaves a card due
    const unstarted = kind === "tool_call_update" && !session.toolCalls.has(update.toolCallId);
    if (!REAL.has(kind) || acpState.ownCards.has(update.toolCallId) || unstarted) {
        if (session.held.length > 0) {
            void flush(session);
        }
        return send(update);
    }
    clearGap(session);
    closeCard(session, false);
    if (kind === "agent_thought_chunk") {
        session.reasoning = session.turns > 0;
        return send(update);
    }
    if (kind === "agent_message_chunk" && session.turns > 0 && (session.reasoning || session.held.length > 0)) {
        session.held.push({ update, send });
        if (session.held.length === 1) {
            const timer = host.setTimeout(() => void flush(session), envMs("THINK_HOLD_MS", 200));
            timer.unref?.();
            session.holdTimer = timer;
        }
        return Promise.resolve(undefined);
    }
    if (session.held.length > 0) {
        void flush(session);
    }
    const status = update.status;
    if (session.turns > 0 && (kind === "tool_call" || kind === "tool_call_update") && (status === "completed" || status === "failed")) {
        armGap(session);
    }
    return send(update);
}

type AcpEnvelope = { sessionId: string; update: AcpUpdate; rebuild: (update: AcpUpdate) => unknown[] };

function asRecord(value: unknown): Record<string, unknown> | undefined {
    return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** `{ sessionId, update }` (the SDK's notification), and how to put another update in its place. */
function notification(value: unknown): { sessionId: string; update: AcpUpdate; with: (update: AcpUpdate) => Record<string, unknown> } | undefined {
    const params = asRecord(value);
    const update = asRecord(params?.["update"]);
    const sessionId = params?.["sessionId"];
    if (!params || !update || typeof sessionId !== "string") {
        return undefined;
    }
    return { sessionId, update, with: (next) => ({ ...params, update: next }) };
}

/** The session update a call carries, whatever the call: the SDK's `sessionUpdate(n)` or `notify("session/update", n)`, or a JSON-RPC message (object or text) for the agent's own writer. */
function envelope(args: unknown[]): AcpEnvelope | undefined {
    for (let i = 0; i < args.length; i += 1) {
        const arg = args[i];
        const replaced = (value: unknown): unknown[] => args.map((a, k) => (k === i ? value : a));
        const direct = notification(arg);
        if (direct) {
            return { sessionId: direct.sessionId, update: direct.update, rebuild: (u) => replaced(direct.with(u)) };
        }
        const message = asRecord(arg);
        if (message && message["method"] === "session/update") {
            const inner = notification(message["params"]);
            if (inner) {
                return { sessionId: inner.sessionId, update: inner.update, rebuild: (u) => replaced({ ...message, params: inner.with(u) }) };
            }
        }
        if (typeof arg === "string" && arg.includes("session/update")) {
            const text = arg.trimEnd();
            let parsed: unknown;
            try {
                parsed = JSON.parse(text);
            } catch {
                continue;
            }
            const record = asRecord(parsed);
            const inner = record && record["method"] === "session/update" ? notification(record["params"]) : undefined;
            if (record && inner) {
                const tail = arg.slice(text.length);
                return { sessionId: inner.sessionId, update: inner.update, rebuild: (u) => replaced(`${JSON.stringify({ ...record, params: inner.with(u) })}${tail}`) };
            }
        }
    }
    return undefined;
}

function dispatch(args: unknown[], call: (args: unknown[]) => unknown): unknown {
    const found = acpState.passing === 0 ? envelope(args) : undefined;
    if (!found) {
        return call(args);
    }
    return forward(found.sessionId, found.update, (update) => pass(() => call(found.rebuild(update))));
}

/**
 * The emitter: `emitter(conn).sessionUpdate(...)`, `emitter(client).notify("session/update", ...)`,
 * `emitter(writer)(message)`. The same object, method and arguments, seen on the way out.
 */
export function emitter<C>(conn: C): C {
    if ((typeof conn !== "object" && typeof conn !== "function") || conn === null) {
        return conn;
    }
    const target = conn as unknown as object;
    let proxy = acpState.proxies.get(target);
    if (!proxy) {
        proxy = new Proxy(target, {
            get(object, property) {
                const value: unknown = Reflect.get(object, property, object);
                if (typeof value !== "function") {
                    return value;
                }
                return (...args: unknown[]) => dispatch(args, (a) => Reflect.apply(value as (...a: unknown[]) => unknown, object, a));
            },
            apply(fn, self, args: unknown[]) {
                return dispatch(args, (a) => Reflect.apply(fn as (...a: unknown[]) => unknown, self, a));
            },
        });
        acpState.proxies.set(target, proxy);
    }
    return proxy as C;
}

/**
 * The connection an installed base class of the agent keeps and sends every update on (the
 * agent's own code has no send to wrap): the one field of the agent answering the client's side
 * of the protocol, `sessionUpdate` beside `requestPermission`. Its `sessionUpdate` is relayed
 * from then on, so what the base class sends completes the card and joins the text hold.
 */
export function held(agent: unknown): unknown {
    if (typeof agent !== "object" || agent === null) {
        return undefined;
    }
    const found: object[] = [];
    for (const key of Object.getOwnPropertyNames(agent)) {
        let value: unknown;
        try {
            value = (agent as Record<string, unknown>)[key];
        } catch {
            continue;
        }
        if (typeof value !== "object" || value === null || value === agent || found.includes(value)) {
            continue;
        }
        const client = value as { sessionUpdate?: unknown; requestPermission?: unknown };
        if (typeof client.sessionUpdate === "function" && typeof client.requestPermission === "function") {
            found.push(value);
        }
    }
    if (found.length !== 1) {
        return undefined;
    }
    const conn = found[0] as { sessionUpdate: (...args: unknown[]) => unknown };
    const own = conn.sessionUpdate as ((...args: unknown[]) => unknown) & { acpProgressRelay?: boolean };
    if (!own.acpProgressRelay) {
        const relay = Object.assign((...args: unknown[]): unknown => dispatch(args, (a) => Reflect.apply(own, conn, a)), { acpProgressRelay: true });
        try {
            Object.defineProperty(conn, "sessionUpdate", { value: relay, configurable: true, writable: true });
        } catch {
            // a frozen connection keeps its own send: the card then closes at the turn's end
        }
    }
    return conn;
}

function beginTurn(sessionId: string, conn: unknown): AcpSession {
    const session = sessionOf(sessionId);
    const send = senderFor(conn, sessionId);
    if (session.turns === 0) {
        closeCard(session, false);
        session.cancelled = false;
        session.reasoning = false;
        session.agentProgressCallback = makeAgentProgressCb((update) => session.send?.(update));
    }
    // a turn begun inside another of the session (the handler the SDK calls handing the prompt
    // to the agent's own dispatcher, which writes by itself) keeps the open card, on its writer
    if (send && !session.card) {
        session.send = send;
    } else if (!send && !session.send) {
        sayUnsent();
    }
    session.turns += 1;
    const grace = envMs("THINK_AFTER_MS", 50);
    if (grace <= 0) {
        if (!session.card) {
            openCard(session);
        }
    } else if (!session.card) {
        armGap(session, grace);
    }
    return session;
}

async function endTurn(session: AcpSession, failed: boolean): Promise<void> {
    session.turns = Math.max(0, session.turns - 1);
    if (session.turns > 0) {
        return; // another prompt of the session still runs
    }
    clearGap(session);
    closeCard(session, failed);
    await flush(session);
    if (session.turns === 0 && session.held.length === 0 && acpState.sessions.get(session.id) === session) {
        acpState.sessions.delete(session.id); // the next turn starts afresh
    }
}

/**
 * Runs one prompt turn of a session: the card opens on the connection the SDK handed over unless a
 * real update comes within {{PREFIX}}_THINK_AFTER_MS (default 50; 0 = now), and closes at the first
 * one; when the turn returns, throws or rejects, the card is closed (failed on error), held text goes
 * out and the timers stop. `body` is the handler's own code.
 */
export function turn<T>(conn: unknown, sessionId: unknown, body: () => T): T {
    const session = beginTurn(String(sessionId), conn);
    let result: T;
    try {
        result = body();
    } catch (error) {
        void endTurn(session, true);
        throw error;
    }
    if (isThenable(result)) {
        const settled = result.then(
            async (value) => {
                await endTurn(session, false);
                return value;
            },
            async (error: unknown) => {
                await endTurn(session, true);
                throw error;
            },
        );
        return settled as unknown as T;
    }
    void endTurn(session, false);
    return result;
}

type AcpContext = { params?: { sessionId?: unknown }; client?: unknown } | undefined;

/** `turn` for a handler registered with the SDK (2.x `onRequest("session/prompt", ...)`): its context holds the client and the params. */
export function handler<F extends (...args: never[]) => unknown>(fn: F): F {
    const wrapped = function (this: unknown, ...args: never[]): unknown {
        const context = args[0] as AcpContext;
        return turn(context?.client, context?.params?.sessionId, () => fn.apply(this, args));
    };
    return wrapped as unknown as F;
}

/** `session/cancel`: the card closes, held text goes out, no gap card opens until the turn ends. */
export function cancel(sessionId: unknown): void {
    const session = acpState.sessions.get(String(sessionId));
    if (!session) {
        return;
    }
    session.cancelled = true;
    clearGap(session);
    closeCard(session, false);
    void flush(session);
}

/** `cancel` for a handler registered with the SDK (2.x `onNotification("session/cancel", ...)`). */
export function cancelHandler<F extends (...args: never[]) => unknown>(fn: F): F {
    const wrapped = function (this: unknown, ...args: never[]): unknown {
        cancel((args[0] as AcpContext)?.params?.sessionId);
        return fn.apply(this, args);
    };
    return wrapped as unknown as F;
}
