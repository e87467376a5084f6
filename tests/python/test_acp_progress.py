"""Unit tests of the runtime module acp-patch writes into protocol-anchored Python agents
(templates/python/acp_progress.py), against the real `acp` SDK.

Run from the repository root: `$ACP_PATCH_TEST_PYTHON -m unittest discover -s tests/python -v`.
Each test renders the template the way the Rust side does ({{PREFIX}} -> ACP) into a fresh module.
"""

import asyncio
import os
import pathlib
import re
import time
import types
import unittest
from unittest import mock

import acp

TEMPLATE = pathlib.Path(__file__).resolve().parents[2] / "templates" / "python" / "acp_progress.py"
WAIT = 5.0


def load_runtime():
    module = types.ModuleType("acp_progress_under_test")
    text = TEMPLATE.read_text().replace("{{PREFIX}}", "ACP")
    exec(compile(text, str(TEMPLATE), "exec"), module.__dict__)
    return module


def wire(update):
    if isinstance(update, dict):
        return update
    return update.model_dump(mode="json", by_alias=True, exclude_none=True)


class Conn:
    """An SDK connection double: records what goes on the wire, keyword arguments included."""

    def __init__(self, fail=False, delay=0.0):
        self.sent = []  # (session_id, wire dict, extra kwargs)
        self.fail = fail
        self.delay = delay
        self.other = "passes through"

    async def session_update(self, session_id, update, **kwargs):
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail and str(wire(update).get("toolCallId", "")).startswith("think-"):
            raise ConnectionError("card sends fail")
        self.sent.append((session_id, wire(update), kwargs))

    def kinds(self, session_id=None):
        return [describe(u) for s, u, _ in self.sent if session_id in (None, s)]


class ClientConn(Conn):
    """The SDK's connection as an agent is handed it: it answers the client's side of the
    protocol, permission requests included."""

    async def request_permission(self, *args, **kwargs):
        return None


class LegacyConn:
    """SDK <= 0.6: sessionUpdate(SessionNotification)."""

    def __init__(self):
        self.sent = []

    async def sessionUpdate(self, notification):
        self.sent.append((notification.session_id, wire(notification.update), {}))


class ForkConn:
    """A fork of the SDK keeping ``session_update`` but taking one notification, as SDK <= 0.6's
    ``sessionUpdate`` did (agentpool 2.9.18's own ``acp`` package)."""

    def __init__(self):
        self.sent = []

    async def session_update(self, params: "acp.schema.SessionNotification") -> None:
        assert isinstance(params, acp.schema.SessionNotification), params
        self.sent.append((params.session_id, wire(params.update), {}))


def describe(u):
    kind = u.get("sessionUpdate")
    if u.get("kind") == "think" or str(u.get("toolCallId", "")).startswith("think-"):
        return "card:" + u.get("status", "?")
    if kind in ("agent_message_chunk", "agent_thought_chunk"):
        return ("text:" if kind == "agent_message_chunk" else "thought:") + u["content"]["text"]
    if kind in ("tool_call", "tool_call_update"):
        return f"{kind}:{u.get('status', '?')}"
    return kind


def text(t):
    return acp.update_agent_message_text(t)


def thought(t):
    return acp.update_agent_thought_text(t)


def env(**values):
    """The ACP_ variables given, nothing else; the card opens at the prompt's entry
    (ACP_THINK_AFTER_MS=0) unless a test sets the grace (``ACP_THINK_AFTER_MS=None``: unset)."""
    values.setdefault("ACP_THINK_AFTER_MS", "0")
    patch = mock.patch.dict(os.environ)
    patch.start()
    for key in list(os.environ):
        if key.startswith("ACP_"):
            del os.environ[key]
    os.environ.update({k: v for k, v in values.items() if v is not None})
    return _Env(patch)


class _Env:
    """The patch, stopped once: by ``with`` or by ``stop()`` (a second ``start`` of the patch,
    as ``with`` on it would make, would keep these values for every later test)."""

    def __init__(self, patch):
        self.patch = patch

    def stop(self):
        self.patch.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.patch.stop()


def run(coro):
    return asyncio.run(coro)


class Agent:
    """An SDK-bound agent using the runtime like a patched agent does."""

    def __init__(self, rt, conn, script=None, send_kwargs=None):
        self.rt = rt
        self._conn = conn
        self.script = script or (lambda agent, session_id: asyncio.sleep(0))
        self.send_kwargs = send_kwargs or {}

    async def send(self, session_id, update):
        await self.rt.emitter(self._conn).session_update(session_id=session_id, update=update, **self.send_kwargs)


def decorate(rt, **send_kwargs):
    class Patched(Agent):
        @rt.prompt_handler(lambda self: self._conn, **send_kwargs)
        async def prompt(self, prompt, session_id, **kwargs):
            await self.script(self, session_id)
            return "end_turn"

        @rt.cancel_handler
        async def cancel(self, session_id, **kwargs):
            self.cancelled = session_id

    return Patched


class StaticContract(unittest.TestCase):
    def test_marker_placeholders_and_no_stdout(self):
        raw = TEMPLATE.read_text()
        self.assertTrue(raw.startswith("# acp-patch: runtime module, generated"), raw[:80])
        self.assertNotIn("\r", raw)
        self.assertNotIn("\t", raw)
        self.assertNotRegex(raw, r"\bprint\(|sys\.stdout")
        self.assertEqual(set(re.findall(r"\{\{(\w+)\}\}", raw)), {"PREFIX"})
        for line in raw.splitlines():
            self.assertEqual((len(line) - len(line.lstrip(" "))) % 4, 0, line)

    def test_exactly_one_callback_call_per_state(self):
        raw = TEMPLATE.read_text()
        for state in ("start", "heartbeat", "complete"):
            self.assertEqual(len(re.findall(rf'callback\("{state}", _CARD, ', raw)), 1, state)

    def test_imports_no_sdk_at_module_level(self):
        # agents that import `acp` lazily (an optional dependency) must import this module freely
        raw = TEMPLATE.read_text()
        top = [l for l in raw.splitlines() if l.startswith(("import ", "from "))]
        self.assertFalse([l for l in top if "acp" in l], top)


class Cards(unittest.TestCase):
    def setUp(self):
        self.env = env(ACP_HEARTBEAT_DISABLED="1")
        self.rt = load_runtime()

    def tearDown(self):
        self.env.stop()

    def test_card_opens_at_entry_and_completes_before_the_first_real_update(self):
        conn = Conn()

        async def script(agent, sid):
            self.assertEqual(conn.kinds(), ["card:in_progress"])  # on the wire before the body runs
            await agent.send(sid, acp.update_agent_message_text("hi"))

        agent = decorate(self.rt)(self.rt, conn, script)
        self.assertEqual(run(agent.prompt([], "s1")), "end_turn")
        self.assertEqual(conn.kinds(), ["card:in_progress", "card:completed", "text:hi"])
        ids = {u["toolCallId"] for _, u, _ in conn.sent if "toolCallId" in u}
        self.assertEqual(len(ids), 1)
        self.assertEqual(conn.sent[0][1]["kind"], "think")
        self.assertEqual(conn.sent[0][1]["title"], "Thinking...")
        self.assertTrue(callable(agent.agent_progress_callback))

    def test_bookkeeping_passes_without_completing(self):
        conn = Conn()

        async def script(agent, sid):
            await agent.send(sid, acp.schema.AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[]))
            await agent.send(sid, {"sessionUpdate": "usage_update", "used": 1, "size": 2})
            self.assertEqual(conn.kinds()[-1], "usage_update")
            self.assertNotIn("card:completed", conn.kinds())
            await agent.send(sid, thought("r"))

        run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        self.assertEqual(
            conn.kinds(),
            ["card:in_progress", "available_commands_update", "usage_update", "card:completed", "thought:r"],
        )

    def test_an_update_of_a_tool_call_never_started_leaves_the_card_open(self):
        # a client shows nothing for it (box-agent 0.9.7 sends such "activity" updates at once)
        conn = Conn()

        async def script(agent, sid):
            await agent.send(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "activity-1", "status": "pending"})
            self.assertNotIn("card:completed", conn.kinds())
            await agent.send(sid, {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read", "status": "pending"})
            await agent.send(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})

        run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        self.assertEqual(
            conn.kinds()[:5],
            ["card:in_progress", "tool_call_update:pending", "card:completed", "tool_call:pending", "tool_call_update:completed"],
        )

    def test_sessions_get_their_own_cards_concurrently(self):
        conn = Conn()

        async def main():
            both = asyncio.Event()
            seen = []

            async def script(agent, sid):
                seen.append(sid)
                if len(seen) == 2:
                    both.set()
                await asyncio.wait_for(both.wait(), WAIT)  # both cards are open at once
                await agent.send(sid, thought(f"r-{sid}"))
                await agent.send(sid, text(f"t-{sid}"))

            agent = decorate(self.rt)(self.rt, conn, script)
            await asyncio.gather(agent.prompt([], "a"), agent.prompt([], "b"))

        with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_HOLD_MS="0"):
            run(main())
        for sid in ("a", "b"):
            self.assertEqual(conn.kinds(sid), ["card:in_progress", "card:completed", f"thought:r-{sid}", f"text:t-{sid}"])
            ids = {u["toolCallId"] for s, u, _ in conn.sent if s == sid and "toolCallId" in u}
            self.assertEqual(len(ids), 1)
        ids_a = {u["toolCallId"] for s, u, _ in conn.sent if s == "a" and "toolCallId" in u}
        ids_b = {u["toolCallId"] for s, u, _ in conn.sent if s == "b" and "toolCallId" in u}
        self.assertFalse(ids_a & ids_b)

    def test_turn_end_on_return_raise_and_cancel(self):
        for outcome, status in (("return", "completed"), ("raise", "failed"), ("cancel", "completed")):
            self.rt = load_runtime()
            conn = Conn()

            async def script(agent, sid, outcome=outcome):
                if outcome == "raise":
                    raise ValueError("boom")
                if outcome == "cancel":
                    raise asyncio.CancelledError()

            agent = decorate(self.rt)(self.rt, conn, script)
            if outcome == "return":
                run(agent.prompt([], "s"))
            elif outcome == "raise":
                with self.assertRaises(ValueError):
                    run(agent.prompt([], "s"))
            else:
                with self.assertRaises(asyncio.CancelledError):
                    run(agent.prompt([], "s"))
            self.assertEqual(conn.kinds(), ["card:in_progress", f"card:{status}"], outcome)

    def cancelled_turn(self, steps, wait_before_cancel):
        conn = Conn()

        async def main():
            release = asyncio.Event()

            async def script(agent, sid):
                for step in steps:
                    await agent.send(sid, step)
                await release.wait()

            agent = decorate(self.rt)(self.rt, conn, script)
            turn = asyncio.ensure_future(agent.prompt([], "s"))
            await asyncio.sleep(wait_before_cancel)
            await agent.cancel("s")
            self.assertEqual(agent.cancelled, "s")
            at_cancel = conn.kinds()
            await asyncio.sleep(0.15)  # past the gap
            after = conn.kinds()
            release.set()
            await turn
            return at_cancel, after

        return conn, main

    def test_cancel_flushes_held_text_and_the_card_closes_with_the_turn(self):
        conn, main = self.cancelled_turn([acp.start_tool_call("t", "x"), thought("r"), text("held")], 0.05)
        with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_HOLD_MS="10000"):
            at_cancel, _ = run(main())
        self.assertEqual(at_cancel[-1], "text:held")

    def test_no_gap_card_after_a_cancel(self):
        conn, main = self.cancelled_turn([thought("r"), acp.update_tool_call("t1", status="completed")], 0.01)
        with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_GAP_MS="50"):
            _, after = run(main())
        self.assertEqual(after, ["card:in_progress", "card:completed", "thought:r", "tool_call_update:completed"])

    def test_an_open_card_keeps_its_heartbeat_until_the_cancelled_turn_ends(self):
        conn, main = self.cancelled_turn([], 0.05)
        with env(ACP_HEARTBEAT_S="0.05"):
            _, after = run(main())
        self.assertNotIn("card:completed", after)
        self.assertGreaterEqual(after.count("card:in_progress"), 2)  # the start and a heartbeat
        self.assertEqual(conn.kinds()[-1], "card:completed")  # closed when the turn ended

    def test_failing_card_sends_never_reach_the_agent(self):
        conn = Conn(fail=True)

        async def script(agent, sid):
            await agent.send(sid, text("ok"))

        self.rt._card_failed = False
        with self.assertLogs(self.rt._log, "DEBUG") as logged:
            self.assertEqual(run(decorate(self.rt)(self.rt, conn, script).prompt([], "s")), "end_turn")
            self.assertEqual(run(decorate(self.rt)(self.rt, conn, script).prompt([], "t")), "end_turn")
        self.assertEqual(conn.kinds(), ["text:ok", "text:ok"])
        # the first failure says why the card never showed, once; the others stay at debug level
        warnings = [r.getMessage() for r in logged.records if r.levelname == "WARNING"]
        self.assertEqual(warnings, ["ACP thinking card not sent (ConnectionError: card sends fail); the agent runs on without it"])
        self.assertTrue(any(r.levelname == "DEBUG" for r in logged.records))

    def test_nested_prompt_handler_passes_through(self):
        conn = Conn()
        rt = self.rt

        class Inner(Agent):
            @rt.prompt_handler(lambda self: self._conn)
            async def prompt(self, prompt, session_id, **kwargs):
                await self.send(session_id, text("inner"))
                return "end_turn"

        inner = Inner(rt, conn)

        async def delegate(agent, sid):
            await inner.prompt([], sid)

        run(decorate(rt)(rt, conn, delegate).prompt([], "s"))
        self.assertEqual(conn.kinds(), ["card:in_progress", "card:completed", "text:inner"])

    def test_a_connection_an_installed_base_keeps_is_found_and_its_sends_relayed(self):
        conn = ClientConn()
        rt = self.rt

        class Base:  # an installed package's agent: it keeps the connection and sends every update
            def on_connect(self, client):
                self._client = client

            async def prompt(self, prompt, session_id, **kwargs):
                await asyncio.sleep(0.1)
                await self._client.session_update(session_id, thought("r"))
                await self._client.session_update(session_id, text("x"))
                return "end_turn"

        class Mine(Base):
            @rt.prompt_handler()
            async def prompt(self, prompt, session_id, **kwargs):
                return await super().prompt(prompt, session_id, **kwargs)

        agent = Mine()
        agent.settings = {"model": "m"}  # other attributes are no connection
        agent.on_connect(conn)
        self.assertEqual(run(agent.prompt([], "s")), "end_turn")
        self.assertEqual(conn.kinds(), ["card:in_progress", "card:completed", "thought:r", "text:x"])

    def test_no_connection_found_says_so_once(self):
        rt = self.rt

        class Alone:
            @rt.prompt_handler()
            async def prompt(self, prompt, session_id, **kwargs):
                return "end_turn"

        rt._card_failed = False
        with self.assertLogs(rt._log, "WARNING") as logged:
            self.assertEqual(run(Alone().prompt([], "s")), "end_turn")
            self.assertEqual(run(Alone().prompt([], "t")), "end_turn")
        self.assertEqual(
            [r.getMessage() for r in logged.records],
            ["ACP thinking card not sent: no connection found on Alone; the agent runs on without it"],
        )

    def test_bound_connection_and_request_style_handler(self):
        conn = Conn()
        rt = self.rt

        class Legacy:
            @rt.prompt_handler()
            async def prompt(self, params):
                await rt.emitter(self.bridge).session_update(params.session_id, text("x"))
                return "end_turn"

        agent = Legacy()
        agent.bridge = conn
        rt.bind(agent, conn)
        run(agent.prompt(acp.PromptRequest(session_id="s", prompt=[])))
        self.assertEqual(conn.kinds(), ["card:in_progress", "card:completed", "text:x"])
        # positional sends are mirrored by the card's later updates
        self.assertTrue(rt._sessions["s"].positional)

    def test_no_connection_means_no_card_but_the_turn_runs(self):
        conn = Conn()
        rt = self.rt

        class Unwired:
            @rt.prompt_handler(lambda self: None)
            async def prompt(self, prompt, session_id):
                await rt.emitter(conn).session_update(session_id=session_id, update=text("x"))
                return "end_turn"

        self.assertEqual(run(Unwired().prompt([], "s")), "end_turn")
        self.assertEqual(conn.kinds(), ["text:x"])


class Heartbeat(unittest.TestCase):
    def setUp(self):
        self.rt = load_runtime()

    def test_repeats_with_growing_elapsed_and_stops_at_complete(self):
        conn = Conn()

        async def script(agent, sid):
            await asyncio.sleep(0.35)
            await agent.send(sid, text("done"))
            await asyncio.sleep(0.25)  # no heartbeat after the card closed

        with env(ACP_HEARTBEAT_S="0.1"):
            run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        kinds = conn.kinds()
        beats = [u for _, u, _ in conn.sent if u.get("status") == "in_progress" and u.get("sessionUpdate") == "tool_call_update"]
        self.assertGreaterEqual(len(beats), 2, kinds)
        self.assertIn("(0s)", beats[0]["title"])
        self.assertEqual(kinds[-2:], ["card:completed", "text:done"])

    def test_disabled(self):
        conn = Conn()

        async def script(agent, sid):
            await asyncio.sleep(0.25)

        with env(ACP_HEARTBEAT_S="0.05", ACP_HEARTBEAT_DISABLED="1"):
            run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        self.assertEqual(conn.kinds(), ["card:in_progress", "card:completed"])


class TextHold(unittest.TestCase):
    def setUp(self):
        self.rt = load_runtime()

    def turn(self, steps, **environ):
        conn = Conn()

        async def script(agent, sid):
            for step in steps:
                if isinstance(step, (int, float)):
                    await asyncio.sleep(step)
                else:
                    await agent.send(sid, step)

        with env(ACP_HEARTBEAT_DISABLED="1", **environ):
            run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        return conn.kinds()[2:]  # after the card's start and complete

    def test_trailing_reasoning_joins_the_thought_block_and_text_merges(self):
        kinds = self.turn([thought("a"), text("Hel"), thought("b"), text("lo"), 0.4, text("!")])
        self.assertEqual(kinds, ["thought:a", "thought:b", "text:Hello", "text:!"])

    def test_sends_outside_the_tree_on_the_connection_pass_the_gate_too(self):
        """An installed base class streams the model's output on the connection with no wrap
        of ours (pydantic-ai-harness's ACP agent under hrns 0.0.1): the card still completes
        before it, and its trailing reasoning still joins the thought block."""
        conn = Conn()
        rt = self.rt

        class Installed:  # stands for a base class outside the agent's tree
            async def prompt(self, prompt, session_id, **kwargs):
                for step in (0.01, thought("a"), text("Hel"), thought("b"), text("lo")):
                    if isinstance(step, float):
                        await asyncio.sleep(step)
                    else:
                        await self._conn.session_update(session_id=session_id, update=step)
                return "end_turn"

        class Served(Installed):
            def __init__(self):
                self._conn = conn

            @rt.prompt_handler(lambda self: self._conn)
            async def prompt(self, prompt, session_id, **kwargs):
                return await super().prompt(prompt, session_id, **kwargs)

        with env(ACP_HEARTBEAT_DISABLED="1"):
            run(Served().prompt([], "s"))
            run(Served().prompt([], "t"))  # a second turn: the relay is put in place once
        self.assertEqual(
            conn.kinds("s"),
            ["card:in_progress", "card:completed", "thought:a", "thought:b", "text:Hello"],
        )
        self.assertEqual(conn.kinds("t")[:2], ["card:in_progress", "card:completed"])
        self.assertEqual(len(conn.kinds("t")), 5)  # nothing sent twice

    def test_bookkeeping_neither_completes_nor_ends_a_hold(self):
        usage = {"sessionUpdate": "usage_update", "used": 1, "size": 2}
        kinds = self.turn([thought("a"), text("b"), usage, thought("c"), text("d"), usage], ACP_THINK_HOLD_MS="10000")
        self.assertEqual(kinds, ["thought:a", "usage_update", "thought:c", "usage_update", "text:bd"])

    def test_no_reasoning_holds_nothing(self):
        kinds = self.turn([text("x"), thought("late"), text("y")], ACP_THINK_HOLD_MS="10000")
        self.assertEqual(kinds, ["text:x", "thought:late", "text:y"])

    def test_flushed_before_a_tool_call_and_at_turn_end(self):
        kinds = self.turn(
            [thought("a"), text("b"), acp.start_tool_call("t", "read", status="pending"), thought("c"), text("d")],
            ACP_THINK_HOLD_MS="10000",
            ACP_THINK_GAP_MS="0",
        )
        self.assertEqual(kinds, ["thought:a", "text:b", "tool_call:pending", "thought:c", "text:d"])

    def test_zero_hold_flushes_on_the_next_tick(self):
        kinds = self.turn([thought("a"), text("b"), 0.02, thought("c")], ACP_THINK_HOLD_MS="0")
        self.assertEqual(kinds, ["thought:a", "text:b", "thought:c"])

    def test_invalid_values_fall_back_to_the_default(self):
        for bad in ("-1", "nan", "inf", "soon"):
            self.rt = load_runtime()
            kinds = self.turn([thought("a"), text("b"), 0.05, thought("c"), 0.3], ACP_THINK_HOLD_MS=bad)
            self.assertEqual(kinds, ["thought:a", "thought:c", "text:b"], bad)

    def test_awaited_send_resolves_while_text_is_held(self):
        resolved = []

        async def script(agent, sid):
            await agent.send(sid, thought("a"))
            await agent.send(sid, text("b"))
            resolved.append(time.monotonic())

        conn = Conn()
        with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_HOLD_MS="10000"):
            t0 = time.monotonic()
            run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        self.assertLess(resolved[0] - t0, 1.0)
        self.assertEqual(conn.kinds()[-1], "text:b")  # flushed at turn end

    def test_dict_updates_and_extra_keywords_are_forwarded_unchanged(self):
        conn = Conn()

        async def script(agent, sid):
            await agent.send(sid, {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "r"}})
            await agent.send(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a"}})
            await agent.send(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "b"}})

        with env(ACP_HEARTBEAT_DISABLED="1"):
            run(decorate(self.rt, source="static")(self.rt, conn, script, send_kwargs={"source": "agent"}).prompt([], "s"))
        self.assertEqual(conn.kinds(), ["card:in_progress", "card:completed", "thought:r", "text:ab"])
        self.assertEqual([k for _, _, k in conn.sent], [{"source": "static"}] + [{"source": "agent"}] * 3)


class Gap(unittest.TestCase):
    def setUp(self):
        self.rt = load_runtime()

    def test_a_card_opens_in_the_silence_after_a_tool_call_and_closes_at_the_next_output(self):
        conn = Conn()

        async def script(agent, sid):
            await agent.send(sid, acp.start_tool_call("t1", "read", status="in_progress"))
            await agent.send(sid, acp.update_tool_call("t1", status="completed"))
            await asyncio.sleep(0.25)
            await agent.send(sid, text("after"))
            await agent.send(sid, acp.update_tool_call("t2", status="failed"))
            await agent.send(sid, text("quick"))  # within the gap: no card

        with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_GAP_MS="100"):
            run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        self.assertEqual(
            conn.kinds(),
            [
                "card:in_progress",
                "card:completed",
                "tool_call:in_progress",
                "tool_call_update:completed",
                "card:in_progress",
                "card:completed",
                "text:after",
                "tool_call_update:failed",
                "text:quick",
            ],
        )
        ids = [u["toolCallId"] for _, u, _ in conn.sent if str(u.get("toolCallId", "")).startswith("think-")]
        self.assertEqual(len(set(ids)), 2)  # a new card, not the first one again

    def test_zero_disables_and_a_turn_end_disarms(self):
        for gap in ("0", "100"):
            self.rt = load_runtime()
            conn = Conn()

            async def script(agent, sid):
                await agent.send(sid, {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read", "status": "pending"})
                await agent.send(sid, acp.update_tool_call("t1", status="completed"))

            async def main():
                await decorate(self.rt)(self.rt, conn, script).prompt([], "s")
                await asyncio.sleep(0.2)  # the turn ended: no card after it

            with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_GAP_MS=gap):
                run(main())
            self.assertEqual(
                conn.kinds(), ["card:in_progress", "card:completed", "tool_call:pending", "tool_call_update:completed"], gap
            )


async def until(condition):
    """Waits (generously) for a condition the runtime's own timers bring about."""
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.001)


class Grace(unittest.TestCase):
    """ACP_THINK_AFTER_MS: a turn whose first real update comes within it gets no card."""

    def setUp(self):
        self.rt = load_runtime()

    def test_an_answer_within_the_grace_gets_no_card(self):
        conn = Conn()

        async def script(agent, sid):
            await agent.send(sid, {"sessionUpdate": "available_commands_update", "availableCommands": []})
            await agent.send(sid, text("/help: the commands"))
            await asyncio.sleep(0.05)  # the turn goes on: the grace is over, the answer has begun

        async def main():
            await decorate(self.rt)(self.rt, conn, script).prompt([], "s")
            await asyncio.sleep(0.05)

        with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_AFTER_MS="10000"):
            run(main())
        self.assertEqual(conn.kinds(), ["available_commands_update", "text:/help: the commands"])
        self.assertIsNone(self.rt._sessions["s"].gap_timer)

    def test_the_default_grace_is_50_ms_from_the_prompts_entry(self):
        async def main():
            seen = {}

            async def script(agent, sid):
                seen["timer"] = self.rt._sessions[sid].gap_timer

            loop = asyncio.get_running_loop()
            before = loop.time()
            await decorate(self.rt)(self.rt, Conn(), script).prompt([], "s")
            after = loop.time()
            return before, seen["timer"].when() - 0.05, after

        with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_AFTER_MS=None):
            before, armed_at, after = run(main())
        self.assertLessEqual(before, armed_at + 1e-9)
        self.assertLessEqual(armed_at, after + 1e-9)

    def test_silence_through_the_grace_opens_the_card_then_the_answer_completes_it(self):
        conn = Conn()

        async def script(agent, sid):
            await until(lambda: conn.kinds() == ["card:in_progress"])
            await agent.send(sid, thought("r"))

        with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_AFTER_MS="1"):
            run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        self.assertEqual(conn.kinds(), ["card:in_progress", "card:completed", "thought:r"])

    def test_the_heartbeat_runs_on_a_card_opened_by_the_grace(self):
        conn = Conn()

        async def script(agent, sid):
            await until(lambda: conn.kinds().count("card:in_progress") >= 2)
            await agent.send(sid, text("done"))

        with env(ACP_HEARTBEAT_S="0.01", ACP_THINK_AFTER_MS="1"):
            run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        beats = [u for _, u, _ in conn.sent if u.get("sessionUpdate") == "tool_call_update" and u.get("status") == "in_progress"]
        self.assertTrue(beats)
        self.assertEqual(conn.kinds()[-2:], ["card:completed", "text:done"])

    def test_a_chunk_sent_while_the_grace_card_goes_out_follows_it(self):
        conn = Conn(delay=0.02)  # the card's start is still on its way when the chunk is sent
        rt = self.rt

        async def script(agent, sid):
            await until(lambda: sid in rt._sessions and rt._sessions[sid].open)
            self.assertEqual(conn.kinds(), [])
            await agent.send(sid, text("now"))

        with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_AFTER_MS="1"):
            run(decorate(rt)(rt, conn, script).prompt([], "s"))
        self.assertEqual(conn.kinds(), ["card:in_progress", "card:completed", "text:now"])

    def test_a_turn_ending_in_the_grace_sends_nothing_card_related(self):
        for outcome in ("return", "raise", "cancelled", "session/cancel"):
            self.rt = load_runtime()
            conn = Conn()

            async def script(agent, sid, outcome=outcome):
                if outcome == "raise":
                    raise ValueError("boom")
                if outcome == "cancelled":
                    raise asyncio.CancelledError()
                if outcome == "session/cancel":
                    await agent.cancel(sid)
                    await asyncio.sleep(0.6)  # well past the grace, still in the turn

            async def main():
                agent = decorate(self.rt)(self.rt, conn, script)
                try:
                    await agent.prompt([], "s")
                except (ValueError, asyncio.CancelledError):
                    pass
                await asyncio.sleep(0.6)  # well past the grace

            with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_AFTER_MS="200"):
                run(main())
            self.assertEqual(conn.kinds(), [], outcome)

    def test_updates_that_are_not_the_models_output_leave_the_card_due(self):
        # the protocol's kinds that are not the turn's output (the agent's bookkeeping, the
        # user's own message echoed): sent right after the prompt, the wait after them still
        # gets its card once the grace is over
        others = [
            {"sessionUpdate": "available_commands_update", "availableCommands": []},
            {"sessionUpdate": "current_mode_update", "currentModeId": "code"},
            {"sessionUpdate": "config_option_update", "configOptions": []},
            {"sessionUpdate": "session_info_update", "title": "A title"},
            {"sessionUpdate": "usage_update", "used": 1, "size": 2},
            {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}},
            {"sessionUpdate": "a_kind_of_a_later_protocol"},
        ]
        for other in others:
            self.rt = load_runtime()
            conn = Conn()

            async def script(agent, sid, other=other):
                await agent.send(sid, other)
                await until(lambda: "card:in_progress" in conn.kinds())
                await agent.send(sid, text("the answer"))

            with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_AFTER_MS="20"):
                run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
            kind = other["sessionUpdate"]
            self.assertEqual(conn.kinds(), [kind, "card:in_progress", "card:completed", "text:the answer"], kind)

    def test_a_loop_still_computing_the_answer_is_no_wait(self):
        # a turn answered without the model, slowed past the grace (a loaded machine): its
        # loop never went idle, so no card; the same work followed by a real wait gets one
        for then_wait in (False, True):
            self.rt = load_runtime()
            conn = Conn()

            async def script(agent, sid, then_wait=then_wait):
                deadline = time.monotonic() + 0.1  # five graces of work, in small steps
                while time.monotonic() < deadline:
                    time.sleep(0.002)
                    await asyncio.sleep(0)
                if then_wait:
                    await until(lambda: "card:in_progress" in conn.kinds())
                await agent.send(sid, text("done"))

            with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_AFTER_MS="20"):
                run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
            expected = ["card:in_progress", "card:completed", "text:done"] if then_wait else ["text:done"]
            self.assertEqual(conn.kinds(), expected, then_wait)

    def test_a_loop_that_is_never_idle_still_gets_its_card_at_most_100_ms_late(self):
        conn = Conn()

        async def script(agent, sid):
            async def spin():
                while True:
                    await asyncio.sleep(0)

            spinner = asyncio.get_running_loop().create_task(spin())
            started = time.monotonic()
            await until(lambda: "card:in_progress" in conn.kinds())
            spinner.cancel()
            late = time.monotonic() - started
            self.assertGreaterEqual(late, 0.1)
            self.assertLess(late, 2.0)
            await agent.send(sid, text("done"))

        with env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_AFTER_MS="20"):
            run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        self.assertEqual(conn.kinds(), ["card:in_progress", "card:completed", "text:done"])

    def test_invalid_values_fall_back_to_the_default(self):
        for raw in ("-5", "nan", "inf", "soon"):
            with env(ACP_THINK_AFTER_MS=raw):
                self.assertEqual(self.rt._env_number("THINK_AFTER_MS", 50.0), 50.0, raw)


class Emitter(unittest.TestCase):
    def setUp(self):
        self.env = env(ACP_HEARTBEAT_DISABLED="1")
        self.rt = load_runtime()

    def tearDown(self):
        self.env.stop()

    def test_pass_through_of_everything_else(self):
        conn = Conn()
        proxy = self.rt.emitter(conn)
        self.assertEqual(proxy.other, "passes through")
        proxy.other = "set through"
        self.assertEqual(conn.other, "set through")
        self.assertIsNone(self.rt.emitter(None))
        self.assertIs(self.rt.emitter(proxy), proxy)
        self.assertTrue(proxy)

    def test_outside_a_turn_sends_are_forwarded_as_is(self):
        conn = Conn()
        run(self.rt.emitter(conn).session_update(session_id="s", update=text("x"), source="y"))
        self.assertEqual(conn.sent, [("s", wire(text("x")), {"source": "y"})])

    def test_sync_sends_are_left_alone(self):
        class Sync:
            def __init__(self):
                self.calls = []

            def session_update(self, *args, **kwargs):
                self.calls.append((args, kwargs))
                return "sent"

        sync = Sync()
        self.assertEqual(self.rt.emitter(sync).session_update("s", text("x"), k=1), "sent")
        self.assertEqual(len(sync.calls), 1)

    def test_legacy_session_notification(self):
        conn = LegacyConn()
        rt = self.rt

        class Old:
            @rt.prompt_handler(lambda self: conn)
            async def prompt(self, params):
                await rt.emitter(conn).sessionUpdate(acp.session_notification(params.session_id, thought("r")))
                await rt.emitter(conn).sessionUpdate(acp.session_notification(params.session_id, text("a")))
                await rt.emitter(conn).sessionUpdate(acp.session_notification(params.session_id, text("b")))
                return "end_turn"

        run(Old().prompt(acp.PromptRequest(session_id="s", prompt=[])))
        self.assertEqual([describe(u) for _, u, _ in conn.sent], ["card:in_progress", "card:completed", "thought:r", "text:ab"])

    def test_a_forks_session_update_taking_one_notification(self):
        conn = ForkConn()
        rt = self.rt

        class Forked:
            @rt.prompt_handler(lambda self: conn)
            async def prompt(self, params):
                await asyncio.sleep(0.01)  # the card opens before the agent's first send
                for update in (thought("r"), text("a"), text("b")):
                    note = acp.schema.SessionNotification(session_id=params.session_id, update=update)
                    await rt.emitter(conn).session_update(note)
                return "end_turn"

        run(Forked().prompt(acp.PromptRequest(session_id="s", prompt=[])))
        self.assertEqual([describe(u) for _, u, _ in conn.sent], ["card:in_progress", "card:completed", "thought:r", "text:ab"])
        self.assertEqual({s for s, _, _ in conn.sent}, {"s"})
        # the SDK's own connection (>= 0.7) and a proxy taking anything are not read as one
        self.assertIsNone(rt._notification_param(Conn().session_update))
        self.assertIsNone(rt._notification_param(lambda *args, **kwargs: None))

    def test_sends_from_worker_threads_and_tasks_keep_their_order(self):
        conn = Conn()

        async def script(agent, sid):
            loop = asyncio.get_running_loop()

            def worker():
                for i in range(5):
                    future = asyncio.run_coroutine_threadsafe(
                        agent.rt.emitter(agent._conn).session_update(session_id=sid, update=text(str(i))), loop
                    )
                    future.result(WAIT)

            await loop.run_in_executor(None, worker)
            tasks = [asyncio.create_task(agent.send(sid, text(c))) for c in "abc"]
            await asyncio.gather(*tasks)

        run(decorate(self.rt)(self.rt, conn, script).prompt([], "s"))
        self.assertEqual(conn.kinds(), ["card:in_progress", "card:completed"] + [f"text:{c}" for c in "01234abc"])


if __name__ == "__main__":
    unittest.main()


class Wire(unittest.TestCase):
    """Agents without the SDK: their own writer of JSON-RPC messages (sync or async, dicts or
    JSON text or bytes) goes through ``wire``, the card through ``prompt_handler(wire=...)``."""

    def setUp(self):
        self.env = env()
        self.rt = load_runtime()
        self.lines = []  # what reached the agent's stdout, parsed

    def tearDown(self):
        self.env.stop()

    def write(self, line):  # a synchronous writer of JSON text, like sys.stdout.write
        self.lines.append(__import__("json").loads(line))

    def kinds(self):
        return [describe(m["params"]["update"]) if m.get("method") == "session/update" else "reply" for m in self.lines]

    def note(self, sid, update):
        return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": update}}

    def run_turn(self, body, writer=None):
        rt, json = self.rt, __import__("json")
        writer = writer or self.write

        @rt.prompt_handler(wire=lambda acp_params, params, *_, **__: writer(json.dumps(self.note(params["sessionId"], acp_params["update"]))))
        async def handle_prompt(params):
            await body(params["sessionId"], lambda m: rt.wire(writer)(json.dumps(m) + "\n"))
            return {"stopReason": "end_turn"}

        return asyncio.run(asyncio.wait_for(handle_prompt({"sessionId": "s1", "prompt": []}), WAIT))

    def test_card_opens_at_entry_and_closes_before_the_first_chunk_through_a_sync_writer(self):
        async def body(sid, send):
            send(self.note(sid, {"sessionUpdate": "available_commands_update", "availableCommands": []}))
            send(self.note(sid, {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}))

        self.run_turn(body)
        self.assertEqual(self.kinds(), ["card:in_progress", "available_commands_update", "card:completed", "text:hi"])

    def test_text_after_reasoning_is_held_merged_and_written_once(self):
        async def body(sid, send):
            chunk = lambda kind, t: self.note(sid, {"sessionUpdate": kind, "content": {"type": "text", "text": t}})  # noqa: E731
            send(chunk("agent_thought_chunk", "think"))
            send(chunk("agent_message_chunk", "a"))
            send(chunk("agent_thought_chunk", "more"))
            send(chunk("agent_message_chunk", "b"))

        self.run_turn(body)
        self.assertEqual(self.kinds(), ["card:in_progress", "card:completed", "thought:think", "thought:more", "text:ab"])

    def test_bytes_and_async_writers(self):
        json = __import__("json")
        out = []

        async def awrite(data):
            out.append(json.loads(data.decode()))

        rt = self.rt

        @rt.prompt_handler(wire=lambda acp_params, params, *_, **__: awrite(json.dumps(self.note("s2", acp_params["update"])).encode()))
        async def handle_prompt(params):
            await rt.wire(awrite)(json.dumps(self.note("s2", {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "x"})).encode())
            return {"stopReason": "end_turn"}

        asyncio.run(asyncio.wait_for(handle_prompt({"sessionId": "s2"}), WAIT))
        self.assertEqual([describe(m["params"]["update"]) for m in out], ["card:in_progress", "card:completed", "tool_call:?"])

    def test_other_messages_and_attributes_pass_through(self):
        class Out:
            encoding = "utf-8"

            def __init__(self):
                self.got = []

            def write(self, s):
                self.got.append(s)
                return len(s)

        out = Out()
        w = self.rt.wire(out)
        self.assertEqual(w.encoding, "utf-8")
        reply = '{"jsonrpc": "2.0", "id": 1, "result": {}}\n'
        self.assertEqual(w.write(reply), len(reply))
        self.assertEqual(out.got, [reply])
        self.assertIs(self.rt.wire(w), w)

    def test_a_synchronous_cancel_flushes_and_stops_gap_cards(self):
        rt = self.rt
        calls = []

        @rt.cancel_handler
        def cancel(params, state):
            calls.append(params["sessionId"])

        session = rt._session("s3")
        session.turns = 1
        cancel({"sessionId": "s3"}, None)
        self.assertEqual(calls, ["s3"])
        self.assertTrue(session.cancelled)


class Threaded(unittest.TestCase):
    """Agents without the SDK whose loop runs synchronous handlers on worker threads: the turn,
    card, heartbeat, text hold and gap card run on threads, written through the agent's own
    writer (``write_notification(method, params)``, serialised by its lock)."""

    class Server:
        """The agent's writer: one JSON line per message, under a lock (as a threaded agent's)."""

        def __init__(self):
            self.lock = __import__("threading").Lock()
            self.raw = []  # lines as written, to see that none interleave

        def write_notification(self, method, params):
            line = __import__("json").dumps({"jsonrpc": "2.0", "method": method, "params": params}) + "\n"
            with self.lock:
                self.raw.append(line)

        def updates(self, session_id=None):
            json = __import__("json")
            out = []
            for line in self.raw:
                message = json.loads(line)
                params = message["params"]
                if message["method"] == "session/update" and session_id in (None, params["sessionId"]):
                    out.append(describe(params["update"]))
            return out

    def setUp(self):
        self.rt = load_runtime()
        self.server = self.Server()

    def handler(self, body):
        rt = self.rt

        def update(server, session_id, update):
            rt.wire(server).write_notification("session/update", {"sessionId": session_id, "update": update})

        @rt.prompt_handler(wire=lambda acp_params, server, *_, **__: server.write_notification("session/update", acp_params))
        def handle_prompt(server, params):
            body(lambda u: update(server, params["sessionId"], u), params["sessionId"])
            return {"stopReason": "end_turn"}

        return handle_prompt

    def run_turns(self, body, sessions=("s1",), **environ):
        from concurrent.futures import ThreadPoolExecutor

        handle = self.handler(body)
        environ.setdefault("ACP_HEARTBEAT_DISABLED", "1")
        with env(**environ), ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(handle, self.server, {"sessionId": s, "prompt": []}) for s in sessions]
            results = [f.result(WAIT) for f in futures]
            time.sleep(0.1)  # nothing more may come after the turns ended
        return results

    @staticmethod
    def chunk(kind, t):
        return {"sessionUpdate": kind, "content": {"type": "text", "text": t}}

    def test_card_opens_at_entry_and_closes_before_the_first_chunk(self):
        def body(send, sid):
            time.sleep(0.05)
            send({"sessionUpdate": "usage_update", "used": 1, "size": 2})
            send(self.chunk("agent_message_chunk", "hi"))

        self.assertEqual(self.run_turns(body), [{"stopReason": "end_turn"}])
        self.assertEqual(self.server.updates(), ["card:in_progress", "usage_update", "card:completed", "text:hi"])

    def test_the_grace_runs_on_a_timer_thread(self):
        def quick(send, sid):
            send(self.chunk("agent_message_chunk", "at once"))
            time.sleep(0.1)

        self.run_turns(quick, ACP_THINK_AFTER_MS="50")
        self.assertEqual(self.server.updates(), ["text:at once"])
        self.server.raw.clear()

        def slow(send, sid):
            time.sleep(0.2)  # blocked on the model: the card opens at 50 ms, from a timer thread
            send(self.chunk("agent_message_chunk", "late"))

        self.run_turns(slow, ACP_THINK_AFTER_MS="50")
        self.assertEqual(self.server.updates(), ["card:in_progress", "card:completed", "text:late"])

    def test_heartbeat_beats_on_timer_threads_until_the_card_closes(self):
        def body(send, sid):
            time.sleep(0.35)
            send(self.chunk("agent_message_chunk", "done"))
            time.sleep(0.25)

        self.run_turns(body, ACP_HEARTBEAT_DISABLED=None, ACP_HEARTBEAT_S="0.1")
        kinds = self.server.updates()
        self.assertGreaterEqual(kinds.count("card:in_progress"), 3, kinds)  # the card and its beats
        beats = [line for line in self.server.raw if '"tool_call_update"' in line and '"in_progress"' in line]
        self.assertIn("(0s)", beats[0])
        self.assertEqual(kinds[-2:], ["card:completed", "text:done"])

    def test_text_after_reasoning_is_held_merged_and_flushed_by_its_timer(self):
        def body(send, sid):
            send(self.chunk("agent_thought_chunk", "think"))
            send(self.chunk("agent_message_chunk", "a"))
            send(self.chunk("agent_thought_chunk", "more"))
            send(self.chunk("agent_message_chunk", "b"))
            time.sleep(0.2)  # the hold's timer thread writes the text
            self.assertIn("text:ab", self.server.updates())
            send(self.chunk("agent_message_chunk", "c"))

        self.run_turns(body, ACP_THINK_HOLD_MS="50")
        self.assertEqual(self.server.updates(), ["card:in_progress", "card:completed", "thought:think", "thought:more", "text:ab", "text:c"])

    def test_a_gap_card_after_a_tool_call_and_a_failed_card_when_the_handler_raises(self):
        def body(send, sid):
            send({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read"})
            send({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
            time.sleep(0.2)  # silence after the tool: a new card opens
            raise RuntimeError("the model failed")

        with self.assertRaises(RuntimeError):
            self.run_turns(body, ACP_THINK_GAP_MS="50")
        self.assertEqual(
            self.server.updates(),
            ["card:in_progress", "card:completed", "tool_call:?", "tool_call_update:completed", "card:in_progress", "card:failed"],
        )

    def test_sessions_on_their_own_threads_get_their_own_cards_and_whole_lines(self):
        def body(send, sid):
            for k in range(20):
                send(self.chunk("agent_thought_chunk", f"{sid}-{k} "))
                send(self.chunk("agent_message_chunk", f"{sid}-{k} "))
                time.sleep(0.002)

        self.run_turns(body, sessions=("s1", "s2", "s3"), ACP_THINK_HOLD_MS="5")
        for sid in ("s1", "s2", "s3"):
            kinds = self.server.updates(sid)
            self.assertEqual(kinds[:2], ["card:in_progress", "card:completed"])
            self.assertEqual(kinds.count("card:in_progress"), 1)
            text = "".join(k[len("text:"):] for k in kinds if k.startswith("text:"))
            self.assertEqual(text, "".join(f"{sid}-{k} " for k in range(20)))
        self.assertTrue(all(line.count("\n") == 1 for line in self.server.raw))

    def test_a_cancel_from_another_thread_flushes_and_no_gap_card_opens(self):
        import threading

        rt, cancelled = self.rt, threading.Event()

        @rt.cancel_handler
        def handle_cancel(server, params):
            cancelled.set()

        def body(send, sid):
            send(self.chunk("agent_thought_chunk", "hm"))
            send(self.chunk("agent_message_chunk", "partial"))  # held
            send({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "read"})
            send({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
            threading.Thread(target=handle_cancel, args=(self.server, {"sessionId": sid})).start()
            cancelled.wait(WAIT)
            time.sleep(0.15)

        self.run_turns(body, ACP_THINK_GAP_MS="50", ACP_THINK_HOLD_MS="10000")
        self.assertEqual(
            self.server.updates(),
            ["card:in_progress", "card:completed", "thought:hm", "text:partial", "tool_call:?", "tool_call_update:completed"],
        )

    def test_writes_outside_a_threaded_turn_and_other_methods_pass_as_they_are(self):
        w = self.rt.wire(self.server)
        w.write_notification("session/update", {"sessionId": "x", "update": self.chunk("agent_message_chunk", "replay")})
        w.write_notification("session/request_permission", {"sessionId": "x"})
        self.assertEqual(len(self.server.raw), 2)
        self.assertEqual(self.server.updates(), ["text:replay"])
