//! Revert: take out everything apply inserted, so the tree is byte for byte what it was
//! before apply.
//!
//! Nothing is recorded at apply time: the language modules report, for the tree as it is,
//! every part apply inserts and which are present (the same computation verify uses).
//! Revert finds each present part's exact text around the line the language reports,
//! refuses when it is not there byte for byte (hand-edited inserted code), and plans the
//! removals. Before anything is written it re-plans apply on the reverted tree in memory:
//! apply must give back exactly what it gives on the current tree, or revert refuses.

use crate::error::{Error, Result};
use crate::lang::Language;
use crate::lang::parts::{Inventory, ParsedSource};
use crate::plan::{Placed, Plan};
use crate::project::{Options, Project};
use crate::source::SourceFile;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, Default)]
pub struct RevertOptions {
    pub common: Options,
    pub dry_run: bool,
    pub allow_dirty: bool,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct RevertOutcome {
    pub language: String,
    /// The unified diff of every change (what was, or in a dry run would be, written).
    pub diff: String,
    /// Each piece taken out: where it was (its first line in the current tree).
    pub removed: Vec<Placed>,
    /// Files changed (or that would change), relative paths, deleted ones included.
    pub files: Vec<String>,
    /// Files removed whole (runtime modules apply created).
    pub deleted: Vec<String>,
    pub written: bool,
    /// Things worth a word (an installed package's manifest).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl RevertOutcome {
    pub fn nothing_to_revert(&self) -> bool {
        self.files.is_empty()
    }
}

/// Plans the removal of every present part, checks it (exact bytes, the reverted files
/// parse, apply on the reverted tree gives the current one), then (unless a dry run)
/// writes it all or nothing.
pub fn revert(root: &Path, opts: &RevertOptions) -> Result<RevertOutcome> {
    // one writer at a time, as apply
    let _lock = match root.canonicalize() {
        Ok(dir) if !opts.dry_run && dir.is_dir() => Some(crate::write::lock_tree(&dir)?),
        _ => None,
    };
    let project = crate::lang::load(root, &opts.common)?;
    // every agent of the tree (a Python one and a TypeScript one, say): their files differ
    let mut notes = Vec::new();
    let per_agent = crate::commands::each_agent(&project, &mut notes, |lang| {
        let inventory = lang.inventory(&project)?;
        let (mine, taken) = removal_plan_of(lang, &inventory)?;
        if !mine.is_empty() {
            check_current_parses(lang, &inventory)?;
            crate::commands::check_parses(lang, &mine)?;
            check_no_leftovers(&inventory, &mine)?;
            check_round_trip(lang, &project, &inventory, &mine)?;
        }
        Ok((mine, taken))
    })?;
    let mut plan = Plan::default();
    let mut removed = Vec::new();
    let mut langs = Vec::new();
    for (lang, (mine, taken)) in per_agent {
        langs.push(lang.name());
        plan.files.extend(mine.files);
        removed.extend(taken);
    }
    plan.sort();
    let outcome = RevertOutcome {
        language: langs.join("+"),
        diff: crate::diff::plan_diff(&plan),
        removed,
        files: plan.files.iter().map(|f| f.file.rel.clone()).collect(),
        deleted: plan
            .files
            .iter()
            .filter(|f| f.delete)
            .map(|f| f.file.rel.clone())
            .collect(),
        written: false,
        notes,
    };
    if opts.dry_run || plan.is_empty() {
        return Ok(outcome);
    }
    if !opts.allow_dirty {
        crate::write::check_clean(&project.root)?;
    }
    crate::write::write_plan(&plan)?;
    Ok(RevertOutcome {
        written: true,
        ..outcome
    })
}

/// The text of each file holding inserted code with every present piece taken out (`None`
/// for a file apply created), as revert would leave it: the unpatched tree a start-up check
/// compares with. `None` when revert would refuse the tree (a hand-edited piece).
pub(crate) fn unpatched_texts(
    lang: &dyn Language,
    project: &Project,
) -> Option<std::collections::HashMap<String, Option<String>>> {
    let inventory = lang.inventory(project).ok()?;
    let (plan, _) = removal_plan(&inventory).ok()?;
    Some(
        plan.files
            .iter()
            .map(|f| {
                let text = (!f.delete).then(|| f.file.to_disk(&f.new_text()));
                (f.file.rel.clone(), text)
            })
            .collect(),
    )
}

/// What revert would refuse on this tree, as verify reports it: the check of the piece it
/// concerns (the present part nearest to the refused line), the status (`duplicated` for
/// acp-patch code apply did not write there, a copy; `malformed` for a piece edited by hand)
/// and the refusal with its `file:line`. Verify runs exactly revert's checks, so the two
/// cannot disagree; a tree with nothing to revert, or one the language cannot take stock
/// of (verify reports that itself), has no refusal.
pub(crate) fn refusal(lang: &dyn Language, project: &Project) -> Option<Refusal> {
    let inventory = lang.inventory(project).ok()?;
    let outcome = removal_plan_of(lang, &inventory).and_then(|(mine, _)| {
        if mine.is_empty() {
            return Ok(());
        }
        check_current_parses(lang, &inventory)?;
        crate::commands::check_parses(lang, &mine)?;
        check_no_leftovers(&inventory, &mine)?;
        check_round_trip(lang, project, &inventory, &mine)
    });
    let error = outcome.err()?;
    let (file, line, copy, message) = match &error {
        Error::HandEdited {
            file,
            line,
            piece,
            detail,
        } if piece == "code" => (
            file.clone(),
            *line,
            true,
            format!("revert refuses: {detail}"),
        ),
        Error::HandEdited {
            file,
            line,
            piece,
            detail,
        } => (
            file.clone(),
            *line,
            false,
            format!(
                "revert refuses: the {piece} was changed by hand: {detail}; restore it (e.g. from git)"
            ),
        ),
        Error::NotRevertible { file, line, detail } => (
            file.clone(),
            *line,
            false,
            format!("revert refuses: {detail}"),
        ),
        Error::WouldBreak { file, message } => (
            file.clone(),
            1,
            false,
            format!("revert would break the file: {message}"),
        ),
        _ => return None,
    };
    let nearest = inventory
        .parts
        .iter()
        .filter(|p| inventory.files[p.file].rel == file && !p.checks.is_empty())
        .min_by_key(|p| p.present.unwrap_or(p.anchor_line).abs_diff(line));
    Some(Refusal {
        check: nearest.map(|p| p.checks[0]),
        status: if copy {
            crate::report::Status::Duplicated
        } else {
            crate::report::Status::Malformed
        },
        file,
        line,
        message,
    })
}

/// Every file holding inserted code must parse as it is (as verify demands): a syntax error
/// there is the tree's (a hand edit), named where it is, not a revert that would break it.
fn check_current_parses(lang: &dyn Language, inventory: &Inventory) -> Result<()> {
    for (i, f) in inventory.files.iter().enumerate() {
        let touched = inventory.parts.iter().any(|p| {
            p.file == i && (p.present.is_some() || p.label == crate::lang::parts::RUNTIME_LABEL)
        });
        if !touched && !f.text.contains(inventory.marker) || !f.exists {
            continue;
        }
        if let Some((offset, message)) = lang.syntax_error_at(&f.path, &f.text) {
            return Err(Error::Parse {
                location: crate::error::Location {
                    file: f.rel.clone(),
                    line: f.line_of(offset),
                },
                message,
            });
        }
    }
    Ok(())
}

/// [`removal_plan`], where a hand-edited runtime module that no longer parses is told as
/// the syntax error (as verify tells it), not as the edit.
fn removal_plan_of(lang: &dyn Language, inventory: &Inventory) -> Result<(Plan, Vec<Placed>)> {
    match removal_plan(inventory) {
        Err(e @ Error::RuntimeEdited { .. }) => {
            check_current_parses(lang, inventory)?;
            Err(e)
        }
        planned => planned,
    }
}

/// Revert's refusal of a tree, for verify's report.
pub(crate) struct Refusal {
    /// The check the refused piece belongs to (none known: the report's first failing row).
    pub check: Option<&'static str>,
    pub status: crate::report::Status,
    pub file: String,
    pub line: usize,
    pub message: String,
}

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
fn removal_plan(inv: &Inventory) -> Result<(Plan, Vec<Placed>)> {
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
    Ok((plan, removed))
}

/// Where `text` occurs in `src` covering line `line` (1-based), nearest first, and whether
/// in its end-of-file form: a text inserted at the end of a file without a final newline
/// was written as a line ending and the text without its last one (apply keeps "no final
/// newline"); the caller accepts that form only at the end of the file.
fn occurrences(src: &str, text: &str, line: usize) -> Vec<(usize, usize, bool)> {
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
fn first_difference<'t>(src: &str, text: &'t str, present: usize) -> (usize, &'t str) {
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

/// Once the parts are out, no file may still hold inserted code (the language's marker):
/// that would be acp-patch code moved or copied by hand, which revert cannot account for.
fn check_no_leftovers(inventory: &Inventory, revert: &Plan) -> Result<()> {
    for f in &inventory.files {
        let text = match revert.files.iter().find(|fp| fp.file.path == f.path) {
            Some(fp) if fp.delete => continue,
            Some(fp) => fp.new_text(),
            None => f.text.clone(),
        };
        if let Some(at) = find_marker(&text, inventory.marker) {
            let line = text[..at].matches('\n').count() + 1;
            return Err(Error::HandEdited {
                file: f.rel.clone(),
                line,
                piece: "code".into(),
                detail: format!(
                    "`{}` is still there once every piece apply inserted is out (moved or copied by hand? code of another acp-patch version: `acp-patch apply` brings it up to date first)",
                    text[at..].lines().next().unwrap_or("").trim()
                ),
            });
        }
    }
    Ok(())
}

/// Where `marker` stands as inserted code spells it: a marker that begins (ends) with a letter
/// or digit must not be the middle of a longer identifier, so the agent's own
/// `acp_progress_manager` or `my_acp_progress` is not taken for leftover acp-patch code — except
/// a private name that begins `_` + marker (`_acp_progress_start`, the engine shape's helpers);
/// a marker that begins or ends with `_` is a prefix and matches as is.
fn find_marker(text: &str, marker: &str) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let name_starts_at = |i: usize| !text[..i].chars().next_back().is_some_and(ident);
    let word_start = marker.starts_with(|c: char| c.is_alphanumeric());
    let word_end = marker.ends_with(|c: char| c.is_alphanumeric());
    text.match_indices(marker).map(|(at, _)| at).find(|&at| {
        let after = text[at + marker.len()..].chars().next();
        let whole = (!word_start || name_starts_at(at)) && !(word_end && after.is_some_and(ident));
        let private = text[..at].ends_with('_') && name_starts_at(at - 1);
        whole || private
    })
}

/// Apply on the reverted tree must give exactly what apply gives on the current tree (the
/// current tree when it is fully patched): otherwise something revert would take out is not
/// what apply put there (hand-moved or hand-edited code), and nothing is written.
fn check_round_trip(
    lang: &dyn Language,
    project: &Project,
    inventory: &Inventory,
    revert: &Plan,
) -> Result<()> {
    let reverted = project.after(revert, lang.extensions());
    let again = lang.plan(&reverted).map_err(|e| {
        // where the re-plan failed, when it says (a file broken by hand), else the first file
        let (file, line) = match e.location() {
            Some(at) => (at.file, at.line),
            None => (
                revert
                    .files
                    .first()
                    .map(|f| f.file.rel.clone())
                    .unwrap_or_default(),
                1,
            ),
        };
        Error::NotRevertible {
            file,
            line,
            detail: format!("acp-patch could not patch the reverted tree again ({e})"),
        }
    })?;
    let now = inventory_plan(inventory)?;
    // the final text of a path after a plan, over a base tree
    let after = |plan: &Plan, base: &dyn Fn(&Path) -> Option<String>, path: &Path| match plan
        .files
        .iter()
        .find(|f| f.file.path == path)
    {
        Some(fp) if fp.delete => None,
        Some(fp) => Some(fp.new_text()),
        None => base(path),
    };
    let current = |path: &Path| text_of(project, path);
    let reverted_text = |path: &Path| after(revert, &current, path);
    let mut paths: Vec<&Path> = Vec::new();
    for p in [revert, &again, &now] {
        paths.extend(p.files.iter().map(|f| f.file.path.as_path()));
    }
    paths.sort();
    paths.dedup();
    for path in paths {
        let want = after(&now, &current, path);
        let got = after(&again, &reverted_text, path);
        if want != got {
            let (want, got) = (want.unwrap_or_default(), got.unwrap_or_default());
            let line = want
                .lines()
                .zip(got.lines())
                .take_while(|(a, b)| a == b)
                .count()
                + 1;
            let rel = path
                .strip_prefix(&project.root)
                .unwrap_or(path)
                .display()
                .to_string();
            return Err(Error::NotRevertible {
                file: rel,
                line,
                detail: "apply on the reverted tree would not give this line back (inserted code moved or edited by hand, or a shape revert cannot undo)".into(),
            });
        }
    }
    Ok(())
}

/// Apply's plan on the current tree, from the parts already computed (the missing ones).
fn inventory_plan(inventory: &Inventory) -> Result<Plan> {
    struct Unparsed<'a>(&'a SourceFile);
    impl ParsedSource for Unparsed<'_> {
        fn source(&self) -> &SourceFile {
            self.0
        }
        fn syntax_error(&self) -> Option<&(usize, String)> {
            None // the inventory came from files that parse where they are patched
        }
    }
    let files: Vec<Unparsed> = inventory.files.iter().map(Unparsed).collect();
    crate::lang::parts::plan(&files, &inventory.parts)
}

/// The current (BOM-less) text of a file of the tree, if it exists.
fn text_of(project: &Project, path: &Path) -> Option<String> {
    if let Some(f) = project.files.iter().find(|f| f.path == path) {
        return Some(f.text.clone());
    }
    project.read_source(path).ok().flatten().map(|f| f.text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lang::parts::Part;

    #[test]
    fn the_agents_own_names_that_contain_the_marker_are_not_leftovers() {
        // fast-agent-mcp 0.10.48 has its own `acp_progress_manager`
        let own = "def acp_progress_manager(self):\n    my_acp_progress = 1\n";
        assert_eq!(find_marker(own, "acp_progress"), None);
        assert_eq!(
            find_marker("const acpProgressBar = 1;", "acpProgress"),
            None
        );
        let left = "x = 1\nawait acp_progress.emitter(conn).session_update()\n";
        assert_eq!(find_marker(left, "acp_progress"), Some(12));
        assert_eq!(find_marker("mod acp_progress;", "acp_progress"), Some(4));
        // acp-patch's private helpers begin `_` + marker
        assert_eq!(
            find_marker("self._acp_progress_start()", "acp_progress"),
            Some(6)
        );
        // a prefix marker matches inside the names it begins
        assert_eq!(
            find_marker("self._acp_progress_start()", "_acp_progress_"),
            Some(5)
        );
    }

    #[test]
    fn finds_the_occurrence_covering_the_line_and_the_end_of_file_form() {
        let src = "a\nx = 1\nb\nx = 1\nc";
        // the text itself first, then its end-of-file form (the caller keeps that one only
        // at the end of the file)
        assert_eq!(
            occurrences(src, "x = 1\n", 4),
            vec![(10, 16, false), (9, 15, true)]
        );
        assert_eq!(occurrences(src, "x = 1\n", 2)[0], (2, 8, false));
        assert!(occurrences(src, "x = 1\n", 3).iter().all(|o| o.2));
        // inserted after the last line of a file without a final newline
        let src = "a\nb\n    y()";
        assert_eq!(occurrences(src, "    y()\n", 3), vec![(3, 11, true)]);
        // a text that starts with the line ending of the line before
        let src = "def f():\n    pass\n\n\ndef g():\n    pass\n";
        assert_eq!(
            occurrences(src, "\n\ndef g():\n    pass\n", 5),
            vec![(18, 38, false)]
        );
    }

    #[test]
    fn whole_file_parts_delete_the_file_and_others_become_removals() {
        let module = SourceFile::from_text(
            "/t/acp_progress.py".into(),
            "acp_progress.py".into(),
            "# acp-patch: runtime\nX = 1\n".into(),
        );
        let agent = SourceFile::from_text(
            "/t/agent.py".into(),
            "agent.py".into(),
            "import acp_progress\nclass A:\n    pass\n".into(),
        );
        let part = |file, text: &str, present| Part {
            checks: &[],
            label: "piece",
            file,
            offset: 0,
            replaces: 0,
            text: text.into(),
            present,
            present_at: None,
            anchor_line: 1,
            restore: String::new(),
        };
        let inv = Inventory {
            files: vec![module, agent],
            parts: vec![
                part(0, "# acp-patch: runtime\nX = 1\n", Some(1)),
                part(1, "import acp_progress\n", Some(1)),
                part(1, "import acp_progress\n", Some(1)), // the same insertion twice
                part(1, "", Some(2)),                      // the agent's own: stays
                part(1, "missing\n", None),
            ],
            marker: "acp_progress",
        };
        let (plan, removed) = removal_plan(&inv).unwrap();
        assert_eq!(removed.len(), 2);
        let m = plan
            .files
            .iter()
            .find(|f| f.file.rel == "acp_progress.py")
            .unwrap();
        assert!(m.delete);
        let a = plan
            .files
            .iter()
            .find(|f| f.file.rel == "agent.py")
            .unwrap();
        assert_eq!(a.new_text(), "class A:\n    pass\n");
    }

    #[test]
    fn identical_blocks_inserted_several_times_are_each_taken_out_once() {
        let text = "    _acp_progress_complete(self)\n";
        let src = format!("try:\n{text}{text}    x()\nexcept E:\n{text}    raise\n");
        let f = SourceFile::from_text("/t/a.py".into(), "a.py".into(), src);
        let part = |line| Part {
            checks: &[],
            label: "hook complete",
            file: 0,
            offset: 0,
            replaces: 0,
            text: text.into(),
            present: Some(line),
            present_at: None,
            anchor_line: line,
            restore: String::new(),
        };
        let inv = Inventory {
            files: vec![f],
            // two adjacent copies (lines 2 and 3), one more at line 6; line 6 reported twice
            parts: vec![part(2), part(3), part(6), part(6)],
            marker: "_acp_progress_",
        };
        let (plan, removed) = removal_plan(&inv).unwrap();
        assert_eq!(removed.len(), 3);
        assert_eq!(
            plan.files[0].new_text(),
            "try:\n    x()\nexcept E:\n    raise\n"
        );
    }

    #[test]
    fn an_edited_insertion_is_refused_with_its_line() {
        let f = SourceFile::from_text(
            "/t/a.py".into(),
            "a.py".into(),
            "x = 1\n    _acp_progress_start(self, 'edited')\n".into(),
        );
        let inv = Inventory {
            files: vec![f],
            parts: vec![Part {
                checks: &[],
                label: "hook start",
                file: 0,
                offset: 0,
                replaces: 0,
                text: "    _acp_progress_start(self)\n".into(),
                present: Some(2),
                present_at: None,
                anchor_line: 2,
                restore: String::new(),
            }],
            marker: "_acp_progress_",
        };
        let e = removal_plan(&inv).err().unwrap().to_string();
        assert!(e.starts_with("a.py:2: the hook start"), "{e}");
        let text = "def f():\n    a = 1\n    b = 2\n";
        let src = "x\ndef f():\n    a = 1\n    b = 3\ny\n";
        assert_eq!(first_difference(src, text, 2), (4, "    b = 2"));
    }
}
