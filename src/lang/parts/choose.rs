//! The choice among the candidates for a pinnable site, honouring the pins of
//! `acp-patch.toml`.

use crate::error::{Candidate, Error, Result};

/// Picks the one candidate for a site, honouring a pin (`file`, optional qualified name);
/// otherwise an error listing the candidates with the config line that pins one. What it saw
/// and took goes to `decisions` (what `acp-patch init` lists).
pub fn choose<T>(
    decisions: &crate::lang::survey::Decisions,
    mut found: Vec<(T, Candidate)>,
    pin: Option<crate::config::Pin>,
    site: &'static str,
    pin_key: &'static str,
    none: impl FnOnce() -> String,
) -> Result<T> {
    let seen: Vec<Candidate> = found.iter().map(|(_, c)| c.clone()).collect();
    if let Some(pin) = pin {
        found.retain(|(_, c)| pin.takes(c));
        if found.is_empty() {
            let file = pin.file;
            let wanted = match &pin.name {
                Some(n) => format!("`{n}` in {file}"),
                None => file.clone(),
            };
            let listed = if seen.is_empty() {
                "none at all".to_string()
            } else {
                seen.iter()
                    .map(|c| format!("{}:{}", c.location.file, c.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(Error::Unlocatable {
                site,
                detail: format!(
                    "the pin `{}` in acp-patch.toml matches nothing: it looks for {wanted}{}; the candidates are: {listed}",
                    pin_key.rsplit('.').next().unwrap_or(pin_key),
                    if std::path::Path::new(&file).is_absolute() {
                        " (pins are relative to the agent's folder)"
                    } else {
                        ""
                    },
                ),
                pin_key,
            });
        }
    }
    let refs: Vec<&Candidate> = seen.iter().collect();
    decisions.record(
        site,
        pin_key,
        &refs,
        (found.len() == 1).then(|| &found[0].1),
    );
    match found.len() {
        0 => Err(Error::Unlocatable {
            site,
            detail: none(),
            pin_key,
        }),
        1 => Ok(found.remove(0).0),
        _ => Err(Error::Ambiguous {
            site,
            candidates: found.into_iter().map(|(_, c)| c).collect(),
            pin_key,
        }),
    }
}
