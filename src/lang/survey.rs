//! What `acp-patch init` lists: every pinnable site a language decided (or could not) while
//! planning, as `parts::choose` saw it, so each pin init writes is one the pin filter accepts.
//! Recorded only while [`survey`] runs on this thread; otherwise a no-op.

use crate::error::{Candidate, pin_section};
use std::cell::RefCell;

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

thread_local! {
    static SURVEY: RefCell<Option<Vec<Site>>> = const { RefCell::new(None) };
}

/// Called by `parts::choose` with every candidate it saw and the one it took (if any).
/// Does nothing unless a survey is running on this thread.
pub(crate) fn record(
    site: &str,
    pin_key: &str,
    candidates: &[&Candidate],
    chosen: Option<&Candidate>,
) {
    SURVEY.with(|s| {
        let mut s = s.borrow_mut();
        let Some(sites) = s.as_mut() else { return };
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
        // a site decided twice (plan, then a helper asking again) is listed once
        sites.retain(|e| !(e.section == entry.section && e.key == entry.key));
        sites.push(entry);
    });
}

/// Runs `plan` with the survey on, and returns what it recorded beside its result.
pub fn survey<T>(plan: impl FnOnce() -> T) -> (T, Vec<Site>) {
    SURVEY.with(|s| *s.borrow_mut() = Some(Vec::new()));
    let result = plan();
    let found = SURVEY.with(|s| s.borrow_mut().take()).unwrap_or_default();
    (result, found)
}
