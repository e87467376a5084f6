//! What every site choice shares: a node in one of the parsed files, its candidate entry, and
//! the one `choose` (a single candidate, a pin, or an error listing what a pin accepts).

pub(super) mod binding;
pub(super) mod classes;
pub(super) mod client_side;
pub(super) mod connection;
pub(super) mod found;
pub(super) mod handlers;
pub(super) mod sends;
pub(super) mod wire;

use crate::config::Pin;
use crate::error::{Candidate, Error, Location, Result};
use crate::lang::parts::Parsed;
use tree_sitter::Node;

/// A node in one of the parsed files.
#[derive(Clone, Copy)]
pub struct At<'a> {
    pub file: usize,
    pub node: Node<'a>,
}

fn loc(files: &[Parsed], at: At) -> Location {
    Location {
        file: files[at.file].file.rel.clone(),
        line: at.node.start_position().row + 1,
    }
}

pub(super) fn candidate(files: &[Parsed], at: At, name: String) -> Candidate {
    Candidate {
        location: loc(files, at),
        name,
    }
}

/// Picks the one candidate, honouring a pin; otherwise an error listing them.
pub(super) fn choose<'a>(
    decisions: &crate::lang::survey::Decisions,
    files: &[Parsed],
    found: Vec<(At<'a>, String)>,
    pin: Option<&String>,
    site: &'static str,
    pin_key: &'static str,
    none: impl FnOnce() -> String,
) -> Result<At<'a>> {
    let found = found
        .into_iter()
        .map(|(at, name)| (at, candidate(files, at, name)))
        .collect();
    let pin = pin.map(|p| Pin::parse(p));
    crate::lang::parts::choose(decisions, found, pin, site, pin_key, none)
}

/// A pin that matched nothing: what it looked for and what there was.
pub(super) fn pin_mismatch(
    files: &[Parsed],
    site: &'static str,
    pin_key: &'static str,
    pin: &Pin,
    seen: &[(At, String)],
) -> Error {
    let mut cands: Vec<Candidate> = seen
        .iter()
        .map(|(at, name)| candidate(files, *at, name.clone()))
        .collect();
    cands.dedup_by(|a, b| a.location.file == b.location.file && a.name == b.name);
    let looked = match &pin.name {
        Some(n) => format!("`{n}` in {}", pin.file),
        None => pin.file.clone(),
    };
    let saw = if cands.is_empty() {
        "none at all".to_string()
    } else {
        cands
            .iter()
            .map(|c| format!("{}:{}", c.location.file, c.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Error::Unlocatable {
        site,
        detail: format!(
            "the pin `{pin_key}` in acp-patch.toml matches nothing: it looks for {looked}; the candidates are: {saw}"
        ),
        pin_key,
    }
}
