//! Two things the build needs from outside the sources:
//! - one integration test per fixture case: every folder `fixtures/<lang>/<case>/` holding a
//!   `case.toml` becomes the test `fixtures::<lang>::<case>`, run by `tests/it/fixtures.rs`
//!   (a new shape is a folder, never code);
//! - the version `--version` prints, naming the commit the binary was built from
//!   (`ACP_PATCH_VERSION`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    fixture_tests();
    version();
}

/// `0.1.0 (0c13cb2a1b2c 2026-12-01)`, as cargo and rustc say theirs. The commit comes from
/// git when the crate is the top of its own checkout; else from `.cargo_vcs_info.json`,
/// which `cargo package` writes into a packaged crate (no date there); else none.
fn version() {
    let version = std::env::var("CARGO_PKG_VERSION").expect("cargo sets CARGO_PKG_VERSION");
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let built_from = git_commit(&dir).or_else(|| packaged_commit(&dir));
    let full = match built_from {
        Some(commit) => format!("{version} ({commit})"),
        None => version,
    };
    println!("cargo:rustc-env=ACP_PATCH_VERSION={full}");
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

/// The checked-out commit and its date, when `dir` is the top of a git work tree (not a
/// packaged copy below another checkout, such as `target/package/`).
fn git_commit(dir: &Path) -> Option<String> {
    let top = PathBuf::from(git(dir, &["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    // rebuild when the checked-out commit moves: HEAD, the branch it names, packed refs
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(dir, &["symbolic-ref", "-q", "HEAD"]));
    for name in watched {
        if let Some(path) = git(dir, &["rev-parse", "--git-path", &name]) {
            let path = dir.join(path);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    git(
        dir,
        &[
            "log",
            "-1",
            "--no-show-signature",
            "--format=%h %cs",
            "--abbrev=12",
        ],
    )
}

fn packaged_commit(dir: &Path) -> Option<String> {
    let path = dir.join(".cargo_vcs_info.json");
    let info = std::fs::read_to_string(&path).ok()?;
    // `cargo package` builds its copy in the checkout's target dir, where this build
    // script's output is shared with the checkout's: a path that exists only in the copy
    // makes the checkout's next build run it again (a missing file counts as changed)
    println!("cargo:rerun-if-changed={}", path.display());
    let sha = info.split("\"sha1\"").nth(1)?.split('"').nth(1)?;
    (sha.len() >= 12 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then(|| sha[..12].to_string())
}

fn fixture_tests() {
    println!("cargo:rerun-if-changed=fixtures");
    let mut cases = Vec::new();
    for lang in ["python", "typescript", "rust"] {
        let dir = Path::new("fixtures").join(lang);
        println!("cargo:rerun-if-changed={}", dir.display());
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().join("case.toml").is_file() {
                cases.push(format!("{lang}/{}", entry.file_name().to_string_lossy()));
            }
        }
    }
    cases.sort();
    // one module per language: the tests are `fixtures::<lang>::<case>`
    let mut out = String::new();
    for lang in ["python", "typescript", "rust"] {
        let mine: Vec<&String> = cases
            .iter()
            .filter(|c| c.starts_with(&format!("{lang}/")))
            .collect();
        if mine.is_empty() {
            continue;
        }
        writeln!(out, "mod {lang} {{\n    use super::run_case;\n").expect("write to a String");
        for case in mine {
            let name: String = case[lang.len() + 1..]
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() {
                        c.to_ascii_lowercase()
                    } else {
                        '_'
                    }
                })
                .collect();
            writeln!(
                out,
                "    #[test]\n    fn {name}() {{\n        run_case({case:?});\n    }}\n"
            )
            .expect("write to a String");
        }
        writeln!(out, "}}\n").expect("write to a String");
    }
    writeln!(out, "const CASES: &[&str] = &{cases:?};").expect("write to a String");
    let dest =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("fixture_cases.rs");
    std::fs::write(dest, out).expect("write the generated fixture tests");
}
