//! Answers of start-up checks kept between runs: importing an agent's patched modules costs
//! what the agent's own start costs (seconds for a large agent), and a pre-commit hook asks
//! the same question of the same tree again and again. An answer is kept under a key that
//! names everything the check reads that acp-patch can see before running it (the check
//! script, the interpreter, the job, every file of the tree copy by size and mtime, the
//! environment) and with what the check itself saw outside the tree (every module file it
//! loaded, every folder on `sys.path`, by mtime and size); it is used again only while each
//! of those is as it was. A stale or unreadable entry is a miss, never an error.
//!
//! Where: `$ACP_PATCH_CACHE_DIR`, else `$XDG_CACHE_HOME/acp-patch`, else
//! `~/.cache/acp-patch`; `ACP_PATCH_CACHE_DIR=` (empty) turns it off.

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Entries kept per kind of check (the oldest go first).
const KEEP: usize = 64;

/// Variables that differ between two shells of one user and never reach an import.
const VOLATILE_ENV: &[&str] = &["PWD", "OLDPWD", "SHLVL", "_"];

/// The folder answers of `kind` are kept in; `None` when the cache is off.
pub fn dir(kind: &str) -> Option<PathBuf> {
    let base = match std::env::var_os("ACP_PATCH_CACHE_DIR") {
        Some(d) if d.is_empty() => return None,
        Some(d) => PathBuf::from(d),
        None => match std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d).join("acp-patch"),
            None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/acp-patch"),
        },
    };
    Some(base.join(kind))
}

/// A file or folder as it was when the check ran: `None` for one that did not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    pub path: PathBuf,
    pub stamp: Option<(i64, u64)>,
}

/// (mtime in ns, size) of what is at `path` now (following links).
pub fn stamp(path: &Path) -> Option<(i64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime = meta.modified().ok()?;
    let ns = match mtime.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i64,
        Err(e) => -(e.duration().as_nanos() as i64),
    };
    Some((ns, meta.len()))
}

#[derive(Serialize, Deserialize)]
struct Entry<T> {
    seen: Vec<Seen>,
    answer: T,
}

/// Builds a key: everything fed to it, in order.
pub struct Key(Sha256);

impl Key {
    pub fn new(kind: &str) -> Key {
        let mut k = Key(Sha256::new());
        k.text(kind);
        k.text(env!("CARGO_PKG_VERSION"));
        k
    }

    /// A text, length-prefixed (so two texts never read as one).
    pub fn text(&mut self, s: &str) -> &mut Key {
        self.bytes(s.as_bytes())
    }

    pub fn bytes(&mut self, b: &[u8]) -> &mut Key {
        self.0.update((b.len() as u64).to_le_bytes());
        self.0.update(b);
        self
    }

    /// What is at `path` now: its mtime and size (or that nothing is there).
    pub fn stamp_of(&mut self, path: &Path) -> &mut Key {
        self.text(&path.display().to_string());
        match stamp(path) {
            Some((ns, len)) => self.text(&format!("{ns}:{len}")),
            None => self.text("-"),
        }
    }

    /// The process environment, but for what only says where the shell is.
    pub fn environment(&mut self) -> &mut Key {
        let mut vars: Vec<(String, String)> = std::env::vars_os()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .filter(|(k, _)| !VOLATILE_ENV.contains(&k.as_str()))
            .collect();
        vars.sort();
        for (k, v) in vars {
            self.text(&k).text(&v);
        }
        self
    }

    pub fn finish(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// The kept answer for `key`, when every file it saw is as it was.
pub fn load<T: DeserializeOwned>(dir: &Path, key: &str) -> Option<T> {
    let text = std::fs::read(dir.join(format!("{key}.json"))).ok()?;
    let entry: Entry<T> = serde_json::from_slice(&text).ok()?;
    entry
        .seen
        .iter()
        .all(|s| stamp(&s.path) == s.stamp)
        .then_some(entry.answer)
}

/// Keeps `answer` for `key` (written whole or not at all), dropping the oldest entries
/// beyond [`KEEP`]. Failing to write is not an error: the next run checks again.
pub fn store<T: Serialize>(dir: &Path, key: &str, seen: Vec<Seen>, answer: &T) {
    let Ok(body) = serde_json::to_vec(&Entry { seen, answer }) else {
        return;
    };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let Ok(mut tmp) = tempfile::NamedTempFile::new_in(dir) else {
        return;
    };
    use std::io::Write;
    if tmp.write_all(&body).is_err() || tmp.persist(dir.join(format!("{key}.json"))).is_err() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut kept: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    if kept.len() > KEEP {
        kept.sort();
        for (_, path) in &kept[..kept.len() - KEEP] {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_used_again_only_while_what_it_saw_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let dep = dir.path().join("dep.py");
        std::fs::write(&dep, "x = 1\n").unwrap();
        let absent = dir.path().join("later.py");
        let seen = vec![
            Seen {
                path: dep.clone(),
                stamp: stamp(&dep),
            },
            Seen {
                path: absent.clone(),
                stamp: None,
            },
        ];
        let store_dir = dir.path().join("cache");
        store(&store_dir, "k", seen, &vec![1, 2, 3]);
        assert_eq!(load::<Vec<i32>>(&store_dir, "k"), Some(vec![1, 2, 3]));
        assert_eq!(load::<Vec<i32>>(&store_dir, "other"), None);
        // a file that appears where nothing was: stale
        std::fs::write(&absent, "").unwrap();
        assert_eq!(load::<Vec<i32>>(&store_dir, "k"), None);
        std::fs::remove_file(&absent).unwrap();
        assert_eq!(load::<Vec<i32>>(&store_dir, "k"), Some(vec![1, 2, 3]));
        // a file rewritten (another size): stale
        std::fs::write(&dep, "x = 22\n").unwrap();
        assert_eq!(load::<Vec<i32>>(&store_dir, "k"), None);
    }

    #[test]
    fn keys_differ_with_what_goes_in() {
        let key = |parts: &[&str]| {
            let mut k = Key::new("t");
            for p in parts {
                k.text(p);
            }
            k.finish()
        };
        assert_eq!(key(&["a", "b"]), key(&["a", "b"]));
        assert_ne!(key(&["ab"]), key(&["a", "b"]));
        assert_ne!(key(&["a", "b"]), key(&["a", "c"]));
    }
}
