//! A smoke run as text (the text printer's report): the run's set-up, the turn as a client
//! shows it, the checks of the patch and the findings about the agent, the verdict line.

use std::fmt::Write as _;

use crate::smoke::checks::{Check, Judges};
use crate::smoke::llm::LlmRequest;
use crate::smoke::report::SmokeReport;
use crate::smoke::transcript::{Block, Transcript};
use crate::smoke::wire::truncate;

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
    if r.protocol != 1 {
        let _ = writeln!(out, "  protocol: v{}", r.protocol);
    }
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
