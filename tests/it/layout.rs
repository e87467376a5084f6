//! The shape of the code: the library's modules form layers (no `use crate::` cycle between
//! top-level modules), and no language reaches into another.
//!
//! Read from the sources: every `crate::<module>` path outside comments and test modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LANGUAGES: &[&str] = &["python", "typescript", "rust"];

/// Every library source file (the binary's `main.rs` sits above everything), relative to `src/`.
fn sources() -> Vec<(PathBuf, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "main.rs"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p.strip_prefix(&src).unwrap().to_path_buf(), text)
        })
        .collect()
}

/// The code of a file without its comments and its `#[cfg(test)] mod` (tests may drive the
/// whole tool).
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod ") {
        Some(i) => &text[..i],
        None => text,
    };
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) if !l[..i].contains('"') => &l[..i],
            _ => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `crate::a::b::…` paths a file names, as their segments.
fn crate_paths(code: &str) -> Vec<Vec<String>> {
    let mut paths = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let end = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(after.len());
        let segments: Vec<String> = after[..end]
            .split("::")
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if !segments.is_empty() {
            paths.push(segments);
        }
        rest = &after[end..];
    }
    paths
}

/// The module path of a file: `lang/python/locate/handlers.rs` →
/// `[lang, python, locate, handlers]`.
fn module_of(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    parts
}

/// A cycle in `graph`, as the modules along it, when there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut c = path[at..].to_vec();
            c.push(node.to_string());
            return Some(c);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

/// Fails with the cycle in `graph`, if any, and the line that makes each step of it.
fn fail_on_cycle(
    graph: &BTreeMap<String, BTreeSet<String>>,
    why: &BTreeMap<(String, String), String>,
) {
    if let Some(c) = cycle(graph) {
        let steps: Vec<String> = c
            .windows(2)
            .map(|w| why[&(w[0].clone(), w[1].clone())].clone())
            .collect();
        panic!("module cycle {}:\n  {}", c.join(" -> "), steps.join("\n  "));
    }
}

#[test]
fn top_level_modules_form_layers_without_a_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut why: BTreeMap<(String, String), String> = BTreeMap::new();
    for (rel, text) in sources() {
        let from = module_of(&rel);
        let Some(top) = from.first() else { continue };
        for path in crate_paths(&code(&text)) {
            if &path[0] != top {
                graph
                    .entry(top.clone())
                    .or_default()
                    .insert(path[0].clone());
                why.entry((top.clone(), path[0].clone()))
                    .or_insert_with(|| {
                        format!("{} names crate::{}", rel.display(), path.join("::"))
                    });
            }
        }
    }
    assert!(
        graph.contains_key("commands"),
        "the reader found no module: {graph:?}"
    );
    fail_on_cycle(&graph, &why);
}

/// Every `crate::…`, `super::…` and `self::…` path in `code`, use groups expanded
/// (`super::{a::X, b::{Y, Z}}` is `super::a::X`, `super::b::Y`, `super::b::Z`).
fn rooted_paths(code: &str) -> Vec<String> {
    fn ident(c: char) -> bool {
        c.is_alphanumeric() || c == '_' || c == ':'
    }
    fn group(prefix: &str, body: &str, out: &mut Vec<String>) {
        let (mut depth, mut start) = (0, 0);
        let mut items = Vec::new();
        for (i, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    items.push(&body[start..i]);
                    start = i + 1;
                }
                _ => {}
            }
        }
        items.push(&body[start..]);
        for item in items.into_iter().map(str::trim).filter(|i| !i.is_empty()) {
            match item.split_once("::{") {
                Some((head, rest)) => {
                    let inner = &rest[..rest.rfind('}').unwrap_or(rest.len())];
                    group(&format!("{prefix}::{head}"), inner, out);
                }
                None => {
                    let name = item.split(" as ").next().unwrap_or(item).trim();
                    out.push(format!("{prefix}::{name}"));
                }
            }
        }
    }
    let mut out = Vec::new();
    for root in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(root) {
            if code[..i].chars().next_back().is_some_and(ident) {
                continue; // the tail of a longer path (`super::super::x`)
            }
            let after = &code[i..];
            let end = after.find(|c: char| !ident(c)).unwrap_or(after.len());
            let path = after[..end].trim_end_matches(':');
            if after[end..].starts_with('{') && after[..end].ends_with("::") {
                let body = &after[end + 1..];
                let mut depth = 1;
                let close = body
                    .char_indices()
                    .find(|&(_, c)| {
                        match c {
                            '{' => depth += 1,
                            '}' => depth -= 1,
                            _ => {}
                        }
                        depth == 0
                    })
                    .map_or(body.len(), |(j, _)| j);
                group(path, &body[..close], &mut out);
            } else {
                out.push(path.to_string());
            }
        }
    }
    out
}

/// The modules a file's code names, resolved against `from` (the file's own module) to the
/// deepest module in `modules`, with the path as spelled.
fn named_modules(
    from: &[String],
    code: &str,
    modules: &BTreeSet<Vec<String>>,
) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    for spelled in rooted_paths(code) {
        let mut segments = spelled.split("::").filter(|s| !s.is_empty() && *s != "*");
        let mut path: Vec<String> = match segments.next() {
            Some("crate") => Vec::new(),
            Some("super") => from[..from.len().saturating_sub(1)].to_vec(),
            _ => from.to_vec(),
        };
        let mut named = false;
        for seg in segments {
            match seg {
                "super" if !named => {
                    path.pop();
                }
                "self" => {}
                other => {
                    named = true;
                    path.push(other.to_string());
                }
            }
        }
        if let Some(n) = (1..=path.len())
            .rev()
            .find(|&n| modules.contains(&path[..n]))
        {
            out.push((path[..n].to_vec(), spelled));
        }
    }
    out
}

#[test]
fn modules_form_layers_at_every_depth() {
    // an edge between two modules, lifted to the children of their nearest common ancestor:
    // siblings must not name each other in a circle (a module and its own ancestors or
    // descendants may: a parent declares its children, which use what it defines)
    let files = sources();
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(rel, _)| module_of(rel)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut why: BTreeMap<(String, String), String> = BTreeMap::new();
    for (rel, text) in &files {
        let from = module_of(rel);
        for (to, spelled) in named_modules(&from, &code(text), &modules) {
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common == from.len() || common == to.len() {
                continue;
            }
            let (a, b) = (from[..=common].join("::"), to[..=common].join("::"));
            graph.entry(a.clone()).or_default().insert(b.clone());
            why.entry((a, b))
                .or_insert_with(|| format!("{} names {spelled}", rel.display()));
        }
    }
    fail_on_cycle(&graph, &why);
}

#[test]
fn no_language_reaches_into_another() {
    let mut crossings = Vec::new();
    for (rel, text) in sources() {
        let from = module_of(&rel);
        if from.len() < 2 || from[0] != "lang" || !LANGUAGES.contains(&from[1].as_str()) {
            continue;
        }
        for path in crate_paths(&code(&text)) {
            if path.len() > 1
                && path[0] == "lang"
                && LANGUAGES.contains(&path[1].as_str())
                && path[1] != from[1]
            {
                crossings.push(format!(
                    "{} names crate::{}",
                    rel.display(),
                    path.join("::")
                ));
            }
        }
    }
    assert!(crossings.is_empty(), "{crossings:#?}");
}

/// The steps every language folder holds under the same name (a file, or a folder with a
/// `mod.rs`), as README's "How it works" lists them: where a newcomer finds "the send sites of
/// language X, found and rendered" from the tree alone.
const LANGUAGE_LAYOUT: &[&str] = &[
    "syntax",
    "locate",
    "locate/handlers",
    "locate/sends",
    "locate/connection",
    "pieces",
    "placement",
    "runtime",
    "toolchain",
];

#[test]
fn every_language_folder_has_the_same_layout() {
    let lang = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lang");
    let mut missing = Vec::new();
    for language in LANGUAGES {
        for step in LANGUAGE_LAYOUT {
            let base = lang.join(language).join(step);
            if !base.with_extension("rs").is_file() && !base.join("mod.rs").is_file() {
                missing.push(format!("src/lang/{language}/{step}(.rs|/mod.rs)"));
            }
        }
    }
    assert!(missing.is_empty(), "missing: {missing:#?}");
}

#[test]
fn the_reader_sees_paths_and_not_comments() {
    let text = "use crate::lang::parts; // crate::smoke here is a comment\nlet x = \"//\"; crate::write::lock_tree(p);\n#[cfg(test)]\nmod tests { use crate::commands; }\n";
    let paths = crate_paths(&code(text));
    assert_eq!(
        paths,
        vec![
            vec!["lang".to_string(), "parts".to_string()],
            vec!["write".to_string(), "lock_tree".to_string()],
        ]
    );
    let grouped = "use super::{a::X, b::{Y, Z as W}};\nlet v = self::c::f();\n";
    assert_eq!(
        rooted_paths(grouped),
        vec!["super::a::X", "super::b::Y", "super::b::Z", "self::c::f"]
    );
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(cycle(&g), Some(vec!["a".into(), "b".into(), "a".into()]));
}
