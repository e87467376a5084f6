//! The embedded ACP smoke run: `acp-patch smoke [PATH]`.
//!
//! Starts a scripted LLM on 127.0.0.1 that speaks OpenAI chat, OpenAI Responses and Anthropic
//! Messages ([`llm`]), spawns the agent in its folder and process group — its home, config and
//! workspace in a temporary folder ([`sandbox`]), in a loopback-only network namespace when
//! possible — and drives its sessions as an ACP client ([`client`]); merges what a client would
//! show ([`transcript`], [`timeline`]), judges the raw lines ([`checks`]), checks the agent's
//! folder is untouched ([`trace`]) and reports ([`report`], printed per format by
//! `crate::output`'s printers);
//! a protocol v2 recording is read the way v1 is ([`wire_v2`]). Presets ([`presets`]) know how
//! to start the agents we know. Exit codes: 0 every check of the patch passes (`--strict`: the
//! findings about the agent too), 1 one failed, 2 could not run.

pub mod checks;
pub mod client;
pub mod config;
pub mod llm;
pub mod presets;
pub mod report;
pub mod run;
pub mod sandbox;
pub mod timeline;
pub mod trace;
pub mod transcript;
pub mod wire;
pub mod wire_v2;

use std::path::PathBuf;

pub use report::SmokeReport;

pub use run::{run, run_async};

use config::Overrides;

/// Why a smoke run could not happen (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum SmokeError {
    #[error("bad configuration: {0}")]
    Config(String),
    #[error("could not start the scripted LLM: {0}")]
    Llm(#[source] std::io::Error),
    #[error("could not spawn the agent `{cmd}`: {source}")]
    Spawn {
        cmd: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "initialize failed: {message}; agent {exit}{}",
        tail_suffix(stderr_tail)
    )]
    Initialize {
        message: String,
        exit: String,
        stderr_tail: String,
    },
    #[error(
        "session/new failed: {message}; agent {exit}{}",
        tail_suffix(stderr_tail)
    )]
    SessionNew {
        message: String,
        exit: String,
        stderr_tail: String,
    },
    #[error("interrupted")]
    Interrupted,
    #[error("{0}")]
    Runtime(#[source] std::io::Error),
}

fn tail_suffix(tail: &str) -> String {
    if tail.is_empty() {
        "; no stderr".to_string()
    } else {
        format!("\nagent stderr (tail):\n{tail}")
    }
}

/// A smoke run's inputs: the folder and the overrides of its acp-patch.toml.
#[derive(Debug, Clone)]
pub struct SmokeOptions {
    pub path: PathBuf,
    pub overrides: Overrides,
}

impl SmokeOptions {
    /// A run of the agent in `path` as its acp-patch.toml says, nothing overridden (what
    /// `verify --smoke` runs).
    pub fn for_folder(path: &std::path::Path) -> Self {
        Self {
            path: path.to_path_buf(),
            overrides: Overrides::default(),
        }
    }
}

/// The exit code of a run: 0 the verdict passed, 1 it failed, 2 the run could not happen.
pub fn exit_code(result: &Result<SmokeReport, SmokeError>) -> u8 {
    match result {
        Ok(r) if r.passed => 0,
        Ok(_) => 1,
        Err(_) => 2,
    }
}
