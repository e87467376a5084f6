//! Agent-specific refinements beyond the four protocol anchors: the engine strategy
//! (Hermes-shaped agents: callbacks wired on an engine whose LLM call has a first-delta
//! closure).

pub(super) mod engine;
