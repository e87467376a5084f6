//! The runtime module for a JavaScript agent: the TypeScript template with its types taken out
//! (annotations, aliases, `as` / `satisfies`, type arguments and parameters, `this` and
//! optional-parameter markers), as ES module or CommonJS. Only what the template uses is
//! handled; the result is checked to parse.

use crate::lang::typescript::syntax::{self, named_children, text, walk};
use tree_sitter::Node;

/// The namespace the agent's files import the runtime module as.
pub const NS: &str = "acpProgress";
/// The first line of the runtime module.
pub const MARKER: &str = "// acp-patch: runtime module";
/// The runtime module's file name, without its extension.
pub const MODULE_STEM: &str = "acp-progress";

pub fn is_runtime_module(text: &str) -> bool {
    text.trim_start_matches('\u{feff}').starts_with(MARKER)
}

/// How a JavaScript file loads modules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Esm,
    CommonJs,
}

/// Byte ranges to delete: a node, and with `lines` the whole lines it holds (with the doc
/// comment directly above it).
fn whole_statement(n: Node, src: &str, out: &mut Vec<(usize, usize)>) {
    let mut start = n.start_byte();
    let mut prev = n.prev_sibling();
    while let Some(c) =
        prev.filter(|c| c.kind() == "comment" && c.end_position().row + 1 == start_row(src, start))
    {
        start = c.start_byte();
        prev = c.prev_sibling();
    }
    let line_start = src[..start].rfind('\n').map(|i| i + 1).unwrap_or(0);
    let end = n.end_byte();
    let line_end = src[end..]
        .find('\n')
        .map(|i| end + i + 1)
        .unwrap_or(src.len());
    // a blank line after it goes too, so no two blank lines are left
    let line_end = if src[line_end..].starts_with('\n') {
        line_end + 1
    } else {
        line_end
    };
    out.push((line_start, line_end));
}

fn start_row(src: &str, byte: usize) -> usize {
    src[..byte].matches('\n').count()
}

/// The template without its types.
pub fn strip_types(ts: &str, flavor: Flavor) -> String {
    let tree = syntax::parse(ts, false);
    let root = tree.root_node();
    let mut cut: Vec<(usize, usize)> = Vec::new();
    for n in named_children(root) {
        let decl = if n.kind() == "export_statement" {
            n.child_by_field_name("declaration").unwrap_or(n)
        } else {
            n
        };
        if matches!(
            decl.kind(),
            "type_alias_declaration" | "interface_declaration"
        ) {
            whole_statement(n, ts, &mut cut);
        }
    }
    let mut exported = Vec::new();
    walk(root, &mut |n| {
        if cut
            .iter()
            .any(|(s, e)| n.start_byte() >= *s && n.end_byte() <= *e)
        {
            return false;
        }
        match n.kind() {
            "type_annotation"
            | "type_predicate_annotation"
            | "asserts_annotation"
            | "type_arguments"
            | "type_parameters" => {
                cut.push((n.start_byte(), n.end_byte()));
                false
            }
            "as_expression" | "satisfies_expression" => {
                if let Some(e) = n.named_child(0) {
                    cut.push((e.end_byte(), n.end_byte()));
                }
                true
            }
            "non_null_expression" => {
                cut.push((n.end_byte() - 1, n.end_byte()));
                true
            }
            "optional_parameter" => {
                let mut c = n.walk();
                if let Some(q) = n.children(&mut c).find(|c| c.kind() == "?") {
                    cut.push((q.start_byte(), q.end_byte()));
                }
                true
            }
            "required_parameter" => {
                // `function (this: unknown, ...)`: the `this` parameter goes, with its comma
                if n.child_by_field_name("pattern")
                    .is_some_and(|p| p.kind() == "this")
                {
                    let end = n
                        .next_sibling()
                        .filter(|s| s.kind() == ",")
                        .and_then(|s| s.next_sibling())
                        .map(|s| s.start_byte())
                        .unwrap_or(n.end_byte());
                    cut.push((n.start_byte(), end));
                    return false;
                }
                true
            }
            "export_statement" if flavor == Flavor::CommonJs => {
                if let Some(d) = n.child_by_field_name("declaration") {
                    cut.push((n.start_byte(), d.start_byte()));
                    if let Some(name) = d.child_by_field_name("name") {
                        exported.push(text(name, ts).to_string());
                    }
                }
                true
            }
            _ => true,
        }
    });
    cut.sort();
    let mut out = String::with_capacity(ts.len());
    let mut at = 0;
    for (s, e) in cut {
        if s < at {
            continue; // inside a range already cut
        }
        out.push_str(&ts[at..s]);
        at = e;
    }
    out.push_str(&ts[at..]);
    if flavor == Flavor::CommonJs {
        out.push_str(&format!(
            "\nmodule.exports = {{ {} }};\n",
            exported.join(", ")
        ));
    }
    out
}

/// Whether a text still holds TypeScript-only syntax the stripper should have taken out.
#[cfg(test)]
fn leftovers(js: &str) -> Vec<String> {
    use crate::lang::typescript::syntax::descendants;
    let tree = syntax::parse(js, true);
    let mut out = Vec::new();
    for kind in [
        "type_annotation",
        "type_alias_declaration",
        "as_expression",
        "type_arguments",
        "type_parameters",
    ] {
        for n in descendants(tree.root_node(), kind) {
            out.push(format!("{kind}: {}", text(n, js)));
        }
    }
    if let Some((at, msg)) = syntax::first_error(&tree) {
        out.push(format!("{msg} at {}", &js[at..(at + 40).min(js.len())]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_loses_every_type() {
        let ts = include_str!("../../../templates/typescript/acp-progress.ts");
        for flavor in [Flavor::Esm, Flavor::CommonJs] {
            let js = strip_types(ts, flavor);
            assert_eq!(leftovers(&js), Vec::<String>::new(), "{flavor:?}");
            assert!(!js.contains(" as const"), "{flavor:?}");
            assert!(!js.contains("type Acp"), "{flavor:?}");
        }
        let cjs = strip_types(ts, Flavor::CommonJs);
        assert!(
            cjs.contains("module.exports = { buildThinkingStart,"),
            "{cjs}"
        );
        assert!(!cjs.contains("export "), "{cjs}");
        let esm = strip_types(ts, Flavor::Esm);
        assert!(
            esm.contains("export function turn(conn, sessionId, body) {"),
            "{esm}"
        );
        assert!(
            esm.contains("const wrapped = function (...args) {"),
            "{esm}"
        );
        assert!(esm.contains("function debug(message, error) {"), "{esm}");
    }
}
