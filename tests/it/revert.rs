//! `acp-patch revert`: after apply (once or twice) the tree comes back byte for byte — on
//! pi-acp 0.0.34 here, on every fixture in the fixture runner (tests/it/fixtures.rs) and on
//! Hermes in its own test (tests/it/python/hermes_published.rs); the dry run is a diff `git apply` takes; hand-edited or moved inserted code is refused with its file:line and
//! nothing written; the ambiguity traps (an import the agent had vs. one apply added, the
//! Cargo.toml additions, blocks inserted several times, parameters, `{}` bodies).

use crate::support::*;
use std::path::Path;

fn apply_ok(root: &Path) -> Run {
    let run = acp_patch(&["apply", path_str(root)], None);
    assert_eq!(run.code, 0, "apply {}: {}", root.display(), run.stderr);
    run
}

fn revert_ok(root: &Path) -> Run {
    let run = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(run.code, 0, "revert {}: {}", root.display(), run.stderr);
    run
}

/// apply, apply again, revert: the original tree byte for byte; a second revert has nothing
/// to do. `original` is the tree before apply.
fn round_trip(original: &Path) {
    let dir = copy_tree(original);
    let root = dir.path();
    apply_ok(root);
    let again = apply_ok(root);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    let run = revert_ok(root);
    assert!(run.stderr.contains("acp-patch: removed "), "{}", run.stderr);
    assert_same_tree(root, original);
    let twice = revert_ok(root);
    assert!(
        twice.stderr.contains("nothing to revert"),
        "{}",
        twice.stderr
    );
    assert_same_tree(root, original);
}

#[test]
fn pi_acp_0_0_34_comes_back_byte_for_byte() {
    round_trip(&crate::typescript::pi_acp("0.0.34"));
}

#[test]
fn unpatched_tree_has_nothing_to_revert() {
    let before = fixture("python/asyncio_agent/before");
    let dir = copy_tree(&before);
    let run = revert_ok(dir.path());
    assert!(run.stderr.contains("nothing to revert"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_same_tree(dir.path(), &before);
}

/// A tree apply cannot patch without a pin (two candidate prompt handlers) was never patched
/// either: revert has nothing to take out and says so, with why apply would stop.
#[test]
fn unpatched_tree_apply_cannot_choose_in_has_nothing_to_revert() {
    let dir = tempfile::tempdir().unwrap();
    let class = |name: &str| {
        format!(
            "import acp\n\nclass {name}:\n    async def prompt(self, prompt, session_id, **kwargs):\n        await self._conn.session_update(session_id=session_id, update=None)\n"
        )
    };
    std::fs::write(dir.path().join("one.py"), class("One")).unwrap();
    std::fs::write(dir.path().join("two.py"), class("Two")).unwrap();
    let refused = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    let run = revert_ok(dir.path());
    assert_eq!(
        run.stderr,
        "note: python: no code of acp-patch's in the tree; apply would not patch it as it is either: found 2 candidates for the ACP prompt handler; nothing was written:\nacp-patch: nothing to revert: no piece acp-patch inserts is in place\n"
    );
    assert_eq!(run.stdout, "");
}

#[test]
fn dry_run_prints_a_diff_git_applies_and_writes_nothing() {
    for case in [
        "python/callback_agent",
        "typescript/sdk1_agent",
        "rust/v1_agent",
    ] {
        let before = fixture(case).join("before");
        let dir = copy_tree(&before);
        apply_ok(dir.path());
        let patched = snapshot_tree(dir.path());
        let dry = acp_patch(&["revert", "--dry-run", path_str(dir.path())], None);
        assert_eq!(dry.code, 0, "{}", dry.stderr);
        assert!(dry.stderr.contains("would remove"), "{}", dry.stderr);
        assert_eq!(patched, snapshot_tree(dir.path()), "a dry run wrote");
        // the diff takes the patched tree back to the original
        let diff = dir.path().with_extension("diff");
        std::fs::write(&diff, &dry.stdout).unwrap();
        git(dir.path(), &["apply", path_str(&diff)]);
        let _ = std::fs::remove_file(&diff);
        assert_same_tree(dir.path(), &before);
    }
}

#[test]
fn json_output_is_one_document_with_the_diff() {
    let dir = copy_tree(&fixture("rust/trait_agent/before"));
    apply_ok(dir.path());
    let run = acp_patch(
        &[
            "revert",
            "--dry-run",
            "--format",
            "json",
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("one JSON document");
    assert_eq!(doc["language"], "rust");
    assert_eq!(doc["written"], false);
    assert_eq!(
        doc["files"],
        serde_json::json!(["src/acp_progress.rs", "src/agent.rs", "src/main.rs"])
    );
    assert!(
        doc["diff"]
            .as_str()
            .unwrap()
            .starts_with("diff --git a/src/acp_progress.rs b/src/acp_progress.rs\n")
    );
    assert_eq!(doc["removed"].as_array().unwrap().len(), 6);

    let run = acp_patch(&["revert", "--format", "json", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["written"], true);
    assert_same_tree(dir.path(), &fixture("rust/trait_agent/before"));
}

/// Replaces the first occurrence of `from` in `file`; panics when it is not there.
fn edit(root: &Path, file: &str, from: &str, to: &str) {
    let path = root.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{file} lacks {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

fn line_of(root: &Path, file: &str, needle: &str) -> usize {
    let text = std::fs::read_to_string(root.join(file)).unwrap();
    text[..text.find(needle).expect("needle")]
        .matches('\n')
        .count()
        + 1
}

#[test]
fn hand_edited_inserted_code_is_refused_with_its_file_and_line() {
    // the engine-level shape: a line inside the inserted hook functions, edited
    let dir = copy_tree(&fixture("python/callback_agent/before"));
    let root = dir.path();
    apply_ok(root);
    edit(
        root,
        "engine/loop.py",
        "agent._acp_progress_started = time.monotonic()",
        "agent._acp_progress_started = time.time()",
    );
    let line = line_of(root, "engine/loop.py", "time.time()");
    let edited = snapshot_tree(root);
    for args in [vec!["revert"], vec!["revert", "--dry-run"]] {
        let mut args = args.clone();
        args.push(path_str(root));
        let run = acp_patch(&args, None);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "engine/loop.py:{line}: the hook functions acp-patch inserted was changed by hand"
            )),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr
                .contains("should read `agent._acp_progress_started = time.monotonic()`"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
        assert_eq!(run.stdout, "");
        assert_eq!(edited, snapshot_tree(root), "a refused revert wrote");
    }
    let json = acp_patch(&["revert", "--format", "json", path_str(root)], None);
    assert_eq!(json.code, 1);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    // the JSON refusal of every command: {"ok": false, "command", "error": {..., "location"}}
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["command"], "revert");
    assert_eq!(doc["error"]["kind"], "hand_edited");
    assert_eq!(doc["error"]["location"]["file"], "engine/loop.py");
    assert_eq!(doc["error"]["location"]["line"], line);

    // the protocol shape: the decorator on the prompt handler, edited
    let dir = copy_tree(&fixture("python/asyncio_agent/before"));
    let root = dir.path();
    apply_ok(root);
    let decorator = "@acp_progress.prompt_handler(lambda self: self._conn)";
    edit(
        root,
        "streamy/agent.py",
        decorator,
        "@acp_progress.prompt_handler(lambda self: self.conn)",
    );
    let line = line_of(root, "streamy/agent.py", "lambda self: self.conn");
    let edited = snapshot_tree(root);
    let run = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "streamy/agent.py:{line}: the prompt handler: start and turn end acp-patch inserted was changed by hand"
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(&format!("should read `{decorator}`")),
        "{}",
        run.stderr
    );
    assert_eq!(edited, snapshot_tree(root), "a refused revert wrote");
}

#[test]
fn hand_edited_call_edit_is_refused() {
    let dir = copy_tree(&fixture("typescript/sdk2_agent/before"));
    let root = dir.path();
    apply_ok(root);
    // the wrapper around a send, edited by hand
    edit(
        root,
        "src/agent.ts",
        "acpProgress.emitter(client)",
        "acpProgress.emitter( client)",
    );
    let line = line_of(root, "src/agent.ts", "acpProgress.emitter( client)");
    let run = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!("src/agent.ts:{line}: ")),
        "{}",
        run.stderr
    );
}

#[test]
fn inserted_code_copied_elsewhere_by_hand_is_refused() {
    let dir = copy_tree(&fixture("python/asyncio_agent/before"));
    let root = dir.path();
    apply_ok(root);
    // a copy of an inserted call in the agent's own code: revert cannot account for it
    let text = std::fs::read_to_string(root.join("streamy/llm.py")).unwrap();
    std::fs::write(
        root.join("streamy/llm.py"),
        format!("{text}\n# acp: acp_progress.emitter(self._conn)\n"),
    )
    .unwrap();
    let copied = snapshot_tree(root);
    let run = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let line = line_of(root, "streamy/llm.py", "# acp: acp_progress.emitter");
    assert!(
        run.stderr.contains(&format!("streamy/llm.py:{line}: ")),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("moved or copied by hand"),
        "{}",
        run.stderr
    );
    assert_eq!(copied, snapshot_tree(root));
}

#[test]
fn partially_patched_tree_loses_the_pieces_that_are_there() {
    // one piece taken out by hand (exactly): revert takes out the rest
    let before = fixture("rust/v1_agent/before");
    let dir = copy_tree(&before);
    let root = dir.path();
    let dry = acp_patch(&["apply", "--dry-run", path_str(root)], None);
    apply_ok(root);
    let manifest = std::fs::read_to_string(before.join("Cargo.toml")).unwrap();
    std::fs::write(root.join("Cargo.toml"), &manifest).unwrap();
    assert!(dry.stdout.contains("[target.'cfg(all())'.dependencies]"));
    revert_ok(root);
    assert_same_tree(root, &before);
}

/// Revert straight after apply, nothing committed: what is uncommitted is what apply wrote,
/// which revert takes back whole, so it needs no `--allow-dirty`; an edit of the user's in a
/// patched file (or anywhere) still refuses, and is named.
#[test]
fn revert_right_after_an_uncommitted_apply_needs_no_allow_dirty() {
    let fixture_before = fixture("python/asyncio_agent/before");
    let dir = copy_tree(&fixture_before);
    let root = dir.path();
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "agent"]);
    apply_ok(root);
    // a staged runtime module too: still nothing of the user's
    git(root, &["add", "streamy/acp_progress.py"]);
    let agent = root.join("streamy/agent.py");
    let patched = std::fs::read_to_string(&agent).unwrap();
    std::fs::write(&agent, format!("{patched}# mine\n")).unwrap();
    let run = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("uncommitted changes"), "{}", run.stderr);
    assert!(run.stderr.contains("streamy/agent.py"), "{}", run.stderr);
    assert!(!run.stderr.contains("acp_progress.py"), "{}", run.stderr);
    std::fs::write(&agent, &patched).unwrap();
    let run = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    git(root, &["reset", "-q"]);
    assert_same_tree(root, &fixture_before);
    let status = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(root)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "");
}

#[test]
fn dirty_git_tree_is_refused_unless_allowed() {
    let dir = copy_tree(&fixture("typescript/sdk1_agent/before"));
    let root = dir.path();
    git(root, &["init", "-q"]);
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "agent"]);
    apply_ok(root);
    git(root, &["commit", "-qam", "patched"]);
    std::fs::write(root.join("notes.txt"), "wip\n").unwrap();
    let run = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("uncommitted changes"), "{}", run.stderr);
    assert!(run.stderr.contains("notes.txt"), "{}", run.stderr);
    let run = acp_patch(&["revert", "--allow-dirty", path_str(root)], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    std::fs::remove_file(root.join("notes.txt")).unwrap();
    let head = acp_patch(&["revert", path_str(root)], None);
    assert!(head.stderr.contains("nothing to revert"), "{}", head.stderr);
    assert_same_tree(root, &fixture("typescript/sdk1_agent/before"));
}

#[test]
fn read_only_file_is_refused_and_nothing_is_written() {
    use std::os::unix::fs::PermissionsExt;
    let dir = copy_tree(&fixture("python/callback_agent/before"));
    let root = dir.path();
    apply_ok(root);
    let patched = snapshot_tree(root);
    let ro = root.join("bridge/server.py");
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    let run = acp_patch(&["revert", path_str(root)], None);
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("read-only"), "{}", run.stderr);
    assert_eq!(patched, snapshot_tree(root));
}

// ---- the ambiguity traps -------------------------------------------------------------

#[test]
fn an_import_apply_added_goes_and_one_the_agent_had_stays() {
    // the engine-level shape's builders module imports acp itself (kept, see the fixture
    // round trip); here it does not, so apply adds a marked import and revert takes exactly
    // that line out
    let dir = copy_tree(&fixture("python/callback_agent/before"));
    let root = dir.path();
    edit(root, "bridge/cards.py", "import acp\n", "");
    let original = copy_tree(root);
    let dry = acp_patch(&["apply", "--dry-run", path_str(root)], None);
    assert!(
        dry.stdout.contains("\n+import acp  # added by acp-patch\n"),
        "{}",
        dry.stdout
    );
    round_trip(original.path());
}

#[test]
fn cargo_toml_additions_go_and_the_agents_own_dependencies_stay() {
    // tokio without `time`: apply appends a marked table with it
    let dir = copy_tree(&fixture("rust/v1_agent/before"));
    let root = dir.path();
    let dry = acp_patch(&["apply", "--dry-run", path_str(root)], None);
    assert!(
        dry.stdout.contains(
            "+[target.'cfg(all())'.dependencies]\n+tokio = { version = \"1\", features = [\"time\"] }\n"
        ),
        "{}",
        dry.stdout
    );
    round_trip(root);
    // nothing needed: the manifest is not touched at all
    edit(root, "Cargo.toml", "\"sync\"]", "\"sync\", \"time\"]");
    let dry = acp_patch(&["apply", "--dry-run", path_str(root)], None);
    assert!(!dry.stdout.contains("Cargo.toml"), "{}", dry.stdout);
    round_trip(root);
}

#[test]
fn crlf_bom_and_no_final_newline_come_back() {
    for case in [
        "python/asyncio_agent",
        "python/callback_agent",
        "typescript/sdk2_agent",
        "rust/trait_agent",
    ] {
        let dir = copy_tree(&fixture(case).join("before"));
        let root = dir.path();
        for path in walk(root) {
            let Some(ext) = path.extension().and_then(|e| e.to_str()) else {
                continue;
            };
            if !["py", "ts", "rs", "toml"].contains(&ext) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let styled = text.replace('\n', "\r\n");
            let styled = styled.trim_end_matches(['\r', '\n']).to_string();
            let styled = if ext == "toml" {
                styled
            } else {
                format!("\u{feff}{styled}")
            };
            std::fs::write(&path, styled).unwrap();
        }
        round_trip(root);
    }
}

/// A fixture with one edit made before apply, then the round trip.
fn round_trip_variant(case: &str, file: &str, from: &str, to: &str) {
    let dir = copy_tree(&fixture(case).join("before"));
    edit(dir.path(), file, from, to);
    round_trip(dir.path());
}

#[test]
fn rust_fields_come_back_with_or_without_the_trailing_comma() {
    let literal = "StreamAgent {
            history: Mutex::new(HashMap::new()),
            cancelled: Mutex::new(HashSet::new()),
            next_session_id: AtomicU64::new(1),
        }";
    let one_line = "StreamAgent { history: Mutex::new(HashMap::new()), cancelled: Mutex::new(HashSet::new()), next_session_id: AtomicU64::new(1)";
    for (from, to) in [
        (
            "AtomicU64::new(1),\n        }",
            "AtomicU64::new(1)\n        }",
        ),
        (
            "    next_session_id: AtomicU64,\n}",
            "    next_session_id: AtomicU64\n}",
        ),
        (literal, &format!("{one_line} }}")),
        (literal, &format!("{one_line}, }}")),
    ] {
        round_trip_variant("rust/v1_agent", "src/agent.rs", from, to);
    }
}

#[test]
fn typescript_constructor_parameters_come_back_in_every_list_shape() {
    let ctor = "constructor(private readonly conn: acp.AgentSideConnection, llm?: ChatClient) {";
    for to in [
        "constructor(private readonly conn: acp.AgentSideConnection, llm?: ChatClient,) {",
        "constructor(\n    private readonly conn: acp.AgentSideConnection,\n    llm?: ChatClient,\n  ) {",
        "constructor(\n    private readonly conn: acp.AgentSideConnection,\n    llm?: ChatClient\n  ) {",
    ] {
        round_trip_variant("typescript/sdk1_agent", "src/agent.ts", ctor, to);
    }
    // an empty list, and an empty body (`{}` comes back as `{}`)
    round_trip_variant(
        "typescript/sdk2_agent",
        "src/agent.ts",
        "constructor(private readonly llm: ChatClient = new ChatClient()) {}",
        "private readonly llm: ChatClient = new ChatClient()\n  constructor() {}",
    );
}

#[test]
fn inserted_lines_moved_by_hand_are_refused() {
    // both lines still read as apply wrote them, but not where apply puts them: apply on the
    // reverted tree would not give this tree back
    let dir = copy_tree(&fixture("python/callback_agent/before"));
    let root = dir.path();
    apply_ok(root);
    let wiring = "        agent.agent_progress_callback = make_agent_progress_cb(conn, session_id, loop) if conn else None\n";
    let hold = "        _acp_text_hold = install_acp_text_hold(agent)\n";
    edit(
        root,
        "bridge/server.py",
        &format!("{wiring}{hold}"),
        &format!("{hold}{wiring}"),
    );
    let line = line_of(root, "bridge/server.py", hold);
    let moved = snapshot_tree(root);
    let run = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "bridge/server.py:{line}: revert cannot give back the tree apply started from"
        )),
        "{}",
        run.stderr
    );
    assert_eq!(moved, snapshot_tree(root));

    // the protocol shape: the runtime module's import, moved below the module's logger
    let dir = copy_tree(&fixture("python/asyncio_agent/before"));
    let root = dir.path();
    apply_ok(root);
    let import = "from streamy import acp_progress\n";
    edit(root, "streamy/agent.py", import, "");
    edit(
        root,
        "streamy/agent.py",
        "logger = ",
        &format!("{import}logger = "),
    );
    let moved = snapshot_tree(root);
    let run = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("streamy/agent.py:15: revert cannot give back the tree apply started from"),
        "{}",
        run.stderr
    );
    assert_eq!(moved, snapshot_tree(root));
}

#[test]
fn a_wrapped_send_sharing_its_line_with_other_calls_comes_back() {
    // the wrapper's `)` is one of several on the line: revert takes out the one apply wrote
    let dir = copy_tree(&fixture("python/asyncio_agent/before"));
    let root = dir.path();
    edit(
        root,
        "streamy/agent.py",
        "        await self._conn.session_update(",
        "        logger.debug(\"emit\"); await self._conn.session_update(",
    );
    let dry = acp_patch(&["apply", "--dry-run", path_str(root)], None);
    assert!(
        dry.stdout.contains(
            "+        logger.debug(\"emit\"); await acp_progress.emitter(self._conn).session_update("
        ),
        "{}",
        dry.stdout
    );
    round_trip(root);
}

/// fast-agent-mcp 0.10.48 has its own `acp_progress_manager`: names of the agent's own that
/// merely contain the marker are not leftover acp-patch code, so revert goes through.
#[test]
fn agents_own_names_containing_the_marker_do_not_block_revert() {
    for (case, file, own) in [
        (
            "python/asyncio_agent",
            "progress_names.py",
            "def acp_progress_manager():\n    my_acp_progress = 1\n    return my_acp_progress\n",
        ),
        (
            "typescript/sdk2_agent",
            "src/progress-names.ts",
            "export const acpProgressBar = 1;\n",
        ),
    ] {
        let dir = copy_tree(&fixture(case).join("before"));
        std::fs::write(dir.path().join(file), own).unwrap();
        let original = copy_tree(dir.path());
        round_trip(original.path());
    }
}

/// Revert names the pieces apply named, each once and at the same line: a send wrapped by
/// two insertions on its line is one piece both ways (it was listed twice by revert).
#[test]
fn revert_lists_the_pieces_apply_listed() {
    let pieces = |run: &Run| -> Vec<String> {
        run.stderr
            .lines()
            .filter(|l| l.starts_with("  "))
            .map(str::to_string)
            .collect()
    };
    for case in [
        "python/asyncio_agent",
        "python/callback_agent",
        "typescript/sdk1_agent",
        "rust/trait_agent",
    ] {
        let dir = copy_tree(&fixture(case).join("before"));
        let applied = pieces(&apply_ok(dir.path()));
        assert!(applied.len() > 4, "{case}: {applied:?}");
        assert_eq!(pieces(&revert_ok(dir.path())), applied, "{case}");
    }
}

/// A tree patched with pins kept outside it (`apply --config FILE`), then verified or reverted
/// without them: the agent is found only with the pin (its dispatcher looks the handler up on
/// its class by a name it builds, a spelling acp-patch does not follow), so both refuse, and say the tree was patched
/// and which file shows it instead of only "no ACP agent found"; with the same `--config`,
/// revert puts the tree back byte for byte.
#[test]
fn a_tree_patched_with_pins_from_outside_asks_for_them_to_verify_and_revert() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("agent")).unwrap();
    std::fs::write(tree.join("agent/__init__.py"), "").unwrap();
    std::fs::write(
        tree.join("agent/server.py"),
        r#"import json
import sys


class Handler:
    def write(self, msg):
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()

    def handle(self, msg):
        handler = getattr(type(self), "rpc_" + msg["method"].replace("/", "_"))
        return {"jsonrpc": "2.0", "id": msg.get("id"), "result": handler(self, msg.get("params") or {})}

    def rpc_session_prompt(self, params):
        self.write({"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": params["sessionId"],
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}}})
        return {"stopReason": "end_turn"}
"#,
    )
    .unwrap();
    let original = copy_tree(&tree);
    let pins = dir.path().join("pins.toml");
    std::fs::write(
        &pins,
        "[python]\nprompt = \"agent/server.py:Handler.rpc_session_prompt\"\n",
    )
    .unwrap();
    let config = ["--config", path_str(&pins)];
    let run = acp_patch(
        &[&["apply"][..], &config, &[path_str(&tree)]].concat(),
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let patched = snapshot_tree(&tree);
    for cmd in ["verify", "revert"] {
        let run = acp_patch(&[cmd, path_str(&tree)], None);
        assert_eq!(run.code, 1, "{cmd}: {}", run.stderr);
        assert!(
            run.stderr.contains(
                "yet `agent/acp_progress.py` is acp-patch's runtime module, so this tree was patched: if apply was given pins (`--config FILE`), pass the same file here, or copy its pins into acp-patch.toml"
            ),
            "{cmd}: {}",
            run.stderr
        );
        assert_eq!(patched, snapshot_tree(&tree), "{cmd} wrote");
    }
    let run = acp_patch(
        &[&["revert"][..], &config, &[path_str(&tree)]].concat(),
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_same_tree(&tree, original.path());
}
