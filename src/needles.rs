//! Literal needles searched in every file a run reads: the prefilter that decides which
//! files can hold an anchor, and the markers of inserted code. One automaton per set scans a
//! text once for all its needles, fast even in a debug build (it is built optimised).

use aho_corasick::{AhoCorasick, MatchKind};

/// A fixed set of literal strings.
pub struct Needles {
    automaton: AhoCorasick,
}

impl Needles {
    pub fn new(needles: &[&str]) -> Needles {
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .build(needles)
            .expect("literal needles build an automaton");
        Needles { automaton }
    }

    /// Whether `text` holds any of the needles.
    pub fn any_in(&self, text: &str) -> bool {
        self.automaton.is_match(text)
    }

    /// Every occurrence of every needle in `text` as (start, end) byte offsets, by start,
    /// overlapping ones included (a needle inside another is found too).
    pub fn all_in(&self, text: &str) -> Vec<(usize, usize)> {
        let mut at: Vec<(usize, usize)> = self
            .automaton
            .find_overlapping_iter(text)
            .map(|m| (m.start(), m.end()))
            .collect();
        at.sort_unstable();
        at
    }
}

/// Whether `text` holds `needle` (a single literal, searched with an optimised searcher).
pub fn contains(text: &str, needle: &str) -> bool {
    memchr::memmem::find(text.as_bytes(), needle.as_bytes()).is_some()
}

/// Where a non-empty `needle` starts in `text`, every occurrence left to right
/// (non-overlapping, like `str::match_indices`).
pub fn positions<'a>(text: &'a str, needle: &'a str) -> impl Iterator<Item = usize> + 'a {
    debug_assert!(!needle.is_empty());
    memchr::memmem::find_iter(text.as_bytes(), needle.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_needle_including_those_inside_others() {
        let n = Needles::new(&["_acp_text_hold", "install_acp_text_hold", "zz"]);
        assert!(n.any_in("a = install_acp_text_hold()"));
        assert!(!n.any_in("nothing here"));
        assert_eq!(
            n.all_in("install_acp_text_hold"),
            vec![(0, 21), (7, 21)],
            "the inner needle is found inside the outer one"
        );
    }

    #[test]
    fn positions_are_those_of_match_indices() {
        for (text, needle) in [
            ("aaaa", "aa"),
            ("class A: class", "class"),
            ("", "x"),
            ("xyx", "x"),
        ] {
            let want: Vec<usize> = text.match_indices(needle).map(|(i, _)| i).collect();
            assert_eq!(
                positions(text, needle).collect::<Vec<_>>(),
                want,
                "{text:?} {needle:?}"
            );
        }
    }

    #[test]
    fn contains_is_a_substring_test() {
        assert!(contains("from acp import x", "acp import"));
        assert!(!contains("from ac p", "acp"));
        assert!(contains("anything", ""));
    }
}
