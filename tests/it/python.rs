//! apply / dry-run / verify on Python agents: our asyncio fixture (exact snapshots),
//! Hermes Agent as published (0.19.0 split layout, 0.14.0 monolithic), the error cases
//! and the style cases.

use crate::support::*;
use std::path::{Path, PathBuf};

const FIXTURE: &str = "python/asyncio_agent";

fn fixture_before() -> PathBuf {
    fixture(FIXTURE).join("before")
}

/// Patched Python files of a tree, relative, for py_compile.
fn py_files(root: &Path) -> Vec<String> {
    walk(root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "py"))
        .map(|p| p.strip_prefix(root).unwrap().to_string_lossy().to_string())
        .collect()
}

#[test]
fn fixture_dry_run_matches_snapshot_and_writes_nothing() {
    let dir = copy_tree(&fixture_before());
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_snapshot(&fixture(FIXTURE).join("expected.diff"), &run.stdout);
    assert_eq!(
        before,
        snapshot_tree(dir.path()),
        "a dry run wrote something"
    );
    assert!(
        run.stderr.contains("would insert 14 pieces into 1 files"),
        "{}",
        run.stderr
    );
}

#[test]
fn fixture_apply_gives_the_after_tree_and_a_second_apply_is_a_no_op() {
    let dir = copy_tree(&fixture_before());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("  hook start\n"), "{}", run.stderr);
    if std::env::var_os("ACP_PATCH_BLESS").is_some() {
        let after = fixture(FIXTURE).join("after");
        let _ = std::fs::remove_dir_all(&after);
        copy_into(dir.path(), &after);
    }
    assert_same_tree(dir.path(), &fixture(FIXTURE).join("after"));
    py_compile("python3", dir.path(), &py_files(dir.path()));

    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(again.code, 0);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    assert_same_tree(dir.path(), &fixture(FIXTURE).join("after"));
    let dry = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!((dry.code, dry.stdout.as_str()), (0, ""));
}

#[test]
fn fixture_patched_module_imports_with_the_real_sdk() {
    let python = test_python();
    let out = std::process::Command::new(&python)
        .args(["-c", "import streamy.agent as a; assert callable(a.make_agent_progress_cb); a.StreamyAgent(client=object())"])
        .current_dir(fixture(FIXTURE).join("after"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn fixture_verify_reports_exactly_before_and_after() {
    let before = acp_patch(&["verify", path_str(&fixture_before())], None);
    assert_eq!(before.code, 1, "{}", before.stderr);
    assert_snapshot(
        &fixture(FIXTURE).join("verify-before.txt"),
        &normalize(&before.stdout, &fixture_before()),
    );
    let after_dir = fixture(FIXTURE).join("after");
    let after = acp_patch(&["verify", path_str(&after_dir)], None);
    assert_eq!(after.code, 0, "{}{}", after.stdout, after.stderr);
    assert_snapshot(
        &fixture(FIXTURE).join("verify-after.txt"),
        &normalize(&after.stdout, &after_dir),
    );
    let json = acp_patch(
        &["verify", "--format", "json", path_str(&fixture_before())],
        None,
    );
    assert_eq!(json.code, 1);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(v["ok"], false);
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
            "hook.start",
            "hook.heartbeat",
            "hook.complete",
            "callback.declared",
            "callback.stored",
            "helpers",
            "factory",
            "wiring",
            "coalescing"
        ]
    );
}

#[test]
fn dry_run_diff_applied_with_git_gives_the_applied_tree() {
    let dir = copy_tree(&fixture_before());
    let dry = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    std::fs::write(dir.path().join("../acp-patch-fixture.diff"), &dry.stdout).unwrap();
    let pristine = copy_tree(&fixture_before());
    let diff = dir.path().join("../acp-patch-fixture.diff");
    git(pristine.path(), &["apply", path_str(&diff)]);
    let _ = std::fs::remove_file(&diff);
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0);
    assert_same_tree(dir.path(), pristine.path());
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
        "PI_ACP_HEARTBEAT_S",
        "PI_ACP_HEARTBEAT_DISABLED",
    ] {
        assert!(run.stdout.contains(var), "{var} missing");
    }
    let stray = run.stdout.lines().filter(|l| l.contains("\"ACP_")).count();
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

fn hermes_case(version: &str) {
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
    assert_snapshot(
        &fixture(&format!("python/hermes-{version}.placed.txt")),
        &placed,
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
}

#[test]
fn hermes_0_19_0_split_layout() {
    hermes_case("0.19.0");
}

#[test]
fn hermes_0_14_0_monolithic_layout() {
    hermes_case("0.14.0");
}

// ---- sites that cannot be decided -------------------------------------------------------

#[test]
fn ambiguous_prompt_handler_lists_candidates_and_a_pin_fixes_it() {
    let dir = copy_tree(&fixture_before());
    let agent = std::fs::read_to_string(dir.path().join("streamy/agent.py")).unwrap();
    std::fs::write(
        dir.path().join("streamy/other.py"),
        agent.replace("class StreamyAgent", "class OtherAgent"),
    )
    .unwrap();
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("found 2 candidates for the ACP prompt handler"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("streamy/agent.py:"), "{}", run.stderr);
    assert!(run.stderr.contains("streamy/other.py:"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("prompt = \"streamy/agent.py:StreamyAgent.prompt\""),
        "{}",
        run.stderr
    );
    assert_eq!(before, snapshot_tree(dir.path()), "nothing may be written");

    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[python]\nprompt = \"streamy/other.py:OtherAgent.prompt\"\n",
    )
    .unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("streamy/other.py:"), "{}", run.stderr);
    assert!(!run.stderr.contains("streamy/agent.py:"), "{}", run.stderr);
}

#[test]
fn unlocatable_hand_off_says_what_to_do_and_writes_nothing() {
    let dir = copy_tree(&fixture_before());
    let path = dir.path().join("streamy/agent.py");
    let agent = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        agent.replace(
            "async for delta in self._client.stream(messages):",
            "for delta in []:",
        ),
    )
    .unwrap();
    let before = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("could not locate the hand-off to the model"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("acp-patch.toml"), "{}", run.stderr);
    assert_eq!(before, snapshot_tree(dir.path()));
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

// ---- safety -----------------------------------------------------------------------------

/// Applies to a variant of the fixture and checks that every original line survives, in
/// order and byte for byte, and that the result compiles.
fn style_case(transform: impl Fn(&str) -> String, check: impl Fn(&str)) {
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
    py_compile("python3", dir.path(), &["streamy/agent.py".to_string()]);
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
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
    style_case(spaces_to_tabs, |patched| {
        assert!(
            patched.lines().all(|l| !l.starts_with(' ')),
            "a space-indented line was inserted"
        );
    });
}

#[test]
fn style_two_space_indent_is_kept() {
    style_case(
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
                patched.contains("\n    self.agent_progress_callback = agent_progress_callback"),
                "{patched}"
            );
            assert!(
                !patched.contains("\n        self.agent_progress_callback"),
                "4-space unit used"
            );
        },
    );
}

#[test]
fn style_crlf_is_kept_for_inserted_lines() {
    style_case(
        |s| s.replace('\n', "\r\n"),
        |patched| {
            assert_eq!(
                patched.matches('\n').count(),
                patched.matches("\r\n").count(),
                "a bare LF was inserted"
            )
        },
    );
}

#[test]
fn style_bom_is_kept() {
    style_case(
        |s| format!("\u{feff}{s}"),
        |patched| {
            assert!(patched.starts_with('\u{feff}'));
            assert_eq!(patched.matches('\u{feff}').count(), 1);
        },
    );
}

#[test]
fn style_no_final_newline_is_kept() {
    style_case(
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
    assert_same_tree(
        &dir.path().join("streamy"),
        &{
            let t = copy_tree(&fixture(FIXTURE).join("after"));
            std::fs::write(t.path().join("streamy/scratch.py"), broken).unwrap();
            t
        }
        .path()
        .join("streamy"),
    );
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
fn partially_patched_tree_gets_only_the_missing_pieces() {
    let dir = copy_tree(&fixture(FIXTURE).join("after"));
    let path = dir.path().join("streamy/agent.py");
    let patched = std::fs::read_to_string(&path).unwrap();
    let without_start = patched.replacen(
        "        _acp_progress_start(self)\n        await _acp_drain_sends(session_id)\n",
        "",
        1,
    );
    assert_ne!(without_start, patched);
    std::fs::write(&path, &without_start).unwrap();
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 1);
    assert!(
        verify.stdout.contains("malformed  hook.start"),
        "{}",
        verify.stdout
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("inserted 1 pieces"), "{}", run.stderr);
    assert!(
        std::fs::read_to_string(&path).unwrap() == patched,
        "re-apply did not restore the patched file"
    );
}

#[test]
fn duplicated_hook_call_is_reported() {
    let dir = copy_tree(&fixture(FIXTURE).join("after"));
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

// ---- a Hermes-shaped agent of other names: generic callback-shape locating --------------

const CALLBACK_FIXTURE: &str = "python/callback_agent";

#[test]
fn callback_shaped_agent_with_locals_forwarding() {
    let before = fixture(CALLBACK_FIXTURE).join("before");
    let verify = acp_patch(&["verify", path_str(&before)], None);
    assert_eq!(verify.code, 1);
    assert_snapshot(
        &fixture(CALLBACK_FIXTURE).join("verify-before.txt"),
        &normalize(&verify.stdout, &before),
    );
    let dir = copy_tree(&before);
    let dry = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert_snapshot(
        &fixture(CALLBACK_FIXTURE).join("expected.diff"),
        &dry.stdout,
    );
    // `setup_agent(**locals())` passes the new parameter on by itself: no keyword is added
    let core_hunk = dry
        .stdout
        .split("diff --git")
        .find(|h| h.contains("b/engine/core.py"))
        .unwrap();
    assert_eq!(
        core_hunk
            .lines()
            .filter(|l| l.starts_with('+') && !l.starts_with("+++"))
            .count(),
        1
    );

    assert_eq!(acp_patch(&["apply", path_str(dir.path())], None).code, 0);
    py_compile("python3", dir.path(), &py_files(dir.path()));
    let after = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(after.code, 0, "{}", after.stdout);
    assert_snapshot(
        &fixture(CALLBACK_FIXTURE).join("verify-after.txt"),
        &normalize(&after.stdout, dir.path()),
    );
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
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
    assert_eq!(v["files"], serde_json::json!(["streamy/agent.py"]));
    assert_eq!(v["placed"].as_array().unwrap().len(), 14);
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
    assert_eq!(annotations.len(), 9, "{}", gh.stdout);
    assert_eq!(
        annotations.len(),
        gh.stdout.lines().count(),
        "only annotations on stdout"
    );
    assert!(
        annotations[0].starts_with(
            "::error file=streamy/agent.py,line=23,title=acp-patch verify%3A hook.start::hook.start missing: apply inserts"
        ),
        "{}",
        annotations[0]
    );
}
