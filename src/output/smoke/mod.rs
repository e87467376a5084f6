//! What `acp-patch smoke` prints: one printer per format (text, JSON, GitHub annotations,
//! HTML) behind one trait, as the other commands' printers beside it. A printer writes
//! the document a machine reads (or the report a human reads) to stdout and notes to stderr;
//! `--json FILE` / `--html FILE` write that printer's document into a file as well.

mod github;
mod html;
mod json;
mod svg;
mod text;

use std::io;

pub use github::annotations;
pub use html::html;
pub use json::{error_value, json};
pub use text::{blocks_text, checks_text, text};

use crate::output::Streams;
pub use crate::smoke::Format;
use crate::smoke::SmokeError;
use crate::smoke::report::SmokeReport;
use crate::smoke::{SmokeArgs, SmokeOptions, exit_code, run};

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

/// Writes one printer's document into `path` (`--json FILE`, `--html FILE`).
fn write_file(
    path: &std::path::Path,
    format: Format,
    result: &Result<SmokeReport, SmokeError>,
) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut quiet = std::io::sink();
    let mut s = Streams {
        out: &mut file,
        err: &mut quiet,
    };
    print(printer(format).as_ref(), &mut s, result)
}

/// `acp-patch smoke`: runs, prints in `--format` on `s`, writes the `--json`/`--html` files;
/// returns the exit code (a file that cannot be written: 2) and how printing went: a stdout
/// write error (a closed pipe) is the caller's to judge, and never changes the verdict.
pub fn run_cli(args: &SmokeArgs, s: &mut Streams) -> (u8, std::io::Result<()>) {
    let result = SmokeOptions::from_args(args).and_then(|o| run(&o));
    let mut code = exit_code(&result);
    for (path, format) in [(&args.json, Format::Json), (&args.html, Format::Html)] {
        if let Some(path) = path
            && let Err(e) = write_file(path, format, &result)
        {
            s.say(&format!(
                "acp-patch smoke: cannot write {}: {e}",
                path.display()
            ));
            code = 2;
        }
    }
    let printed = print(printer(args.format).as_ref(), s, &result);
    (code, printed)
}

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
