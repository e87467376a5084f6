//! One module per language, all behind [`Language`].

pub(crate) mod parts;
pub mod python;
pub mod rust;
pub(crate) mod tree;
pub mod typescript;

use crate::error::Result;
use crate::plan::Plan;
use crate::project::Project;
use crate::report::Report;

pub trait Language: Sync {
    fn name(&self) -> &'static str;
    /// File endings this language owns.
    fn extensions(&self) -> &'static [&'static str];
    /// A cheap text test: could this file take part in an ACP agent? (saves parsing)
    fn worth_parsing(&self, text: &str) -> bool;
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
    /// What is present and what is missing.
    fn verify(&self, project: &Project) -> Result<Report>;
    /// The start-up check of the files as the patch leaves them (`after`), beyond the
    /// in-process re-parse: compiled and loaded with the language's own tools where they are
    /// on the machine (see `lang/<language>/toolchain.rs`). What fails unpatched too (asked of
    /// `unpatched` only then) is a note; a failure the patch causes is an error, which aborts
    /// apply and fails verify's `parses` / `starts` rows.
    fn startup_check(
        &self,
        _project: &Project,
        _files: &[crate::compile::Patched],
        _unpatched: crate::compile::Unpatched,
    ) -> Result<crate::compile::Startup> {
        Ok(crate::compile::Startup::default())
    }
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
