//! `apply --format patch`: the series `git am` applies on a clean checkout gives the tree
//! apply writes, byte for byte (one agent per language, and an agent below a repository's
//! top); the messages say what they say (a snapshot); `--smoke` puts both runs' figures in.

use crate::support::{
    assert_same_tree, assert_snapshot, copy_into, fixture, git, path_str, repo, test_python,
};
use std::path::Path;
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// acp-patch with a fixed author and date (the series' `From:` and `Date:`).
fn acp_patch_as_author(args: &[&str], env: &[(&str, &str)]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(args)
        .env("GIT_AUTHOR_NAME", "Ada Lovelace")
        .env("GIT_AUTHOR_EMAIL", "ada@example.org")
        .env("GIT_AUTHOR_DATE", "1796160017 +0100")
        .envs(env.iter().copied())
        .output()
        .expect("run acp-patch");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A git repository holding `case`'s agent at `below` (e.g. `agents/streamy`).
fn repo_with(case: &str, below: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join(below);
    std::fs::create_dir_all(&agent).unwrap();
    copy_into(&fixture(case), &agent);
    git(dir.path(), &["init", "-q"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "the agent"]);
    dir
}

fn git_out(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `git am` of `series` in a fresh clone of `origin`; returns the clone.
fn git_am(origin: &Path, series: &str) -> tempfile::TempDir {
    let clone = tempfile::tempdir().unwrap();
    git(
        clone.path(),
        &["clone", "-q", path_str(origin), path_str(clone.path())],
    );
    let mbox = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    std::fs::write(&mbox, series).unwrap();
    git(clone.path(), &["am", "-q", path_str(&mbox)]);
    clone
}

/// One agent per language: the series from a dry run, `git am`'d on a clean clone, is the
/// tree apply writes; the series apply prints when it writes is the same.
#[test]
fn git_am_of_the_series_is_the_tree_apply_writes() {
    for case in [
        "python/asyncio_agent/before",
        "typescript/sdk2_agent/before",
        "rust/builder_agent/before",
    ] {
        let origin = repo_with(case, "");
        let root = path_str(origin.path());
        let dry = acp_patch_as_author(&["apply", "--dry-run", "--format", "patch", root], &[]);
        assert_eq!(dry.code, 0, "{case}: {}", dry.stderr);
        assert_eq!(
            dry.stdout.matches("\nSubject: [PATCH ").count(),
            2,
            "{case}"
        );
        let clone = git_am(origin.path(), &dry.stdout);
        assert_eq!(
            git_out(
                clone.path(),
                &["log", "-2", "--format=%an <%ae> %ad|%s", "--date=raw"]
            ),
            "Ada Lovelace <ada@example.org> 1796160017 +0100|Show a Thinking... card while the model is silent; keep one thought block\n\
             Ada Lovelace <ada@example.org> 1796160017 +0100|Add the ACP progress runtime (a Thinking... card, one thought block)\n",
            "{case}"
        );
        // the first commit only adds the runtime: the agent's own files are untouched
        let first = git_out(clone.path(), &["show", "--stat", "--format=", "HEAD~1"]);
        assert!(
            first.contains("1 file changed") || case.starts_with("rust"),
            "{case}: {first}"
        );
        let written = acp_patch_as_author(&["apply", "--format", "patch", root], &[]);
        assert_eq!(written.code, 0, "{case}: {}", written.stderr);
        assert_same_tree(origin.path(), clone.path());
        assert_eq!(
            written.stdout, dry.stdout,
            "{case}: the same series either way"
        );
        // a patched tree has nothing to send
        let again = acp_patch_as_author(&["apply", "--format", "patch", root], &[]);
        assert_eq!((again.code, again.stdout.as_str()), (0, ""), "{case}");
        assert!(again.stderr.contains("no series"), "{}", again.stderr);
    }
}

/// An engine-shaped agent (no runtime module: the pieces go into its own files) gets one
/// patch, which says why as well.
#[test]
fn engine_shaped_agent_gets_one_patch() {
    let origin = repo_with("python/callback_agent/before", "");
    let root = path_str(origin.path());
    let run = acp_patch_as_author(&["apply", "--dry-run", "--format", "patch", root], &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout.matches("\nSubject: [PATCH").count(), 1);
    assert!(
        run.stdout
            .contains("\nSubject: [PATCH] Show a Thinking... card"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("\nACP clients (Zed, JetBrains, ...) show nothing")
    );
    assert!(
        !run.stdout.contains("_THINK_GAP_MS"),
        "no gap card in this shape"
    );
    let clone = git_am(origin.path(), &run.stdout);
    assert_eq!(acp_patch_as_author(&["apply", root], &[]).code, 0);
    assert_same_tree(origin.path(), clone.path());
}

/// An agent below the repository's top: the series' paths are the repository's.
#[test]
fn series_paths_are_the_repository_s() {
    let origin = repo_with("python/asyncio_agent/before", "agents/streamy");
    let agent = origin.path().join("agents/streamy");
    let run = acp_patch_as_author(
        &["apply", "--dry-run", "--format", "patch", path_str(&agent)],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "diff --git a/agents/streamy/streamy/agent.py b/agents/streamy/streamy/agent.py"
        ),
        "{}",
        run.stdout
    );
    let clone = git_am(origin.path(), &run.stdout);
    assert_eq!(
        acp_patch_as_author(&["apply", path_str(&agent)], &[]).code,
        0
    );
    assert_same_tree(origin.path(), clone.path());
}

/// The messages of a Python agent's series (the diffs left out: the templates' own
/// snapshots cover them), with a prefix of its own for the variables.
#[test]
fn series_messages_snapshot() {
    let origin = repo_with("python/asyncio_agent/before", "");
    let run = acp_patch_as_author(
        &[
            "apply",
            "--dry-run",
            "--format",
            "patch",
            "--env-prefix",
            "STREAMY",
            path_str(origin.path()),
        ],
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let head = git_out(origin.path(), &["rev-parse", "HEAD"]);
    let messages = messages_only(&run.stdout)
        .replace(acp_patch::VERSION, "<version>")
        .replace(head.trim(), "<base commit>");
    assert_snapshot(
        &repo().join("fixtures/python/asyncio_agent/series-messages.txt"),
        &messages,
    );
}

/// Every line of an mbox but the diffs' bodies.
fn messages_only(mbox: &str) -> String {
    let mut out = String::new();
    let mut in_diff = false;
    for line in mbox.lines() {
        if line.starts_with("diff --git ") {
            in_diff = true;
            out.push_str(line);
            out.push('\n');
            continue;
        }
        if line.starts_with("From 0000000000000000000000000000000000000000 ")
            || line.starts_with("base-commit: ")
            || line == "-- "
        {
            in_diff = false;
        }
        if !in_diff {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// `--smoke`: the agent runs before apply writes and after, and the call edits' message
/// carries both runs' verdicts per check.
#[test]
fn smoke_figures_before_and_after() {
    let origin = repo_with("python/asyncio_agent/before", "");
    let python = test_python();
    let run = acp_patch_as_author(
        &[
            "apply",
            "--format",
            "patch",
            "--smoke",
            path_str(origin.path()),
        ],
        &[("ACP_PATCH_PYTHON", &python)],
    );
    assert_eq!(run.code, 0, "{}\n{}", run.stderr, run.stdout);
    let second = &run.stdout[run.stdout.find("[PATCH 2/2]").unwrap()..];
    for check in ["think_card", "heartbeat", "complete", "one_thought_block"] {
        let at = second
            .find(&format!("\n  {check}\n    before: "))
            .unwrap_or_else(|| panic!("{check} not in {second}"));
        let rows: Vec<&str> = second[at..].lines().skip(2).take(2).collect();
        assert!(
            rows[0].starts_with("    before: FAIL: "),
            "{check}: {rows:?}"
        );
        assert!(rows[1].starts_with("    after:  ok: "), "{check}: {rows:?}");
    }
    assert!(
        second.contains(
            "  verdict\n    before: failing: think_card, heartbeat, complete, one_thought_block"
        ) && second.contains("\n    after:  every check passes\n"),
        "{second}"
    );
    // what it applied is what apply writes, and the series applies to the unpatched tree
    let clone = git_am(origin.path(), &run.stdout);
    assert_same_tree(origin.path(), clone.path());
}

/// `--smoke` needs the patched tree written, and the series format.
#[test]
fn smoke_refused_without_a_series_or_with_a_dry_run() {
    let origin = repo_with("python/asyncio_agent/before", "");
    let root = path_str(origin.path());
    for args in [
        &["apply", "--smoke", root][..],
        &["apply", "--format", "json", "--smoke", root],
        &["apply", "--format", "patch", "--smoke", "--dry-run", root],
    ] {
        let run = acp_patch_as_author(args, &[]);
        assert_eq!(run.code, 2, "{args:?}");
        assert!(run.stderr.starts_with("error: --smoke "), "{}", run.stderr);
        assert_eq!(run.stdout, "");
    }
    assert_eq!(git_out(origin.path(), &["status", "--porcelain"]), "");
}
