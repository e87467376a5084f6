# acp-patch: factory
def make_agent_progress_cb(conn, session_id, loop):
    """Build agent.agent_progress_callback: one "Thinking..." tool card per name (start/heartbeat/complete)."""
    import logging
    import threading
    import uuid

    log = logging.getLogger(__name__)
    lock = threading.RLock()  # hooks fire from worker, stream-reader and timer threads
    open_ids = {}  # name -> tool call id of the open card

    def _send(build, *build_args):
        try:
            {{SEND}}(conn, session_id, loop, build(*build_args))
        except Exception:
            log.debug("ACP thinking-card update failed", exc_info=True)

    def callback(state, name, args=None):
        # Sends happen under the lock so a card's updates leave in state order across threads.
        with lock:
            if state == "start":
                previous = open_ids.pop(name, None)
                if previous is not None:
                    _send(build_thinking_complete, previous)
                tool_call_id = f"think-{uuid.uuid4().hex[:12]}"
                open_ids[name] = tool_call_id
                _send(build_thinking_start, tool_call_id)
            elif state == "heartbeat":
                tool_call_id = open_ids.get(name)
                if tool_call_id is not None:  # no card open: nothing to update
                    elapsed = args.get("elapsed", 0) if isinstance(args, dict) else 0
                    _send(build_thinking_progress, tool_call_id, elapsed)
            elif state == "complete":
                tool_call_id = open_ids.pop(name, None)
                if tool_call_id is not None:
                    _send(build_thinking_complete, tool_call_id)

    return callback
