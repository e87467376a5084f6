//! The checks, as pure functions over the recorded raw lines.
//!
//! Every check is judged on the raw JSON the agent wrote (the SDK's typed view is lenient).
//! Most judge one session ([`run_session`], on its [`session_view`](super::wire::session_view));
//! a few judge the whole run ([`clean_stdout`], [`sessions_isolated`], [`no_trace`]). With
//! several sessions each per-session check is run on every session and [`merge_sessions`]
//! folds them into one row that passes when every session passes.
//!
//! Each check [`Judges`] either the patch (it decides the exit code) or the agent's own
//! protocol conformance (a finding about the agent, failing the run only under `--strict`):
//! a correctly patched agent passes every patch check whatever its own tool calls do.

mod answer;
mod card;
mod sessions;
mod stream;
mod tools;
mod turn;

use std::collections::BTreeMap;

use serde::Serialize;

use super::wire::{RawLine, TurnFrame, turn_updates};

pub use answer::{SentText, answer_intact};
pub use card::{complete, expected_heartbeats, heartbeat, think_card};
pub use sessions::{SessionText, sessions_isolated};
pub use stream::{clean_stdout, jsonrpc_problem, one_thought_block};
pub use tools::{cards_well_formed, gap_card, tool_lifecycle, well_formed_tool_calls};
pub use turn::{cards_closed_on_cancel, quiet_after_cancel, turn_ends};

/// Names of the checks, in report order.
pub const THINK_CARD: &str = "think_card";
pub const HEARTBEAT: &str = "heartbeat";
pub const COMPLETE: &str = "complete";
pub const ONE_THOUGHT_BLOCK: &str = "one_thought_block";
pub const ANSWER_INTACT: &str = "answer_intact";
pub const CLEAN_STDOUT: &str = "clean_stdout";
pub const CARDS_WELL_FORMED: &str = "cards_well_formed";
pub const WELL_FORMED_TOOL_CALLS: &str = "well_formed_tool_calls";
pub const TURN_ENDS: &str = "turn_ends";
pub const TOOL_LIFECYCLE: &str = "tool_lifecycle";
pub const GAP_CARD: &str = "gap_card";
pub const CARDS_CLOSED_ON_CANCEL: &str = "cards_closed_on_cancel";
pub const QUIET_AFTER_CANCEL: &str = "quiet_after_cancel";
pub const SESSIONS_ISOLATED: &str = "sessions_isolated";
pub const NO_TRACE: &str = "no_trace";

/// Every check name, in report order (a run reports those its mode calls for): the patch's
/// checks, then the findings about the agent.
pub const ALL: &[&str] = &[
    THINK_CARD,
    HEARTBEAT,
    COMPLETE,
    ONE_THOUGHT_BLOCK,
    ANSWER_INTACT,
    CLEAN_STDOUT,
    CARDS_WELL_FORMED,
    TURN_ENDS,
    GAP_CARD,
    CARDS_CLOSED_ON_CANCEL,
    QUIET_AFTER_CANCEL,
    SESSIONS_ISOLATED,
    NO_TRACE,
    WELL_FORMED_TOOL_CALLS,
    TOOL_LIFECYCLE,
];

/// The checks that judge the agent's own protocol conformance, not the patch.
pub const AGENT_FINDINGS: &[&str] = &[WELL_FORMED_TOOL_CALLS, TOOL_LIFECYCLE];

/// What a check judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Judges {
    /// What the patch adds (the card, its heartbeat and completion, the thought block, the
    /// answer, a clean stdout, ...): decides the exit code.
    Patch,
    /// The agent's own conformance (its tool calls' lifecycle): a finding, failing the run
    /// only under `--strict`.
    Agent,
}

impl Judges {
    pub fn of(name: &str) -> Self {
        if AGENT_FINDINGS.contains(&name) {
            Judges::Agent
        } else {
            Judges::Patch
        }
    }
}

/// The run's verdict: every patch check passes (and under `strict` every agent finding too).
pub fn verdict(checks: &[Check], strict: bool) -> bool {
    checks
        .iter()
        .all(|c| c.passed || (c.judges == Judges::Agent && !strict))
}

/// The result of one check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    pub name: String,
    /// The patch or the agent.
    pub judges: Judges,
    pub passed: bool,
    /// One line saying what was found.
    pub summary: String,
    /// Supporting details (quoted lines, ids, times).
    pub evidence: Vec<String>,
    /// Numbers behind the verdict (times in ms, counts).
    pub figures: BTreeMap<String, f64>,
}

impl Check {
    fn new(name: &str, passed: bool, summary: impl Into<String>) -> Self {
        Self {
            name: name.to_string(),
            judges: Judges::of(name),
            passed,
            summary: summary.into(),
            evidence: Vec::new(),
            figures: BTreeMap::new(),
        }
    }
    fn fig(mut self, k: &str, v: f64) -> Self {
        self.figures
            .insert(k.to_string(), (v * 10.0).round() / 10.0);
        self
    }
    fn ev(mut self, e: impl Into<String>) -> Self {
        self.evidence.push(e.into());
        self
    }
}

/// What the scripted tool call should have led to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolExpectation {
    /// The tool the script asked for.
    pub name: String,
    /// The call id the model used.
    pub call_id: String,
    /// Whether a model call of the session carried a tool result with the workspace
    /// file's token (`None`: no model call carried a tool result).
    pub result_carries_seed: Option<bool>,
    /// What the tool returned to the model (the start of it), when it did.
    pub tool_result: Option<String>,
    /// Why the model never asked for the tool (e.g. not offered), when it did not.
    pub not_asked: Option<String>,
    /// When model calls of the session carried a tool result (ms after its prompt): the tool
    /// ran by then, whether or not the agent completed its tool call on the wire.
    pub results_at_ms: Vec<f64>,
}

/// What the checks need besides the lines.
#[derive(Debug, Clone)]
pub struct CheckContext {
    /// The heartbeat interval the agent was given, in seconds.
    pub heartbeat_s: f64,
    /// The think card must arrive within this many ms of the prompt.
    pub think_card_max_ms: f64,
    /// The silence after a tool call before a new card, as given to the agent.
    pub gap_ms: f64,
    /// Why there is no prompt response, when there is none (timeout, agent exit...).
    pub no_response_note: Option<String>,
    /// The stop reason the turn should end with.
    pub expected_stop: String,
    /// When `session/cancel` was sent (ms after the prompt), in a cancel run.
    pub cancel_at_ms: Option<f64>,
    /// In a tool-call run.
    pub tool: Option<ToolExpectation>,
    /// The answer text each model call of the session wrote (None: the script fails the
    /// model calls, so there is no answer to compare).
    pub answer: Option<Vec<SentText>>,
}

impl Default for CheckContext {
    fn default() -> Self {
        Self {
            heartbeat_s: 1.0,
            think_card_max_ms: 250.0,
            gap_ms: 500.0,
            no_response_note: None,
            expected_stop: "end_turn".into(),
            cancel_at_ms: None,
            tool: None,
            answer: None,
        }
    }
}

/// The checks of one session, on its lines (times relative to its prompt).
pub fn run_session(lines: &[RawLine], ctx: &CheckContext) -> Vec<Check> {
    let frame = TurnFrame::find(lines);
    let ups = turn_updates(lines, &frame);
    let cards = match card::ended_in_grace(lines, &frame, &ups, ctx) {
        Some(ended) => [THINK_CARD, HEARTBEAT, COMPLETE].map(|name| ended.check(name, ctx)),
        None => [
            think_card(&ups, ctx),
            heartbeat(lines, &frame, &ups, ctx),
            complete(&ups, ctx),
        ],
    };
    let mut out = cards.to_vec();
    out.extend([
        one_thought_block(&ups),
        cards_well_formed(&ups),
        well_formed_tool_calls(&ups),
        turn_ends(lines, &frame, ctx),
    ]);
    if let Some(sent) = &ctx.answer {
        out.push(answer_intact(lines, &frame, &ups, sent, ctx));
    }
    if let Some(tool) = &ctx.tool
        && ctx.cancel_at_ms.is_none()
    {
        out.push(tool_lifecycle(&ups, tool));
        // gap_ms = 0 turns the agent's gap cards off: then there is nothing to judge
        if ctx.gap_ms > 0.0 {
            out.push(gap_card(lines, &frame, &ups, ctx));
        }
    }
    if let Some(at) = ctx.cancel_at_ms {
        out.push(cards_closed_on_cancel(lines, &frame, at));
        out.push(quiet_after_cancel(lines, &frame));
    }
    out
}

/// Every check of a single-session recording (without the folder's trace).
pub fn run_all(lines: &[RawLine], ctx: &CheckContext) -> Vec<Check> {
    let mut out = run_session(lines, ctx);
    out.push(clean_stdout(lines));
    order(&mut out);
    out
}

/// Sorts checks into report order.
pub fn order(checks: &mut [Check]) {
    let rank = |c: &Check| ALL.iter().position(|n| *n == c.name).unwrap_or(ALL.len());
    checks.sort_by_key(rank);
}

/// Folds per-session results into one row per check (passes when every session passes).
/// With one session the rows are that session's, unchanged.
pub fn merge_sessions(per_session: &[Vec<Check>]) -> Vec<Check> {
    if per_session.len() == 1 {
        return per_session[0].clone();
    }
    let mut out: Vec<Check> = Vec::new();
    for (k, checks) in per_session.iter().enumerate() {
        let label = format!("s{}", k + 1);
        for c in checks {
            let row = match out.iter_mut().find(|r| r.name == c.name) {
                Some(r) => r,
                None => {
                    out.push(Check::new(&c.name, true, String::new()));
                    out.last_mut().expect("pushed")
                }
            };
            row.passed &= c.passed;
            if !row.summary.is_empty() {
                row.summary.push_str("; ");
            }
            row.summary
                .push_str(&format!("session {}: {}", k + 1, c.summary));
            row.evidence
                .extend(c.evidence.iter().map(|e| format!("{label}: {e}")));
            for (f, v) in &c.figures {
                row.figures.insert(format!("{label}.{f}"), *v);
            }
        }
    }
    out
}

/// The agent's folder is as it was before the run.
pub fn no_trace(changes: &[String], files: usize, in_git: bool, truncated: bool) -> Check {
    let scope = if in_git {
        format!("{files} file(s) git shows, and git status,")
    } else {
        format!("{files} file(s)")
    };
    let mut c = if changes.is_empty() {
        Check::new(
            NO_TRACE,
            true,
            format!(
                "the agent's folder is unchanged ({scope} compared{})",
                if truncated { ", the first ones only" } else { "" }
            ),
        )
    } else {
        Check::new(
            NO_TRACE,
            false,
            format!(
                "the run changed {} path(s) in the agent's folder: point the agent's home, config and data at {{smoke_dir}}",
                changes.len()
            ),
        )
    }
    .fig("changes", changes.len() as f64)
    .fig("files", files as f64);
    for ch in changes.iter().take(10) {
        c = c.ev(ch.clone());
    }
    c
}

#[cfg(test)]
mod tests;
