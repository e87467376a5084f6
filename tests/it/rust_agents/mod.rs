//! Rust agents on the `agent-client-protocol` crate, patched by the protocol strategy.
//!
//! Every `fixtures/rust/<case>/` with a `case.toml` is run by the fixture runner
//! (tests/it/fixtures.rs: dry run, verify before/after, apply twice, `git apply`, cargo, smoke).
//! Here: what lies beyond those steps — the crate's own example agents checked byte for byte
//! against the crates.io package, the protocol v2 example driven by a v2 client, the runtime
//! module's formatting, pins and candidate lists, verify's placement findings, file styles.
//!
//! Fixture crates of every SDK generation build in one `CARGO_TARGET_DIR`
//! (`target/rust-fixtures/shared`, see `support::rust_fixtures_target`), the trees these tests
//! build kept under `target/rust-fixtures/trees/` so a warm run rebuilds nothing.

mod beyond_fixtures;
mod examples;
mod locating;
mod placement;
mod safety;

use crate::support::*;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What these tests read of a `case.toml` (the fixture runner checks the rest).
#[derive(Debug, Deserialize)]
struct CaseToml {
    #[serde(default)]
    apply_args: Vec<String>,
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
    assert!(out.len() >= 16, "the Rust fixtures are missing");
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

// ---- building the fixture crates and running them ------------------------------------

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
    let dir = repo()
        .join("target/rust-fixtures/trees")
        .join(format!("{}-unpatched", c.name));
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

/// `cargo build --locked` of a fixture crate in the fixtures' target dir; its binary.
fn build(c: &Case, dir: &Path) -> PathBuf {
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
    let name = manifest["package"]["name"].as_str().unwrap().to_string();
    let linked = rust_fixtures_target().join("debug").join(&name);
    let t0 = Instant::now();
    let out = cargo_fixture("build", dir);
    assert!(
        out.status.success(),
        "{}: cargo build {} failed:\n{}",
        c.name,
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "cargo build {}: {:.1} s",
        dir.display(),
        t0.elapsed().as_secs_f64()
    );
    linked
}

// ---- editing a copied tree ----------------------------------------------------------------

fn add_config(dir: &Path, text: &str) {
    let path = dir.join("acp-patch.toml");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, format!("{text}\n{old}")).unwrap();
}

fn edit(dir: &Path, rel: &str, from: &str, to: &str) {
    let path = dir.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{rel} lacks {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}
