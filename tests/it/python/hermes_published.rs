//! Hermes Agent, exactly as published.

use super::*;

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

fn hermes_case(version: &str, snapshot: bool) {
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
    if snapshot {
        assert_snapshot(
            &fixture(&format!("python/hermes-{version}.placed.txt")),
            &placed,
        );
    }
    // the card opens at the prompt handler's entry (no longer only at the worker's top)
    assert!(
        placed.contains("acp_adapter/server.py:") && placed.contains("hook start at prompt entry"),
        "{placed}"
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

    // the patched agent starts: with the release's own install (hermes-agent[acp] from PyPI),
    // acp-patch's start-up check imports every patched module, and so does a fresh CPython
    let python = crate::smoke_python::hermes_venv(version);
    let python = path_str(&python);
    let with_own = acp_patch(&["verify", "--python", python, path_str(root)], None);
    assert_eq!(with_own.code, 0, "{}{}", with_own.stdout, with_own.stderr);
    let proven = started(&with_own.stdout);
    let home = tempfile::tempdir().unwrap();
    for rel in &changed {
        let module = rel.trim_end_matches(".py").replace('/', ".");
        assert!(proven.contains(&module), "{module} not started: {proven:?}");
        let out = std::process::Command::new(python)
            .args(["-B", "-c", &format!("import {module}")])
            .current_dir(root)
            .env("PYTHONPATH", root)
            .env("HOME", home.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stdout.is_empty(),
            "hermes {version}: `import {module}` (patched):\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
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

    // revert gives the release back byte for byte; a second revert has nothing to do
    let reverted = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(reverted.code, 0, "{}", reverted.stderr);
    assert!(
        reverted.stderr.contains("acp-patch: removed "),
        "{}",
        reverted.stderr
    );
    assert_same_tree(root, &src);
    let twice = acp_patch(&["revert", path_str(root)], None);
    assert_eq!(twice.code, 0, "{}", twice.stderr);
    assert!(
        twice.stderr.contains("nothing to revert"),
        "{}",
        twice.stderr
    );
}

#[test]
fn hermes_0_19_0_split_layout() {
    hermes_case("0.19.0", true);
}

#[test]
fn hermes_0_14_0_monolithic_layout() {
    hermes_case("0.14.0", true);
}

/// Every other Hermes release (0.13–0.18), in the long mode: `ACP_PATCH_REAL_AGENTS=full`.
#[test]
fn hermes_every_release() {
    if std::env::var("ACP_PATCH_REAL_AGENTS").as_deref() != Ok("full") {
        eprintln!("skipped: set ACP_PATCH_REAL_AGENTS=full to patch every Hermes release");
        return;
    }
    for version in ["0.13.0", "0.15.2", "0.16.0", "0.17.0", "0.18.2"] {
        hermes_case(version, false);
    }
}
