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
use std::collections::HashMap;
use std::sync::LazyLock;

/// Words a file must hold to be parsed, unless it wires callbacks (see [`worth`]).
static WORTH: LazyLock<Needles> = LazyLock::new(|| {
    Needles::new(&[
        "acp",
        "on_first_delta",
        "session_update",
        "sessionUpdate",
        "session/", // a JSON-RPC loop of the agent's own
    ])
});

/// Whether a file is parsed (and its text kept): it holds one of the [`WORTH`] words, or a
/// callback (`x_callback`) in a shape the engine refinement reads — assigned or annotated
/// (the wiring, a store), a parameter or a keyword argument (a passer: a name the line ends
/// with too, in a signature of one parameter per line), defined (a factory).
/// A module that only calls or tests a callback holds none: a monorepo has many of them.
pub(super) fn worth(text: &str) -> bool {
    const CALLBACK: &str = "_callback";
    WORTH.any_in(text)
        || crate::needles::positions(text, CALLBACK).any(|at| {
            let after = text[at + CALLBACK.len()..].trim_start_matches([' ', '\t']);
            let line = &text[text[..at].rfind('\n').map_or(0, |i| i + 1)..at];
            after.starts_with(['=', ':', ',', ')', '\n', '\r']) && !after.starts_with("==")
                || after.starts_with('(')
                    && line
                        .trim_start()
                        .trim_start_matches("async ")
                        .starts_with("def ")
        })
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

#[cfg(test)]
mod tests {
    use super::*;

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
