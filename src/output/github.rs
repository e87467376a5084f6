//! GitHub Actions workflow commands: only annotations on stdout (`::error`, and smoke's
//! `::warning` for a finding about the agent; paths relative to the working directory,
//! which is the checkout in a workflow); the text report goes to stderr, where it shows in
//! the log without being read as commands.

use super::text::Text;
use super::{Context, Printer, SmokeResult, Streams, smoke, smoke_text};
use crate::commands::init::InitOutcome;
use crate::commands::{ApplyOutcome, RevertOutcome, VerifyOutcome};
use crate::error::Error;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub struct Github;

/// A message as a workflow command's data: `%`, CR and LF escaped.
pub fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value (file=, title=): also `:` and `,`.
pub fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

/// `rel` (relative to the agent's folder `root`) as a path relative to the working
/// directory, when the agent is below it.
fn workspace_path(root: &Path, rel: &str) -> String {
    let cwd = std::env::current_dir().and_then(|d| d.canonicalize());
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match cwd {
        Ok(cwd) => match root.strip_prefix(&cwd) {
            Ok(sub) if sub.as_os_str().is_empty() => rel.to_string(),
            Ok(sub) => format!("{}/{rel}", sub.display()),
            Err(_) => rel.to_string(),
        },
        Err(_) => rel.to_string(),
    }
}

fn annotation(
    out: &mut dyn Write,
    root: &Path,
    place: Option<(&str, &str)>,
    title: &str,
    message: &str,
) -> io::Result<()> {
    let mut props = vec![format!("title={}", escape_property(title))];
    if let Some((file, line)) = place {
        props.insert(
            0,
            format!("file={}", escape_property(&workspace_path(root, file))),
        );
        props.insert(1, format!("line={line}"));
    }
    writeln!(out, "::error {}::{}", props.join(","), escape_data(message))
}

impl Printer for Github {
    // apply, init and revert have no annotations to make: they print as text does (the dry
    // run's diff or config on stdout, the summary on stderr)
    fn apply(&self, s: &mut Streams, outcome: &ApplyOutcome, dry_run: bool) -> io::Result<()> {
        Text.apply(s, outcome, dry_run)
    }

    fn verify(
        &self,
        s: &mut Streams,
        outcome: &VerifyOutcome,
        smoke: Option<&SmokeResult>,
    ) -> io::Result<()> {
        for report in &outcome.reports {
            let root = PathBuf::from(&report.root);
            for c in report.checks.iter().filter(|c| c.status.fails()) {
                // the place to fix: where apply would insert, else the first place found
                let place = c.insert_at.as_ref().or(c.locations.first());
                let line = place
                    .and_then(|l| l.line())
                    .map(|(f, n)| (f, n.to_string()));
                let loc = line.as_ref().map(|(f, n)| (*f, n.as_str()));
                let message = format!("{} {}: {}", c.id, c.status.word(), c.detail());
                annotation(
                    s.out,
                    &root,
                    loc,
                    &format!("acp-patch verify: {}", c.id),
                    &message,
                )?;
            }
        }
        if let Some(smoke) = smoke {
            let root = outcome
                .reports
                .first()
                .map(|r| PathBuf::from(&r.root))
                .unwrap_or_default();
            match smoke {
                Ok(r) => smoke::annotations(s.out, r)?,
                Err(e) => annotation(s.out, &root, None, "acp-patch smoke", &e.to_string())?,
            }
        }
        s.out.flush()?;
        for report in &outcome.reports {
            let _ = s.err.write_all(super::text::report_text(report).as_bytes());
        }
        if let Some(smoke) = smoke {
            let _ = s.err.write_all(smoke_text(smoke).as_bytes());
        }
        for note in &outcome.notes {
            s.say(&format!("note: {note}"));
        }
        Ok(())
    }

    fn init(&self, s: &mut Streams, outcome: &InitOutcome, dry_run: bool) -> io::Result<()> {
        Text.init(s, outcome, dry_run)
    }

    fn revert(&self, s: &mut Streams, outcome: &RevertOutcome, dry_run: bool) -> io::Result<()> {
        Text.revert(s, outcome, dry_run)
    }

    fn error(&self, s: &mut Streams, cx: &Context, e: &Error) -> io::Result<()> {
        let loc = e.location();
        let line = loc.as_ref().map(|l| l.line.to_string());
        let place = loc
            .as_ref()
            .zip(line.as_deref())
            .map(|(l, n)| (l.file.as_str(), n));
        annotation(
            s.out,
            cx.root,
            place,
            &format!("acp-patch {}", cx.command),
            &e.to_string(),
        )?;
        s.out.flush()?;
        s.say(&format!("acp-patch: error: {e}"));
        Ok(())
    }

    /// An `::error` per check that fails the run, a `::warning` per finding about the agent
    /// that does not; the text report goes to stderr (the job's log).
    fn smoke(&self, s: &mut Streams, r: &SmokeResult) -> io::Result<()> {
        match r {
            Ok(r) => {
                smoke::annotations(s.out, r)?;
                s.out.flush()?;
                let _ = s.err.write_all(smoke::text(r).as_bytes());
            }
            Err(e) => {
                writeln!(
                    s.out,
                    "::error title=acp-patch smoke::{}",
                    escape_data(&e.to_string())
                )?;
                s.out.flush()?;
                s.say(&format!("acp-patch smoke: {e}"));
            }
        }
        Ok(())
    }
}
