//! Pins and what they say.

use super::*;

/// Two agent classes with `async def prompt`, neither handed to the SDK where we can see it.
fn unbound_pair() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let agent = |name: &str| {
        format!(
            "import acp\n\n\nclass {name}:\n    def on_connect(self, conn):\n        self._conn = conn\n\n    async def prompt(self, prompt, session_id, **kwargs):\n        await self._conn.session_update(session_id=session_id, update=acp.update_agent_message_text(\"hi\"))\n        return acp.PromptResponse(stop_reason=\"end_turn\")\n"
        )
    };
    write(dir.path(), "pair/__init__.py", "");
    write(dir.path(), "pair/first.py", &agent("FirstAgent"));
    write(dir.path(), "pair/second.py", &agent("SecondAgent"));
    write(
        dir.path(),
        "pair/main.py",
        "from pair.launcher import serve\nfrom pair.first import FirstAgent\n\nserve(FirstAgent)\n",
    );
    dir
}

/// The pin lines an error suggests (`prompt = "..."`).
fn suggested_pins(stderr: &str, key: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.trim().strip_prefix(&format!("{key} = \"")))
        .map(|l| l.trim_end_matches('"').to_string())
        .collect()
}

#[test]
fn every_listed_prompt_candidate_is_accepted_as_a_pin() {
    let dir = unbound_pair();
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("found 2 candidates for the ACP prompt handler"),
        "{}",
        run.stderr
    );
    assert_eq!(before, snapshot_tree(dir.path()), "nothing may be written");
    let listed: Vec<String> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("    pair/"))
        .map(|l| {
            let (loc, name) = l.trim().split_once("  ").unwrap();
            format!("{}:{}", loc.split(':').next().unwrap(), name.trim())
        })
        .collect();
    assert_eq!(
        listed,
        [
            "pair/first.py:FirstAgent.prompt",
            "pair/second.py:SecondAgent.prompt"
        ]
    );
    assert_eq!(suggested_pins(&run.stderr, "prompt"), [listed[0].clone()]);
    for pin in &listed {
        let d = unbound_pair();
        write(
            d.path(),
            "acp-patch.toml",
            &format!("[python]\nprompt = \"{pin}\"\n"),
        );
        let run = acp_patch(&["apply", path_str(d.path())], None);
        assert_eq!(run.code, 0, "pin {pin}: {}", run.stderr);
        let file = pin.split(':').next().unwrap();
        let patched = std::fs::read_to_string(d.path().join(file)).unwrap();
        assert!(
            patched.contains("@acp_progress.prompt_handler(lambda self: self._conn)"),
            "{patched}"
        );
        assert_eq!(acp_patch(&["verify", path_str(d.path())], None).code, 0);
    }
}

#[test]
fn a_pin_that_matches_nothing_names_what_it_looked_for_and_what_it_saw() {
    let cases = [
        (
            "prompt = \"streamy/agent.py:StreamyAgent.promt\"",
            "it looks for `StreamyAgent.promt` in streamy/agent.py; the candidates are: streamy/agent.py:StreamyAgent.prompt",
        ),
        (
            "connection = \"streamy/agent.py:StreamyAgent._connection\"",
            "it looks for `StreamyAgent._connection` in streamy/agent.py; the candidates are: streamy/agent.py:StreamyAgent._conn",
        ),
        (
            "emitter = \"streamy/agent.py:StreamyAgent.emit\"",
            "it looks for `StreamyAgent.emit` in streamy/agent.py; the candidates are: streamy/agent.py:StreamyAgent._emit",
        ),
    ];
    for (pin, says) in cases {
        let dir = copy_tree(&fixture_before());
        edit(
            &dir.path().join("acp-patch.toml"),
            "[smoke]",
            &format!("[python]\n{pin}\n\n[smoke]"),
        );
        let before = snapshot_tree(dir.path());
        let run = acp_patch(&["apply", path_str(dir.path())], None);
        assert_eq!(run.code, 1, "{pin}: {}", run.stderr);
        assert!(
            run.stderr.contains("matches nothing"),
            "{pin}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(says), "{pin}: {}", run.stderr);
        assert_eq!(before, snapshot_tree(dir.path()));
    }
}

#[test]
fn an_emitter_pin_limits_the_wrapped_sends_to_that_function() {
    let dir = copy_tree(&fixture("python/inline_sends/before"));
    write(
        dir.path(),
        "inline/probe.py",
        "async def probe(conn):\n    await conn.session_update(session_id=\"x\", update=None)\n",
    );
    let all = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert!(
        all.stdout
            .contains("+    await acp_progress.emitter(conn).session_update"),
        "{}",
        all.stdout
    );
    write(
        dir.path(),
        "acp-patch.toml",
        "[python]\nemitter = \"inline/agent.py:InlineAgent.prompt\"\n",
    );
    let pinned = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(pinned.code, 0, "{}", pinned.stderr);
    assert!(
        !pinned.stdout.contains("inline/probe.py"),
        "{}",
        pinned.stdout
    );
    assert_eq!(
        pinned
            .stdout
            .matches("acp_progress.emitter(self._conn)")
            .count(),
        4
    );
}

#[test]
fn connection_candidates_are_listed_and_each_is_accepted_as_a_pin() {
    let agent = "import acp\n\n\nclass TwoWays(acp.Agent):\n    def __init__(self):\n        self._a = open_link(\"a\")\n        self._b = open_link(\"b\")\n\n    async def prompt(self, prompt, session_id, **kwargs):\n        await self._a.session_update(session_id=session_id, update=acp.update_agent_message_text(\"a\"))\n        await self._b.session_update(session_id=session_id, update=acp.update_agent_message_text(\"b\"))\n        return acp.PromptResponse(stop_reason=\"end_turn\")\n";
    let make = || {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "agent.py", agent);
        d
    };
    let dir = make();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("found 2 candidates for the connection"),
        "{}",
        run.stderr
    );
    assert_eq!(
        suggested_pins(&run.stderr, "connection"),
        ["agent.py:TwoWays._a"]
    );
    for attr in ["_a", "_b"] {
        let d = make();
        write(
            d.path(),
            "acp-patch.toml",
            &format!("[python]\nconnection = \"agent.py:TwoWays.{attr}\"\n"),
        );
        let dry = acp_patch(&["apply", "--dry-run", path_str(d.path())], None);
        assert_eq!(dry.code, 0, "{attr}: {}", dry.stderr);
        assert!(
            dry.stdout.contains(&format!(
                "@acp_progress.prompt_handler(lambda self: self.{attr})"
            )),
            "{}",
            dry.stdout
        );
    }
}

#[test]
fn an_agent_that_keeps_the_connection_nowhere_gets_a_binding_in_on_connect() {
    let dir = copy_tree(&fixture("python/queue_pump/before"));
    // the agent now hands the connection straight to its pump and keeps no attribute of it
    edit(
        &dir.path().join("pumped/agent.py"),
        "        self._conn = conn\n        self._pump = UpdatePump(conn)",
        "        self._pump = UpdatePump(conn)",
    );
    let dry = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout
            .contains("+        acp_progress.bind(self, conn)\n"),
        "{}",
        dry.stdout
    );
    assert!(
        dry.stdout.contains("+    @acp_progress.prompt_handler()\n"),
        "{}",
        dry.stdout
    );
    assert_eq!(acp_patch(&["apply", path_str(dir.path())], None).code, 0);
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(v.stdout.contains("(connection binding)"), "{}", v.stdout);
}

#[test]
fn every_listed_hand_off_is_accepted_as_a_pin() {
    // a callback-shaped agent that calls the executor twice in its prompt handler
    let make = || {
        let d = copy_tree(&fixture(CALLBACK_FIXTURE).join("before"));
        edit(
            &d.path().join("bridge/server.py"),
            "        try:\n            await loop.run_in_executor(_pool, _work)",
            "        await loop.run_in_executor(_pool, lambda: None)\n        try:\n            await loop.run_in_executor(_pool, _work)",
        );
        d
    };
    // unpinned, the refinement gives way to the protocol strategy (python_strategy.rs); the
    // engine strategy pinned lists the hand-offs
    let dir = make();
    write(
        dir.path(),
        "acp-patch.toml",
        "[python]\nstrategy = \"engine\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("found 2 candidates for the hand-off to the engine"),
        "{}",
        run.stderr
    );
    let listed: Vec<String> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("    bridge/server.py:"))
        .map(|l| {
            let (loc, name) = l.trim().split_once("  ").unwrap();
            format!("{}:{}", loc.split(':').next().unwrap(), name.trim())
        })
        .collect();
    assert_eq!(
        listed,
        [
            "bridge/server.py:BridgeAgent.prompt.run_in_executor#1",
            "bridge/server.py:BridgeAgent.prompt.run_in_executor#2"
        ]
    );
    assert_eq!(suggested_pins(&run.stderr, "handoff"), [listed[0].clone()]);
    for pin in &listed {
        let d = make();
        write(
            d.path(),
            "acp-patch.toml",
            &format!("[python]\nhandoff = \"{pin}\"\n"),
        );
        let run = acp_patch(&["apply", path_str(d.path())], None);
        assert_eq!(run.code, 0, "pin {pin}: {}", run.stderr);
        assert_eq!(
            acp_patch(&["verify", path_str(d.path())], None).code,
            0,
            "pin {pin}"
        );
    }
    let d = make();
    write(
        d.path(),
        "acp-patch.toml",
        "[python]\nhandoff = \"bridge/server.py:BridgeAgent.prompt.to_thread#1\"\n",
    );
    let run = acp_patch(&["apply", path_str(d.path())], None);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains(&format!(
            "matches nothing: it looks for `BridgeAgent.prompt.to_thread#1` in bridge/server.py; the candidates are: {}",
            listed.join(", ")
        )),
        "{}",
        run.stderr
    );
}

#[test]
fn engine_pins_that_match_nothing_say_what_there_is() {
    for (pin, says) in [
        (
            "llm_call = \"engine/loop.py:run_turn._nope\"",
            "it looks for `run_turn._nope` in engine/loop.py; the candidates are: engine/loop.py:run_turn",
        ),
        (
            "helpers = \"bridge/server.py\"",
            "looks in bridge/server.py, which defines none of the adapter's tool-call builders; the candidates are: bridge/cards.py",
        ),
    ] {
        let dir = copy_tree(&fixture(CALLBACK_FIXTURE).join("before"));
        write(dir.path(), "acp-patch.toml", &format!("[python]\n{pin}\n"));
        let run = acp_patch(&["apply", path_str(dir.path())], None);
        assert_eq!(run.code, 1, "{pin}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{pin}: {}", run.stderr);
    }
}

#[test]
fn no_agent_and_missing_path() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("main.py"), "print('hello')\n").unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("no ACP agent found"), "{}", run.stderr);
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 1, "{}", verify.stderr);

    let missing = dir.path().join("nope");
    let run = acp_patch(&["apply", path_str(&missing)], None);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("no such file or folder"),
        "{}",
        run.stderr
    );
    assert_eq!(acp_patch(&["verify", path_str(&missing)], None).code, 2);
}

#[test]
fn a_foreign_module_named_like_the_runtime_is_refused() {
    let dir = copy_tree(&fixture_before());
    write(dir.path(), "streamy/acp_progress.py", "VALUE = 1\n");
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("streamy/acp_progress.py:1: a module of this name exists and is not acp-patch's runtime module"),
        "{}",
        run.stderr
    );
    assert_eq!(before, snapshot_tree(dir.path()));
}

#[test]
fn an_older_runtime_module_is_replaced_whole() {
    let fresh = applied(FIXTURE);
    let dir = applied(FIXTURE);
    let module = dir.path().join("streamy/acp_progress.py");
    edit(
        &module,
        "_DISABLED = (\"1\", \"true\", \"yes\")",
        "_DISABLED = (\"1\",)  # an older runtime",
    );
    // as an earlier release wrote it: its checksum matches its text
    let text = std::fs::read_to_string(&module).unwrap();
    std::fs::write(&module, resealed(&text)).unwrap();
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  runtime"), "{}", v.stdout);
    assert!(
        v.stdout
            .contains("apply inserts the runtime module at streamy/acp_progress.py:1"),
        "{}",
        v.stdout
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("inserted 1 pieces into 1 files"),
        "{}",
        run.stderr
    );
    assert_same_tree(dir.path(), fresh.path());
}

#[test]
fn a_hand_edited_runtime_module_is_refused_by_apply_verify_and_revert_naming_the_line() {
    let dir = applied(FIXTURE);
    let module = dir.path().join("streamy/acp_progress.py");
    edit(
        &module,
        "_DISABLED = (\"1\", \"true\", \"yes\")",
        "_DISABLED = (\"1\",)  # mine",
    );
    let line = std::fs::read_to_string(&module)
        .unwrap()
        .lines()
        .position(|l| l.contains("# mine"))
        .unwrap()
        + 1;
    let at = format!("streamy/acp_progress.py:{line}");
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  runtime"), "{}", v.stdout);
    assert!(
        v.stdout.contains(&format!(
            "{at}: the runtime module was edited by hand since acp-patch wrote it"
        )),
        "{}",
        v.stdout
    );
    // the summary's advice is what works: apply refuses this tree, it does not insert
    let summary = v.stdout.lines().last().unwrap_or_default();
    assert!(
        summary.ends_with(&format!("checks fail; the runtime module was edited by hand ({at}), so `acp-patch apply` and `acp-patch revert` refuse the tree: restore it (undo the edit) or remove it, then `acp-patch apply` writes this version's module and inserts what is missing")),
        "{}",
        v.stdout
    );
    assert!(
        !v.stdout.contains("apply` inserts what is missing"),
        "{}",
        v.stdout
    );
    refused_by_every_writer(
        dir.path(),
        &[
            &format!("{at}: the runtime module was edited by hand"),
            "acp-patch's line reads `_DISABLED = (\"1\", \"true\", \"yes\")`",
        ],
    );
}

/// A loop of its own whose dispatcher answers `session/prompt` in the branch itself (as
/// hermes-antigravity-acp 2.1.3 does): there is no function for the card to wrap, so the error
/// names the branch and the change that gives it one, and suggests no pin (none could match).
#[test]
fn a_prompt_handled_inline_in_the_dispatcher_names_the_branch_and_suggests_no_pin() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "loop_agent/main.py",
        r#"import json
import sys


def _write(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _result(request_id, result):
    _write({"jsonrpc": "2.0", "id": request_id, "result": result})


def handle(message):
    request_id = message.get("id")
    method = message.get("method")
    params = message.get("params") or {}
    if method == "initialize":
        _result(request_id, {"protocolVersion": 1})
        return
    if method == "session/prompt":
        session_id = params.get("sessionId")
        _write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}}})
        _result(request_id, {"stopReason": "end_turn"})
        return


for line in sys.stdin:
    handle(json.loads(line))
"#,
    );
    let before = snapshot_tree(dir.path());
    for cmd in [&["apply"][..], &["apply", "--dry-run"], &["verify"]] {
        let args: Vec<&str> = cmd.iter().copied().chain([path_str(dir.path())]).collect();
        let run = acp_patch(&args, None);
        assert_eq!(run.code, 1, "{cmd:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(": the dispatcher at loop_agent/main.py:21 handles `\"session/prompt\"` inline, its branch hands the request to no function, so there is none for the card to wrap and none a pin could name; move the branch's body into a function the branch calls and run apply again"),
            "{cmd:?}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("prompt = \""),
            "{cmd:?}: {}",
            run.stderr
        );
        assert_eq!(before, snapshot_tree(dir.path()), "{cmd:?} wrote");
    }
}

/// An ACP client (hermes-omp-acp 0.2.2, a model backend that starts an agent with the SDK's
/// `spawn_agent_process`): its functions compare the method of the requests it sends
/// (`if method == "session/prompt": return "prompt"`, a branch that raises) and handle none, so
/// the error names no inline dispatcher; it says the tree is a client, where, and suggests no pin.
#[test]
fn an_acp_client_comparing_the_methods_it_sends_is_named_a_client_not_an_inline_dispatcher() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "backend/session.py",
        r#"import asyncio

from acp import spawn_agent_process


def _phase(method):
    if method == "initialize":
        return "initialize"
    if method == "session/prompt":
        return "prompt"
    return "rpc"


class Backend:
    def __init__(self):
        self.cancelled = False

    async def request(self, conn, method, awaitable):
        phase = _phase(method)
        result = await awaitable
        if self.cancelled and method == "session/prompt":
            raise RuntimeError(f"{phase} interrupted")
        return result

    async def run(self, client, command):
        async with spawn_agent_process(client, command) as (conn, _process):
            await asyncio.sleep(0)
            return conn
"#,
    );
    refused_by_apply_and_verify(
        dir.path(),
        ": it is an ACP client, `spawn_agent_process` at backend/session.py:26 connects to an agent and no module serves one (`run_agent`, `AgentSideConnection`); patch the agent it connects to instead",
        &["inline", "prompt = \""],
    );
}

/// codeswarm 0.6.43's shape: a client declares the requests it sends as stubs (`...`) that a
/// decorator naming the method turns into the outgoing call, and serves `session/update`.
/// It was refused as an agent whose handler reaches no writer ("none of the 0 writer(s)");
/// it holds no agent.
#[test]
fn a_client_declaring_its_requests_by_decorator_holds_no_agent() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "swarm/rpc.py",
        r#"class API:
    def method(self, name=""):
        def deco(func):
            def request(*args, **kwargs):
                return {"method": name, "params": kwargs}
            return request
        return deco
"#,
    );
    write(
        dir.path(),
        "swarm/api.py",
        r#"from swarm.rpc import API as _API

API = _API()


@API.method(name="session/prompt")
def session_prompt(prompt: list, sessionId: str) -> dict:
    """Send a prompt to the agent."""
    ...


@API.method(name="session/cancel")
def session_cancel(sessionId: str) -> None: ...
"#,
    );
    write(
        dir.path(),
        "swarm/client.py",
        r#"from swarm import api


def ask(text, session_id):
    return api.session_prompt([{"type": "text", "text": text}], sessionId=session_id)
"#,
    );
    refused_by_apply_and_verify(dir.path(), ": no ACP agent found (", &["writer"]);
}

/// cursor-acp 0.1.1's shape: a client whose `async def prompt` sends `session/prompt` over its
/// own transport, in a module that says "acp" only in a comment and in names. It was taken for
/// an SDK agent ("found 2 candidates for the ACP prompt handler", then "has no `on_connect`");
/// it holds no agent.
#[test]
fn a_client_prompt_in_a_module_naming_acp_only_in_words_holds_no_agent() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "cursor_agent/client.py",
        r#"# a client of cursor's acp server
import asyncio


class AcpSessionHandle:
    def __init__(self, transport):
        self.transport = transport
        self.acp_state = "idle"

    async def prompt(self, text):
        return await self.transport.send_request("session/prompt", {"prompt": text})


class CursorAgent:
    def __init__(self, transport):
        self.session = AcpSessionHandle(transport)

    async def prompt(self, text):
        await asyncio.sleep(0)
        return await self.session.prompt(text)
"#,
    );
    refused_by_apply_and_verify(dir.path(), ": no ACP agent found (", &[]);
}

/// `apply --dry-run` and `verify` of `dir` both exit 1 saying `says` and none of `not`, and
/// write nothing.
fn refused_by_apply_and_verify(dir: &std::path::Path, says: &str, not: &[&str]) {
    let before = snapshot_tree(dir);
    for cmd in [&["apply", "--dry-run"][..], &["verify"]] {
        let args: Vec<&str> = cmd.iter().copied().chain([path_str(dir)]).collect();
        let run = acp_patch(&args, None);
        assert_eq!(run.code, 1, "{cmd:?}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{cmd:?}: {}", run.stderr);
        for n in not {
            assert!(!run.stderr.contains(n), "{cmd:?}: {}", run.stderr);
        }
        assert_eq!(before, snapshot_tree(dir), "{cmd:?} wrote");
    }
}

/// codebuddy-cloud-agent-sdk 0.3.4's shape: a client library's session class builds the
/// library's own client and hands its `prompt` on to it; that client builds the SDK's
/// `ClientSideConnection`. It was taken for an agent ("could not locate the connection … add
/// `def on_connect(self, conn)`"); it holds none, built in `__init__` or lazily through a local,
/// the prompt handed on by the prompt itself or by a method of its class it calls.
#[test]
fn a_session_class_handing_the_prompt_to_a_client_it_builds_holds_no_agent() {
    let direct = "return await self._acp.prompt(self.id, [{\"type\": \"text\", \"text\": text}])";
    for (init, body, line) in [
        ("self._acp = AcpClient()", direct, 14),
        (
            "self._acp = None\n\n    async def connect(self):\n        acp = AcpClient()\n        self._acp = acp",
            direct,
            18,
        ),
        // handed on through a method of the class (managed-agent-sdk 0.0.5: `self._prompt(...)`)
        (
            "self._acp = AcpClient()\n\n    async def _prompt(self, text):\n        acp = self._acp\n        return await acp.prompt(self.id, text)",
            "return await self._prompt(text)",
            18,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "sdk/transport.py",
            r#"from typing import Any


class AcpClient:
    def __init__(self) -> None:
        self._conn: Any = None

    async def connect(self, reader, writer) -> None:
        from acp import Client
        from acp.client import ClientSideConnection

        self._conn = ClientSideConnection(Client(), writer, reader)

    async def prompt(self, session_id: str, blocks: list) -> Any:
        return await self._conn.prompt(session_id=session_id, prompt=blocks)
"#,
        );
        write(
            dir.path(),
            "sdk/session.py",
            &format!(
                r#"from typing import TYPE_CHECKING

from sdk.transport import AcpClient

if TYPE_CHECKING:
    from acp.schema import PromptResponse


class Session:
    def __init__(self, session_id: str) -> None:
        self.id = session_id
        {init}

    async def prompt(self, text: str) -> "PromptResponse":
        {body}
"#
            ),
        );
        refused_by_apply_and_verify(dir.path(), ": no ACP agent found (", &["on_connect"]);
        refused_by_apply_and_verify(
            dir.path(),
            &format!("`Session.prompt` (sdk/session.py:{line}) is the client side"),
            &[],
        );
    }
}
