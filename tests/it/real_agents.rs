//! Real ACP agents no other test names, one folder each under `fixtures/real-agents/<name>/`
//! (a new agent is a folder, not code): `requirements.in` / `requirements.lock` (the agent from
//! PyPI, installed with uv by scripts/provision/python-agent.sh into target/agents/real-<name>),
//! `agent.toml` (its CPython, the packages that make the patched tree, the modules that must
//! import once patched) and `smoke.toml` (the agent pointed at the scripted model the way its
//! user would). Each is patched with no pin and run end to end: verify fails before and holds
//! after, the patched modules import with the agent's own CPython, a second apply does nothing,
//! and the smoke run of the patched tree passes every check with the card within 250 ms.
//! In the long mode only (`ACP_PATCH_REAL_AGENTS=full`): each agent is a download.

use crate::smoke::{Run, assert_group_gone, smoke};
use crate::support::*;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `fixtures/real-agents/<name>/agent.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentSpec {
    /// The CPython its venv is made with ("3.12", "3.13").
    python: String,
    /// Top-level packages copied from the venv's site-packages into the tree acp-patch patches.
    packages: Vec<String>,
    /// Modules that must import once patched.
    imports: Vec<String>,
}

struct Agent {
    name: String,
    folder: PathBuf,
    spec: AgentSpec,
}

fn agents() -> Vec<Agent> {
    let root = fixture("real-agents");
    let mut out: Vec<Agent> = std::fs::read_dir(&root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("agent.toml").is_file())
        .map(|e| {
            let folder = e.path();
            let text = std::fs::read_to_string(folder.join("agent.toml")).unwrap();
            let spec = toml::from_str(&text)
                .unwrap_or_else(|err| panic!("{}: {err}", folder.join("agent.toml").display()));
            Agent {
                name: e.file_name().to_string_lossy().into_owned(),
                folder,
                spec,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Installs the agent (cached by its lock) and returns `target/agents/real-<name>`.
fn provision(agent: &Agent) -> PathBuf {
    let _provisioning = provision_lock();
    let out = Command::new("bash")
        .arg(repo().join("scripts/provision/python-agent.sh"))
        .arg(&agent.folder)
        .args(&agent.spec.packages)
        .env("ACP_PATCH_AGENT_PYTHON", &agent.spec.python)
        .output()
        .expect("run scripts/provision/python-agent.sh");
    assert!(
        out.status.success(),
        "provisioning {} failed: {}",
        agent.name,
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

fn run_with(python: &Path, args: &[&str]) -> crate::support::Run {
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(args)
        .env("ACP_PATCH_PYTHON", python)
        .output()
        .expect("run acp-patch");
    crate::support::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Everything the issue asks of one real agent; returns the card's latency after the prompt.
fn patch_and_run(agent: &Agent) -> f64 {
    let installed = provision(agent);
    let python = installed.join("venv/bin/python");
    let tree = copy_tree(&installed.join("src"));
    let dir = tree.path();
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "as installed"]);
    assert!(!dir.join("acp-patch.toml").exists(), "no pin");
    let name = &agent.name;

    let before = run_with(&python, &["verify", path_str(dir)]);
    assert_eq!(before.code, 1, "{name}: verify before\n{}", before.stdout);
    let dry = run_with(&python, &["apply", "--dry-run", path_str(dir)]);
    assert_eq!(dry.code, 0, "{name}: apply --dry-run\n{}", dry.stderr);
    let apply = run_with(&python, &["apply", path_str(dir)]);
    assert_eq!(apply.code, 0, "{name}: apply\n{}", apply.stderr);
    // the dry run's diff is what apply wrote
    let pristine = copy_tree(&installed.join("src"));
    let diff = pristine.path().join("acp-patch-dry-run.diff");
    std::fs::write(&diff, &dry.stdout).unwrap();
    git(pristine.path(), &["init", "-q"]);
    git(pristine.path(), &["apply", "acp-patch-dry-run.diff"]);
    std::fs::remove_file(&diff).unwrap();
    assert_same_tree(dir, pristine.path());

    let after = run_with(&python, &["verify", path_str(dir)]);
    assert_eq!(after.code, 0, "{name}: verify after\n{}", after.stdout);
    let again = run_with(&python, &["apply", path_str(dir)]);
    assert_eq!(again.code, 0, "{name}: second apply\n{}", again.stderr);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);

    // the patched modules import with the agent's CPython
    if let Err(e) = import_modules(&python, dir, &agent.spec.imports) {
        panic!("{name}: {e}");
    }

    let config = agent.folder.join("smoke.toml");
    let run: Run = smoke(
        dir,
        &[
            "--config",
            path_str(&config),
            "--python",
            path_str(&python),
            "--think-card-max-ms",
            "250",
        ],
    );
    assert_eq!(run.code, 0, "{name}: smoke\n{}\n{}", run.stdout, run.stderr);
    run.assert_patch_checks_pass();
    assert_group_gone(&run);
    run.fig("think_card", "latency_ms")
}

#[test]
fn every_real_agent_patched_with_no_pin_runs_end_to_end() {
    if std::env::var("ACP_PATCH_REAL_AGENTS").as_deref() != Ok("full") {
        eprintln!(
            "skipped: set ACP_PATCH_REAL_AGENTS=full to install and run fixtures/real-agents/*"
        );
        return;
    }
    // ACP_PATCH_REAL_AGENTS_ONLY=a,b: only those folders (a rerun of one agent)
    let only = std::env::var("ACP_PATCH_REAL_AGENTS_ONLY").unwrap_or_default();
    let only: Vec<&str> = only.split(',').filter(|s| !s.is_empty()).collect();
    let agents: Vec<_> = agents()
        .into_iter()
        .filter(|a| only.is_empty() || only.contains(&a.name.as_str()))
        .collect();
    assert!(
        !agents.is_empty(),
        "no fixtures/real-agents/*/agent.toml (or none named by ACP_PATCH_REAL_AGENTS_ONLY)"
    );
    let mut failed = Vec::new();
    for agent in &agents {
        match std::panic::catch_unwind(|| patch_and_run(agent)) {
            Ok(ms) => eprintln!("{}: patched, card {ms:.0} ms after the prompt", agent.name),
            Err(_) => failed.push(agent.name.clone()),
        }
    }
    assert!(failed.is_empty(), "failed: {failed:?} (their panics above)");
}
