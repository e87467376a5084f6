//! What every site choice shares: a node in one of the parsed files, its candidate entry, and
//! the one `choose` (a single candidate, a pin, or an error listing what a pin accepts).

use crate::config::Pin;
use crate::error::{Candidate, Location, Result};
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
    let pin = pin.map(|p| Pin::parse(p)).map(|p| (p.file, p.name));
    crate::lang::parts::choose(found, pin, site, pin_key, none)
}
