# acp-patch: text_hold_asyncio
async def _acp_text_hold(owner, session_id, update, emit):
    """Called first in the emitter. True = the update was held: the caller must not send it.

    Once reasoning was seen, the first answer text is held for {{PREFIX}}_THINK_HOLD_MS (default 200)
    so a trailing reasoning delta still joins the thought block; held text goes out before any
    other update, when the hold expires and at turn end. Held text is re-sent through `emit`,
    which comes back here and passes straight through.
    """
    import asyncio
    import os

    state = owner.__dict__.setdefault("_acp_text_hold_state", {}).setdefault(session_id, {})
    if state.get("flusher") is not None and state.get("flusher") is asyncio.current_task():
        return False  # our own flush re-entering the emitter: send as is
    drain = globals().get("_acp_drain_sends")
    if drain is not None:
        await drain(session_id)  # think-card updates scheduled as tasks go out first
    kind = getattr(update, "session_update", None)
    if kind == "agent_thought_chunk":
        state["reasoning"] = True  # sent at once, even while text is held: it joins the thought block
        return False
    if kind == "agent_message_chunk" and (state.get("held") or state.get("reasoning")):
        held = state.setdefault("held", [])
        held.append(update)
        if len(held) == 1:
            try:
                hold_s = float(os.environ.get("{{PREFIX}}_THINK_HOLD_MS", "200")) / 1000.0
            except ValueError:
                hold_s = 0.2
            if not hold_s >= 0:  # negative or NaN
                hold_s = 0.2
            loop = asyncio.get_running_loop()

            def _expire():
                if state.get("held") is held:  # not flushed meanwhile
                    state["expiry"] = loop.create_task(_acp_text_hold_flush(owner, session_id, emit))

            state["timer"] = loop.call_later(hold_s, _expire)
        return True
    await _acp_text_hold_flush(owner, session_id, emit)  # tool calls and anything else: held text first
    return False


async def _acp_text_hold_flush(owner, session_id, emit):
    """Send held text now, merging consecutive text chunks into one update; then stream directly."""
    import asyncio

    state = owner.__dict__.setdefault("_acp_text_hold_state", {}).setdefault(session_id, {})
    state["reasoning"] = False
    timer = state.pop("timer", None)
    if timer is not None:
        timer.cancel()
    held = state.pop("held", None)
    if not held:
        return
    merged = []
    for update in held:
        previous = merged[-1] if merged else None
        content, previous_content = getattr(update, "content", None), getattr(previous, "content", None)
        if getattr(content, "type", None) == "text" and getattr(previous_content, "type", None) == "text":
            try:
                joined = previous_content.model_copy(update={"text": previous_content.text + content.text})
                merged[-1] = previous.model_copy(update={"content": joined})
                continue
            except Exception:
                pass
        merged.append(update)
    state["flusher"] = asyncio.current_task()
    try:
        for update in merged:
            await emit(session_id, update)
    finally:
        state["flusher"] = None


def _acp_text_hold_begin_turn(owner, session_id):
    """Prompt start: forget the previous turn's reasoning (text from an aborted turn still flushes)."""
    state = owner.__dict__.setdefault("_acp_text_hold_state", {}).setdefault(session_id, {})
    state["reasoning"] = False
    state["flusher"] = None


async def _acp_text_hold_end_turn(owner, session_id, emit):
    """Turn end: send any held text through `emit`, then reset the per-turn state."""
    drain = globals().get("_acp_drain_sends")
    if drain is not None:
        await drain(session_id)
    await _acp_text_hold_flush(owner, session_id, emit)
