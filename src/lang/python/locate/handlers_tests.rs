//! Tests of the prompt handler's locator (`handlers.rs`).

use super::super::found::Reach;
use super::super::wire::parsed_tree as tree;
use super::*;

/// The anchors `locate` finds in `files` with no pin.
fn unpinned(files: &[Parsed]) -> Result<Anchors<'_>> {
    let decisions = crate::lang::survey::Decisions::default();
    locate(
        &decisions,
        std::path::Path::new("."),
        files,
        &PythonPins::default(),
    )
}

/// `handlers.scm`: a method named `prompt` of a class, decorated or not, nested classes
/// too; not a function outside a class, nor a method of another name.
#[test]
fn the_prompt_query_matches_methods_named_prompt_in_class_bodies() {
    let src = "class A:\n    async def prompt(self, p):\n        prompt = 1\n    class B:\n        @traced\n        def prompt(self): ...\n    async def prompts(self): ...\n\nasync def prompt(p): ...\n";
    let tree = crate::lang::python::syntax::parse(src);
    let found: Vec<(String, usize)> = PROMPT_METHODS
        .matches_in(tree.root_node(), src, 0..src.len())
        .iter()
        .map(|m| {
            let class = m.node("class").child_by_field_name("name").unwrap();
            (
                src[class.byte_range()].to_string(),
                m.node("def").start_position().row + 1,
            )
        })
        .collect();
    assert_eq!(found, [("A".to_string(), 2), ("B".to_string(), 6)]);
}

/// The prompt handlers the fallback (no class bound to the SDK in the tree) chooses from.
fn fallback(files: &[Parsed]) -> Vec<String> {
    sdk_callable(files, &Classes::of(files), prompt_methods(files))
        .0
        .into_iter()
        .map(|(at, name)| format!("{}:{name}", files[at.file].file.rel))
        .collect()
}

#[test]
fn the_fallback_leaves_out_clients_and_methods_the_sdk_cannot_call() {
    let agent = "import acp\n\nclass Served(Base):\n    async def prompt(self, prompt, session_id, **kwargs):\n        pass\n";
    let legacy = "import acp\n\nclass Old:\n    async def prompt(self, params):\n        pass\n";
    let client = "import acp\n\nclass Editor:\n    async def session_update(self, session_id, update, **kw):\n        pass\n\n    async def prompt(self, session_id, prompt):\n        pass\n";
    let backend = "import acp\n\nclass Backend:\n    async def prompt(self, session_id, text):\n        return await self.conn.prompt(session_id=session_id, prompt=[text])\n";
    let files = tree(&[
        ("a/agent.py", agent),
        ("a/legacy.py", legacy),
        ("a/client.py", client),
        ("a/backend.py", backend),
    ]);
    assert_eq!(
        fallback(&files),
        ["a/agent.py:Served.prompt", "a/legacy.py:Old.prompt"]
    );
    // none the SDK can call: no candidate
    let files = tree(&[("a/client.py", client), ("a/backend.py", backend)]);
    assert!(fallback(&files).is_empty());
    // a module that connects to an agent and serves none is the client side
    let transport = "from acp import connect_to_agent\n\nclass Transport:\n    async def prompt(self, text):\n        pass\n";
    let files = tree(&[("a/transport.py", transport), ("a/agent.py", agent)]);
    assert_eq!(fallback(&files), ["a/agent.py:Served.prompt"]);
}

/// A client library shipped beside the agent (hrns 0.0.1): a session proxy and a turn
/// service hand the prompt on to the client they hold, so neither is a prompt handler; an
/// agent that hands it on to a worker that is no client keeps its own.
#[test]
fn the_fallback_leaves_out_prompts_that_hand_it_on_to_a_client_they_hold() {
    let agent = "import acp\n\nclass Served(Base):\n    async def prompt(self, prompt, session_id, **kwargs):\n        pass\n";
    let client = "from acp.client.connection import ClientSideConnection\n\nclass LibClient:\n    async def session_update(self, session_id, update, **kw):\n        pass\n\n    async def prompt(self, session_id, prompt):\n        return await self.connection.prompt(session_id=session_id, prompt=prompt)\n";
    let proxy = "import acp\n\nclass SessionProxy:\n    def __init__(self, client: LibClient, session_id: str) -> None:\n        self.client = client\n\n    async def prompt(self, text):\n        return await self.client.prompt(self.session_id, text)\n";
    let turns = "import acp\n\nclass Turns:\n    def __init__(self, client: \"Optional[LibClient]\") -> None:\n        self.client = client\n\n    async def prompt(self, session_id, prompt):\n        client = self.client\n        return await client.connection.prompt(session_id=session_id, prompt=prompt)\n";
    let delegating = "import acp\n\nclass Front:\n    def __init__(self, inner: Worker) -> None:\n        self.inner = inner\n\n    async def prompt(self, prompt, session_id, **kwargs):\n        return await self.inner.prompt(prompt, session_id)\n";
    let files = tree(&[
        ("a/agent.py", agent),
        ("a/client.py", client),
        ("a/proxy.py", proxy),
        ("a/turns.py", turns),
    ]);
    assert_eq!(fallback(&files), ["a/agent.py:Served.prompt"]);
    let files = tree(&[("a/client.py", client), ("a/front.py", delegating)]);
    assert_eq!(fallback(&files), ["a/front.py:Front.prompt"]);
}

/// Every update is sent by the installed base class: the connection is the one it holds,
/// found at run time; an agent on the SDK's `Agent` alone with no send has nothing that could
/// hold it, and is told to keep it.
#[test]
fn an_agent_whose_updates_leave_from_an_installed_base_class_has_its_connection_held_there() {
    let agent = "import acp\nfrom lib import LibAgent\n\nclass Mine(LibAgent):\n    async def prompt(self, prompt, session_id, **kwargs):\n        return await super().prompt(prompt, session_id, **kwargs)\n\nasync def main():\n    await acp.run_agent(Mine())\n";
    let files = tree(&[("a/agent.py", agent)]);
    let anchors = unpinned(&files).expect("located");
    let [h] = anchors.handlers.as_slice() else {
        panic!("one handler")
    };
    assert!(
        matches!(&h.connection.reach, Reach::Held { base } if base == "LibAgent"),
        "{:?}",
        h.connection.reach
    );
    assert!(anchors.sends.is_empty());
    let bare = agent
        .replace("from lib import LibAgent\n", "")
        .replace("Mine(LibAgent)", "Mine(acp.Agent)");
    let files = tree(&[("a/agent.py", bare.as_str())]);
    let e = unpinned(&files).err().expect("refused");
    assert!(
        e.to_string().contains("has no `on_connect(self, conn)`"),
        "{e}"
    );
}

/// The class the SDK is handed inherits `prompt` from an installed base: no handler in the
/// tree, and the error says which class and the one override that gives it one.
#[test]
fn a_handed_class_inheriting_prompt_from_outside_is_named_with_the_override_to_add() {
    let agent = "import acp\nfrom lib import LibAgent\n\nclass Mine(LibAgent):\n    async def new_session(self, **kwargs):\n        return await super().new_session(**kwargs)\n\nasync def main():\n    await acp.run_agent(Mine())\n";
    let files = tree(&[("a/agent.py", agent)]);
    let e = unpinned(&files).err().expect("refused").to_string();
    assert!(
        e.contains("`Mine` (a/agent.py:4) is what the SDK is handed, but it inherits `prompt` from `LibAgent`, outside the tree")
            && e.contains("`async def prompt(self, *args, **kwargs): return await super().prompt(*args, **kwargs)`"),
        "{e}"
    );
}

/// A copy of the SDK in the tree (a package `acp` defining `AgentSideConnection`) holds
/// agents of its own (a debug server's mock, bound to the SDK's connection there): the
/// agent to patch is the one outside it, and the copy's sends are wrapped as the agent's,
/// but not the calls of its client side, which receives updates.
#[test]
fn the_agents_of_a_copy_of_the_sdk_in_the_tree_are_not_candidates() {
    let connection = "class AgentSideConnection:\n    def __init__(self, agent, i, o): ...\n\nclass Notifier:\n    def __init__(self, conn):\n        self.conn = conn\n    async def send(self, n):\n        await self.conn.session_update(n)\n";
    let mock = "from acp.agent.connection import AgentSideConnection\nfrom acp import Agent\n\nclass MockAgent(Agent):\n    async def prompt(self, params):\n        return None\n\ndef serve():\n    AgentSideConnection(MockAgent(), None, None)\n";
    let agent = "import acp\n\nclass Real(acp.Agent):\n    def on_connect(self, conn):\n        self._conn = conn\n    async def prompt(self, params):\n        await self._conn.session_update(params)\n\nasync def main():\n    await acp.run_agent(Real())\n";
    // the client's side of the copy hands an update it received to the client's handler
    let client_side = "class ClientSideConnection:\n    def __init__(self, client, i, o): ...\n\nasync def _handle(client, method, params):\n    match method:\n        case \"session/update\":\n            await client.session_update(params)\n";
    let files = tree(&[
        (
            "vendor/acp/__init__.py",
            "from .agent.connection import AgentSideConnection\n",
        ),
        ("vendor/acp/agent/connection.py", connection),
        ("vendor/acp/debug/mock.py", mock),
        ("vendor/acp/client/connection.py", client_side),
        ("app/server.py", agent),
    ]);
    assert_eq!(
        crate::lang::python::package::vendored_sdk(&files),
        ["vendor/acp/"]
    );
    let found = unpinned(&files).expect("one agent");
    let names: Vec<&str> = found
        .handlers
        .iter()
        .map(|h| h.class_name.as_str())
        .collect();
    assert_eq!(names, ["Real"]);
    let sent_from: Vec<&str> = found
        .sends
        .iter()
        .map(|s| files[s.anchor.site.file].file.rel.as_str())
        .collect();
    assert_eq!(
        sent_from,
        ["vendor/acp/agent/connection.py", "app/server.py"]
    );
}

#[test]
fn an_sdk_client_that_branches_on_the_prompt_method_is_no_loop_of_its_own() {
    // it spawns an agent and watches the requests it sends: no `session/update` it builds,
    // so its `if method == "session/prompt"` is no dispatcher (hermes-omp-acp 0.2.2)
    let client = r#"from acp import spawn_agent_process

class Runtime:
def _seen(self, params):
    pass

def observe(self, message):
    method = message.get("method")
    if method == "session/prompt":
        self._seen(message.get("params"))

async def run(self):
    async with spawn_agent_process(self, "agent") as (conn, proc):
        await conn.prompt(session_id="s", prompt=[])
"#;
    let files = tree(&[("a/runtime.py", client)]);
    let e = unpinned(&files).err().expect("refused");
    assert!(matches!(&e, Error::NoAgent { .. }), "{e}");
}
