//! Runs the Python unit tests of the inserted code (templates/python) with the test venv.

use std::path::Path;
use std::process::Command;

#[test]
fn python_template_unit_tests_pass() {
    let python = std::env::var_os("ACP_PATCH_TEST_PYTHON").unwrap_or_else(|| {
        panic!(
            "ACP_PATCH_TEST_PYTHON is not set: run scripts/test.sh (it provisions the Python venv)"
        )
    });
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(&python)
        .args(["-m", "unittest", "discover", "-s", "tests/python", "-v"])
        .current_dir(root)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", Path::new(&python).display()));
    // unittest reports on stderr.
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "Python template tests failed ({}):\n{report}",
        out.status
    );
    let ran = report
        .lines()
        .find_map(|l| {
            l.strip_prefix("Ran ")?
                .split_whitespace()
                .next()?
                .parse::<u32>()
                .ok()
        })
        .unwrap_or(0);
    assert!(
        ran > 0 && report.contains("\nOK"),
        "no Python tests ran:\n{report}"
    );
}
