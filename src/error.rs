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
        "{}:{line}: this template (from --templates or [templates] dir) renders code that does not {} ({message}; {compiler}, in {rendered}); fix the template (nothing was written)",
        template.display(), if *compiles { "compile" } else { "parse" }
    )]
    BadTemplate {
        template: PathBuf,
        line: usize,
        /// The rendered file where the compiler found it.
        rendered: String,
        compiler: String,
        message: String,
        /// A compile error (else the parser's).
        compiles: bool,
    },

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

    /// A site that could not be found, with the candidates a pin would accept (none: the
    /// detail says what to change instead; no placeholder pin is ever suggested).
    #[error("{}", not_found_message(site, detail, pin_key, candidates))]
    NotFound {
        site: &'static str,
        detail: String,
        pin_key: &'static str,
        candidates: Vec<Candidate>,
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
        "{file}: the patched file would not parse (line {line}: {message}); this is a bug in acp-patch, nothing was written"
    )]
    WouldBreak {
        file: String,
        /// The line of the patched text the parser stops at.
        line: usize,
        message: String,
    },

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
        "{file}:{line}: the runtime module was edited by hand since acp-patch wrote it (its checksum on line 1 no longer matches its text; {should}), and apply and revert replace or remove the module whole; undo the edit (e.g. `git checkout -- {file}`) and move your change into the agent's own code, or delete the file to take this version's module (nothing was written)"
    )]
    RuntimeEdited {
        file: String,
        line: usize,
        should: String,
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

    #[error("{path}: is a file; point acp-patch at the agent's folder")]
    NotAFolder { path: PathBuf },

    #[error("{root}: too large to read: {message} (nothing was read or written)")]
    TooLarge { root: PathBuf, message: String },

    #[error(
        "{file}:{line}: is not UTF-8 (it looks like {encoding}); acp-patch reads and writes UTF-8 only: convert it (e.g. `iconv -f LATIN1 -t UTF-8`) and re-run (nothing was written)"
    )]
    NotUtf8 {
        file: String,
        line: usize,
        encoding: String,
    },

    #[error(
        "{file}: is a symbolic link to {}; acp-patch never writes through a link: patch the file it points to (run acp-patch on that folder) or replace the link with a copy (nothing was written)",
        target.display()
    )]
    Symlink { file: String, target: PathBuf },

    #[error(
        "{root}: {message}; fix that, or pass --allow-dirty to write without the check (nothing was written)"
    )]
    GitFailed { root: PathBuf, message: String },

    #[error(
        "{root}: another acp-patch apply is writing this tree; wait for it to finish and re-run (nothing was written)"
    )]
    Locked { root: PathBuf },

    #[error(
        "{file}: changed on disk while acp-patch ran (saved in an editor?); nothing was written: re-run apply"
    )]
    Changed { file: String },

    #[error(
        "{file}: is owned by user {uid}, and acp-patch (user {me}) cannot keep that owner on the patched file; run acp-patch as that user (nothing was written)"
    )]
    Owner { file: String, uid: u32, me: u32 },

    #[error(
        "{file}:{line}: the patched file does not compile with {compiler}: {message}; nothing was written (a custom template? otherwise a bug in acp-patch)"
    )]
    WouldNotCompile {
        file: String,
        line: usize,
        compiler: String,
        message: String,
    },

    #[error(
        "{file}:{line}: the patched agent would not start: {} fails with {}: {}; unpatched it {}, so the patch is at fault. Nothing was written (a custom template? otherwise a bug in acp-patch)",
        failure.what, failure.by, failure.message, failure.unpatched
    )]
    WouldNotStart {
        file: String,
        line: usize,
        failure: Box<StartFailure>,
    },

    #[error("--check-build: {message} (nothing was written)")]
    Build { message: String },

    #[error(
        "{}, verify fails:\n{}\n  apply only inserts what is missing; fix these by hand (a piece renamed or edited?), or restore the files from git, and re-run (nothing was written)",
        if *nothing_to_insert { "every piece is there, but" } else { "after the patch" },
        problems.iter().map(|p| format!("    {p}")).collect::<Vec<_>>().join("\n")
    )]
    VerifyFails {
        problems: Vec<String>,
        nothing_to_insert: bool,
    },

    #[error("{path}: already exists; `acp-patch init --dry-run` prints the pins to add by hand")]
    Exists { path: PathBuf },

    #[error("interrupted by a signal before anything was written")]
    Interrupted,

    /// `--installed NAME` found no such agent.
    #[error("{name}: no installed agent by that name; looked {}; pass --python PY for the Python environment it is installed in, or point acp-patch at the package's folder", looked.join(", "))]
    NotInstalled { name: String, looked: Vec<String> },

    /// `--installed NAME` found it, but not as one folder acp-patch can patch.
    #[error("{name}: {message}")]
    InstalledShape { name: String, message: String },

    /// The installed package's folder (or the one its manifest goes in) cannot be written.
    #[error(
        "{dir}: not writable by this user, so the installed {name} cannot be patched there (nothing was written); run acp-patch as the user who installed it, or install the agent where you can write (`uv tool install`, `pipx install`, `npm install -g` with a user prefix)"
    )]
    NotWritable { name: String, dir: PathBuf },

    /// The manifest of an installed package is unreadable.
    #[error(
        "{path}: not a manifest acp-patch can read ({message}); remove it, then `acp-patch apply --installed` writes a new one"
    )]
    Manifest { path: PathBuf, message: String },

    /// An error of one agent in a tree that holds agents in several languages.
    #[error("{language} agent: {source}")]
    InAgent {
        language: &'static str,
        #[source]
        source: Box<Error>,
    },
}

/// `typescript.emitter` → (`typescript`, `emitter`, an example pin); a bare key is a
/// `[python]` pin. Module pins (`helpers`, `factories`) name a file: the example says so.
/// (Rust errors name real candidates: [`Error::NotFound`].)
pub fn pin_section(pin_key: &str) -> (&str, &str, &'static str) {
    match pin_key.split_once('.') {
        Some((section, key)) => (section, key, "path/to/file:Class.method"),
        None if matches!(pin_key, "helpers" | "factories") => {
            ("python", pin_key, "path/to/module.py")
        }
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

fn not_found_message(site: &str, detail: &str, pin_key: &str, candidates: &[Candidate]) -> String {
    let mut s = format!("could not locate the {site}: {detail}");
    if let Some(first) = candidates.first() {
        let (section, key, _) = pin_section(pin_key);
        s.push_str("\n  candidates a pin accepts:\n");
        for c in candidates {
            s.push_str(&format!("    {}  {}\n", c.location, c.name));
        }
        s.push_str(&format!(
            "  pin one in acp-patch.toml:\n    [{section}]\n    {key} = \"{}:{}\"",
            first.location.file, first.name
        ));
    }
    s
}

impl Error {
    /// The exit code this error maps to: 1 = could not patch (nothing written), 2 = usage or I/O.
    pub fn exit_code(&self) -> u8 {
        match self {
            Error::MissingPath { .. }
            | Error::Io { .. }
            | Error::Config { .. }
            | Error::BadTemplate { .. }
            | Error::NotAFolder { .. }
            | Error::TooLarge { .. }
            | Error::NotInstalled { .. }
            | Error::InstalledShape { .. }
            | Error::Manifest { .. } => 2,
            Error::InAgent { source, .. } => source.exit_code(),
            _ => 1,
        }
    }

    /// A stable name of the error, for machine output.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::MissingPath { .. } => "missing_path",
            Error::Io { .. } => "io",
            Error::Config { .. } => "config",
            Error::BadTemplate { .. } => "bad_template",
            Error::NoAgent { .. } => "no_agent",
            Error::Ambiguous { .. } => "ambiguous",
            Error::Unlocatable { .. } | Error::NotFound { .. } => "unlocatable",
            Error::Parse { .. } => "parse",
            Error::DirtyTree { .. } => "dirty_tree",
            Error::ReadOnly { .. } => "read_only",
            Error::WouldBreak { .. } => "would_break",
            Error::Unsupported { .. } => "unsupported",
            Error::NotAFolder { .. } => "not_a_folder",
            Error::TooLarge { .. } => "too_large",
            Error::NotUtf8 { .. } => "not_utf8",
            Error::Symlink { .. } => "symlink",
            Error::GitFailed { .. } => "git_failed",
            Error::Locked { .. } => "locked",
            Error::Changed { .. } => "changed",
            Error::Owner { .. } => "owner",
            Error::WouldNotCompile { .. } => "would_not_compile",
            Error::WouldNotStart { .. } => "would_not_start",
            Error::Build { .. } => "build",
            Error::VerifyFails { .. } => "verify_fails",
            Error::Exists { .. } => "exists",
            Error::HandEdited { .. } => "hand_edited",
            Error::RuntimeEdited { .. } => "runtime_edited",
            Error::NotRevertible { .. } => "not_revertible",
            Error::Interrupted => "interrupted",
            Error::NotInstalled { .. } => "not_installed",
            Error::InstalledShape { .. } => "installed_shape",
            Error::NotWritable { .. } => "not_writable",
            Error::Manifest { .. } => "manifest",
            Error::InAgent { source, .. } => source.kind(),
        }
    }

    /// Where the error is, for machine output (GitHub annotations, JSON).
    pub fn location(&self) -> Option<Location> {
        let at = |file: &String, line: usize| {
            Some(Location {
                file: file.clone(),
                line,
            })
        };
        match self {
            Error::Parse { location, .. } => Some(location.clone()),
            Error::Ambiguous { candidates, .. } | Error::NotFound { candidates, .. } => {
                candidates.first().map(|c| c.location.clone())
            }
            Error::Unsupported { file, line, .. }
            | Error::NotUtf8 { file, line, .. }
            | Error::NotRevertible { file, line, .. }
            | Error::HandEdited { file, line, .. }
            | Error::RuntimeEdited { file, line, .. }
            | Error::WouldNotCompile { file, line, .. }
            | Error::WouldNotStart { file, line, .. } => at(file, *line),
            Error::ReadOnly { file }
            | Error::Symlink { file, .. }
            | Error::Changed { file }
            | Error::Owner { file, .. } => at(file, 1),
            Error::WouldBreak { file, line, .. } => at(file, *line),
            Error::BadTemplate { template, line, .. } => at(&template.display().to_string(), *line),
            Error::InAgent { source, .. } => source.location(),
            _ => None,
        }
    }

    /// The candidates of an ambiguous site.
    pub fn candidates(&self) -> &[Candidate] {
        match self {
            Error::Ambiguous { candidates, .. } => candidates,
            Error::InAgent { source, .. } => source.candidates(),
            _ => &[],
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn io_err(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}

/// What failed in a start-up check ([`Error::WouldNotStart`]).
#[derive(Debug, Clone)]
pub struct StartFailure {
    /// What failed: `` `import pkg.mod` ``, `` the import of `./x.js` ``.
    pub what: String,
    /// The interpreter or tool that ran it: `Python 3.12.1 (/usr/bin/python3.12)`.
    pub by: String,
    /// The last line of the traceback (or the resolver's word).
    pub message: String,
    /// How the unpatched tree fares: `imports`, `fails differently (...)`.
    pub unpatched: String,
}
