//! Writing a plan: all or nothing, atomically, with each file's permissions and owner kept,
//! never through a symbolic link, never over a file that changed since it was read, and
//! never leaving a temporary file behind when interrupted.

use crate::error::{Error, Result, io_err};
use crate::plan::{FilePlan, Plan};
use crate::project::{Project, TEMP_PREFIX};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Refuses a git work tree with uncommitted changes under `root` (tracked or untracked).
/// Outside a git work tree there is nothing to check; inside one, a `git` that is missing
/// or fails (e.g. "dubious ownership") is a refusal, never a skipped check.
pub fn check_clean(root: &Path) -> Result<()> {
    check_clean_but(root, &[])
}

/// [`check_clean`], except for the changes a revert takes back whole: `undone` lists each file
/// the revert writes (absolute path) with the bytes it leaves there (`None`: it removes the
/// file). A tracked file the revert returns to its committed bytes, or an untracked one it
/// removes, holds nothing of the user's: revert straight after apply needs no
/// `--allow-dirty`. Every other change still refuses.
pub fn check_clean_but(root: &Path, undone: &[(PathBuf, Option<Vec<u8>>)]) -> Result<()> {
    let Some(repo) = enclosing_repo(root) else {
        return Ok(());
    };
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["status", "--porcelain", "--untracked-files=all", "--", "."])
        .stdin(std::process::Stdio::null())
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::GitFailed {
                root: root.to_path_buf(),
                message: format!(
                    "it is in a git repository ({}), but `git` is not on PATH, so its uncommitted changes cannot be checked; install git",
                    repo.display()
                ),
            });
        }
        Err(e) => {
            return Err(Error::GitFailed {
                root: root.to_path_buf(),
                message: format!("could not run `git status` ({e})"),
            });
        }
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        return Err(Error::GitFailed {
            root: root.to_path_buf(),
            message: format!(
                "`git status` failed, so its uncommitted changes cannot be checked: {}",
                first.trim()
            ),
        });
    }
    let top = (!undone.is_empty())
        .then(|| git_output(root, &["rev-parse", "--show-toplevel"]))
        .flatten()
        .and_then(|t| String::from_utf8(t).ok())
        .map(|t| PathBuf::from(t.trim_end()));
    let files: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|line| {
            top.as_deref()
                .is_none_or(|top| taken_back(root, top, line, undone) != Some(true))
        })
        .map(str::to_string)
        .collect();
    if files.is_empty() {
        Ok(())
    } else {
        Err(Error::DirtyTree {
            root: root.to_path_buf(),
            files,
        })
    }
}

/// Whether the change `git status --porcelain` tells in `line` is one revert takes back whole
/// (`None` when that cannot be told: a rename, a quoted path, an unreadable commit).
fn taken_back(
    root: &Path,
    top: &Path,
    line: &str,
    undone: &[(PathBuf, Option<Vec<u8>>)],
) -> Option<bool> {
    let (status, path) = (line.get(..2)?, line.get(3..)?);
    if path.starts_with('"') || path.contains(" -> ") {
        return Some(false);
    }
    let abs = top.join(path);
    let (_, after) = undone.iter().find(|(p, _)| same_file(p, &abs))?;
    Some(match (status, after) {
        // (a staged copy stays in the index: nothing is lost)
        ("??" | "A ", None) => true,
        (" M" | "M " | "MM", Some(bytes)) => git_output(root, &["show", &format!("HEAD:{path}")])
            .is_some_and(|committed| committed == *bytes),
        _ => false,
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((a.canonicalize(), b.canonicalize()), (Ok(x), Ok(y)) if x == y)
}

/// What `git -C root <args>` prints, when it succeeds.
pub(crate) fn git_output(root: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

/// The folder holding `.git` at or above `root` (or `$GIT_DIR`), if any.
fn enclosing_repo(root: &Path) -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("GIT_DIR") {
        return Some(PathBuf::from(dir));
    }
    root.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// An exclusive lock on the tree for one apply (an advisory `flock` on the root folder,
/// released when dropped or when the process ends): a second apply at the same time refuses.
pub struct TreeLock(#[allow(dead_code)] std::fs::File);

pub fn lock_tree(root: &Path) -> Result<TreeLock> {
    use std::os::fd::AsRawFd;
    let dir = std::fs::File::open(root).map_err(io_err(root))?;
    // A lock can outlive its apply for a moment: a process forked by any thread of the
    // holder (a compile or start-up check) shares the descriptor until its exec closes it.
    // So "held" is retried for a short while before it means another apply is writing.
    let deadline = std::time::Instant::now() + LOCK_PATIENCE;
    loop {
        // SAFETY: flock on a file descriptor we own; no memory is shared.
        let rc = unsafe { libc::flock(dir.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        // only "held by another" refuses; a file system without locks (some NFS) goes on
        // unlocked, still guarded by the re-read before each rename
        let held =
            rc != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EWOULDBLOCK);
        if !held {
            return Ok(TreeLock(dir));
        }
        if std::time::Instant::now() >= deadline {
            return Err(Error::Locked {
                root: root.to_path_buf(),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// How long a held tree lock is waited for before apply refuses.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);

/// Removes the temporary files an interrupted apply left (its process is gone); returns
/// their relative paths. A running apply's files are left alone (the lock keeps it apart).
pub fn remove_leftovers(project: &Project) -> Vec<String> {
    let mut removed = Vec::new();
    for path in &project.leftovers {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let pid = name
            .strip_prefix(TEMP_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<i32>().ok());
        if pid.is_some_and(process_alive) {
            continue;
        }
        if std::fs::remove_file(path).is_ok() {
            removed.push(crate::source::rel_path(&project.root, path));
        }
    }
    removed
}

fn process_alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0
        && (unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH))
}

/// The signals that end a process by request: Ctrl-C, `kill`, a closed terminal.
const TERMINATING: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Blocks the terminating signals while held: they are delivered when it is dropped. One
/// that arrives while files are staged stops the write before any rename (the staged files
/// are removed, then the signal ends the process as usual); one that arrives during the
/// renames waits until they are done, so a signal never leaves half a patch. (SIGKILL
/// cannot be blocked: the next apply removes the temporary files it leaves.)
struct DeferSignals(libc::sigset_t);

/// Whether a terminating signal is waiting to be delivered.
fn termination_pending() -> bool {
    // SAFETY: reads the set of pending signals of the calling thread and process.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut set);
        TERMINATING.iter().any(|s| libc::sigismember(&set, *s) == 1)
    }
}

impl DeferSignals {
    fn new() -> DeferSignals {
        // SAFETY: plain sigset manipulation and pthread_sigmask on the calling thread.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in TERMINATING {
                libc::sigaddset(&mut set, sig);
            }
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
            DeferSignals(old)
        }
    }
}

impl Drop for DeferSignals {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in new().
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &self.0, std::ptr::null_mut());
        }
    }
}

/// Test hook: `ACP_PATCH_FAILPOINT=staged` makes apply stop dead (SIGKILL) once every
/// temporary file is written, `staged-sleep` makes it wait there for 2 s (a signal sent
/// meanwhile waits for the check below), so tests can show what an interrupted run leaves.
fn failpoint(at: &str) {
    let Ok(point) = std::env::var("ACP_PATCH_FAILPOINT") else {
        return;
    };
    if point == at {
        // SAFETY: raising a signal at ourselves.
        unsafe {
            libc::raise(libc::SIGKILL);
        }
    }
    if point == format!("{at}-sleep") {
        std::thread::sleep(std::time::Duration::from_secs(2));
    }
}

/// The checks every file of a plan passes before anything is written.
fn check_writable(plan: &Plan) -> Result<()> {
    for fp in &plan.files {
        let path = &fp.file.path;
        if let Ok(meta) = std::fs::symlink_metadata(path)
            && meta.file_type().is_symlink()
        {
            return Err(Error::Symlink {
                file: fp.file.rel.clone(),
                target: std::fs::read_link(path).unwrap_or_default(),
            });
        }
        if fp.file.exists {
            let meta = std::fs::metadata(path).map_err(io_err(path))?;
            if meta.permissions().readonly() {
                return Err(Error::ReadOnly {
                    file: fp.file.rel.clone(),
                });
            }
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        if !writable_dir(dir) {
            let rel = fp
                .file
                .rel
                .rsplit_once('/')
                .map_or(".".to_string(), |(d, _)| d.to_string());
            return Err(Error::ReadOnly {
                file: format!("{rel}/ (the folder)"),
            });
        }
    }
    Ok(())
}

fn writable_dir(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: access() reads a NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// Whether a file still holds exactly the bytes the plan was made from.
fn unchanged(fp: &FilePlan) -> bool {
    std::fs::read(&fp.file.path).is_ok_and(|now| now == fp.file.original().as_bytes())
}

/// Writes every patched file of the plan. Each file goes to a temporary file beside it
/// first (mode and owner of the original); only when all are staged, and every original
/// still holds the bytes the plan was made from, are they renamed over the originals (a
/// new file is never renamed over one that appeared meanwhile); then files the plan
/// removes are removed. A failure restores the files already replaced, so the tree is left
/// as it was. Interrupting signals wait until the tree is consistent.
pub fn write_plan(plan: &Plan) -> Result<()> {
    check_writable(plan)?;
    let _defer = DeferSignals::new();
    let me = unsafe { libc::geteuid() };
    let mut staged = Vec::new();
    for fp in plan.files.iter().filter(|f| !f.delete) {
        let path = &fp.file.path;
        let dir = path.parent().unwrap_or(Path::new("."));
        let original = if fp.file.exists {
            Some(std::fs::metadata(path).map_err(io_err(path))?)
        } else {
            None
        };
        let mut tmp = tempfile::Builder::new()
            .prefix(&format!("{TEMP_PREFIX}{}-", std::process::id()))
            .tempfile_in(dir)
            .map_err(io_err(dir))?;
        tmp.write_all(fp.file.to_disk(&fp.new_text()).as_bytes())
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(io_err(tmp.path()))?;
        match &original {
            Some(meta) => {
                keep_owner(tmp.as_file(), meta, &fp.file.rel, me)?;
                std::fs::set_permissions(tmp.path(), meta.permissions())
                    .map_err(io_err(tmp.path()))?;
            }
            None => {
                use std::os::unix::fs::PermissionsExt;
                // a new file gets the mode a plain create would give it (0666 less umask)
                let mode = 0o666 & !current_umask();
                std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(mode))
                    .map_err(io_err(tmp.path()))?;
            }
        }
        staged.push((tmp, fp));
        if termination_pending() {
            return Err(Error::Interrupted); // the staged files are removed on the way out
        }
    }
    failpoint("staged");
    if termination_pending() {
        return Err(Error::Interrupted);
    }
    // nothing is renamed while a file to replace differs from what the plan read
    for fp in plan.files.iter().filter(|f| f.file.exists) {
        if !unchanged(fp) {
            return Err(Error::Changed {
                file: fp.file.rel.clone(),
            });
        }
    }
    let mut done: Vec<&FilePlan> = Vec::new();
    let undo = |done: &[&FilePlan]| {
        for restored in done {
            if restored.file.exists {
                let _ = std::fs::write(&restored.file.path, restored.file.original());
            } else {
                let _ = std::fs::remove_file(&restored.file.path);
            }
        }
    };
    for (tmp, fp) in staged {
        if fp.file.exists && !unchanged(fp) {
            undo(&done);
            return Err(Error::Changed {
                file: fp.file.rel.clone(),
            });
        }
        let persisted = if fp.file.exists {
            tmp.persist(&fp.file.path).map(|_| ()).map_err(|e| e.error)
        } else {
            tmp.persist_noclobber(&fp.file.path)
                .map(|_| ())
                .map_err(|e| e.error)
        };
        if let Err(source) = persisted {
            undo(&done);
            return Err(Error::Io {
                path: fp.file.path.clone(),
                source,
            });
        }
        done.push(fp);
    }
    for fp in plan.files.iter().filter(|f| f.delete) {
        if let Err(source) = std::fs::remove_file(&fp.file.path) {
            undo(&done);
            return Err(Error::Io {
                path: fp.file.path.clone(),
                source,
            });
        }
        done.push(fp);
    }
    // the renames themselves survive a crash once their folders are synced
    let mut dirs: Vec<&Path> = plan
        .files
        .iter()
        .filter_map(|f| f.file.path.parent())
        .collect();
    dirs.sort();
    dirs.dedup();
    for d in dirs {
        if let Ok(f) = std::fs::File::open(d) {
            let _ = f.sync_all();
        }
    }
    Ok(())
}

/// Gives the staged file the original's owner and group. Only root (or the owner) can: a
/// file of another user that cannot keep its owner is refused; a group that cannot be
/// kept follows the folder's rules, as for any new file.
fn keep_owner(tmp: &std::fs::File, meta: &std::fs::Metadata, rel: &str, me: u32) -> Result<()> {
    let (uid, gid) = (meta.uid(), meta.gid());
    let staged = tmp.metadata().map_err(io_err(rel))?;
    if staged.uid() == uid && staged.gid() == gid {
        return Ok(());
    }
    if std::os::unix::fs::fchown(tmp, Some(uid), Some(gid)).is_ok() {
        return Ok(());
    }
    if staged.uid() != uid {
        return Err(Error::Owner {
            file: rel.to_string(),
            uid,
            me,
        });
    }
    let _ = std::os::unix::fs::fchown(tmp, None, Some(gid));
    Ok(())
}

fn current_umask() -> u32 {
    // SAFETY: umask() cannot fail; it is set back at once (apply is single-threaded here).
    unsafe {
        let mask = libc::umask(0o022);
        libc::umask(mask);
        mask as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_released_within_the_patience_is_taken_one_held_longer_refuses() {
        let dir = tempfile::tempdir().unwrap();
        // a lock held for a moment (as by a forked child before its exec) is waited for
        let held = lock_tree(dir.path()).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(200));
            drop(held);
        });
        assert!(lock_tree(dir.path()).is_ok());
        release.join().unwrap();
        // one held past it is another apply writing the tree
        let _held = lock_tree(dir.path()).unwrap();
        assert!(matches!(lock_tree(dir.path()), Err(Error::Locked { .. })));
    }
}
