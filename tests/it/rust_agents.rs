//! Rust agents on the `agent-client-protocol` crate, patched by the protocol strategy.
//!
//! Every `fixtures/rust/<case>/` with a `case.toml` is one fixture (the layout the
//! table-driven runner reads): the dry run against `expected.diff`, verify before and after
//! against their snapshots, apply twice, `git apply` of the dry run, the build of the
//! patched tree (and of `before/` where a smoke run needs it unpatched), and its smoke runs.
//! The crate's own example agents (0.10.4 `examples/agent.rs`, 5.2.0
//! `examples/simple_agent_v2.rs`) are fixtures too, their sources checked byte for byte
//! against the crates.io package.
//!
//! Fixture crates build with one `CARGO_TARGET_DIR` per crate generation
//! (`target/rust-fixtures/<target_group>`), so every fixture of a generation shares its
//! compiled dependencies; patched trees are kept under `target/rust-fixtures/trees/` so a
//! warm run rebuilds nothing.

use crate::support::*;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseToml {
    summary: Option<String>,
    verify_before_exit: Option<i32>,
    #[serde(default)]
    apply_args: Vec<String>,
    compile: Option<Compile>,
    #[serde(default)]
    smoke: Vec<SmokeRun>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Compile {
    target_group: String,
    #[serde(default)]
    skip: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SmokeRun {
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    unpatched_fails: Vec<String>,
    #[serde(default)]
    patched_fails: Vec<String>,
}

struct Case {
    name: String,
    dir: PathBuf,
    toml: CaseToml,
}

impl Case {
    fn before(&self) -> PathBuf {
        self.dir.join("before")
    }
}

fn cases() -> Vec<Case> {
    let root = fixture("rust");
    let mut out: Vec<Case> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("case.toml").is_file())
        .map(|dir| {
            let text = std::fs::read_to_string(dir.join("case.toml")).unwrap();
            let toml: CaseToml = toml::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.join("case.toml").display()));
            Case {
                name: dir.file_name().unwrap().to_string_lossy().into(),
                dir,
                toml,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(out.len() >= 11, "the Rust fixtures are missing");
    out
}

fn case(name: &str) -> Case {
    cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

fn args_with<'a>(c: &'a Case, cmd: &'a [&'a str], dir: &'a Path) -> Vec<&'a str> {
    let mut v: Vec<&str> = cmd.to_vec();
    v.extend(c.toml.apply_args.iter().map(String::as_str));
    v.push(path_str(dir));
    v
}

/// The case applied in a fresh temporary copy.
fn applied(c: &Case) -> tempfile::TempDir {
    let dir = copy_tree(&c.before());
    let run = acp_patch(&args_with(c, &["apply"], dir.path()), None);
    assert_eq!(run.code, 0, "{}: {}", c.name, run.stderr);
    dir
}

// ---- the table: every case --------------------------------------------------------------

#[test]
fn every_case_dry_run_matches_its_snapshot_and_writes_nothing() {
    for c in cases() {
        let dir = copy_tree(&c.before());
        let snap = snapshot_tree(dir.path());
        let run = acp_patch(&args_with(&c, &["apply", "--dry-run"], dir.path()), None);
        assert_eq!(run.code, 0, "{}: {}", c.name, run.stderr);
        assert_snapshot(&c.dir.join("expected.diff"), &run.stdout);
        assert_eq!(snap, snapshot_tree(dir.path()), "{}: a dry run wrote something", c.name);
        if let Some(summary) = &c.toml.summary {
            assert!(run.stderr.contains(summary), "{}: {}", c.name, run.stderr);
        }
    }
}

#[test]
fn every_case_verify_reports_exactly_before_and_after() {
    for c in cases() {
        let b = c.before();
        let run = acp_patch(&args_with(&c, &["verify"], &b), None);
        assert_eq!(
            run.code,
            c.toml.verify_before_exit.unwrap_or(1),
            "{}: {}{}",
            c.name,
            run.stdout,
            run.stderr
        );
        assert_snapshot(&c.dir.join("verify-before.txt"), &normalize(&run.stdout, &b));
        let a = applied(&c);
        let run = acp_patch(&args_with(&c, &["verify"], a.path()), None);
        assert_eq!(run.code, 0, "{}: {}{}", c.name, run.stdout, run.stderr);
        assert_snapshot(
            &c.dir.join("verify-after.txt"),
            &normalize(&run.stdout, a.path()),
        );
    }
}

#[test]
fn every_case_applies_once_and_the_dry_run_diff_is_what_apply_writes() {
    for c in cases() {
        let dir = applied(&c);
        let again = acp_patch(&args_with(&c, &["apply"], dir.path()), None);
        assert_eq!(again.code, 0, "{}: {}", c.name, again.stderr);
        assert!(again.stderr.contains("nothing to do"), "{}: {}", c.name, again.stderr);
        let dry = acp_patch(&args_with(&c, &["apply", "--dry-run"], dir.path()), None);
        assert_eq!((dry.code, dry.stdout.as_str()), (0, ""), "{}", c.name);

        let pristine = copy_tree(&c.before());
        let dry = acp_patch(
            &args_with(&c, &["apply", "--dry-run"], pristine.path()),
            None,
        );
        let diff = pristine.path().with_extension("diff");
        std::fs::write(&diff, &dry.stdout).unwrap();
        git(pristine.path(), &["apply", path_str(&diff)]);
        let _ = std::fs::remove_file(&diff);
        assert_same_tree(dir.path(), pristine.path());
        // the agent's own files only gain insertions
        for (rel, before) in snapshot_tree(&c.before()) {
            let after = std::fs::read(dir.path().join(&rel)).unwrap();
            assert!(
                only_insertions(
                    &String::from_utf8_lossy(&before),
                    &String::from_utf8_lossy(&after)
                ),
                "{}: {rel} changed other than by insertions",
                c.name
            );
        }
    }
}

// ---- building the fixture crates and running them ------------------------------------

fn target_dir(group: &str) -> PathBuf {
    repo().join("target/rust-fixtures").join(group)
}

/// Writes `from` into `to`, touching only files whose bytes differ (a warm build stays warm).
fn sync_tree(from: &Path, to: &Path) {
    let want: BTreeMap<String, Vec<u8>> = snapshot_tree(from).into_iter().collect();
    if to.is_dir() {
        for (rel, _) in snapshot_tree(to) {
            if !want.contains_key(&rel) && !rel.starts_with("target/") {
                let _ = std::fs::remove_file(to.join(&rel));
            }
        }
    }
    for (rel, bytes) in &want {
        let dest = to.join(rel);
        if std::fs::read(&dest).ok().as_ref() != Some(bytes) {
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            std::fs::write(&dest, bytes).unwrap();
        }
    }
}

/// `before/` at a stable path, its package renamed `<name>-unpatched`: cargo names a local
/// package's artifacts by name and version only, so two trees of one name would overwrite
/// each other's binary in the shared target dir (and look fresh to cargo).
fn unpatched_tree(c: &Case) -> PathBuf {
    let tmp = copy_tree(&c.before());
    let manifest = tmp.path().join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let name = doc["package"]["name"].as_str().unwrap().to_string();
    let from = format!("name = \"{name}\"");
    let to = format!("name = \"{name}-unpatched\"");
    std::fs::write(&manifest, text.replacen(&from, &to, 1)).unwrap();
    let lock = tmp.path().join("Cargo.lock");
    let text = std::fs::read_to_string(&lock).unwrap();
    std::fs::write(&lock, text.replace(&from, &to)).unwrap();
    let dir = repo().join("target/rust-fixtures/trees").join(format!("{}-unpatched", c.name));
    sync_tree(tmp.path(), &dir);
    dir
}

/// The patched tree of a case, at a stable path.
fn patched_tree(c: &Case) -> PathBuf {
    let tmp = applied(c);
    let dir = repo().join("target/rust-fixtures/trees").join(&c.name);
    sync_tree(tmp.path(), &dir);
    dir
}

/// `cargo build --locked` of a fixture crate in its generation's target dir; its binary.
fn build(c: &Case, dir: &Path) -> PathBuf {
    let compile = c.toml.compile.as_ref().expect("a [compile] table");
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
    let name = manifest["package"]["name"].as_str().unwrap().to_string();
    let target = target_dir(&compile.target_group);
    let linked = target.join("debug").join(&name);
    let _turn = cpu_lock();
    let t0 = Instant::now();
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--locked", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "{}: cargo build {} failed:\n{}",
        c.name,
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "cargo build {} ({}): {:.1} s",
        dir.display(),
        compile.target_group,
        t0.elapsed().as_secs_f64()
    );
    linked
}

/// `acp-patch smoke`; the names of the checks that failed.
fn smoke_failing(dir: &Path, bin: &Path, args: &[String]) -> (Vec<String>, String) {
    let _turn = cpu_lock();
    let out_dir = tempfile::tempdir().unwrap();
    let json = out_dir.path().join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .arg("smoke")
        .arg(dir)
        .arg("--agent-cmd")
        .arg(bin)
        .arg("--json")
        .arg(&json)
        .args(args)
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_else(|| panic!("no smoke report:\n{text}"));
    let mut failing: Vec<String> = report["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("no checks:\n{text}"))
        .iter()
        .filter(|c| c["passed"] == false)
        .filter_map(|c| c["name"].as_str().map(String::from))
        .collect();
    failing.sort();
    (failing, text)
}

fn smoke_help() -> String {
    acp_patch(&["smoke", "--help"], None).stdout
}

/// Builds and smoke-runs every case of a crate generation.
fn build_and_smoke(group: &str) {
    let help = smoke_help();
    for c in cases() {
        let Some(compile) = &c.toml.compile else { continue };
        if compile.target_group != group || compile.skip {
            continue;
        }
        let patched = patched_tree(&c);
        let bin = build(&c, &patched);
        let mut before_bin: Option<PathBuf> = None;
        for run in &c.toml.smoke {
            let missing: Vec<&String> = run
                .args
                .iter()
                .filter(|a| a.starts_with("--") && !help.contains(a.as_str()))
                .collect();
            if !missing.is_empty() {
                eprintln!("{}: smoke {:?} skipped: this acp-patch has no {missing:?}", c.name, run.args);
                continue;
            }
            let mut want: Vec<String> = run.patched_fails.clone();
            want.sort();
            let (failing, text) = smoke_failing(&patched, &bin, &run.args);
            assert_eq!(failing, want, "{}: patched smoke {:?}:\n{text}", c.name, run.args);
            if !run.unpatched_fails.is_empty() {
                let unpatched = unpatched_tree(&c);
                let bin = before_bin.get_or_insert_with(|| build(&c, &unpatched)).clone();
                let mut want = run.unpatched_fails.clone();
                want.sort();
                let (failing, text) = smoke_failing(&c.before(), &bin, &run.args);
                assert_eq!(failing, want, "{}: unpatched smoke {:?}:\n{text}", c.name, run.args);
            }
        }
    }
}

#[test]
fn generation_0_10_trait_api_builds_and_smoke_runs() {
    build_and_smoke("acp-0.10.4");
}

#[test]
fn generation_0_11_builder_api_builds_and_smoke_runs() {
    build_and_smoke("acp-0.11.1");
}

#[test]
fn generation_3_builder_api_builds_and_smoke_runs() {
    build_and_smoke("acp-3.6.0");
}

#[test]
fn generation_5_v1_and_v2_build_and_smoke_run() {
    build_and_smoke("acp-5.2.0");
}
