# acp-patch: factory
def make_agent_progress_cb(conn, session_id, loop):
    """Build agent.agent_progress_callback: one "Thinking..." tool card per name (start/heartbeat/complete)."""
    import logging
    import threading
    import uuid

    log = logging.getLogger(__name__)
    lock = threading.RLock()  # hooks fire from worker, stream-reader and timer threads
    open_ids = {}  # name -> tool call id of the open card
    adopted = set()  # names whose open card is the one opened at the prompt's entry, not yet started
    entry = globals().get("_acp_entry_card")
    card = entry.get() if entry is not None else None
    if card is not None and card.get("release") is None:
        # acp_thinking_turn opened a card when the prompt arrived: the first start keeps it

        def release():
            """The turn ended: True (and forgotten here) when the entry card is still open."""
            with lock:
                adopted.discard("llm_response")
                if open_ids.get("llm_response") == card["id"]:
                    del open_ids["llm_response"]
                    return True
                return False

        open_ids["llm_response"] = card["id"]
        adopted.add("llm_response")
        card["release"] = release

    def withheld(tool_call_id, drop=False):
        """The entry card still in its grace: none of it is on the wire (drop: it never will be)."""
        if card is None or tool_call_id != card["id"] or "lock" not in card:
            return False
        with card["lock"]:
            if card["state"] != "pending":
                return False
            if drop:
                card["state"] = "dropped"  # the engine answered within the grace: no card at all
            return True

    def _send(build, *build_args):
        try:
            {{SEND}}(conn, session_id, loop, build(*build_args))
        except Exception:
            log.debug("ACP thinking-card update failed", exc_info=True)

    def callback(state, name, args=None):
        # Sends happen under the lock so a card's updates leave in state order across threads.
        with lock:
            if state == "start":
                if name in adopted:
                    adopted.discard(name)
                    return  # the card opened at the prompt's entry stands for this start
                previous = open_ids.pop(name, None)
                if previous is not None and not withheld(previous, drop=True):
                    _send(build_thinking_complete, previous)
                tool_call_id = f"think-{uuid.uuid4().hex[:12]}"
                open_ids[name] = tool_call_id
                _send(build_thinking_start, tool_call_id)
            elif state == "heartbeat":
                tool_call_id = open_ids.get(name)
                if tool_call_id is not None and not withheld(tool_call_id):  # no card on the wire: nothing to update
                    elapsed = args.get("elapsed", 0) if isinstance(args, dict) else 0
                    _send(build_thinking_progress, tool_call_id, elapsed)
            elif state == "complete":
                tool_call_id = open_ids.pop(name, None)
                if tool_call_id is not None and not withheld(tool_call_id, drop=True):
                    _send(build_thinking_complete, tool_call_id)

    return callback
