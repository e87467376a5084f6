//! verify and revert judge a tree alike: whatever revert refuses (a piece duplicated, edited,
//! deleted or moved by hand), verify fails, naming the same `file:line`. Checked on a patched
//! agent of each language by mutating every line apply inserted, in every way a hand can.

use crate::support::{acp_patch, copy_tree, fixture, path_str};
use std::path::Path;

/// The agents: one per language, each patched by apply first.
const AGENTS: &[&str] = &[
    "python/asyncio_agent/before",
    "typescript/sdk2_agent/before",
    "rust/trait_agent/before",
];

/// Lines of `patched` (0-based) that apply inserted or changed.
fn inserted_lines(original: &str, patched: &str) -> Vec<usize> {
    let diff = similar::TextDiff::from_lines(original, patched);
    let mut out = Vec::new();
    for op in diff.ops() {
        if let similar::DiffOp::Insert {
            new_index, new_len, ..
        }
        | similar::DiffOp::Replace {
            new_index, new_len, ..
        } = *op
        {
            out.extend(new_index..new_index + new_len);
        }
    }
    out
}

/// At most `n` of `items`, spread over the whole list (first and last included).
fn spread(items: &[usize], n: usize) -> Vec<usize> {
    if items.len() <= n {
        return items.to_vec();
    }
    (0..n)
        .map(|k| items[k * (items.len() - 1) / (n - 1)])
        .collect()
}

/// Every hand edit of line `i`: doubled, edited, deleted, moved down one line.
fn mutants(text: &str, i: usize) -> Vec<(String, String)> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let with = |f: &dyn Fn(&mut Vec<String>)| {
        let mut l: Vec<String> = lines.iter().map(|s| s.to_string()).collect();
        f(&mut l);
        l.concat()
    };
    let mut out = vec![
        ("doubled".to_string(), with(&|l| l.insert(i, l[i].clone()))),
        (
            "edited".to_string(),
            with(&|l| {
                let end = l[i].trim_end_matches(['\r', '\n']).len();
                l[i].insert(end, ' ');
            }),
        ),
        ("deleted".to_string(), with(&|l| drop(l.remove(i)))),
    ];
    if i + 1 < lines.len() {
        out.push(("moved".to_string(), with(&|l| l.swap(i, i + 1))));
    }
    out
}

/// Every mutant of the patched tree in `dir` that revert refuses must fail verify with the
/// location revert names; returns how many revert refused.
fn check_agrees(dir: &Path, rel: &str, text: &str, why: &str, summary: bool) -> usize {
    let path = dir.join(rel);
    let original = std::fs::read(&path).unwrap();
    std::fs::write(&path, text).unwrap();
    let d = path_str(dir);
    let revert = acp_patch(&["revert", "--dry-run", "--format", "json", d], None);
    let refused = if revert.code == 0 {
        0
    } else {
        let doc: serde_json::Value = serde_json::from_str(&revert.stdout)
            .unwrap_or_else(|e| panic!("{why}: revert's JSON: {e}\n{}", revert.stdout));
        let at = &doc["error"]["location"];
        let place = format!("{}:{}", at["file"].as_str().unwrap_or("?"), at["line"]);
        let verify = acp_patch(&["verify", "--format", "json", d], None);
        assert_ne!(
            verify.code, 0,
            "{why}: revert refuses ({}) but verify holds:\n{}",
            doc["error"]["message"], verify.stdout
        );
        assert!(
            verify.stdout.contains(&place),
            "{why}: revert refuses at {place} ({}), verify does not name it:\n{}",
            doc["error"]["message"],
            verify.stdout
        );
        if summary {
            // its summary's advice is what works: apply cannot mend what revert refuses
            let text = acp_patch(&["verify", d], None);
            let last = text.stdout.lines().last().unwrap_or_default();
            assert!(
                last.contains("`acp-patch revert` refuses the tree as it is and `acp-patch apply` cannot mend it")
                    || last.contains("edited by hand"),
                "{why}: verify's summary:\n{}",
                text.stdout
            );
        }
        1
    };
    std::fs::write(&path, original).unwrap();
    refused
}

#[test]
fn verify_fails_whatever_revert_refuses_with_the_same_file_and_line() {
    for agent in AGENTS {
        let before = fixture(agent);
        let dir = copy_tree(&before);
        let applied = acp_patch(&["apply", "--allow-dirty", path_str(dir.path())], None);
        assert_eq!(applied.code, 0, "{agent}: {}", applied.stderr);
        let mut refused = 0;
        let mut tried = 0;
        for file in crate::support::walk(dir.path()) {
            let rel = file
                .strip_prefix(dir.path())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let patched = std::fs::read_to_string(&file).unwrap_or_default();
            let original = std::fs::read_to_string(before.join(&rel)).unwrap_or_default();
            if patched == original {
                continue;
            }
            // a runtime module apply created: a few of its lines; an agent file: every one
            let lines = inserted_lines(&original, &patched);
            let n = if original.is_empty() { 4 } else { 12 };
            for i in spread(&lines, n) {
                for (how, text) in mutants(&patched, i) {
                    let why = format!("{agent}: {rel}:{} {how}", i + 1);
                    refused += check_agrees(dir.path(), &rel, &text, &why, false);
                    tried += 1;
                }
            }
            // the emitter wrapped twice
            for (once, twice) in [
                (
                    "acp_progress.emitter(",
                    "acp_progress.emitter(acp_progress.emitter(",
                ),
                (
                    "acpProgress.emitter(",
                    "acpProgress.emitter(acpProgress.emitter(",
                ),
                (".acp_progress()", ".acp_progress().acp_progress()"),
            ] {
                if !original.is_empty() && patched.contains(once) {
                    let text = patched.replacen(once, twice, 1);
                    let text = if once.starts_with('.') {
                        text
                    } else {
                        let at = text.find(twice).unwrap() + twice.len();
                        let close = at + text[at..].find(')').unwrap();
                        format!("{})){}", &text[..close], &text[close + 1..])
                    };
                    let why = format!("{agent}: {rel} {once} doubled");
                    let n = check_agrees(dir.path(), &rel, &text, &why, true);
                    assert_eq!(n, 1, "{why}: revert should refuse it");
                    refused += n;
                    tried += 1;
                }
            }
        }
        // the battery must have bitten: most hand edits of inserted code are refused
        assert!(
            refused * 2 > tried,
            "{agent}: revert refused only {refused} of {tried} mutants"
        );
    }
}
