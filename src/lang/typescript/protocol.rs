//! The protocol strategy: anchored only on what the SDK contract fixes. Every prompt handler
//! the SDK calls runs through `acpProgress.turn` / `acpProgress.handler` (the card opens at its
//! entry and closes at its end), every `session/cancel` handler through `acpProgress.cancel`,
//! and every send of a session update through `acpProgress.emitter(...)`; the runtime lives in
//! one module beside the agent's sources (`acp-progress.ts`, from `templates/typescript/`).

use super::runtime::{self, MODULE_STEM};
use super::{locate, pieces};

use crate::error::{Error, Result};
use crate::lang::parts::{self, Finding, Parsed, Part};
use crate::project::Project;
use crate::render::{fill, reindent};
use crate::source::SourceFile;

pub struct Analysis {
    /// The parsed files, the runtime module among them (a new file when apply creates it).
    pub files: Vec<Parsed>,
    pub parts: Vec<Part>,
    pub findings: Vec<Finding>,
    /// What the patch does not reach ([`unpatched_bins`]).
    pub notes: Vec<String>,
}

/// The package a file belongs to: the folder of the nearest `package.json` above it (within
/// the tree), `""` for the tree's root.
fn package_of(project: &Project, rel: &str) -> String {
    let mut dir = rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    loop {
        if dir.is_empty() {
            return String::new();
        }
        if project.root.join(dir).join("package.json").is_file() {
            return dir.to_string();
        }
        dir = dir.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    }
}

/// One runtime module per package that has something to patch (a monorepo's agents each get
/// theirs; they share their state at run time): beside the package's first prompt handler's
/// file (else its first file with a send), with that file's ending. (package, module's
/// relative path, extension, the file it sits beside).
fn module_places(
    decisions: &crate::lang::survey::Decisions,
    files: &[Parsed],
    project: &Project,
) -> Result<Vec<(String, String, String, usize)>> {
    let sends = locate::sends(files)?;
    let handlers = locate::handlers(decisions, files, &sends, &project.config.typescript)?;
    let mut touched: Vec<(bool, usize)> = handlers
        .iter()
        .map(|h| (h.role != locate::Role::Prompt, h.file()))
        .chain(sends.iter().map(|s| (true, s.file())))
        .collect();
    touched.sort_by_key(|(not_prompt, f)| (*not_prompt, files[*f].file.rel.clone()));
    let mut places: Vec<(String, String, String, usize)> = Vec::new();
    for (_, f) in touched {
        let rel = &files[f].file.rel;
        let package = package_of(project, rel);
        if places.iter().any(|(p, ..)| *p == package) {
            continue;
        }
        let dir = rel
            .rsplit_once('/')
            .map(|(d, _)| format!("{d}/"))
            .unwrap_or_default();
        let ext = match rel.rsplit('.').next() {
            Some(e @ ("mts" | "cts" | "js" | "mjs" | "cjs")) => e,
            Some("jsx") => "js",
            _ => "ts",
        };
        places.push((
            package,
            format!("{dir}{MODULE_STEM}.{ext}"),
            ext.to_string(),
            f,
        ));
    }
    Ok(places)
}

/// The runtime module as apply writes it, in the style of the file it sits beside.
fn render_module(project: &Project, beside: &Parsed, module_rel: &str) -> Result<String> {
    let t = project.templates.get("typescript/acp-progress.ts")?;
    let mut code = fill(&t, &[("PREFIX", &project.env_prefix)]);
    if crate::lang::typescript::is_js(module_rel) {
        code = runtime::strip_types(&code, flavor(project, module_rel, beside));
    }
    let style =
        crate::lang::typescript::style::detect(beside.tree().root_node(), &beside.file.text);
    let code = crate::lang::typescript::style::restyle(&code, style);
    Ok(reindent(
        &code,
        "",
        &beside.file.style().indent_unit,
        beside.file.style().eol,
    ))
}

/// How a JavaScript file loads modules: by its ending, else its package's `"type"`, else by
/// what it does itself (`import` statements or not).
pub fn flavor(project: &Project, rel: &str, file: &Parsed) -> runtime::Flavor {
    match rel.rsplit('.').next() {
        Some("mjs") => return runtime::Flavor::Esm,
        Some("cjs") => return runtime::Flavor::CommonJs,
        _ => {}
    }
    let package = package_of(project, rel);
    let manifest = project.root.join(&package).join("package.json");
    if let Ok(text) = std::fs::read_to_string(manifest)
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(t) = v.get("type").and_then(|t| t.as_str())
    {
        return if t == "module" {
            runtime::Flavor::Esm
        } else {
            runtime::Flavor::CommonJs
        };
    }
    let imports = crate::lang::typescript::syntax::named_children(file.tree().root_node())
        .iter()
        .any(|n| matches!(n.kind(), "import_statement" | "export_statement"));
    if imports {
        runtime::Flavor::Esm
    } else {
        runtime::Flavor::CommonJs
    }
}

/// Every part of the protocol strategy (present or not) and the placement findings.
pub fn analyze(
    decisions: &crate::lang::survey::Decisions,
    project: &Project,
    mut files: Vec<Parsed>,
) -> Result<Analysis> {
    let fail = |files: &[Parsed], e: Error| match e {
        Error::NoAgent { .. }
        | Error::Unlocatable { .. }
        | Error::Unsupported { .. }
        | Error::Ambiguous { .. } => files.iter().find_map(parts::parse_error).unwrap_or(e),
        e => e,
    };
    let places = module_places(decisions, &files, project).map_err(|e| fail(&files, e))?;
    let notes = unpatched_bins(project, &files, places.iter().map(|p| p.0.as_str()));
    let mut modules = Vec::new();
    for (package, module_rel, ext, beside) in places {
        let text = crate::lang::seal::seal(&render_module(project, &files[beside], &module_rel)?);
        let file = match files.iter().position(|p| p.file.rel == module_rel) {
            Some(i) => i,
            None => {
                let parsed = match project.source(&module_rel) {
                    // a file of the agent (not one it was worth parsing) where the module would go
                    Some(f) => {
                        let parser = crate::lang::typescript::syntax::parser(
                            crate::lang::typescript::is_js(&f.rel),
                        );
                        Parsed::new(f, parser)
                    }
                    None => {
                        let style = crate::source::Style {
                            bom: false,
                            ..files[beside].file.style().clone()
                        };
                        let path = project.root.join(&module_rel);
                        Parsed::new(
                            SourceFile::new_file(path, module_rel.clone(), style),
                            crate::lang::typescript::syntax::parser(false),
                        )
                    }
                };
                files.push(parsed);
                files.len() - 1
            }
        };
        modules.push((package, pieces::Module { file, text, ext }));
    }
    let module_of: Vec<usize> = files
        .iter()
        .map(|p| {
            let package = package_of(project, &p.file.rel);
            modules.iter().position(|(m, _)| *m == package).unwrap_or(0)
        })
        .collect();
    let modules: Vec<pieces::Module> = modules.into_iter().map(|(_, m)| m).collect();
    let built = {
        let sends = locate::sends(&files).map_err(|e| fail(&files, e))?;
        let handlers = locate::handlers(decisions, &files, &sends, &project.config.typescript)
            .map_err(|e| fail(&files, e))?;
        for h in &handlers {
            if let Some(e) = parts::parse_error(&files[h.file()]) {
                return Err(e);
            }
        }
        let commonjs: Vec<bool> = files
            .iter()
            .map(|p| {
                crate::lang::typescript::is_js(&p.file.rel)
                    && flavor(project, &p.file.rel, p) == runtime::Flavor::CommonJs
            })
            .collect();
        pieces::build(&files, &modules, &module_of, &commonjs, &handlers, &sends)
            .map_err(|e| fail(&files, e))?
    };
    Ok(Analysis {
        files,
        parts: built.parts,
        findings: built.findings,
        notes,
    })
}

/// The programs of a patched package that run a JavaScript build of the agent beside the
/// TypeScript sources the patch went into (an npm package shipping `src/` for its library
/// exports and `dist/cli.js` bundled for its `bin`; or a small launcher `lib/bin.js` that
/// imports the build, `lib/agent.js`, maybe through more modules): the patch never runs
/// there, so say so. A bin none of whose JavaScript ([`launched_build`]) holds the anchors'
/// words (a launcher importing the sources) is not one; neither is a file of the patch.
fn unpatched_bins<'p>(
    project: &Project,
    files: &[Parsed],
    packages: impl Iterator<Item = &'p str>,
) -> Vec<String> {
    let mut out = Vec::new();
    if files
        .iter()
        .any(|p| crate::lang::typescript::is_js(&p.file.rel))
    {
        return out; // the build is what was patched
    }
    let mut seen: Vec<&str> = Vec::new();
    for package in packages {
        if seen.contains(&package) {
            continue;
        }
        seen.push(package);
        let dir = project.root.join(package);
        let Ok(text) = std::fs::read_to_string(dir.join("package.json")) else {
            continue;
        };
        let Ok(manifest) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        let bins: Vec<(String, String)> = match manifest.get("bin") {
            Some(serde_json::Value::String(s)) => {
                let name = manifest.get("name").and_then(|n| n.as_str()).unwrap_or("");
                vec![(name.rsplit('/').next().unwrap_or("").to_string(), s.clone())]
            }
            Some(serde_json::Value::Object(m)) => m
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect(),
            _ => Vec::new(),
        };
        for (name, target) in bins {
            let target = target.trim_start_matches("./");
            let rel = if package.is_empty() {
                target.to_string()
            } else {
                format!("{package}/{target}")
            };
            if !crate::lang::typescript::is_js(&rel) || files.iter().any(|p| p.file.rel == rel) {
                continue;
            }
            let Some(chain) = launched_build(project, files, package, &rel) else {
                continue;
            };
            let (build, through) = match chain.as_slice() {
                [only] => (only, String::new()),
                [.., last] => (
                    last,
                    format!(" (its bin's imports lead there: {})", chain.join(" -> ")),
                ),
                [] => continue,
            };
            out.push(format!(
                "{build}: the package's program `{name}` runs this JavaScript build{through}, which holds the agent too and is not patched (the TypeScript sources beside it are); rebuild it from the patched sources, or patch the build on its own (acp-patch on a folder holding the build without the sources)"
            ));
        }
    }
    out
}

/// How many JavaScript files [`launched_build`] reads from a bin at most.
const LAUNCH_FILES: usize = 16;

/// The JavaScript a bin runs that may hold the agent: the bin's file itself, else the first
/// file of the same package its relative loads reach (`import ... from`, `export ... from`,
/// `require()`, `import()`, followed from file to file, breadth first, at most
/// [`LAUNCH_FILES`] files), with the chain of files from the bin to it (the bin first). A file
/// of the patch, or one in another package (`node_modules`, a nested `package.json`), ends the
/// path; so does a TypeScript source (a launcher running the sources runs the patch).
fn launched_build(
    project: &Project,
    files: &[Parsed],
    package: &str,
    bin: &str,
) -> Option<Vec<String>> {
    use crate::lang::typescript::{is_js, may_hold_anchor};
    // (file, index of the file that loads it)
    let mut reached: Vec<(String, Option<usize>)> = vec![(bin.to_string(), None)];
    let mut next = 0;
    while next < reached.len() {
        let (rel, _) = &reached[next];
        let Ok(text) = std::fs::read_to_string(project.root.join(rel)) else {
            next += 1;
            continue;
        };
        if may_hold_anchor(&text) {
            let mut chain = Vec::new();
            let mut at = Some(next);
            while let Some(i) = at {
                chain.push(reached[i].0.clone());
                at = reached[i].1;
            }
            chain.reverse();
            return Some(chain);
        }
        let dir = rel
            .rsplit_once('/')
            .map(|(d, _)| d)
            .unwrap_or("")
            .to_string();
        for spec in super::toolchain::specifiers(rel, &text) {
            if !(spec.starts_with("./") || spec.starts_with("../")) {
                continue;
            }
            let Some(target) = super::toolchain::join(&dir, &spec) else {
                continue;
            };
            let candidates: Vec<String> = if is_js(&target) {
                vec![target]
            } else {
                // CommonJS (and a bundler's ES modules) may leave the ending out
                [
                    ".js",
                    ".mjs",
                    ".cjs",
                    "/index.js",
                    "/index.mjs",
                    "/index.cjs",
                ]
                .iter()
                .map(|e| format!("{target}{e}"))
                .collect()
            };
            let Some(found) = candidates
                .into_iter()
                .find(|c| is_js(c) && project.root.join(c).is_file())
            else {
                continue;
            };
            if reached.len() >= LAUNCH_FILES
                || reached.iter().any(|(r, _)| *r == found)
                || files.iter().any(|p| p.file.rel == found)
                || package_of(project, &found) != package
            {
                continue;
            }
            reached.push((found, Some(next)));
        }
        next += 1;
    }
    None
}

/// Names of the functions the runtime module exports.
pub fn defined_names(block: &str) -> Vec<String> {
    block
        .lines()
        .filter_map(|l| l.strip_prefix("export function "))
        .filter_map(|l| l.split(['(', '<']).next())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Options;

    fn copy(from: &std::path::Path, to: &std::path::Path) {
        for e in std::fs::read_dir(from).unwrap().flatten() {
            let (p, dest) = (e.path(), to.join(e.file_name()));
            if p.is_dir() {
                std::fs::create_dir_all(&dest).unwrap();
                copy(&p, &dest);
            } else {
                std::fs::copy(&p, &dest).unwrap();
            }
        }
    }

    /// What revert relies on: on a patched tree every part apply inserted is present, with
    /// the exact bytes apply inserted at its offset; taking them all out gives the tree back.
    #[test]
    fn present_parts_are_the_bytes_apply_inserted() {
        let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/typescript");
        let mut cases = 0;
        for e in std::fs::read_dir(&fixtures).unwrap().flatten() {
            let before = e.path().join("before");
            if !e.path().join("case.toml").is_file() {
                continue;
            }
            cases += 1;
            let dir = tempfile::tempdir().unwrap();
            copy(&before, dir.path());
            let opts = crate::commands::ApplyOptions {
                allow_dirty: true,
                ..Default::default()
            };
            crate::commands::apply(dir.path(), &opts).unwrap();
            let project = crate::lang::load(dir.path(), &Options::default()).unwrap();
            let files = crate::lang::typescript::TypeScript.parse_for_tests(&project);
            let a = analyze(&Default::default(), &project, files).unwrap();
            let name = e.file_name().to_string_lossy().to_string();
            for (i, f) in a.files.iter().enumerate() {
                let mut parts: Vec<&Part> = a.parts.iter().filter(|p| p.file == i).collect();
                parts.sort_by_key(|p| std::cmp::Reverse(p.offset));
                parts.dedup_by_key(|p| (p.offset, p.text.clone()));
                let mut text = f.file.text.to_string();
                for p in parts {
                    assert!(p.present.is_some(), "{name}: {} not present", p.label);
                    let at =
                        &f.file.text[p.offset..(p.offset + p.text.len()).min(f.file.text.len())];
                    assert_eq!(
                        at,
                        p.text,
                        "{name}: {}:{} ({})",
                        f.file.rel,
                        p.present.unwrap(),
                        p.label
                    );
                    text.replace_range(p.offset..p.offset + p.text.len(), "");
                }
                let original =
                    std::fs::read_to_string(before.join(&f.file.rel)).unwrap_or_default();
                assert_eq!(
                    text,
                    original.trim_start_matches('\u{feff}'),
                    "{name}: {}",
                    f.file.rel
                );
            }
        }
        assert!(cases >= 9, "{cases} cases");
    }
}
