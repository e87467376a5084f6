//! The HTML report in a real browser: headless Chromium from Debian's archive (scripts/test.sh
//! installs it when missing) renders it without script errors, and the timeline's marks for the
//! cards, heartbeats, tool calls and chunks sit where the raw lines say. A screenshot is kept
//! under target/smoke-report/.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::smoke::{fixtures, smoke};
use crate::support::repo;

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|p| p.join(name))
                    .find(|p| p.is_file())
            })
        })
}

/// Runs headless Chromium on a file with a fresh profile; returns (stdout, stderr).
fn headless(browser: &Path, page: &Path, extra: &[&str]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The attribute `name` of an element's opening tag.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    let j = tag[i..].find('"')? + i;
    Some(&tag[i..j])
}

/// The opening tags of the elements `<NAME ...>` with `class="CLASS ..."`.
fn tags<'a>(dom: &'a str, name: &str, class: &str) -> Vec<&'a str> {
    let open = format!("<{name} ");
    dom.match_indices(&open)
        .filter_map(|(i, _)| {
            let end = dom[i..].find('>')? + i;
            let tag = &dom[i..end];
            attr(tag, "class")
                .is_some_and(|c| c.split(' ').next() == Some(class))
                .then_some(tag)
        })
        .collect()
}

/// (kind, ms) of what the timeline must show, read from the raw lines of a one-session run.
fn expected_marks(report: &Value) -> Vec<(&'static str, f64)> {
    let mut out = vec![("prompt", 0.0)];
    let mut cards: Vec<String> = Vec::new();
    let mut tools: Vec<String> = Vec::new();
    for l in report["lines"].as_array().unwrap() {
        let Ok(v) = serde_json::from_str::<Value>(l["text"].as_str().unwrap()) else {
            continue;
        };
        let t = l["t_ms"].as_f64().unwrap();
        if l["dir"] == "in"
            && v.get("result")
                .is_some_and(|r| r.get("stopReason").is_some())
        {
            out.push(("answer", t));
        }
        if v["method"] != "session/update" {
            continue;
        }
        let u = &v["params"]["update"];
        let id = u["toolCallId"].as_str().unwrap_or_default().to_string();
        match u["sessionUpdate"].as_str().unwrap() {
            "agent_thought_chunk" => out.push(("thought", t)),
            "agent_message_chunk" => out.push(("message", t)),
            "tool_call" if u["kind"] == "think" => {
                out.push((
                    if cards.is_empty() {
                        "card_open"
                    } else {
                        "gap_card_open"
                    },
                    t,
                ));
                cards.push(id);
            }
            "tool_call" => {
                out.push(("tool_start", t));
                tools.push(id);
            }
            "tool_call_update" if cards.contains(&id) => out.push(match u["status"].as_str() {
                Some("completed") | Some("failed") => ("card_complete", t),
                _ => ("heartbeat", t),
            }),
            "tool_call_update" if tools.contains(&id) => out.push(match u["status"].as_str() {
                Some("completed") | Some("failed") => ("tool_done", t),
                _ => ("tool_update", t),
            }),
            _ => {}
        }
    }
    out
}

#[test]
fn the_html_report_renders_in_chromium_with_its_timeline_where_the_transcript_says() {
    let Some(browser) = chromium() else {
        eprintln!(
            "skipped: no chromium on PATH (scripts/test.sh installs Debian's `chromium` when it runs as root with apt-get)"
        );
        return;
    };
    let r = smoke(&fixtures().join("good_tool"), &[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let out_dir = repo().join("target/smoke-report");
    std::fs::create_dir_all(&out_dir).unwrap();
    let page = out_dir.join("good_tool.html");
    std::fs::write(&page, r.html.as_deref().unwrap()).unwrap();
    std::fs::write(
        out_dir.join("good_tool.json"),
        serde_json::to_string_pretty(&r.report).unwrap(),
    )
    .unwrap();

    let (dom, log) = headless(&browser, &page, &["--dump-dom"]);
    // no script anywhere, and nothing on the console
    assert!(dom.contains("<svg class=\"timeline\""), "{dom}");
    assert!(
        !dom.to_ascii_lowercase().contains("<script"),
        "a script in the page"
    );
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console output: {console:?}");

    let svg = tags(&dom, "svg", "timeline");
    assert_eq!(svg.len(), 1);
    let x0: f64 = attr(svg[0], "data-x0").unwrap().parse().unwrap();
    let scale: f64 = attr(svg[0], "data-ms-per-px").unwrap().parse().unwrap();
    let marks: Vec<(String, f64, f64)> = tags(&dom, "line", "mark")
        .into_iter()
        .map(|t| {
            (
                attr(t, "data-kind").unwrap().to_string(),
                attr(t, "data-t-ms").unwrap().parse().unwrap(),
                attr(t, "x1").unwrap().parse().unwrap(),
            )
        })
        .collect();
    let want = expected_marks(&r.report);
    for kind in [
        "card_open",
        "heartbeat",
        "card_complete",
        "gap_card_open",
        "tool_start",
        "tool_done",
        "thought",
        "message",
    ] {
        assert!(
            want.iter().any(|(k, _)| *k == kind),
            "the run has no {kind}"
        );
    }
    for (kind, t) in &want {
        let found = marks
            .iter()
            .find(|(k, mt, _)| k == kind && (mt - t).abs() < 0.11)
            .unwrap_or_else(|| panic!("no {kind} mark at {t} ms in the page: {marks:?}"));
        let x = x0 + t.max(0.0) / scale;
        assert!(
            (found.2 - x).abs() < 0.05,
            "{kind} at {t} ms drawn at x={} instead of {x}",
            found.2
        );
    }
    // every mark is one of those (nothing invented), the model calls aside
    let drawn = marks.iter().filter(|(k, _, _)| k != "llm_request").count();
    assert_eq!(drawn, want.len(), "{marks:?}\n{want:?}");
    // the card spans, heartbeat ticks inside the first card's span
    let spans = tags(&dom, "rect", "span");
    assert!(spans.iter().any(|s| attr(s, "data-kind") == Some("card")));
    assert!(
        spans
            .iter()
            .any(|s| attr(s, "data-kind") == Some("gap_card"))
    );
    assert!(spans.iter().any(|s| attr(s, "data-kind") == Some("tool")));

    let shot = out_dir.join("good_tool.png");
    let _ = std::fs::remove_file(&shot);
    headless(
        &browser,
        &page,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1100,1500",
            "--hide-scrollbars",
        ],
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(
        png.len() > 20_000,
        "a blank screenshot? {} bytes",
        png.len()
    );
    eprintln!("screenshot: {}", shot.display());
}
