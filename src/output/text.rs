//! Plain text: diffs and reports on stdout, everything else on stderr.

use super::{
    Context, Printer, SmokeResult, Streams, apply_summary, init_summary, revert_summary, smoke,
    smoke_text,
};
use crate::commands::init::InitOutcome;
use crate::commands::{ApplyOutcome, RevertOutcome, VerifyOutcome};
use crate::error::Error;
use crate::report::{Report, Status};
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
            s.out.write_all(report_text(report).as_bytes())?;
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

    fn smoke(&self, s: &mut Streams, r: &SmokeResult) -> io::Result<()> {
        match r {
            Ok(r) => {
                s.out.write_all(smoke::text(r).as_bytes())?;
                s.out.flush()?;
                if r.smoke_dir_kept {
                    s.say(&format!("acp-patch smoke: kept {}", r.smoke_dir));
                }
            }
            Err(e) => s.say(&format!("acp-patch smoke: {e}")),
        }
        Ok(())
    }
}

/// One agent's verify report as text: a row per check, then the verdict.
pub fn report_text(report: &Report) -> String {
    let mut s = format!(
        "{} ({} agent, {} shape)\n",
        report.root, report.language, report.shape
    );
    let width = report.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    for c in &report.checks {
        let pad = " ".repeat(13 + width);
        s.push_str(&format!("  {:<10} {:<width$}", c.status.word(), c.id));
        let places: Vec<String> = c.locations.iter().map(|l| l.to_string()).collect();
        let mut lines = places.iter().map(String::as_str).collect::<Vec<_>>();
        // one line per problem; an item that lists several itself (`a; b`) one per part
        let detail = c
            .details
            .iter()
            .flat_map(|d| d.split("; "))
            .filter(|d| !d.is_empty())
            .map(|d| format!("- {d}"))
            .collect::<Vec<_>>();
        lines.extend(detail.iter().map(String::as_str));
        for (i, l) in lines.iter().enumerate() {
            if i > 0 {
                s.push_str(&pad);
            }
            s.push_str(&format!("  {l}\n"));
        }
        if lines.is_empty() {
            s.push('\n');
        }
    }
    let bad = report.checks.iter().filter(|c| c.status.fails()).count();
    let unchecked: Vec<&str> = report
        .checks
        .iter()
        .filter(|c| c.status == Status::Unchecked)
        .map(|c| c.id.as_str())
        .collect();
    if bad == 0 && unchecked.is_empty() {
        s.push_str(&format!("all {} checks hold\n", report.checks.len()));
    } else if bad == 0 {
        s.push_str(&format!(
            "{} of {} checks hold; not run in full here: {} (see its row)\n",
            report.checks.len() - unchecked.len(),
            report.checks.len(),
            unchecked.join(", ")
        ));
    } else {
        s.push_str(&format!(
            "{bad} of {} checks fail; {}\n",
            report.checks.len(),
            report.advice()
        ));
    }
    s
}
