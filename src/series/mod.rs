//! `apply --format patch`: the change as a `git format-patch` series (an mbox) that a
//! maintainer can review and `git am`. The runtime module(s) come first — nothing calls them
//! yet, so that commit changes no behaviour — then the call edits; each message says what
//! users see before and after, how to turn it off, and (`--smoke`) the smoke run's figures.

mod message;
mod stamp;

use crate::commands::{ApplyOptions, ApplyOutcome};
use crate::diff::FileChange;
use crate::error::Result;
use crate::smoke::report::SmokeReport;
use std::fmt::Write as _;
use std::path::Path;

pub use stamp::rfc2822;

/// The pieces that make up the runtime: a module apply writes whole, and what it needs to
/// build (tokio's timer feature in a Rust agent's `Cargo.toml`). A file holding only these
/// goes into the first commit.
const RUNTIME_PIECES: &[&str] = &["runtime module", "tokio time feature"];

/// The smoke run on the tree before apply wrote and after.
#[derive(Debug, Clone)]
pub struct SmokeComparison {
    pub before: std::result::Result<SmokeReport, String>,
    pub after: std::result::Result<SmokeReport, String>,
}

/// Who sends the series and where it applies.
#[derive(Debug, Clone)]
pub struct Origin {
    /// `Name <email>`: the tree's git identity, else acp-patch's.
    pub author: String,
    /// RFC 2822, as `git format-patch` writes it.
    pub date: String,
    /// The commit the series applies to (`base-commit:`), in a git checkout.
    pub base_commit: Option<String>,
    /// The agent's folder below the repository's top (`agents/foo/`), so that the paths
    /// in the series are the repository's; empty outside a git checkout.
    pub prefix: String,
}

impl Origin {
    /// Read from the git checkout `root` is in, if any.
    pub fn of(root: &Path) -> Self {
        let git = |args: &[&str]| -> Option<String> {
            crate::write::git_output(root, args)
                .map(|out| String::from_utf8_lossy(&out).trim_end().to_string())
        };
        // `Name <email> 1764624017 +0100`
        let ident = git(&["var", "GIT_AUTHOR_IDENT"]).and_then(|i| stamp::split_ident(&i));
        let (author, date) = match ident {
            Some((who, secs, offset)) => (who, rfc2822(secs, offset)),
            None => (
                "acp-patch <acp-patch@localhost>".to_string(),
                rfc2822(stamp::now(), 0),
            ),
        };
        Self {
            author,
            date,
            base_commit: git(&["rev-parse", "--verify", "-q", "HEAD"]),
            prefix: git(&["rev-parse", "--show-prefix"]).unwrap_or_default(),
        }
    }
}

/// One commit of the series.
struct Commit<'a> {
    subject: String,
    body: String,
    files: Vec<&'a FileChange>,
}

/// Whether a file's change belongs to the runtime commit.
fn is_runtime(change: &FileChange) -> bool {
    !change.pieces.is_empty()
        && change
            .pieces
            .iter()
            .all(|p| RUNTIME_PIECES.contains(&p.as_str()))
}

/// The series as an mbox; empty when the outcome changes nothing.
pub fn series(outcome: &ApplyOutcome, origin: &Origin, smoke: Option<&SmokeComparison>) -> String {
    let (runtime, calls): (Vec<&FileChange>, Vec<&FileChange>) =
        outcome.changes.iter().partition(|c| is_runtime(c));
    let mut commits = Vec::new();
    if !runtime.is_empty() {
        commits.push(Commit {
            subject: message::RUNTIME_SUBJECT.to_string(),
            body: message::runtime_body(&runtime, !calls.is_empty()),
            files: runtime,
        });
    }
    if !calls.is_empty() {
        commits.push(Commit {
            subject: message::CALLS_SUBJECT.to_string(),
            body: message::calls_body(outcome, smoke),
            files: calls,
        });
    }
    let total = commits.len();
    let mut out = String::new();
    for (i, commit) in commits.iter().enumerate() {
        let number = if total > 1 {
            format!("[PATCH {}/{total}]", i + 1)
        } else {
            "[PATCH]".to_string()
        };
        let last = i + 1 == total;
        write_patch(&mut out, origin, &number, commit, last);
    }
    out
}

fn write_patch(out: &mut String, origin: &Origin, number: &str, commit: &Commit, last: bool) {
    // the fixed "From <zeros> <magic date>" line git format-patch writes for mailsplit
    let _ = writeln!(
        out,
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
    );
    let _ = writeln!(out, "From: {}", origin.author);
    let _ = writeln!(out, "Date: {}", origin.date);
    let _ = writeln!(out, "Subject: {number} {}", commit.subject);
    let _ = writeln!(out, "MIME-Version: 1.0");
    let _ = writeln!(out, "Content-Type: text/plain; charset=UTF-8");
    let _ = writeln!(out, "Content-Transfer-Encoding: 8bit");
    let _ = writeln!(out);
    out.push_str(&commit.body);
    let _ = writeln!(out, "---");
    out.push_str(&diffstat(origin, &commit.files));
    let _ = writeln!(out);
    for f in &commit.files {
        let path = format!("{}{}", origin.prefix, f.rel);
        out.push_str(&crate::diff::file_diff(
            &path, &f.before, &f.after, f.change,
        ));
    }
    if last && let Some(base) = &origin.base_commit {
        let _ = writeln!(out, "\nbase-commit: {base}");
    }
    let _ = writeln!(out, "-- \nacp-patch {}\n", crate::VERSION);
}

/// ` path | 12 +++++---` per file and the totals line, as git prints them.
fn diffstat(origin: &Origin, files: &[&FileChange]) -> String {
    let counts: Vec<(String, usize, usize)> = files
        .iter()
        .map(|f| {
            let diff = similar::TextDiff::from_lines(&f.before, &f.after);
            let (mut ins, mut del) = (0, 0);
            for change in diff.iter_all_changes() {
                match change.tag() {
                    similar::ChangeTag::Insert => ins += 1,
                    similar::ChangeTag::Delete => del += 1,
                    similar::ChangeTag::Equal => {}
                }
            }
            (format!("{}{}", origin.prefix, f.rel), ins, del)
        })
        .collect();
    let width = counts
        .iter()
        .map(|c| c.0.chars().count())
        .max()
        .unwrap_or(0);
    let most = counts.iter().map(|c| c.1 + c.2).max().unwrap_or(0).max(1);
    let digits = most.to_string().len();
    let bar = 50usize;
    let mut out = String::new();
    let (mut ins_total, mut del_total) = (0, 0);
    for (path, ins, del) in &counts {
        let scale = |n: usize| {
            if most <= bar {
                n
            } else {
                (n * bar).div_ceil(most)
            }
        };
        let _ = writeln!(
            out,
            " {path:width$} | {:>digits$} {}{}",
            ins + del,
            "+".repeat(scale(*ins)),
            "-".repeat(scale(*del))
        );
        ins_total += ins;
        del_total += del;
    }
    let plural = |n: usize, one: &str, many: &str| {
        if n == 1 {
            format!("{n} {one}")
        } else {
            format!("{n} {many}")
        }
    };
    let mut totals = format!(" {}", plural(counts.len(), "file changed", "files changed"));
    if ins_total > 0 {
        totals.push_str(&format!(
            ", {}",
            plural(ins_total, "insertion(+)", "insertions(+)")
        ));
    }
    if del_total > 0 {
        totals.push_str(&format!(
            ", {}",
            plural(del_total, "deletion(-)", "deletions(-)")
        ));
    }
    let _ = writeln!(out, "{totals}");
    out
}

/// Whether `git am` needs `--keep-cr` for this series (it strips a CR before each newline
/// otherwise, and the patched files would not be byte for byte what apply writes).
pub fn needs_keep_cr(outcome: &ApplyOutcome) -> bool {
    outcome
        .changes
        .iter()
        .any(|c| c.before.contains("\r\n") || c.after.contains("\r\n"))
}

/// `apply --format patch --smoke`: the smoke run on the tree as it is, then apply (which
/// writes), then the smoke run on the patched tree. Nothing to do: no run at all.
pub fn apply_with_smoke(
    root: &Path,
    opts: &ApplyOptions,
) -> Result<(ApplyOutcome, Option<SmokeComparison>)> {
    let planned = crate::commands::apply(
        root,
        &ApplyOptions {
            dry_run: true,
            ..opts.clone()
        },
    )?;
    if planned.nothing_to_do() {
        return Ok((planned, None));
    }
    let before = smoke_run(root);
    let outcome = crate::commands::apply(root, opts)?;
    let after = smoke_run(root);
    Ok((outcome, Some(SmokeComparison { before, after })))
}

/// The smoke run with the folder's own settings (`[smoke]` in its acp-patch.toml, or the
/// preset detected from it), as `verify --smoke` runs it.
fn smoke_run(root: &Path) -> std::result::Result<SmokeReport, String> {
    let opts = crate::smoke::SmokeOptions {
        path: root.to_path_buf(),
        overrides: Default::default(),
    };
    crate::smoke::run(&opts).map_err(|e| e.to_string())
}
