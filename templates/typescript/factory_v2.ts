// acp-patch: factory
type AcpThinkingUpdate = ReturnType<typeof buildThinkingStart | typeof buildThinkingProgress | typeof buildThinkingComplete>;

/** Build agentProgressCallback: one "Thinking..." tool card per name, sent with client.notify("session/update") (SDK 2.x). */
function makeAgentProgressCb(client: { notify(method: "session/update", params: { sessionId: string; update: AcpThinkingUpdate }): unknown }, sessionId: string): AcpProgressCallback {
    const openIds = new Map<string, string>();
    const send = (update: AcpThinkingUpdate): void => {
        try {
            Promise.resolve(client.notify("session/update", { sessionId, update })).catch(() => undefined);
        } catch {
            // the client is gone: a card update is not worth failing the turn
        }
    };
{{CALLBACK}}
}
