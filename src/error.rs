//! Typed errors of the library. Each says what failed, where, and what to do.

use std::path::PathBuf;

/// A place in a source file, 1-based line.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    pub file: String,
    pub line: usize,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// One candidate for a site that could not be decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub location: Location,
    /// What the candidate is, e.g. `StreamyAgent.prompt`.
    pub name: String,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: no such file or folder")]
    MissingPath { path: PathBuf },

    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{path}: invalid config: {message}")]
    Config { path: PathBuf, message: String },

    #[error(
        "{root}: no ACP agent found ({detail}); point acp-patch at the agent's folder, or pin the sites in acp-patch.toml"
    )]
    NoAgent { root: PathBuf, detail: String },

    #[error("{}", ambiguous_message(site, candidates, pin_key))]
    Ambiguous {
        site: &'static str,
        candidates: Vec<Candidate>,
        pin_key: &'static str,
    },

    #[error("{}", unlocatable_message(site, detail, pin_key))]
    Unlocatable {
        site: &'static str,
        detail: String,
        pin_key: &'static str,
    },

    #[error("{location}: {message}; fix the syntax error first (nothing was written)")]
    Parse { location: Location, message: String },

    #[error(
        "{root}: the git tree has uncommitted changes:\n{}\n  commit or stash them, or pass --allow-dirty (nothing was written)",
        files.iter().map(|f| format!("    {f}")).collect::<Vec<_>>().join("\n")
    )]
    DirtyTree { root: PathBuf, files: Vec<String> },

    #[error("{file}: is read-only; make it writable (nothing was written)")]
    ReadOnly { file: String },

    #[error(
        "{file}: the patched file would not parse ({message}); this is a bug in acp-patch, nothing was written"
    )]
    WouldBreak { file: String, message: String },

    #[error(
        "{file}:{line}: the {piece} acp-patch inserted was changed by hand: {detail}; revert takes out only what apply wrote, byte for byte: restore it (e.g. from git) or take acp-patch's code out by hand (nothing was written)"
    )]
    HandEdited {
        file: String,
        line: usize,
        piece: String,
        detail: String,
    },

    #[error(
        "{file}:{line}: revert cannot give back the tree apply started from: {detail}; take acp-patch's code out by hand (nothing was written)"
    )]
    NotRevertible {
        file: String,
        line: usize,
        detail: String,
    },

    #[error("{file}:{line}: {message}")]
    Unsupported {
        file: String,
        line: usize,
        message: String,
    },
}

/// `rust.prompt` → (`rust`, `prompt`, an example pin); a bare key is a `[python]` pin.
fn pin_section(pin_key: &str) -> (&str, &str, &'static str) {
    match pin_key.split_once('.') {
        Some(("rust", key)) => ("rust", key, "src/agent.rs:Agent::prompt"),
        Some((section, key)) => (section, key, "path/to/file:Class.method"),
        None => ("python", pin_key, "path/to/file.py:Class.method"),
    }
}

fn unlocatable_message(site: &str, detail: &str, pin_key: &str) -> String {
    let (section, key, example) = pin_section(pin_key);
    format!(
        "could not locate the {site}: {detail}\n  pin it in acp-patch.toml:\n    [{section}]\n    {key} = \"{example}\""
    )
}

fn ambiguous_message(site: &str, candidates: &[Candidate], pin_key: &str) -> String {
    let mut s = format!(
        "found {} candidates for the {site}; nothing was written:\n",
        candidates.len()
    );
    for c in candidates {
        s.push_str(&format!("    {}  {}\n", c.location, c.name));
    }
    let (section, key, fallback) = pin_section(pin_key);
    let example = candidates
        .first()
        .map(|c| format!("{}:{}", c.location.file, c.name))
        .unwrap_or_else(|| fallback.into());
    s.push_str(&format!(
        "  pin one in acp-patch.toml:\n    [{section}]\n    {key} = \"{example}\""
    ));
    s
}

impl Error {
    /// The exit code this error maps to: 1 = could not patch (nothing written), 2 = usage or I/O.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::MissingPath { .. } | Error::Io { .. } | Error::Config { .. } => 2,
            _ => 1,
        }
    }

    /// Where the error is, for machine output (GitHub annotations, JSON).
    pub fn location(&self) -> Option<Location> {
        match self {
            Error::Parse { location, .. } => Some(location.clone()),
            Error::Ambiguous { candidates, .. } => candidates.first().map(|c| c.location.clone()),
            Error::Unsupported { file, line, .. } => Some(Location {
                file: file.clone(),
                line: *line,
            }),
            Error::NotRevertible { file, line, .. } => Some(Location {
                file: file.clone(),
                line: *line,
            }),
            Error::HandEdited { file, line, .. } => Some(Location {
                file: file.clone(),
                line: *line,
            }),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
