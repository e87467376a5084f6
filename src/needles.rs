//! Literal needles searched in every file a run reads: the prefilter that decides which
//! files can hold an anchor, and the markers of inserted code. One automaton per set scans a
//! text once for all its needles, fast even in a debug build (it is built optimised).

use aho_corasick::{AhoCorasick, MatchKind};
use std::sync::OnceLock;

/// A fixed set of literal strings.
pub struct Needles {
    needles: Vec<String>,
    /// For "is any there" and where the first one starts: the vectorised searcher (Teddy)
    /// where the machine has it — the automaton's own heuristic picks a rare-byte scan for
    /// some sets, which `_` (every Python name) makes several times slower.
    first: First,
    /// For every occurrence, overlapping ones included (a standard automaton), built on the
    /// first such search: most sets are only asked whether any is there.
    every: OnceLock<AhoCorasick>,
}

impl Needles {
    pub fn new(needles: &[&str]) -> Needles {
        Needles {
            needles: needles.iter().map(|n| n.to_string()).collect(),
            first: First::new(needles),
            every: OnceLock::new(),
        }
    }

    /// Whether `text` holds any of the needles.
    pub fn any_in(&self, text: &str) -> bool {
        self.first.find(text).is_some()
    }

    /// The leftmost occurrence at or after `from`: where it starts and which needle it is
    /// (its index in the set; of two starting there, the one listed first). One scan finds
    /// the words a caller takes at once and those it must look around first.
    pub fn leftmost_from(&self, text: &str, from: usize) -> Option<(usize, usize)> {
        self.first.find_from(text, from)
    }

    /// Every occurrence of every needle in `text` as (start, end) byte offsets, by start,
    /// overlapping ones included (a needle inside another is found too).
    pub fn all_in(&self, text: &str) -> Vec<(usize, usize)> {
        // the vectorised leftmost search finds where the first occurrence starts (most texts
        // hold none): the slower overlapping one reads only from there
        let Some(first) = self.first.find(text) else {
            return Vec::new();
        };
        let from = aho_corasick::Input::new(text).span(first..text.len());
        let mut at: Vec<(usize, usize)> = self
            .every
            .get_or_init(|| automaton(&self.needles, MatchKind::Standard))
            .find_overlapping_iter(from)
            .map(|m| (m.start(), m.end()))
            .collect();
        at.sort_unstable();
        at
    }
}

enum First {
    Packed(aho_corasick::packed::Searcher),
    Automaton(AhoCorasick),
}

impl First {
    fn new(needles: &[&str]) -> First {
        let packed = aho_corasick::packed::Config::new()
            .match_kind(aho_corasick::packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(needles)
            .build();
        match packed {
            Some(searcher) if !needles.iter().any(|n| n.is_empty()) => First::Packed(searcher),
            _ => First::Automaton(automaton(needles, MatchKind::LeftmostFirst)),
        }
    }

    /// Where the leftmost occurrence of any needle starts.
    fn find(&self, text: &str) -> Option<usize> {
        match self {
            First::Packed(s) => s.find(text).map(|m| m.start()),
            First::Automaton(a) => a.find(text).map(|m| m.start()),
        }
    }

    /// Where the leftmost occurrence at or after `from` starts, and its needle's index.
    fn find_from(&self, text: &str, from: usize) -> Option<(usize, usize)> {
        if from > text.len() {
            return None;
        }
        let m = match self {
            First::Packed(s) => s.find_in(text, aho_corasick::Span::from(from..text.len())),
            First::Automaton(a) => a.find(aho_corasick::Input::new(text).span(from..text.len())),
        }?;
        Some((m.start(), m.pattern().as_usize()))
    }
}

fn automaton<S: AsRef<str>>(needles: &[S], kind: MatchKind) -> AhoCorasick {
    AhoCorasick::builder()
        .match_kind(kind)
        .build(needles.iter().map(|n| n.as_ref()))
        .expect("literal needles build an automaton")
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
    fn the_leftmost_occurrence_from_a_point_names_its_needle() {
        let n = Needles::new(&["acp", "_callback", "zz"]);
        let text = "x_callback = 1; import acp; zz";
        assert_eq!(n.leftmost_from(text, 0), Some((1, 1)));
        assert_eq!(n.leftmost_from(text, 2), Some((23, 0)));
        assert_eq!(n.leftmost_from(text, 24), Some((28, 2)));
        assert_eq!(n.leftmost_from(text, 29), None);
        assert_eq!(n.leftmost_from(text, text.len() + 1), None);
    }

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
    fn any_in_says_what_a_search_for_each_needle_says() {
        let sets: [&[&str]; 4] = [
            &["acp", "_callback", "session/"],
            &["install_acp_text_hold", "_acp_text_hold"],
            &["ab", "abc", "bcd", "d"],
            &["x"],
        ];
        let texts = [
            "",
            "import acp",
            "a_callbac",
            "session",
            "session/prompt",
            "xinstall_acp_text_holdx",
            "_acp_text_hol",
            "abd",
            "zzbcdzz",
            "ac",
            "abcd abc _callback_callback",
            "no needle at all",
        ];
        for set in sets {
            let n = Needles::new(set);
            for text in texts {
                let want = set.iter().any(|needle| text.contains(needle));
                assert_eq!(n.any_in(text), want, "{set:?} in {text:?}");
                // every occurrence, overlapping ones too, as a search at each byte finds them
                let mut every: Vec<(usize, usize)> = (0..text.len())
                    .flat_map(|i| {
                        set.iter()
                            .filter(move |needle| text[i..].starts_with(*needle))
                            .map(move |needle| (i, i + needle.len()))
                    })
                    .collect();
                every.sort_unstable();
                assert_eq!(n.all_in(text), every, "{set:?} in {text:?}");
            }
        }
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
