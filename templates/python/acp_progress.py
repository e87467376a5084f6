# acp-patch: runtime module, generated — do not edit; acp-patch apply updates it, acp-patch revert removes it
"""A "Thinking..." card for an ACP agent while it waits for its model, and one thought block.

acp-patch wrote this module into the agent's top-level package; the agent's own files only call it:

- ``@acp_progress.prompt_handler(...)`` on each prompt handler the SDK calls: the session's
    card opens when the prompt's first real update has not come within a short grace (a turn
    answered at once shows none; bookkeeping meanwhile leaves it due) and the agent is waiting,
    not still working on its loop or CPU (then up to 100 ms later); when the handler returns, raises or is cancelled the card
    closes (failed when it raised), held text goes out and the timers stop;
- ``@acp_progress.cancel_handler`` on ``cancel``: held text goes out, no new card opens;
- ``acp_progress.emitter(conn).session_update(...)`` around every SDK send of a session update:
    the session's card completes before its first real update (message, thought, tool call,
    plan; bookkeeping such as usage or available commands passes without completing it), answer
    text is held briefly after reasoning so a trailing reasoning delta joins the thought block,
    a new card opens when the session goes quiet after a tool call, and the same arguments reach
    the real connection (everything else about the connection passes through untouched);
- ``acp_progress.bind(agent, conn)`` where the SDK hands the connection over, for agents that
    keep it nowhere the prompt handler's decorator can read it;
- agents with a JSON-RPC loop of their own (no SDK): ``@acp_progress.prompt_handler(wire=...)``
    (the card goes out through the agent's own writer) and ``acp_progress.wire(writer)`` around
    each call that writes a ``session/update`` message (a dict, or its JSON text or bytes, or
    the method and the params as arguments of their own); a synchronous handler (run on a
    worker thread) gets the same turn with its timers on threads, under a per-session lock.

Everything is kept per session id. Environment: {{PREFIX}}_HEARTBEAT_S (default 30),
{{PREFIX}}_HEARTBEAT_DISABLED=1, {{PREFIX}}_THINK_HOLD_MS (default 200; 0 = the next tick),
{{PREFIX}}_THINK_GAP_MS (default 500; 0 = no card after tool calls), {{PREFIX}}_THINK_AFTER_MS
(default 50; 0 = the card at the prompt's entry). Nothing here writes to
stdout (it carries the protocol); a failing card update never reaches the agent: the first is
logged as a warning (stderr unless the agent's logging says otherwise), the rest at debug level.
"""

import asyncio
import contextlib
import contextvars
import functools
import inspect
import json
import logging
import os
import sys
import threading
import time
import typing
import uuid

_log = logging.getLogger(__name__)

# The turn's real output, by the protocol's sessionUpdate kinds: the first one of a session
# completes its card, and one within the grace means no card is due. (The draft protocol v2
# names some differently: whole messages, plan updates, tool-call and terminal chunks.) Every
# other kind is not the model's output and leaves a pending card due: user_message_chunk (the
# user's own prompt echoed), available_commands_update, current_mode_update,
# config_option_update, session_info_update, usage_update, v2's state_update, unknown kinds.
_REAL = frozenset({
    "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan",
    "agent_message", "agent_thought", "plan_update", "tool_call_content_chunk",
    "terminal_update", "terminal_output_chunk",
})
_THOUGHTS = ("agent_thought_chunk", "agent_thought")
_CARD = "llm_response"  # the card's name for the progress callback
_DISABLED = ("1", "true", "yes")

# Sessions whose turn runs in this context: a prompt handler called by another passes through.
_turns = contextvars.ContextVar("acp_progress_turns", default=frozenset())
# Set while this module sends: a send made inside it (an agent's own wrapper) passes through.
_forwarding = contextvars.ContextVar("acp_progress_forwarding", default=False)
_sessions = {}
_bound = {}  # id(agent) -> connection, for agents that take no attributes
_signatures = {}


# ---- the card's updates ------------------------------------------------------------------

def build_thinking_start(tool_call_id):
    """Open a virtual "think" tool call: clients show a spinner card while the model works."""
    return _tool_update("start_tool_call", "tool_call", tool_call_id, title="Thinking...", kind="think", status="in_progress")


def build_thinking_progress(tool_call_id, elapsed):
    """Heartbeat of the card: a repeated in_progress update with the elapsed time."""
    return _tool_update("update_tool_call", "tool_call_update", tool_call_id, status="in_progress", title=f"Thinking... ({int(elapsed)}s)")


def build_thinking_complete(tool_call_id, failed=False):
    """Close the card (failed when the turn raised); the title drops the elapsed time."""
    return _tool_update("update_tool_call", "tool_call_update", tool_call_id, status="failed" if failed else "completed", title="Thinking...")


def _tool_update(helper, update_kind, tool_call_id, **fields):
    acp = sys.modules.get("acp")  # the SDK the agent runs on; an agent without it: the same JSON

    build = getattr(acp, helper, None)  # the SDK's helpers (since 0.4.9)
    if build is not None:
        return build(tool_call_id, **fields) if helper == "update_tool_call" else build(tool_call_id, fields.pop("title"), **fields)
    return {"sessionUpdate": update_kind, "toolCallId": tool_call_id, **fields}  # older SDKs validate the same JSON


def make_agent_progress_cb(connection, session_id, **send_kwargs):
    """The progress callback of one session: ``await callback(state, name, args)`` with state
    "start", "heartbeat" (args["elapsed"] seconds) or "complete" (args["failed"]). One card per
    name; a start closes that name's open card first; heartbeat and complete without one do
    nothing. Updates go out on the connection the session's own sends use, with their extra
    keywords, and never raise."""
    open_ids = {}

    async def send(update):
        session = _sessions.get(session_id)
        target, kwargs, positional, notification = connection, dict(send_kwargs), False, None
        if session is not None:
            target = session.connection if session.connection is not None else connection
            kwargs.update(session.send_kwargs)
            positional = session.positional
            notification = session.notification
        await _send(target, session_id, update, kwargs, positional, notification)

    async def callback(state, name, args=None):
        args = args if isinstance(args, dict) else {}
        if state == "start":
            previous = open_ids.pop(name, None)
            if previous is not None:
                await send(build_thinking_complete(previous))
            tool_call_id = f"think-{uuid.uuid4().hex[:12]}"
            open_ids[name] = tool_call_id
            await send(build_thinking_start(tool_call_id))
        elif state == "heartbeat":
            tool_call_id = open_ids.get(name)
            if tool_call_id is not None:
                await send(build_thinking_progress(tool_call_id, args.get("elapsed", 0)))
        elif state == "complete":
            tool_call_id = open_ids.pop(name, None)
            if tool_call_id is not None:
                await send(build_thinking_complete(tool_call_id, failed=bool(args.get("failed"))))

    return callback


async def _send(connection, session_id, update, kwargs, positional=False, notification=None):
    """One update of ours, shaped like the agent's own sends (``notification``: the type of the
    one notification they pass); a failure is only logged."""
    token = _forwarding.set(True)
    try:
        if hasattr(connection, "session_update"):  # SDK >= 0.7, or a fork's taking a notification
            taken = _notification_param(_own_send(connection, "session_update"))
            if taken is not None:  # the type the agent's own sends pass, else the annotated one
                await connection.session_update(_notification(notification or taken, session_id, update), **kwargs)
            elif positional:
                await connection.session_update(session_id, update, **kwargs)
            else:
                await connection.session_update(session_id=session_id, update=update, **kwargs)
        elif hasattr(connection, "sessionUpdate"):  # SDK <= 0.6
            import acp

            notify = getattr(acp, "session_notification", None)
            notification = notify(session_id, update) if notify else acp.SessionNotification(sessionId=session_id, update=update)
            await connection.sessionUpdate(notification)
    except Exception as e:
        global _card_failed
        if _card_failed:
            _log.debug("ACP thinking-card update failed", exc_info=True)
        else:  # a card that never shows should say why once, on stderr, never to the agent
            _card_failed = True
            _log.warning("ACP thinking card not sent (%s: %s); the agent runs on without it", type(e).__name__, e)
    finally:
        _forwarding.reset(token)


_notification_params = {}
_card_failed = False  # the first failure is logged as a warning, the rest at debug level


def _notification_param(send):
    """The type of the one notification a connection's ``session_update`` takes (a fork of the
    SDK keeping SDK <= 0.6's ``sessionUpdate(notification)`` under the new name), or None when
    it takes the session id and the update (SDK >= 0.7). Read from its signature, since a card
    may open before the agent's first send shows how it calls it."""
    function = getattr(send, "__func__", send)
    try:
        return _notification_params[function]
    except (KeyError, TypeError):
        pass
    found = None
    try:
        params = [p for p in inspect.signature(send).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    if len(params) == 1 and params[0].name not in ("session_id", "sessionId", "update"):
        try:
            found = typing.get_type_hints(function).get(params[0].name)
        except Exception:  # an annotation only a type checker imports
            found = None
        if not isinstance(found, type):
            found = getattr(sys.modules.get("acp"), "SessionNotification", None) or dict
    with contextlib.suppress(TypeError):
        _notification_params[function] = found
    return found


def _notification(kind, session_id, update):
    """A notification of ``kind`` (a model class, or dict) for one update of a session."""
    if kind is dict:
        return {"sessionId": session_id, "update": update}
    try:
        return kind(session_id=session_id, update=update)
    except Exception:  # a model that takes its fields only by their protocol names
        return kind(sessionId=session_id, update=update)


# ---- per-session state -------------------------------------------------------------------

class _Session:
    def __init__(self, session_id):
        self.id = session_id
        self.lock = None  # orders this session's updates; made on the loop that uses it
        self.loop = None
        self.connection = None  # what the agent's sends go through (else the handler's)
        self.send_kwargs = {}  # extra keywords the agent's sends pass, e.g. source=
        self.positional = False  # the agent passes (session_id, update) positionally
        self.notification = None  # the type of the one notification the agent's sends pass
        self.agent_progress_callback = None
        self.open = False
        self.generation = 0
        self.started = 0.0
        self.heartbeat = None
        self.turns = 0
        self.cancelled = False
        self.reasoning = False  # reasoning seen since the last flush
        self.held = []  # held text sends: [send, args, kwargs, update, where]
        self.tool_calls = set()  # ids of the tool calls this session's sends started
        self.hold_timer = None
        self.gap_timer = None
        self.gap_token = None
        self.tasks = set()
        # The turn runs on a thread (a synchronous prompt handler): timers are daemon threads,
        # the lock a thread lock, and the card is written at once through the agent's own writer.
        self.threaded = False
        self.thread_guard = _ThreadGuard()

    def guard(self):
        if self.threaded:
            return self.thread_guard
        loop = asyncio.get_running_loop()
        if self.lock is None or self.loop is not loop:
            self.lock, self.loop = asyncio.Lock(), loop
        return self.lock

    def spawn(self, coro):
        task = asyncio.get_running_loop().create_task(coro)
        self.tasks.add(task)  # a strong reference until it ends
        task.add_done_callback(self.tasks.discard)
        return task

    def later(self, delay, callback, *args):
        """callback(*args) after delay seconds: on the loop, or on a daemon timer thread for a
        turn on a thread. The handle has cancel()."""
        if self.threaded:
            timer = threading.Timer(delay, callback, args)
            timer.daemon = True  # never keeps the process alive
            timer.start()
            return timer
        return asyncio.get_running_loop().call_later(delay, callback, *args)

    def soon(self, make):
        """Runs the coroutine make() from a timer: a task on the loop, or at once on the timer
        thread for a turn on a thread (nothing in it waits: the agent's writer is synchronous)."""
        if self.threaded:
            _run_sync(make())
        else:
            self.spawn(make())

    def clock(self):
        return time.monotonic() if self.threaded else asyncio.get_running_loop().time()


class _ThreadGuard:
    """A session's lock for a turn on a thread: worker threads and timer threads take it, with
    ``with`` or ``async with`` (the runtime's coroutines, run at once on the thread)."""

    __slots__ = ("_lock",)

    def __init__(self):
        self._lock = threading.RLock()

    def __enter__(self):
        self._lock.acquire()
        return self

    def __exit__(self, *exc):
        self._lock.release()

    async def __aenter__(self):
        return self.__enter__()

    async def __aexit__(self, *exc):
        self.__exit__()


def _session(session_id):
    session = _sessions.get(session_id)
    if session is None:
        session = _sessions.setdefault(session_id, _Session(session_id))
    return session


def _env_number(name, default):
    raw = os.environ.get(f"{{PREFIX}}_{name}", "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = default
    return value if 0 <= value < float("inf") else default  # negative, NaN or infinite: the default


def _heartbeat_interval():
    if os.environ.get("{{PREFIX}}_HEARTBEAT_DISABLED", "").strip().lower() in _DISABLED:
        return None
    interval = _env_number("HEARTBEAT_S", 30.0)
    return interval if interval > 0 else 30.0


# ---- the three hooks ---------------------------------------------------------------------

async def _progress_start(session):
    """Hook A (the prompt's grace or a silent gap after a tool call ended): open the card, start its heartbeat."""
    await _progress_complete(session)  # a new start closes the open card first
    callback = getattr(session, "agent_progress_callback", None)
    if callback is None:
        return
    session.generation += 1
    session.open = True
    session.started = time.monotonic()
    try:
        await callback("start", _CARD, {})
    except Exception:
        _log.debug("agent_progress_callback(start) failed", exc_info=True)
    interval = _heartbeat_interval()
    if interval is not None:
        session.heartbeat = _arm_heartbeat(session, session.generation, interval)


def _arm_heartbeat(session, generation, interval):
    if session.threaded:  # a turn on a thread: one timer thread per beat
        return session.later(interval, session.soon, lambda: _progress_heartbeat(session, generation, interval))
    return session.spawn(_progress_heartbeat(session, generation, interval))


async def _progress_heartbeat(session, generation, interval):
    """Hook C (a task on the loop; for a turn on a thread, a timer's beat that arms the next):
    every interval, the elapsed time, until the card closes."""
    while True:
        if not session.threaded:
            await asyncio.sleep(interval)
        async with session.guard():
            if generation != session.generation or not session.open:
                return  # stale: completed, or a newer card opened
            callback = getattr(session, "agent_progress_callback", None)
            if callback is None:
                return
            try:
                await callback("heartbeat", _CARD, {"elapsed": time.monotonic() - session.started})
            except Exception:
                _log.debug("agent_progress_callback(heartbeat) failed", exc_info=True)
            if session.threaded:
                session.heartbeat = _arm_heartbeat(session, generation, interval)
                return


def _current_task():
    try:
        return asyncio.current_task()
    except RuntimeError:  # no loop in this thread
        return None


async def _progress_complete(session, failed=False):
    """Hook B (the session's first real update, a cancel, the turn's end): close the card. Idempotent."""
    task, session.heartbeat = session.heartbeat, None
    if task is not None and task is not _current_task():
        task.cancel()
    if not session.open:
        return
    session.open = False
    session.generation += 1
    callback = getattr(session, "agent_progress_callback", None)
    if callback is None:
        return
    try:
        await callback("complete", _CARD, {"failed": failed})
    except Exception:
        _log.debug("agent_progress_callback(complete) failed", exc_info=True)


# ---- the turn ----------------------------------------------------------------------------

def prompt_handler(connection=None, wire=None, **send_kwargs):
    """Decorator for an ACP prompt handler (``async def prompt``). ``connection(agent)`` returns
    the connection the SDK handed over (else the one ``bind`` recorded); ``send_kwargs`` are the
    extra keywords the agent's own sends pass, used for the card's first updates. An agent
    without the SDK gives ``wire(params, *handler_args, **handler_kwargs)`` instead: it writes
    one ``session/update`` notification with these params through the agent's own writer. A
    synchronous handler (an agent's own loop running it on a worker thread) gets the same turn,
    its timers on daemon threads."""

    def decorate(handler):
        if not inspect.iscoroutinefunction(handler):
            return _threaded_prompt(handler, connection, wire, send_kwargs)

        @functools.wraps(handler)
        async def prompt(self, *args, **kwargs):
            session_id = _session_id_of(handler, self, args, kwargs)
            if session_id is None and wire is not None:
                session_id = _session_id_in((self, *args, *kwargs.values()))
            active = _turns.get()
            if session_id is None or session_id in active:
                return await handler(self, *args, **kwargs)  # no session, or an outer handler has the turn
            token = _turns.set(active | {session_id})
            session = _session(session_id)
            try:
                if wire is not None:
                    target = _Wire(lambda params: wire(params, self, *args, **kwargs))
                else:
                    target = _connection_of(self, connection)
                    _intercept(target)
                await _begin_turn(session, self, target, send_kwargs)
                try:
                    result = await handler(self, *args, **kwargs)
                except asyncio.CancelledError:
                    await _end_turn(session, failed=False)
                    raise
                except BaseException:
                    await _end_turn(session, failed=True)
                    raise
                await _end_turn(session, failed=False)
                return result
            finally:
                _turns.reset(token)

        return prompt

    return decorate


def _threaded_prompt(handler, connection, wire, send_kwargs):
    """A synchronous prompt handler: the turn starts before it and ends after it on its own
    thread; the card, heartbeat, text hold and gap card run on timer threads under the
    session's thread lock, written at once through the agent's own (synchronous) writer."""

    @functools.wraps(handler)
    def prompt(*args, **kwargs):
        agent = args[0] if args else None
        if args:
            session_id = _session_id_of(handler, agent, args[1:], kwargs)
        else:
            session_id = _session_id_in(tuple(kwargs.values()))
        if session_id is None and wire is not None:
            session_id = _session_id_in((*args, *kwargs.values()))
        active = _turns.get()
        if session_id is None or session_id in active:
            return handler(*args, **kwargs)  # no session, or an outer handler has the turn
        token = _turns.set(active | {session_id})
        session = _session(session_id)
        try:
            session.threaded = True
            if wire is not None:
                target = _Wire(lambda params: wire(params, *args, **kwargs))
            else:
                target = _connection_of(agent, connection)
            _run_sync(_begin_turn(session, agent, target, send_kwargs))
            try:
                result = handler(*args, **kwargs)
            except BaseException:
                _run_sync(_end_turn(session, failed=True))
                raise
            _run_sync(_end_turn(session, failed=False))
            return result
        finally:
            _turns.reset(token)

    return prompt


def _locked(session):
    """The session's lock where threads share it (a turn on a thread); else nothing to take."""
    return session.guard() if session.threaded else contextlib.nullcontext()


def cancel_handler(handler):
    """Decorator for the agent's ``cancel``: held text goes out at once and no new card opens
    for the session; its open card keeps its heartbeat until the turn ends (the prompt handler
    returns or is cancelled), since the agent is still working until then."""

    if not inspect.iscoroutinefunction(handler):  # a loop of the agent's own may cancel synchronously

        @functools.wraps(handler)
        def cancel_now(*args, **kwargs):
            session = _sessions.get(_session_id_in(args + tuple(kwargs.values())))
            if session is not None and session.turns:
                try:
                    with _locked(session):
                        session.cancelled = True
                        _disarm_gap(session)
                        _run_sync(_flush(session))
                except Exception:
                    _log.debug("ACP progress cancel failed", exc_info=True)
            return handler(*args, **kwargs)

        return cancel_now

    @functools.wraps(handler)
    async def cancel(self, *args, **kwargs):
        session_id = _session_id_of(handler, self, args, kwargs)
        if session_id is None:
            session_id = _session_id_in((self, *args, *kwargs.values()))
        session = _sessions.get(session_id)
        if session is not None:
            try:
                async with session.guard():
                    if session.turns:
                        session.cancelled = True
                        _disarm_gap(session)
                        await _flush(session)
            except Exception:
                _log.debug("ACP progress cancel failed", exc_info=True)
        return await handler(self, *args, **kwargs)

    return cancel


def bind(agent, connection):
    """Record the connection the SDK hands the agent (``on_connect`` / the connection factory)."""
    try:
        agent._acp_progress_connection = connection
    except Exception:
        _bound[id(agent)] = connection


async def _begin_turn(session, agent, connection, send_kwargs):
    global _card_failed
    try:
        async with session.guard():
            session.turns += 1
            session.cancelled = False
            session.reasoning = False
            if connection is None and session.connection is None:
                if not _card_failed:  # say once why no card shows, on stderr
                    _card_failed = True
                    _log.warning("ACP thinking card not sent: no connection found on %s; the agent runs on without it", type(agent).__name__)
                return  # nothing to send the card on
            callback = make_agent_progress_cb(connection, session.id, **send_kwargs)
            session.agent_progress_callback = callback
            try:
                agent.agent_progress_callback = callback
            except Exception:
                pass
            if session.connection is None:
                session.connection = connection
            for key, value in send_kwargs.items():
                session.send_kwargs.setdefault(key, value)
            if not session.open:
                after = _env_number("THINK_AFTER_MS", 50.0)
                if after > 0:
                    _arm_gap(session, after)  # the card waits out the grace: a turn answered in it needs none
                else:
                    await _progress_start(session)
    except Exception:
        _log.debug("ACP progress turn start failed", exc_info=True)


async def _end_turn(session, failed):
    try:
        async with session.guard():
            session.turns = max(0, session.turns - 1)
            if session.turns:
                return  # another prompt of this session still runs
            _disarm_gap(session)
            await _flush(session)
            await _progress_complete(session, failed=failed)
            session.cancelled = False
    except Exception:
        _log.debug("ACP progress turn end failed", exc_info=True)


def _session_id_of(handler, agent, args, kwargs):
    """The session id among a handler's arguments: `session_id` (SDK >= 0.7) or a request's."""
    for key in ("session_id", "sessionId"):
        if isinstance(kwargs.get(key), str):
            return kwargs[key]
    signature = _signatures.get(handler)
    if signature is None:
        try:
            signature = _signatures.setdefault(handler, inspect.signature(handler))
        except (TypeError, ValueError):
            signature = False
    if signature:
        try:
            arguments = signature.bind_partial(agent, *args, **kwargs).arguments
        except TypeError:
            arguments = {}
        for key in ("session_id", "sessionId"):
            if isinstance(arguments.get(key), str):
                return arguments[key]
    for value in list(args) + list(kwargs.values()):
        for key in ("session_id", "sessionId"):
            found = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
            if isinstance(found, str):
                return found
    return None


def _session_id_in(values):
    """The session id of a request's params, or of a whole JSON-RPC message (``params``)."""
    for value in values:
        if isinstance(value, dict):
            for found in (value, value.get("params")):
                if isinstance(found, dict):
                    for key in ("sessionId", "session_id"):
                        if isinstance(found.get(key), str):
                            return found[key]
    return None


def _connection_of(agent, connection):
    if callable(connection):
        try:
            found = connection(agent)
        except Exception:
            found = None
        if found is not None:
            return getattr(found, "_acp_connection", found)  # unwrap an emitter
    found = getattr(agent, "_acp_progress_connection", None)
    if found is None:
        found = _bound.get(id(agent))
    return found if found is not None else _held_connection(agent)


def _held_connection(agent):
    """The connection a base class of the agent keeps (an installed package's agent that sends
    every update itself): the one value among the agent's attributes answering the client's
    side of the protocol, an async ``session_update`` (or ``sessionUpdate``) beside
    ``request_permission`` (or ``requestPermission``)."""
    values = []
    try:
        values.extend(vars(agent).values())
    except TypeError:
        pass
    for klass in type(agent).__mro__:
        slots = getattr(klass, "__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            try:
                values.append(getattr(agent, slot))
            except AttributeError:
                pass
    held = []
    for value in values:
        if isinstance(value, _Emitter):
            value = value._acp_connection
        if value is agent or any(value is h for h in held):
            continue
        kind = type(value)
        sends = any(inspect.iscoroutinefunction(getattr(kind, m, None)) for m in ("session_update", "sessionUpdate"))
        asks = any(callable(getattr(kind, m, None)) for m in ("request_permission", "requestPermission"))
        if sends and asks:
            held.append(value)
    return held[0] if len(held) == 1 else None


# ---- the emitter -------------------------------------------------------------------------

def emitter(connection):
    """The connection as the agent's sends should use it: `session_update` / `sessionUpdate`
    do the session's card, text hold and gap bookkeeping, then forward the same arguments."""
    if connection is None or isinstance(connection, _Emitter):
        return connection
    return _Emitter(connection)


class _Emitter:
    __slots__ = ("_acp_connection",)

    def __init__(self, connection):
        object.__setattr__(self, "_acp_connection", connection)

    def __getattr__(self, name):
        if name == "_acp_connection":
            raise AttributeError(name)
        return getattr(self._acp_connection, name)

    def __setattr__(self, name, value):
        setattr(self._acp_connection, name, value)

    def __bool__(self):
        return bool(self._acp_connection)

    def session_update(self, *args, **kwargs):
        return _relay(self._acp_connection, "session_update", args, kwargs)

    def sessionUpdate(self, *args, **kwargs):
        return _relay(self._acp_connection, "sessionUpdate", args, kwargs)


def _intercept(connection):
    """Every session update sent on the connection passes the session's gate, also those code
    outside the agent's tree sends (an installed base class streaming the model's output, as
    pydantic-ai-harness's ACP agent does): the instance's send is replaced by one relaying to
    the original. Once per connection, on one method (an alias may call the other); a
    connection that takes no attributes, or sends synchronously, keeps the wrapped sends only."""
    for method in ("session_update", "sessionUpdate"):
        original = getattr(connection, method, None)
        if original is None:
            continue
        if getattr(original, "_acp_progress_relay", False) or not inspect.iscoroutinefunction(original):
            return

        def relay(*args, **kwargs):
            return _relay(connection, method, args, kwargs)

        relay._acp_progress_relay = True
        try:
            setattr(connection, "_acp_progress_" + method, original)
            setattr(connection, method, relay)
        except Exception:
            pass
        return


def _own_send(connection, method):
    """The connection's own send, under the relay ``_intercept`` put in its place."""
    return getattr(connection, "_acp_progress_" + method, None) or getattr(connection, method)


def _relay(connection, method, args, kwargs):
    send = _own_send(connection, method)
    sent = send(*args, **kwargs)
    if _forwarding.get() or not inspect.isawaitable(sent):
        return sent  # ours, nested in one of ours, or a send that is already done
    try:
        session_id, update, where = _unpack(args, kwargs)
    except Exception:
        return sent
    if not isinstance(session_id, str):
        return sent
    return _gate(_session(session_id), connection, send, args, kwargs, sent, update, where)


async def _gate(session, connection, send, args, kwargs, sent, update, where):
    try:
        async with session.guard():
            session.connection = connection
            extra = {k: v for k, v in kwargs.items() if k not in ("session_id", "sessionId", "update")}
            if extra:
                session.send_kwargs = extra
            session.positional = where == ("pos", 1)
            if where == ("note", 0):
                session.notification = type(args[0])
            kind = _field(update, "session_update", "sessionUpdate")
            if _visible(session, kind, update):
                _disarm_gap(session)
                await _progress_complete(session)
                if kind == "agent_thought_chunk":
                    session.reasoning = True  # goes out at once, even while text is held
                elif (
                    kind == "agent_message_chunk"
                    and session.turns
                    and (session.held or session.reasoning)
                    and inspect.iscoroutine(sent)
                ):
                    _hold(session, [send, args, kwargs, update, where], sent)
                    return None
                else:
                    await _flush(session)
                if kind == "tool_call_update" and _status(update) in ("completed", "failed"):
                    _arm_gap(session)
            # bookkeeping (usage, commands, modes, session info, ...) passes as it is: it neither
            # completes the card nor ends a hold (agents send usage after every chunk)
    except Exception:
        _log.debug("ACP progress bookkeeping failed", exc_info=True)
    return await _forward(sent)


async def _forward(sent):
    token = _forwarding.set(True)
    try:
        return (await sent) if inspect.isawaitable(sent) else sent
    finally:
        _forwarding.reset(token)


def _unpack(args, kwargs):
    """(session id, update, where the update is) of a send's arguments."""
    if "update" in kwargs:
        session_id = kwargs.get("session_id", kwargs.get("sessionId", args[0] if args else None))
        return session_id, kwargs["update"], ("kw", "update")
    if len(args) >= 2:
        return args[0], args[1], ("pos", 1)
    if len(args) == 1 and isinstance(kwargs.get("session_id"), str):
        return kwargs["session_id"], args[0], ("pos", 0)
    if len(args) == 1:  # SDK <= 0.6: one SessionNotification
        notification = args[0]
        return _field(notification, "session_id", "sessionId"), _field(notification, "update", "update"), ("note", 0)
    return None, None, None


def _field(value, snake, camel):
    if isinstance(value, dict):
        return value.get(camel, value.get(snake))
    found = getattr(value, snake, None)
    return found if found is not None else getattr(value, camel, None)


def _visible(session, kind, update):
    """Real output a client shows: an update of a tool call the session never started is not
    (a client has nothing to show it on), so it leaves a card due like bookkeeping."""
    if kind not in _REAL:
        return False
    tool_call_id = _field(update, "tool_call_id", "toolCallId")
    if kind == "tool_call" and tool_call_id is not None:
        session.tool_calls.add(tool_call_id)
    return kind != "tool_call_update" or tool_call_id in session.tool_calls


def _status(update):
    status = _field(update, "status", "status")
    return getattr(status, "value", status)


# ---- the text hold -----------------------------------------------------------------------

def _hold(session, entry, sent):
    """Hold one text send (re-made at the flush); text following it merges into it."""
    if sent is not None:
        sent.close()  # never awaited: the flush sends it (merged) again
    if session.held:
        last = session.held[-1]
        merged = _merge_text(last[3], entry[3])
        if merged is not None:
            last[:] = _with_update(last, merged)
            return
    session.held.append(entry)
    if len(session.held) == 1:
        held = session.held
        delay = _env_number("THINK_HOLD_MS", 200.0) / 1000.0
        session.hold_timer = session.later(delay, session.soon, lambda: _expire(session, held))


async def _expire(session, held):
    async with session.guard():
        if session.held is held:  # not flushed meanwhile
            await _flush(session)


async def _flush(session):
    """Send held text now, in order; after it text streams directly until reasoning comes again."""
    session.reasoning = False
    timer, session.hold_timer = session.hold_timer, None
    if timer is not None:
        timer.cancel()
    held, session.held = session.held, []
    for send, args, kwargs, _update, _where in held:
        try:
            await _forward(send(*args, **kwargs))
        except Exception:
            _log.debug("ACP held text send failed", exc_info=True)


def _merge_text(first, second):
    """One message chunk with both texts, or None when they are not both plain text."""
    a, b = _field(first, "content", "content"), _field(second, "content", "content")
    if _field(a, "type", "type") != "text" or _field(b, "type", "type") != "text":
        return None
    text = (_field(a, "text", "text") or "") + (_field(b, "text", "text") or "")
    try:
        if isinstance(first, dict):
            return {**first, "content": {**a, "text": text}}
        return first.model_copy(update={"content": a.model_copy(update={"text": text})})
    except Exception:
        return None


def _with_update(entry, update):
    send, args, kwargs, _old, where = entry
    args, kwargs = list(args), dict(kwargs)
    if where[0] == "wire":  # a JSON-RPC message of the agent's own writer
        args, kwargs = where[1](update)
        args = list(args)
    elif where[0] == "kw":
        kwargs[where[1]] = update
    elif where[0] == "pos":
        args[where[1]] = update
    else:  # a notification holding the update
        note = args[0]
        args[0] = {**note, "update": update} if isinstance(note, dict) else note.model_copy(update={"update": update})
    return [send, tuple(args), kwargs, update, where]


# ---- the silent gap: after the prompt's grace, after a tool call ---------------------------

def _arm_gap(session, delay_ms=None):
    """A card once the session stays silent (no real update, under its lock) for the delay."""
    _disarm_gap(session)
    delay = (_env_number("THINK_GAP_MS", 500.0) if delay_ms is None else delay_ms) / 1000.0
    if not session.turns or session.cancelled or delay <= 0:
        return
    token = session.gap_token = object()
    since = (session.clock(), time.process_time())
    session.gap_timer = session.later(delay, _gap_due, session, token, since, since[0] + delay + _BUSY_MAX_S)


# The card is for a wait. While the agent's process is still working when the silence is
# over (its loop has callbacks ready, or it used the CPU for a share of the time since the
# last look: its answer may be on its way, only slowed by a loaded machine), the card is
# looked at again shortly, up to _BUSY_MAX_S past its time. An agent waiting for its model
# idles: its card opens on time.
_BUSY_RECHECK_S = 0.02
_BUSY_SHARE = 0.05
_BUSY_MAX_S = 0.1


def _gap_due(session, token, since, latest):
    if session.gap_token is not token:
        return
    now = (session.clock(), time.process_time())
    loop = None if session.threaded else asyncio.get_running_loop()
    ready = getattr(loop, "_ready", None)  # CPython's asyncio: callbacks to run now (uvloop: none known)
    working = bool(ready) or now[1] - since[1] >= _BUSY_SHARE * max(now[0] - since[0], 1e-3)
    if working and now[0] < latest:
        session.gap_timer = session.later(_BUSY_RECHECK_S, _gap_due, session, token, now, latest)
        return
    session.soon(lambda: _gap(session, token))


def _disarm_gap(session):
    timer, session.gap_timer, session.gap_token = session.gap_timer, None, None
    if timer is not None:
        timer.cancel()


async def _gap(session, token):
    async with session.guard():
        if session.gap_token is not token or not session.turns or session.cancelled or session.open:
            return
        session.gap_timer = session.gap_token = None
        await _progress_start(session)


# ---- agents without the SDK: their own JSON-RPC writer -----------------------------------

def wire(writer):
    """The agent's own writer as its ``session/update`` writes should use it:
    ``acp_progress.wire(self).write(message)``, ``acp_progress.wire(print)(json.dumps(message))``.
    A call that carries a ``session/update`` message (a dict, or its JSON text or bytes) does
    the session's card, text hold and gap bookkeeping, then writes the same message; every
    other call and attribute passes through untouched."""
    if writer is None or isinstance(writer, _WireEmitter):
        return writer
    return _WireEmitter(writer)


class _WireEmitter:
    __slots__ = ("_acp_writer",)

    def __init__(self, writer):
        object.__setattr__(self, "_acp_writer", writer)

    def __getattr__(self, name):
        if name == "_acp_writer":
            raise AttributeError(name)
        value = getattr(self._acp_writer, name)
        if not callable(value):
            return value
        return functools.partial(_wire_call, value)

    def __setattr__(self, name, value):
        setattr(self._acp_writer, name, value)

    def __call__(self, *args, **kwargs):
        return _wire_call(self._acp_writer, *args, **kwargs)


class _Wire:
    """The card's connection for an agent without the SDK: its own writer of notifications."""

    def __init__(self, write):
        self._write = write

    async def session_update(self, session_id, update, **_kwargs):
        if hasattr(update, "model_dump"):  # the SDK's models, when it is installed anyway
            update = update.model_dump(mode="json", by_alias=True, exclude_none=True)
        written = self._write({"sessionId": session_id, "update": update})
        if inspect.isawaitable(written):
            await written


def _run_sync(coro):
    """Runs a coroutine that never waits (the card's updates through a synchronous writer)."""
    try:
        coro.send(None)
    except StopIteration:
        return
    coro.close()
    _log.debug("ACP progress: a synchronous write waited; its card update was dropped")


def _wire_message(value):
    """(message, how to put it back) of a writer's argument that is a ``session/update``."""
    if isinstance(value, dict):
        return (value, lambda message: message) if value.get("method") == "session/update" else None
    raw = value
    if isinstance(value, (bytes, bytearray)):
        if b"session/update" not in value:
            return None
        try:
            raw = bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return None
    if not isinstance(raw, str) or "session/update" not in raw:
        return None
    body = raw.strip()
    try:
        message = json.loads(body)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("method") != "session/update":
        return None
    start = raw.find(body)
    head, tail = raw[:start], raw[start + len(body):]

    def back(message):
        text = head + json.dumps(message) + tail
        return text.encode("utf-8") if isinstance(value, (bytes, bytearray)) else text

    return message, back


def _wire_envelope(args, kwargs):
    """(session id, update, rebuild(update) -> (args, kwargs)) of a writer call: one argument
    is the whole message, or the method is an argument and the params another
    (``write_notification("session/update", {"sessionId": ..., "update": ...})``)."""
    places = [("pos", i, v) for i, v in enumerate(args)] + [("kw", k, v) for k, v in kwargs.items()]

    def rebuild_at(kind, key, params, back):
        def rebuild(update):
            new_args, new_kwargs = list(args), dict(kwargs)
            value = back({**params, "update": update})
            if kind == "pos":
                new_args[key] = value
            else:
                new_kwargs[key] = value
            return tuple(new_args), new_kwargs

        return params["sessionId"], params.get("update"), rebuild

    for kind, key, value in places:
        found = _wire_message(value)
        if found is None:
            continue
        message, back = found
        params = message.get("params")
        if not isinstance(params, dict) or not isinstance(params.get("sessionId"), str):
            return None
        return rebuild_at(kind, key, params, lambda params, message=message, back=back: back({**message, "params": params}))
    if not any(isinstance(v, str) and v == "session/update" for _, _, v in places):
        return None
    for kind, key, value in places:
        if isinstance(value, dict) and isinstance(value.get("sessionId"), str):
            return rebuild_at(kind, key, value, lambda params: params)
    return None


def _is_async(writer):
    return inspect.iscoroutinefunction(getattr(writer, "__func__", writer))


def _wire_call(writer, *args, **kwargs):
    if _forwarding.get():
        return writer(*args, **kwargs)  # ours, or nested in one of ours
    try:
        found = _wire_envelope(args, kwargs)
    except Exception:
        found = None
    if found is None:
        return writer(*args, **kwargs)
    session_id, update, rebuild = found
    try:
        asyncio.get_running_loop()
        on_loop = True
    except RuntimeError:
        on_loop = False
    session = _session(session_id)
    if not on_loop and not session.threaded:
        return writer(*args, **kwargs)  # another thread of a loop's turn: as it is (the turn's end closes the card)
    where = ("wire", rebuild)
    send = lambda *a, **k: writer(*a, **k)  # noqa: E731 (re-made at a flush)
    if _is_async(writer):
        if not on_loop:
            return writer(*args, **kwargs)
        return _gate(session, session.connection, send, args, kwargs, writer(*args, **kwargs), update, where)
    # a synchronous writer: the bookkeeping runs here, then the write, both under the session's
    # lock when its turn runs on a thread (timer threads write the card and held text)
    with _locked(session):
        kind = _field(update, "session_update", "sessionUpdate")
        if _visible(session, kind, update):
            try:
                _disarm_gap(session)
                _run_sync(_progress_complete(session))
                if kind in _THOUGHTS:
                    session.reasoning = True
                elif kind == "agent_message_chunk" and session.turns and (session.held or session.reasoning):
                    _hold(session, [send, args, kwargs, update, where], None)
                    return None
                else:
                    _run_sync(_flush(session))
                if kind == "tool_call_update" and _status(update) in ("completed", "failed"):
                    _arm_gap(session)
            except Exception:
                _log.debug("ACP progress bookkeeping failed", exc_info=True)
        token = _forwarding.set(True)
        try:
            return writer(*args, **kwargs)
        finally:
            _forwarding.reset(token)
