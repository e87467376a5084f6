//! A smoke run's GitHub Actions annotations (the GitHub printer's lines): an `::error` per
//! check that fails the run, a `::warning` per finding about the agent that does not.

use std::io::{self, Write};

use crate::output::{escape_data, escape_property};
use crate::smoke::checks::Judges;
use crate::smoke::report::SmokeReport;

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
