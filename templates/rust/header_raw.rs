// acp-patch: runtime module, generated — do not edit; acp-patch apply updates it, acp-patch revert removes it
//! "Thinking..." cards, heartbeats, gap cards and the text hold for this ACP agent, which
//! speaks JSON-RPC itself (no SDK).
//!
//! The agent's own code calls three things: `begin(..)` at the entry of each prompt handler
//! (given the handler's own writer of `session/update` messages), `cancel(..)` at the entry of
//! its `session/cancel` handler, and `wire(..)` around every write of its messages
//! (`for msg in wire(msg) { <the write> }`). Everything else lives here, kept per session:
//! one agent serves several sessions at once.
//!
//! Env: `{{PREFIX}}_HEARTBEAT_S` (30), `{{PREFIX}}_HEARTBEAT_DISABLED`, `{{PREFIX}}_THINK_HOLD_MS`
//! (200; 0 = the next tick), `{{PREFIX}}_THINK_GAP_MS` (500; 0 = no gap cards),
//! `{{PREFIX}}_THINK_AFTER_MS` (50: the turn's card waits that long for a first real update,
//! so a turn answered at once shows none; 0 = at once),
//! `{{PREFIX}}_PROGRESS_DEBUG` (failed card writes on stderr). Nothing is written to stdout
//! but through the agent's own writer.
