//! The one import of the runtime module per touched file, spelled as the file spells its own.

use super::*;

/// The relative specifier from `from` (a file's path relative to the root) to the module.
pub(super) fn relative_spec(from: &str, to: &str) -> String {
    let from_dir: Vec<&str> =
        from.split('/').collect::<Vec<_>>()[..from.split('/').count() - 1].to_vec();
    let to_parts: Vec<&str> = to.split('/').collect();
    let common = from_dir
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count()
        .min(to_parts.len() - 1);
    let ups = from_dir.len() - common;
    let rest = to_parts[common..].join("/");
    if ups == 0 {
        format!("./{rest}")
    } else {
        format!("{}{rest}", "../".repeat(ups))
    }
}

/// The relative module specifiers a file imports (`./x.js`, `../y`).
pub(super) fn relative_specifiers(p: &Parsed) -> Vec<String> {
    let src = p.file.text.as_ref();
    let mut out = Vec::new();
    for n in named_children(p.tree().root_node()) {
        if let Some((_, spec)) = require_of(n, src)
            && (spec.starts_with("./") || spec.starts_with("../"))
        {
            out.push(spec);
            continue;
        }
        if !matches!(n.kind(), "import_statement" | "export_statement") {
            continue;
        }
        let spec = n.child_by_field_name("source").or_else(|| {
            descendants(n, "import_require_clause")
                .first()
                .and_then(|r| r.child_by_field_name("source"))
        });
        if let Some(s) = spec.and_then(|s| string_value(s, src))
            && (s.starts_with("./") || s.starts_with("../"))
        {
            out.push(s.to_string());
        }
    }
    out
}

/// How a file spells the module's specifier: `.js` suffixes (NodeNext), `.ts` ones, or none —
/// as its own relative imports do (else the tree's, else `.js`, which every resolver takes).
pub(super) fn import_spec(files: &[Parsed], file: usize, module: &Module) -> String {
    let base = relative_spec(&files[file].file.rel, &files[module.file].file.rel);
    let base = base
        .strip_suffix(&format!(".{}", module.ext))
        .unwrap_or(&base)
        .to_string();
    let style_of = |specs: &[String]| -> Option<&'static str> {
        if specs.is_empty() {
            return None;
        }
        let ends = |exts: &[&str]| specs.iter().any(|s| exts.iter().any(|e| s.ends_with(e)));
        Some(if ends(&[".js", ".mjs", ".cjs", ".jsx"]) {
            "js"
        } else if ends(&[".ts", ".mts", ".cts", ".tsx"]) {
            "ts"
        } else {
            "none"
        })
    };
    let own = style_of(&relative_specifiers(&files[file]));
    let tree = || {
        let all: Vec<String> = files.iter().flat_map(relative_specifiers).collect();
        style_of(&all)
    };
    match (own.or_else(tree).unwrap_or("js"), module.ext.as_str()) {
        // `.mjs` / `.cjs` are found by no resolution under another name: Node's ESM resolver
        // wants the file's own, and `require` tries only `.js`, `.json` and `.node`
        (_, ext @ ("mjs" | "cjs")) => format!("{base}.{ext}"),
        ("js", ext) => {
            let js = match ext {
                "mts" => "mjs",
                "cts" => "cjs",
                _ => "js",
            };
            format!("{base}.{js}")
        }
        ("ts", ext) => format!("{base}.{ext}"),
        _ => base,
    }
}

/// `import * as acpProgress from "..."` (or `import acpProgress = require("...")`): the
/// statement, and the specifier it names.
pub(super) fn present_import<'t>(p: &'t Parsed) -> Option<(Node<'t>, String)> {
    let src = p.file.text.as_ref();
    if let Some(found) = named_children(p.tree().root_node())
        .into_iter()
        .find_map(|n| {
            require_of(n, src)
                .filter(|(name, _)| name == NS)
                .map(|(_, spec)| (n, spec))
        })
    {
        return Some(found);
    }
    named_children(p.tree().root_node())
        .into_iter()
        .filter(|n| n.kind() == "import_statement")
        .find_map(|n| {
            let ns = descendants(n, "namespace_import").into_iter().any(|i| {
                descendants(i, "identifier")
                    .iter()
                    .any(|id| text(*id, src) == NS)
            });
            let req = descendants(n, "import_require_clause")
                .into_iter()
                .find(|r| r.named_child(0).is_some_and(|id| text(id, src) == NS));
            let source = if ns {
                n.child_by_field_name("source")
            } else {
                req.and_then(|r| r.child_by_field_name("source"))
            }?;
            Some((n, string_value(source, src)?.to_string()))
        })
}

/// `const name = require("spec")` at the top of a CommonJS file: (name, spec).
pub(super) fn require_of(n: Node, src: &str) -> Option<(String, String)> {
    if !matches!(n.kind(), "lexical_declaration" | "variable_declaration") {
        return None;
    }
    let d = named_children(n)
        .into_iter()
        .find(|d| d.kind() == "variable_declarator")?;
    let value = d.child_by_field_name("value")?;
    if value.kind() != "call_expression" || callee(value, src) != ("", "require") {
        return None;
    }
    let spec = arguments(value)
        .first()
        .and_then(|a| string_value(*a, src))?;
    Some((
        text(d.child_by_field_name("name")?, src).to_string(),
        spec.to_string(),
    ))
}

pub(super) fn import_part(b: &mut Builder, file: usize, module: &Module) -> Result<()> {
    let p = &b.files[file];
    let src = p.file.text.as_ref();
    let spec = import_spec(b.files, file, module);
    let present = present_import(p);
    if present.is_none()
        && let Some((_, n)) = module_names(p.tree().root_node(), src)
            .into_iter()
            .find(|(name, _)| name == NS)
    {
        return Err(b.refuse(
            file,
            n,
            format!("the file already has a module-level `{NS}`; the runtime module is imported under that name, so rename yours"),
        ));
    }
    let top: Vec<Node> = named_children(p.tree().root_node())
        .into_iter()
        .filter(|n| Some(*n) != present.as_ref().map(|(stmt, _)| *stmt))
        .collect();
    let commonjs = b.commonjs[file];
    let imports: Vec<Node> = top
        .iter()
        .copied()
        .filter(|n| n.kind() == "import_statement" || (commonjs && require_of(*n, src).is_some()))
        .collect();
    let require_style = !imports.is_empty()
        && imports
            .iter()
            .all(|n| !descendants(*n, "import_require_clause").is_empty());
    let code = if commonjs {
        format!("const {NS} = require(\"{spec}\");")
    } else if require_style {
        format!("import {NS} = require(\"{spec}\");")
    } else {
        format!("import * as {NS} from \"{spec}\";")
    };
    // the agent's code may follow it on its line (below): then it ends with `;` in any style
    let inline = restyle_inline(&code, b.style(file));
    let code = restyle(&code, b.style(file));
    let eol = p.file.style().eol;
    // the first top-level node that is code: not a comment, `#!` line or directive
    // (`"use strict"`); with no import, the import goes before it, a blank line between
    let first_code = top.iter().copied().find(|n| {
        !(n.kind() == "comment"
            || n.kind() == "hash_bang_line"
            || (n.kind() == "expression_statement"
                && n.named_child(0).is_some_and(|s| s.kind() == "string")))
    });
    if let Some((stmt, found)) = present {
        // as apply inserted it: after the other imports (one line), before the first
        // statement of code (a blank line after it), or at the end of a file without code
        let before_code = first_code.is_some_and(|n| n.start_byte() > stmt.start_byte());
        let rest = src[stmt.end_byte()..line_end_after(src, stmt.end_byte())].trim();
        let (at, text) = if !rest.is_empty()
            && !rest.starts_with("//")
            && src[..stmt.start_byte()].ends_with(eol)
        {
            // inserted where the last import ends, code of the agent after it on its line (code
            // that ran past that line's end: never a `//` comment)
            (stmt.start_byte() - eol.len(), format!("{eol}{inline}"))
        } else if before_code && imports.is_empty() {
            (
                line_start(src, stmt.start_byte()),
                format!("{code}{eol}{eol}"),
            )
        } else {
            (line_start(src, stmt.start_byte()), format!("{code}{eol}"))
        };
        b.push(
            CHECK_IMPORT,
            "import of the runtime module",
            file,
            at,
            text,
            Some(line(stmt)),
        );
        let (status, detail) = if found != spec {
            (
                Status::Malformed,
                format!(
                    "`{NS}` is imported from \"{found}\", not from the runtime module (\"{spec}\")"
                ),
            )
        } else {
            (Status::Ok, format!("`{NS}`: imported"))
        };
        b.finding("bound", status, file, line(stmt), detail);
        return Ok(());
    }
    let (offset, text) = match imports.last() {
        Some(last) => {
            let at = line_end_after(src, last.end_byte());
            // code after the import on its line that runs past the line's end (a multi-line
            // template literal or comment, an object): the line's end is inside it, so the
            // import goes right after the last one, starting a line, the agent's code after it
            let spanned = top.iter().any(|n| {
                n.start_byte() >= last.end_byte() && n.start_byte() < at && n.end_byte() >= at
            });
            if spanned {
                (last.end_byte(), format!("{eol}{inline}"))
            } else {
                let text =
                    crate::lang::pieces::at_end_of_file(src, at, format!("{code}{eol}"), eol);
                (at, text)
            }
        }
        None => match first_code {
            Some(n) => (line_start(src, n.start_byte()), format!("{code}{eol}{eol}")),
            None => (src.len(), format!("{code}{eol}")),
        },
    };
    b.push(
        CHECK_IMPORT,
        "import of the runtime module",
        file,
        offset,
        text,
        None,
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::relative_spec;

    #[test]
    fn relative_specifiers_between_folders() {
        assert_eq!(
            relative_spec("src/agent.ts", "src/acp-progress.ts"),
            "./acp-progress.ts"
        );
        assert_eq!(
            relative_spec("src/a/b.ts", "src/acp-progress.ts"),
            "../acp-progress.ts"
        );
        assert_eq!(
            relative_spec("main.ts", "src/acp-progress.ts"),
            "./src/acp-progress.ts"
        );
        assert_eq!(relative_spec("src/x/y/z.ts", "src/x/m.ts"), "../m.ts");
    }
}
