# acp-patch: text_hold_thread
def install_acp_text_hold(agent):
    """Wrap the agent's ACP callbacks so a trailing reasoning delta never splits the thought block.

    Once reasoning was seen, the first answer text is held for {{PREFIX}}_THINK_HOLD_MS (default 200);
    reasoning arriving meanwhile is sent at once (it joins the thought block). Held text goes out
    before any tool/step/progress event, when the hold expires, and at turn end (`aend_turn`).
    Returns the hold object; re-installing on the next prompt unwraps the previous wrappers.
    """
    import asyncio
    import logging
    import os
    import threading

    log = logging.getLogger(__name__)
    marker = "_acp_text_hold_original"

    def _unwrapped(name):
        callback = getattr(agent, name, None)
        while callback is not None and getattr(callback, marker, None) is not None:
            callback = getattr(callback, marker)
        return callback

    try:
        hold_s = float(os.environ.get("{{PREFIX}}_THINK_HOLD_MS", "200")) / 1000.0
    except ValueError:
        hold_s = 0.2
    if not hold_s >= 0:  # negative or NaN
        hold_s = 0.2

    class _AcpTextHold:
        def __init__(self, text_cb):
            self._text_cb = text_cb
            self._lock = threading.RLock()  # sends run under it: held text leaves before what follows
            self._held = []  # (args, kwargs) of held text calls, in arrival order
            self._reasoning = False  # reasoning seen since the last flush
            self._timer = None

        def reasoning(self, original, *args, **kwargs):
            with self._lock:
                if args and args[0]:
                    self._reasoning = True
                return original(*args, **kwargs)

        def text(self, *args, **kwargs):
            with self._lock:
                is_text = len(args) == 1 and not kwargs and isinstance(args[0], str) and args[0] != ""
                if is_text and (self._held or self._reasoning):
                    self._held.append((args, kwargs))
                    if self._timer is None:
                        self._timer = threading.Timer(hold_s, self._expire, args=(self._held,))
                        self._timer.daemon = True
                        self._timer.start()
                    return None
                self.flush()  # None (Hermes' end-of-message marker) or odd calls: keep order
                return self._text_cb(*args, **kwargs)

        def before(self, original, *args, **kwargs):
            with self._lock:
                self.flush()
                return original(*args, **kwargs)

        def _expire(self, held):
            with self._lock:
                if held is self._held:  # not already flushed / replaced
                    self.flush()

        def flush(self):
            """Send held text now (merged into one call when it is plain strings)."""
            with self._lock:
                held, self._held = self._held, []
                self._reasoning = False
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                if not held:
                    return
                try:
                    self._text_cb("".join(args[0] for args, _ in held))
                except Exception:
                    log.debug("ACP held text flush failed", exc_info=True)

        async def aend_turn(self):
            """Turn end / error path: flush without blocking the event loop, reset per-turn state."""
            if self._lock.acquire(blocking=False):
                try:
                    if not self._held:
                        self.flush()  # nothing to send: just reset
                        return
                finally:
                    self._lock.release()
            # Text is held or a flush is in flight on another thread: the text callback waits on
            # this loop, so run it in an executor.
            await asyncio.get_running_loop().run_in_executor(None, self.flush)

    class _AcpNoTextHold:
        def flush(self):
            pass

        async def aend_turn(self):
            pass

    names = ("reasoning_callback", "stream_delta_callback", "tool_progress_callback", "step_callback", "agent_progress_callback")
    originals = {name: _unwrapped(name) for name in names}
    for name, original in originals.items():
        if original is not None and original is not getattr(agent, name, None):
            setattr(agent, name, original)  # drop a previous install's wrapper
    if originals["stream_delta_callback"] is None or originals["reasoning_callback"] is None:
        return _AcpNoTextHold()  # no connection, or nothing that could split the thought block

    hold = _AcpTextHold(originals["stream_delta_callback"])

    def _wrap(name, method, *bound):
        def wrapper(*args, **kwargs):
            return method(*bound, *args, **kwargs)

        setattr(wrapper, marker, originals[name])
        setattr(agent, name, wrapper)

    _wrap("reasoning_callback", hold.reasoning, originals["reasoning_callback"])
    _wrap("stream_delta_callback", hold.text)
    for name in ("tool_progress_callback", "step_callback", "agent_progress_callback"):
        if originals[name] is not None:
            _wrap(name, hold.before, originals[name])
    return hold
