"""Unit tests of the Python code acp-patch inserts (templates/python), against the real `acp` SDK.

Run from the repository root: `$ACP_PATCH_TEST_PYTHON -m unittest discover -s tests/python -v`.
Each template is rendered the way the Rust side does ({{PREFIX}} -> ACP, {{SEND}} -> a sender)
and exec'd into a fresh module namespace.
"""

import asyncio
import contextlib
import io
import os
import pathlib
import re
import threading
import time
import unittest
from unittest import mock

import acp

TEMPLATES = pathlib.Path(__file__).resolve().parents[2] / "templates" / "python"
ALL = (
    "hooks_thread.py",
    "helpers.py",
    "send.py",
    "factory.py",
    "turn_thread.py",
    "text_hold_thread.py",
)
WAIT = 5.0  # generous upper bound for anything asynchronous


def render(name, send="_recording_send"):
    text = (TEMPLATES / name).read_text()
    return text.replace("{{PREFIX}}", "ACP").replace("{{SEND}}", send)


def load(*names, send="_recording_send", **extra):
    """Exec templates into one fresh module namespace (like inserting them into one module)."""
    ns = {"__name__": "acp_patch_inserted", "acp": acp}
    ns.update(extra)
    for name in names:
        exec(compile(render(name, send), str(TEMPLATES / name), "exec"), ns)
    return ns


def wait_until(predicate, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


async def async_wait_until(predicate, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.005)
    return predicate()


def wire(update):
    return update.model_dump(mode="json", by_alias=True, exclude_none=True)


def env(**values):
    """Patch the environment; keys set to None are removed."""
    patch = mock.patch.dict(os.environ)
    patch.start()
    for key in ("ACP_HEARTBEAT_S", "ACP_HEARTBEAT_DISABLED", "ACP_THINK_HOLD_MS", "ACP_THINK_AFTER_MS"):
        os.environ.pop(key, None)
    for key, value in values.items():
        if value is not None:
            os.environ[key] = value
    return patch


class Bare:
    """Stands in for an agent; tests build it with object.__new__ (no __init__)."""

    def __init__(self):
        raise AssertionError("the inserted code must not need __init__")


class Recorder:
    """A progress callback that records (state, name, args) from any thread."""

    def __init__(self, fail=False):
        self.calls = []
        self.lock = threading.Lock()
        self.fail = fail

    def __call__(self, state, name, args=None):
        with self.lock:
            self.calls.append((state, name, args))
        if self.fail:
            raise RuntimeError("callback failure must not propagate")

    def states(self):
        with self.lock:
            return [c[0] for c in self.calls]

    def count(self, state):
        return self.states().count(state)

    def transitions(self):
        """The states without heartbeats: what a test about opening and closing cards compares
        (a 50 ms heartbeat may tick between two calls on a loaded machine)."""
        return [s for s in self.states() if s != "heartbeat"]


class StaticContract(unittest.TestCase):
    def test_marker_indent_and_no_stdout(self):
        for name in ALL:
            text = (TEMPLATES / name).read_text()
            self.assertTrue(text.startswith(f"# acp-patch: {name[:-3]}\n"), name)
            self.assertNotIn("\r", text, name)
            self.assertNotIn("\t", text, name)
            self.assertNotRegex(text, r"\bprint\(|sys\.stdout", name)
            for line in text.splitlines():
                indent = len(line) - len(line.lstrip(" "))
                self.assertEqual(indent % 4, 0, f"{name}: {line!r}")
            # module level: only defs (and the marker / blank lines)
            for line in text.splitlines():
                if line and not line.startswith((" ", "#")):
                    self.assertRegex(line, r"^(async def|def|class) ", f"{name}: {line!r}")

    def test_exactly_one_literal_call_per_state(self):
        for name in ("hooks_thread.py",):
            text = (TEMPLATES / name).read_text()
            for state in ("start", "heartbeat", "complete"):
                self.assertEqual(len(re.findall(rf'callback\("{state}", "llm_response", ', text)), 1, (name, state))
        for name in ALL:
            text = (TEMPLATES / name).read_text()
            calls = re.findall(r'\w\(\s*"(?:start|heartbeat|complete)"', text)
            expected = 3 if name.startswith("hooks_") else 0
            self.assertEqual(len(calls), expected, (name, calls))

    def test_placeholders(self):
        for name in ALL:
            text = (TEMPLATES / name).read_text()
            self.assertEqual(set(re.findall(r"\{\{(\w+)\}\}", text)) - {"PREFIX", "SEND"}, set(), name)
            if name != "factory.py":
                self.assertNotIn("{{SEND}}", text, name)


class Helpers(unittest.TestCase):
    def setUp(self):
        self.ns = load("helpers.py")

    def test_wire_shapes(self):
        self.assertEqual(
            wire(self.ns["build_thinking_start"]("think-1")),
            {"sessionUpdate": "tool_call", "toolCallId": "think-1", "title": "Thinking...", "kind": "think", "status": "in_progress"},
        )
        self.assertEqual(
            wire(self.ns["build_thinking_progress"]("think-1", 61.9)),
            {"sessionUpdate": "tool_call_update", "toolCallId": "think-1", "title": "Thinking... (61s)", "status": "in_progress"},
        )
        self.assertEqual(
            wire(self.ns["build_thinking_complete"]("think-1")),
            {"sessionUpdate": "tool_call_update", "toolCallId": "think-1", "title": "Thinking...", "status": "completed"},
        )


class Factory(unittest.TestCase):
    def setUp(self):
        self.sent = []
        self.ns = load("helpers.py", "factory.py", _recording_send=self.record)
        self.cb = self.ns["make_agent_progress_cb"]("CONN", "sess-1", "LOOP")

    def record(self, conn, session_id, loop, update):
        self.assertEqual((conn, session_id, loop), ("CONN", "sess-1", "LOOP"))
        self.sent.append(wire(update))

    def test_state_machine(self):
        self.cb("start", "llm_response", {})
        self.cb("heartbeat", "llm_response", {"elapsed": 30.2})
        self.cb("heartbeat", "llm_response", {"elapsed": 60.4})
        self.cb("complete", "llm_response", {})
        self.assertEqual([u["sessionUpdate"] for u in self.sent], ["tool_call", "tool_call_update", "tool_call_update", "tool_call_update"])
        ids = {u["toolCallId"] for u in self.sent}
        self.assertEqual(len(ids), 1)
        self.assertRegex(ids.pop(), r"^think-[0-9a-f]{12}$")
        self.assertEqual(self.sent[0]["kind"], "think")
        self.assertEqual(self.sent[0]["status"], "in_progress")
        self.assertEqual([u.get("title") for u in self.sent[1:3]], ["Thinking... (30s)", "Thinking... (60s)"])
        self.assertEqual(self.sent[3]["status"], "completed")

    def test_without_start_is_noop(self):
        self.cb("heartbeat", "llm_response", {"elapsed": 30})
        self.cb("complete", "llm_response", {})
        self.cb("start", "llm_response", {})
        self.cb("complete", "llm_response", {})
        self.cb("complete", "llm_response", {})
        self.cb("heartbeat", "llm_response", {"elapsed": 30})
        self.assertEqual([u["sessionUpdate"] for u in self.sent], ["tool_call", "tool_call_update"])

    def test_second_start_closes_first(self):
        self.cb("start", "llm_response", {})
        self.cb("start", "llm_response", {})
        self.cb("complete", "llm_response", {})
        first, second = self.sent[0]["toolCallId"], self.sent[2]["toolCallId"]
        self.assertNotEqual(first, second)
        self.assertEqual(
            [(u["sessionUpdate"], u["toolCallId"], u.get("status")) for u in self.sent],
            [("tool_call", first, "in_progress"), ("tool_call_update", first, "completed"),
             ("tool_call", second, "in_progress"), ("tool_call_update", second, "completed")],
        )

    def test_names_are_independent_and_args_optional(self):
        self.cb("start", "a")
        self.cb("start", "b")
        self.cb("heartbeat", "a", None)
        self.cb("heartbeat", "b", "not a dict")
        self.cb("complete", "a")
        self.cb("unknown-state", "b")
        by_id = {}
        for u in self.sent:
            by_id.setdefault(u["toolCallId"], []).append(u.get("status"))
        self.assertEqual(sorted(by_id.values()), [["in_progress", "in_progress"], ["in_progress", "in_progress", "completed"]])
        self.assertIn("Thinking... (0s)", [u.get("title") for u in self.sent])

    def test_sender_failure_does_not_propagate(self):
        ns = load("helpers.py", "factory.py", _recording_send=mock.Mock(side_effect=RuntimeError("boom")))
        cb = ns["make_agent_progress_cb"](None, "s", None)
        cb("start", "llm_response", {})
        cb("heartbeat", "llm_response", {"elapsed": "garbage"})
        cb("complete", "llm_response", {})

    def test_thread_safe(self):
        def worker(i):
            for _ in range(20):
                self.cb("start", f"n{i}", {})
                self.cb("heartbeat", f"n{i}", {"elapsed": 1})
                self.cb("complete", f"n{i}", {})

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        by_id = {}
        for u in self.sent:
            by_id.setdefault(u["toolCallId"], []).append(u.get("status"))
        self.assertEqual(len(by_id), 160)
        for statuses in by_id.values():
            self.assertEqual(statuses, ["in_progress", "in_progress", "completed"])


class ThreadHooks(unittest.TestCase):
    def setUp(self):
        self.addCleanup(env(ACP_HEARTBEAT_S="0.05").stop)
        self.ns = load("hooks_thread.py")
        self.agent = object.__new__(Bare)
        self.rec = Recorder()
        self.agent.agent_progress_callback = self.rec
        self.addCleanup(self.ns["_acp_progress_complete"], self.agent)

    def test_heartbeat_repeats_with_growing_elapsed_and_stops(self):
        self.ns["_acp_progress_start"](self.agent)
        self.assertTrue(self.agent._acp_heartbeat_timer.daemon)
        self.assertTrue(wait_until(lambda: self.rec.count("heartbeat") >= 3))
        self.ns["_acp_progress_complete"](self.agent)
        beats = [c[2]["elapsed"] for c in self.rec.calls if c[0] == "heartbeat"]
        self.assertEqual(beats, sorted(beats))
        self.assertGreater(beats[0], 0.04)
        self.assertGreater(beats[-1], beats[0])
        for call in self.rec.calls:
            self.assertEqual(call[1], "llm_response")
        after = len(self.rec.calls)
        time.sleep(0.3)  # six intervals: a stale timer would have fired
        self.assertEqual(len(self.rec.calls), after)
        self.assertEqual(self.rec.states()[0], "start")
        self.assertEqual(self.rec.states()[-1], "complete")
        self.assertIsNone(self.agent._acp_heartbeat_timer)

    def test_default_interval_and_invalid_values(self):
        for value, expected in ((None, 30.0), ("abc", 30.0), ("-1", 30.0), ("2.5", 2.5)):
            with mock.patch.dict(os.environ):
                os.environ.pop("ACP_HEARTBEAT_S", None)
                if value is not None:
                    os.environ["ACP_HEARTBEAT_S"] = value
                self.ns["_acp_progress_start"](self.agent)
                self.assertEqual(self.agent._acp_heartbeat_timer.interval, expected)
                self.ns["_acp_progress_complete"](self.agent)

    def test_disabled(self):
        os.environ["ACP_HEARTBEAT_DISABLED"] = "1"
        self.ns["_acp_progress_start"](self.agent)
        self.assertIsNone(getattr(self.agent, "_acp_heartbeat_timer", None))
        time.sleep(0.2)
        self.ns["_acp_progress_complete"](self.agent)
        self.assertEqual(self.rec.states(), ["start", "complete"])

    def test_complete_idempotent_and_without_start(self):
        os.environ["ACP_HEARTBEAT_S"] = "60"  # no real tick between the calls, however loaded
        self.ns["_acp_progress_complete"](self.agent)
        self.ns["_acp_progress_start"](self.agent)
        self.ns["_acp_progress_complete"](self.agent)
        self.ns["_acp_progress_complete"](self.agent)
        self.assertEqual(self.rec.states(), ["start", "complete"])

    def test_second_start_closes_first_and_stale_timer_is_ignored(self):
        os.environ["ACP_HEARTBEAT_S"] = "60"  # no real tick between the calls, however loaded
        self.ns["_acp_progress_start"](self.agent)
        old = self.agent._acp_progress_generation
        self.ns["_acp_progress_start"](self.agent)
        self.assertEqual(self.rec.states(), ["start", "complete", "start"])
        self.ns["_acp_progress_heartbeat"](self.agent, old)  # a stale tick
        self.assertEqual(self.rec.count("heartbeat"), 0)
        self.ns["_acp_progress_complete"](self.agent)
        self.ns["_acp_progress_heartbeat"](self.agent, self.agent._acp_progress_generation)
        self.assertEqual(self.rec.states(), ["start", "complete", "start", "complete"])

    def test_hand_off_card_covers_the_first_call_then_retries_get_a_new_card(self):
        self.ns["_acp_progress_begin_turn"](self.agent)  # prompt handler hands the turn to the worker
        self.ns["_acp_progress_start"](self.agent)  # the engine's first LLM call keeps that card
        self.assertEqual(self.rec.transitions(), ["start"])
        self.ns["_acp_progress_start"](self.agent)  # a retry: close and open a new card
        self.assertEqual(self.rec.transitions(), ["start", "complete", "start"])
        self.ns["_acp_progress_complete"](self.agent)
        self.ns["_acp_progress_begin_turn"](self.agent)
        self.ns["_acp_progress_complete"](self.agent)  # e.g. the engine failed before calling
        self.ns["_acp_progress_start"](self.agent)  # no hand-off card is open: a fresh one
        self.assertEqual(self.rec.transitions(), ["start", "complete", "start", "complete", "start", "complete", "start"])

    def test_callbacks_raising_never_propagate(self):
        self.agent.agent_progress_callback = rec = Recorder(fail=True)
        self.ns["_acp_progress_start"](self.agent)
        self.assertTrue(wait_until(lambda: rec.count("heartbeat") >= 2))  # re-armed despite the failure
        self.ns["_acp_progress_complete"](self.agent)
        self.assertEqual(rec.states()[-1], "complete")

    def test_without_callback_attribute(self):
        agent = object.__new__(Bare)
        self.ns["_acp_progress_start"](agent)
        self.ns["_acp_progress_complete"](agent)
        self.assertIsNone(getattr(agent, "_acp_heartbeat_timer", None))

    def test_complete_from_other_threads(self):
        self.ns["_acp_progress_start"](self.agent)
        threads = [threading.Thread(target=self.ns["_acp_progress_complete"], args=(self.agent,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(self.rec.count("complete"), 1)

    def test_with_factory_on_the_wire(self):
        sent = []
        ns = load("hooks_thread.py", "helpers.py", "factory.py", _recording_send=lambda c, s, l, u: sent.append(wire(u)))
        self.agent.agent_progress_callback = ns["make_agent_progress_cb"](None, "s", None)
        ns["_acp_progress_start"](self.agent)
        self.assertTrue(wait_until(lambda: len(sent) >= 3))
        ns["_acp_progress_complete"](self.agent)
        self.assertEqual(sent[0]["kind"], "think")
        self.assertEqual(sent[-1]["status"], "completed")
        self.assertTrue(all(u["sessionUpdate"] == "tool_call_update" and u["status"] == "in_progress" for u in sent[1:-1]))


class FakeConn:
    """An ACP connection (SDK >= 0.7 shape) recording what reaches the wire."""

    def __init__(self, delays=None, fail=False, think_delay=0):
        self.wire = []
        self.delays = list(delays or [])
        self.fail = fail
        self.think_delay = think_delay  # slow down think-card updates only

    async def session_update(self, session_id, update, **kwargs):
        delay = self.delays.pop(0) if self.delays else 0
        if str(getattr(update, "tool_call_id", "")).startswith("think-"):
            delay = self.think_delay
        if delay:
            await asyncio.sleep(delay)
        if self.fail:
            raise RuntimeError("connection failure must not propagate")
        self.wire.append((session_id, wire(update)))


class Send(unittest.TestCase):
    def setUp(self):
        self.ns = load("send.py")
        self.send = self.ns["_acp_send_update"]

    def test_on_loop_thread_keeps_order_and_drains(self):
        conn = FakeConn(delays=[0.05, 0, 0.01, 0, 0])

        async def main():
            loop = asyncio.get_running_loop()
            for i in range(5):
                self.send(conn, "s1", loop, acp.update_agent_message_text(str(i)))
            self.assertEqual(conn.wire, [])  # scheduled, not awaited on the loop thread
            await self.ns["_acp_drain_sends"]("s1")
            await self.ns["_acp_drain_sends"]("other-session")

        asyncio.run(main())
        self.assertEqual([u["content"]["text"] for _, u in conn.wire], ["0", "1", "2", "3", "4"])
        self.assertEqual(self.ns["_acp_pending_sends"]["s1"], [])

    def test_off_loop_thread_waits(self):
        conn = FakeConn(delays=[0.02])

        async def main():
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, self.send, conn, "s1", loop, acp.update_agent_thought_text("t"))
            self.assertEqual(len(conn.wire), 1)  # sent before the worker returned

        asyncio.run(main())

    def test_legacy_connection(self):
        received = []

        class Legacy:
            async def sessionUpdate(self, notification):
                received.append(notification)

        async def main():
            loop = asyncio.get_running_loop()
            self.send(Legacy(), "s1", loop, acp.update_agent_message_text("x"))
            await self.ns["_acp_drain_sends"]("s1")

        with self.assertNoLogs(level="ERROR"):
            asyncio.run(main())
        self.assertEqual(len(received), 1)
        self.assertEqual(received[0].session_id, "s1")
        self.assertEqual(received[0].update.content.text, "x")

    def test_failures_do_not_propagate(self):
        conn = FakeConn(fail=True)

        async def main():
            loop = asyncio.get_running_loop()
            self.send(conn, "s1", loop, acp.update_agent_message_text("x"))
            await self.ns["_acp_drain_sends"]("s1")
            await loop.run_in_executor(None, self.send, conn, "s1", loop, acp.update_agent_message_text("y"))
            self.send(object(), "s1", loop, acp.update_agent_message_text("z"))  # not a connection at all

        asyncio.run(main())
        closed = asyncio.new_event_loop()
        closed.close()
        self.send(FakeConn(), "s1", closed, acp.update_agent_message_text("w"))  # loop gone


def make_thread_agent(events):
    """A callback-style agent like Hermes' AIAgent after acp_adapter/server.py wired it."""
    agent = object.__new__(Bare)
    lock = threading.Lock()

    def recorder(kind):
        def callback(*args, **kwargs):
            with lock:
                events.append((kind,) + args)

        return callback

    agent.reasoning_callback = recorder("thought")
    agent.stream_delta_callback = recorder("text")
    agent.tool_progress_callback = recorder("tool")
    agent.step_callback = recorder("step")
    agent.agent_progress_callback = recorder("progress")
    return agent


class ThreadTextHold(unittest.TestCase):
    def setUp(self):
        self.addCleanup(env(ACP_THINK_HOLD_MS="60000").stop)
        self.ns = load("text_hold_thread.py")
        self.events = []
        self.agent = make_thread_agent(self.events)

    def end(self, hold):
        asyncio.run(hold.aend_turn())

    def test_trailing_reasoning_joins_thought_block(self):
        hold = self.ns["install_acp_text_hold"](self.agent)
        a = self.agent
        a.reasoning_callback("a")
        a.stream_delta_callback("b")
        a.reasoning_callback("c")
        a.stream_delta_callback("d")
        self.assertEqual(self.events, [("thought", "a"), ("thought", "c")])
        self.end(hold)
        self.assertEqual(self.events, [("thought", "a"), ("thought", "c"), ("text", "bd")])
        a.stream_delta_callback("e")  # new turn state: no reasoning, streams directly
        self.assertEqual(self.events[-1], ("text", "e"))

    def test_no_hold_without_reasoning(self):
        self.ns["install_acp_text_hold"](self.agent)
        self.agent.stream_delta_callback("x")
        self.agent.stream_delta_callback("y")
        self.assertEqual(self.events, [("text", "x"), ("text", "y")])

    def test_flush_before_tool_events(self):
        self.ns["install_acp_text_hold"](self.agent)
        a = self.agent
        for event in ("tool", "step", "progress"):
            self.events.clear()
            a.reasoning_callback("r")
            a.stream_delta_callback("t")
            if event == "tool":
                a.tool_progress_callback("tool.started", "read_file", "preview", {})
            elif event == "step":
                a.step_callback(3, [])
            else:
                a.agent_progress_callback("start", "llm_response", {})
            self.assertEqual([e[0] for e in self.events], ["thought", "text", event], event)
            a.stream_delta_callback("direct")  # after the flush, text streams directly
            self.assertEqual(self.events[-1], ("text", "direct"))

    def test_end_of_message_marker_flushes_first(self):
        self.ns["install_acp_text_hold"](self.agent)
        self.agent.reasoning_callback("r")
        self.agent.stream_delta_callback("t")
        self.agent.stream_delta_callback(None)
        self.assertEqual(self.events, [("thought", "r"), ("text", "t"), ("text", None)])

    def test_hold_expires(self):
        for value in ("50", "0", "invalid"):
            os.environ["ACP_THINK_HOLD_MS"] = value
            self.events.clear()
            self.ns["install_acp_text_hold"](self.agent)
            self.agent.reasoning_callback("r")
            self.agent.stream_delta_callback("t")
            self.assertTrue(wait_until(lambda: ("text", "t") in self.events), value)
            self.assertEqual(self.events, [("thought", "r"), ("text", "t")])

    def test_reinstall_does_not_double_wrap(self):
        originals = {n: getattr(self.agent, n) for n in ("reasoning_callback", "stream_delta_callback", "step_callback")}
        self.ns["install_acp_text_hold"](self.agent)
        hold = self.ns["install_acp_text_hold"](self.agent)
        for name, original in originals.items():
            self.assertIs(getattr(self.agent, name)._acp_text_hold_original, original)
        self.agent.reasoning_callback("r")
        self.agent.stream_delta_callback("t")
        self.end(hold)
        self.assertEqual(self.events, [("thought", "r"), ("text", "t")])
        # Hermes assigns fresh callbacks each prompt: those get wrapped, not the old ones.
        fresh = make_thread_agent(self.events).stream_delta_callback
        self.agent.stream_delta_callback = fresh
        self.ns["install_acp_text_hold"](self.agent)
        self.assertIs(self.agent.stream_delta_callback._acp_text_hold_original, fresh)

    def test_no_callbacks_is_noop(self):
        agent = object.__new__(Bare)
        hold = self.ns["install_acp_text_hold"](agent)
        self.end(hold)
        hold.flush()
        self.assertFalse(hasattr(agent, "stream_delta_callback"))
        agent = make_thread_agent(self.events)
        agent.reasoning_callback = None  # no connection in Hermes: all None
        original = agent.stream_delta_callback
        self.end(self.ns["install_acp_text_hold"](agent))
        self.assertIs(agent.stream_delta_callback, original)

    def test_aend_turn_does_not_block_the_loop(self):
        # Like Hermes: the text callback schedules the send on the loop and waits for it.
        async def main():
            loop = asyncio.get_running_loop()
            sent = []

            async def deliver(item):
                sent.append(item)

            def blocking_text(text):
                asyncio.run_coroutine_threadsafe(deliver(("text", text)), loop).result(timeout=2)

            def blocking_thought(text):
                asyncio.run_coroutine_threadsafe(deliver(("thought", text)), loop).result(timeout=2)

            agent = object.__new__(Bare)
            agent.reasoning_callback = blocking_thought
            agent.stream_delta_callback = blocking_text
            hold = self.ns["install_acp_text_hold"](agent)

            def run_agent():  # the worker thread
                agent.reasoning_callback("a")
                agent.stream_delta_callback("b")
                agent.reasoning_callback("c")

            await loop.run_in_executor(None, run_agent)
            started = time.monotonic()
            await hold.aend_turn()
            self.assertLess(time.monotonic() - started, 1.5)
            self.assertEqual(sent, [("thought", "a"), ("thought", "c"), ("text", "b")])
            await hold.aend_turn()  # nothing held: returns at once
            self.assertEqual(len(sent), 3)

        asyncio.run(main())

    def test_order_under_concurrency(self):
        os.environ["ACP_THINK_HOLD_MS"] = "1"
        hold = self.ns["install_acp_text_hold"](self.agent)
        a = self.agent
        for i in range(200):
            if i % 7 == 0:
                a.reasoning_callback(f"r{i}")
            a.stream_delta_callback(f"<{i}>")
            if i % 50 == 49:
                a.tool_progress_callback("tool.started", f"t{i}")
        self.end(hold)
        text = "".join(e[1] for e in self.events if e[0] == "text")
        self.assertEqual(text, "".join(f"<{i}>" for i in range(200)))  # nothing lost, duplicated or reordered
        tools = [i for i, e in enumerate(self.events) if e[0] == "tool"]
        for index, i in zip(tools, (49, 99, 149, 199)):
            before = "".join(e[1] for e in self.events[:index] if e[0] == "text")
            self.assertEqual(before, "".join(f"<{k}>" for k in range(i + 1)))


class HermesLikeTurn(unittest.TestCase):
    """Threaded hooks + factory + text hold, with the agent on a worker thread and a real loop."""

    def test_turn(self):
        self.addCleanup(env(ACP_HEARTBEAT_S="0.05", ACP_THINK_HOLD_MS="60000").stop)
        ns = load("hooks_thread.py", "helpers.py", "send.py", "factory.py", "text_hold_thread.py", send="_acp_send_update")
        conn = FakeConn()

        async def main():
            loop = asyncio.get_running_loop()
            agent = object.__new__(Bare)
            send = ns["_acp_send_update"]
            agent.reasoning_callback = lambda text: send(conn, "s", loop, acp.update_agent_thought_text(text))
            agent.stream_delta_callback = lambda text: text and send(conn, "s", loop, acp.update_agent_message_text(text))
            agent.step_callback = lambda *a: None
            agent.agent_progress_callback = ns["make_agent_progress_cb"](conn, "s", loop)
            hold = ns["install_acp_text_hold"](agent)

            def run_conversation():
                ns["_acp_progress_start"](agent)
                wait_until(lambda: len(conn.wire) >= 3)  # start + two heartbeats
                ns["_acp_progress_complete"](agent)  # first delta (stream-reader thread in Hermes)
                agent.reasoning_callback("a")
                agent.stream_delta_callback("b")
                agent.reasoning_callback("c")
                agent.stream_delta_callback("d")
                agent.stream_delta_callback(None)

            await loop.run_in_executor(None, run_conversation)
            await hold.aend_turn()

        asyncio.run(main())
        got = [(u["sessionUpdate"], u.get("status") or u.get("content", {}).get("text")) for _, u in conn.wire]
        self.assertEqual(got[0], ("tool_call", "in_progress"))
        beats = got[1:-4]
        self.assertGreaterEqual(len(beats), 2)
        self.assertTrue(all(b == ("tool_call_update", "in_progress") for b in beats))
        self.assertEqual(
            got[-4:],
            [("tool_call_update", "completed"), ("agent_thought_chunk", "a"), ("agent_thought_chunk", "c"), ("agent_message_chunk", "bd")],
        )


class EntryCardTurns(unittest.TestCase):
    """Prompt turns through acp_thinking_turn (turn_thread.py) with the factory; no grace here."""

    GRACE = "0"

    def setUp(self):
        self.addCleanup(env(ACP_HEARTBEAT_DISABLED="1", ACP_THINK_AFTER_MS=self.GRACE).stop)
        self.ns = load("helpers.py", "send.py", "factory.py", "turn_thread.py", send="_acp_send_update")

    def agent_class(self, body):
        ns = self.ns

        class Agent:
            def __init__(self, conn):
                self._conn = conn

            @ns["acp_thinking_turn"](lambda self: self._conn)
            async def prompt(self, prompt, session_id, **kwargs):
                return await body(self, session_id)

        return Agent

    def run_turn(self, body):
        conn = FakeConn()
        agent = self.agent_class(body)(conn)
        result = asyncio.run(agent.prompt([], "s"))
        return conn, result

    def kinds(self, conn):
        return [(u["sessionUpdate"], u.get("status")) for _, u in conn.wire]

    def test_no_connection_means_no_card(self):
        conn = FakeConn()
        Agent = self.agent_class(lambda agent, sid: asyncio.sleep(0, "end_turn"))
        agent = Agent(None)
        self.assertEqual(asyncio.run(agent.prompt([], "s")), "end_turn")
        self.assertEqual(conn.wire, [])


class EntryCard(EntryCardTurns):
    """The card opened at the prompt's entry (no grace) and the factory taking it over."""

    def test_the_card_is_on_the_wire_before_the_handler_runs(self):
        seen = []

        async def body(agent, sid):
            seen.append(len(agent._conn.wire))
            return "end_turn"

        conn, result = self.run_turn(body)
        self.assertEqual((seen, result), ([1], "end_turn"))
        # nothing took the card over: the turn's end closes it
        self.assertEqual(self.kinds(conn), [("tool_call", "in_progress"), ("tool_call_update", "completed")])

    def test_the_factory_takes_the_card_over_and_the_engine_closes_it(self):
        ns = self.ns

        async def body(agent, sid):
            loop = asyncio.get_running_loop()
            callback = ns["make_agent_progress_cb"](agent._conn, sid, loop)

            def engine():
                callback("start", "llm_response", {})  # the entry card stands for this start
                callback("complete", "llm_response", {})  # first delta
                callback("start", "llm_response", {})  # a later model call: a new card
                callback("complete", "llm_response", {})

            await loop.run_in_executor(None, engine)
            return "end_turn"

        conn, _ = self.run_turn(body)
        ids = [u["toolCallId"] for _, u in conn.wire]
        self.assertEqual(
            self.kinds(conn),
            [("tool_call", "in_progress"), ("tool_call_update", "completed"), ("tool_call", "in_progress"), ("tool_call_update", "completed")],
        )
        self.assertEqual(ids[0], ids[1])
        self.assertNotEqual(ids[1], ids[2])

    def test_a_card_still_open_at_the_end_is_closed_once(self):
        ns = self.ns

        async def body(agent, sid):
            callback = ns["make_agent_progress_cb"](agent._conn, sid, asyncio.get_running_loop())
            agent.callback = callback
            await asyncio.get_running_loop().run_in_executor(None, callback, "start", "llm_response", {})
            raise RuntimeError("the engine failed before its first delta")

        conn = FakeConn()
        agent = self.agent_class(body)(conn)
        with self.assertRaises(RuntimeError):
            asyncio.run(agent.prompt([], "s"))
        self.assertEqual(self.kinds(conn), [("tool_call", "in_progress"), ("tool_call_update", "completed")])
        agent.callback("heartbeat", "llm_response", {"elapsed": 1})  # a late timer: no update
        agent.callback("complete", "llm_response", {})
        self.assertEqual(len(conn.wire), 2)


class EntryCardGrace(EntryCardTurns):
    """ACP_THINK_AFTER_MS: the entry card waits out a grace; a turn answered within it has none."""

    GRACE = "10000"

    def engine_turn(self, steps, wait_for=None):
        """A turn whose engine (a worker thread) calls the progress callback with `steps`."""
        ns = self.ns

        async def body(agent, sid):
            loop = asyncio.get_running_loop()
            callback = ns["make_agent_progress_cb"](agent._conn, sid, loop)
            agent.callback = callback

            def engine():
                for step in steps:
                    if callable(step):
                        self.assertTrue(wait_until(step))
                    else:
                        callback(step, "llm_response", {"elapsed": 1})

            await loop.run_in_executor(None, engine)
            return "end_turn"

        return self.run_turn(body)

    def test_a_turn_answered_within_the_grace_sends_no_card(self):
        async def body(agent, sid):
            await agent._conn.session_update(session_id=sid, update=acp.update_agent_message_text("/help"))
            return "end_turn"

        conn, result = self.run_turn(body)
        self.assertEqual((self.kinds(conn), result), ([("agent_message_chunk", None)], "end_turn"))

    def test_the_engines_first_output_within_the_grace_drops_the_card(self):
        conn, _ = self.engine_turn(["start", "heartbeat", "complete", "start", "complete"])
        # the entry card never went out; the later model call gets its own card
        self.assertEqual(self.kinds(conn), [("tool_call", "in_progress"), ("tool_call_update", "completed")])
        self.assertEqual(len({u["toolCallId"] for _, u in conn.wire}), 1)

    def test_a_turn_that_raises_or_is_cancelled_in_the_grace_sends_nothing(self):
        for error in (RuntimeError("boom"), asyncio.CancelledError()):

            async def body(agent, sid, error=error):
                raise error

            conn = FakeConn()
            with self.assertRaises(type(error)):
                asyncio.run(self.agent_class(body)(conn).prompt([], "s"))
            self.assertEqual(conn.wire, [], error)


class EntryCardAfterTheGrace(EntryCardTurns):
    """A grace that runs out: the card opens, then behaves as the entry card always did."""

    GRACE = "1"

    def test_the_card_is_on_the_wire_before_the_handler_runs(self):
        async def body(agent, sid):
            self.assertTrue(await async_wait_until(lambda: len(agent._conn.wire) == 1))
            return "end_turn"

        conn, result = self.run_turn(body)
        self.assertEqual(self.kinds(conn), [("tool_call", "in_progress"), ("tool_call_update", "completed")])

    def test_the_factory_takes_the_card_over_and_the_engine_closes_it(self):
        ns = self.ns

        async def body(agent, sid):
            loop = asyncio.get_running_loop()
            callback = ns["make_agent_progress_cb"](agent._conn, sid, loop)

            def engine():
                callback("start", "llm_response", {})  # the entry card stands for this start
                self.assertTrue(wait_until(lambda: len(agent._conn.wire) == 1))  # the grace is over
                callback("complete", "llm_response", {})  # first delta

            await loop.run_in_executor(None, engine)
            return "end_turn"

        conn, _ = self.run_turn(body)
        self.assertEqual(self.kinds(conn), [("tool_call", "in_progress"), ("tool_call_update", "completed")])
        self.assertEqual(len({u["toolCallId"] for _, u in conn.wire}), 1)

    def test_a_card_still_open_at_the_end_is_closed_once(self):
        async def body(agent, sid):
            self.assertTrue(await async_wait_until(lambda: len(agent._conn.wire) == 1))
            raise RuntimeError("the engine failed before its first delta")

        conn = FakeConn()
        with self.assertRaises(RuntimeError):
            asyncio.run(self.agent_class(body)(conn).prompt([], "s"))
        self.assertEqual(self.kinds(conn), [("tool_call", "in_progress"), ("tool_call_update", "completed")])


if __name__ == "__main__":
    unittest.main()
