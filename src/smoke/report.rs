//! The smoke report, and its text, JSON and HTML renderings.

use std::fmt::Write as _;

use serde::Serialize;

use super::checks::Check;
use super::llm::{LlmRequest, Script};
use super::transcript::{Block, Transcript};
use super::wire::{Direction, RawLine, truncate};

/// Everything a smoke run found.
#[derive(Debug, Clone, Serialize)]
pub struct SmokeReport {
    /// All checks passed.
    pub passed: bool,
    pub agent_dir: String,
    pub agent_cmd: Vec<String>,
    /// The env set on top of the inherited one (secret-looking values masked).
    pub env: Vec<(String, String)>,
    pub heartbeat_var: String,
    pub heartbeat_s: f64,
    pub timeout_s: f64,
    pub prompt: String,
    pub llm_base_url: String,
    pub script: Script,
    /// Requests to the scripted LLM, `t_ms` relative to the prompt.
    pub llm_requests: Vec<LlmRequest>,
    /// How the turn went on the client side.
    pub outcome: String,
    pub stop_reason: Option<String>,
    /// The agent's pid, which is also its process group id.
    pub agent_pid: i32,
    pub agent_exit: String,
    pub permission_requests: usize,
    pub stderr_tail: Vec<String>,
    pub transcript: Transcript,
    pub checks: Vec<Check>,
    /// Every raw line, both directions, `t_ms` relative to the prompt.
    pub lines: Vec<RawLine>,
}

impl SmokeReport {
    pub fn failed_checks(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| !c.passed)
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

/// The full text report.
pub fn text(r: &SmokeReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "acp-patch smoke: {}", r.agent_dir);
    let _ = writeln!(
        out,
        "  agent: {} (pid/pgid {})",
        shell_words::join(&r.agent_cmd),
        r.agent_pid
    );
    let _ = writeln!(
        out,
        "  {}={} s, timeout {} s",
        r.heartbeat_var, r.heartbeat_s, r.timeout_s
    );
    let _ = writeln!(
        out,
        "  LLM: {} (delay {} s), {} request(s){}",
        r.llm_base_url,
        r.script.delay_s,
        r.llm_requests.len(),
        r.llm_requests
            .iter()
            .map(|q| format!(
                "; {} {}{} → {} at {}",
                q.method,
                q.path,
                if q.stream { " (stream)" } else { "" },
                q.status,
                ms(q.t_ms)
            ))
            .collect::<String>()
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
    out.push_str("\nTurn as a client shows it:\n");
    out.push_str(&blocks_text(&r.transcript));
    out.push_str("\nChecks:\n");
    out.push_str(&checks_text(&r.checks));
    let failed = r.failed_checks().count();
    if failed > 0 && !r.stderr_tail.is_empty() {
        out.push_str("\nAgent stderr (tail):\n");
        let start = r.stderr_tail.len().saturating_sub(20);
        for l in &r.stderr_tail[start..] {
            let _ = writeln!(out, "  | {}", truncate(l, 300));
        }
    }
    let _ = writeln!(
        out,
        "\n{}: {}/{} checks passed",
        if failed == 0 { "PASS" } else { "FAIL" },
        r.checks.len() - failed,
        r.checks.len()
    );
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

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = "body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}\
h1{font-size:1.3rem}h2{font-size:1.1rem;margin-top:2rem}\
.meta{color:#555;font-size:.9rem}.meta code{background:#f3f3f3;padding:0 .2rem}\
.bubble{border:1px solid #ddd;border-radius:8px;padding:.8rem;background:#fafafa}\
.tool{border:1px solid #ccc;background:#f0f0f0;border-radius:6px;padding:.4rem .6rem;margin:.4rem 0;font-size:.85rem}\
.tool pre{margin:.3rem 0 0;white-space:pre-wrap;background:#fff;padding:.3rem}\
.thought{color:#666;font-style:italic;border-left:3px solid #bbb;padding-left:.6rem;margin:.4rem 0;white-space:pre-wrap}\
.message{white-space:pre-wrap;margin:.4rem 0}\
.s-completed{color:#1a7f37}.s-failed{color:#c0392b}.s-in_progress{color:#b7791f}.s-pending{color:#666}\
table{border-collapse:collapse;width:100%;font-size:.85rem}td,th{border:1px solid #ddd;padding:.25rem .4rem;vertical-align:top;text-align:left}\
.pass{color:#1a7f37;font-weight:bold}.fail{color:#c0392b;font-weight:bold}\
td.raw{font-family:monospace;white-space:pre-wrap;word-break:break-all}tr.out td{background:#f6f8ff}\
pre.stderr{background:#222;color:#eee;padding:.5rem;white-space:pre-wrap}";

/// One self-contained HTML page: the turn, the checks, the raw lines. Everything escaped.
pub fn html(r: &SmokeReport) -> String {
    let mut h = String::new();
    let failed = r.failed_checks().count();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>acp-patch smoke: {}</title><style>{CSS}</style></head><body>\n",
        esc(&r.agent_dir)
    );
    let _ = writeln!(
        h,
        "<h1>acp-patch smoke: <span class=\"{}\">{}</span> ({}/{} checks passed)</h1>",
        if failed == 0 { "pass" } else { "fail" },
        if failed == 0 { "PASS" } else { "FAIL" },
        r.checks.len() - failed,
        r.checks.len()
    );
    let _ = writeln!(
        h,
        "<p class=\"meta\">Folder <code>{}</code><br>Agent <code>{}</code> (pid {}; {})<br>{} = {} s, timeout {} s, LLM <code>{}</code> delay {} s, {} request(s)<br>Turn: {}</p>",
        esc(&r.agent_dir),
        esc(&shell_words::join(&r.agent_cmd)),
        r.agent_pid,
        esc(&r.agent_exit),
        esc(&r.heartbeat_var),
        r.heartbeat_s,
        r.timeout_s,
        esc(&r.llm_base_url),
        r.script.delay_s,
        r.llm_requests.len(),
        esc(&r.outcome)
    );
    h.push_str("<h2>Turn</h2>\n<div class=\"bubble\">\n");
    let _ = writeln!(
        h,
        "<div class=\"message\"><b>You:</b> {}</div>",
        esc(&r.prompt)
    );
    for b in &r.transcript.blocks {
        match b {
            Block::Message { text, .. } => {
                let _ = writeln!(h, "<div class=\"message\">{}</div>", esc(text));
            }
            Block::Thought { text, .. } => {
                let _ = writeln!(h, "<div class=\"thought\">{}</div>", esc(text));
            }
            Block::Tool { index } => {
                let c = &r.transcript.tool_calls[*index];
                let _ = write!(
                    h,
                    "<div class=\"tool\"><span class=\"s-{}\">{}</span> <b>{}</b> {} <span class=\"meta\">({}; id {}; first {}, last {}; {} update(s))</span>",
                    esc(&c.status),
                    esc(c.icon()),
                    esc(&c.kind),
                    esc(&c.title),
                    esc(&c.status),
                    esc(&c.id),
                    ms(c.first_ms),
                    ms(c.last_ms),
                    c.updates
                );
                if !c.content_preview.is_empty() {
                    let _ = write!(h, "<pre>{}</pre>", esc(&c.content_preview));
                }
                h.push_str("</div>\n");
            }
        }
    }
    h.push_str("</div>\n<h2>Checks</h2>\n<table><tr><th></th><th>check</th><th>result</th><th>figures</th></tr>\n");
    for c in &r.checks {
        let figs: Vec<String> = c.figures.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = write!(
            h,
            "<tr><td class=\"{}\">{}</td><td>{}</td><td>{}",
            if c.passed { "pass" } else { "fail" },
            if c.passed { "PASS" } else { "FAIL" },
            esc(&c.name),
            esc(&c.summary)
        );
        for e in &c.evidence {
            let _ = write!(h, "<br><small>{}</small>", esc(e));
        }
        let _ = writeln!(h, "</td><td>{}</td></tr>", esc(&figs.join(", ")));
    }
    h.push_str("</table>\n");
    if !r.stderr_tail.is_empty() {
        let _ = writeln!(
            h,
            "<h2>Agent stderr (tail)</h2>\n<pre class=\"stderr\">{}</pre>",
            esc(&r.stderr_tail.join("\n"))
        );
    }
    h.push_str(
        "<h2>Raw lines</h2>\n<table><tr><th>#</th><th>ms</th><th>dir</th><th>line</th></tr>\n",
    );
    for (i, l) in r.lines.iter().enumerate() {
        let (cls, arrow) = match l.dir {
            Direction::In => ("in", "agent →"),
            Direction::Out => ("out", "→ agent"),
        };
        let _ = writeln!(
            h,
            "<tr class=\"{cls}\"><td>{}</td><td>{:.1}</td><td>{}</td><td class=\"raw\">{}</td></tr>",
            i + 1,
            l.t_ms,
            esc(arrow),
            esc(&l.text)
        );
    }
    h.push_str("</table>\n</body></html>\n");
    h
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
