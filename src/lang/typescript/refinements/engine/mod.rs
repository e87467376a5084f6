//! The engine strategy (pi-acp-shaped agents): hooks at the hand-off to the engine and at the
//! turn's settling, a text-hold gate in the emitter, module-level blocks beside the class.

mod locate;
mod pieces;

pub use locate::probe;

use crate::error::{Error, Result};
use crate::lang::parts::{self, Parsed, Part};
use crate::project::Project;

/// Every part of the engine strategy (present or not).
pub fn analyze(
    decisions: &crate::lang::survey::Decisions,
    project: &Project,
    files: &[Parsed],
) -> Result<Vec<Part>> {
    let sites = match locate::locate(decisions, &project.root, files, &project.config.typescript) {
        Ok(s) => s,
        Err(
            e @ (Error::NoAgent { .. } | Error::Unlocatable { .. } | Error::Unsupported { .. }),
        ) => {
            return Err(files.iter().find_map(parts::parse_error).unwrap_or(e));
        }
        Err(e) => return Err(e),
    };
    if let Some(e) = parts::parse_error(&files[sites.file]) {
        return Err(e);
    }
    pieces::build(files, project, &sites)
}
