//! Did the run leave a trace in the agent's folder? A before/after listing of its files
//! (size, modification time, link target); in a git work tree only the files git would
//! show (tracked, or untracked and not ignored), plus `git status` itself.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Files listed at most (a bigger tree is compared up to this many).
const MAX_FILES: usize = 200_000;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File { len: u64, mtime_ns: i128 },
    Link(String),
    Dir,
}

/// The folder's state at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeState {
    entries: BTreeMap<String, Entry>,
    /// `git status --porcelain` of the folder, when it is in a git work tree.
    git_status: Option<String>,
    pub truncated: bool,
}

impl TreeState {
    pub fn capture(dir: &Path) -> Self {
        let mut s = TreeState::default();
        match git_files(dir) {
            Some(files) => {
                for rel in files.into_iter().take(MAX_FILES) {
                    if let Some(e) = entry(&dir.join(&rel)) {
                        s.entries.insert(rel, e);
                    }
                }
                s.git_status = git_status(dir);
            }
            None => walk(dir, dir, &mut s),
        }
        s
    }

    /// Whether `git status` was part of the comparison.
    pub fn in_git(&self) -> bool {
        self.git_status.is_some()
    }

    pub fn files(&self) -> usize {
        self.entries.len()
    }

    /// What changed from `self` to `after`, one line each.
    pub fn changes(&self, after: &TreeState) -> Vec<String> {
        let mut out = Vec::new();
        for (k, v) in &after.entries {
            match self.entries.get(k) {
                None => out.push(format!("added {k}")),
                Some(old) if old != v => out.push(format!("modified {k}")),
                _ => {}
            }
        }
        for k in self.entries.keys() {
            if !after.entries.contains_key(k) {
                out.push(format!("removed {k}"));
            }
        }
        if let (Some(a), Some(b)) = (&self.git_status, &after.git_status)
            && a != b
            && out.is_empty()
        {
            out.push(format!(
                "git status changed: before {:?}, after {:?}",
                a.replace('\0', " "),
                b.replace('\0', " ")
            ));
        }
        out
    }
}

fn entry(p: &Path) -> Option<Entry> {
    let m = std::fs::symlink_metadata(p).ok()?;
    if m.file_type().is_symlink() {
        return Some(Entry::Link(
            std::fs::read_link(p)
                .map(|t| t.display().to_string())
                .unwrap_or_default(),
        ));
    }
    if m.is_dir() {
        return Some(Entry::Dir);
    }
    use std::os::unix::fs::MetadataExt;
    Some(Entry::File {
        len: m.len(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
    })
}

fn walk(root: &Path, dir: &Path, s: &mut TreeState) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut children: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    children.sort();
    for p in children {
        if s.entries.len() >= MAX_FILES {
            s.truncated = true;
            return;
        }
        if p.file_name().is_some_and(|n| n == ".git") {
            continue;
        }
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        let Some(e) = entry(&p) else { continue };
        let is_dir = e == Entry::Dir;
        s.entries.insert(rel, e);
        if is_dir {
            walk(root, &p, s);
        }
    }
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn git_files(dir: &Path) -> Option<Vec<String>> {
    let inside = git(dir, &["rev-parse", "--is-inside-work-tree"])?;
    if inside.trim() != "true" {
        return None;
    }
    // a folder git ignores (say under target/) is compared file by file instead
    if git(dir, &["check-ignore", "-q", "."]).is_some() {
        return None;
    }
    let out = git(
        dir,
        &[
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ],
    )?;
    let mut files: Vec<String> = out
        .split('\0')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    // a new folder with nothing in it yet (an agent's state dir) is a trace too; git lists
    // files only, so ask for untracked folders as well (`dir/`)
    let dirs = git(
        dir,
        &[
            "ls-files",
            "-z",
            "--others",
            "--exclude-standard",
            "--directory",
        ],
    )?;
    files.extend(
        dirs.split('\0')
            .filter(|s| s.ends_with('/'))
            .map(|s| s.trim_end_matches('/').to_string()),
    );
    files.sort();
    files.dedup();
    Some(files)
}

fn git_status(dir: &Path) -> Option<String> {
    git(
        dir,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--",
            ".",
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additions_changes_and_removals_are_listed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a"), "1").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/b"), "2").unwrap();
        let before = TreeState::capture(d.path());
        assert!(!before.in_git());
        assert_eq!(before.files(), 3);
        assert!(before.changes(&TreeState::capture(d.path())).is_empty());
        std::fs::write(d.path().join("a"), "11").unwrap();
        std::fs::remove_file(d.path().join("sub/b")).unwrap();
        std::fs::create_dir(d.path().join(".hidden-home")).unwrap();
        std::fs::write(d.path().join(".hidden-home/config.yaml"), "x").unwrap();
        let ch = before.changes(&TreeState::capture(d.path()));
        assert_eq!(
            ch,
            vec![
                "added .hidden-home",
                "added .hidden-home/config.yaml",
                "modified a",
                "removed sub/b"
            ]
        );
    }

    #[test]
    fn in_git_ignored_files_do_not_count() {
        let d = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            assert!(
                Command::new("git")
                    .args(args)
                    .current_dir(d.path())
                    .output()
                    .unwrap()
                    .status
                    .success()
            )
        };
        run(&["init", "-q"]);
        std::fs::write(d.path().join(".gitignore"), "target/\n").unwrap();
        std::fs::write(d.path().join("main.py"), "x").unwrap();
        let before = TreeState::capture(d.path());
        assert!(before.in_git());
        std::fs::create_dir(d.path().join("target")).unwrap();
        std::fs::write(d.path().join("target/out"), "x").unwrap();
        assert!(before.changes(&TreeState::capture(d.path())).is_empty());
        std::fs::write(d.path().join("new.txt"), "x").unwrap();
        assert_eq!(
            before.changes(&TreeState::capture(d.path())),
            vec!["added new.txt"]
        );
        std::fs::create_dir_all(d.path().join(".state/sessions")).unwrap();
        assert_eq!(
            before.changes(&TreeState::capture(d.path())),
            vec!["added .state", "added new.txt"]
        );
    }
}
