//! Generates one integration test per fixture case: every folder `fixtures/<lang>/<case>/`
//! holding a `case.toml` becomes the test `fixtures::<lang>::<case>`, run by `tests/it/fixtures.rs`.
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
