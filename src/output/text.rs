//! Plain text: diffs and reports on stdout, everything else on stderr.

use super::{
    Context, Printer, SmokeResult, Streams, apply_summary, init_summary, revert_summary, smoke_text,
};
use crate::commands::init::InitOutcome;
use crate::commands::{ApplyOutcome, RevertOutcome, VerifyOutcome};
use crate::error::Error;
use std::io;

pub struct Text;

impl Printer for Text {
    fn apply(&self, s: &mut Streams, outcome: &ApplyOutcome, dry_run: bool) -> io::Result<()> {
        if dry_run {
            s.out.write_all(outcome.diff.as_bytes())?;
            s.out.flush()?;
        }
        apply_summary(s, outcome);
        Ok(())
    }

    fn verify(
        &self,
        s: &mut Streams,
        outcome: &VerifyOutcome,
        smoke: Option<&SmokeResult>,
    ) -> io::Result<()> {
        for (i, report) in outcome.reports.iter().enumerate() {
            if i > 0 {
                s.out.write_all(b"\n")?;
            }
            s.out.write_all(report.to_text().as_bytes())?;
        }
        if let Some(smoke) = smoke {
            s.out.write_all(b"\n")?;
            s.out.write_all(smoke_text(smoke).as_bytes())?;
        }
        s.out.flush()?;
        for note in &outcome.notes {
            s.say(&format!("note: {note}"));
        }
        Ok(())
    }

    fn init(&self, s: &mut Streams, outcome: &InitOutcome, dry_run: bool) -> io::Result<()> {
        if dry_run {
            s.out.write_all(outcome.toml.as_bytes())?;
            s.out.flush()?;
        }
        init_summary(s, outcome, dry_run);
        Ok(())
    }

    fn revert(&self, s: &mut Streams, outcome: &RevertOutcome, dry_run: bool) -> io::Result<()> {
        if dry_run {
            s.out.write_all(outcome.diff.as_bytes())?;
            s.out.flush()?;
        }
        revert_summary(s, outcome);
        Ok(())
    }

    fn error(&self, s: &mut Streams, _cx: &Context, e: &Error) -> io::Result<()> {
        s.say(&format!("acp-patch: error: {e}"));
        Ok(())
    }
}
