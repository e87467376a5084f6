//! The text apply puts in place of a write of messages — the write inside a loop over what
//! the runtime lets out (`for msg in wire(msg) { <the write> }`) — and the write taken back
//! out of such a loop (what revert restores, and how a wrapped write is recognised).

use std::ops::Range;

/// The loop's variable where the message has no name of its own (and the card closure's
/// parameter).
pub const CARD: &str = "acp_message";

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

/// The wrapped text of write `s`: the loop's header before it and its closing brace after
/// it, on the write's own lines (the write's bytes stay as they are).
pub fn wrap(s: &str, w: &Wrap, path: &str) -> String {
    let inner = match &w.entry {
        Some(r) => format!("{}{CARD}{}", &s[..r.start], &s[r.end..]),
        None => s.to_string(),
    };
    let amp = if w.by_ref { "&" } else { "" };
    let header = format!("for {} in {amp}{path}::{}({})", w.var, w.func, w.arg);
    if w.expression {
        format!(
            "{{ let mut acp_sent = {path}::held(); {header} {{ acp_sent = {inner}; }} acp_sent }}"
        )
    } else {
        format!("{header} {{ {inner} }}")
    }
}

/// The write a wrapped text holds: its loop's body (`stmt`), with the runtime call's
/// argument back where the message was when the loop's variable stands in for it.
pub fn unwrap(stmt: &str, var: &str, arg: &str) -> Option<String> {
    if var != CARD {
        return Some(stmt.to_string());
    }
    let at = card_at(stmt)?;
    Some(format!("{}{arg}{}", &stmt[..at], &stmt[at + CARD.len()..]))
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
    fn wraps_a_write_in_place_and_takes_it_back_out() {
        let p = "crate::acp_progress";
        let s = "tx.send(X).ok();";
        let t = wrap(s, &w(CARD, Some(8..9), false), p);
        assert_eq!(
            t,
            "for acp_message in crate::acp_progress::wire(json!({\n        \"a\": 1\n    })) { tx.send(acp_message).ok(); }"
        );
        assert_eq!(unwrap("tx.send(acp_message).ok();", CARD, "X").unwrap(), s);
        // a name the message had: the write's bytes stay, lines and all
        let s = "if writeln!(out, \"{line}\").is_err() {\n        eprintln!(\"closed\");\n    }";
        let by_name = Wrap {
            var: "line".into(),
            by_ref: true,
            func: "wire".into(),
            arg: "&line".into(),
            entry: None,
            expression: false,
        };
        let t = wrap(s, &by_name, p);
        assert_eq!(
            t,
            format!("for line in &crate::acp_progress::wire(&line) {{ {s} }}")
        );
        assert_eq!(unwrap(s, "line", "&line").unwrap(), s);
        let e = wrap("tx.send(m)", &w("m", None, true), p);
        assert!(e.starts_with("{ let mut acp_sent = crate::acp_progress::held(); for m in "));
        assert!(e.ends_with("{ acp_sent = tx.send(m); } acp_sent }"));
        // the loop's variable must stand once in the body
        assert!(unwrap("f(acp_message, acp_message)", CARD, "X").is_none());
    }
}
