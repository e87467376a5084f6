//! Which files the analysis reads and parses: those the prefilter keeps that import the SDK,
//! then the modules defining the classes they take from elsewhere and those calling their
//! runners, read again from disk where the walk did not keep them.

use super::locate::{binding, classes};
use super::{Python, package, parsed, syntax};
use crate::lang::Language;
use crate::lang::parts::Parsed;
use crate::needles::Needles;
use crate::project::Project;
use crate::source::SourceFile;
use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

/// Words a file must hold to be parsed, unless it wires callbacks (see [`worth`]); the
/// first, [`CALLBACK`], is looked around where it is found (one scan for all of them).
static WORTH: LazyLock<Needles> = LazyLock::new(|| {
    Needles::new(&[
        CALLBACK,
        "acp",
        "on_first_delta",
        "session_update",
        "sessionUpdate",
        "session/", // a JSON-RPC loop of the agent's own
    ])
});

const CALLBACK: &str = "_callback";

/// Whether a file is parsed (and its text kept): it holds one of the [`WORTH`] words, or a
/// callback (`x_callback`) in a shape the engine refinement reads — assigned or annotated
/// (the wiring, a store), a parameter or a keyword argument (a passer: a name the line ends
/// with too, in a signature of one parameter per line), defined (a factory).
/// A module that only calls or tests a callback holds none: a monorepo has many of them.
pub(super) fn worth(text: &str) -> bool {
    let mut from = 0;
    while let Some((at, which)) = WORTH.leftmost_from(text, from) {
        // needle 0 is CALLBACK
        if which != 0 || wires_a_callback(text, at) {
            return true;
        }
        from = at + CALLBACK.len();
    }
    false
}

/// Whether the `_callback` at `at` is assigned, annotated, a parameter, a keyword argument
/// or the name of a function defined.
fn wires_a_callback(text: &str, at: usize) -> bool {
    let after = text[at + CALLBACK.len()..].trim_start_matches([' ', '\t']);
    let line = &text[text[..at].rfind('\n').map_or(0, |i| i + 1)..at];
    after.starts_with(['=', ':', ',', ')', '\n', '\r']) && !after.starts_with("==")
        || after.starts_with('(')
            && line
                .trim_start()
                .trim_start_matches("async ")
                .starts_with("def ")
}

impl Python {
    /// The files worth parsing, and then, from the modules that import the SDK, the modules
    /// defining a class they import or derive from (an agent class of a module that never
    /// names the SDK, its mixins' bases in turn) and the modules calling the agent's own
    /// runner (what it hands the SDK is the agent), until none is added.
    pub(super) fn parse_all(&self, project: &Project) -> Vec<Parsed> {
        let mut all: Vec<SourceFile> = project
            .files_with_extension(self.extensions())
            .cloned()
            .collect();
        let mut chosen: Vec<bool> = all.iter().map(|f| self.worth_parsing(&f.text)).collect();
        let mut woken = false;
        let mut fresh: Vec<usize> = (0..all.len())
            .filter(|&i| chosen[i] && syntax::mentions_sdk(&all[i].text))
            .collect();
        let mut from_sdk = true;
        let above = package::packages_around(&project.root);
        let mut searched = HashMap::<String, Vec<classes::Source>>::new();
        while !fresh.is_empty() {
            syntax::prefetch(&fresh.iter().map(|&i| &all[i].text).collect::<Vec<_>>());
            let (mut names, mut runners) = (HashMap::<String, Vec<_>>::new(), Vec::new());
            for &i in &fresh {
                let (src, rel) = (&all[i].text, &all[i].rel);
                let tree = syntax::parse(src);
                let root = tree.root_node();
                // a module woken for a class it only imports passes the search on
                let passed = classes::reexported(root, src, rel, |n| searched.contains_key(n));
                for (name, source) in classes::needed(root, src, rel, from_sdk)
                    .into_iter()
                    .chain(passed)
                {
                    names.entry(name).or_default().push(source);
                }
                runners.extend(binding::runners_defined(root, src));
            }
            from_sdk = false;
            let admitted = |name: &str, rel: &str| {
                names
                    .get(name)
                    .is_some_and(|from| from.iter().any(|m| m.admits(rel, &above)))
            };
            let wanted = |rel: &str, text: &str| {
                syntax::class_names(text).any(|class| admitted(class, rel))
                    || names
                        .keys()
                        .any(|n| admitted(n, rel) && classes::may_import(text, n))
                    || runners.iter().any(|r| syntax::calls(text, r))
            };
            fresh = (0..all.len())
                .filter(|&i| !chosen[i] && wanted(&all[i].rel, &all[i].text))
                .collect();
            // a module that names nothing any prefilter looks for was not kept: read again
            // where `wanted` can hold (its path admitted for a name, or a runner's name in it)
            if !names.is_empty() || !runners.is_empty() {
                let admits_any = |rel: &str| names.keys().any(|n| admitted(n, rel));
                let by_path = |rel: &str| !runners.is_empty() || admits_any(rel);
                let by_bytes = |rel: &str, bytes: &[u8]| {
                    let holds = |name: &str| memchr::memmem::find(bytes, name.as_bytes()).is_some();
                    runners.iter().any(|r| holds(r))
                        || names.keys().any(|n| holds(n) && admitted(n, rel))
                };
                for f in project.dormant_sources_where(self.extensions(), by_path, by_bytes) {
                    if wanted(&f.rel, &f.text) && !all.iter().any(|a| a.path == f.path) {
                        fresh.push(all.len());
                        all.push(f);
                        chosen.push(false);
                        woken = true;
                    }
                }
            }
            for &i in &fresh {
                chosen[i] = true;
            }
            searched = names;
        }
        woken |= wake_method_imports(project, self.extensions(), &mut all, &mut chosen);
        let mut out: Vec<Parsed> = (0..all.len())
            .filter(|&i| chosen[i])
            .map(|i| parsed(all[i].clone()))
            .collect();
        if woken {
            out.sort_by(|a, b| a.file.path.cmp(&b.file.path)); // the walk's order
        }
        out
    }
}

/// How many `from x import y` hops a method constant is followed through (re-exports).
const IMPORT_HOPS: usize = 4;

/// The names a text assigns a protocol method to (`METHOD_SESSION_PROMPT = "session/prompt"`,
/// at module or class level): the lines holding a quoted `session/`, each read once.
fn method_constants(text: &str) -> impl Iterator<Item = &str> {
    let mut last_line = usize::MAX;
    crate::needles::positions(text, "session/").filter_map(move |at| {
        let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        if std::mem::replace(&mut last_line, start) == start {
            return None;
        }
        let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        let (name, value) = text[start..end].trim_start().split_once('=')?;
        let name = name.trim_end();
        let value = value.trim_start();
        (!name.is_empty()
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
            && (value.starts_with("\"session/") || value.starts_with("'session/")))
        .then_some(name)
    })
}

/// An agent with its own JSON-RPC loop names the methods by constants, often imported through
/// a package's `__init__.py` that only re-exports them (`from .constants import ...`): a module
/// none of the prefilter's words is in, so it was not kept and the constant's chain would stop
/// there. Where a kept module defines such a constant, the modules the kept ones import it
/// from are read from disk and parsed, hop by hop (only those whose bytes name it): a tree
/// without such a constant reads nothing more. Whether any file was added.
fn wake_method_imports(
    project: &Project,
    exts: &[&str],
    all: &mut Vec<SourceFile>,
    chosen: &mut Vec<bool>,
) -> bool {
    let mut names: HashSet<String> = (0..all.len())
        .filter(|&i| chosen[i])
        .flat_map(|i| method_constants(&all[i].text).map(str::to_string))
        .collect();
    if names.is_empty() {
        return false;
    }
    let mut woken = false;
    let mut importers: Vec<usize> = (0..all.len()).filter(|&i| chosen[i]).collect();
    for _ in 0..IMPORT_HOPS {
        let mut wanted: Vec<[String; 2]> = Vec::new();
        for &i in &importers {
            let (src, rel) = (&all[i].text, &all[i].rel);
            if !names.iter().any(|n| syntax::mentions_word(src, n)) {
                continue;
            }
            let tree = syntax::parse(src);
            for imp in syntax::descendants(tree.root_node(), "import_from_statement") {
                let Some(module) = imp.child_by_field_name("module_name") else {
                    continue;
                };
                let module = syntax::text(module, src);
                let mut imports_one = false;
                for (orig, local) in syntax::imported_names(imp, src) {
                    if names.contains(orig) {
                        imports_one = true;
                        names.insert(local.to_string());
                    }
                }
                if imports_one {
                    wanted.push(package::module_paths(rel, module));
                }
            }
        }
        if wanted.is_empty() {
            break;
        }
        let by_path = |rel: &str| wanted.iter().any(|w| package::is_module_path(rel, w));
        let by_bytes = |_: &str, bytes: &[u8]| {
            names
                .iter()
                .any(|n| memchr::memmem::find(bytes, n.as_bytes()).is_some())
        };
        let found: Vec<SourceFile> = project
            .dormant_sources_where(exts, by_path, by_bytes)
            .filter(|f| !all.iter().any(|a| a.path == f.path))
            .collect();
        if found.is_empty() {
            break;
        }
        importers.clear();
        for f in found {
            importers.push(all.len());
            all.push(f);
            chosen.push(true);
            woken = true;
        }
    }
    woken
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each line assigning a quoted method is read once, whatever it holds after; a call,
    /// a comparison or a comment naming a method is no constant.
    #[test]
    fn method_constants_are_the_names_assigned_a_quoted_method() {
        let text = "PROMPT = \"session/prompt\"  # session/prompt\r\nclass M:\n    CANCEL='session/cancel'\nif m == \"session/update\": pass\nsend(\"session/update\")\n# X = \"session/x\"\nA = B = \"session/load\"\nLAST = \"session/set_mode\"";
        assert_eq!(
            method_constants(text).collect::<Vec<_>>(),
            ["PROMPT", "CANCEL", "LAST"]
        );
        assert_eq!(method_constants("x = 1\n").count(), 0);
    }

    /// A mixin imported through a module that re-exports it is found where it is defined;
    /// a class of the same name in another package of the tree is never read.
    #[test]
    fn a_class_is_followed_through_re_exports_and_never_into_another_package() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("pkg/__init__.py", "");
        write(
            "pkg/server.py",
            "import acp\nfrom typing import List\nfrom pkg.compat import UpdatesMixin\n\nclass Agent(UpdatesMixin, acp.Agent):\n    pass\n",
        );
        write(
            "pkg/compat.py",
            "from pkg.impl.updates import UpdatesMixin\n",
        );
        write("pkg/impl/__init__.py", "");
        write(
            "pkg/impl/updates.py",
            "class UpdatesMixin(Base):\n    pass\n",
        );
        write("vendor/other/updates.py", "class UpdatesMixin:\n    pass\n");
        write("vendor/other/typing.py", "class Unrelated:\n    pass\n");
        write("vendor/listlib/core.py", "class List:\n    pass\n");
        let project = crate::lang::load(dir.path(), &Default::default()).unwrap();
        let parsed: Vec<String> = Python
            .parse_all(&project)
            .iter()
            .map(|p| p.file.rel.clone())
            .collect();
        assert_eq!(
            parsed,
            ["pkg/compat.py", "pkg/impl/updates.py", "pkg/server.py"]
        );
    }

    /// A method constant imported through a package `__init__.py` that only re-exports it (no
    /// word of the prefilter in it) is followed: the `__init__` is read and parsed, and so is
    /// one more hop of re-exports; a module the agent imports other names from, or that names
    /// no constant, stays unread.
    #[test]
    fn a_module_re_exporting_a_method_constant_is_read_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write("kit/__init__.py", "");
        write(
            "kit/proto/__init__.py",
            "from .names import (\n    PROMPT,\n    UPDATE as UPDATE_METHOD,\n)\nfrom .build import note\n",
        );
        write("kit/proto/names.py", "from .values import PROMPT, UPDATE\n");
        write(
            "kit/proto/values.py",
            "PROMPT = \"session/prompt\"\nUPDATE = 'session/update'\n",
        );
        write("kit/proto/build.py", "def note(m, p):\n    return {}\n");
        write(
            "kit/server_acp.py",
            "\"\"\"The acp server.\"\"\"\nfrom kit.proto import PROMPT, UPDATE_METHOD, note\nfrom kit.util import helper\n",
        );
        write("kit/util.py", "def helper():\n    pass\n");
        let parsed = |dir: &std::path::Path| -> Vec<String> {
            let project = crate::lang::load(dir, &Default::default()).unwrap();
            Python
                .parse_all(&project)
                .iter()
                .map(|p| p.file.rel.clone())
                .collect()
        };
        assert_eq!(
            parsed(dir.path()),
            [
                "kit/proto/__init__.py",
                "kit/proto/names.py",
                "kit/proto/values.py",
                "kit/server_acp.py"
            ]
        );
        // the agent imports no method constant: the package it imports from is not read
        write(
            "kit/server_acp.py",
            "\"\"\"The acp server.\"\"\"\nfrom kit.proto import note\nfrom kit.util import helper\n",
        );
        assert_eq!(
            parsed(dir.path()),
            ["kit/proto/values.py", "kit/server_acp.py"]
        );
    }

    #[test]
    fn a_callback_counts_where_the_engine_reads_it() {
        for wired in [
            "agent.thinking_callback = cb\n",
            "self.thinking_callback: Cb = thinking_callback\n",
            "x.thinking_callback\t= y\n",
            "    init(thinking_callback=thinking_callback)\n",
            "def __init__(self, thinking_callback, other=None):\n",
            "def f(\n    thinking_callback\n):\n",
            "def make_thinking_callback(conn):\n",
            "    async def make_thinking_callback (conn):\n",
            "import acp\n",
        ] {
            assert!(worth(wired), "{wired:?}");
        }
        for called in [
            "self.thinking_callback(text)\n",
            "self.thinking_callback.fire()\n",
            "if x.thinking_callback == y:\n",
            "thinking_callbacks = []\n",
            "x = make_thinking_callback(conn)\n",
            "nothing here\n",
        ] {
            assert!(!worth(called), "{called:?}");
        }
    }
}
