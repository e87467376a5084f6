//! The checksum a runtime module carries on its first line, so a later apply, verify or
//! revert can tell a module acp-patch wrote (this release's or an earlier one's: replaced or
//! removed whole) from one edited by hand (refused, naming the first line that differs).
//!
//! The checksum covers the text after the first line with line endings read as `\n`: a
//! checkout that converts line endings (git's `autocrlf`) is not a hand edit.

/// What the first line carries before the checksum's hex digits.
const LABEL: &str = "; checksum ";

/// `rendered` with the checksum of its body appended to its first line.
pub fn seal(rendered: &str) -> String {
    let (first, eol, body) = split(rendered);
    format!("{first}{LABEL}{:016x}{eol}{body}", digest(body))
}

/// What a runtime module on disk is, next to what this acp-patch writes there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OnDisk {
    /// Exactly this acp-patch's module.
    Current,
    /// A module acp-patch wrote (another release, or another style), untouched since.
    Untouched,
    /// Changed since acp-patch wrote it, or without a checksum: `line` (1-based) is the
    /// first that differs from this acp-patch's module; `should` says what that module has
    /// there ("acp-patch's line reads `…`", or where it ends).
    Edited { line: usize, should: String },
}

/// Judges `existing` (a file starting with a runtime marker) against `rendered`.
pub fn judge(existing: &str, rendered: &str) -> OnDisk {
    if existing == rendered {
        return OnDisk::Current;
    }
    let (first, _, body) = split(existing);
    let stated = first
        .rsplit_once(LABEL)
        .and_then(|(_, hex)| u64::from_str_radix(hex.trim(), 16).ok());
    if stated == Some(digest(body)) {
        return OnDisk::Untouched;
    }
    let ours: Vec<&str> = rendered.lines().collect();
    let theirs: Vec<&str> = existing.lines().collect();
    // line 1 differs by its checksum alone when the body was edited: name the body's line
    let line = (1..theirs.len().max(ours.len()))
        .find(|&i| {
            theirs.get(i).map(|l| l.trim_end_matches('\r'))
                != ours.get(i).map(|l| l.trim_end_matches('\r'))
        })
        .unwrap_or(0);
    OnDisk::Edited {
        line: line + 1,
        should: match ours.get(line) {
            Some(l) => format!("acp-patch's line reads `{}`", l.trim()),
            None => format!("acp-patch's module ends at line {}", ours.len()),
        },
    }
}

/// The first line (without its ending), its ending, and the rest.
fn split(text: &str) -> (&str, &str, &str) {
    match text.find(['\n', '\r']) {
        None => (text, "", ""),
        Some(i) => {
            let eol = if text[i..].starts_with("\r\n") { 2 } else { 1 };
            (&text[..i], &text[i..i + eol], &text[i + eol..])
        }
    }
}

/// FNV-1a, 64 bits, over the text with `\r\n` and `\r` read as `\n`: stable across builds and
/// platforms (a fingerprint of acp-patch's own text, not a secret).
fn digest(body: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let bytes = body.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            continue;
        }
        let b = if b == b'\r' { b'\n' } else { b };
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "# acp-patch: runtime module\nA = 1\nB = 2\n";

    #[test]
    fn a_sealed_module_is_current_and_untouched_after_a_line_ending_change() {
        let sealed = seal(MODULE);
        assert!(sealed.starts_with("# acp-patch: runtime module; checksum "));
        assert_eq!(judge(&sealed, &sealed), OnDisk::Current);
        assert_eq!(
            judge(&sealed.replace('\n', "\r\n"), &sealed),
            OnDisk::Untouched
        );
        assert_eq!(
            judge(&sealed.replace('\n', "\r"), &sealed),
            OnDisk::Untouched
        );
    }

    #[test]
    fn an_earlier_release_is_untouched_and_an_edit_is_named_at_its_line() {
        let current = seal(MODULE);
        let earlier = seal("# acp-patch: runtime module\nA = 0\n");
        assert_eq!(judge(&earlier, &current), OnDisk::Untouched);
        let edited = current.replace("B = 2", "B = 3");
        assert_eq!(
            judge(&edited, &current),
            OnDisk::Edited {
                line: 3,
                should: "acp-patch's line reads `B = 2`".into()
            }
        );
        // no checksum at all (written by hand, or before modules carried one)
        assert_eq!(
            judge(MODULE, &current),
            OnDisk::Edited {
                line: 1,
                should: format!(
                    "acp-patch's line reads `{}`",
                    current.lines().next().unwrap()
                )
            }
        );
        // a line added at the end is named too
        assert_eq!(
            judge(&format!("{current}C = 3\n"), &current),
            OnDisk::Edited {
                line: 4,
                should: "acp-patch's module ends at line 3".into()
            }
        );
    }
}
