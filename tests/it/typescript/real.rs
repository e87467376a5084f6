//! Real agents. pi-acp 0.0.34 rebuilt from its npm package's source map (engine strategy);
//! @zed-industries/claude-agent-acp 0.23.1 from its sources (protocol strategy) when a checkout
//! of its repository (tag v0.23.1) is named by ACP_PATCH_CLAUDE_SRC — npm ships only its
//! compiled dist/ (no sources in its maps) and CI cannot reach GitHub.

use super::*;

// ---- pi-acp 0.0.34, from the npm registry -----------------------------------------------

/// pi-acp's TypeScript sources, rebuilt once from `npm pack pi-acp@VERSION` (its
/// `dist/index.js.map` holds every source in `sourcesContent`), cached under target/.
pub(crate) fn pi_acp(version: &str) -> PathBuf {
    let cache = repo().join("target/ts/pi-acp-src").join(version);
    let tree = cache.join("tree");
    let _provisioning = crate::support::provision_lock();
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

    let after = acp_patch(&["verify", "--env-prefix", "PI_ACP", path_str(root)], None);
    assert_eq!(after.code, 0, "{}{}", after.stdout, after.stderr);
    assert!(
        started(&after.stdout).contains(&"src/acp/session.ts".to_string()),
        "{}",
        after.stdout
    );
    // the patched session module loads in node (tsx), writing nothing to stdout
    let out = Command::new("node")
        .args([
            "--import",
            "tsx",
            "--input-type=module",
            "-e",
            "await import('./src/acp/session.ts')",
        ])
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "patched src/acp/session.ts does not load:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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

// ---- @zed-industries/claude-agent-acp 0.23.1, from its sources ----------------------------

const CLAUDE_VERSION: &str = "0.23.1";

/// claude-agent-acp's sources at tag v0.23.1 and their own node_modules, from
/// scripts/provision/claude-agent-acp-src.sh (ACP_PATCH_CLAUDE_SRC or ACP_PATCH_CLAUDE_GIT).
fn claude_sources() -> Option<(PathBuf, PathBuf)> {
    let _provisioning = crate::support::provision_lock();
    let out = Command::new("bash")
        .arg(repo().join("scripts/provision/claude-agent-acp-src.sh"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "provisioning claude-agent-acp's sources failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    match (lines.next(), lines.next()) {
        (Some(src), Some(deps)) => Some((PathBuf::from(src), PathBuf::from(deps))),
        _ => {
            eprintln!(
                "skipped: set ACP_PATCH_CLAUDE_SRC to a checkout of zed-industries/claude-agent-acp at tag v{CLAUDE_VERSION}, or ACP_PATCH_CLAUDE_GIT to a clone of it (npm ships only its compiled dist/)"
            );
            None
        }
    }
}

/// A copy of a source tree without its node_modules and .git.
fn copy_sources(from: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in walk(from) {
        let rel = entry.strip_prefix(from).unwrap();
        if rel.components().any(|c| c.as_os_str() == "node_modules") {
            continue;
        }
        let dest = dir.path().join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &dest).unwrap();
    }
    dir
}

/// (passed, skipped, failed) of the agent's own vitest suite in `dir`.
fn vitest(dir: &Path) -> (u32, u32, u32) {
    let _turn = cpu_lock();
    let out = Command::new("node")
        .args(["node_modules/vitest/vitest.mjs", "run"])
        .env("NO_COLOR", "1")
        .env("FORCE_COLOR", "0")
        // as root, its permission-mode tests expect the sandbox flag (this machine exports it)
        .env("IS_SANDBOX", "1")
        .current_dir(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("Tests "))
        .unwrap_or_else(|| {
            panic!(
                "no vitest summary:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    // "Tests  2 failed | 140 passed | 6 skipped (148)"
    let counts: Vec<(u32, String)> = line
        .split('(')
        .next()
        .unwrap_or("")
        .trim()
        .trim_start_matches("Tests")
        .split('|')
        .filter_map(|part| {
            let mut words = part.split_whitespace();
            Some((words.next()?.parse().ok()?, words.next()?.to_string()))
        })
        .collect();
    let count = |word: &str| {
        counts
            .iter()
            .find(|(_, w)| w == word)
            .map(|(n, _)| *n)
            .unwrap_or(0)
    };
    (count("passed"), count("skipped"), count("failed"))
}

#[test]
fn claude_agent_acp_patched_typechecks_verifies_and_passes_its_own_suite() {
    let Some((src, deps)) = claude_sources() else {
        return;
    };
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src.join("package.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["version"], CLAUDE_VERSION,
        "ACP_PATCH_CLAUDE_SRC is another version"
    );
    let tree = copy_sources(&src);
    let root = tree.path();
    std::os::unix::fs::symlink(&deps, root.join("node_modules")).unwrap();
    let unpatched = vitest(root);
    assert_eq!(unpatched, (142, 6, 0), "the unpatched suite");

    let v = acp_patch(&["verify", path_str(root)], None);
    assert_eq!(v.code, 1, "{}{}", v.stdout, v.stderr);
    let fresh = copy_sources(&src);
    let dry = acp_patch(&["apply", "--dry-run", path_str(fresh.path())], None);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let run = acp_patch(&["apply", path_str(root)], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let placed: String = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("  "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_snapshot(
        &fixture(&format!(
            "typescript/claude-agent-acp-{CLAUDE_VERSION}.placed.txt"
        )),
        &placed,
    );

    // the dry run's diff, applied by git to a pristine copy, is what apply wrote
    let diff = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(diff.path(), &dry.stdout).unwrap();
    git(fresh.path(), &["apply", path_str(diff.path())]);
    for rel in ["src/acp-agent.ts", "src/acp-progress.ts"] {
        assert_eq!(read(fresh.path(), rel), read(root, rel), "{rel}");
    }

    tsc_in(root);
    let v = acp_patch(&["verify", path_str(root)], None);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    assert_snapshot(
        &fixture(&format!(
            "typescript/claude-agent-acp-{CLAUDE_VERSION}.verify-after.txt"
        )),
        &normalize(&v.stdout, root),
    );
    let again = acp_patch(&["apply", path_str(root)], None);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);

    let patched = vitest(root);
    assert_eq!(patched, unpatched, "the patched suite");

    // built as its package is (`tsc` into dist/) and run the smoke preset's way: every check
    // passes, the tool call's gap, two sessions and a cancel included
    let _turn = cpu_lock();
    let out = Command::new("node")
        .args(["node_modules/typescript/bin/tsc", "-p", "."])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    drop(_turn);
    crate::smoke_presets::claude_case(root, &[], &[]);
    crate::smoke_presets::claude_case(root, &["--sessions", "2"], &[]);
    crate::smoke_presets::claude_case(root, &["--cancel-after", "800"], &[]);
}

/// `tsc --noEmit` with the agent's own TypeScript and tsconfig.
fn tsc_in(root: &Path) {
    let _turn = cpu_lock();
    let out = Command::new("node")
        .args(["node_modules/typescript/bin/tsc", "--noEmit", "-p", "."])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "tsc failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---- the runtime module itself -------------------------------------------------------------

/// Runs fixtures/typescript/runtime.test.ts (node's test runner) against the runtime module as
/// apply renders it for a fixture: the semantics hold in every code style it is rendered in.
fn runtime_semantics(name: &str, module: &str) {
    let dir = applied(name);
    let module = dir.path().join(module);
    let src = module.parent().unwrap();
    // the module under test, as a .ts or .js file the test imports as ./acp-progress-under-test.js
    let ext = if module.extension().is_some_and(|e| e == "js") {
        "js"
    } else {
        "ts"
    };
    std::fs::copy(&module, src.join(format!("acp-progress-under-test.{ext}"))).unwrap();
    let test = std::fs::read_to_string(fixture("typescript/runtime.test.ts"))
        .unwrap()
        .replace("\"./acp-progress.js\"", "\"./acp-progress-under-test.js\"");
    std::fs::write(src.join("runtime.test.ts"), test).unwrap();
    link_node_modules(dir.path(), "sdk1_agent");
    let _turn = cpu_lock();
    let out = Command::new("node")
        .args(["--import", "tsx", "--test"])
        .arg(src.join("runtime.test.ts"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("# pass 20") && stdout.contains("# fail 0"),
        "{stdout}"
    );
}

#[test]
fn runtime_semantics_double_quotes_and_semicolons() {
    runtime_semantics("sdk2_agent", "src/acp-progress.ts");
}

#[test]
fn runtime_semantics_tabs_single_quotes_no_semicolons() {
    runtime_semantics("per_kind_helpers", "src/acp-progress.mts");
}

#[test]
fn runtime_semantics_javascript_commonjs_without_types() {
    runtime_semantics("js_commonjs", "acp-progress.js");
}
