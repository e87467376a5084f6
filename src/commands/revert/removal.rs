//! The removals: each present part's exact text found around the line its language
//! reports, checked byte for byte, as a plan.

use crate::error::{Error, Result};
use crate::lang::parts::Inventory;
use crate::plan::{Placed, Plan};
use crate::source::SourceFile;
use std::collections::BTreeMap;

/// A range revert takes out: start, end, piece, whether in its end-of-file form, and what
/// goes back in its place.
type Taken<'a> = (usize, usize, &'static str, bool, &'a str);

/// One insertion to take out: the parts that report the same text at the same line are one.
struct Inserted<'a> {
    file: usize,
    line: usize,
    /// The exact byte offset of the text, when the language knows it (`Part::present_at`).
    at: Option<usize>,
    text: &'a str,
    label: &'static str,
    /// What goes back in its place.
    restore: &'a str,
}

/// The byte range of each present part, checked byte for byte, as a plan of removals
/// (a file that is nothing but inserted text is deleted), and where each piece was.
pub(super) fn removal_plan(inv: &Inventory) -> Result<(Plan, Vec<Placed>)> {
    let mut inserted: Vec<Inserted> = Vec::new();
    for p in &inv.parts {
        // a runtime module acp-patch wrote (another release's: untouched) goes whole; one
        // edited by hand is refused, never removed with the edit
        let file = &inv.files[p.file];
        if p.label == crate::lang::parts::RUNTIME_LABEL && p.present.is_none() && file.exists {
            if let Some(e) = crate::lang::parts::runtime_edited(file, p) {
                return Err(e);
            }
            if !file.text.is_empty() {
                inserted.push(Inserted {
                    file: p.file,
                    line: 1,
                    at: Some(0),
                    text: &file.text,
                    label: p.label,
                    restore: "",
                });
            }
            continue;
        }
        let Some(line) = p.present else { continue };
        if p.text.is_empty() {
            continue; // present in the agent's own form: not apply's to take out
        }
        if !inserted
            .iter()
            .any(|i| i.file == p.file && i.line == line && i.at == p.present_at && i.text == p.text)
        {
            inserted.push(Inserted {
                file: p.file,
                line,
                at: p.present_at,
                text: &p.text,
                label: p.label,
                restore: &p.restore,
            });
        }
    }
    // from the end of each file: pieces apply put at the end of a file without a final
    // newline come in their end-of-file form, one after the other
    inserted.sort_by_key(|i| std::cmp::Reverse((i.file, i.line)));
    // per file: the chosen ranges (start, end, label, end-of-file form), disjoint
    let mut taken: BTreeMap<usize, Vec<Taken>> = BTreeMap::new();
    for ins in &inserted {
        let file = &inv.files[ins.file];
        let ranges = taken.entry(ins.file).or_default();
        let free = |s: usize, e: usize| ranges.iter().all(|r| e <= r.0 || r.1 <= s);
        // the end-of-file form ends at the end, or where the next one of its kind begins
        let at_end = |e: usize| e == file.text.len() || ranges.iter().any(|r| r.3 && r.0 == e);
        // where the language knows the exact offset, the text must be there (a short piece
        // such as a wrapper's `)` occurs many times on its line); else search around the line
        let found = match ins.at {
            Some(at) => file
                .text
                .get(at..)
                .filter(|rest| rest.starts_with(ins.text) && free(at, at + ins.text.len()))
                .map(|_| (at, at + ins.text.len(), false)),
            None => occurrences(&file.text, ins.text, ins.line)
                .into_iter()
                .find(|&(s, e, eof)| free(s, e) && (!eof || at_end(e))),
        };
        let Some((s, e, eof)) = found else {
            return Err(hand_edited(file, ins));
        };
        ranges.push((s, e, ins.label, eof, ins.restore));
    }
    for ranges in taken.values_mut() {
        ranges.sort();
    }
    let mut plan = Plan::default();
    let mut removed = Vec::new();
    for (file, ranges) in &taken {
        let f = &inv.files[*file];
        let covered: usize = ranges
            .iter()
            .filter(|r| r.4.is_empty())
            .map(|r| r.1 - r.0)
            .sum();
        let whole = covered == f.text.len() && ranges.first().is_some_and(|r| r.0 == 0);
        for &(s, e, label, _, restore) in ranges {
            removed.push(Placed {
                file: f.rel.clone(),
                line: f.line_of(s) + usize::from(f.text[s..e].starts_with(['\n', '\r'])),
                piece: label.to_string(),
            });
            if !whole {
                plan.replace(f, s, e - s, restore.to_string(), label);
            }
        }
        if whole {
            plan.delete(f); // a runtime module apply created
        }
    }
    plan.sort();
    removed.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    // a piece made of several insertions on one line (around a send) is one piece, as apply
    // counts it
    let mut seen = std::collections::HashSet::new();
    removed.retain(|p| seen.insert((p.file.clone(), p.line, p.piece.clone())));
    Ok((plan, removed))
}

/// Where `text` occurs in `src` covering line `line` (1-based), nearest first, and whether
/// in its end-of-file form: a text inserted at the end of a file without a final newline
/// was written as a line ending and the text without its last one (apply keeps "no final
/// newline"); the caller accepts that form only at the end of the file.
pub(super) fn occurrences(src: &str, text: &str, line: usize) -> Vec<(usize, usize, bool)> {
    let Some((ls, le)) = line_range(src, line) else {
        return Vec::new();
    };
    let mut forms = vec![(text.to_string(), false)];
    if !src.ends_with('\n') && text.ends_with('\n') {
        let eol = if text.ends_with("\r\n") { "\r\n" } else { "\n" };
        forms.push((
            format!("{eol}{}", text.trim_end_matches(['\r', '\n'])),
            true,
        ));
    }
    let mut found = Vec::new();
    for (form, eof) in &forms {
        let n = form.len();
        // an occurrence covering the line starts at most `n - 1` bytes before it
        let mut from = ls.saturating_sub(n.saturating_sub(1));
        while !src.is_char_boundary(from) {
            from -= 1;
        }
        while from < le {
            let Some(i) = src[from..].find(form.as_str()) else {
                break;
            };
            let s = from + i;
            if s >= le {
                break;
            }
            if s + n > ls {
                found.push((s, s + n, *eof));
            }
            from = s + src[s..].chars().next().map_or(1, char::len_utf8);
        }
    }
    found.sort_by_key(|&(s, _, eof)| (eof, s.abs_diff(ls)));
    found.dedup();
    found
}

/// Byte range of a 1-based line, its line ending included.
fn line_range(src: &str, line: usize) -> Option<(usize, usize)> {
    let mut start = 0;
    for _ in 1..line {
        start += src[start..].find('\n')? + 1;
    }
    let end = src[start..].find('\n').map_or(src.len(), |i| start + i + 1);
    Some((start, end))
}

fn hand_edited(file: &SourceFile, ins: &Inserted) -> Error {
    let (line, expected) = first_difference(&file.text, ins.text, ins.line);
    Error::HandEdited {
        file: file.rel.clone(),
        line,
        piece: ins.label.to_string(),
        detail: format!(
            "it no longer reads as apply wrote it (line {line} should read `{}`)",
            expected.trim()
        ),
    }
}

/// The first line where the file departs from the inserted text, aligning the text on the
/// line the language found the piece at (the alignment that matches longest), and what
/// that line should read.
pub(super) fn first_difference<'t>(src: &str, text: &'t str, present: usize) -> (usize, &'t str) {
    let file: Vec<&str> = src.lines().collect();
    let ins: Vec<&str> = text.lines().collect();
    let fallback = (
        present,
        ins.iter()
            .copied()
            .find(|l| !l.trim().is_empty())
            .unwrap_or(""),
    );
    let Some(at) = file.get(present.wrapping_sub(1)) else {
        return fallback;
    };
    let mut best: Option<(usize, usize)> = None; // (lines that match, 0-based start in file)
    for (k, l) in ins.iter().enumerate() {
        if l != at || k >= present {
            continue;
        }
        let start = present - 1 - k;
        let same = (0..ins.len())
            .take_while(|i| file.get(start + i) == Some(&ins[*i]))
            .count();
        if same < ins.len() && best.is_none_or(|(n, _)| same > n) {
            best = Some((same, start));
        }
    }
    match best {
        Some((same, start)) => (start + same + 1, ins[same]),
        None => fallback,
    }
}
