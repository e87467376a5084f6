//! What `acp-patch smoke` prints: one printer per format (text, JSON, GitHub annotations,
//! HTML) behind one trait, as the other commands' printers in `crate::output`. A printer writes
//! the document a machine reads (or the report a human reads) to stdout and notes to stderr;
//! `--json FILE` / `--html FILE` write that printer's document into a file as well.

mod github;
mod html;
mod json;
mod text;

use std::io;

pub use github::annotations;
pub use html::{esc, html};
pub use json::{error_value, json};
pub use text::{blocks_text, checks_text, text};

use super::SmokeError;
use super::report::SmokeReport;
use crate::output::Streams;

/// The formats of `--format`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// The turn as a client shows it, the checks and the verdict.
    #[default]
    Text,
    /// One JSON document: every raw line, check and figure.
    Json,
    /// GitHub Actions annotations (one per check that fails the run, a warning per finding
    /// about the agent), the text report on stderr.
    Github,
    /// One self-contained HTML page with a timeline per session.
    Html,
}

/// A printer of smoke results.
pub trait Printer {
    /// A finished run.
    fn report(&self, s: &mut Streams, r: &SmokeReport) -> io::Result<()>;
    /// A run that could not happen (exit code 2).
    fn error(&self, s: &mut Streams, e: &SmokeError) -> io::Result<()>;
}

pub fn printer(format: Format) -> Box<dyn Printer> {
    match format {
        Format::Text => Box::new(text::Text),
        Format::Json => Box::new(json::Json),
        Format::Github => Box::new(github::Github),
        Format::Html => Box::new(html::Html),
    }
}

/// A run's result with one printer.
pub fn print(
    p: &dyn Printer,
    s: &mut Streams,
    r: &Result<SmokeReport, SmokeError>,
) -> io::Result<()> {
    match r {
        Ok(r) => p.report(s, r),
        Err(e) => p.error(s, e),
    }
}
