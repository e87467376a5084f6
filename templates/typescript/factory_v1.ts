// acp-patch: factory
type AcpThinkingUpdate = ReturnType<typeof buildThinkingStart | typeof buildThinkingProgress | typeof buildThinkingComplete>;

/** Build agentProgressCallback: one "Thinking..." tool card per name, sent with conn.sessionUpdate (SDK 0.x/1.x). */
function makeAgentProgressCb(conn: { sessionUpdate(params: { sessionId: string; update: AcpThinkingUpdate }): unknown }, sessionId: string): AcpProgressCallback {
    const openIds = new Map<string, string>();
    const send = (update: AcpThinkingUpdate): void => {
        try {
            Promise.resolve(conn.sessionUpdate({ sessionId, update })).catch(() => undefined);
        } catch {
            // the client is gone: a card update is not worth failing the turn
        }
    };
{{CALLBACK}}
}
