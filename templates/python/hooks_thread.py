# acp-patch: hooks_thread
def _acp_progress_start(agent):
    """Hook A (LLM call starts): open the "Thinking..." card and arm the heartbeat timer."""
    import logging
    import os
    import threading
    import time

    # Per-agent lock: start (worker), complete (stream reader) and heartbeat (timer) race.
    lock = agent.__dict__.setdefault("_acp_progress_lock", threading.RLock())
    with lock:
        if getattr(agent, "_acp_progress_handoff", False):
            agent._acp_progress_handoff = False
            if getattr(agent, "_acp_progress_open", False):
                return  # the card opened at the hand-off covers this first call of the turn
    _acp_progress_complete(agent)  # a retry starts a new card: close the open one first
    callback = getattr(agent, "agent_progress_callback", None)
    if callback is None:
        return
    with lock:
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
            interval = float(os.environ.get("{{PREFIX}}_HEARTBEAT_S", "30"))
        except ValueError:
            interval = 30.0
        agent._acp_heartbeat_interval = interval if interval > 0 else 30.0
        timer = threading.Timer(agent._acp_heartbeat_interval, _acp_progress_heartbeat, args=(agent, generation))
        timer.daemon = True  # never keeps the process alive
        agent._acp_heartbeat_timer = timer
        timer.start()


def _acp_progress_begin_turn(agent):
    """Hook A at the hand-off (worker thread, before the engine prepares the turn): open the card
    at once, so the client sees it even while the engine is still building its request."""
    import threading

    _acp_progress_start(agent)
    lock = agent.__dict__.setdefault("_acp_progress_lock", threading.RLock())
    with lock:
        agent._acp_progress_handoff = getattr(agent, "_acp_progress_open", False)


def _acp_progress_heartbeat(agent, generation):
    """Hook C (timer thread): report the elapsed time and re-arm, unless the card is closed or replaced."""
    import logging
    import threading
    import time

    lock = agent.__dict__.setdefault("_acp_progress_lock", threading.RLock())
    with lock:
        if generation != getattr(agent, "_acp_progress_generation", 0) or not getattr(agent, "_acp_progress_open", False):
            return  # stale timer: the card was completed or a newer start happened
        elapsed = time.monotonic() - getattr(agent, "_acp_progress_started", time.monotonic())
        callback = getattr(agent, "agent_progress_callback", None)
        if callback is not None:
            try:
                callback("heartbeat", "llm_response", {"elapsed": elapsed})
            except Exception:
                logging.getLogger(__name__).debug("agent_progress_callback(heartbeat) failed", exc_info=True)
        timer = threading.Timer(getattr(agent, "_acp_heartbeat_interval", 30.0), _acp_progress_heartbeat, args=(agent, generation))
        timer.daemon = True
        agent._acp_heartbeat_timer = timer
        timer.start()


def _acp_progress_complete(agent):
    """Hook B (first delta, call returned or failed): close the card. Idempotent, safe from any thread."""
    import logging
    import threading

    lock = agent.__dict__.setdefault("_acp_progress_lock", threading.RLock())
    with lock:
        timer = getattr(agent, "_acp_heartbeat_timer", None)
        if timer is not None:
            agent._acp_heartbeat_timer = None
            timer.cancel()
        agent._acp_progress_handoff = False
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
