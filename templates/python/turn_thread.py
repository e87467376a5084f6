# acp-patch: turn_thread
def acp_thinking_turn(connection):
    """Decorator for the ACP prompt handler: the "Thinking..." card opens when the prompt's grace
    ({{PREFIX}}_THINK_AFTER_MS, default 50 ms; 0 = at once) ends before the turn or the engine's
    first output did, so a turn answered at once shows none. The progress callback made during
    the turn (make_agent_progress_cb) takes the card over, so the engine's hooks drive it from
    then on; the turn's end closes it if nothing did. `connection(agent)` is the connection the
    SDK handed over."""
    import asyncio
    import contextvars
    import functools
    import inspect
    import logging
    import os
    import threading
    import uuid

    log = logging.getLogger(__name__)
    entry = globals().setdefault("_acp_entry_card", contextvars.ContextVar("acp_entry_card", default=None))

    async def send(conn, session_id, update):
        try:
            if hasattr(conn, "session_update"):  # SDK >= 0.7
                await conn.session_update(session_id=session_id, update=update)
            else:  # SDK <= 0.6
                await conn.sessionUpdate(acp.session_notification(session_id, update))
        except Exception:
            log.debug("ACP thinking-card update failed", exc_info=True)

    def grace_s():
        try:
            ms = float(os.environ.get("{{PREFIX}}_THINK_AFTER_MS", "").strip() or 50.0)
        except ValueError:
            ms = 50.0
        return ms / 1000.0 if 0 <= ms < float("inf") else 0.05  # negative, NaN, infinite: the default

    def decorate(handler):
        signature = inspect.signature(handler)

        @functools.wraps(handler)
        async def prompt(self, *args, **kwargs):
            try:
                conn = connection(self)
                arguments = signature.bind_partial(self, *args, **kwargs).arguments
                session_id = arguments.get("session_id")
            except Exception:
                conn, session_id = None, None
            if not conn or not isinstance(session_id, str) or entry.get() is not None:
                return await handler(self, *args, **kwargs)
            # state: "pending" (in its grace, nothing sent), "open", "dropped" (the engine's first
            # output came first) or "closed"; changed under the lock, from the loop or the engine
            card = {"id": f"think-{uuid.uuid4().hex[:12]}", "release": None, "lock": threading.Lock(), "state": "pending"}
            starts = []
            loop = asyncio.get_running_loop()

            def grace_over():
                with card["lock"]:
                    if card["state"] == "pending":
                        card["state"] = "open"  # queued before any update that sees "open"
                        starts.append(loop.create_task(send(conn, session_id, build_thinking_start(card["id"]))))

            delay = grace_s()
            timer = loop.call_later(delay, grace_over) if delay > 0 else None
            if timer is None:
                card["state"] = "open"
                await send(conn, session_id, build_thinking_start(card["id"]))
            token = entry.set(card)
            try:
                return await handler(self, *args, **kwargs)
            finally:
                entry.reset(token)
                if timer is not None:
                    timer.cancel()
                with card["lock"]:
                    was, card["state"] = card["state"], "closed"
                release = card["release"]
                if (release is None or release()) and was == "open":  # never taken over, or still open
                    if starts:
                        await asyncio.wait(starts)
                    await send(conn, session_id, build_thinking_complete(card["id"]))

        return prompt

    return decorate
