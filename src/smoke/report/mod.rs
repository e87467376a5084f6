//! The smoke report: everything a run found, typed (the printers in [`super::print`] render it).

use std::fmt::Write as _;

use serde::Serialize;

use super::checks::{Check, Judges};
use super::config::PresetUse;
use super::llm::{LlmRequest, Script};
use super::timeline::Timeline;
use super::transcript::Transcript;
use super::wire::RawLine;

/// Everything a smoke run found.
#[derive(Debug, Clone, Serialize)]
pub struct SmokeReport {
    /// The verdict: every check of the patch passed (with `strict`, every finding about the
    /// agent too).
    pub passed: bool,
    /// Whether the findings about the agent decided the verdict too (`--strict`).
    pub strict: bool,
    pub agent_dir: String,
    pub agent_cmd: Vec<String>,
    /// The env set on top of the inherited one (secret-looking values masked).
    pub env: Vec<(String, String)>,
    /// The preset the run started from, and why.
    pub preset: Option<PresetUse>,
    pub heartbeat_var: String,
    pub heartbeat_s: f64,
    pub gap_var: String,
    pub gap_ms: f64,
    pub timeout_s: f64,
    pub think_card_max_ms: f64,
    pub prompt: String,
    pub sessions_requested: u32,
    pub cancel_after_ms: Option<f64>,
    pub llm_base_url: String,
    pub script: Script,
    /// Requests to the scripted LLM, `t_ms` relative to the (first) prompt.
    pub llm_requests: Vec<LlmRequest>,
    /// How the agent's network was set up.
    pub network: String,
    /// `{smoke_dir}`: the agent's home, config files and workspace during the run.
    pub smoke_dir: String,
    /// Whether it was kept (`--keep`); else it is gone.
    pub smoke_dir_kept: bool,
    /// How the (first) session's turn went on the client side.
    pub outcome: String,
    pub stop_reason: Option<String>,
    /// The agent's pid, which is also its process group id.
    pub agent_pid: i32,
    pub agent_exit: String,
    pub permission_requests: usize,
    pub stderr_tail: Vec<String>,
    /// The (first) session's turn as a client shows it.
    pub transcript: Transcript,
    /// Every session: its turn, timeline and checks.
    pub sessions: Vec<SessionReport>,
    /// What changed in the agent's folder (empty: nothing).
    pub trace: Vec<String>,
    /// Things worth knowing that are not checks (unknown requests, ...).
    pub notes: Vec<String>,
    /// The checks, one row each (over every session).
    pub checks: Vec<Check>,
    /// Every raw line, both directions, `t_ms` relative to the (first) prompt.
    pub lines: Vec<RawLine>,
}

/// One session of the run.
#[derive(Debug, Clone, Serialize)]
pub struct SessionReport {
    /// 1-based.
    pub number: u32,
    pub session_id: String,
    pub prompt: String,
    /// When its prompt went out, after the first one.
    pub prompt_offset_ms: f64,
    pub outcome: String,
    pub stop_reason: Option<String>,
    pub transcript: Transcript,
    /// Its timeline (times relative to its prompt).
    pub timeline: Timeline,
    /// Its own checks.
    pub checks: Vec<Check>,
}

impl SmokeReport {
    /// The checks that fail the verdict (the patch's; with `strict`, the agent's too).
    pub fn failed_checks(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .filter(|c| !c.passed && (self.strict || c.judges == Judges::Patch))
    }

    /// The checks of one kind, in report order.
    pub fn judging(&self, what: Judges) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(move |c| c.judges == what)
    }

    /// `PASS` or `FAIL`.
    pub fn verdict_word(&self) -> &'static str {
        if self.passed { "PASS" } else { "FAIL" }
    }

    /// The verdict's figures in words: the patch's checks passed, and the findings about the
    /// agent.
    pub fn verdict_summary(&self) -> String {
        let patch: Vec<&Check> = self.judging(Judges::Patch).collect();
        let passed = patch.iter().filter(|c| c.passed).count();
        let findings: Vec<&str> = self
            .judging(Judges::Agent)
            .filter(|c| !c.passed)
            .map(|c| c.name.as_str())
            .collect();
        let mut line = format!("{passed}/{} checks of the patch passed", patch.len());
        if !findings.is_empty() {
            let _ = write!(
                line,
                "; {} finding(s) about the agent ({}){}",
                findings.len(),
                findings.join(", "),
                if self.strict {
                    ", failing under --strict"
                } else {
                    ""
                }
            );
        }
        line
    }
}

/// Masks values of variables whose names look secret.
pub fn mask_env(env: &[(String, String)]) -> Vec<(String, String)> {
    env.iter()
        .map(|(k, v)| {
            let up = k.to_ascii_uppercase();
            let secret = ["KEY", "TOKEN", "SECRET", "PASSWORD"]
                .iter()
                .any(|s| up.contains(s));
            (
                k.clone(),
                if secret && !v.is_empty() {
                    "***".into()
                } else {
                    v.clone()
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_secret_env() {
        let m = mask_env(&[
            ("OPENAI_API_KEY".into(), "sk-1".into()),
            ("URL".into(), "u".into()),
        ]);
        assert_eq!(m[0].1, "***");
        assert_eq!(m[1].1, "u");
    }
}
