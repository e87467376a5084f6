//! What every language module produces — `Part`s: an insertion plus whether it is already
//! there — and the two things made from them: apply's plan and verify's report. One
//! computation serves both, so a dry run, apply and verify can never disagree.

mod choose;
mod report;

pub use choose::choose;
pub use report::{Finding, Naming, report, report_any};

use crate::error::{Error, Location, Result};
use crate::plan::Plan;
use crate::source::SourceFile;
use std::sync::OnceLock;
use tree_sitter::Tree;

/// How a language parses a text and finds its first syntax error.
#[derive(Clone, Copy)]
pub struct Parser {
    /// Given the file's own text: the tree cache keeps it instead of a copy.
    pub parse: fn(&std::sync::Arc<str>) -> Tree,
    pub first_error: fn(&Tree) -> Option<(usize, String)>,
}

/// A source file with its syntax tree, parsed when first asked for: a locator that skips a
/// file by its text (no needle of its anchor in it) never pays for its tree.
#[derive(Clone)]
pub struct Parsed {
    pub file: SourceFile,
    parser: Parser,
    tree: OnceLock<Tree>,
    error: OnceLock<Option<(usize, String)>>,
}

impl Parsed {
    pub fn new(file: SourceFile, parser: Parser) -> Self {
        Parsed {
            file,
            parser,
            tree: OnceLock::new(),
            error: OnceLock::new(),
        }
    }

    pub fn tree(&self) -> &Tree {
        self.tree
            .get_or_init(|| (self.parser.parse)(&self.file.text))
    }

    /// The first syntax error: (byte offset, message).
    pub fn error(&self) -> Option<&(usize, String)> {
        self.error
            .get_or_init(|| (self.parser.first_error)(self.tree()))
            .as_ref()
    }

    /// Whether the tree has been parsed already.
    pub fn is_parsed(&self) -> bool {
        self.tree.get().is_some()
    }

    /// The same file with another text (the tree as a plan leaves it), parsed when asked.
    pub fn with_text(&self, file: SourceFile) -> Self {
        Parsed::new(file, self.parser)
    }
}

/// What the plan and the report need of a parsed file, whatever parsed it (tree-sitter,
/// or `syn` for Rust).
pub trait ParsedSource {
    fn source(&self) -> &SourceFile;
    /// The first syntax error: (byte offset, message).
    fn syntax_error(&self) -> Option<&(usize, String)>;
    /// The first syntax error of a file some locator parsed (one skipped by its text could
    /// hold no anchor, so its syntax is no concern of the run).
    fn read_syntax_error(&self) -> Option<&(usize, String)> {
        self.syntax_error()
    }
}

impl ParsedSource for Parsed {
    fn source(&self) -> &SourceFile {
        &self.file
    }

    fn syntax_error(&self) -> Option<&(usize, String)> {
        self.error()
    }

    fn read_syntax_error(&self) -> Option<&(usize, String)> {
        self.tree.get()?;
        self.error()
    }
}

/// One insertion, and whether (and where) it is already present.
#[derive(Debug, Clone)]
pub struct Part {
    /// The verify checks this part belongs to.
    pub checks: &'static [&'static str],
    pub label: &'static str,
    pub file: usize,
    pub offset: usize,
    /// Bytes from `offset` the part replaces (0: an insertion; a runtime module that is out
    /// of date is replaced whole).
    pub replaces: usize,
    pub text: String,
    /// 1-based line where the part already is, if present.
    pub present: Option<usize>,
    /// Byte offset where the present text starts, when the language knows it exactly: revert
    /// then takes it out there (needed for short pieces such as a wrapper's `)`), instead of
    /// searching around the `present` line.
    pub present_at: Option<usize>,
    /// 1-based line of the anchor (where apply would insert).
    pub anchor_line: usize,
    /// What revert puts back in place of a present part (empty: nothing; a part that
    /// replaced the agent's code with a form holding it gives that code back).
    pub restore: String,
}

/// Where a language keeps its tests: folder names and file name patterns. Files there are
/// never the agent's code (nothing in them is patched).
pub struct TestFiles {
    pub dirs: &'static [&'static str],
    pub prefixes: &'static [&'static str],
    pub suffixes: &'static [&'static str],
    /// Parts of a file name (`.test.`).
    pub infixes: &'static [&'static str],
    pub names: &'static [&'static str],
}

impl TestFiles {
    /// Whether the file at `rel` (relative, `/`-separated) is a test or lives among them.
    pub fn holds(&self, rel: &str) -> bool {
        let name = rel.rsplit('/').next().unwrap_or(rel);
        rel.split('/').rev().skip(1).any(|d| self.dirs.contains(&d))
            || self.prefixes.iter().any(|p| name.starts_with(p))
            || self.suffixes.iter().any(|s| name.ends_with(s))
            || self.infixes.iter().any(|i| name.contains(i))
            || self.names.contains(&name)
    }
}

/// Which files hold the agent's own code, as a language says it: not its tests, not the
/// runtime module acp-patch writes, not a file the language counts as someone else's
/// (TypeScript: the agent's own copy of the SDK). Nothing outside them is patched.
pub struct AgentFiles {
    pub tests: TestFiles,
    /// The first line of the runtime module (after any BOM).
    pub runtime_marker: &'static str,
    /// A file that is not the agent's although it is no test.
    pub foreign: Option<fn(&Parsed) -> bool>,
}

impl AgentFiles {
    /// Whether `p` is one of the agent's files.
    pub fn holds(&self, p: &Parsed) -> bool {
        !(self.tests.holds(&p.file.rel)
            || p.file
                .text
                .trim_start_matches('\u{feff}')
                .starts_with(self.runtime_marker)
            || self.foreign.is_some_and(|f| f(p)))
    }
}

impl Part {
    /// `text` inserted at `offset` of `source` (the file at index `file`), already there at
    /// line `present` when the tree holds it. The one way every language's builder makes a
    /// piece.
    pub fn insertion(
        source: &SourceFile,
        file: usize,
        checks: &'static [&'static str],
        label: &'static str,
        offset: usize,
        text: String,
        present: Option<usize>,
    ) -> Part {
        Part {
            checks,
            label,
            file,
            offset,
            replaces: 0,
            text,
            present,
            present_at: None,
            anchor_line: source.line_of(offset),
            restore: String::new(),
        }
    }

    /// The piece, present exactly at byte `at` (revert takes it out there).
    pub fn present_at(mut self, at: Option<usize>) -> Part {
        self.present_at = at;
        self
    }

    /// A runtime module, whole: `current` when the file is already `text`, else replacing the
    /// file's `replaces` bytes (0 when the file is new).
    pub fn runtime(
        file: usize,
        checks: &'static [&'static str],
        text: String,
        current: bool,
        replaces: usize,
    ) -> Part {
        Part {
            checks,
            label: RUNTIME_LABEL,
            file,
            offset: 0,
            replaces: if current { 0 } else { replaces },
            text,
            present: current.then_some(1),
            present_at: None,
            anchor_line: 1,
            restore: String::new(),
        }
    }
}

/// Every part of a tree with the files they index: what [`crate::lang::Language::inventory`]
/// hands to revert, which takes the present parts out again.
///
/// What revert relies on (each language keeps it): a part apply inserted is reported on the
/// patched tree as present, its `present` line inside the inserted text and its `text` the
/// exact bytes apply inserted (at the end of a file without a final newline: a line ending,
/// then the text without its last one); a part present in a form apply does not write (the
/// agent's own code) has an empty `text` and is left alone; a file apply created is one part
/// at offset 0 whose text is the whole file.
pub struct Inventory {
    pub files: Vec<SourceFile>,
    pub parts: Vec<Part>,
    /// Text every piece of inserted code holds (verify's `Naming::marker`): a file that
    /// still holds it once the parts are out keeps acp-patch code apply would not account
    /// for (moved or copied by hand), and revert refuses.
    pub marker: &'static str,
}

impl Inventory {
    pub fn new<P: ParsedSource>(files: &[P], parts: Vec<Part>, marker: &'static str) -> Inventory {
        Inventory {
            files: files.iter().map(|p| p.source().clone()).collect(),
            parts,
            marker,
        }
    }
}

pub const CHECK_START: &[&str] = &["hook.start"];
pub const CHECK_COMPLETE: &[&str] = &["hook.complete"];
pub const CHECK_HOOKS: &[&str] = &["hook.start", "hook.heartbeat", "hook.complete"];
pub const CHECK_DECLARED: &[&str] = &["callback.declared"];
pub const CHECK_STORED: &[&str] = &["callback.stored"];
pub const CHECK_HELPERS: &[&str] = &["helpers"];
pub const CHECK_FACTORY: &[&str] = &["factory"];
pub const CHECK_WIRING: &[&str] = &["wiring"];
pub const CHECK_HOLD: &[&str] = &["coalescing"];

/// The protocol-anchored strategy's own checks (every language, same ids): the runtime
/// module is there and current; every SDK send of a session update goes through its
/// emitter; the card's connection comes from where the SDK hands it over; the turn's end
/// closes the card; every name inserted code reads is bound where it reads it.
pub const CHECK_RUNTIME: &[&str] = &["runtime"];
/// The label of a runtime module's part (offset 0, the whole file): every language's, so
/// plan, report and revert judge a module on disk the same way ([`crate::lang::seal`]).
pub const RUNTIME_LABEL: &str = "runtime module";
/// The checks a protocol-strategy runtime module proves (it holds the card's start, heartbeat
/// and completion and the text hold).
pub const CHECK_RUNTIME_MODULE: &[&str] = &[
    "runtime",
    "hook.start",
    "hook.heartbeat",
    "hook.complete",
    "coalescing",
];
pub const CHECK_SENDS: &[&str] = &["sends"];
pub const CHECK_CONNECTION: &[&str] = &["connection"];
pub const CHECK_TURN_END: &[&str] = &["turn_end"];
pub const CHECK_BOUND: &[&str] = &["bound"];

/// Report rows of a protocol-anchored agent, in order (`parses` is always added last).
pub const PROTOCOL_CHECKS: &[&str] = &[
    "runtime",
    "hook.start",
    "hook.heartbeat",
    "hook.complete",
    "sends",
    "connection",
    "turn_end",
    "coalescing",
    "bound",
];

/// Verify's checks, in report order, for the engine-level shapes (Hermes, pi-acp, ...): the
/// rows every language reports, before the ones a language adds ([`engine_checks`]).
pub const ENGINE_CHECKS: &[&str] = &[
    "hook.start",
    "hook.heartbeat",
    "hook.complete",
    "callback.declared",
    "callback.stored",
    "helpers",
    "factory",
    "wiring",
    "coalescing",
];

/// The report rows of a language's engine-level shape: [`ENGINE_CHECKS`], then the rows only
/// that language proves (Python: `bound`, its placement proof), in order.
pub fn engine_checks(extra: &[&'static str]) -> Vec<&'static str> {
    ENGINE_CHECKS.iter().chain(extra).copied().collect()
}

/// The three hook states, in the order of `HookCalls`.
pub const STATES: [&str; 3] = ["start", "heartbeat", "complete"];

/// The progress callback's call sites per state: (file index, line).
pub type HookCalls = [Vec<(usize, usize)>; 3];

pub fn parse_error<P: ParsedSource>(p: &P) -> Option<Error> {
    p.syntax_error().map(|(offset, message)| Error::Parse {
        location: Location {
            file: p.source().rel.clone(),
            line: p.source().line_of(*offset),
        },
        message: format!("{message}{}", on_a_long_line(&p.source().text, *offset)),
    })
}

/// Where on its line an error at `offset` is, when the line is too long to search by eye (a
/// minified bundle's): the column and the text there.
pub(crate) fn on_a_long_line(text: &str, offset: usize) -> String {
    let offset = offset.min(text.len());
    let start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |i| offset + i);
    if end - start <= 200 {
        return String::new();
    }
    let column = text[start..offset].chars().count() + 1;
    let near: String = text[offset..end].chars().take(60).collect();
    format!(
        " at column {column} of a {}-character line, at `{}`",
        text[start..end].chars().count(),
        near.trim_end()
    )
}

/// Apply's plan: every missing part once; a file to patch that does not parse is an error;
/// one that does not parse but needs nothing is noted and left alone.
pub fn plan<P: ParsedSource>(files: &[P], parts: &[Part]) -> Result<Plan> {
    for part in parts {
        if let Some(e) = runtime_edited(files[part.file].source(), part) {
            return Err(e); // replacing it whole would drop the edit without a word
        }
    }
    patched(files, parts)
}

/// [`plan`] without the refusal of a hand-edited runtime module: the patched text verify
/// proves placement on (its report names the edit as a failing row instead).
pub fn patched<P: ParsedSource>(files: &[P], parts: &[Part]) -> Result<Plan> {
    let mut plan = Plan::default();
    let mut seen = std::collections::HashSet::new();
    for part in parts.iter().filter(|p| p.present.is_none()) {
        if !seen.insert((part.file, part.offset, part.text.clone())) {
            continue; // one block can serve several checks
        }
        if let Some(e) = parse_error(&files[part.file]) {
            return Err(e);
        }
        plan.replace(
            files[part.file].source(),
            part.offset,
            part.replaces,
            part.text.clone(),
            part.label,
        );
    }
    for p in files {
        let file = p.source();
        if let Some((offset, msg)) = p.read_syntax_error()
            && !plan.files.iter().any(|f| f.file.path == file.path)
        {
            plan.notes.push(format!(
                "{}:{}: does not parse ({msg}); it needs no patch and was left alone",
                file.rel,
                file.line_of(*offset)
            ));
        }
    }
    plan.sort();
    Ok(plan)
}

/// A runtime module on disk that `part` would replace and that was edited by hand since
/// acp-patch wrote it: the refusal naming its first edited line.
pub fn runtime_edited(file: &crate::source::SourceFile, part: &Part) -> Option<Error> {
    if part.label != RUNTIME_LABEL || part.offset != 0 || !file.exists || part.present.is_some() {
        return None;
    }
    match crate::lang::seal::judge(&file.text, &part.text) {
        crate::lang::seal::OnDisk::Edited { line, should } => Some(Error::RuntimeEdited {
            file: file.rel.clone(),
            line,
            should,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::TestFiles;

    #[test]
    fn test_files_are_told_by_folder_and_name() {
        let tests = TestFiles {
            dirs: &["tests"],
            prefixes: &["test_"],
            suffixes: &["_test.py"],
            infixes: &[".spec."],
            names: &["conftest.py"],
        };
        for rel in [
            "tests/agent.py",
            "pkg/tests/deep/x.py",
            "pkg/test_agent.py",
            "agent_test.py",
            "a.spec.ts",
            "pkg/conftest.py",
        ] {
            assert!(tests.holds(rel), "{rel}");
        }
        // a file named like the folder is not in it; a name merely containing the words is code
        for rel in ["tests.py", "pkg/agent.py", "latest_agent.py", "contest.py"] {
            assert!(!tests.holds(rel), "{rel}");
        }
    }

    #[test]
    fn a_syntax_error_on_a_long_line_names_its_column_and_text() {
        let short = "let a = 1;\nlet b = ;\n";
        assert_eq!(super::on_a_long_line(short, 19), "");
        let long = format!("x\n{}let b = ;\n", "a = 1, ".repeat(40));
        let at = long.find("= ;").unwrap();
        assert_eq!(
            super::on_a_long_line(&long, at),
            " at column 287 of a 289-character line, at `= ;`"
        );
    }
}
