//! What revert checks before it writes: no inserted code left behind, and apply on the
//! reverted tree giving back what it gives on the current one.

use crate::error::{Error, Result};
use crate::lang::Language;
use crate::lang::parts::{Inventory, ParsedSource};
use crate::plan::Plan;
use crate::project::Project;
use crate::source::SourceFile;
use std::path::Path;

/// Once the parts are out, no file may still hold inserted code (the language's marker):
/// that would be acp-patch code moved or copied by hand, which revert cannot account for.
pub(super) fn check_no_leftovers(inventory: &Inventory, revert: &Plan) -> Result<()> {
    for f in &inventory.files {
        let text: std::borrow::Cow<str> =
            match revert.files.iter().find(|fp| fp.file.path == f.path) {
                Some(fp) if fp.delete => continue,
                Some(fp) => fp.new_text().into(),
                None => f.text.as_ref().into(),
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
pub(super) fn find_marker(text: &str, marker: &str) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let name_starts_at = |i: usize| !text[..i].chars().next_back().is_some_and(ident);
    let word_start = marker.starts_with(|c: char| c.is_alphanumeric());
    let word_end = marker.ends_with(|c: char| c.is_alphanumeric());
    memchr::memmem::find_iter(text.as_bytes(), marker).find(|&at| {
        let after = text[at + marker.len()..].chars().next();
        let whole = (!word_start || name_starts_at(at)) && !(word_end && after.is_some_and(ident));
        let private = text[..at].ends_with('_') && name_starts_at(at - 1);
        whole || private
    })
}

/// Apply on the reverted tree must give exactly what apply gives on the current tree (the
/// current tree when it is fully patched): otherwise something revert would take out is not
/// what apply put there (hand-moved or hand-edited code), and nothing is written.
pub(super) fn check_round_trip(
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
        return Some(f.text.to_string());
    }
    project
        .read_source(path)
        .ok()
        .flatten()
        .map(|f| f.text.to_string())
}
