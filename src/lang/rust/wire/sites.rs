//! The text apply puts in place of a write of messages — the write inside a loop over what
//! the runtime lets out (`for msg in wire(msg) { <the write> }`) — and the write taken back
//! out of such a loop (what revert restores, and how a wrapped write is recognised).

use super::writer::CARD;
use std::ops::Range;

/// How one write is wrapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrap {
    /// The loop's variable: the message's own name, or `acp_message` in its place.
    pub var: String,
    /// The loop runs over references (the write reads the message by reference).
    pub by_ref: bool,
    /// `wire` (a JSON value or its text) or `wire_any` (a `Serialize` struct).
    pub func: String,
    /// The runtime call's argument.
    pub arg: String,
    /// The message's range in the write, replaced by the loop's variable.
    pub entry: Option<Range<usize>>,
    /// The write's value is used: the loop's value is the last write's (`held()` when none).
    pub expression: bool,
}

/// Whether a line holds code (blank lines are never indented).
fn code_line(l: &str) -> bool {
    !l.trim().is_empty()
}

/// The wrapped text of write `s`, at a statement indented `base` (unit `unit`).
pub fn wrap(s: &str, w: &Wrap, path: &str, base: &str, unit: &str, eol: &str) -> String {
    let inner = match &w.entry {
        Some(r) => format!("{}{CARD}{}", &s[..r.start], &s[r.end..]),
        None => s.to_string(),
    };
    let amp = if w.by_ref { "&" } else { "" };
    let header = format!("for {} in {amp}{path}::{}({})", w.var, w.func, w.arg);
    if w.expression {
        return format!(
            "{{ let mut acp_sent = {path}::held(); {header} {{ acp_sent = {inner}; }} acp_sent }}"
        );
    }
    if !inner.contains('\n') {
        return format!("{header} {{ {inner} }}");
    }
    let mut lines = inner.split('\n');
    let mut body = lines.next().unwrap_or_default().to_string();
    for l in lines {
        body.push('\n');
        if code_line(l) {
            body.push_str(unit);
        }
        body.push_str(l);
    }
    format!("{header} {{{eol}{base}{unit}{body}{eol}{base}}}")
}

/// The write a wrapped text holds: its loop's body (`stmt`, as it stands in the file), one
/// indent unit less on the lines after the first when the loop spans lines, with the
/// runtime call's argument back where the message was.
pub fn unwrap(stmt: &str, w_var: &str, arg: &str, spans_lines: bool, unit: &str) -> Option<String> {
    let mut s = stmt.to_string();
    if spans_lines {
        let mut lines = stmt.split('\n');
        s = lines.next().unwrap_or_default().to_string();
        for l in lines {
            s.push('\n');
            if code_line(l) {
                s.push_str(l.strip_prefix(unit)?);
            } else {
                s.push_str(l);
            }
        }
    }
    if w_var != CARD {
        return Some(s);
    }
    let at = card_at(&s)?;
    Some(format!("{}{arg}{}", &s[..at], &s[at + CARD.len()..]))
}

/// Where the loop's variable `acp_message` stands in a write (once, as a whole name).
pub fn card_at(s: &str) -> Option<usize> {
    whole_word(s, CARD)
}

/// The one place `word` stands as a whole identifier in `s`.
fn whole_word(s: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let found: Vec<usize> = s
        .match_indices(word)
        .map(|(i, _)| i)
        .filter(|&i| {
            !s[..i].chars().next_back().is_some_and(is_ident)
                && !s[i + word.len()..].chars().next().is_some_and(is_ident)
        })
        .collect();
    match found.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(var: &str, entry: Option<Range<usize>>, expression: bool) -> Wrap {
        Wrap {
            var: var.into(),
            by_ref: false,
            func: "wire".into(),
            arg: "json!({\n        \"a\": 1\n    })".into(),
            entry,
            expression,
        }
    }

    #[test]
    fn wraps_and_unwraps_a_write_on_one_line_and_over_several() {
        let p = "crate::acp_progress";
        let s = "tx.send(X).ok();";
        let wrap1 = w(CARD, Some(8..9), false);
        let t = wrap(s, &wrap1, p, "    ", "    ", "\n");
        assert_eq!(
            t,
            "for acp_message in crate::acp_progress::wire(json!({\n        \"a\": 1\n    })) { tx.send(acp_message).ok(); }"
        );
        assert_eq!(
            unwrap("tx.send(acp_message).ok();", CARD, "X", false, "    ").unwrap(),
            s
        );
        let s = "if writeln!(out, \"{line}\").is_err() {\n        eprintln!(\"closed\");\n\n    }";
        let wrap2 = Wrap {
            var: "line".into(),
            by_ref: true,
            func: "wire".into(),
            arg: "&line".into(),
            entry: None,
            expression: false,
        };
        let t = wrap(s, &wrap2, p, "    ", "    ", "\n");
        assert_eq!(
            t,
            "for line in &crate::acp_progress::wire(&line) {\n        if writeln!(out, \"{line}\").is_err() {\n            eprintln!(\"closed\");\n\n        }\n    }"
        );
        let body = "if writeln!(out, \"{line}\").is_err() {\n            eprintln!(\"closed\");\n\n        }";
        assert_eq!(unwrap(body, "line", "&line", true, "    ").unwrap(), s);
        let e = wrap("tx.send(m)", &w("m", None, true), p, "", "    ", "\n");
        assert!(e.starts_with("{ let mut acp_sent = crate::acp_progress::held(); for m in "));
        assert!(e.ends_with("{ acp_sent = tx.send(m); } acp_sent }"));
    }
}
