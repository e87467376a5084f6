//! The smoke report, and its text and JSON renderings (HTML in [`html`]).

use std::fmt::Write as _;

use serde::Serialize;

mod html;

pub use html::{esc, html};

use super::checks::{Check, Judges};
use super::config::PresetUse;
use super::llm::{LlmRequest, Script};
use super::timeline::Timeline;
use super::transcript::{Block, Transcript};
use super::wire::{RawLine, truncate};

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

fn ms(v: f64) -> String {
    format!("{v:.0} ms")
}

/// The turn as blocks, as a client would show it.
pub fn blocks_text(t: &Transcript) -> String {
    let mut out = String::new();
    if t.blocks.is_empty() {
        out.push_str("  (nothing shown: no message, thought or tool call)\n");
    }
    for b in &t.blocks {
        match b {
            Block::Message { text, first_ms } => {
                let _ = writeln!(out, "  [message] (from {})", ms(*first_ms));
                for l in text.lines() {
                    let _ = writeln!(out, "    {l}");
                }
            }
            Block::Thought { text, first_ms } => {
                let _ = writeln!(out, "  [thought] (from {})", ms(*first_ms));
                for l in text.lines() {
                    let _ = writeln!(out, "    {l}");
                }
            }
            Block::Tool { index } => {
                let c = &t.tool_calls[*index];
                let _ = writeln!(
                    out,
                    "  [tool] {} {} {:?} {} — id {}, first {}, last update {}, {} update(s){}",
                    c.icon(),
                    c.kind,
                    c.title,
                    c.status,
                    c.id,
                    ms(c.first_ms),
                    ms(c.last_ms),
                    c.updates,
                    if c.orphan { ", never started" } else { "" }
                );
                if !c.content_preview.is_empty() {
                    for l in c.content_preview.lines().take(5) {
                        let _ = writeln!(out, "    │ {l}");
                    }
                }
            }
        }
    }
    out
}

/// The checks, one PASS/FAIL line each with evidence.
pub fn checks_text(checks: &[Check]) -> String {
    let mut out = String::new();
    for c in checks {
        let _ = writeln!(
            out,
            "  {} {:<22} {}",
            if c.passed { "PASS" } else { "FAIL" },
            c.name,
            c.summary
        );
        for e in &c.evidence {
            let _ = writeln!(out, "         {e}");
        }
    }
    out
}

fn request_line(q: &LlmRequest) -> String {
    format!(
        "{} {} {}{} → {} at {}: {}",
        q.method,
        q.path,
        q.kind,
        if q.stream { " (stream)" } else { "" },
        q.status,
        ms(q.t_ms),
        q.answer
    )
}

/// The full text report.
pub fn text(r: &SmokeReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "acp-patch smoke: {}", r.agent_dir);
    if let Some(p) = &r.preset {
        let _ = writeln!(out, "  preset: {} ({})", p.name, p.why);
    }
    let _ = writeln!(
        out,
        "  agent: {} (pid/pgid {})",
        shell_words::join(&r.agent_cmd),
        r.agent_pid
    );
    let _ = writeln!(out, "  network: {}", r.network);
    let mut mode = format!(
        "  {}={} s, {}={} ms, timeout {} s, card within {}",
        r.heartbeat_var,
        r.heartbeat_s,
        r.gap_var,
        r.gap_ms,
        r.timeout_s,
        ms(r.think_card_max_ms)
    );
    if r.sessions_requested > 1 {
        let _ = write!(mode, "; {} sessions at once", r.sessions_requested);
    }
    if let Some(c) = r.cancel_after_ms {
        let _ = write!(mode, "; session/cancel after {}", ms(c));
    }
    let _ = writeln!(out, "{mode}");
    let _ = writeln!(
        out,
        "  LLM: {} (delay {} s{}), {} request(s)",
        r.llm_base_url,
        r.script.delay_s,
        match &r.script.tool_call {
            Some(tc) => format!(
                ", tool call {} then {} s",
                tc.name, r.script.after_tool_delay_s
            ),
            None => String::new(),
        },
        r.llm_requests.len()
    );
    for q in r.llm_requests.iter().take(30) {
        let _ = writeln!(out, "    {}", truncate(&request_line(q), 220));
    }
    if r.llm_requests.len() > 30 {
        let _ = writeln!(out, "    ... {} more", r.llm_requests.len() - 30);
    }
    let _ = writeln!(
        out,
        "  smoke dir: {} ({})",
        r.smoke_dir,
        if r.smoke_dir_kept { "kept" } else { "removed" }
    );
    let _ = writeln!(
        out,
        "  turn: {}; {}{} raw line(s){}",
        r.outcome,
        if r.outcome.contains(&r.agent_exit) {
            String::new()
        } else {
            format!("agent {}; ", r.agent_exit)
        },
        r.lines.len(),
        if r.permission_requests > 0 {
            format!("; {} permission request(s) allowed", r.permission_requests)
        } else {
            String::new()
        }
    );
    if r.sessions.len() > 1 {
        for s in &r.sessions {
            let _ = writeln!(
                out,
                "\nSession {} ({}), prompted at +{}: {}",
                s.number,
                s.session_id,
                ms(s.prompt_offset_ms),
                s.outcome
            );
            out.push_str(&blocks_text(&s.transcript));
        }
    } else {
        out.push_str("\nTurn as a client shows it:\n");
        out.push_str(&blocks_text(&r.transcript));
    }
    out.push_str("\nChecks of the patch (they decide the exit code):\n");
    out.push_str(&checks_text(
        &r.judging(Judges::Patch).cloned().collect::<Vec<_>>(),
    ));
    let agent: Vec<Check> = r.judging(Judges::Agent).cloned().collect();
    if !agent.is_empty() {
        let _ = writeln!(
            out,
            "\nFindings about the agent (its own protocol conformance; {}):",
            if r.strict {
                "--strict: they decide too"
            } else {
                "they fail the run only with --strict"
            }
        );
        out.push_str(&checks_text(&agent));
    }
    if !r.notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in &r.notes {
            let _ = writeln!(out, "  {n}");
        }
    }
    if !r.passed && !r.stderr_tail.is_empty() {
        out.push_str("\nAgent stderr (tail):\n");
        let start = r.stderr_tail.len().saturating_sub(20);
        for l in &r.stderr_tail[start..] {
            let _ = writeln!(out, "  | {}", truncate(l, 300));
        }
    }
    let _ = writeln!(out, "\n{}: {}", r.verdict_word(), r.verdict_summary());
    out
}

/// The JSON report (transcript with raw lines and times, and checks).
pub fn json(r: &SmokeReport) -> String {
    serde_json::to_string_pretty(r).unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
}

/// The JSON written when the run could not happen.
pub fn error_json(message: &str) -> String {
    serde_json::to_string_pretty(
        &serde_json::json!({"passed": false, "error": message, "checks": []}),
    )
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything() {
        assert_eq!(
            esc("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
    }

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
