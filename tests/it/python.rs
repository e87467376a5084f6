//! apply / verify on Python agents beyond the fixture cases (fixtures/python/*, run by
//! fixtures.rs: snapshots, apply twice, compile, smoke, revert): Hermes Agent as published,
//! pins and their errors, what verify proves about placement, style and safety cases.

use crate::support::*;
use std::path::{Path, PathBuf};

const FIXTURE: &str = "python/asyncio_agent";
const CALLBACK_FIXTURE: &str = "python/callback_agent";

fn fixture_before() -> PathBuf {
    fixture(FIXTURE).join("before")
}

/// A copy of a fixture's before/ tree, applied.
fn applied(case: &str) -> tempfile::TempDir {
    let dir = copy_tree(&fixture(case).join("before"));
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    dir
}

/// Python files of a tree, relative, for py_compile.
fn py_files(root: &Path) -> Vec<String> {
    walk(root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().to_string())
        .collect()
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn verify_json_lists_the_missing_protocol_checks() {
    let json = acp_patch(
        &["verify", "--format", "json", path_str(&fixture_before())],
        None,
    );
    assert_eq!(json.code, 1);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["shape"], "protocol");
    let missing: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "missing")
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        missing,
        [
            "runtime",
            "hook.start",
            "hook.heartbeat",
            "hook.complete",
            "sends",
            "turn_end",
            "coalescing"
        ]
    );
}

#[test]
fn env_prefix_renames_every_variable() {
    let dir = copy_tree(&fixture_before());
    let run = acp_patch(
        &[
            "apply",
            "--dry-run",
            "--env-prefix",
            "PI_ACP",
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(run.code, 0);
    for var in [
        "PI_ACP_THINK_HOLD_MS",
        "PI_ACP_THINK_GAP_MS",
        "PI_ACP_HEARTBEAT_S",
        "PI_ACP_HEARTBEAT_DISABLED",
    ] {
        assert!(run.stdout.contains(var), "{var} missing");
    }
    let stray = run
        .stdout
        .lines()
        .filter(|l| l.contains("\"ACP_") || l.contains(" ACP_"))
        .count();
    assert_eq!(stray, 0, "an ACP_ variable was left unprefixed");
    let bad = acp_patch(
        &[
            "apply",
            "--dry-run",
            "--env-prefix",
            "PI-ACP",
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

// ---- Hermes Agent, exactly as published ------------------------------------------------

/// The wheel's source tree, downloaded once and cached under target/.
pub(crate) fn hermes(version: &str) -> PathBuf {
    let cache = repo().join("target/hermes").join(version);
    let src = cache.join("src");
    let _provisioning = crate::support::provision_lock();
    if src.join("acp_adapter").is_dir() {
        return src;
    }
    std::fs::create_dir_all(&cache).unwrap();
    let wheels = cache.join("wheels");
    let ok = std::process::Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "-q",
            "--disable-pip-version-check",
            "--no-deps",
        ])
        .arg(format!("hermes-agent=={version}"))
        .arg("-d")
        .arg(&wheels)
        .status()
        .unwrap()
        .success();
    assert!(ok, "pip download hermes-agent=={version} failed");
    let wheel = std::fs::read_dir(&wheels)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let tmp = cache.join("src.partial");
    let _ = std::fs::remove_dir_all(&tmp);
    let ok = std::process::Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(&wheel)
        .arg(&tmp)
        .status()
        .unwrap()
        .success();
    assert!(ok, "unzip failed");
    for e in std::fs::read_dir(&tmp).unwrap() {
        let p = e.unwrap().path();
        let n = p.file_name().unwrap().to_string_lossy().to_string();
        if n.ends_with(".dist-info") || n.ends_with(".data") {
            std::fs::remove_dir_all(&p).unwrap();
        }
    }
    std::fs::rename(&tmp, &src).unwrap();
    src
}

fn hermes_case(version: &str, snapshot: bool) {
    let src = hermes(version);
    let dir = copy_tree(&src);
    let root = dir.path();

    let before = acp_patch(&["verify", path_str(root)], None);
    assert_eq!(before.code, 1, "{}{}", before.stdout, before.stderr);
    assert_eq!(
        before.stdout.matches("  missing ").count(),
        9,
        "{}",
        before.stdout
    );

    let dry = acp_patch(&["apply", "--dry-run", path_str(root)], None);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let placed: String = dry
        .stderr
        .lines()
        .filter(|l| l.starts_with("  "))
        .map(|l| format!("{l}\n"))
        .collect();
    if snapshot {
        assert_snapshot(
            &fixture(&format!("python/hermes-{version}.placed.txt")),
            &placed,
        );
    }
    // the card opens at the prompt handler's entry (no longer only at the worker's top)
    assert!(
        placed.contains("acp_adapter/server.py:") && placed.contains("hook start at prompt entry"),
        "{placed}"
    );

    let run = acp_patch(&["apply", path_str(root)], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let changed: Vec<String> = placed
        .lines()
        .map(|l| l.trim().split(':').next().unwrap().to_string())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    py_compile("python3", root, &changed);

    let after = acp_patch(&["verify", path_str(root)], None);
    assert_eq!(after.code, 0, "{}{}", after.stdout, after.stderr);

    // the patched agent starts: with the release's own install (hermes-agent[acp] from PyPI),
    // acp-patch's start-up check imports every patched module, and so does a fresh CPython
    let python = crate::smoke_python::hermes_venv(version);
    let python = path_str(&python);
    let with_own = acp_patch(&["verify", "--python", python, path_str(root)], None);
    assert_eq!(with_own.code, 0, "{}{}", with_own.stdout, with_own.stderr);
    let proven = started(&with_own.stdout);
    let home = tempfile::tempdir().unwrap();
    for rel in &changed {
        let module = rel.trim_end_matches(".py").replace('/', ".");
        assert!(proven.contains(&module), "{module} not started: {proven:?}");
        let out = std::process::Command::new(python)
            .args(["-B", "-c", &format!("import {module}")])
            .current_dir(root)
            .env("PYTHONPATH", root)
            .env("HOME", home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stdout.is_empty(),
            "hermes {version}: `import {module}` (patched):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let again = acp_patch(&["apply", path_str(root)], None);
    assert_eq!(again.code, 0);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);

    // the dry-run diff, applied by git to a pristine copy, gives the same tree
    let pristine = copy_tree(&src);
    let diff = pristine.path().join("../hermes.diff");
    std::fs::write(&diff, &dry.stdout).unwrap();
    git(pristine.path(), &["apply", path_str(&diff)]);
    let _ = std::fs::remove_file(&diff);
    assert_same_tree(root, pristine.path());

    // revert gives the release back byte for byte; a second revert has nothing to do
    let reverted = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(reverted.code, 0, "{}", reverted.stderr);
    assert!(
        reverted.stderr.contains("acp-patch: removed "),
        "{}",
        reverted.stderr
    );
    assert_same_tree(root, &src);
    let twice = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(twice.code, 0, "{}", twice.stderr);
    assert!(
        twice.stderr.contains("nothing to revert"),
        "{}",
        twice.stderr
    );
}

#[test]
fn hermes_0_19_0_split_layout() {
    hermes_case("0.19.0", true);
}

#[test]
fn hermes_0_14_0_monolithic_layout() {
    hermes_case("0.14.0", true);
}

/// Every other Hermes release (0.13–0.18), in the long mode: `ACP_PATCH_REAL_AGENTS=full`.
#[test]
fn hermes_every_release() {
    if std::env::var("ACP_PATCH_REAL_AGENTS").as_deref() != Ok("full") {
        eprintln!("skipped: set ACP_PATCH_REAL_AGENTS=full to patch every Hermes release");
        return;
    }
    for version in ["0.13.0", "0.15.2", "0.16.0", "0.17.0", "0.18.2"] {
        hermes_case(version, false);
    }
}

// ---- pins and what they say ---------------------------------------------------------------

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

// ---- what verify proves about placement -----------------------------------------------------

#[test]
fn an_unwrapped_send_is_reported_with_its_place() {
    let dir = applied("python/inline_sends");
    let agent = dir.path().join("inline/agent.py");
    let text = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(
        &agent,
        format!("{text}\n\nasync def late(conn, session_id):\n    await conn.session_update(session_id=session_id, update=acp.update_agent_message_text(\"late\"))\n"),
    )
    .unwrap();
    let line = std::fs::read_to_string(&agent)
        .unwrap()
        .lines()
        .position(|l| l.contains("update_agent_message_text(\"late\")"))
        .unwrap()
        + 1;
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  sends"), "{}", v.stdout);
    assert!(
        v.stdout.contains(&format!(
            "apply inserts the send wrapped at inline/agent.py:{line}"
        )),
        "{}",
        v.stdout
    );
    assert_eq!(acp_patch(&["apply", path_str(dir.path())], None).code, 0);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
}

/// The trap seen on a Hermes fork: the wiring reads `conn` on the prompt handler's first line,
/// before the function assigns it. It compiles; every prompt would fail.
#[test]
fn a_wiring_that_reads_conn_before_it_is_assigned_is_reported() {
    let dir = applied(CALLBACK_FIXTURE);
    let server = dir.path().join("bridge/server.py");
    let text = std::fs::read_to_string(&server).unwrap();
    let wiring = text
        .lines()
        .find(|l| l.contains(".agent_progress_callback = make_agent_progress_cb("))
        .unwrap()
        .to_string();
    let moved = text.replacen(&format!("{wiring}\n"), "", 1).replacen(
        "        conn = self._conn\n",
        &format!("{wiring}\n        conn = self._conn\n"),
        1,
    );
    std::fs::write(&server, &moved).unwrap();
    let line = moved.lines().position(|l| l == wiring).unwrap() + 1;
    py_compile("python3", dir.path(), &["bridge/server.py".to_string()]);
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  bound"), "{}", v.stdout);
    assert!(
        v.stdout.contains(&format!(
            "bridge/server.py:{line}: inserted code reads `conn` in `BridgeAgent.prompt` before it is bound there"
        )),
        "{}",
        v.stdout
    );
}

#[test]
fn a_template_that_reads_an_unbound_name_is_refused_and_nothing_is_written() {
    let dir = copy_tree(&fixture(CALLBACK_FIXTURE).join("before"));
    let templates = tempfile::tempdir().unwrap();
    let sites = std::fs::read_to_string(repo().join("templates/python/sites.py")).unwrap();
    write(
        templates.path(),
        "python/sites.py",
        &sites.replace(
            "make_agent_progress_cb({{CONN}}, {{SESSION_ID}}, {{LOOP}}) if {{CONN}} else None",
            "make_agent_progress_cb(connection, {{SESSION_ID}}, {{LOOP}})",
        ),
    );
    let before = snapshot_tree(dir.path());
    let run = acp_patch(
        &[
            "apply",
            "--templates",
            path_str(templates.path()),
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("bridge/server.py:36: the wiring apply would insert: inserted code reads `connection` in `BridgeAgent.prompt` before it is bound there; nothing was written"),
        "{}",
        run.stderr
    );
    assert_eq!(before, snapshot_tree(dir.path()));
    let v = acp_patch(
        &[
            "verify",
            "--templates",
            path_str(templates.path()),
            path_str(dir.path()),
        ],
        None,
    );
    assert!(v.stdout.contains("malformed  bound"), "{}", v.stdout);
}

#[test]
fn a_decorator_reading_an_attribute_the_agent_never_sets_is_reported() {
    let dir = applied(FIXTURE);
    let agent = dir.path().join("streamy/agent.py");
    edit(
        &agent,
        "prompt_handler(lambda self: self._conn)",
        "prompt_handler(lambda self: self._connection)",
    );
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "reads `self._connection`, but no method of `StreamyAgent` (its bases, or the classes composing it) assigns `_connection`"
        ),
        "{}",
        v.stdout
    );
}

/// A prompt handler in a mixin reads what the class composing it assigns; a composed class
/// that no longer assigns it leaves the read unbound.
#[test]
fn a_mixins_read_is_bound_by_the_class_composing_it_and_only_by_it() {
    let dir = applied("python/mixin_agent");
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert!(
        v.stdout
            .contains("composed/prompts.py:15 (reads `self._conn`: bound there)"),
        "{}",
        v.stdout
    );
    let agent = dir.path().join("composed/agent.py");
    edit(&agent, "        self._conn: Any = conn\n", "");
    edit(
        &agent,
        "        self._conn = conn\n",
        "        self._connection = conn\n",
    );
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "reads `self._conn`, but no method of `PromptMixin` (its bases, or the classes composing it) assigns `_conn`"
        ),
        "{}",
        v.stdout
    );
}

#[test]
fn a_start_after_the_handlers_first_send_is_reported() {
    let dir = applied(CALLBACK_FIXTURE);
    let server = dir.path().join("bridge/server.py");
    // an older, hand-placed start below a send the handler makes first
    edit(
        &server,
        "        conn = self._conn\n",
        "        conn = self._conn\n        await conn.session_update(session_id=session_id, update=None)\n        _acp_progress_start(self._agent)\n",
    );
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    let text = std::fs::read_to_string(&server).unwrap();
    let at = |needle: &str| text.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let (send, start) = (at("update=None)"), at("_acp_progress_start(self._agent)"));
    assert!(
        v.stdout.contains(&format!(
            "bridge/server.py:{start}: the card starts after the prompt handler's first send at line {send}"
        )),
        "{}",
        v.stdout
    );
}

#[test]
fn a_gate_returning_nothing_from_a_value_returning_function_is_reported() {
    let dir = applied(FIXTURE);
    let agent = dir.path().join("streamy/agent.py");
    // what an older acp-patch inserted into an emitter whose callers use its result
    edit(
        &agent,
        "    async def _emit(self, session_id: str, update: Any) -> None:\n",
        "    async def _emit(self, session_id: str, update: Any) -> bool:\n        if await _acp_text_hold(self, session_id, update, self._emit):\n            return\n",
    );
    edit(
        &agent,
        "session_update(session_id=session_id, update=update)\n",
        "session_update(session_id=session_id, update=update)\n        return True\n",
    );
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "the gate returns nothing from `StreamyAgent._emit`, whose callers expect a value"
        ),
        "{}",
        v.stdout
    );
}

#[test]
fn partially_patched_tree_gets_only_the_missing_pieces() {
    let dir = applied(FIXTURE);
    let path = dir.path().join("streamy/agent.py");
    let patched = std::fs::read_to_string(&path).unwrap();
    edit(
        &path,
        "    @acp_progress.prompt_handler(lambda self: self._conn)\n",
        "",
    );
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 1);
    assert!(
        verify.stdout.contains("malformed  hook.start"),
        "{}",
        verify.stdout
    );
    assert!(
        verify.stdout.contains("missing    turn_end")
            || verify.stdout.contains("malformed  turn_end"),
        "{}",
        verify.stdout
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("inserted 1 pieces"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), patched);
}

#[test]
fn duplicated_hook_call_is_reported() {
    let dir = applied(FIXTURE);
    let path = dir.path().join("streamy/agent.py");
    let patched = std::fs::read_to_string(&path).unwrap();
    let extra = "\n\ndef _stray(agent):\n    callback = getattr(agent, \"agent_progress_callback\", None)\n    callback(\"start\", \"llm_response\", {})\n";
    std::fs::write(&path, format!("{patched}{extra}")).unwrap();
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 1, "{}", verify.stdout);
    assert!(
        verify.stdout.contains("duplicated hook.start"),
        "{}",
        verify.stdout
    );
    assert!(
        verify.stdout.contains("2 calls with \"start\""),
        "{}",
        verify.stdout
    );
}

#[test]
fn machine_output_apply_json_and_github_annotations() {
    let dir = copy_tree(&fixture_before());
    let run = acp_patch(
        &[
            "apply",
            "--dry-run",
            "--format",
            "json",
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(run.code, 0);
    // stdout holds only the JSON outcome; the dry run's diff is its `diff` field
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["language"], "python");
    assert_eq!(v["written"], false);
    assert_eq!(
        v["files"],
        serde_json::json!(["streamy/acp_progress.py", "streamy/agent.py"])
    );
    assert_eq!(v["placed"].as_array().unwrap().len(), 5);
    let text = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(v["diff"].as_str().unwrap(), text.stdout);

    let gh = acp_patch(
        &["verify", "--format", "github", path_str(dir.path())],
        None,
    );
    assert_eq!(gh.code, 1);
    let annotations: Vec<&str> = gh
        .stdout
        .lines()
        .filter(|l| l.starts_with("::error "))
        .collect();
    assert_eq!(annotations.len(), 7, "{}", gh.stdout);
    assert_eq!(
        annotations.len(),
        gh.stdout.lines().count(),
        "only annotations on stdout"
    );
    assert!(
        annotations[0].starts_with(
            "::error file=streamy/acp_progress.py,line=1,title=acp-patch verify%3A runtime::runtime missing: apply inserts"
        ),
        "{}",
        annotations[0]
    );
}

// ---- safety -----------------------------------------------------------------------------

/// Applies to a variant of the fixture and checks that every original line survives, in
/// order and byte for byte, and that the result compiles.
fn style_case(transform: impl Fn(&str) -> String, check: impl Fn(&str)) -> tempfile::TempDir {
    let dir = copy_tree(&fixture_before());
    let path = dir.path().join("streamy/agent.py");
    let original = transform(&std::fs::read_to_string(&path).unwrap());
    std::fs::write(&path, &original).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let patched = std::fs::read_to_string(&path).unwrap();
    assert!(
        only_insertions(&original, &patched),
        "untouched bytes changed"
    );
    check(&patched);
    py_compile("python3", dir.path(), &py_files(dir.path()));
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
    dir
}

fn runtime_module(dir: &tempfile::TempDir) -> String {
    std::fs::read_to_string(dir.path().join("streamy/acp_progress.py")).unwrap()
}

fn spaces_to_tabs(s: &str) -> String {
    s.lines()
        .map(|l| {
            let n = l.len() - l.trim_start_matches(' ').len();
            format!("{}{}\n", "\t".repeat(n / 4), &l[n / 4 * 4..])
        })
        .collect()
}

#[test]
fn style_tabs_are_kept_for_inserted_lines() {
    let no_spaces = |text: &str| {
        assert!(
            text.lines().all(|l| !l.starts_with(' ')),
            "a space-indented line was inserted"
        );
    };
    let dir = style_case(spaces_to_tabs, no_spaces);
    no_spaces(&runtime_module(&dir)); // the new module reads like its neighbours
}

#[test]
fn style_two_space_indent_is_kept() {
    let dir = style_case(
        |s| {
            s.lines()
                .map(|l| {
                    let n = l.len() - l.trim_start_matches(' ').len();
                    format!("{}{}\n", "  ".repeat(n / 4), &l[n / 4 * 4..])
                })
                .collect()
        },
        |patched| {
            assert!(
                patched.contains("\n  def __init__(self, client"),
                "class body indent changed"
            );
            assert!(
                patched.contains(
                    "\n  @acp_progress.prompt_handler(lambda self: self._conn)\n  async def prompt("
                ),
                "{patched}"
            );
        },
    );
    assert!(runtime_module(&dir).contains("\n    async def prompt(self, *args, **kwargs):\n"));
}

#[test]
fn style_crlf_is_kept_for_inserted_lines() {
    let crlf = |text: &str| {
        assert_eq!(
            text.matches('\n').count(),
            text.matches("\r\n").count(),
            "a bare LF was inserted"
        )
    };
    let dir = style_case(|s| s.replace('\n', "\r\n"), crlf);
    crlf(&runtime_module(&dir));
}

#[test]
fn style_bom_is_kept() {
    let dir = style_case(
        |s| format!("\u{feff}{s}"),
        |patched| {
            assert!(patched.starts_with('\u{feff}'));
            assert_eq!(patched.matches('\u{feff}').count(), 1);
        },
    );
    assert!(
        !runtime_module(&dir).starts_with('\u{feff}'),
        "a new file gets no BOM"
    );
}

#[test]
fn style_no_final_newline_is_kept() {
    let _dir = style_case(
        |s| s.trim_end().to_string(),
        |patched| assert!(!patched.ends_with('\n')),
    );
}

#[test]
fn syntax_error_in_a_file_to_patch_aborts_with_its_location() {
    let dir = copy_tree(&fixture_before());
    let path = dir.path().join("streamy/agent.py");
    let mut agent = std::fs::read_to_string(&path).unwrap();
    agent.push_str("\n\ndef broken(:\n    pass\n");
    std::fs::write(&path, &agent).unwrap();
    let line = agent
        .lines()
        .position(|l| l.starts_with("def broken"))
        .unwrap()
        + 1;
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("streamy/agent.py:{line}")),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(before, snapshot_tree(dir.path()));
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 2, "{}", verify.stderr);
}

#[test]
fn syntax_error_elsewhere_is_reported_and_left_alone() {
    let dir = copy_tree(&fixture_before());
    let broken = "import acp\n\ndef oops(:\n    pass\n";
    std::fs::write(dir.path().join("streamy/scratch.py"), broken).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("streamy/scratch.py:3: does not parse"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("streamy/scratch.py")).unwrap(),
        broken
    );
    let clean = applied(FIXTURE);
    std::fs::write(clean.path().join("streamy/scratch.py"), broken).unwrap();
    assert_same_tree(dir.path(), clean.path());
}

#[test]
fn dirty_git_tree_is_refused_unless_allowed() {
    let dir = copy_tree(&fixture_before());
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-qm", "init"]);
    std::fs::write(dir.path().join("streamy/llm.py"), "# edited\n").unwrap();
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("uncommitted changes"), "{}", run.stderr);
    assert!(run.stderr.contains("streamy/llm.py"), "{}", run.stderr);
    assert!(run.stderr.contains("--allow-dirty"), "{}", run.stderr);
    assert_eq!(before, snapshot_tree(dir.path()));
    // a dry run writes nothing, so it is allowed
    assert_eq!(
        acp_patch(&["apply", "--dry-run", path_str(dir.path())], None).code,
        0
    );
    let run = acp_patch(&["apply", "--allow-dirty", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn read_only_file_is_refused_and_nothing_is_written() {
    use std::os::unix::fs::PermissionsExt;
    let dir = copy_tree(&fixture_before());
    let path = dir.path().join("streamy/agent.py");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("streamy/agent.py: is read-only"),
        "{}",
        run.stderr
    );
    assert_eq!(before, snapshot_tree(dir.path()));
}

#[test]
fn apply_keeps_file_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let dir = copy_tree(&fixture_before());
    let path = dir.path().join("streamy/agent.py");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o750)).unwrap();
    assert_eq!(acp_patch(&["apply", path_str(dir.path())], None).code, 0);
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750);
}

#[test]
fn an_agent_without_an_sdk_or_its_method_name_is_found_by_its_prompt_pin() {
    let dir = copy_tree(&fixture("python/raw_functions").join("before"));
    // nothing names `session/prompt`: detection has only the pin to go by
    edit(
        &dir.path().join("wirefn/main.py"),
        "case \"session/prompt\":",
        "case m if m.endswith(\"/prompt\"):",
    );
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no ACP agent found")
            && run.stderr.contains("acp-patch.toml pins no prompt handler"),
        "{}",
        run.stderr
    );
    write(
        dir.path(),
        "acp-patch.toml",
        "[python]\nprompt = \"wirefn/prompt.py:handle_prompt\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(dir.path().join("wirefn/prompt.py"))
            .unwrap()
            .contains("acp_progress"),
        "the pinned handler is patched"
    );
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
}
