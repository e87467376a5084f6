//! What `acp-patch init` lists: every pinnable site a language decided (or could not) while
//! planning, as `parts::choose` saw it, so each pin init writes is one the pin filter accepts.
//! Each analysis carries its own [`Decisions`]; [`crate::lang::Language::survey`] hands them out.

use crate::error::{Candidate, Error, Result, pin_section};
use std::sync::Mutex;

/// One pinnable site as apply saw it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Site {
    /// The config table (`python`, `typescript`, `rust`).
    pub section: String,
    /// The key in that table (`prompt`, `emitter`, ...).
    pub key: String,
    /// What the site is, e.g. `ACP prompt handler`.
    pub site: String,
    /// The pin values (`file:name`): one when the site is decided, several when apply
    /// needs a pin to choose, none when it found nothing.
    pub pins: Vec<Pin>,
    /// Whether apply decided this site (one candidate, or a pin).
    pub decided: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Pin {
    pub value: String,
    /// `file:line` of the candidate.
    pub location: String,
}

/// The pinnable sites one analysis decided (or could not), in the order it decided them:
/// handed to `parts::choose` and every other place a language settles a pinnable site, and
/// kept with the analysis (see [`Surveyed`]) so a cached one still says what it decided.
#[derive(Debug, Default)]
pub struct Decisions(Mutex<Vec<Site>>);

impl Decisions {
    /// Notes a site with every candidate seen and the one taken (if any).
    pub(crate) fn record(
        &self,
        site: &str,
        pin_key: &str,
        candidates: &[&Candidate],
        chosen: Option<&Candidate>,
    ) {
        let (section, key, _) = pin_section(pin_key);
        let pin = |c: &Candidate| Pin {
            value: format!("{}:{}", c.location.file, c.name),
            location: c.location.to_string(),
        };
        let entry = Site {
            section: section.to_string(),
            key: key.to_string(),
            site: site.to_string(),
            pins: match chosen {
                Some(c) => vec![pin(c)],
                None => candidates.iter().map(|c| pin(c)).collect(),
            },
            decided: chosen.is_some(),
        };
        let mut sites = self.0.lock().expect("no poison");
        // a site decided twice (plan, then a helper asking again) is listed once
        sites.retain(|e| !(e.section == entry.section && e.key == entry.key));
        sites.push(entry);
    }

    /// The sites recorded, in order.
    pub fn into_sites(self) -> Vec<Site> {
        self.0.into_inner().expect("no poison")
    }
}

/// A language's analysis with the sites it decided on the way.
pub(crate) struct Surveyed<T> {
    pub value: T,
    pub sites: Vec<Site>,
}

/// Why an analysis stopped, with the sites it had decided by then (boxed where returned: an
/// error is the rare path).
pub(crate) struct Stopped {
    pub error: Error,
    pub sites: Vec<Site>,
}

impl Stopped {
    pub(crate) fn new(error: Error, sites: Vec<Site>) -> Box<Stopped> {
        Box::new(Stopped { error, sites })
    }
}

/// Runs `make` with a fresh [`Decisions`] and keeps what it decided beside its result, also
/// when it fails.
pub(crate) fn surveyed<T>(
    make: impl FnOnce(&Decisions) -> Result<T>,
) -> std::result::Result<Surveyed<T>, Box<Stopped>> {
    let decisions = Decisions::default();
    let result = make(&decisions);
    let sites = decisions.into_sites();
    match result {
        Ok(value) => Ok(Surveyed { value, sites }),
        Err(e) => Err(Stopped::new(e, sites)),
    }
}
