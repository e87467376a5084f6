//! `acp-patch init`: an `acp-patch.toml` listing the sites apply found, each with the pin
//! line that holds apply to it, commented out, so a team can pin them.
//!
//! The sites come from `Language::survey`: the decisions `lang::parts::choose` (the one place
//! every language decides a pinnable site) made while planning, carried with the analysis, so
//! each line init writes is one the pin filter accepts.

use crate::error::{Error, Result};
use crate::lang::survey::Site;
use crate::project::Options;
use crate::source::{SourceFile, Style};
use std::path::{Path, PathBuf};

/// What init found and wrote.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InitOutcome {
    /// The config file (absolute).
    pub path: String,
    pub sites: Vec<Site>,
    /// Why the survey stopped early (an ambiguous or missing site), when it did.
    pub stopped: Vec<String>,
    /// The text written (or, in a dry run, that would be).
    pub toml: String,
    pub written: bool,
    /// The file existed and the pins were added to it (merged into its tables).
    pub appended: bool,
    /// Sites the existing file already had (pinned, or listed by an earlier init), left as
    /// they are.
    pub kept: usize,
}

/// Surveys the agents in `root` and writes (unless `dry_run`) their pins to
/// `root/acp-patch.toml`.
pub fn init(root: &Path, opts: &Options, dry_run: bool) -> Result<InitOutcome> {
    let project = crate::lang::load(root, opts)?;
    let langs: Vec<_> = crate::lang::all()
        .into_iter()
        .filter(|l| l.detect(&project))
        .collect();
    if langs.is_empty() {
        return Err(Error::NoAgent {
            root: project.root.clone(),
            detail: "no source file imports an ACP SDK or handles `session/prompt`, and acp-patch.toml pins no prompt handler".into(),
        });
    }
    let mut sites = Vec::new();
    let mut stopped = Vec::new();
    for lang in langs {
        let (result, found) = lang.survey(&project);
        sites.extend(found);
        if let Err(e) = result {
            stopped.push(format!("{} agent: {e}", lang.name()));
        }
    }
    let path = opts
        .config
        .clone()
        .unwrap_or_else(|| project.root.join(crate::config::FILE_NAME));
    let existing = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::Io { path, source: e }),
    };
    let merge = match &existing {
        Some(text) => {
            let doc: toml::Table = toml::from_str(text).map_err(|e| Error::Config {
                path: path.clone(),
                message: e.to_string(),
            })?;
            match merge(text, &doc, &sites, &stopped) {
                Some(m) => m,
                // a table the file has in a form init does not edit: the pins to add by hand
                None if dry_run => Merge {
                    edits: Vec::new(),
                    shown: render(&sites, &stopped, true),
                    kept: 0,
                },
                None => return Err(Error::Exists { path }),
            }
        }
        None => Merge {
            edits: vec![(0, render(&sites, &stopped, false))],
            shown: render(&sites, &stopped, false),
            kept: 0,
        },
    };
    let result = apply_edits(existing.as_deref().unwrap_or_default(), &merge.edits);
    // never write a config apply would then refuse
    toml::from_str::<crate::config::Config>(&result).map_err(|e| Error::Config {
        path: path.clone(),
        message: format!("acp-patch init would write an invalid file ({e}); this is a bug"),
    })?;
    let outcome = InitOutcome {
        path: path.display().to_string(),
        sites,
        stopped,
        toml: merge.shown,
        written: !dry_run && !merge.edits.is_empty(),
        appended: existing.is_some(),
        kept: merge.kept,
    };
    if dry_run || merge.edits.is_empty() {
        return Ok(outcome);
    }
    write_config(&project.root, &path, existing, &merge.edits)?;
    Ok(outcome)
}

/// What init adds to a config: insertions (byte offset in the existing text, text with `\n`
/// line ends), the same text as `--dry-run` shows it, and how many sites the file already had.
struct Merge {
    edits: Vec<(usize, String)>,
    shown: String,
    kept: usize,
}

/// `text` with `edits` (ascending offsets) inserted.
fn apply_edits(text: &str, edits: &[(usize, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (offset, add) in edits {
        out.push_str(&text[at..*offset]);
        out.push_str(add);
        at = *offset;
    }
    out.push_str(&text[at..]);
    out
}

/// The pins of `sites` merged into an existing config: a table the file has gets, at its end,
/// the sites it neither pins nor lists (a commented pin line for the key, or the site's
/// "not found" line), the user's lines kept as they are; a table it lacks is appended as
/// `render` writes it; a note of a stopped survey only when the file lacks it. Nothing to add
/// gives no edits, so a second init is a no-op. `None` when a table the file has is not a
/// `[section]` header of its own (an inline table, dotted keys): the pins are added by hand.
fn merge(text: &str, doc: &toml::Table, sites: &[Site], stopped: &[String]) -> Option<Merge> {
    let lines = line_spans(text);
    let mut sections: Vec<&str> = sites.iter().map(|s| s.section.as_str()).collect();
    sections.sort();
    sections.dedup();
    let mut edits = Vec::new();
    let mut shown = String::new();
    let mut kept = 0;
    let mut fresh = Vec::new();
    for section in sections {
        let in_section = sites.iter().filter(|x| x.section == section);
        let Some(table) = doc.get(section) else {
            fresh.extend(in_section.cloned());
            continue;
        };
        let header = lines
            .iter()
            .position(|&(a, b)| header_name(&text[a..b]) == Some(section))?;
        let end = lines[header + 1..]
            .iter()
            .position(|&(a, b)| header_name(&text[a..b]).is_some())
            .map_or(lines.len(), |i| header + 1 + i);
        let body: Vec<&str> = lines[header + 1..end]
            .iter()
            .map(|&(a, b)| text[a..b].trim())
            .collect();
        let mut add = String::new();
        for site in in_section {
            let pinned = table.as_table().is_some_and(|t| t.contains_key(&site.key));
            let listed = body.iter().any(|l| {
                l.strip_prefix('#').is_some_and(|c| {
                    let c = c.trim_start();
                    c.strip_prefix(site.key.as_str())
                        .is_some_and(|r| r.trim_start().starts_with('='))
                        || (site.pins.is_empty()
                            && c.starts_with(&format!("{}: not found", site.site)))
                })
            });
            if pinned || listed {
                kept += 1;
            } else {
                add.push_str(&site_lines(site));
            }
        }
        if add.is_empty() {
            continue;
        }
        // after the table's last line, before the comments that open the next table
        let mut last = end;
        if end < lines.len() {
            while last > header + 1 && is_comment(text, lines[last - 1]) {
                last -= 1;
            }
        }
        while last > header + 1 && text[lines[last - 1].0..lines[last - 1].1].trim().is_empty() {
            last -= 1;
        }
        let (_, b) = lines[last - 1];
        let at = if text[b..].starts_with("\r\n") {
            b + 2
        } else if text[b..].starts_with('\n') || text[b..].starts_with('\r') {
            b + 1
        } else {
            // the file's last line has no line end
            add.insert(0, '\n');
            b
        };
        shown.push_str(&format!("[{section}]\n{}", add.trim_start_matches('\n')));
        edits.push((at, add));
    }
    let stopped: Vec<&String> = stopped
        .iter()
        .filter(|why| !text.contains(&stopped_note(why)))
        .collect();
    if !fresh.is_empty() || !stopped.is_empty() {
        let header = !text.contains(HEADER);
        let mut tail = String::from("\n");
        if !text.is_empty() && !text.ends_with('\n') && !text.ends_with('\r') {
            tail.insert(0, '\n');
        }
        let mut body = String::new();
        if header && !fresh.is_empty() {
            body.push_str(HEADER);
        }
        body.push_str(&tables(&fresh));
        for why in stopped {
            body.push_str(&stopped_note(why));
        }
        let body = body.trim_start_matches('\n').to_string();
        tail.push_str(&body);
        if shown.is_empty() {
            shown = tail.clone();
        } else {
            shown.push('\n');
            shown.push_str(&body);
        }
        edits.push((text.len(), tail));
    }
    edits.sort_by_key(|e| e.0);
    Some(Merge { edits, shown, kept })
}

/// Each line of `text` as the byte range of its content (without its line end).
fn line_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {
                spans.push((start, i));
                i += 2;
                start = i;
            }
            b'\n' | b'\r' => {
                spans.push((start, i));
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < text.len() {
        spans.push((start, text.len()));
    }
    spans
}

fn is_comment(text: &str, (a, b): (usize, usize)) -> bool {
    text[a..b].trim_start().starts_with('#')
}

/// The name of the table a line opens (`[python]`, `[ python ]  # x`), if it opens one.
fn header_name(line: &str) -> Option<&str> {
    let l = line.trim();
    let l = l.strip_prefix('[')?;
    if l.starts_with('[') {
        // an array of tables: a header all the same, never one of ours
        return Some("");
    }
    let (name, rest) = l.split_once(']')?;
    let rest = rest.trim_start();
    (rest.is_empty() || rest.starts_with('#')).then(|| name.trim().trim_matches('"'))
}

fn write_config(
    root: &Path,
    path: &Path,
    existing: Option<String>,
    edits: &[(usize, String)],
) -> Result<()> {
    let rel = crate::source::rel_path(root, path);
    let file = match existing {
        Some(text) => SourceFile::from_text(path.to_path_buf(), rel, text),
        None => SourceFile::new_file(
            PathBuf::from(path),
            rel,
            Style {
                bom: false,
                eol: "\n",
                indent_unit: "    ".into(),
                cr_only: false,
            },
        ),
    };
    let mut plan = crate::plan::Plan::default();
    for (offset, add) in edits {
        let text = add.replace('\n', file.style().eol);
        plan.add(&file, *offset, text, "pins");
    }
    crate::write::write_plan(&plan)
}

const HEADER: &str = "# Sites acp-patch found (written by `acp-patch init`). Apply finds them by itself; a pin\n\
     # holds it to one, so a refactor or a second candidate never moves or stops it.\n\
     # Uncomment a pin to keep it.\n";

/// The pins as TOML: a table per language, each site a comment saying what and where,
/// then its pin line commented out.
fn render(sites: &[Site], stopped: &[String], appending: bool) -> String {
    let mut s = String::new();
    if appending {
        s.push('\n');
    }
    s.push_str(HEADER);
    s.push_str(&tables(sites));
    for why in stopped {
        s.push_str(&stopped_note(why));
    }
    s
}

/// A `[section]` table per language of `sites`, each after a blank line.
fn tables(sites: &[Site]) -> String {
    let mut s = String::new();
    let mut sections: Vec<&str> = sites.iter().map(|s| s.section.as_str()).collect();
    sections.sort();
    sections.dedup();
    for section in sections {
        s.push_str(&format!("\n[{section}]\n"));
        for site in sites.iter().filter(|x| x.section == section) {
            s.push_str(&site_lines(site));
        }
    }
    s
}

/// One site: a comment saying what and where, then its pin line commented out (or its
/// candidates', or that it was not found).
fn site_lines(site: &Site) -> String {
    match site.pins.as_slice() {
        [] => format!("# {}: not found; see the note below\n", site.site),
        [one] if site.decided => format!(
            "# {} at {}\n# {} = \"{}\"\n",
            site.site, one.location, site.key, one.value
        ),
        many => {
            let mut s = format!(
                "# {}: {} candidates; apply refuses until one is pinned: uncomment one\n",
                site.site,
                many.len()
            );
            for p in many {
                s.push_str(&format!(
                    "# {} = \"{}\"  # {}\n",
                    site.key, p.value, p.location
                ));
            }
            s
        }
    }
}

/// The note of a survey that stopped early.
fn stopped_note(why: &str) -> String {
    let mut s = String::from(
        "\n# apply stopped here; pin this site, then run `acp-patch init --dry-run` for the rest:\n",
    );
    for l in why.lines() {
        s.push_str(&format!("#   {l}\n"));
    }
    s
}
