//! Where a prompt's turn ends in a Rust agent: each respond call to the prompt request, and the
//! binding its `turn_end` reads (the handler's own `begin`, or a `turn_of` lookup by session
//! in the scope that responds).

use super::sends::RespondSite;
use crate::lang::rust::syntax::ScopeKind;
use std::ops::Range;

/// A respond call that ends a prompt's turn, and the binding its `turn_end` reads.
#[derive(Debug, Clone)]
pub struct TurnEnd {
    /// The respond call; its anchor holds the file.
    pub respond: RespondSite,
    /// The handler whose `begin` binds `acp_turn` here (lexical), or `None` (a `turn_of` does).
    pub handler: Option<usize>,
    /// For a `turn_of`: the scope's body to start with it and the session expression.
    pub lookup: Option<Lookup>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    pub file: usize,
    /// The scope's span (to dedupe).
    pub scope: Range<usize>,
    pub kind: ScopeKind,
    pub key: String,
}
