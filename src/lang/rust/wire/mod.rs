//! Rust agents without an SDK: a JSON-RPC loop of their own over stdio. What the protocol
//! fixes is found on the code instead of the SDK's names: the fn the dispatcher calls for
//! `"session/prompt"` (a `match` arm, `if`/`else if`, a handler map; the string or a constant
//! holding it), the one for `"session/cancel"`, and every write of a `session/update`
//! message (a `json!` object or a struct literal, followed through variables, return values,
//! a helper's parameters, `serde_json::to_string`, to the call that writes it — across the
//! crate's modules). The card goes out through the agent's own writer: the prompt handler
//! starts with `let _acp_turn = acp_progress::begin(&<its session>, <a closure made of one of
//! its writes>);`, every write runs as `for msg in acp_progress::wire(msg) { <the write> }`.

mod build;
mod dispatch;
mod follow;
mod form;
mod index;
mod macros;
pub(super) mod parts;
mod sites;
mod tree;
mod unit;
mod wrap;
mod writer;

use super::Parsed;
use super::modules::Modules;
use super::syntax::Collected;
use crate::config::{Pin, RustPins};
use crate::error::{Candidate, Error, Location, Result};
use follow::Follow;
use index::{At, Index};
use std::ops::Range;

/// A text of a tree without an SDK worth a look: it names the prompt method.
pub fn mentions_prompt(text: &str) -> bool {
    text.contains("session/prompt")
}

pub struct Handler {
    pub file: usize,
    pub name: String,
    pub line: usize,
    /// The fn's byte range (its body is found among the collected fns by it).
    pub span: Range<usize>,
    pub key: dispatch::Key,
    pub params: Vec<String>,
    /// `begin`'s second argument, and where it comes from (for the report).
    pub writer: String,
    pub writer_reads: Vec<String>,
    pub writer_from: Candidate,
}

pub struct Cancel {
    pub file: usize,
    pub span: Range<usize>,
    pub key: dispatch::Key,
}

pub struct Site {
    pub file: usize,
    pub unit: Range<usize>,
    pub line: usize,
    /// The write wrapped, as apply writes it; the write as it was (what revert restores).
    pub wrapped: String,
    pub restore: String,
    pub present: bool,
}

pub struct Raw {
    pub handlers: Vec<Handler>,
    pub cancels: Vec<Cancel>,
    pub sites: Vec<Site>,
}

/// What the locator needs beyond the files.
pub struct Context<'a> {
    pub collected: &'a Collected,
    pub modules: &'a Modules,
    pub owned: &'a dyn Fn(usize) -> bool,
    pub pins: &'a RustPins,
    /// The crate's name for serde_json.
    pub json: &'a str,
    /// Whether the crate can take `wire_any` (it depends on serde).
    pub serde: bool,
    /// The runtime module's path from a file (`crate::acp_progress`).
    pub path_of: &'a dyn Fn(usize) -> String,
}

fn candidate(ix: &Index, f: At) -> Candidate {
    Candidate {
        location: Location {
            file: ix.files[f.0].file.rel.clone(),
            line: ix.line(f),
        },
        name: ix.qualified(f),
    }
}

/// The anchors of an agent with its own JSON-RPC loop, or what a `prompt` pin could name
/// when no dispatcher of `"session/prompt"` calls a fn of the crate.
pub fn locate(
    decisions: &crate::lang::survey::Decisions,
    files: &[Parsed],
    cx: &Context,
) -> Result<Located> {
    let ix = Index::new(files, cx.owned, cx.collected, cx.modules);
    let prefer = dispatch::writes_updates(&ix);
    let mut prompts: Vec<At> = dispatch::dispatched(&ix, "session/prompt", &prefer)
        .into_iter()
        .map(|(f, _)| f)
        .collect();
    if let Some(pin) = &cx.pins.prompt {
        let Pin { file, name } = Pin::parse_rust(pin);
        let mut pool = prompts.clone();
        for f in &ix.fns {
            if ix.files[f.0].file.rel == file && !pool.contains(f) {
                pool.push(*f);
            }
        }
        let seen: Vec<Candidate> = pool.iter().map(|f| candidate(&ix, *f)).collect();
        prompts = pool
            .into_iter()
            .filter(|f| {
                ix.files[f.0].file.rel == file
                    && name.as_ref().is_none_or(|n| *n == ix.qualified(*f))
            })
            .collect();
        if prompts.is_empty() {
            return Err(Error::NotFound {
                site: "ACP prompt handler",
                detail: format!(
                    "the pin `prompt` names {file}{}, which is no fn the dispatcher calls for `\"session/prompt\"` nor a fn of that file",
                    name.map(|n| format!(":{n}")).unwrap_or_default()
                ),
                pin_key: "rust.prompt",
                candidates: seen,
            });
        }
    }
    if let [one] = prompts.as_slice() {
        let c = candidate(&ix, *one);
        decisions.record("ACP prompt handler", "rust.prompt", &[&c], Some(&c));
    }

    // every write of the agent's messages
    let mut follow = Follow::new(&ix, &prompts);
    for (origin, update) in follow.origins() {
        let before = follow.lost.len();
        if follow.run(origin) == 0 && update {
            let lost: Vec<String> = follow.lost[before..]
                .iter()
                .map(|(at, why)| format!("{}:{}: {why}", ix.files[at.0].file.rel, ix.line(*at)))
                .collect();
            return Err(Error::Unsupported {
                file: ix.files[origin.0].file.rel.clone(),
                line: ix.line(origin),
                message: format!(
                    "acp-patch followed this `session/update` message (through variables, return values, a helper's parameters, `serde_json::to_string`) to no write of it{}",
                    if lost.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", lost.join("; "))
                    }
                ),
            });
        }
    }
    let (found, _) = follow.finish();
    if prompts.is_empty() {
        return Ok(Located::NoDispatcher(pinnable(
            &ix,
            cx,
            &prefer,
            &found.carriers,
            None,
        )));
    }
    let mut sites = Vec::new();
    for s in &found.sinks {
        sites.push(wrap::site(&ix, cx, s)?);
    }
    sites.sort_by_key(|s| (s.file, s.unit.start));

    let mut handlers = Vec::new();
    for h in &prompts {
        let made = handler(decisions, &ix, cx, *h, &found.carriers).map_err(|e| match e {
            // what a `prompt` pin accepts instead: a fn with its session id and a writer
            Error::NotFound {
                site,
                detail,
                pin_key: pin_key @ "rust.prompt",
                ..
            } => Error::NotFound {
                site,
                detail,
                pin_key,
                candidates: pinnable(&ix, cx, &prefer, &found.carriers, Some(*h)),
            },
            e => e,
        })?;
        handlers.push(made);
    }
    let mut cancels = Vec::new();
    for (f, _) in dispatch::dispatched(&ix, "session/cancel", &Default::default()) {
        if let Some(key) = dispatch::session_key(&ix, f) {
            cancels.push(Cancel {
                file: f.0,
                span: ix.node(f).span.clone(),
                key,
            });
        }
    }
    Ok(Located::Agent(Raw {
        handlers,
        cancels,
        sites,
    }))
}

/// What the locator found.
pub enum Located {
    Agent(Raw),
    /// No dispatcher of `"session/prompt"` calls a fn of the crate; the fns a `prompt` pin
    /// could name (each writes session updates, and has a session id and a writer).
    NoDispatcher(Vec<Candidate>),
}

/// The fns a `prompt` pin makes a working prompt handler (other than `not`): they write
/// `session/update` messages (or call what does), read a session id at their entry, and
/// reach a write the card can go through.
fn pinnable(
    ix: &Index,
    cx: &Context,
    writers: &std::collections::HashSet<At>,
    carriers: &[follow::Carrier],
    not: Option<At>,
) -> Vec<Candidate> {
    let mut out: Vec<(At, Candidate)> = writers
        .iter()
        .copied()
        .filter(|f| Some(*f) != not)
        .filter(|f| dispatch::session_key(ix, *f).is_some())
        .filter(|f| {
            carriers
                .iter()
                .any(|c| writer::writer_of(ix, *f, c, cx.json).is_ok())
        })
        .map(|f| (f, candidate(ix, f)))
        .collect();
    out.sort_by(|a, b| {
        (&a.1.location.file, a.1.location.line).cmp(&(&b.1.location.file, b.1.location.line))
    });
    out.into_iter().map(|(_, c)| c).collect()
}

fn handler(
    decisions: &crate::lang::survey::Decisions,
    ix: &Index,
    cx: &Context,
    h: At,
    carriers: &[follow::Carrier],
) -> Result<Handler> {
    let info = ix.fn_info(h);
    let rel = ix.files[h.0].file.rel.clone();
    let line = ix.line(h);
    let name = info.qualified();
    let key = dispatch::session_key(ix, h).ok_or_else(|| Error::NotFound {
        site: "session id of the prompt handler",
        detail: format!(
            "{name} ({rel}:{line}) handles `session/prompt`, but reads no session id acp-patch can name at its entry: no `X[\"sessionId\"]`, `X.get(\"sessionId\")` or `X.session_id` of a parameter, no parameter that is a `serde_json::Value`, has a `session_id` field or is a string named for the session"
        ),
        pin_key: "rust.prompt",
        candidates: Vec::new(),
    })?;
    let mut usable: Vec<writer::Writer> = Vec::new();
    let mut unfit: Vec<String> = Vec::new();
    for c in carriers {
        match writer::writer_of(ix, h, c, cx.json) {
            Ok(w) => {
                if !usable
                    .iter()
                    .any(|u| u.closure == w.closure && u.candidate.name == w.candidate.name)
                {
                    usable.push(w);
                }
            }
            Err(why) => unfit.push(format!(
                "{}:{}: {why}",
                ix.files[c.file].file.rel,
                ix.line((c.file, c.call))
            )),
        }
    }
    usable.sort_by(|a, b| {
        (
            a.rank,
            &a.candidate.location.file,
            a.candidate.location.line,
        )
            .cmp(&(
                b.rank,
                &b.candidate.location.file,
                b.candidate.location.line,
            ))
    });
    // one writer per fn (its first write), the handler's own first, then its type's, its file's
    let mut per_fn: Vec<writer::Writer> = Vec::new();
    for w in usable {
        if !per_fn.iter().any(|u| u.candidate.name == w.candidate.name) {
            per_fn.push(w);
        }
    }
    let listed: Vec<Candidate> = per_fn.iter().map(|w| w.candidate.clone()).collect();
    let w = match cx.pins.connection.as_deref().map(Pin::parse_rust) {
        Some(pin) => {
            let hit = per_fn.into_iter().find(|w| pin.takes(&w.candidate));
            hit.ok_or_else(|| Error::NotFound {
                site: "connection for the think card",
                detail: format!(
                    "the pin `connection` names {file}{}, which is no fn whose write of `session/update` messages can write the card from the entry of {name} ({rel}:{line})",
                    pin.name_suffix(),
                    file = pin.file,
                ),
                pin_key: "rust.connection",
                candidates: listed.clone(),
            })?
        }
        None => per_fn.into_iter().next().ok_or_else(|| Error::NotFound {
            site: "connection for the think card",
            detail: format!(
                "{name} ({rel}:{line}) handles `session/prompt`, but none of the agent's writes of `session/update` messages can write the card from its entry (a write in its file whose names it has there and that does not await): {}",
                if unfit.is_empty() {
                    "none found".to_string()
                } else {
                    unfit.join("; ")
                }
            ),
            pin_key: "rust.prompt",
            candidates: Vec::new(),
        })?,
    };
    let all: Vec<&Candidate> = listed.iter().collect();
    decisions.record(
        "connection for the think card",
        "rust.connection",
        &all,
        Some(&w.candidate),
    );
    Ok(Handler {
        file: h.0,
        name,
        line,
        span: ix.node(h).span.clone(),
        key,
        params: info.params.iter().map(|p| p.name.clone()).collect(),
        writer: w.closure,
        writer_reads: w.reads,
        writer_from: w.candidate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::SourceFile;

    /// A crate of `(path under src/, text)` files, located.
    fn located(sources: &[(&str, &str)], pins: RustPins) -> Result<Located> {
        let root = std::path::PathBuf::from("/nonexistent/agent");
        let files: Vec<Parsed> = sources
            .iter()
            .map(|(rel, text)| {
                let rel = format!("src/{rel}");
                let file = SourceFile::from_text(root.join(&rel), rel, text.to_string());
                let ast = syn::parse_file(text).ok();
                Parsed {
                    file,
                    ast,
                    error: None,
                }
            })
            .collect();
        let doc: toml_edit::DocumentMut = "[package]\nname = \"agent\"\n".parse().unwrap();
        let modules = Modules::load(&files, &root, &doc);
        let collected = super::super::syntax::collect(&files, &Default::default());
        let owned = |f: usize| modules.root_of(f).is_some();
        let path_of = |_: usize| "crate::acp_progress".to_string();
        let cx = Context {
            collected: &collected,
            modules: &modules,
            owned: &owned,
            pins: &pins,
            json: "serde_json",
            serde: true,
            path_of: &path_of,
        };
        locate(&Default::default(), &files, &cx)
    }

    fn agent(sources: &[(&str, &str)]) -> Raw {
        match located(sources, RustPins::default()) {
            Ok(Located::Agent(raw)) => raw,
            Ok(Located::NoDispatcher(c)) => panic!("no dispatcher; pinnable: {c:?}"),
            Err(e) => panic!("{e}"),
        }
    }

    const MAP_MAIN: &str = r#"
mod proto;
use std::collections::HashMap;
use serde_json::{json, Value};
type Handler = fn(&Value) -> Value;
fn main() {
    let mut handlers: HashMap<&str, Handler> = HashMap::new();
    handlers.insert("session/prompt", on_prompt);
    let _ = handlers;
}
fn on_prompt(params: &Value) -> Value {
    let sid = params["sessionId"].as_str().unwrap_or_default();
    let note = proto::Notification { jsonrpc: "2.0", method: proto::UPDATE, params: json!({"sessionId": sid}) };
    proto::send(&note);
    json!({"stopReason": "end_turn"})
}
"#;
    const MAP_PROTO: &str = r#"
use serde::Serialize;
pub const UPDATE: &str = "session/update";
#[derive(Serialize)]
pub struct Notification { pub jsonrpc: &'static str, pub method: &'static str, pub params: serde_json::Value }
pub fn send<T: Serialize>(message: &T) {
    println!("{}", serde_json::to_string(message).unwrap());
}
"#;

    #[test]
    fn a_handler_map_and_messages_of_the_agents_own_serialize_type() {
        let raw = agent(&[("main.rs", MAP_MAIN), ("proto.rs", MAP_PROTO)]);
        let [h] = raw.handlers.as_slice() else {
            panic!("one handler")
        };
        assert_eq!(h.name, "on_prompt");
        assert_eq!(h.key.expr, "&params[\"sessionId\"]");
        // the card goes out as the handler's own write does, a `Value` where its struct went
        assert_eq!(
            h.writer,
            "move |acp_message: serde_json::Value| { let note = acp_message; proto::send(&note); }"
        );
        let [s] = raw.sites.as_slice() else {
            panic!("one write")
        };
        assert_eq!(
            s.wrapped,
            "for message in &crate::acp_progress::wire_any(message) { println!(\"{}\", serde_json::to_string(message).unwrap()); }"
        );
        assert_eq!(
            s.restore,
            "println!(\"{}\", serde_json::to_string(message).unwrap());"
        );
    }

    #[test]
    fn a_message_returned_by_a_builder_and_written_inline_is_moved_into_the_loop() {
        let main = r#"
use serde_json::{json, Value};
use std::io::Write;
const PROMPT: &str = "session/prompt";
fn main() {
    let req: Value = serde_json::from_str("{}").unwrap();
    let method = req["method"].as_str().unwrap_or("");
    if method == "initialize" {
    } else if method == PROMPT {
        handle(&req["params"]);
    }
}
fn update(sid: &str, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {"text": text}}})
}
fn handle(params: &Value) {
    let sid = params.get("sessionId").and_then(Value::as_str).unwrap_or_default();
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{}", update(sid, "hi"));
}
"#;
        let raw = agent(&[("main.rs", main)]);
        assert_eq!(raw.handlers[0].name, "handle");
        assert_eq!(raw.handlers[0].key.expr, "&params.get(\"sessionId\")");
        let [s] = raw.sites.as_slice() else {
            panic!("one write")
        };
        assert_eq!(
            s.wrapped,
            "for acp_message in crate::acp_progress::wire(update(sid, \"hi\")) { let _ = writeln!(out, \"{}\", acp_message); }"
        );
        // the writer a local made of nothing local: made again in the card's closure
        assert_eq!(
            raw.handlers[0].writer,
            "move |acp_message: serde_json::Value| { let mut out = std::io::stdout(); let _ = writeln!(out, \"{}\", acp_message); }"
        );
        // one the handler cannot make (a parameter of a fn it does not call) is refused,
        // naming the write and why
        let unreachable = main
            .replace("let mut out = std::io::stdout();\n", "")
            .replace(
                "fn handle(params: &Value) {",
                "fn handle(params: &Value, out: &mut std::io::Stdout) {",
            )
            .replace(
                "handle(&req[\"params\"]);",
                "handle(&req[\"params\"], &mut std::io::stdout());",
            );
        let err = match located(&[("main.rs", unreachable.as_str())], RustPins::default()) {
            Err(e) => e.to_string(),
            Ok(_) => String::new(),
        };
        assert!(
            err.contains("src/main.rs:18: it reads `out: &mutstd::io::Stdout`, which acp-patch cannot clone into it"),
            "{err}"
        );
    }

    #[test]
    fn no_dispatcher_names_the_fns_a_prompt_pin_makes_handlers_and_the_pin_works() {
        let main = MAP_MAIN.replace("handlers.insert(\"session/prompt\", on_prompt);", "");
        let sources = [("main.rs", main.as_str()), ("proto.rs", MAP_PROTO)];
        match located(&sources, RustPins::default()) {
            Ok(Located::NoDispatcher(c)) => {
                assert_eq!(c.len(), 1, "{c:?}");
                assert_eq!(
                    (c[0].location.file.as_str(), c[0].name.as_str()),
                    ("src/main.rs", "on_prompt")
                );
            }
            _ => panic!("expected no dispatcher"),
        }
        let pins = RustPins {
            prompt: Some("src/main.rs:on_prompt".into()),
            ..RustPins::default()
        };
        let Ok(Located::Agent(raw)) = located(&sources, pins) else {
            panic!("the pin makes it an agent")
        };
        assert_eq!(raw.handlers[0].name, "on_prompt");
    }
}
