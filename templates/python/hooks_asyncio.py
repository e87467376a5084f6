# acp-patch: hooks_asyncio
def _acp_progress_start(agent):
    """Hook A (hand-off to the LLM, on the event loop): open the "Thinking..." card and start the heartbeat."""
    import asyncio
    import logging
    import os
    import time

    _acp_progress_complete(agent)  # a new start closes the open card first
    callback = getattr(agent, "agent_progress_callback", None)
    if callback is None:
        return
    generation = getattr(agent, "_acp_progress_generation", 0) + 1
    agent._acp_progress_generation = generation
    agent._acp_progress_started = time.monotonic()
    agent._acp_progress_open = True
    try:
        callback("start", "llm_response", {})
    except Exception:
        logging.getLogger(__name__).debug("agent_progress_callback(start) failed", exc_info=True)
    if os.environ.get("{{PREFIX}}_HEARTBEAT_DISABLED", "").strip().lower() in ("1", "true", "yes"):
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return  # not on an event loop: no heartbeat
    agent._acp_heartbeat_task = loop.create_task(_acp_progress_heartbeat(agent, generation, asyncio.current_task()))


async def _acp_progress_heartbeat(agent, generation, turn=None):
    """Hook C (a task on the loop): every interval, report the elapsed time until completed or replaced.

    `turn` is the task that started the card (the prompt handler): if it ended without
    completing the card (an exception escaped the model stream), the card is closed here.
    """
    import asyncio
    import logging
    import os
    import time

    try:
        interval = float(os.environ.get("{{PREFIX}}_HEARTBEAT_S", "30"))
    except ValueError:
        interval = 30.0
    interval = interval if interval > 0 else 30.0
    started = getattr(agent, "_acp_progress_started", time.monotonic())
    while True:
        await asyncio.sleep(interval)
        if generation != getattr(agent, "_acp_progress_generation", 0) or not getattr(agent, "_acp_progress_open", False):
            return  # stale: the card was completed or a newer start happened
        if turn is not None and turn.done():
            _acp_progress_complete(agent)
            return
        callback = getattr(agent, "agent_progress_callback", None)
        if callback is None:
            return
        try:
            callback("heartbeat", "llm_response", {"elapsed": time.monotonic() - started})
        except Exception:
            logging.getLogger(__name__).debug("agent_progress_callback(heartbeat) failed", exc_info=True)


def _acp_progress_complete(agent):
    """Hook B (first update after the hand-off, or the turn ended): close the card. Idempotent."""
    import logging

    task = getattr(agent, "_acp_heartbeat_task", None)
    if task is not None:
        agent._acp_heartbeat_task = None
        try:
            task.cancel()
        except RuntimeError:  # its loop is already closed
            pass
    if not getattr(agent, "_acp_progress_open", False):
        return
    agent._acp_progress_open = False
    agent._acp_progress_generation = getattr(agent, "_acp_progress_generation", 0) + 1
    callback = getattr(agent, "agent_progress_callback", None)
    if callback is None:
        return
    try:
        callback("complete", "llm_response", {})
    except Exception:
        logging.getLogger(__name__).debug("agent_progress_callback(complete) failed", exc_info=True)
