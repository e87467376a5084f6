//! `apply --format patch`: a `git format-patch` series on stdout for `git am` (the runtime,
//! then the call edits; `crate::series` writes it), the summary and refusals as text on stderr.

use super::text::Text;
use super::{Context, Printer, SmokeResult, Streams};
use crate::commands::init::InitOutcome;
use crate::commands::{ApplyOutcome, RevertOutcome, VerifyOutcome};
use crate::error::Error;
use crate::series::{self, Origin, SmokeComparison};
use std::io;
use std::path::Path;

/// The series printer of one run: where the tree is (its git checkout says who sends the
/// series and where it applies) and, with `--smoke`, the runs before and after.
pub struct Patch<'a> {
    pub root: &'a Path,
    pub smoke: Option<&'a SmokeComparison>,
}

impl Printer for Patch<'_> {
    /// The summary as text, then the series (a series is never a dry run: apply wrote, or
    /// `--dry-run` left the tree and the series is all there is).
    fn apply(&self, s: &mut Streams, outcome: &ApplyOutcome, _dry_run: bool) -> io::Result<()> {
        Text.apply(s, outcome, false)?;
        if outcome.nothing_to_do() {
            s.say("acp-patch: no series: the tree needs no change (run it on the unpatched tree)");
            return Ok(());
        }
        let origin = Origin::of(self.root);
        let printed = s
            .out
            .write_all(series::series(outcome, &origin, self.smoke).as_bytes());
        if series::needs_keep_cr(outcome) {
            s.say("note: files with CRLF line endings: apply the series with `git am --keep-cr`");
        }
        printed
    }

    fn verify(
        &self,
        s: &mut Streams,
        outcome: &VerifyOutcome,
        smoke: Option<&SmokeResult>,
    ) -> io::Result<()> {
        Text.verify(s, outcome, smoke)
    }

    fn init(&self, s: &mut Streams, outcome: &InitOutcome, dry_run: bool) -> io::Result<()> {
        Text.init(s, outcome, dry_run)
    }

    fn revert(&self, s: &mut Streams, outcome: &RevertOutcome, dry_run: bool) -> io::Result<()> {
        Text.revert(s, outcome, dry_run)
    }

    fn error(&self, s: &mut Streams, cx: &Context, e: &Error) -> io::Result<()> {
        Text.error(s, cx, e)
    }

    fn smoke(&self, s: &mut Streams, r: &SmokeResult) -> io::Result<()> {
        Text.smoke(s, r)
    }
}
