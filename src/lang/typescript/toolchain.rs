//! The TypeScript toolchain checks. The start-up check, before anything is written: every
//! patched or created JavaScript file compiled by node (as `node --check`, all files in one
//! node process: `node_check.js`), and every import specifier the patch adds resolved from
//! the importing file as the tree will be (ES modules exactly, CommonJS with its suffixes and
//! folder indexes, TypeScript sources with the `.js` → `.ts` mapping tsc applies, packages in
//! a `node_modules` above the file). `--check-build` adds `tsc --noEmit`.

use super::syntax::{self, arguments, callee, descendants, string_value};
use crate::error::{Error, Result, StartFailure};
use crate::project::Project;
use crate::toolchain::{Failure, Patched, Startup, Unpatched, find_on_path};
use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};

const NODE_CHECK: &str = include_str!("node_check.js");
use super::JS;

pub fn startup(project: &Project, files: &[Patched], unpatched: Unpatched) -> Result<Startup> {
    let mut out = Startup {
        applies: true,
        ..Startup::default()
    };
    if files.is_empty() {
        return Ok(out);
    }
    let before = unpatched();
    let created: HashSet<&str> = files
        .iter()
        .filter(|f| match &before {
            Some(b) => matches!(b.get(&f.rel), Some(None)),
            None => f.before.is_none(),
        })
        .map(|f| f.rel.as_str())
        .collect();
    let unpatched_text = |f: &Patched| -> Option<String> {
        match &before {
            Some(b) => b.get(&f.rel).cloned().unwrap_or(Some(f.after.clone())),
            None => None,
        }
    };
    // the imports the patch adds (every import, when the unpatched text is unknown)
    for f in files {
        let own: Vec<String> = unpatched_text(f)
            .map(|t| specifiers(&f.rel, &t))
            .unwrap_or_default();
        for spec in specifiers(&f.rel, &f.after) {
            if own.contains(&spec) {
                continue;
            }
            if let Err(why) = resolves(project, &created, &f.rel, &f.after, &spec) {
                let line = line_of(&f.after, &spec);
                if before.is_none() {
                    out.notes.push(format!(
                        "{}:{line}: `{spec}` does not resolve here ({why}); whether the patch added it cannot be told (revert refuses this tree)",
                        f.rel
                    ));
                    continue;
                }
                return Err(Error::WouldNotStart {
                    file: f.rel.clone(),
                    line,
                    failure: Box::new(StartFailure {
                        what: format!("the import of `{spec}`"),
                        by: "Node's module resolution".into(),
                        message: why,
                        unpatched: "has no such import".into(),
                    }),
                });
            }
        }
    }
    let js: Vec<&Patched> = files.iter().filter(|f| is_js(&f.rel)).collect();
    let mut proven: Vec<String> = files.iter().map(|f| f.rel.clone()).collect();
    if !js.is_empty() {
        let Some(node) = find_on_path("node") else {
            out.notes.push(
                "node is not on PATH: the patched JavaScript files were checked with tree-sitter only (their imports were resolved)".into(),
            );
            out.proven = proven;
            return Ok(out);
        };
        let items: Vec<(String, String, bool)> = js
            .iter()
            .map(|f| (f.rel.clone(), f.after.clone(), is_esm(project, &f.rel)))
            .collect();
        let (version, results) = match run_node(&node, &items) {
            Ok(r) => r,
            Err(why) => {
                out.notes.push(format!(
                    "{} could not check the patched JavaScript files ({why}): they were checked with tree-sitter only",
                    node.display()
                ));
                out.proven = proven;
                return Ok(out);
            }
        };
        let by = format!("Node {version} ({})", node.display());
        for (f, r) in js.iter().zip(results) {
            let Some(after) = r else { continue };
            let fails_before = match unpatched_text(f) {
                Some(text) => {
                    let item = (f.rel.clone(), text, is_esm(project, &f.rel));
                    run_node(&node, &[item])
                        .ok()
                        .and_then(|(_, r)| r.into_iter().next().flatten())
                }
                None => None,
            };
            match fails_before {
                Some(b) => {
                    out.notes.push(format!(
                        "{}:{}: {by} cannot compile it unpatched either ({}); its patch was checked with tree-sitter only",
                        f.rel, b.line, b.message
                    ));
                    proven.retain(|p| p != &f.rel);
                    out.not_started.push(format!(
                        "{}: not started here (it does not compile unpatched either, see the notes)",
                        f.rel
                    ));
                }
                None => {
                    return Err(Error::WouldNotCompile {
                        file: f.rel.clone(),
                        line: after.line,
                        compiler: by,
                        message: after.message,
                    });
                }
            }
        }
    }
    out.proven = proven;
    Ok(out)
}

fn is_js(rel: &str) -> bool {
    ext(rel).is_some_and(|e| JS.contains(&e))
}

fn ext(rel: &str) -> Option<&str> {
    let name = rel.rsplit('/').next()?;
    name.rsplit_once('.').map(|(_, e)| e)
}

/// Whether a JavaScript file is an ES module: `.mjs`, or `.js` under a package.json with
/// `"type": "module"` (the nearest one decides).
fn is_esm(project: &Project, rel: &str) -> bool {
    match ext(rel) {
        Some("mjs") => return true,
        Some("cjs") => return false,
        _ => {}
    }
    let file = project.root.join(rel);
    for dir in file.ancestors().skip(1) {
        if let Ok(text) = std::fs::read_to_string(dir.join("package.json")) {
            return serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
                .is_some_and(|t| t == "module");
        }
    }
    false
}

/// Every module specifier a file loads: `import ... from`, `export ... from`, `import x =
/// require()`, `require()` and `import()` with a string.
pub(super) fn specifiers(rel: &str, text: &str) -> Vec<String> {
    let tree = syntax::parse(text, rel.ends_with(".tsx") || is_js(rel));
    let root = tree.root_node();
    let mut out = Vec::new();
    for n in descendants(root, "import_statement")
        .into_iter()
        .chain(descendants(root, "export_statement"))
    {
        let source = n.child_by_field_name("source").or_else(|| {
            descendants(n, "import_require_clause")
                .first()
                .and_then(|r| r.child_by_field_name("source"))
        });
        if let Some(s) = source.and_then(|s| string_value(s, text)) {
            out.push(s.to_string());
        }
    }
    for c in descendants(root, "call_expression") {
        if callee(c, text) == ("", "require")
            && let Some(s) = arguments(c).first().and_then(|a| string_value(*a, text))
        {
            out.push(s.to_string());
        }
    }
    // `import("x")`: the parser never sees it (`syntax::mask_grammar_gaps` blanks it out)
    let masked = syntax::mask_grammar_gaps(text);
    let (a, b) = (text.as_bytes(), masked.as_bytes());
    let mut i = 0;
    while let Some(at) = text[i..].find("import(").map(|k| k + i) {
        i = at + 7;
        if b[at] == b'_' && a[at] == b'i' {
            let rest = text[i..].trim_start();
            if let Some(q) = rest.chars().next()
                && let Some(end) = rest[1..].find(q)
            {
                out.push(rest[1..=end].to_string());
            }
        }
    }
    out
}

/// The 1-based line of the first occurrence of a specifier in quotes.
fn line_of(text: &str, spec: &str) -> usize {
    ["\"", "'", "`"]
        .iter()
        .find_map(|q| text.find(&format!("{q}{spec}{q}")))
        .map(|i| text[..i].matches('\n').count() + 1)
        .unwrap_or(1)
}

/// Whether `spec` resolves from the file at `rel` in the tree as the patch leaves it.
fn resolves(
    project: &Project,
    created: &HashSet<&str>,
    rel: &str,
    text: &str,
    spec: &str,
) -> std::result::Result<(), String> {
    let exists = |p: &str| created.contains(p) || project.root.join(p).is_file();
    if !(spec.starts_with("./") || spec.starts_with("../") || spec.starts_with('/')) {
        return package(project, rel, spec);
    }
    let dir = rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
    let Some(target) = join(dir, spec) else {
        return Err(format!("`{spec}` leaves the agent's folder"));
    };
    let candidates: Vec<String> = if !is_js(rel) {
        // tsc maps the emitted name back to the source: ./x.js is ./x.ts
        let stem_of = |suffix: &str| target.strip_suffix(suffix).map(str::to_string);
        let mut c = vec![target.clone()];
        for (js, ts) in [
            (".js", &[".ts", ".tsx", ".d.ts"][..]),
            (".mjs", &[".mts", ".d.mts"]),
            (".cjs", &[".cts", ".d.cts"]),
            (".jsx", &[".tsx"]),
        ] {
            if let Some(stem) = stem_of(js) {
                c.extend(ts.iter().map(|t| format!("{stem}{t}")));
            }
        }
        if ext(&target).is_none() {
            for e in [".ts", ".tsx", ".d.ts", ".js", "/index.ts", "/index.js"] {
                c.push(format!("{target}{e}"));
            }
        }
        c
    } else if is_esm(project, rel) && !is_require(text, spec) {
        vec![target.clone()] // ES modules take the path as written
    } else {
        let mut c = vec![target.clone()];
        for e in [".js", ".json", ".node", "/index.js", "/index.json"] {
            c.push(format!("{target}{e}"));
        }
        if let Some(main) = std::fs::read_to_string(project.root.join(&target).join("package.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("main").and_then(|m| m.as_str()).map(str::to_string))
            && let Some(m) = join(&target, &format!("./{main}"))
        {
            c.push(m.clone());
            c.push(format!("{m}.js"));
        }
        c
    };
    if candidates.iter().any(|c| exists(c)) {
        Ok(())
    } else {
        Err(format!("no file {} from {rel}", candidates.join(" or ")))
    }
}

/// Whether the file loads `spec` with `require(...)` (CommonJS resolution in an ES module's
/// `createRequire` too).
fn is_require(text: &str, spec: &str) -> bool {
    ["\"", "'"]
        .iter()
        .any(|q| text.contains(&format!("require({q}{spec}{q})")))
}

/// A bare specifier: a Node built-in, or a package in a `node_modules` above the file.
fn package(project: &Project, rel: &str, spec: &str) -> std::result::Result<(), String> {
    if spec.starts_with("node:") || BUILTINS.contains(&spec.split('/').next().unwrap_or(spec)) {
        return Ok(());
    }
    let mut parts = spec.split('/');
    let name = match parts.next() {
        Some(scope) if scope.starts_with('@') => format!("{scope}/{}", parts.next().unwrap_or("")),
        Some(n) => n.to_string(),
        None => return Err("an empty specifier".into()),
    };
    let file = project.root.join(rel);
    let found = file
        .ancestors()
        .skip(1)
        .any(|d| d.join("node_modules").join(&name).is_dir());
    if found {
        Ok(())
    } else {
        Err(format!(
            "package `{name}` is not installed in a node_modules above {rel}"
        ))
    }
}

const BUILTINS: &[&str] = &[
    "assert",
    "async_hooks",
    "buffer",
    "child_process",
    "cluster",
    "console",
    "crypto",
    "dgram",
    "diagnostics_channel",
    "dns",
    "events",
    "fs",
    "http",
    "http2",
    "https",
    "inspector",
    "module",
    "net",
    "os",
    "path",
    "perf_hooks",
    "process",
    "querystring",
    "readline",
    "stream",
    "string_decoder",
    "timers",
    "tls",
    "tty",
    "url",
    "util",
    "v8",
    "vm",
    "worker_threads",
    "zlib",
];

/// `dir` joined with a relative specifier, `..` resolved; `None` when it climbs out.
pub(super) fn join(dir: &str, spec: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    for seg in spec.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            s => parts.push(s),
        }
    }
    Some(parts.join("/"))
}

/// The node check of `(file, text, esm)` items: node's version and each file's failure.
fn run_node(
    node: &Path,
    items: &[(String, String, bool)],
) -> std::result::Result<(String, Vec<Option<Failure>>), String> {
    use std::io::Write;
    use std::os::unix::process::CommandExt;
    let payload: Vec<serde_json::Value> = items
        .iter()
        .map(|(f, t, esm)| serde_json::json!({"file": f, "text": t, "esm": esm}))
        .collect();
    let mut child = Command::new(node)
        .args([
            "--experimental-vm-modules",
            "--no-warnings",
            "-e",
            NODE_CHECK,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut stdin = child.stdin.take().expect("piped");
    let body = serde_json::to_string(&payload).expect("json");
    let writer = std::thread::spawn(move || stdin.write_all(body.as_bytes()));
    let out = crate::toolchain::wait_group(child, std::time::Duration::from_secs(120))
        .map_err(|e| e.to_string())?
        .ok_or("it did not finish within 120 s")?;
    let _ = writer.join();
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().last().unwrap_or("failed").trim().to_string());
    }
    #[derive(serde::Deserialize)]
    struct Answer {
        version: String,
        results: Vec<Option<Failure>>,
    }
    let a: Answer =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("unreadable answer: {e}"))?;
    Ok((a.version.trim_start_matches('v').to_string(), a.results))
}

/// `tsc --noEmit -p DIR` with the TypeScript the agent installed (`node_modules`), else a
/// `tsc` on PATH.
pub fn tsc_command(dir: &Path) -> std::result::Result<Command, String> {
    if !dir.join("tsconfig.json").is_file() {
        return Err("no tsconfig.json in the agent's folder, so tsc cannot check it; leave out --check-build".into());
    }
    let local = dir.join("node_modules/typescript/bin/tsc");
    let mut cmd = if local.is_file() {
        let node = find_on_path("node")
            .ok_or("node is not on PATH; install Node.js or leave out --check-build")?;
        let mut c = Command::new(node);
        c.arg(local);
        c
    } else if let Some(tsc) = find_on_path("tsc") {
        Command::new(tsc)
    } else {
        return Err("no TypeScript compiler: neither node_modules/typescript nor a tsc on PATH; install typescript (npm install --save-dev typescript) or leave out --check-build".into());
    };
    cmd.args(["--noEmit", "-p"]).arg(dir).current_dir(dir);
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specifiers_of_every_form() {
        let text = "import a from \"./a.js\";\nexport * from './b';\nimport c = require(\"c\");\nconst d = require('./d');\nconst e = await import(\"./e.mjs\");\n";
        assert_eq!(
            specifiers("x.ts", text),
            ["./a.js", "c", "./b", "./d", "./e.mjs"]
        );
    }

    #[test]
    fn joins_relative_specifiers() {
        assert_eq!(
            join("src/x", "../acp-progress.js").as_deref(),
            Some("src/acp-progress.js")
        );
        assert_eq!(join("", "./a").as_deref(), Some("a"));
        assert_eq!(join("", "../a"), None);
    }
}
