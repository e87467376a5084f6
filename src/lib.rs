//! acp-patch: a codemod that gives Agent Client Protocol agents a "Thinking..." card
//! (start, heartbeat, complete) and keeps their thought block in one piece.
//!
//! The library holds every phase (locate, plan, render, apply, verify, smoke); the
//! binary only parses arguments and maps results to exit codes.

pub mod commands;
pub mod config;
pub mod diff;
pub mod error;
pub mod installed;
pub mod lang;
pub mod needles;
pub mod output;
pub mod plan;
pub mod project;
pub mod render;
pub mod report;
pub mod series;
pub mod smoke;
pub mod source;
pub mod toolchain;
pub mod write;

/// `0.1.0 (0c13cb267115 2026-12-01)`: the version and the commit it was built from (see
/// build.rs).
pub const VERSION: &str = env!("ACP_PATCH_VERSION");
