# acp-patch: turn_thread
def acp_thinking_turn(connection):
    """Decorator for the ACP prompt handler: the "Thinking..." card opens the moment the prompt
    arrives, before the handler's own set-up. The progress callback made during the turn
    (make_agent_progress_cb) takes it over, so the engine's hooks drive it from then on; the
    turn's end closes it if nothing did. `connection(agent)` is the connection the SDK handed over."""
    import contextvars
    import functools
    import inspect
    import logging
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
            card = {"id": f"think-{uuid.uuid4().hex[:12]}", "release": None}
            await send(conn, session_id, build_thinking_start(card["id"]))
            token = entry.set(card)
            try:
                return await handler(self, *args, **kwargs)
            finally:
                entry.reset(token)
                release = card["release"]
                if release is None or release():  # never taken over, or still open at the end
                    await send(conn, session_id, build_thinking_complete(card["id"]))

        return prompt

    return decorate
