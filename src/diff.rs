//! Unified diffs that `git apply` accepts.

use crate::plan::Plan;

/// What a file diff does to the file, for its git headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Modify,
    Create,
    Delete,
}

/// The unified diff of one file, with git headers; empty when nothing changed.
pub fn unified(rel: &str, old: &str, new: &str) -> String {
    file_diff(rel, old, new, Change::Modify)
}

/// [`unified`] for a file that is created or deleted too (`/dev/null` on one side).
pub fn file_diff(rel: &str, old: &str, new: &str, change: Change) -> String {
    if old == new && change == Change::Modify {
        return String::new();
    }
    // lines as git and GNU patch read them: ended by `\n` only (a CR-only file is one line,
    // as `git diff` shows it; a lone `\r` never ends a hunk line)
    let (old_lines, new_lines) = (git_lines(old), git_lines(new));
    let body = hunks(&old_lines, &new_lines);
    let (a, b) = (quote_path("a/", rel), quote_path("b/", rel));
    let (mode, from, to) = match change {
        Change::Modify => (String::new(), a.clone(), b.clone()),
        Change::Create => (
            "new file mode 100644\n".to_string(),
            "/dev/null".to_string(),
            b.clone(),
        ),
        Change::Delete => (
            "deleted file mode 100644\n".to_string(),
            a.clone(),
            "/dev/null".to_string(),
        ),
    };
    format!("diff --git {a} {b}\n{mode}--- {from}\n+++ {to}\n{body}")
}

/// The hunks of a unified diff (3 lines of context) over lines that end in `\n` (the last
/// may not: then `\ No newline at end of file` follows it, as git writes it).
fn hunks(old: &[&str], new: &[&str]) -> String {
    use similar::ChangeTag;
    let ops = similar::capture_diff_slices(similar::Algorithm::Myers, old, new);
    let mut out = String::new();
    for group in similar::group_diff_ops(ops, 3) {
        let (first, last) = (&group[0], &group[group.len() - 1]);
        let (o0, n0) = (first.old_range().start, first.new_range().start);
        let (o1, n1) = (last.old_range().end, last.new_range().end);
        let range = |start: usize, len: usize| match len {
            0 => format!("{start},0"),
            1 => format!("{}", start + 1),
            _ => format!("{},{len}", start + 1),
        };
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(o0, o1 - o0),
            range(n0, n1 - n0)
        ));
        for op in &group {
            for (tag, line) in op_lines(op, old, new) {
                out.push(match tag {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                });
                out.push_str(line);
                if !line.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

/// The lines of one diff op: deletions before insertions.
fn op_lines<'a>(
    op: &similar::DiffOp,
    old: &[&'a str],
    new: &[&'a str],
) -> Vec<(similar::ChangeTag, &'a str)> {
    use similar::ChangeTag;
    let mut out = Vec::new();
    let (o, n) = (op.old_range(), op.new_range());
    match op.tag() {
        similar::DiffTag::Equal => out.extend(o.map(|i| (ChangeTag::Equal, old[i]))),
        _ => {
            out.extend(o.map(|i| (ChangeTag::Delete, old[i])));
            out.extend(n.map(|i| (ChangeTag::Insert, new[i])));
        }
    }
    out
}

/// A text's lines, each with its `\n` (the last one may have none).
fn git_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// `prefix` + `rel` as git writes a path in a diff: in double quotes with C escapes
/// (octal for control and non-ASCII bytes) when it holds any of them, `"` or `\`.
pub fn quote_path(prefix: &str, rel: &str) -> String {
    let plain = rel
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    if plain {
        return format!("{prefix}{rel}");
    }
    let mut out = format!("\"{prefix}");
    for b in rel.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x0b => out.push_str("\\v"),
            0x0c => out.push_str("\\f"),
            0x20..0x7f => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push('"');
    out
}

/// One file a plan changes: its bytes before and after, its diff and the pieces it gets.
#[derive(Debug, Clone)]
pub struct FileChange {
    pub rel: String,
    pub change: Change,
    /// On disk now (empty for a file the plan creates).
    pub before: String,
    /// What the plan writes (empty for a file it deletes).
    pub after: String,
    pub diff: String,
    /// The pieces of its edits, in plan order (e.g. `runtime module`, `send wrapped`).
    pub pieces: Vec<String>,
}

/// Every file of a plan, sorted by path: exactly what apply would write.
pub fn plan_changes(plan: &Plan) -> Vec<FileChange> {
    let mut files: Vec<_> = plan.files.iter().collect();
    files.sort_by(|a, b| a.file.rel.cmp(&b.file.rel));
    files
        .iter()
        .map(|fp| {
            let change = if fp.delete {
                Change::Delete
            } else if fp.creates() {
                Change::Create
            } else {
                Change::Modify
            };
            let after = if fp.delete {
                String::new()
            } else {
                fp.file.to_disk(&fp.new_text())
            };
            let before = fp.file.original();
            FileChange {
                rel: fp.file.rel.clone(),
                change,
                diff: file_diff(&fp.file.rel, &before, &after, change),
                before,
                after,
                pieces: fp.edits.iter().map(|e| e.piece.clone()).collect(),
            }
        })
        .collect()
}

/// The diff of a whole plan, files sorted by path: exactly what apply would write.
pub fn plan_diff(plan: &Plan) -> String {
    plan_changes(plan).into_iter().map(|c| c.diff).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_and_deleted_files_have_git_headers() {
        assert_eq!(
            file_diff("m.py", "", "a = 1\nb = 2\n", Change::Create),
            "diff --git a/m.py b/m.py\nnew file mode 100644\n--- /dev/null\n+++ b/m.py\n@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n"
        );
        assert_eq!(
            file_diff("m.py", "a = 1\n", "", Change::Delete),
            "diff --git a/m.py b/m.py\ndeleted file mode 100644\n--- a/m.py\n+++ /dev/null\n@@ -1 +0,0 @@\n-a = 1\n"
        );
    }

    #[test]
    fn quotes_paths_as_git_does() {
        assert_eq!(quote_path("a/", "src/x.py"), "a/src/x.py");
        assert_eq!(quote_path("a/", "with space.py"), "a/with space.py");
        assert_eq!(quote_path("b/", "tab\there.py"), "\"b/tab\\there.py\"");
        assert_eq!(quote_path("a/", "q\"b\\.py"), "\"a/q\\\"b\\\\.py\"");
        assert_eq!(quote_path("a/", "caf\u{e9}.py"), "\"a/caf\\303\\251.py\"");
    }

    #[test]
    fn a_cr_only_file_is_one_line_as_git_reads_it() {
        let d = super::unified("a.py", "x = 1\ry = 2\r", "x = 1\rz = 0\ry = 2\r");
        assert_eq!(
            d,
            "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\ry = 2\r\n\\ No newline at end of file\n+x = 1\rz = 0\ry = 2\r\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn marks_missing_final_newline() {
        let d = super::unified("a.py", "x = 1\ny = 2", "x = 1\nz = 0\ny = 2");
        assert_eq!(
            d,
            "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,2 +1,3 @@\n x = 1\n+z = 0\n y = 2\n\\ No newline at end of file\n"
        );
    }
}
