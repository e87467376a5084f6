//! Agent-specific refinements beyond the four protocol anchors: the engine strategy
//! (pi-acp-shaped agents, hooks at the hand-off to the engine and at the turn's settling).

pub(super) mod engine;
