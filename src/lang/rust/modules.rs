//! The crate's module trees: which crate root (`src/main.rs`, `src/lib.rs`, `src/bin/*.rs`,
//! or the manifest's `[lib]`/`[[bin]]` paths) owns each file, and the module path of each.
//! The runtime module is declared in the root that owns the code calling it.

use super::Parsed;
use super::manifest::Manifest;
use crate::error::{Error, Result};
use crate::lang::parts::parse_error;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The crate as the analyses read it: its module trees (from the manifest's `[lib]`/`[[bin]]`
/// paths and `mod` declarations) and which files are acp-patch's runtime modules.
pub struct Layout {
    pub modules: Modules,
    pub runtime_files: BTreeSet<usize>,
}

impl Layout {
    pub fn read(manifest: &Manifest, files: &[Parsed], crate_dir: &Path) -> Result<Layout> {
        let doc: toml_edit::DocumentMut =
            manifest
                .file
                .text
                .parse()
                .map_err(|e: toml_edit::TomlError| Error::Config {
                    path: manifest.file.path.clone(),
                    message: e.to_string(),
                })?;
        Ok(Layout {
            modules: Modules::load(files, crate_dir, &doc),
            runtime_files: files
                .iter()
                .enumerate()
                .filter(|(_, p)| super::is_runtime_module(p))
                .map(|(i, _)| i)
                .collect(),
        })
    }
}

/// Whether file `f` is the agent's own code: in a module tree of the crate, not a runtime
/// module.
pub fn owned(modules: &Modules, runtime_files: &BTreeSet<usize>, f: usize) -> bool {
    modules.root_of(f).is_some() && !runtime_files.contains(&f)
}

/// The first of the agent's own modules that does not parse: a refusal, since it may hold
/// what the analysis looks for.
pub fn unparsed_owned(
    files: &[Parsed],
    modules: &Modules,
    runtime_files: &BTreeSet<usize>,
) -> Result<()> {
    match files
        .iter()
        .enumerate()
        .filter(|(i, _)| owned(modules, runtime_files, *i))
        .find_map(|(_, p)| parse_error(p))
    {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootKind {
    Lib,
    Bin,
}

#[derive(Debug, Clone)]
pub struct Root {
    /// Index of the root file in the parsed files.
    pub file: usize,
    pub kind: RootKind,
}

#[derive(Debug, Default)]
pub struct Modules {
    pub roots: Vec<Root>,
    /// File index → (root index, module path below the root).
    pub owner: HashMap<usize, (usize, Vec<String>)>,
    /// The library's crate name (for binaries that use it).
    pub lib_name: Option<String>,
}

impl Modules {
    /// Walks `mod x;` declarations from every crate root found in `crate_dir`.
    pub fn load(files: &[Parsed], crate_dir: &Path, manifest: &toml_edit::DocumentMut) -> Modules {
        let index: HashMap<PathBuf, usize> = files
            .iter()
            .enumerate()
            .map(|(i, p)| (p.file.path.clone(), i))
            .collect();
        let mut roots: Vec<(PathBuf, RootKind)> = Vec::new();
        let table_path = |t: &dyn toml_edit::TableLike| {
            t.get("path")
                .and_then(|p| p.as_str())
                .map(|p| crate_dir.join(p))
        };
        let lib = manifest
            .get("lib")
            .and_then(|l| l.as_table_like())
            .and_then(table_path)
            .unwrap_or_else(|| crate_dir.join("src/lib.rs"));
        roots.push((lib, RootKind::Lib));
        roots.push((crate_dir.join("src/main.rs"), RootKind::Bin));
        if let Some(bins) = manifest.get("bin").and_then(|b| b.as_array_of_tables()) {
            for b in bins.iter() {
                if let Some(p) = table_path(b) {
                    roots.push((p, RootKind::Bin));
                }
            }
        }
        if let Ok(entries) = std::fs::read_dir(crate_dir.join("src/bin")) {
            let mut found: Vec<PathBuf> = entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter_map(|p| {
                    if p.extension().is_some_and(|x| x == "rs") {
                        Some(p)
                    } else if p.join("main.rs").is_file() {
                        Some(p.join("main.rs"))
                    } else {
                        None
                    }
                })
                .collect();
            found.sort();
            roots.extend(found.into_iter().map(|p| (p, RootKind::Bin)));
        }
        let lib_name = manifest
            .get("lib")
            .and_then(|l| l.get("name"))
            .and_then(|n| n.as_str())
            .map(str::to_string)
            .or_else(|| {
                manifest
                    .get("package")
                    .and_then(|p| p.get("name"))
                    .and_then(|n| n.as_str())
                    .map(|n| n.replace('-', "_"))
            });
        let mut m = Modules {
            lib_name,
            ..Modules::default()
        };
        for (path, kind) in roots {
            let Some(&file) = index.get(&path) else {
                continue;
            };
            if m.roots.iter().any(|r| r.file == file) {
                continue;
            }
            let root = m.roots.len();
            m.roots.push(Root { file, kind });
            let dir = path.parent().unwrap_or(crate_dir).to_path_buf();
            m.walk(files, &index, file, root, Vec::new(), dir);
        }
        m
    }

    fn walk(
        &mut self,
        files: &[Parsed],
        index: &HashMap<PathBuf, usize>,
        file: usize,
        root: usize,
        path: Vec<String>,
        dir: PathBuf,
    ) {
        if self.owner.contains_key(&file) {
            return;
        }
        self.owner.insert(file, (root, path.clone()));
        let Some(ast) = &files[file].ast else {
            return;
        };
        let mut found = Vec::new();
        collect_mods(&ast.items, &dir, &path, index, &mut found);
        for (p, child_path, child_dir) in found {
            if let Some(&child) = index.get(&p) {
                self.walk(files, index, child, root, child_path, child_dir);
            }
        }
    }

    /// The module path of a file (`None` when no crate root reaches it).
    pub fn path_of(&self, file: usize) -> Option<&[String]> {
        self.owner.get(&file).map(|(_, p)| p.as_slice())
    }

    pub fn root_of(&self, file: usize) -> Option<usize> {
        self.owner.get(&file).map(|(r, _)| *r)
    }
}

/// `mod x;` items (also inside inline modules): (file, module path, the directory of its
/// own children).
fn collect_mods(
    items: &[syn::Item],
    dir: &Path,
    path: &[String],
    index: &HashMap<PathBuf, usize>,
    out: &mut Vec<(PathBuf, Vec<String>, PathBuf)>,
) {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        let name = m.ident.to_string();
        let mut child_path = path.to_vec();
        child_path.push(name.clone());
        let explicit = m.attrs.iter().find_map(|a| {
            if !a.path().is_ident("path") {
                return None;
            }
            match &a.meta {
                syn::Meta::NameValue(nv) => match &nv.value {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(s),
                        ..
                    }) => Some(s.value()),
                    _ => None,
                },
                _ => None,
            }
        });
        match &m.content {
            Some((_, inner)) => collect_mods(inner, &dir.join(&name), &child_path, index, out),
            None => {
                let (file, child_dir) = match explicit {
                    Some(p) => {
                        let f = dir.join(p);
                        let d = f.parent().unwrap_or(dir).to_path_buf();
                        (f, d)
                    }
                    None => {
                        let flat = dir.join(format!("{name}.rs"));
                        // a file the plan creates is read from the files, not the disk
                        if index.contains_key(&flat) || flat.is_file() {
                            (flat, dir.join(&name))
                        } else {
                            (dir.join(&name).join("mod.rs"), dir.join(&name))
                        }
                    }
                };
                out.push((file, child_path, child_dir));
            }
        }
    }
}
