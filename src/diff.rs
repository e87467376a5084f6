//! Unified diffs that `git apply` accepts.

use crate::plan::Plan;

/// The unified diff of one file, with git headers; empty when nothing changed.
pub fn unified(rel: &str, old: &str, new: &str) -> String {
    if old == new {
        return String::new();
    }
    let diff = similar::TextDiff::from_lines(old, new);
    let body = diff
        .unified_diff()
        .context_radius(3)
        .missing_newline_hint(true)
        .to_string();
    format!("diff --git a/{rel} b/{rel}\n--- a/{rel}\n+++ b/{rel}\n{body}")
}

/// The diff of a whole plan, files sorted by path: exactly what apply would write.
pub fn plan_diff(plan: &Plan) -> String {
    let mut files: Vec<_> = plan.files.iter().collect();
    files.sort_by(|a, b| a.file.rel.cmp(&b.file.rel));
    files
        .iter()
        .map(|fp| {
            unified(
                &fp.file.rel,
                &fp.file.original(),
                &fp.file.to_disk(&fp.new_text()),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn marks_missing_final_newline() {
        let d = super::unified("a.py", "x = 1\ny = 2", "x = 1\nz = 0\ny = 2");
        assert_eq!(
            d,
            "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n x = 1\n+z = 0\n y = 2\n\\ No newline at end of file\n"
        );
    }
}
