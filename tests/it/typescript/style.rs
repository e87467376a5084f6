//! Inserted code in the agent's own style: indentation, line endings, quotes, semicolons, BOM.
//! Each case rewrites every source file of the 2.x fixture, applies, and checks that every
//! original byte survives in order, the added lines follow the style, the result typechecks,
//! verify passes and a second apply is a no-op.

use super::*;

fn sources(dir: &Path) -> Vec<PathBuf> {
    walk(&dir.join("src"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ts"))
        .collect()
}

fn style_case(transform: impl Fn(&str) -> String, check: impl Fn(&str, &str)) {
    let dir = copy_tree(&before("sdk2_agent"));
    let mut originals = Vec::new();
    for path in sources(dir.path()) {
        let original = transform(&std::fs::read_to_string(&path).unwrap());
        std::fs::write(&path, &original).unwrap();
        originals.push((path, original));
    }
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut added = String::new();
    for (path, original) in &originals {
        let patched = std::fs::read_to_string(path).unwrap();
        assert!(
            only_insertions(original, &patched),
            "untouched bytes changed in {}",
            path.display()
        );
        let inserted: String = similar::TextDiff::from_lines(original, &patched)
            .iter_all_changes()
            .filter(|c| c.tag() == similar::ChangeTag::Insert)
            .map(|c| c.value().to_string())
            .collect();
        check(&patched, &inserted);
        added.push_str(&inserted);
    }
    assert!(
        added.contains("acpProgress"),
        "nothing was inserted into the agent's files"
    );
    let module = std::fs::read_to_string(dir.path().join("src/acp-progress.ts")).unwrap();
    check(&module, &module);
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    let v = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(v.code, 0, "{}", v.stdout);
    link_node_modules(dir.path(), "sdk2_agent");
    tsc(dir.path(), "sdk2_agent");
}

/// The code of a line without a trailing `//` comment (good enough for the templates).
fn code_of(line: &str) -> &str {
    let t = line.trim_start();
    if t.starts_with("//") || t.starts_with("/*") || t.starts_with('*') {
        return "";
    }
    line.split(" // ").next().unwrap_or(line)
}

/// Whether a line holds a template literal (its quotes are the text's, not the style's).
fn in_template(line: &str) -> bool {
    line.contains('`')
}

#[test]
fn style_tabs_are_kept() {
    style_case(
        |s| {
            s.lines()
                .map(|l| {
                    let n = l.len() - l.trim_start_matches(' ').len();
                    format!("{}{}\n", "\t".repeat(n / 2), &l[n / 2 * 2..])
                })
                .collect()
        },
        |_, added| {
            assert!(
                // JSDoc continuation lines (` * ...`) align with their `/**`
                added
                    .lines()
                    .all(|l| !l.starts_with(' ') || l.trim_start().starts_with('*')),
                "a space-indented line was inserted:\n{added}"
            );
        },
    );
}

#[test]
fn style_crlf_is_kept() {
    style_case(
        |s| s.replace('\n', "\r\n"),
        |patched, _| {
            assert_eq!(
                patched.matches('\n').count(),
                patched.matches("\r\n").count(),
                "a bare LF was inserted"
            )
        },
    );
}

#[test]
fn style_single_quotes_are_kept() {
    style_case(
        |s| {
            s.lines()
                .map(|l| {
                    if l.contains('\'') || in_template(l) {
                        format!("{l}\n")
                    } else {
                        format!("{}\n", l.replace('"', "'"))
                    }
                })
                .collect()
        },
        |_, added| {
            for l in added.lines().filter(|l| !in_template(l)) {
                let code = code_of(l);
                // a double quote is kept only inside a string it cannot be swapped in
                assert!(
                    !code.contains('"') || code.contains("'\"") || code.contains("\"'"),
                    "double quote inserted: {l}"
                );
            }
        },
    );
}

#[test]
fn style_double_quotes_are_kept() {
    style_case(
        |s| s.to_string(),
        |_, added| {
            for l in added.lines().filter(|l| !in_template(l)) {
                assert!(!code_of(l).contains('\''), "single quote inserted: {l}");
            }
        },
    );
}

#[test]
fn style_no_semicolons_is_kept() {
    style_case(
        |s| {
            s.lines()
                .map(|l| format!("{}\n", l.strip_suffix(';').unwrap_or(l)))
                .collect()
        },
        |_, added| {
            for l in added.lines() {
                assert!(
                    !code_of(l).trim_end().ends_with(';'),
                    "semicolon inserted: {l}"
                );
            }
        },
    );
}

#[test]
fn style_bom_and_no_final_newline_are_kept() {
    style_case(
        |s| format!("\u{feff}{}", s.trim_end()),
        |patched, _| {
            if patched.starts_with("// acp-patch: runtime module") {
                return; // the module is ours: no BOM
            }
            assert!(patched.starts_with('\u{feff}'));
            assert_eq!(patched.matches('\u{feff}').count(), 1);
            assert!(!patched.ends_with('\n'));
        },
    );
}
