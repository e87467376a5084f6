//! One module per language, all behind [`Language`].

pub mod anchors;
pub(crate) mod parts;
pub(crate) mod pieces;
pub mod python;
pub mod rust;
pub(crate) mod seal;
pub mod survey;
pub(crate) mod tree;
pub mod typescript;

use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::project::{Options, Project};
use crate::report::Report;

pub trait Language: Sync {
    fn name(&self) -> &'static str;
    /// File endings this language owns.
    fn extensions(&self) -> &'static [&'static str];
    /// A cheap text test: could this file take part in an ACP agent? (saves parsing)
    fn worth_parsing(&self, text: &str) -> bool;
    /// The test a file of this language must pass for any step to read its text (the words
    /// of the prefilter, detection, the markers of inserted code); `None`: every file's text
    /// is kept (a pinned agent, whose pins may name any file). Files that fail it are read
    /// once and only listed ([`Project::dormant`]); a step that follows the agent into one
    /// reads it again.
    fn keeps(&self, project: &Project) -> Option<Keeps>;
    /// The first syntax error of a text: (byte offset, message).
    fn syntax_error(&self, text: &str) -> Option<(usize, String)>;
    /// [`Language::syntax_error`] for the text of a file at `path` (a language whose grammar
    /// depends on the file ending, like TSX, overrides it).
    fn syntax_error_at(&self, path: &std::path::Path, text: &str) -> Option<(usize, String)> {
        let _ = path;
        self.syntax_error(text)
    }
    /// Whether the tree holds an agent of this language.
    fn detect(&self, project: &Project) -> bool;
    /// Every edit apply would make (empty when all is present).
    fn plan(&self, project: &Project) -> Result<Plan>;
    /// What `acp-patch init` lists: every pinnable site planning decided (or could not), in
    /// order, beside the plan's outcome; when planning stops, the sites decided before the stop.
    fn survey(&self, project: &Project) -> (Result<()>, Vec<survey::Site>);
    /// What is present and what is missing: one report per agent of this language in the
    /// tree (two Python agents under their own import roots are judged each on its own).
    fn verify(&self, project: &Project) -> Result<Vec<Report>>;
    /// The start-up check of the files as the patch leaves them (`after`), beyond the
    /// in-process re-parse: compiled and loaded with the language's own tools where they are
    /// on the machine (see `lang/<language>/toolchain.rs`). What fails unpatched too (asked of
    /// `unpatched` only then) is a note; a failure the patch causes is an error, which aborts
    /// apply and fails verify's `parses` / `starts` rows.
    fn startup_check(
        &self,
        _project: &Project,
        _files: &[crate::toolchain::Patched],
        _unpatched: crate::toolchain::Unpatched,
    ) -> Result<crate::toolchain::Startup> {
        Ok(crate::toolchain::Startup::default())
    }
    /// Starts, on threads of its own, what the start-up check will need and can be found
    /// before the analysis (the interpreter, the fingerprint of the tree): called once the
    /// tree is known to hold an agent of this language, by a command that runs the check.
    fn prefetch_toolchain(&self, _project: &Project) {}
    /// The command `--check-build` runs in a copy of the tree at `dir` (e.g. `tsc --noEmit`):
    /// `None` when the language has none, `Some(Err(why))` when its tool is not at hand.
    fn build_check(
        &self,
        _project: &Project,
        _dir: &std::path::Path,
    ) -> Option<std::result::Result<std::process::Command, String>> {
        None
    }
    /// Every part with the files it indexes: revert takes the present ones out (see
    /// [`parts::Inventory`] for what they must say).
    fn inventory(&self, project: &Project) -> Result<parts::Inventory>;
}

pub fn all() -> Vec<&'static dyn Language> {
    vec![&python::Python, &rust::Rust, &typescript::TypeScript]
}

/// The file endings every language reads.
pub fn extensions() -> Vec<&'static str> {
    all()
        .iter()
        .flat_map(|l| l.extensions().iter().copied())
        .collect()
}

/// The tree at `root` as the languages read it (their files only), the texts no language
/// keeps ([`Language::keeps`]) dropped once read, and those of a language that detects no
/// agent in it.
pub fn load(root: &std::path::Path, opts: &Options) -> Result<Project> {
    let mut project = load_keeping_words(root, opts)?;
    // a language that holds no agent here is never analysed: its texts are not kept either
    for l in all() {
        if !l.detect(&project) {
            project.make_dormant(l.extensions());
        }
    }
    Ok(project)
}

/// A language's test of whether a text is kept ([`Language::keeps`]).
pub type Keeps = fn(&str) -> bool;

fn load_keeping_words(root: &std::path::Path, opts: &Options) -> Result<Project> {
    Project::load_keeping(root, opts, &extensions(), &|project: &Project| {
        let by_language: Vec<(&'static [&'static str], Option<Keeps>)> = all()
            .iter()
            .map(|l| (l.extensions(), l.keeps(project)))
            .collect();
        Box::new(move |path: &std::path::Path, text: &str| {
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            by_language
                .iter()
                .find(|(exts, _)| exts.contains(&ext))
                .is_none_or(|(_, keeps)| keeps.is_none_or(|keeps| keeps(text)))
        })
    })
}

/// What apply and verify say when an engine-level refinement does not fit the agent (several
/// hand-offs, a site it cannot find) and the protocol strategy patches it instead.
pub(crate) fn fallback_note(language: &str, e: &Error) -> String {
    let why = match e {
        Error::Ambiguous {
            site, candidates, ..
        } => format!(
            "found {} candidates for the {site}: {}",
            candidates.len(),
            candidates
                .iter()
                .map(|c| format!("{} {}", c.location, c.name))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => {
            let text = other.to_string();
            let first = text.lines().next().unwrap_or_default();
            first
                .trim_end_matches(" (nothing was written)")
                .trim_end_matches("; nothing was written")
                .trim_end_matches(':')
                .to_string()
        }
    };
    format!(
        "{language}: patched with the protocol strategy: the engine-level one does not fit ({why}); `[{language}] strategy = \"engine\"` in acp-patch.toml insists on it"
    )
}

/// The refusal when `strategy = "engine"` is pinned but the agent is not engine-shaped.
pub(crate) fn not_engine_shaped(project: &Project, language: &str, why: &str) -> Error {
    Error::Config {
        path: project.root.join(crate::config::FILE_NAME),
        message: format!(
            "`[{language}] strategy = \"engine\"` (or an engine-level pin) is set, but the agent is not engine-shaped: {why}; remove it to patch the agent with the protocol strategy (nothing was written)"
        ),
    }
}
