//! The walk of a tree and the read of its sources, within the limits.

use super::{Dormant, Keep, Limits, MANIFESTS, Project, SKIP_DIRS, TEMP_PREFIX, has_extension};
use crate::error::{Error, Result};
use crate::source::{SourceFile, rel_path};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// What the walk found, shared by its threads.
#[derive(Default)]
struct Found {
    sources: Mutex<Vec<(PathBuf, Option<PathBuf>)>>,
    manifests: Mutex<Vec<PathBuf>>,
    skipped: Mutex<Vec<(String, String)>>,
    entries: AtomicUsize,
    bytes: AtomicU64,
    too_deep: Mutex<Option<PathBuf>>,
    stop: AtomicBool,
}

/// Whether the ignore files above `root` ignore `root` itself, as the `*` .gitignore that uv
/// and virtualenv write into a virtual environment ignores its site-packages: pointed at such
/// a folder on purpose, acp-patch reads it (by its own ignore files) rather than nothing.
fn ignored_by_parents(root: &Path) -> bool {
    let Ok(root) = root.canonicalize() else {
        return false;
    };
    let (Some(parent), Some(name)) = (root.parent(), root.file_name()) else {
        return false;
    };
    let listed = ignore::WalkBuilder::new(parent)
        .hidden(false)
        .require_git(false)
        .max_depth(Some(1))
        .build()
        .flatten()
        .any(|e| e.depth() == 1 && e.file_name() == name);
    !listed
}

/// Walks the tree in parallel (respecting .gitignore, skipping hidden and vendored
/// folders, never following a folder link), reads every file of a known language, and
/// sorts them so every later phase is deterministic. Stops and refuses at the limits.
/// A file `keep` turns down is listed in [`Project::dormant`], its text dropped on the
/// thread that read it.
pub(super) fn read_sources(
    project: &mut Project,
    limits: Limits,
    extensions: &[&str],
    keep: &Keep,
) -> Result<()> {
    let root = project.root.clone();
    let exts: Vec<String> = extensions.iter().map(|e| e.to_string()).collect();
    let found = Found::default();
    // filter_entry must own what it touches
    let leftovers = std::sync::Arc::new(Mutex::new(Vec::new()));
    let seen_leftovers = leftovers.clone();
    ignore::WalkBuilder::new(&root)
        .hidden(false) // hidden entries are filtered below, where our leftovers are seen
        .require_git(false)
        .parents(!ignored_by_parents(&root))
        .follow_links(false)
        .filter_entry(move |e| {
            let name = e.file_name().to_string_lossy();
            if !name.starts_with('.') {
                return !(e.file_type().is_some_and(|t| t.is_dir())
                    && SKIP_DIRS.contains(&name.as_ref()));
            }
            if e.file_type().is_some_and(|t| t.is_file()) && is_leftover(&name) {
                seen_leftovers
                    .lock()
                    .expect("no poison")
                    .push(e.path().to_path_buf());
            }
            false
        })
        .build_parallel()
        .run(|| {
            Box::new(|entry| {
                if found.stop.load(Ordering::Relaxed) {
                    return ignore::WalkState::Quit;
                }
                let Ok(e) = entry else {
                    return ignore::WalkState::Continue;
                };
                if found.entries.fetch_add(1, Ordering::Relaxed) + 1 > limits.max_entries {
                    found.stop.store(true, Ordering::Relaxed);
                    return ignore::WalkState::Quit;
                }
                if e.depth() > limits.max_depth {
                    *found.too_deep.lock().expect("no poison") = Some(e.path().to_path_buf());
                    found.stop.store(true, Ordering::Relaxed);
                    return ignore::WalkState::Quit;
                }
                let Some(kind) = e.file_type() else {
                    return ignore::WalkState::Continue;
                };
                if kind.is_file() && MANIFESTS.contains(&e.file_name().to_string_lossy().as_ref()) {
                    found
                        .manifests
                        .lock()
                        .expect("no poison")
                        .push(e.path().to_path_buf());
                }
                if kind.is_dir() || !has_extension(e.path(), &exts) {
                    return ignore::WalkState::Continue;
                }
                let rel = rel_path(&root, e.path());
                let skip = |why: String| {
                    found
                        .skipped
                        .lock()
                        .expect("no poison")
                        .push((rel.clone(), why));
                };
                // a link is read through (only to a regular file), never written through
                let (meta, target) = if kind.is_symlink() {
                    let target = std::fs::read_link(e.path()).unwrap_or_default();
                    match std::fs::metadata(e.path()) {
                        Ok(m) if m.is_file() => (m, Some(target)),
                        Ok(_) => {
                            skip(format!(
                                "a symbolic link to {}, which is not a file; not read",
                                target.display()
                            ));
                            return ignore::WalkState::Continue;
                        }
                        Err(_) => {
                            skip(format!(
                                "a symbolic link to {}, which does not exist; not read",
                                target.display()
                            ));
                            return ignore::WalkState::Continue;
                        }
                    }
                } else if kind.is_file() {
                    match e.metadata() {
                        Ok(m) => (m, None),
                        Err(_) => return ignore::WalkState::Continue,
                    }
                } else {
                    return ignore::WalkState::Continue; // a FIFO, socket or device: never read
                };
                if e.path().to_str().is_none() {
                    skip("its path is not UTF-8; not read (rename it to patch it)".into());
                    return ignore::WalkState::Continue;
                }
                if meta.len() > limits.max_file_bytes {
                    let (size, limit) = sizes(meta.len(), limits.max_file_bytes);
                    skip(format!(
                        "{size}, more than the {limit} acp-patch reads of one file; not read (raise the limit with ACP_PATCH_MAX_FILE_BYTES=N, in bytes)"
                    ));
                    return ignore::WalkState::Continue;
                }
                if found.bytes.fetch_add(meta.len(), Ordering::Relaxed) + meta.len()
                    > limits.max_bytes
                {
                    found.stop.store(true, Ordering::Relaxed);
                    return ignore::WalkState::Quit;
                }
                found
                    .sources
                    .lock()
                    .expect("no poison")
                    .push((e.into_path(), target));
                ignore::WalkState::Continue
            })
        });
    let entries = found.entries.load(Ordering::Relaxed);
    let advice = "point acp-patch at the agent's own folder";
    if let Some(deep) = found.too_deep.into_inner().expect("no poison") {
        return Err(Error::TooLarge {
            root,
            message: format!(
                "{} is more than {} folders below it; {advice}",
                rel_path(&project.root, &deep),
                limits.max_depth
            ),
        });
    }
    if entries > limits.max_entries {
        return Err(Error::TooLarge {
            root,
            message: format!(
                "it holds more than {} files and folders (not counting ignored and vendored ones); {advice}, or raise the limit with ACP_PATCH_MAX_FILES=N",
                limits.max_entries
            ),
        });
    }
    if found.bytes.load(Ordering::Relaxed) > limits.max_bytes {
        return Err(Error::TooLarge {
            root,
            message: format!(
                "its source files hold more than {} MiB; {advice}, or raise the limit with ACP_PATCH_MAX_BYTES=N",
                limits.max_bytes >> 20
            ),
        });
    }
    let mut sources = found.sources.into_inner().expect("no poison");
    sources.sort_by_cached_key(|(path, target)| (path_order_key(path), target.clone()));
    // read and decoded on all cores once the walk has kept within the limits (a tree
    // refused is never read), in the sorted order
    let root = &project.root;
    let all = read_all(&sources, |path, buf| {
        read_into(path, buf).map_err(crate::error::io_err(path))?;
        let rel = rel_path(root, path);
        // a text no step reads is dropped as read: read into the thread's one buffer, never
        // copied out of it (the bytes are checked for UTF-8 once)
        let text = match std::str::from_utf8(buf) {
            Ok(text) => text,
            Err(_) => {
                return Ok(
                    match SourceFile::decode(path.to_path_buf(), rel, buf.clone()) {
                        Ok(f) => Read::Kept(f),
                        Err(bad) => Read::NotUtf8(bad),
                    },
                );
            }
        };
        if !keep(path, text) {
            return Ok(Read::Dormant(Dormant {
                path: path.to_path_buf(),
                rel,
            }));
        }
        Ok(Read::Kept(SourceFile::from_str(
            path.to_path_buf(),
            rel,
            text,
        )))
    });
    for ((path, target), file) in sources.into_iter().zip(all) {
        let file = file?;
        if let Some(target) = target {
            project
                .symlinks
                .push((rel_path(&project.root, &path), target));
        }
        match file {
            Read::Kept(f) => project.files.push(f),
            Read::Dormant(d) => project.dormant.push(d),
            Read::NotUtf8(bad) => project.not_utf8.push(bad),
        }
    }
    project.manifests = found.manifests.into_inner().expect("no poison");
    project.manifests.sort();
    project.skipped = found.skipped.into_inner().expect("no poison");
    project.skipped.sort();
    project.leftovers = std::mem::take(&mut *leftovers.lock().expect("no poison"));
    project.leftovers.sort();
    Ok(())
}

/// A key whose byte order is the order of paths (component by component, as `Path`'s `Ord`):
/// the components joined by a NUL, which no component holds and which sorts before every
/// other byte, so a component that is a prefix of another sorts first as it does in `Path`.
/// Comparing the keys is a `memcmp`; comparing paths parses their components every time.
fn path_order_key(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    let mut key = Vec::with_capacity(path.as_os_str().len() + 1);
    for (i, c) in path.components().enumerate() {
        if i > 0 {
            key.push(0);
        }
        key.extend_from_slice(c.as_os_str().as_bytes());
    }
    key
}

/// What reading one file gave.
enum Read {
    Kept(SourceFile),
    Dormant(Dormant),
    NotUtf8(crate::source::NotUtf8),
}

/// `read` of every file, in order, by as many threads as there are cores: each thread takes
/// the next file not taken yet, so one thread's share of big files does not hold the others
/// back (the sorted list puts a large agent's modules side by side).
fn read_all<T: Send>(
    paths: &[(PathBuf, Option<PathBuf>)],
    read: impl Fn(&Path, &mut Vec<u8>) -> T + Sync,
) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(paths.len());
    if threads < 2 {
        let mut buf = Vec::new();
        return paths.iter().map(|(p, _)| read(p, &mut buf)).collect();
    }
    let next = AtomicUsize::new(0);
    let (read, next) = (&read, &next);
    let mut done: Vec<(usize, T)> = std::thread::scope(|s| {
        let parts: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(move || {
                    let (mut mine, mut buf) = (Vec::new(), Vec::new());
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((path, _)) = paths.get(i) else { break };
                        mine.push((i, read(path, &mut buf)));
                    }
                    mine
                })
            })
            .collect();
        parts
            .into_iter()
            .flat_map(|h| h.join().expect("a read does not panic"))
            .collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, t)| t).collect()
}

/// The file at `path` read into `buf` (emptied first): one buffer per thread, grown to the
/// largest file it read, so the files no step keeps cost no allocation of their own.
fn read_into(path: &Path, buf: &mut Vec<u8>) -> std::io::Result<()> {
    use std::io::Read as _;
    buf.clear();
    // a `File` sizes the buffer with two more system calls per file (a stat and a seek);
    // the thread's buffer is reused and has grown to the largest file already
    Plainly(&std::fs::File::open(path)?).read_to_end(buf)?;
    Ok(())
}

/// A file read with nothing but `read` calls.
struct Plainly<'a>(&'a std::fs::File);

impl std::io::Read for Plainly<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        (&mut &*self.0).read(buf)
    }
}

/// Whether a file name is one of apply's temporary files (also the older
/// `.acp-patch-XXXXXX` names).
pub(super) fn is_leftover(name: &str) -> bool {
    name.starts_with(TEMP_PREFIX)
        || name
            .strip_prefix(".acp-patch-")
            .is_some_and(|rest| rest.len() == 6 && rest.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// A file's size and the limit it passes as the notes say them: whole MiB, or bytes when
/// whole MiB would not tell them apart (a file of 16.5 MiB over a 16 MiB limit).
fn sizes(bytes: u64, limit: u64) -> (String, String) {
    if bytes >> 20 > limit >> 20 && limit.is_multiple_of(1 << 20) {
        (
            format!("{} MiB", bytes >> 20),
            format!("{} MiB", limit >> 20),
        )
    } else {
        (format!("{bytes} bytes"), format!("{limit} bytes"))
    }
}

#[cfg(test)]
mod tests {
    use super::path_order_key;
    use std::path::PathBuf;

    #[test]
    fn paths_sort_by_their_key_as_they_sort_themselves() {
        let mut paths: Vec<PathBuf> = [
            "/t/a-b/x.py",
            "/t/a/b.py",
            "/t/a.py",
            "/t/a/b/c.py",
            "/t/a b/c.py",
            "/t/a/.hidden.py",
            "/t/A/z.py",
            "/t/ab.py",
            "/t/a/b-c.py",
            "/t/a/b/",
            "/t/é/x.py",
            "/t/a0/x.py",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let mut by_key = paths.clone();
        by_key.sort_by_cached_key(|p| path_order_key(p));
        paths.sort();
        assert_eq!(by_key, paths);
    }
}
