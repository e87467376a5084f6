//! TypeScript agents beyond the fixture cases (fixtures/typescript/<case>/, run by
//! tests/it/fixtures.rs): the error and pin cases, the style cases, and the real agents (pi-acp
//! rebuilt from its npm package; claude-agent-acp from its sources when they are at hand).

mod errors;
mod placement;
mod real;
mod style;

/// pi-acp's sources, rebuilt from its npm package (the smoke preset tests use them too).
#[allow(unused_imports)]
pub(crate) use real::pi_acp;

use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

pub(crate) fn before(name: &str) -> PathBuf {
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

/// `tsc --noEmit -p dir` with the TypeScript of the provisioned `deps`: it must typecheck.
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
pub(crate) fn typecheck_copy(tree: &Path, deps: &str) {
    let dir = copy_tree(tree);
    link_node_modules(dir.path(), deps);
    tsc(dir.path(), deps);
}

/// A patched copy of a fixture's before/ tree.
pub(crate) fn applied(name: &str) -> tempfile::TempDir {
    let dir = copy_tree(&before(name));
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    dir
}

/// The files of a tree as text, by relative path (for reading a patched file).
pub(crate) fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn edit(dir: &Path, rel: &str, from: &str, to: &str) {
    let text = read(dir, rel);
    assert!(text.contains(from), "{rel} lacks {from:?}");
    write(dir, rel, &text.replacen(from, to, 1));
}

fn verify(dir: &Path) -> Run {
    acp_patch(&["verify", path_str(dir)], None)
}
