//! What the commands print: one `Format` for every command (each takes some of them,
//! `Formats`), one printer per format (text, JSON, GitHub annotations, HTML) behind one
//! trait, as ast-grep's printers are. Every printer writes the document a machine reads
//! to stdout and the words for a human to stderr; every path — refusals included — prints
//! in the chosen format. Writes to stdout return their error (a closed pipe ends the run
//! quietly, see main); writes to stderr are best effort. `smoke` renders a smoke run's
//! report (its text, page, annotations) for these printers.

mod format;
mod github;
mod html;
mod json;
mod patch;
pub mod smoke;
mod text;

use crate::commands::init::InitOutcome;
use crate::commands::{ApplyOutcome, RevertOutcome, VerifyOutcome};
use crate::error::Error;
use crate::smoke::report::SmokeReport;
use std::io::{self, Write};
use std::path::Path;

pub use github::{escape_data, escape_property};
pub use patch::Patch;
pub use text::report_text;

pub use format::{Format, Formats};

impl Format {
    pub fn printer(self) -> Box<dyn Printer> {
        printer(self)
    }
}

/// stdout and stderr, as the printers see them (tests pass buffers).
pub struct Streams<'a> {
    pub out: &'a mut dyn Write,
    pub err: &'a mut dyn Write,
}

impl Streams<'_> {
    /// A line for a human on stderr; a failed write there is not worth ending the run.
    pub fn say(&mut self, line: &str) {
        let _ = writeln!(self.err, "{line}");
    }
}

/// A smoke run's result (`smoke`, `verify --smoke`): its report, or why it could not run.
pub type SmokeResult = std::result::Result<SmokeReport, crate::smoke::SmokeError>;

/// Which command a refusal came from, and the folder it was pointed at.
pub struct Context<'a> {
    pub command: &'static str,
    pub root: &'a Path,
}

pub trait Printer {
    fn apply(&self, s: &mut Streams, outcome: &ApplyOutcome, dry_run: bool) -> io::Result<()>;
    fn verify(
        &self,
        s: &mut Streams,
        outcome: &VerifyOutcome,
        smoke: Option<&SmokeResult>,
    ) -> io::Result<()>;
    fn init(&self, s: &mut Streams, outcome: &InitOutcome, dry_run: bool) -> io::Result<()>;
    fn revert(&self, s: &mut Streams, outcome: &RevertOutcome, dry_run: bool) -> io::Result<()>;
    /// A command's refusal.
    fn error(&self, s: &mut Streams, cx: &Context, e: &Error) -> io::Result<()>;
    /// A smoke run (a run that could not happen: exit code 2).
    fn smoke(&self, s: &mut Streams, r: &SmokeResult) -> io::Result<()>;
}

pub fn printer(format: Format) -> Box<dyn Printer> {
    match format {
        // what is printed before the series exists (refusals) is text; the series itself is
        // `Patch`, which needs the run's tree and smoke runs
        Format::Text | Format::Patch => Box::new(text::Text),
        Format::Json => Box::new(json::Json),
        Format::Github => Box::new(github::Github),
        Format::Html => Box::new(html::Html),
    }
}

/// The human summary of an apply, on stderr (every format prints it).
fn apply_summary(s: &mut Streams, outcome: &ApplyOutcome) {
    for note in &outcome.notes {
        s.say(&format!("note: {note}"));
    }
    if outcome.nothing_to_do() {
        s.say("acp-patch: nothing to do: every piece is already in place");
        return;
    }
    for p in &outcome.placed {
        s.say(&format!("  {}:{}  {}", p.file, p.line, p.piece));
    }
    let verb = if outcome.written {
        "inserted"
    } else {
        "would insert"
    };
    s.say(&format!(
        "acp-patch: {verb} {} pieces into {} files ({} agent)",
        outcome.placed.len(),
        outcome.files.len(),
        outcome.language.replace('+', " and ")
    ));
}

/// The human summary of a revert, on stderr (every format prints it).
fn revert_summary(s: &mut Streams, outcome: &RevertOutcome) {
    for note in &outcome.notes {
        s.say(&format!("note: {note}"));
    }
    if outcome.nothing_to_revert() {
        s.say("acp-patch: nothing to revert: no piece acp-patch inserts is in place");
        return;
    }
    for p in &outcome.removed {
        s.say(&format!("  {}:{}  {}", p.file, p.line, p.piece));
    }
    let verb = if outcome.written {
        "removed"
    } else {
        "would remove"
    };
    s.say(&format!(
        "acp-patch: {verb} {} pieces from {} files ({} deleted; {} agent)",
        outcome.removed.len(),
        outcome.files.len(),
        outcome.deleted.len(),
        outcome.language.replace('+', " and ")
    ));
}

fn init_summary(s: &mut Streams, outcome: &InitOutcome, dry_run: bool) {
    let decided = outcome.sites.iter().filter(|x| x.decided).count();
    let total = outcome.sites.len();
    let sites = if total == 1 { "site" } else { "sites" };
    if outcome.appended && outcome.toml.is_empty() {
        s.say(&format!(
            "acp-patch: {} already lists the {total} {sites} (pinned or listed); nothing to add",
            outcome.path
        ));
    } else if outcome.kept > 0 {
        let verb = if dry_run { "would add" } else { "added" };
        s.say(&format!(
            "acp-patch: {verb} {} of {total} {sites} to {} (pins commented out); the {} it already had (pinned or listed) are kept as they are",
            total - outcome.kept,
            outcome.path,
            outcome.kept
        ));
    } else {
        let verb = match (dry_run, outcome.appended) {
            (true, _) => "would write",
            (false, true) => "appended to",
            (false, false) => "wrote",
        };
        s.say(&format!(
            "acp-patch: {verb} {} with {total} {sites} ({decided} found, pins commented out)",
            outcome.path
        ));
    }
    for why in &outcome.stopped {
        s.say(&format!("note: the survey stopped early: {why}"));
    }
}

/// `verify --smoke`'s smoke section as the smoke command's text printer writes it.
fn smoke_text(r: &SmokeResult) -> String {
    match r {
        Ok(report) => smoke::text(report),
        Err(e) => format!("acp-patch smoke: {e}\n"),
    }
}
