//! Refinements never block: where the engine-level strategy does not fit (several hand-offs in
//! fixtures/python/several_handoffs), the protocol strategy patches the agent and a note says
//! why, in text and JSON; `strategy = "protocol" | "engine"` chooses either explicitly, and the
//! engine strategy pinned still refuses with its candidates.

use crate::support::*;
use std::path::Path;

const SEVERAL: &str = "python/several_handoffs";

const NOTE: &str = "python: patched with the protocol strategy: the engine-level one does not fit (found 3 candidates for the hand-off to the engine: forked/server.py:55 ForkedAgent.prompt.to_thread#1, forked/server.py:60 ForkedAgent.prompt.run_in_executor#2, forked/server.py:61 ForkedAgent.prompt.to_thread#3); `[python] strategy = \"engine\"` in acp-patch.toml insists on it";

fn tree(case: &str, config: &str) -> tempfile::TempDir {
    let dir = copy_tree(&fixture(case).join("before"));
    let path = dir.path().join("acp-patch.toml");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    text.push_str(config);
    std::fs::write(&path, text).unwrap();
    dir
}

fn json(run: &Run) -> serde_json::Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

fn shape(dir: &Path) -> String {
    let v = acp_patch(&["verify", "--format", "json", path_str(dir)], None);
    json(&v)["shape"].as_str().unwrap().to_string()
}

#[test]
fn unpinned_the_protocol_strategy_patches_an_agent_the_refinement_does_not_fit() {
    let dir = tree(SEVERAL, "");
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}{}", v.stdout, v.stderr);
    assert!(
        v.stdout.contains("(python agent, protocol shape)"),
        "{}",
        v.stdout
    );
    assert!(v.stderr.contains(&format!("note: {NOTE}")), "{}", v.stderr);
    let run = acp_patch(&["apply", "--format", "json", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = json(&run);
    assert_eq!(doc["ok"], true);
    let notes: Vec<&str> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        // the start-up check's notes depend on the interpreter found (this one lacks `acp`)
        .filter(|n| !n.contains("not started here"))
        .collect();
    assert_eq!(notes, [NOTE]);
    let v = acp_patch(&["verify", "--format", "json", path_str(dir.path())], None);
    assert_eq!(v.code, 0, "{}", v.stdout);
    let doc = json(&v);
    assert_eq!(doc["shape"], "protocol");
    // the hand-offs further down: the import and the decorators above them
    let moved = NOTE
        .replace("server.py:55 ", "server.py:58 ")
        .replace("server.py:60 ", "server.py:63 ")
        .replace("server.py:61 ", "server.py:64 ");
    let notes: Vec<&serde_json::Value> = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| !n.as_str().unwrap().contains("not started here"))
        .collect();
    assert_eq!(notes, [&serde_json::json!(moved)]);
}

#[test]
fn the_engine_strategy_pinned_still_refuses_with_its_candidates() {
    let dir = tree(SEVERAL, "\n[python]\nstrategy = \"engine\"\n");
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", "--format", "json", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let doc = json(&run);
    assert_eq!(doc["error"]["kind"], "ambiguous", "{doc}");
    let names: Vec<&str> = doc["error"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ForkedAgent.prompt.to_thread#1",
            "ForkedAgent.prompt.run_in_executor#2",
            "ForkedAgent.prompt.to_thread#3"
        ]
    );
    assert_eq!(
        before,
        snapshot_tree(dir.path()),
        "a refusal wrote something"
    );
    // a hand-off pin chooses the engine strategy too: the same refusal without `strategy`
    let dir = tree(
        SEVERAL,
        "\n[python]\nhandoff = \"forked/server.py:ForkedAgent.prompt.nope#9\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("matches nothing"), "{}", run.stderr);
}

#[test]
fn a_strategy_pin_chooses_either_strategy() {
    // the Hermes-shaped fixture: the engine strategy fits, the protocol one is chosen by hand
    let dir = tree(
        "python/callback_agent",
        "[python]\nstrategy = \"protocol\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("bridge/acp_progress.py:1  runtime module"),
        "{}",
        run.stderr
    );
    assert_eq!(shape(dir.path()), "protocol");
    let dir = tree("python/callback_agent", "[python]\nstrategy = \"engine\"\n");
    assert_eq!(shape(dir.path()), "engine");
    // an agent that is not engine-shaped: the pin is refused, naming what to change
    let dir = tree(
        "python/asyncio_agent",
        "\n[python]\nstrategy = \"engine\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("`[python] strategy = \"engine\"` (or an engine-level pin) is set, but the agent is not engine-shaped"),
        "{}",
        run.stderr
    );
    let dir = tree(
        "python/asyncio_agent",
        "\n[python]\nstrategy = \"engines\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("expected `protocol` or `engine`"),
        "{}",
        run.stderr
    );
}

#[test]
fn typescript_takes_the_same_strategy_pin() {
    let src = crate::typescript::pi_acp("0.0.34");
    let dir = copy_tree(&src);
    assert_eq!(shape(dir.path()), "engine");
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[typescript]\nstrategy = \"protocol\"\n",
    )
    .unwrap();
    assert_eq!(shape(dir.path()), "protocol");
}
