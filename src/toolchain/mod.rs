//! What the languages' toolchain checks share (each language's own is in
//! `lang/<language>/toolchain.rs`; `--check-build` is in `commands/apply.rs`). The in-process parsers (tree-sitter, syn) accept code the
//! real compiler rejects, and code that compiles can still kill the agent at start (an
//! import cycle), so apply runs each language's start-up check on the tree as the plan leaves
//! it and, with `--check-build`, type-checks / builds a temporary copy of the patched tree.

pub mod cache;

use crate::error::Result;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// One file as apply would leave it.
#[derive(Debug, Clone)]
pub struct Patched {
    pub rel: String,
    /// The bytes on disk now (`None` for a file the plan creates).
    pub before: Option<String>,
    /// The bytes apply writes.
    pub after: String,
}

/// A compile failure of one file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct Failure {
    pub line: usize,
    pub message: String,
}

/// The tree before the patch, file by file, asked for only when a check fails: relative path
/// → its text unpatched (`None` for a file the patch creates); a file not listed is the same
/// patched and unpatched. `None` when it cannot be told (verify derives it by revert's
/// removal plan, which refuses a hand-edited piece).
pub type Unpatched<'a> = &'a dyn Fn() -> Option<HashMap<String, Option<String>>>;

/// What a start-up check established: the modules (Python) or files (TypeScript) proven to
/// load, and what to tell the user (no interpreter, a module that fails unpatched too).
/// Failures blamed on the patch are errors ([`Error::WouldNotCompile`],
/// [`Error::WouldNotStart`]).
#[derive(Debug, Clone, Default)]
pub struct Startup {
    /// Whether the language has a start-up check (verify then shows its `starts` row).
    pub applies: bool,
    /// What was started (Python: modules imported; TypeScript: files).
    pub proven: Vec<String>,
    /// What could not be started here, each `what: not started here (why, briefly)`; the
    /// notes say it in full.
    pub not_started: Vec<String>,
    pub notes: Vec<String>,
}

pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Waits for a child, ending its whole process group (what it started included) once it
/// exits or after `timeout`; `None` when it timed out.
pub fn wait_group(
    mut child: std::process::Child,
    timeout: std::time::Duration,
) -> std::io::Result<Option<std::process::Output>> {
    use std::io::Read;
    let pid = child.id() as i32;
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut buf);
        }
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut buf);
        }
        buf
    });
    let deadline = std::time::Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if std::time::Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    // the group: anything the checked code started (it may hold the pipes open)
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
    let status = match status {
        Some(s) => s,
        None => {
            let _ = child.wait();
            return Ok(None);
        }
    };
    Ok(Some(std::process::Output {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    }))
}

const LINKED: &[&str] = &["node_modules", ".venv", "venv"];
const SKIPPED: &[&str] = &[".git", "target", "__pycache__"];

/// The entries of the agent's tree a copy holds, as [`copy_tree`] meets them: every file,
/// whatever an ignore file says (a module git ignores — generated, or a venv's `*` above an
/// installed package — is still imported at run time), but no VCS folder, build output or
/// bytecode, and installed packages (`node_modules`, venvs) not walked into (they are linked).
fn copied_entries(from: &Path) -> impl Iterator<Item = ignore::DirEntry> {
    ignore::WalkBuilder::new(from)
        .standard_filters(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            !(SKIPPED.contains(&name.as_ref()) || LINKED.contains(&name.as_ref())) || e.depth() == 0
        })
        .build()
        .flatten()
}

/// The `node_modules` of a workspace root above the agent, which the copy links to.
fn node_modules_above(from: &Path) -> Option<PathBuf> {
    if from.join("node_modules").exists() {
        return None;
    }
    from.ancestors()
        .skip(1)
        .find(|d| d.join("node_modules").is_dir())
        .map(|d| d.join("node_modules"))
}

/// How a copy of the tree is made.
#[derive(Debug, Clone, Copy)]
pub enum CopyMode<'a> {
    /// Every file copied (a build may write beside them).
    Full,
    /// For a check that only reads: the files with these endings hard-linked where the
    /// file system allows (copied elsewhere), so the interpreter sees them as files of the
    /// copy; every other file a symbolic link to the original.
    ReadOnly(&'a [&'a str]),
}

/// Copies the agent's files ([`copied_entries`]); installed packages are linked, so the copy
/// builds against the same ones.
pub fn copy_tree(from: &Path, to: &Path, mode: CopyMode) -> Result<()> {
    // packages installed above the agent (a workspace root) resolve from the copy too
    if let Some(up) = node_modules_above(from) {
        let _ = std::os::unix::fs::symlink(up, to.join("node_modules"));
    }
    for entry in copied_entries(from) {
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let dest = to.join(rel);
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            std::fs::create_dir_all(&dest).map_err(crate::error::io_err(&dest))?;
            for linked in LINKED {
                let src = entry.path().join(linked);
                if src.is_dir() {
                    let _ = std::os::unix::fs::symlink(&src, dest.join(linked));
                }
            }
        } else if kind.is_file() {
            let as_file = |exts: &[&str]| {
                entry
                    .path()
                    .extension()
                    .is_some_and(|e| exts.iter().any(|x| e == *x))
            };
            match mode {
                CopyMode::Full => {
                    std::fs::copy(entry.path(), &dest)
                        .map_err(crate::error::io_err(entry.path()))?;
                }
                CopyMode::ReadOnly(exts) if as_file(exts) => {
                    if std::fs::hard_link(entry.path(), &dest).is_err() {
                        std::fs::copy(entry.path(), &dest)
                            .map_err(crate::error::io_err(entry.path()))?;
                    }
                }
                CopyMode::ReadOnly(_) => std::os::unix::fs::symlink(entry.path(), &dest)
                    .map_err(crate::error::io_err(&dest))?,
            }
        } else if kind.is_symlink()
            && let Ok(target) = std::fs::read_link(entry.path())
        {
            let _ = std::os::unix::fs::symlink(target, &dest);
        }
    }
    Ok(())
}

/// What a copy of a tree would hold, entry by entry: each entry's path relative to the tree
/// and a digest of what it is (a file's path, size and mtime, a link's target, a folder and
/// its linked package folders). A digest, not those strings: a monorepo's listing has tens of
/// thousands of entries and is kept for the whole command.
type Listing = Vec<(Box<str>, EntryDigest)>;

type EntryDigest = [u8; 32];

/// Listings of folders taken ahead, on threads of their own, while the analysis runs: each
/// folder's path and its listing.
type Prefetched = Vec<(PathBuf, Arc<OnceLock<Listing>>)>;

fn prefetched() -> &'static Mutex<Prefetched> {
    static PREFETCHED: OnceLock<Mutex<Prefetched>> = OnceLock::new();
    PREFETCHED.get_or_init(Default::default)
}

/// Starts listing the folder `dir` for [`tree_fingerprint`] on a thread of its own (a walk
/// of the folder, which the analysis never waits for): it serves the fingerprint of that
/// folder and of every folder below it, until [`forget_prefetched`], which a command calls
/// before it may write. A language lists only the folders its check may copy (an agent's
/// project in a monorepo), not the whole tree.
pub fn prefetch_fingerprint(dir: &Path) {
    let slot: Arc<OnceLock<Listing>> = Arc::default();
    prefetched()
        .lock()
        .expect("no poison")
        .push((dir.to_path_buf(), slot.clone()));
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        slot.get_or_init(|| listing(&dir));
    });
}

/// Forgets the listings prefetched for the tree at `from` and the folders in it.
pub fn forget_prefetched(from: &Path) {
    prefetched()
        .lock()
        .expect("no poison")
        .retain(|(p, _)| !p.starts_with(from));
}

/// The cache key of what a copy of the folder `scope` (relative, `/`-separated; empty: the
/// whole tree) of the tree at `from` would hold: from a prefetched listing of that folder or
/// of one above it (waited for when still being taken), else from a walk of that folder
/// alone.
pub fn tree_fingerprint(from: &Path, scope: &str) -> String {
    let folder = if scope.is_empty() {
        from.to_path_buf()
    } else {
        from.join(scope)
    };
    // the nearest prefetched folder at or above it, and where the folder is in its listing
    let slot = prefetched()
        .lock()
        .expect("no poison")
        .iter()
        .filter_map(|(dir, slot)| {
            let below = folder.strip_prefix(dir).ok()?;
            Some((
                dir.clone(),
                below.to_string_lossy().into_owned(),
                slot.clone(),
            ))
        })
        .min_by_key(|(_, below, _)| below.len());
    let mut k = cache::Key::new("tree");
    if let Some(up) = node_modules_above(&folder) {
        k.text("above").text(&up.display().to_string());
    }
    let mut feed = |entries: &mut dyn Iterator<Item = (&str, &EntryDigest)>| {
        for (rel, what) in entries {
            k.text(rel).bytes(what);
        }
    };
    match slot {
        Some((dir, below, slot)) => {
            let all = slot.get_or_init(|| listing(&dir));
            let prefix = format!("{below}/");
            feed(&mut all.iter().filter_map(|(rel, what)| {
                let rel = if below.is_empty() {
                    rel
                } else if **rel == below {
                    ""
                } else {
                    rel.strip_prefix(&prefix)?
                };
                Some((rel, what))
            }));
        }
        None => feed(&mut listing(&folder).iter().map(|(rel, what)| (&**rel, what))),
    }
    k.finish()
}

/// The entries a copy of the tree at `from` would hold ([`copied_entries`]), in order.
fn listing(from: &Path) -> Listing {
    use sha2::Digest;
    let mut out = Vec::new();
    for entry in copied_entries(from) {
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let mut what = sha2::Sha256::new();
        // each part length-prefixed, so two parts never read as one
        let mut part = |s: &str| {
            what.update((s.len() as u64).to_le_bytes());
            what.update(s.as_bytes());
        };
        match entry.file_type() {
            Some(kind) if kind.is_dir() => {
                part("dir");
                for linked in LINKED {
                    if entry.path().join(linked).is_dir() {
                        part(linked);
                    }
                }
            }
            Some(kind) if kind.is_file() => {
                part(&entry.path().display().to_string());
                match cache::stamp(entry.path()) {
                    Some((ns, len)) => part(&format!("{ns}:{len}")),
                    None => part("-"),
                }
            }
            Some(kind) if kind.is_symlink() => {
                part("link");
                part(
                    &std::fs::read_link(entry.path())
                        .unwrap_or_default()
                        .display()
                        .to_string(),
                );
            }
            _ => {}
        }
        out.push((
            rel.display().to_string().into_boxed_str(),
            what.finalize().into(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prefetched listing gives the fingerprint a walk on the spot gives, of the whole tree
    /// or of one folder; once forgotten, a change of the tree shows.
    #[test]
    fn a_prefetched_fingerprint_holds_until_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("pkg/sub")).unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("pkg/b.py"), "y = 1\n").unwrap();
        std::fs::write(root.join("pkg/sub/c.py"), "z = 1\n").unwrap();
        let (whole, pkg) = (tree_fingerprint(&root, ""), tree_fingerprint(&root, "pkg"));
        assert_ne!(whole, pkg);
        prefetch_fingerprint(&root);
        assert_eq!(tree_fingerprint(&root, ""), whole);
        assert_eq!(tree_fingerprint(&root, "pkg"), pkg);
        std::fs::write(root.join("pkg/d.py"), "w = 2\n").unwrap();
        // still the prefetched one: valid for the command that took it
        assert_eq!(tree_fingerprint(&root, "pkg"), pkg);
        forget_prefetched(&root);
        let after = tree_fingerprint(&root, "pkg");
        assert_ne!(after, pkg);
        // a file outside the folder does not change the folder's fingerprint
        std::fs::write(root.join("e.py"), "v = 3\n").unwrap();
        assert_eq!(tree_fingerprint(&root, "pkg"), after);
        assert_ne!(tree_fingerprint(&root, ""), whole);
    }

    /// A folder's prefetched listing serves that folder and the folders below it, with the
    /// fingerprint a walk on the spot gives; a folder outside it is walked when asked.
    #[test]
    fn a_prefetched_folder_serves_the_folders_below_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("agent/pkg/sub")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("agent/pyproject.toml"), "").unwrap();
        std::fs::write(root.join("agent/pkg/a.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("agent/pkg/sub/b.py"), "y = 1\n").unwrap();
        std::fs::write(root.join("other/c.py"), "z = 1\n").unwrap();
        let scopes = ["agent", "agent/pkg", "agent/pkg/sub", "other", ""];
        let on_the_spot: Vec<String> = scopes.iter().map(|s| tree_fingerprint(&root, s)).collect();
        prefetch_fingerprint(&root.join("agent"));
        for (scope, want) in scopes.iter().zip(&on_the_spot) {
            assert_eq!(&tree_fingerprint(&root, scope), want, "{scope:?}");
        }
        // the prefetched listing stands for the folders below it until forgotten
        std::fs::write(root.join("agent/pkg/d.py"), "w = 2\n").unwrap();
        assert_eq!(tree_fingerprint(&root, "agent/pkg"), on_the_spot[1]);
        forget_prefetched(&root);
        assert_ne!(tree_fingerprint(&root, "agent/pkg"), on_the_spot[1]);
        assert_eq!(tree_fingerprint(&root, "other"), on_the_spot[3]);
    }
}
