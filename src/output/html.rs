//! HTML: one self-contained page on stdout, no script. Only smoke prints it (a turn's
//! timeline is what a page shows better than text); the other commands do not take
//! `--format html`, so clap refuses it before they run (`Formats`).

use super::{Context, Printer, SmokeResult, Streams, smoke};
use crate::commands::init::InitOutcome;
use crate::commands::{ApplyOutcome, RevertOutcome, VerifyOutcome};
use crate::error::Error;
use std::io;

pub struct Html;

/// What a caller of the library gets for a command that has no page.
fn no_page(command: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{command} has no HTML format (smoke has)"),
    )
}

impl Printer for Html {
    fn apply(&self, _: &mut Streams, _: &ApplyOutcome, _: bool) -> io::Result<()> {
        Err(no_page("apply"))
    }

    fn verify(
        &self,
        _: &mut Streams,
        _: &VerifyOutcome,
        _: Option<&SmokeResult>,
    ) -> io::Result<()> {
        Err(no_page("verify"))
    }

    fn init(&self, _: &mut Streams, _: &InitOutcome, _: bool) -> io::Result<()> {
        Err(no_page("init"))
    }

    fn revert(&self, _: &mut Streams, _: &RevertOutcome, _: bool) -> io::Result<()> {
        Err(no_page("revert"))
    }

    fn error(&self, _: &mut Streams, cx: &Context, _: &Error) -> io::Result<()> {
        Err(no_page(cx.command))
    }

    /// The report's page, a timeline per session; a page saying so when the run could not
    /// happen.
    fn smoke(&self, s: &mut Streams, r: &SmokeResult) -> io::Result<()> {
        match r {
            Ok(r) => {
                s.out.write_all(smoke::html(r).as_bytes())?;
                s.out.flush()
            }
            Err(e) => {
                write!(
                    s.out,
                    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>acp-patch smoke</title></head><body>\n<h1>acp-patch smoke: could not run</h1>\n<p>{}</p>\n</body></html>\n",
                    smoke::esc(&e.to_string())
                )?;
                s.out.flush()?;
                s.say(&format!("acp-patch smoke: {e}"));
                Ok(())
            }
        }
    }
}
