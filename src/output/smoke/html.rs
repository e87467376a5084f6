//! A smoke run's HTML report (the HTML printer's page): one self-contained page, no script.

use std::fmt::Write as _;

use crate::smoke::checks::{Check, Judges};
use crate::smoke::report::SmokeReport;

use super::esc;
use crate::smoke::transcript::{Block, ToolCallView, Transcript};
use crate::smoke::wire::Direction;

fn ms(v: f64) -> String {
    format!("{v:.0} ms")
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
.timeline{display:block;margin:.6rem 0;max-width:100%;height:auto;border:1px solid #eee;background:#fff}\
.legend{font-size:.8rem;color:#555}.legend span{margin-right:.8rem}.legend i{display:inline-block;width:.8rem;height:.3rem;margin-right:.2rem;vertical-align:middle}\
pre.stderr{background:#222;color:#eee;padding:.5rem;white-space:pre-wrap}";

fn tool_block(h: &mut String, c: &ToolCallView) {
    let _ = write!(
        h,
        "<div class=\"tool\" data-tool-call-id=\"{}\"><span class=\"s-{}\">{}</span> <b>{}</b> {} <span class=\"meta\">({}; id {}; {}; first {}, last {}; {} update(s))</span>",
        esc(&c.id),
        esc(&c.status),
        esc(c.icon()),
        esc(&c.kind),
        esc(&c.title),
        esc(&c.status),
        esc(&c.id),
        esc(&c.status_history.join(" → ")),
        ms(c.first_ms),
        ms(c.last_ms),
        c.updates
    );
    if !c.content_preview.is_empty() {
        let _ = write!(h, "<pre>{}</pre>", esc(&c.content_preview));
    }
    h.push_str("</div>\n");
}

fn bubble(h: &mut String, prompt: &str, t: &Transcript) {
    h.push_str("<div class=\"bubble\">\n");
    let _ = writeln!(
        h,
        "<div class=\"message\"><b>You:</b> {}</div>",
        esc(prompt)
    );
    for b in &t.blocks {
        match b {
            Block::Message { text, .. } => {
                let _ = writeln!(h, "<div class=\"message\">{}</div>", esc(text));
            }
            Block::Thought { text, .. } => {
                let _ = writeln!(h, "<div class=\"thought\">{}</div>", esc(text));
            }
            Block::Tool { index } => tool_block(h, &t.tool_calls[*index]),
        }
    }
    h.push_str("</div>\n");
}

fn checks_table(h: &mut String, checks: &[Check]) {
    h.push_str(
        "<table class=\"checks\"><tr><th></th><th>check</th><th>result</th><th>figures</th></tr>\n",
    );
    for c in checks {
        let figs: Vec<String> = c.figures.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = write!(
            h,
            "<tr data-check=\"{}\"><td class=\"{}\">{}</td><td>{}</td><td>{}",
            esc(&c.name),
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
}

const LEGEND: &[(&str, &str)] = &[
    ("#222", "prompt / answer"),
    ("#c0392b", "cancel"),
    ("#b7791f", "think card"),
    ("#d69e2e", "gap card"),
    ("#975a16", "heartbeat"),
    ("#2b6cb0", "tool call"),
    ("#718096", "thought chunk"),
    ("#1a7f37", "message chunk"),
    ("#805ad5", "model call"),
];

/// One self-contained HTML page: per session a timeline (inline SVG) and the turn as a client
/// shows it, then the checks, the model calls and the raw lines. Everything escaped, no script.
pub fn html(r: &SmokeReport) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>acp-patch smoke: {}</title><style>{CSS}</style></head><body>\n",
        esc(&r.agent_dir)
    );
    let _ = writeln!(
        h,
        "<h1>acp-patch smoke: <span class=\"{}\">{}</span> ({})</h1>",
        if r.passed { "pass" } else { "fail" },
        r.verdict_word(),
        esc(&r.verdict_summary())
    );
    let _ = writeln!(
        h,
        "<p class=\"meta\">Folder <code>{}</code>{}<br>Agent <code>{}</code> (pid {}; {})<br>Network: {}<br>{} = {} s, {} = {} ms, timeout {} s, LLM <code>{}</code> delay {} s, {} request(s){}{}<br>Turn: {}</p>",
        esc(&r.agent_dir),
        r.preset
            .as_ref()
            .map(|p| format!(" — preset <b>{}</b> ({})", esc(&p.name), esc(&p.why)))
            .unwrap_or_default(),
        esc(&shell_words::join(&r.agent_cmd)),
        r.agent_pid,
        esc(&r.agent_exit),
        esc(&r.network),
        esc(&r.heartbeat_var),
        r.heartbeat_s,
        esc(&r.gap_var),
        r.gap_ms,
        r.timeout_s,
        esc(&r.llm_base_url),
        r.script.delay_s,
        r.llm_requests.len(),
        if r.sessions_requested > 1 {
            format!(", {} sessions at once", r.sessions_requested)
        } else {
            String::new()
        },
        r.cancel_after_ms
            .map(|c| format!(", session/cancel after {c} ms"))
            .unwrap_or_default(),
        esc(&r.outcome)
    );
    h.push_str("<p class=\"legend\">");
    for (colour, what) in LEGEND {
        let _ = write!(
            h,
            "<span><i style=\"background:{colour}\"></i>{}</span>",
            esc(what)
        );
    }
    h.push_str("</p>\n");
    for s in &r.sessions {
        let _ = writeln!(
            h,
            "<section class=\"session\" data-session=\"{}\" data-session-id=\"{}\"><h2>Session {} <span class=\"meta\">{} — {}</span></h2>",
            s.number,
            esc(&s.session_id),
            s.number,
            esc(&s.session_id),
            esc(&s.outcome)
        );
        h.push_str(&super::svg::svg(
            &s.timeline,
            &format!("Timeline of session {} ({})", s.number, s.session_id),
        ));
        h.push('\n');
        bubble(&mut h, &s.prompt, &s.transcript);
        h.push_str("</section>\n");
    }
    if r.sessions.is_empty() {
        bubble(&mut h, &r.prompt, &r.transcript);
    }
    h.push_str("<h2>Checks of the patch</h2>\n");
    checks_table(
        &mut h,
        &r.judging(Judges::Patch).cloned().collect::<Vec<_>>(),
    );
    let agent: Vec<Check> = r.judging(Judges::Agent).cloned().collect();
    if !agent.is_empty() {
        let _ = writeln!(
            h,
            "<h2>Findings about the agent</h2>\n<p class=\"meta\">Its own protocol conformance: {}.</p>",
            if r.strict {
                "with --strict they decide the verdict too"
            } else {
                "they fail the run only with --strict"
            }
        );
        checks_table(&mut h, &agent);
    }
    if !r.notes.is_empty() {
        h.push_str("<h2>Notes</h2>\n<ul>");
        for n in &r.notes {
            let _ = write!(h, "<li>{}</li>", esc(n));
        }
        h.push_str("</ul>\n");
    }
    h.push_str("<h2>Model calls</h2>\n<table><tr><th>ms</th><th>request</th><th>kind</th><th>status</th><th>answer</th></tr>\n");
    for q in &r.llm_requests {
        let _ = writeln!(
            h,
            "<tr><td>{:.1}</td><td>{} {}{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            q.t_ms,
            esc(&q.method),
            esc(&q.path),
            if q.stream { " (stream)" } else { "" },
            esc(&q.kind),
            q.status,
            esc(&q.answer)
        );
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
}
