# acp-patch: send
def _acp_send_update(conn, session_id, loop, update):
    """Send one session update from any thread; never raises, never blocks the event loop."""
    import asyncio
    import logging

    log = logging.getLogger(__name__)
    try:
        if hasattr(conn, "session_update"):  # SDK >= 0.7
            coro = conn.session_update(session_id=session_id, update=update)
        else:  # SDK <= 0.6
            coro = conn.sessionUpdate(acp.session_notification(session_id, update))
    except Exception:
        log.debug("ACP session update failed", exc_info=True)
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is not None and running is loop:
        # On the loop thread we must not wait: schedule a task chained after the session's
        # previous send (order), keep a strong reference, and let _acp_drain_sends await it.
        pending = globals().setdefault("_acp_pending_sends", {}).setdefault(session_id, [])
        previous = pending[-1] if pending else None

        async def _send_in_order():
            try:
                if previous is not None:
                    await asyncio.wait([previous])
            except BaseException:
                coro.close()  # cancelled before sending: no "never awaited" warning
                raise
            await coro

        def _done(task):
            if task in pending:
                pending.remove(task)
            if not task.cancelled() and task.exception() is not None:
                log.debug("ACP session update failed", exc_info=task.exception())

        task = loop.create_task(_send_in_order())
        pending.append(task)
        task.add_done_callback(_done)
        return
    try:
        future = asyncio.run_coroutine_threadsafe(coro, loop)
    except Exception:
        coro.close()  # loop gone: never scheduled, avoid a "never awaited" warning
        log.debug("ACP session update failed", exc_info=True)
        return
    try:
        future.result(timeout=5)
    except Exception:
        log.debug("ACP session update failed", exc_info=True)


async def _acp_drain_sends(session_id):
    """Wait until every update scheduled on the loop for this session has been sent."""
    import asyncio

    pending = globals().get("_acp_pending_sends", {}).get(session_id, [])
    while True:
        tasks = [task for task in pending if not task.done()]
        if not tasks:
            return
        # asyncio.wait, not gather: cancelling the drainer must not cancel the sends.
        await asyncio.wait(tasks)
