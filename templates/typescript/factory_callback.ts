    return (state, name, args) => {
        if (state === "start") {
            const previous = openIds.get(name);
            if (previous !== undefined) {
                send(buildThinkingComplete(previous));
            }
            const toolCallId = `think-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
            openIds.set(name, toolCallId);
            send(buildThinkingStart(toolCallId));
        } else if (state === "heartbeat") {
            const toolCallId = openIds.get(name);
            if (toolCallId !== undefined) {
                send(buildThinkingProgress(toolCallId, Number(args?.elapsed ?? 0)));
            }
        } else if (state === "complete") {
            const toolCallId = openIds.get(name);
            openIds.delete(name);
            if (toolCallId !== undefined) {
                send(buildThinkingComplete(toolCallId));
            }
        }
    };
