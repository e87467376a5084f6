//! Interrupted and concurrent runs.

use super::*;

#[test]
fn apply_killed_mid_write_leaves_no_truncated_file_and_the_next_run_cleans_up() {
    let dir = tree(PY);
    let before = state(dir.path());
    let killed = run_env(
        &["apply", path_str(dir.path())],
        &[("ACP_PATCH_FAILPOINT", "staged")],
    );
    assert_eq!(killed.code, -1, "SIGKILL ends the process by signal");
    // the originals are untouched; only the staged temporary file is there
    let after = state(dir.path());
    let extra: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    // one per file apply writes: streamy/agent.py and the new streamy/acp_progress.py
    assert_eq!(extra.len(), 2, "{extra:?}");
    assert!(
        extra
            .iter()
            .all(|e| e.starts_with("streamy/.acp-patch-tmp-")),
        "{extra:?}"
    );
    for (k, v) in &before {
        assert_eq!(after.get(k), Some(v), "{k} changed");
    }
    // the next apply removes it (its process is gone) and patches; nothing is left
    let ran = run(&["apply", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("removed 2 temporary files"),
        "{}",
        ran.stderr
    );
    check(dir.path(), &before, &ran, 0, &["inserted"]);
}

#[test]
fn leftovers_of_a_killed_run_do_not_make_a_git_tree_dirty() {
    let dir = tree(PY);
    committed(dir.path());
    let killed = run_env(
        &["apply", path_str(dir.path())],
        &[("ACP_PATCH_FAILPOINT", "staged")],
    );
    assert_eq!(killed.code, -1);
    let before = state(dir.path());
    let ran = run(&["apply", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let after = state(dir.path());
    assert!(after.keys().all(|k| !k.contains(".acp-patch-tmp-")));
    assert_ne!(before.get(AGENT), after.get(AGENT));
}

#[test]
fn apply_interrupted_by_a_signal_writes_nothing_and_leaves_no_temp_file() {
    let dir = tree(PY);
    let before = state(dir.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(["apply", path_str(dir.path())])
        .env("ACP_PATCH_FAILPOINT", "staged-sleep")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // wait until the temporary file is staged, then interrupt
    let staged = |s: &BTreeMap<String, Entry>| s.keys().any(|k| k.contains(".acp-patch-tmp-"));
    let t0 = std::time::Instant::now();
    while !staged(&state(dir.path())) && t0.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    assert!(
        state(dir.path()) == before,
        "an interrupted apply changed the tree"
    );
}

#[test]
fn file_saved_while_apply_runs_is_not_overwritten() {
    let dir = tree(PY);
    let child = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(["apply", path_str(dir.path())])
        .env("ACP_PATCH_FAILPOINT", "staged-sleep")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !state(dir.path())
        .keys()
        .any(|k| k.contains(".acp-patch-tmp-"))
        && t0.elapsed().as_secs() < 30
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // the user saves the file meanwhile
    edit(dir.path(), AGENT, |t| format!("{t}\n# saved by the user\n"));
    let mut before = state(dir.path());
    before.retain(|k, _| !k.contains(".acp-patch-tmp-"));
    let out = child.wait_with_output().unwrap();
    let ran = Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    check(
        dir.path(),
        &before,
        &ran,
        1,
        &[AGENT, "changed on disk while acp-patch ran", "re-run apply"],
    );
}

#[test]
fn two_applies_at_once_patch_exactly_once() {
    let dir = tree(PY);
    let reference = tree(PY);
    apply_case(reference.path(), &[], 0, &["inserted"]);
    let before = state(dir.path());
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_acp-patch"))
            .args(["apply", path_str(dir.path())])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    for out in &outs {
        let ran = Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        // each run either patched, found nothing to do, or refused as locked/changed
        assert!(matches!(ran.code, 0 | 1), "{}", ran.stderr);
        if ran.code == 1 {
            assert!(
                ran.stderr
                    .contains("another acp-patch apply is writing this tree")
                    || ran.stderr.contains("changed on disk"),
                "{}",
                ran.stderr
            );
        }
        assert!(!ran.stderr.contains("panicked"));
    }
    let after = state(dir.path());
    assert_ne!(after, before);
    assert_eq!(
        after.get(AGENT),
        state(reference.path()).get(AGENT),
        "patched exactly once"
    );
}
