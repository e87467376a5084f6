//! The record beside an installed package (`<site-packages or node_modules>/.acp-patch/
//! <package>.json`): which version acp-patch patched, and each file it created or changed
//! with its hash before and after. The package manager never lists it, so it outlives a
//! reinstall or upgrade, and then says that the files are no longer as patched.

use super::{Ecosystem, Installed};
use crate::commands::ApplyOutcome;
use crate::diff::Change;
use crate::error::{Error, Result, io_err};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The acp-patch that wrote it (`0.1.0 (commit date)`).
    pub acp_patch: String,
    pub package: String,
    pub version: String,
    pub ecosystem: Ecosystem,
    /// The folder patched.
    pub root: String,
    pub env_prefix: String,
    /// Paths relative to `root`, sorted.
    pub files: Vec<FileRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    pub path: String,
    /// `created` (a runtime module) or `modified`.
    pub change: String,
    /// Absent for a created file.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub before_sha256: Option<String>,
    pub after_sha256: String,
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Manifest {
    pub fn read(path: &Path) -> Result<Option<Self>> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(path)(e)),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| Error::Manifest {
                path: path.to_path_buf(),
                message: e.to_string(),
            })
    }

    /// The record after an apply that wrote: this apply's files, and the files an earlier
    /// apply created that are still as it left them (a runtime module a reinstall kept,
    /// since the package manager does not know it).
    pub fn after_apply(found: &Installed, outcome: &ApplyOutcome, previous: Option<&Self>) -> Self {
        let mut files: Vec<FileRecord> = outcome
            .changes
            .iter()
            .filter(|c| c.change != Change::Delete)
            .map(|c| FileRecord {
                path: c.rel.clone(),
                change: if c.change == Change::Create {
                    "created".into()
                } else {
                    "modified".into()
                },
                before_sha256: (c.change != Change::Create).then(|| sha256(c.before.as_bytes())),
                after_sha256: sha256(c.after.as_bytes()),
            })
            .collect();
        for old in previous.map(|m| m.files.as_slice()).unwrap_or_default() {
            let kept = !files.iter().any(|f| f.path == old.path)
                && current_sha256(&found.root, &old.path).as_deref() == Some(&old.after_sha256);
            if kept {
                files.push(old.clone());
            }
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Self {
            acp_patch: crate::VERSION.to_string(),
            package: found.package.clone(),
            version: found.version.clone(),
            ecosystem: found.ecosystem,
            root: found.root.display().to_string(),
            env_prefix: outcome.env_prefix.clone(),
            files,
        }
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        let dir = path.parent().expect("a file in .acp-patch/");
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let mut text = serde_json::to_string_pretty(self).expect("a manifest serializes");
        text.push('\n');
        // temporary file + rename, as apply writes
        let tmp = dir.join(format!(
            ".{}.tmp-{}",
            self.package.replace('/', "+"),
            std::process::id()
        ));
        std::fs::write(&tmp, text).map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, path).map_err(io_err(path))
    }

    /// The recorded files that are no longer as apply left them.
    fn changed_since(&self, found: &Installed) -> Vec<&str> {
        self.files
            .iter()
            .filter(|f| {
                current_sha256(&found.root, &f.path).as_deref() != Some(f.after_sha256.as_str())
            })
            .map(|f| f.path.as_str())
            .collect()
    }

    /// A word on what happened since this record was written (before a new apply or a
    /// revert): the package upgraded or reinstalled, files changed.
    pub fn since(&self, found: &Installed) -> String {
        let changed = self.changed_since(found);
        let version = if self.version != found.version {
            format!(
                "{} was upgraded from {} to {} since acp-patch patched it",
                found.package, self.version, found.version
            )
        } else if !changed.is_empty() {
            format!(
                "{} {} was reinstalled or edited since acp-patch patched it",
                found.package, found.version
            )
        } else {
            format!(
                "{} {} is as acp-patch patched it",
                found.package, found.version
            )
        };
        if changed.is_empty() {
            version
        } else {
            format!(
                "{version} ({} no longer as patched: {})",
                changed.len(),
                changed.join(", ")
            )
        }
    }

    /// `verify --installed`'s word on the record.
    pub fn state(&self, found: &Installed) -> String {
        format!(
            "{} (recorded by acp-patch {} in {})",
            self.since(found),
            self.acp_patch,
            found.manifest_path().display()
        )
    }
}

fn current_sha256(root: &Path, rel: &str) -> Option<String> {
    std::fs::read(root.join(rel)).ok().map(|b| sha256(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_sha256_hex() {
        assert_eq!(
            sha256(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
