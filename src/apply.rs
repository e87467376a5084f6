//! Writing a plan: all or nothing, atomically, permissions kept.

use crate::error::{Error, Result, io_err};
use crate::plan::Plan;
use std::io::Write;
use std::path::Path;

/// Refuses a git work tree with uncommitted changes under `root` (tracked or untracked).
/// Outside a git work tree there is nothing to check.
pub fn check_clean(root: &Path) -> Result<()> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["status", "--porcelain", "--", "."])
        .output();
    let Ok(out) = out else { return Ok(()) };
    if !out.status.success() {
        return Ok(()); // not a git work tree
    }
    let files: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
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

/// Writes every patched file of the plan. Each file goes to a temporary file beside it
/// first; only when all are staged are they renamed over the originals. A failed rename
/// restores the files already replaced, so a failure leaves the tree as it was.
pub fn write_plan(plan: &Plan) -> Result<()> {
    for fp in &plan.files {
        let meta = std::fs::metadata(&fp.file.path).map_err(io_err(&fp.file.path))?;
        if meta.permissions().readonly() {
            return Err(Error::ReadOnly {
                file: fp.file.rel.clone(),
            });
        }
    }
    let mut staged = Vec::new();
    for fp in &plan.files {
        let path = &fp.file.path;
        let dir = path.parent().unwrap_or(Path::new("."));
        let perms = std::fs::metadata(path).map_err(io_err(path))?.permissions();
        let mut tmp = tempfile::Builder::new()
            .prefix(".acp-patch-")
            .tempfile_in(dir)
            .map_err(io_err(dir))?;
        tmp.write_all(fp.file.to_disk(&fp.new_text()).as_bytes())
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(io_err(tmp.path()))?;
        std::fs::set_permissions(tmp.path(), perms).map_err(io_err(tmp.path()))?;
        staged.push((tmp, fp));
    }
    let mut done: Vec<&crate::plan::FilePlan> = Vec::new();
    for (tmp, fp) in staged {
        if let Err(e) = tmp.persist(&fp.file.path) {
            for restored in done {
                let _ = std::fs::write(&restored.file.path, restored.file.original());
            }
            return Err(Error::Io {
                path: fp.file.path.clone(),
                source: e.error,
            });
        }
        done.push(fp);
    }
    Ok(())
}
