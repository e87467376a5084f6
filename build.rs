//! Generates one integration test per fixture case: every folder `fixtures/<lang>/<case>/`
//! holding a `case.toml` becomes `fixtures::<lang>__<case>`, run by `tests/it/fixtures.rs`.
//! A new shape is a folder, never code.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
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
    let mut out = String::new();
    for case in &cases {
        let name: String = case
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let name = name.replacen('_', "__", 1);
        writeln!(
            out,
            "#[test]\nfn {name}() {{\n    run_case({case:?});\n}}\n"
        )
        .expect("write to a String");
    }
    writeln!(out, "const CASES: &[&str] = &{cases:?};").expect("write to a String");
    let dest =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("fixture_cases.rs");
    std::fs::write(dest, out).expect("write the generated fixture tests");
}
