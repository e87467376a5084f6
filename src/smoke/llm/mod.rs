//! A scripted LLM endpoint on 127.0.0.1 (a small HTTP/1.1 server on tokio) that speaks three
//! dialects, chosen by the path the agent calls:
//!
//! | path (the `/v1` prefix is optional) | dialect |
//! |---|---|
//! | `POST /v1/chat/completions` | OpenAI chat completions ([`openai_chat`]) |
//! | `POST /v1/responses` | OpenAI Responses ([`responses`]) |
//! | `POST /v1/messages` (`/count_tokens`) | Anthropic Messages ([`anthropic`]) |
//! | `GET /v1/models` | a one-model list |
//!
//! Each plays the same [`Script`] for the requests of the turn (those that carry the prompt):
//! the wait, reasoning, text, trailing reasoning, text — or, when the script asks for a tool
//! the request offers, reasoning and the tool call, then after the tool result a second wait
//! and the answer. Requests without the prompt (titles, quota probes) get a short answer at
//! once. Anything else is a 404 naming the routes, and every request is listed in the report.

pub mod answer;
pub mod anthropic;
pub mod http;
pub mod openai_chat;
pub mod responses;
mod serve;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use answer::{Answer, Ids, Part, Pause, RequestFacts, Stream};
use http::Request;

/// Marks a session's prompt when several run at once (`[smoke session 2]`); the answer of
/// that session carries [`session_tag`].
pub const SESSION_MARKER: &str = "[smoke session ";

/// The tag the answers of session `k` end with.
pub fn session_tag(k: u32) -> String {
    format!(" [session {k}]")
}

/// The routes, as the 404 lists them.
pub const ROUTES: &str = "POST /v1/chat/completions, POST /v1/responses, POST /v1/messages, POST /v1/messages/count_tokens, GET /v1/models";

/// What the scripted LLM answers (`[smoke.script]` in acp-patch.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Script {
    /// Seconds before the first delta (or before the whole non-streaming answer).
    pub delay_s: f64,
    /// Seconds before the first delta of the answer that follows a tool result.
    pub after_tool_delay_s: f64,
    /// Milliseconds between deltas.
    pub chunk_delay_ms: u64,
    /// Reasoning deltas.
    pub reasoning: Vec<String>,
    /// Answer deltas.
    pub answer: Vec<String>,
    /// Reasoning deltas after the first answer text.
    pub trailing_reasoning: Vec<String>,
    /// Answer deltas after the trailing reasoning.
    pub answer_after: Vec<String>,
    /// Model id reported.
    pub model: String,
    /// When set, the first model call of the turn asks for this tool (when the request
    /// offers a tool of that name); the call after its result answers.
    pub tool_call: Option<ScriptToolCall>,
    /// When set, the model calls of the turn fail with this error.
    pub error: Option<ScriptError>,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            delay_s: 2.5,
            after_tool_delay_s: 2.0,
            chunk_delay_ms: 40,
            reasoning: vec![
                "The user wants a short answer. ".into(),
                "Let me think it through.".into(),
            ],
            answer: vec!["Here is ".into(), "the answer".into()],
            trailing_reasoning: vec![" (double-checking the answer)".into()],
            answer_after: vec![": 42.".into()],
            model: "acp-patch-smoke".into(),
            tool_call: None,
            error: None,
        }
    }
}

impl Script {
    /// Fills placeholders in the tool call's arguments.
    pub fn filled(mut self, fill: impl Fn(&str) -> String) -> Self {
        if let Some(tc) = &mut self.tool_call {
            tc.arguments = fill(&tc.arguments);
        }
        self
    }

    /// The answer text a client should show for a final answer (untagged).
    pub fn answer_text(&self) -> String {
        self.answer
            .iter()
            .chain(&self.answer_after)
            .cloned()
            .collect()
    }

    /// Upper bound of one answer's duration after its wait.
    pub fn stream_duration(&self) -> Duration {
        let n = self.reasoning.len()
            + self.answer.len()
            + self.trailing_reasoning.len()
            + self.answer_after.len()
            + 2;
        Duration::from_millis(self.chunk_delay_ms * n as u64)
    }
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptToolCall {
    /// The call id (with several sessions, `_s<k>` is appended for session k).
    pub id: String,
    /// A tool the agent offers the model.
    pub name: String,
    /// The arguments, as the JSON text the model would stream (placeholders allowed, e.g.
    /// `{workspace}`).
    pub arguments: String,
}

impl Default for ScriptToolCall {
    fn default() -> Self {
        Self {
            id: "call_smoke_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"{workspace}/notes.txt"}"#.into(),
        }
    }
}

/// A scripted failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptError {
    /// HTTP status (when not mid-stream).
    pub status: u16,
    pub message: String,
    /// Streaming only: send the reasoning deltas, then the dialect's error event, and close.
    pub mid_stream: bool,
}

impl Default for ScriptError {
    fn default() -> Self {
        Self {
            status: 500,
            message: "scripted failure".into(),
            mid_stream: false,
        }
    }
}

/// What the endpoint needs besides the script.
#[derive(Debug, Clone, Default)]
pub struct ServerConfig {
    pub script: Script,
    /// The prompt text: requests that carry it are the turn's model calls.
    pub prompt: String,
    /// A token in the workspace file the tool reads: a tool result that carries it proves
    /// the agent really ran the tool.
    pub seed_token: Option<String>,
}

/// One request the endpoint served.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmRequest {
    pub method: String,
    pub path: String,
    /// `openai-chat`, `openai-responses`, `anthropic-messages` (none for other routes).
    pub dialect: Option<String>,
    /// `turn` (a model call of the turn), `after_tool` (one with a tool result), `side`
    /// (without the prompt: answered at once), `count_tokens`, `models`, `unknown`.
    pub kind: String,
    pub stream: bool,
    pub status: u16,
    /// Messages (input items) in the request.
    pub messages: usize,
    pub model: Option<String>,
    /// Tools the request offered.
    pub tools: Vec<String>,
    /// The session whose prompt the request carries (several sessions only).
    pub session: Option<u32>,
    /// What was answered, in words.
    pub answer: String,
    /// `x-api-key` or `bearer` when the request authenticated.
    pub auth: Option<String>,
    /// Whether the request's tool result carries the workspace file's token.
    pub carries_seed: Option<bool>,
    /// The start of the last tool result the request carries (what the tool returned).
    pub tool_result: Option<String>,
    /// Milliseconds since the server's epoch (converted to prompt time in the report).
    pub t_ms: f64,
    /// When the answer was complete (or the client went away).
    pub done_ms: Option<f64>,
    /// The client closed the connection before the answer was complete.
    pub closed_early: bool,
    /// The answer text written to the client (a streamed answer's text deltas as they went
    /// out; a whole answer once written): what a client should show, in order, once.
    pub text_sent: String,
}

/// The running endpoint; stops when dropped.
pub struct LlmServer {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<LlmRequest>>>,
    task: JoinHandle<()>,
}

impl LlmServer {
    /// Binds 127.0.0.1 on a free port and serves `script`. Request times count from `epoch`.
    pub async fn start(script: Script, epoch: Instant) -> std::io::Result<Self> {
        Self::start_with(
            ServerConfig {
                script,
                ..ServerConfig::default()
            },
            epoch,
        )
        .await
    }

    pub async fn start_with(cfg: ServerConfig, epoch: Instant) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let cfg = Arc::new(cfg);
        let task = tokio::spawn({
            let log = log.clone();
            async move {
                let mut n = 0u64;
                loop {
                    let Ok((sock, _)) = listener.accept().await else {
                        continue;
                    };
                    n += 1;
                    let (cfg, log) = (cfg.clone(), log.clone());
                    tokio::spawn(async move {
                        let _ = serve::serve(sock, &cfg, &log, epoch, n).await;
                    });
                }
            }
        });
        Ok(Self { addr, log, task })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.root_url())
    }

    /// `http://127.0.0.1:PORT` (clients that append `/v1/...` themselves, e.g. Anthropic's).
    pub fn root_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.addr.port())
    }

    /// The requests served so far.
    pub fn requests(&self) -> Vec<LlmRequest> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for LlmServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The three dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Chat,
    Responses,
    Anthropic,
}

impl Dialect {
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Chat => openai_chat::NAME,
            Dialect::Responses => responses::NAME,
            Dialect::Anthropic => anthropic::NAME,
        }
    }
    fn facts(self, body: &Value) -> RequestFacts {
        match self {
            Dialect::Chat => openai_chat::facts(body),
            Dialect::Responses => responses::facts(body),
            Dialect::Anthropic => anthropic::facts(body),
        }
    }
    fn stream(self, a: &Answer, ids: &Ids) -> Stream {
        match self {
            Dialect::Chat => openai_chat::stream(a, ids),
            Dialect::Responses => responses::stream(a, ids),
            Dialect::Anthropic => anthropic::stream(a, ids),
        }
    }
    fn body(self, a: &Answer, ids: &Ids) -> Value {
        match self {
            Dialect::Chat => openai_chat::body(a, ids),
            Dialect::Responses => responses::body(a, ids),
            Dialect::Anthropic => anthropic::body(a, ids),
        }
    }
    fn error_body(self, status: u16, message: &str) -> Value {
        match self {
            Dialect::Chat => openai_chat::error_body(status, message),
            Dialect::Responses => responses::error_body(status, message),
            Dialect::Anthropic => anthropic::error_body(status, message),
        }
    }
    fn stream_error(self, status: u16, message: &str) -> String {
        match self {
            Dialect::Chat => openai_chat::stream_error(status, message),
            Dialect::Responses => responses::stream_error(status, message),
            Dialect::Anthropic => anthropic::stream_error(status, message),
        }
    }
}

/// What the script answers one model call, and after how long.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub kind: &'static str,
    pub session: Option<u32>,
    pub wait: Duration,
    pub answer: Answer,
    /// The scripted error applies (turn calls only).
    pub error: Option<ScriptError>,
    /// A note for the report (e.g. the scripted tool is not offered).
    pub note: Option<String>,
}

/// Decides the reply to a model call from what it carries.
pub fn plan_reply(cfg: &ServerConfig, body: &Value, facts: &RequestFacts) -> Reply {
    let s = &cfg.script;
    let model = s.model.clone();
    let is_turn = !cfg.prompt.is_empty() && answer::any_string_contains(body, &cfg.prompt);
    if !is_turn {
        return Reply {
            kind: "side",
            session: None,
            wait: Duration::ZERO,
            answer: Answer {
                parts: vec![Part::Text("OK".into())],
                model,
            },
            error: None,
            note: None,
        };
    }
    let session = answer::find_number_after(body, SESSION_MARKER);
    let after_tool = facts.tool_results > 0;
    let mut note = None;
    let mut parts: Vec<Part> = s.reasoning.iter().cloned().map(Part::Reasoning).collect();
    let wants_tool = match (&s.tool_call, after_tool) {
        (Some(tc), false) => {
            if facts.tools.iter().any(|t| t == &tc.name) {
                Some(tc)
            } else {
                note = Some(format!(
                    "the script asks for tool {:?}, which the request does not offer (offered: {})",
                    tc.name,
                    if facts.tools.is_empty() {
                        "none".to_string()
                    } else {
                        facts.tools.join(", ")
                    }
                ));
                None
            }
        }
        _ => None,
    };
    if let Some(tc) = wants_tool {
        parts.push(Part::Tool {
            id: match session {
                Some(k) => format!("{}_s{k}", tc.id),
                None => tc.id.clone(),
            },
            name: tc.name.clone(),
            arguments: tc.arguments.clone(),
        });
    } else {
        parts.extend(s.answer.iter().cloned().map(Part::Text));
        parts.extend(s.trailing_reasoning.iter().cloned().map(Part::Reasoning));
        parts.extend(s.answer_after.iter().cloned().map(Part::Text));
        if let Some(k) = session {
            tag_last(&mut parts, |p| matches!(p, Part::Text(_)), &session_tag(k));
            tag_last(
                &mut parts,
                |p| matches!(p, Part::Reasoning(_)),
                &session_tag(k),
            );
        }
    }
    Reply {
        kind: if after_tool { "after_tool" } else { "turn" },
        session,
        wait: Duration::from_secs_f64(
            if after_tool {
                s.after_tool_delay_s
            } else {
                s.delay_s
            }
            .max(0.0),
        ),
        answer: Answer { parts, model },
        error: s.error.clone(),
        note,
    }
}

fn tag_last(parts: &mut [Part], is: impl Fn(&Part) -> bool, tag: &str) {
    if let Some(Part::Text(t) | Part::Reasoning(t)) = parts.iter_mut().rev().find(|p| is(p)) {
        t.push_str(tag);
    }
}

fn describe(a: &Answer) -> String {
    let mut words: Vec<String> = Vec::new();
    for b in a.blocks() {
        let w = match b {
            answer::Block::Reasoning(_) => "reasoning".to_string(),
            answer::Block::Text(_) => "text".to_string(),
            answer::Block::Tool { name, .. } => format!("tool call {name}"),
        };
        if words.last() != Some(&w) {
            words.push(w);
        }
    }
    words.join(" + ")
}

#[cfg(test)]
mod tests;
