//! The embedded ACP smoke run (filled in by the smoke work).

/// Arguments of `acp-patch smoke` (and `verify --smoke`).
#[derive(Debug, Clone, clap::Args)]
pub struct SmokeArgs {
    /// The agent's folder.
    #[arg(default_value = ".")]
    pub path: std::path::PathBuf,
}

/// Runs the smoke test from the command line; returns the process exit code (0, 1 or 2).
pub fn run_cli(_args: &SmokeArgs) -> i32 {
    eprintln!("acp-patch smoke: not built yet");
    2
}
