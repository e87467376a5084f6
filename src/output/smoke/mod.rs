//! How a smoke run reads in each format — its text, JSON document, annotations and page,
//! which the printers beside this folder write (`Printer::smoke`) for `smoke` and
//! `verify --smoke` — and `acp-patch smoke` itself: `--json FILE` / `--html FILE` write
//! that format's document into a file as well (`-`: on stdout, as `--format` would).

mod args;
mod github;
mod html;
mod json;
mod svg;
mod text;

use std::io;
use std::path::Path;

pub use args::SmokeArgs;
pub use github::annotations;
pub use html::html;
pub use json::{error_value, json};
pub use text::{blocks_text, checks_text, text};

use crate::output::{Format, SmokeResult, Streams};
use crate::smoke::{exit_code, run};

/// Writes one format's document into `path` (`--json FILE`, `--html FILE`).
fn write_file(path: &Path, format: Format, result: &SmokeResult) -> io::Result<()> {
    let mut file = io::BufWriter::new(std::fs::File::create(path)?);
    let mut quiet = io::sink();
    let mut s = Streams {
        out: &mut file,
        err: &mut quiet,
    };
    format.printer().smoke(&mut s, result)
}

/// `acp-patch smoke`: runs, prints in `--format` (or the format of a `--json -` /
/// `--html -`) on `s`, writes the `--json`/`--html` files;
/// returns the exit code (a file that cannot be written: 2) and how printing went: a stdout
/// write error (a closed pipe) is the caller's to judge, and never changes the verdict.
pub fn run_cli(args: &SmokeArgs, s: &mut Streams) -> (u8, io::Result<()>) {
    let result = args.options().and_then(|o| run(&o));
    let mut code = exit_code(&result);
    for (path, format) in args.files() {
        if let Err(e) = write_file(path, format, &result) {
            s.say(&format!(
                "acp-patch smoke: cannot write {}: {e}",
                path.display()
            ));
            code = 2;
        }
    }
    // main refuses two documents for stdout before the run
    let format = args.stdout_format().unwrap_or(args.format);
    let printed = format.printer().smoke(s, &result);
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
