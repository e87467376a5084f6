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
    /// The file existed and the pins were appended to it.
    pub appended: bool,
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
    let sections: Vec<&str> = {
        let mut v: Vec<&str> = sites.iter().map(|s| s.section.as_str()).collect();
        v.dedup();
        v
    };
    if let Some(text) = &existing {
        let doc: toml::Table = toml::from_str(text).map_err(|e| Error::Config {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if sections.iter().any(|s| doc.contains_key(*s)) && !dry_run {
            return Err(Error::Exists { path });
        }
    }
    let toml = render(&sites, &stopped, existing.is_some());
    let result = format!("{}{toml}", existing.clone().unwrap_or_default());
    // never write a config apply would then refuse
    toml::from_str::<crate::config::Config>(&result).map_err(|e| Error::Config {
        path: path.clone(),
        message: format!("acp-patch init would write an invalid file ({e}); this is a bug"),
    })?;
    let outcome = InitOutcome {
        path: path.display().to_string(),
        sites,
        stopped,
        toml: toml.clone(),
        written: !dry_run,
        appended: existing.is_some(),
    };
    if dry_run {
        return Ok(outcome);
    }
    write_config(&project.root, &path, existing, &toml)?;
    Ok(outcome)
}

fn write_config(root: &Path, path: &Path, existing: Option<String>, add: &str) -> Result<()> {
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
    let text = add.replace('\n', file.style().eol);
    plan.add(&file, file.text.len(), text, "pins");
    crate::write::write_plan(&plan)
}

/// The pins as TOML: a table per language, each site a comment saying what and where,
/// then its pin line commented out.
fn render(sites: &[Site], stopped: &[String], appending: bool) -> String {
    let mut s = String::new();
    if appending {
        s.push('\n');
    }
    s.push_str(
        "# Sites acp-patch found (written by `acp-patch init`). Apply finds them by itself; a pin\n\
         # holds it to one, so a refactor or a second candidate never moves or stops it.\n\
         # Uncomment a pin to keep it.\n",
    );
    let mut sections: Vec<&str> = sites.iter().map(|s| s.section.as_str()).collect();
    sections.sort();
    sections.dedup();
    for section in sections {
        s.push_str(&format!("\n[{section}]\n"));
        for site in sites.iter().filter(|x| x.section == section) {
            match site.pins.as_slice() {
                [] => s.push_str(&format!("# {}: not found; see the note below\n", site.site)),
                [one] if site.decided => s.push_str(&format!(
                    "# {} at {}\n# {} = \"{}\"\n",
                    site.site, one.location, site.key, one.value
                )),
                many => {
                    s.push_str(&format!(
                        "# {}: {} candidates; apply refuses until one is pinned: uncomment one\n",
                        site.site,
                        many.len()
                    ));
                    for p in many {
                        s.push_str(&format!(
                            "# {} = \"{}\"  # {}\n",
                            site.key, p.value, p.location
                        ));
                    }
                }
            }
        }
    }
    for why in stopped {
        s.push_str("\n# apply stopped here; pin this site, then run `acp-patch init --dry-run` for the rest:\n");
        for l in why.lines() {
            s.push_str(&format!("#   {l}\n"));
        }
    }
    s
}
