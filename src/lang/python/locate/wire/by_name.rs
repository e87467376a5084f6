//! A dispatcher that picks the handler by the method's name instead of naming the method:
//! `getattr(self, f"rpc_{name}")` and a method `rpc_session_prompt` (see [`by_name`]).

use super::super::At;
use crate::lang::parts::Parsed;
use crate::lang::python::locate::found::is_agent_file;
use crate::lang::python::syntax::*;
use tree_sitter::Node;

/// The handlers of a dispatcher that picks one by the method's name: a class calls
/// `getattr(self, f"rpc_{name}")` (or `"m_" + name`, or a name it built) and it, or a class of
/// the tree deriving from it, defines the method named that prefix and the method's words
/// (`rpc_session_prompt`, `m_session__prompt`, `on_sessionPrompt`): andromity 0.2.24's
/// dispatcher, python-lsp-jsonrpc's convention. No string names the method there.
pub(super) fn by_name<'a>(files: &'a [Parsed], method: &str) -> Vec<At<'a>> {
    let words = |s: &str| -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase()
    };
    let wanted = words(method);
    // a method named for it is spelled `session_prompt`, `session__prompt` or `sessionPrompt`
    let (scope, name) = method.split_once('/').unwrap_or(("", method));
    if name.is_empty() {
        return Vec::new();
    }
    let spellings = [
        format!("{scope}_{name}"),
        format!("{scope}__{name}"),
        format!("{scope}{}{}", name[..1].to_ascii_uppercase(), &name[1..]),
    ];
    if !files
        .iter()
        .any(|p| spellings.iter().any(|s| p.file.text.contains(s.as_str())))
    {
        return Vec::new();
    }
    let mut out = Vec::new();
    for p in files {
        let src = p.file.text.as_ref();
        if !is_agent_file(p) || !src.contains("getattr(") {
            continue;
        }
        for call in descendants(p.tree().root_node(), "call") {
            let args = positional_args(call);
            let is_getattr = call
                .child_by_field_name("function")
                .is_some_and(|f| f.kind() == "identifier" && text(f, src) == "getattr");
            let (Some(on), Some(name)) = (args.first(), args.get(1)) else {
                continue;
            };
            if !is_getattr || text(*on, src) != "self" {
                continue;
            }
            let Some(prefix) = literal_prefix(*name, src) else {
                continue;
            };
            let Some(class) = enclosing_class(call) else {
                continue;
            };
            let class_name = name_of(class, src);
            let classes = files.iter().enumerate().flat_map(|(k, q)| {
                let qsrc = q.file.text.as_ref();
                let derived = |c: &Node| {
                    *c == class
                        || (qsrc.contains(class_name)
                            && superclasses(*c).iter().any(|b| {
                                let b = text(*b, qsrc);
                                b == class_name || b.ends_with(&format!(".{class_name}"))
                            }))
                };
                descendants(q.tree().root_node(), "class_definition")
                    .into_iter()
                    .filter(derived)
                    .map(move |c| (k, c))
            });
            for (k, c) in classes {
                let ksrc = files[k].file.text.as_ref();
                for m in methods(c) {
                    if name_of(m, ksrc)
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| !rest.is_empty() && words(rest) == wanted)
                    {
                        out.push(At { file: k, node: m });
                    }
                }
            }
        }
    }
    out
}

/// The literal start of a name built at run time: an f-string's text before its first
/// `{...}`, the string a `+` starts with; `""` for a name held in a variable.
fn literal_prefix(name: Node, src: &str) -> Option<String> {
    match name.kind() {
        "identifier" | "call" | "subscript" | "attribute" => Some(String::new()),
        "string" => {
            descendants(name, "interpolation").first()?;
            let mut prefix = String::new();
            for c in named_children(name) {
                match c.kind() {
                    "string_content" => prefix.push_str(text(c, src)),
                    "interpolation" => break,
                    _ => {}
                }
            }
            Some(prefix)
        }
        "binary_operator" => {
            let left = name.child_by_field_name("left")?;
            match left.kind() {
                "string" => super::methods::string_value(left, src).map(str::to_string),
                "binary_operator" => literal_prefix(left, src),
                _ => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::resolve::tree;
    use super::by_name;
    use crate::lang::python::syntax::name_of;

    fn found(files: &[(&str, &str)], method: &str) -> Vec<String> {
        let files = tree(files);
        by_name(&files, method)
            .into_iter()
            .map(|at| {
                let p = &files[at.file];
                format!("{}:{}", p.file.rel, name_of(at.node, &p.file.text))
            })
            .collect()
    }

    #[test]
    fn the_handler_is_the_method_named_the_prefix_and_the_methods_words() {
        // an f-string, in the class itself
        let fstring = "class H:\n    def handle(self, msg):\n        name = msg[\"method\"].replace(\"/\", \"_\")\n        return getattr(self, f\"rpc_{name}\")(msg)\n\n    def rpc_session_prompt(self, p):\n        pass\n\n    def rpc_session_cancel(self, p):\n        pass\n\n    def session_prompt(self, p):\n        pass\n";
        assert_eq!(
            found(&[("a.py", fstring)], "session/prompt"),
            ["a.py:rpc_session_prompt"]
        );
        assert_eq!(
            found(&[("a.py", fstring)], "session/cancel"),
            ["a.py:rpc_session_cancel"]
        );
        // a `+`, the handlers in a class of another module deriving from the dispatcher's
        let base = "class Base:\n    def handle(self, msg):\n        return getattr(self, \"m_\" + msg[\"method\"].replace(\"/\", \"__\"))(msg)\n";
        let agent = "from base import Base\n\nclass Agent(Base):\n    def m_session__prompt(self, p):\n        pass\n";
        assert_eq!(
            found(&[("base.py", base), ("agent.py", agent)], "session/prompt"),
            ["agent.py:m_session__prompt"]
        );
        // a plain string names an attribute, not a method by name: nothing
        let plain = "class H:\n    def handle(self, msg):\n        return getattr(self, \"session_prompt\", None)\n\n    def session_prompt(self, p):\n        pass\n";
        assert!(found(&[("a.py", plain)], "session/prompt").is_empty());
    }
}
