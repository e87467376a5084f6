// acp-patch: runtime module, generated — do not edit; acp-patch apply updates it, acp-patch revert removes it
//! "Thinking..." cards, heartbeats, gap cards and the text hold for this ACP agent.
//!
//! The agent's own code calls four things: `turn(..)` / `begin(..)` at the entry of each
//! prompt handler, `.acp_turn(&acp_turn)` on the responder of each prompt response, and
//! `.acp_progress()` in front of every SDK send of a session update (the emitter). Everything
//! else lives here, kept per session: one agent object may serve several sessions at once.
//!
//! Env: `{{PREFIX}}_HEARTBEAT_S` (30), `{{PREFIX}}_HEARTBEAT_DISABLED`, `{{PREFIX}}_THINK_HOLD_MS`
//! (200; 0 = the next tick), `{{PREFIX}}_THINK_GAP_MS` (500; 0 = no gap cards),
//! `{{PREFIX}}_THINK_AFTER_MS` (50: the turn's card waits that long for a first real update,
//! so a turn answered at once shows none; 0 = at once),
//! `{{PREFIX}}_PROGRESS_DEBUG` (failed card sends on stderr). Nothing is ever written to stdout.
