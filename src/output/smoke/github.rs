//! GitHub Actions annotations: an `::error` per check that fails the run, a `::warning` per
//! finding about the agent that does not; the text report goes to stderr (the job's log).

use std::io::{self, Write};

use super::{Printer, text};
use crate::output::{Streams, escape_data, escape_property};
use crate::smoke::SmokeError;
use crate::smoke::checks::Judges;
use crate::smoke::report::SmokeReport;

pub struct Github;

/// The annotations of a report, one line each.
pub fn annotations(out: &mut dyn Write, r: &SmokeReport) -> io::Result<()> {
    for c in r.checks.iter().filter(|c| !c.passed) {
        let fails_the_run = r.strict || c.judges == Judges::Patch;
        let (level, what) = match (fails_the_run, c.judges) {
            (true, Judges::Patch) => ("error", "acp-patch smoke"),
            (true, Judges::Agent) => ("error", "acp-patch smoke (the agent under --strict)"),
            (false, _) => ("warning", "acp-patch smoke (the agent)"),
        };
        writeln!(
            out,
            "::{level} title={}::{}",
            escape_property(&format!("{what}: {}", c.name)),
            escape_data(&c.summary)
        )?;
    }
    Ok(())
}

impl Printer for Github {
    fn report(&self, s: &mut Streams, r: &SmokeReport) -> io::Result<()> {
        annotations(s.out, r)?;
        s.out.flush()?;
        let _ = s.err.write_all(text::text(r).as_bytes());
        Ok(())
    }
    fn error(&self, s: &mut Streams, e: &SmokeError) -> io::Result<()> {
        writeln!(
            s.out,
            "::error title=acp-patch smoke::{}",
            escape_data(&e.to_string())
        )?;
        s.out.flush()?;
        s.say(&format!("acp-patch smoke: {e}"));
        Ok(())
    }
}
