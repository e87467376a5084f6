//! apply / dry-run / verify on TypeScript agents: our fixtures on the 2.x and 1.x SDK APIs
//! (exact snapshots, typechecked with the provisioned `tsc`), pi-acp 0.0.34 rebuilt from its
//! npm package's source map (patched, typechecked, verified, and driven by our regression
//! test), the error cases and the style cases.

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const FIXTURES: [&str; 2] = ["sdk2_agent", "sdk1_agent"];

fn before(name: &str) -> PathBuf {
    fixture(&format!("typescript/{name}/before"))
}

/// The provisioned node_modules of a fixture (scripts/test.sh installs them from its lock).
pub(crate) fn node_modules(name: &str) -> PathBuf {
    let root = std::env::var("ACP_PATCH_TEST_TS")
        .expect("ACP_PATCH_TEST_TS is unset: run the tests with scripts/test.sh");
    let dir = PathBuf::from(root).join(name).join("node_modules");
    assert!(
        dir.is_dir(),
        "{} is missing: run scripts/test.sh",
        dir.display()
    );
    dir
}

/// Links the provisioned node_modules into an agent folder.
pub(crate) fn link_node_modules(dir: &Path, name: &str) {
    let link = dir.join("node_modules");
    if !link.exists() {
        std::os::unix::fs::symlink(node_modules(name), link).unwrap();
    }
}

/// `tsc --noEmit -p dir` with the provisioned TypeScript: it must typecheck.
pub(crate) fn tsc(dir: &Path, deps: &str) {
    let _turn = cpu_lock();
    let tsc = node_modules(deps).join("typescript/bin/tsc");
    let out = Command::new("node")
        .arg(tsc)
        .args(["--noEmit", "-p"])
        .arg(dir)
        .output()
        .expect("node");
    assert!(
        out.status.success(),
        "tsc failed in {}:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A copy of a tree with node_modules linked in, typechecked.
fn typecheck_copy(tree: &Path, deps: &str) {
    let dir = copy_tree(tree);
    link_node_modules(dir.path(), deps);
    tsc(dir.path(), deps);
}

fn fixture_case(name: &str) {
    let fx = fixture(&format!("typescript/{name}"));
    // the unpatched fixture typechecks too
    typecheck_copy(&before(name), name);

    let dir = copy_tree(&before(name));
    let pristine = snapshot_tree(dir.path());
    let dry = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert_snapshot(&fx.join("expected.diff"), &dry.stdout);
    assert_eq!(
        pristine,
        snapshot_tree(dir.path()),
        "a dry run wrote something"
    );
    assert!(
        dry.stderr
            .contains("would insert 18 pieces into 1 files (typescript agent)"),
        "{}",
        dry.stderr
    );

    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    if std::env::var_os("ACP_PATCH_BLESS").is_some() {
        let after = fx.join("after");
        let _ = std::fs::remove_dir_all(&after);
        copy_into(dir.path(), &after);
    }
    assert_same_tree(dir.path(), &fx.join("after"));
    typecheck_copy(dir.path(), name);

    // apply twice: nothing to do, nothing changed
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(again.code, 0);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    assert_same_tree(dir.path(), &fx.join("after"));
    let dry = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!((dry.code, dry.stdout.as_str()), (0, ""));

    // verify, exactly, before and after
    let v = acp_patch(&["verify", path_str(&before(name))], None);
    assert_eq!(v.code, 1, "{}", v.stderr);
    assert_snapshot(
        &fx.join("verify-before.txt"),
        &normalize(&v.stdout, &before(name)),
    );
    let after = fx.join("after");
    let v = acp_patch(&["verify", path_str(&after)], None);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    assert_snapshot(&fx.join("verify-after.txt"), &normalize(&v.stdout, &after));

    // the dry-run diff, applied by git to a pristine copy, gives the applied tree
    let fresh = copy_tree(&before(name));
    let dry = acp_patch(&["apply", "--dry-run", path_str(fresh.path())], None);
    let diff = fresh.path().join("../acp-patch-ts.diff");
    std::fs::write(&diff, &dry.stdout).unwrap();
    git(fresh.path(), &["apply", path_str(&diff)]);
    let _ = std::fs::remove_file(&diff);
    assert_same_tree(fresh.path(), &fx.join("after"));
}

#[test]
fn sdk2_fixture_snapshots_apply_twice_verify_typecheck() {
    fixture_case(FIXTURES[0]);
}

#[test]
fn sdk1_fixture_snapshots_apply_twice_verify_typecheck() {
    fixture_case(FIXTURES[1]);
}

#[test]
fn sdk_generation_decides_the_factory() {
    let v2 = std::fs::read_to_string(fixture("typescript/sdk2_agent/expected.diff")).unwrap();
    assert!(v2.contains("client.notify(\"session/update\", { sessionId, update })"));
    assert!(v2.contains("makeAgentProgressCb(client, params.sessionId)"));
    let v1 = std::fs::read_to_string(fixture("typescript/sdk1_agent/expected.diff")).unwrap();
    assert!(v1.contains("conn.sessionUpdate({ sessionId, update })"));
    assert!(v1.contains("makeAgentProgressCb(this.conn, params.sessionId)"));
}

#[test]
fn env_prefix_renames_every_variable() {
    let dir = copy_tree(&before("sdk2_agent"));
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
    assert_eq!(run.code, 0, "{}", run.stderr);
    for var in [
        "PI_ACP_THINK_HOLD_MS",
        "PI_ACP_HEARTBEAT_S",
        "PI_ACP_HEARTBEAT_DISABLED",
    ] {
        assert!(run.stdout.contains(var), "{var} missing");
    }
    assert!(
        !run.stdout.contains("env.ACP_"),
        "an ACP_ variable was left unprefixed"
    );
}

#[test]
fn inserted_code_never_writes_to_stdout() {
    for name in FIXTURES {
        let diff =
            std::fs::read_to_string(fixture(&format!("typescript/{name}/expected.diff"))).unwrap();
        for l in diff.lines().filter(|l| l.starts_with('+')) {
            assert!(
                !l.contains("console.log") && !l.contains("process.stdout"),
                "{name}: {l}"
            );
        }
    }
}

// ---- sites that cannot be decided -------------------------------------------------------

#[test]
fn ambiguous_emitter_lists_candidates_and_a_pin_fixes_it() {
    let dir = copy_tree(&before("sdk1_agent"));
    let agent = std::fs::read_to_string(dir.path().join("src/agent.ts")).unwrap();
    let other = agent
        .replace("class EchoAgent", "class OtherAgent")
        .replace("new EchoAgent(conn)", "new OtherAgent(conn)");
    std::fs::write(dir.path().join("src/other.ts"), other).unwrap();
    let pristine = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("found 2 candidates for the session-update emitter; nothing was written"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("src/agent.ts:"), "{}", run.stderr);
    assert!(run.stderr.contains("src/other.ts:"), "{}", run.stderr);
    assert!(
        run.stderr.contains("[typescript]")
            && run
                .stderr
                .contains("emitter = \"src/agent.ts:EchoAgent.update\""),
        "{}",
        run.stderr
    );
    assert_eq!(
        pristine,
        snapshot_tree(dir.path()),
        "nothing may be written"
    );
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 1);

    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[typescript]\nemitter = \"src/other.ts:OtherAgent.update\"\n",
    )
    .unwrap();
    let run = acp_patch(&["apply", "--allow-dirty", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("src/other.ts:"), "{}", run.stderr);
    assert!(!run.stderr.contains("src/agent.ts:"), "{}", run.stderr);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
}

#[test]
fn unlocatable_hand_off_says_what_to_do_and_writes_nothing() {
    let dir = copy_tree(&before("sdk2_agent"));
    let path = dir.path().join("src/agent.ts");
    let agent = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        agent.replace(
            "for await (const delta of this.llm.stream(messages, turn.signal)) {",
            "for (const delta of [] as { reasoning?: string; text?: string }[]) {",
        ),
    )
    .unwrap();
    let pristine = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("could not locate the hand-off to the model"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("acp-patch.toml") && run.stderr.contains("handoff = "),
        "{}",
        run.stderr
    );
    assert_eq!(pristine, snapshot_tree(dir.path()));
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 1);
}

#[test]
fn a_pin_that_matches_nothing_is_reported_and_a_right_one_is_honoured() {
    let dir = copy_tree(&before("sdk2_agent"));
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[typescript]\nhandoff = \"src/agent.ts:LumenAgent.nope\"\n",
    )
    .unwrap();
    let pristine = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("handoff") && run.stderr.contains("matches"),
        "{}",
        run.stderr
    );
    assert_eq!(pristine, snapshot_tree(dir.path()));
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[typescript]\nhandoff = \"src/agent.ts:LumenAgent.prompt\"\nemitter = \"src/agent.ts:LumenAgent.send\"\n",
    )
    .unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("src/agent.ts:260  hook start"),
        "{}",
        run.stderr
    );
}

#[test]
fn syntax_error_in_the_agent_aborts_with_its_location() {
    let dir = copy_tree(&before("sdk2_agent"));
    let path = dir.path().join("src/agent.ts");
    let mut agent = std::fs::read_to_string(&path).unwrap();
    agent.push_str("\nfunction broken( {\n");
    std::fs::write(&path, &agent).unwrap();
    let pristine = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("src/agent.ts:"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(pristine, snapshot_tree(dir.path()));
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 2);
}

#[test]
fn partially_patched_tree_gets_only_the_missing_pieces() {
    let dir = copy_tree(&fixture("typescript/sdk2_agent/after"));
    let path = dir.path().join("src/agent.ts");
    let patched = std::fs::read_to_string(&path).unwrap();
    let without_start = patched.replacen("      acpProgressStart(this);\n", "", 1);
    assert_ne!(without_start, patched);
    std::fs::write(&path, &without_start).unwrap();
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1);
    assert!(v.stdout.contains("malformed  hook.start"), "{}", v.stdout);
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("inserted 1 pieces"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), patched);
}

#[test]
fn duplicated_hook_call_is_reported() {
    let dir = copy_tree(&fixture("typescript/sdk2_agent/after"));
    let path = dir.path().join("src/agent.ts");
    let patched = std::fs::read_to_string(&path).unwrap();
    let extra = "\nexport function stray(owner: { agentProgressCallback?: AcpProgressCallback }): void {\n  owner.agentProgressCallback?.(\"start\", \"llm_response\", {});\n}\n";
    std::fs::write(&path, format!("{patched}{extra}")).unwrap();
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("duplicated hook.start"), "{}", v.stdout);
    assert!(v.stdout.contains("2 calls with \"start\""), "{}", v.stdout);
}

// ---- style ------------------------------------------------------------------------------

/// Applies to a variant of the 2.x fixture's agent and checks that every original byte
/// survives in order, the result typechecks, verify passes and a second apply is a no-op.
fn style_case(transform: impl Fn(&str) -> String, check: impl Fn(&str, &str)) {
    let dir = copy_tree(&before("sdk2_agent"));
    let path = dir.path().join("src/agent.ts");
    let original = transform(&std::fs::read_to_string(&path).unwrap());
    std::fs::write(&path, &original).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let patched = std::fs::read_to_string(&path).unwrap();
    assert!(
        only_insertions(&original, &patched),
        "untouched bytes changed"
    );
    let added: String = similar::TextDiff::from_lines(&original, &patched)
        .iter_all_changes()
        .filter(|c| c.tag() == similar::ChangeTag::Insert)
        .map(|c| c.value().to_string())
        .collect();
    check(&patched, &added);
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 0, "{}", v.stdout);
    link_node_modules(dir.path(), "sdk2_agent");
    tsc(dir.path(), "sdk2_agent");
}

/// The code of a line without a trailing `//` comment (good enough for the templates).
fn code_of(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with("//") || t.starts_with("/*") || t.starts_with('*') {
        return "";
    }
    line.split(" // ").next().unwrap_or(line)
}

#[test]
fn style_tabs_are_kept() {
    style_case(
        |s| {
            s.lines()
                .map(|l| {
                    let n = l.len() - l.trim_start_matches(' ').len();
                    format!("{}{}\n", "\t".repeat(n / 2), &l[n / 2 * 2..])
                })
                .collect()
        },
        |_, added| {
            assert!(
                // JSDoc continuation lines (` * ...`) align with their `/**`
                added
                    .lines()
                    .all(|l| !l.starts_with(' ') || l.trim_start().starts_with('*')),
                "a space-indented line was inserted:\n{added}"
            );
            assert!(added.contains("\n\t\t\tacpProgressStart(this);"), "{added}");
        },
    );
}

#[test]
fn style_crlf_is_kept() {
    style_case(
        |s| s.replace('\n', "\r\n"),
        |patched, _| {
            assert_eq!(
                patched.matches('\n').count(),
                patched.matches("\r\n").count(),
                "a bare LF was inserted"
            )
        },
    );
}

#[test]
fn style_single_quotes_are_kept() {
    style_case(
        |s| {
            s.lines()
                .map(|l| {
                    if l.contains('\'') {
                        format!("{l}\n")
                    } else {
                        format!("{}\n", l.replace('"', "'"))
                    }
                })
                .collect()
        },
        |_, added| {
            for l in added.lines() {
                assert!(!code_of(l).contains('"'), "double quote inserted: {l}");
            }
            assert!(added.contains("client.notify('session/update'"), "{added}");
        },
    );
}

#[test]
fn style_double_quotes_are_kept() {
    style_case(
        |s| s.to_string(),
        |_, added| {
            for l in added.lines() {
                assert!(!code_of(l).contains('\''), "single quote inserted: {l}");
            }
        },
    );
}

#[test]
fn style_no_semicolons_is_kept() {
    style_case(
        |s| {
            s.lines()
                .map(|l| format!("{}\n", l.strip_suffix(';').unwrap_or(l)))
                .collect()
        },
        |_, added| {
            for l in added.lines() {
                assert!(
                    !code_of(l).trim_end().ends_with(';'),
                    "semicolon inserted: {l}"
                );
            }
            assert!(added.contains("acpProgressStart(this)\n"), "{added}");
        },
    );
}

#[test]
fn style_bom_and_no_final_newline_are_kept() {
    style_case(
        |s| format!("\u{feff}{}", s.trim_end()),
        |patched, _| {
            assert!(patched.starts_with('\u{feff}'));
            assert_eq!(patched.matches('\u{feff}').count(), 1);
            assert!(!patched.ends_with('\n'));
        },
    );
}

// ---- pi-acp 0.0.34, from the npm registry -----------------------------------------------

/// pi-acp's TypeScript sources, rebuilt once from `npm pack pi-acp@VERSION` (its
/// `dist/index.js.map` holds every source in `sourcesContent`), cached under target/.
pub(crate) fn pi_acp(version: &str) -> PathBuf {
    let cache = repo().join("target/ts/pi-acp-src").join(version);
    let tree = cache.join("tree");
    if tree.join("src/acp/session.ts").is_file() {
        return tree;
    }
    let _ = std::fs::remove_dir_all(&cache);
    std::fs::create_dir_all(&cache).unwrap();
    let ok = Command::new("npm")
        .args(["pack", "--silent", &format!("pi-acp@{version}")])
        .current_dir(&cache)
        .status()
        .unwrap()
        .success();
    assert!(ok, "npm pack pi-acp@{version} failed");
    let ok = Command::new("tar")
        .args(["xzf", &format!("pi-acp-{version}.tgz")])
        .current_dir(&cache)
        .status()
        .unwrap()
        .success();
    assert!(ok, "tar failed");
    let map: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(cache.join("package/dist/index.js.map")).unwrap(),
    )
    .unwrap();
    let partial = cache.join("tree.partial");
    let sources = map["sources"].as_array().unwrap();
    let contents = map["sourcesContent"].as_array().unwrap();
    assert_eq!(sources.len(), contents.len());
    for (s, c) in sources.iter().zip(contents) {
        // "../src/acp/session.ts" relative to dist/
        let rel = s.as_str().unwrap().trim_start_matches("../");
        assert!(rel.starts_with("src/") && !rel.contains(".."), "{rel}");
        let dest = partial.join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, c.as_str().unwrap()).unwrap();
    }
    std::fs::copy(
        cache.join("package/package.json"),
        partial.join("package.json"),
    )
    .unwrap();
    std::fs::rename(&partial, &tree).unwrap();
    tree
}

#[test]
fn pi_acp_0_0_34_patched_typechecks_verifies_and_passes_the_regression_test() {
    let src = pi_acp("0.0.34");
    // our dependency list is the packed package's (the dev tools come from its devDependencies)
    let packed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("package.json")).unwrap()).unwrap();
    let ours: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixture("typescript/pi-acp/package.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(packed["dependencies"], ours["dependencies"]);
    for dev in ["typescript", "tsx", "@types/node", "@types/cross-spawn"] {
        assert_eq!(
            packed["devDependencies"][dev], ours["devDependencies"][dev],
            "{dev}"
        );
    }

    let dir = copy_tree(&src);
    let root = dir.path();
    assert!(src.join("src/acp").read_dir().unwrap().count() > 5);
    let before = acp_patch(&["verify", path_str(root)], None);
    assert_eq!(before.code, 1, "{}{}", before.stdout, before.stderr);
    assert_eq!(
        before.stdout.matches("  missing ").count(),
        9,
        "{}",
        before.stdout
    );

    let run = acp_patch(&["apply", "--env-prefix", "PI_ACP", path_str(root)], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for piece in [
        "src/acp/session.ts:787  hook start",
        "src/acp/session.ts:650  hook complete at first update",
        "src/acp/session.ts:693  text hold flushed at turn end",
        "src/acp/session.ts:774  wiring",
    ] {
        assert!(run.stderr.contains(piece), "{piece}:\n{}", run.stderr);
    }
    let session = std::fs::read_to_string(root.join("src/acp/session.ts")).unwrap();
    assert!(session.contains("process.env.PI_ACP_THINK_HOLD_MS"));
    assert!(session.contains("makeAgentProgressCb(this.conn, this.sessionId)"));

    std::fs::copy(
        fixture("typescript/pi-acp/tsconfig.json"),
        root.join("tsconfig.json"),
    )
    .unwrap();
    link_node_modules(root, "pi-acp");
    tsc(root, "pi-acp");

    let after = acp_patch(&["verify", path_str(root)], None);
    assert_eq!(after.code, 0, "{}{}", after.stdout, after.stderr);
    let again = acp_patch(&["apply", "--env-prefix", "PI_ACP", path_str(root)], None);
    assert_eq!(again.code, 0);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);

    // our regression test, driving the patched PiAcpSession like pi-acp's component tests
    std::fs::create_dir_all(root.join("test")).unwrap();
    std::fs::copy(
        fixture("typescript/pi-acp/regression.test.ts"),
        root.join("test/regression.test.ts"),
    )
    .unwrap();
    let out = Command::new("node")
        .args(["--import", "tsx", "--test", "test/regression.test.ts"])
        .current_dir(root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("# pass 3") && stdout.contains("# fail 0"),
        "{stdout}"
    );
}

#[test]
fn pi_acp_regression_test_fails_unpatched() {
    let dir = copy_tree(&pi_acp("0.0.34"));
    let root = dir.path();
    link_node_modules(root, "pi-acp");
    std::fs::create_dir_all(root.join("test")).unwrap();
    std::fs::copy(
        fixture("typescript/pi-acp/regression.test.ts"),
        root.join("test/regression.test.ts"),
    )
    .unwrap();
    let out = Command::new("node")
        .args(["--import", "tsx", "--test", "test/regression.test.ts"])
        .current_dir(root)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("not ok 1 - acp-patch: one thought block"),
        "{stdout}"
    );
}
