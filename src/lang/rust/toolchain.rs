//! The Rust toolchain check: `cargo check` on a temporary copy of the patched tree, under
//! `apply --check-build` (a crate has no cheaper start-up check than its build).

use crate::toolchain::find_on_path;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `cargo check` in DIR, building into `$CARGO_TARGET_DIR` or a folder in the system's
/// temporary folder kept per agent (so a second check is quick), never the agent's target/.
pub fn cargo_check_command(root: &Path, dir: &Path) -> std::result::Result<Command, String> {
    let cargo = std::env::var_os("CARGO")
        .map(PathBuf::from)
        .or_else(|| find_on_path("cargo"))
        .ok_or("cargo is not on PATH; install Rust (rustup) or leave out --check-build")?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            root.hash(&mut h);
            std::env::temp_dir().join(format!("acp-patch-check-target-{:016x}", h.finish()))
        });
    let mut cmd = Command::new(cargo);
    cmd.args(["check", "--quiet", "--message-format", "short"])
        .env("CARGO_TARGET_DIR", target)
        .current_dir(dir);
    Ok(cmd)
}
