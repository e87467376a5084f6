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
/// first; only when all are staged are they renamed over the originals (a new file is
/// never renamed over one that appeared meanwhile), then files the plan removes are
/// removed. A failure restores the files already replaced, so the tree is left as it was.
pub fn write_plan(plan: &Plan) -> Result<()> {
    for fp in plan.files.iter().filter(|f| f.file.exists) {
        let meta = std::fs::metadata(&fp.file.path).map_err(io_err(&fp.file.path))?;
        if meta.permissions().readonly() {
            return Err(Error::ReadOnly {
                file: fp.file.rel.clone(),
            });
        }
    }
    let mut staged = Vec::new();
    for fp in plan.files.iter().filter(|f| !f.delete) {
        let path = &fp.file.path;
        let dir = path.parent().unwrap_or(Path::new("."));
        let perms = if fp.file.exists {
            std::fs::metadata(path).map_err(io_err(path))?.permissions()
        } else {
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o644)
        };
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
    let undo = |done: &[&crate::plan::FilePlan]| {
        for restored in done {
            if restored.file.exists {
                let _ = std::fs::write(&restored.file.path, restored.file.original());
            } else {
                let _ = std::fs::remove_file(&restored.file.path);
            }
        }
    };
    for (tmp, fp) in staged {
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
    Ok(())
}
