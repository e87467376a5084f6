//! Which files the analysis reads and parses: those the prefilter keeps that import the SDK,
//! then the modules defining the classes they take from elsewhere and those calling their
//! runners, read again from disk where the walk did not keep them.

use super::{Python, binding, classes, package, parsed, syntax};
use crate::lang::Language;
use crate::lang::parts::Parsed;
use crate::project::Project;
use crate::source::SourceFile;
use std::collections::HashMap;

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
        while !fresh.is_empty() {
            syntax::prefetch(&fresh.iter().map(|&i| &all[i].text).collect::<Vec<_>>());
            let (mut names, mut runners) = (HashMap::<String, Vec<_>>::new(), Vec::new());
            for &i in &fresh {
                let tree = syntax::parse(&all[i].text);
                for (name, source) in
                    classes::needed(tree.root_node(), &all[i].text, &all[i].rel, from_sdk)
                {
                    names.entry(name).or_default().push(source);
                }
                runners.extend(binding::runners_defined(tree.root_node(), &all[i].text));
            }
            from_sdk = false;
            let wanted = |rel: &str, text: &str| {
                syntax::class_names(text).any(|class| {
                    names
                        .get(class)
                        .is_some_and(|from| from.iter().any(|m| m.admits(rel, &above)))
                }) || runners.iter().any(|r| syntax::calls(text, r))
            };
            fresh = (0..all.len())
                .filter(|&i| !chosen[i] && wanted(&all[i].rel, &all[i].text))
                .collect();
            // a module that names nothing any prefilter looks for was not kept: read again
            if !names.is_empty() || !runners.is_empty() {
                for f in project.dormant_sources(self.extensions()) {
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
