//! A scripted OpenAI-compatible LLM endpoint on 127.0.0.1 (a small HTTP/1.1 server on tokio).
//!
//! Routes: `POST /v1/chat/completions` (streaming SSE or one JSON), `GET /v1/models`
//! (the `/v1` prefix is optional). Every response closes the connection.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const MAX_HEADER: usize = 64 * 1024;
const MAX_BODY: usize = 32 * 1024 * 1024;

/// What the scripted LLM answers (`[smoke.script]` in acp-patch.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Script {
    /// Seconds before the first delta (or before the whole non-streaming answer).
    pub delay_s: f64,
    /// Milliseconds between deltas.
    pub chunk_delay_ms: u64,
    /// Reasoning deltas (sent in both `reasoning_content` and `reasoning`).
    pub reasoning: Vec<String>,
    /// Answer deltas.
    pub answer: Vec<String>,
    /// Reasoning deltas after the first answer text.
    pub trailing_reasoning: Vec<String>,
    /// Answer deltas after the trailing reasoning.
    pub answer_after: Vec<String>,
    /// Model id reported.
    pub model: String,
    /// When set, the first request (no `tool` message yet) ends with this tool call.
    pub tool_call: Option<ScriptToolCall>,
    /// When set, requests fail with this error.
    pub error: Option<ScriptError>,
}

impl Default for Script {
    fn default() -> Self {
        Self {
            delay_s: 2.5,
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

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScriptToolCall {
    pub id: String,
    pub name: String,
    /// The arguments, as the JSON text the model would stream.
    pub arguments: String,
}

impl Default for ScriptToolCall {
    fn default() -> Self {
        Self {
            id: "call_smoke_1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"README.md"}"#.into(),
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
    /// Streaming only: send the reasoning deltas, then an SSE error event, and close.
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

/// One request the endpoint served.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmRequest {
    pub method: String,
    pub path: String,
    pub stream: bool,
    pub status: u16,
    /// Number of chat messages in the request.
    pub messages: usize,
    /// Milliseconds since the server's epoch (converted to prompt time in the report).
    pub t_ms: f64,
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
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(script);
        let task = tokio::spawn({
            let log = log.clone();
            async move {
                let mut n = 0u64;
                loop {
                    let Ok((sock, _)) = listener.accept().await else {
                        continue;
                    };
                    n += 1;
                    let (script, log) = (script.clone(), log.clone());
                    tokio::spawn(async move {
                        let _ = serve(sock, &script, &log, epoch, n).await;
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
        format!("http://127.0.0.1:{}/v1", self.addr.port())
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

struct Request {
    method: String,
    path: String,
    body: Vec<u8>,
}

async fn read_request(sock: &mut TcpStream) -> std::io::Result<Option<Request>> {
    let mut buf = Vec::with_capacity(4096);
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        if buf.len() > MAX_HEADER {
            return Ok(None);
        }
        let mut chunk = [0u8; 4096];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split_whitespace();
    let method = first.next().unwrap_or_default().to_string();
    let path = first.next().unwrap_or_default().to_string();
    let mut len = 0usize;
    for l in lines {
        if let Some((k, v)) = l.split_once(':')
            && k.trim().eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    if len > MAX_BODY {
        return Ok(None);
    }
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let mut chunk = vec![0u8; (len - body.len()).min(65536)];
        let n = sock.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(len);
    Ok(Some(Request { method, path, body }))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

async fn write_json(sock: &mut TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let body = body.to_string();
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    sock.write_all(head.as_bytes()).await?;
    sock.write_all(body.as_bytes()).await?;
    sock.flush().await?;
    let _ = sock.shutdown().await;
    Ok(())
}

fn error_body(message: &str, kind: &str, code: Value) -> Value {
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// One SSE event: `data: {json}\n\n`.
pub fn sse_event(v: &Value) -> String {
    format!("data: {v}\n\n")
}

/// The deltas of one streamed answer, in order (without the final `finish_reason` chunk).
pub fn stream_deltas(script: &Script, tool_phase: bool) -> (Vec<Value>, &'static str) {
    let mut deltas: Vec<Value> = Vec::new();
    let reasoning = |t: &String| json!({"reasoning_content": t, "reasoning": t});
    deltas.extend(script.reasoning.iter().map(reasoning));
    if tool_phase && let Some(tc) = &script.tool_call {
        deltas.push(
            json!({"tool_calls": [{"index": 0, "id": tc.id, "type": "function",
            "function": {"name": tc.name, "arguments": ""}}]}),
        );
        deltas.push(json!({"tool_calls": [{"index": 0, "function": {"arguments": tc.arguments}}]}));
        return (with_role(deltas), "tool_calls");
    }
    deltas.extend(script.answer.iter().map(|t| json!({"content": t})));
    deltas.extend(script.trailing_reasoning.iter().map(reasoning));
    deltas.extend(script.answer_after.iter().map(|t| json!({"content": t})));
    (with_role(deltas), "stop")
}

fn with_role(mut deltas: Vec<Value>) -> Vec<Value> {
    if let Some(Value::Object(first)) = deltas.first_mut() {
        first.insert("role".into(), json!("assistant"));
    }
    deltas
}

/// The non-streaming `chat.completion` body.
pub fn completion_body(script: &Script, tool_phase: bool, id: &str, created: u64) -> Value {
    let reasoning: String = script
        .reasoning
        .iter()
        .chain(if tool_phase {
            [].iter()
        } else {
            script.trailing_reasoning.iter()
        })
        .cloned()
        .collect();
    let mut message =
        json!({"role": "assistant", "reasoning_content": reasoning, "reasoning": reasoning});
    let finish = match (&script.tool_call, tool_phase) {
        (Some(tc), true) => {
            message["content"] = Value::Null;
            message["tool_calls"] = json!([{"id": tc.id, "type": "function",
                "function": {"name": tc.name, "arguments": tc.arguments}}]);
            "tool_calls"
        }
        _ => {
            let content: String = script
                .answer
                .iter()
                .chain(&script.answer_after)
                .cloned()
                .collect();
            message["content"] = json!(content);
            "stop"
        }
    };
    json!({
        "id": id, "object": "chat.completion", "created": created, "model": script.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}
    })
}

async fn serve(
    mut sock: TcpStream,
    script: &Script,
    log: &Mutex<Vec<LlmRequest>>,
    epoch: Instant,
    n: u64,
) -> std::io::Result<()> {
    let Some(req) = read_request(&mut sock).await? else {
        return write_json(
            &mut sock,
            400,
            &error_body("bad request", "invalid_request_error", Value::Null),
        )
        .await;
    };
    let t_ms = epoch.elapsed().as_secs_f64() * 1000.0;
    let path = req.path.split('?').next().unwrap_or_default().to_string();
    let route = path.strip_prefix("/v1").unwrap_or(&path).to_string();
    let mut entry = LlmRequest {
        method: req.method.clone(),
        path: path.clone(),
        stream: false,
        status: 200,
        messages: 0,
        t_ms,
    };
    let record = |e: LlmRequest| {
        if let Ok(mut l) = log.lock() {
            l.push(e);
        }
    };
    match (req.method.as_str(), route.as_str()) {
        ("GET", "/models") => {
            record(entry);
            let body = json!({"object": "list", "data": [
                {"id": script.model, "object": "model", "created": 0, "owned_by": "acp-patch"}]});
            write_json(&mut sock, 200, &body).await
        }
        ("POST", "/chat/completions") => {
            let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
                entry.status = 400;
                record(entry);
                return write_json(
                    &mut sock,
                    400,
                    &error_body(
                        "request body is not JSON",
                        "invalid_request_error",
                        Value::Null,
                    ),
                )
                .await;
            };
            let stream = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
            let messages = body.get("messages").and_then(Value::as_array);
            let tool_phase = script.tool_call.is_some()
                && !messages
                    .map(|m| {
                        m.iter()
                            .any(|x| x.get("role").and_then(Value::as_str) == Some("tool"))
                    })
                    .unwrap_or(false);
            entry.stream = stream;
            entry.messages = messages.map(Vec::len).unwrap_or(0);
            let err = script.error.clone();
            if let Some(e) = &err
                && !(stream && e.mid_stream)
            {
                entry.status = e.status;
            }
            record(entry);
            tokio::time::sleep(Duration::from_secs_f64(script.delay_s.max(0.0))).await;
            if let Some(e) = &err
                && !(stream && e.mid_stream)
            {
                return write_json(
                    &mut sock,
                    e.status,
                    &error_body(&e.message, "server_error", json!(e.status)),
                )
                .await;
            }
            let id = format!("chatcmpl-smoke-{n}");
            let created = now_unix();
            if !stream {
                return write_json(
                    &mut sock,
                    200,
                    &completion_body(script, tool_phase, &id, created),
                )
                .await;
            }
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";
            sock.write_all(head.as_bytes()).await?;
            let chunk = |delta: Value, finish: Option<&str>| {
                json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": script.model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            };
            let (mut deltas, finish) = stream_deltas(script, tool_phase);
            if let Some(e) = &err {
                // mid-stream failure: the reasoning, then an error event, no [DONE]
                deltas.truncate(script.reasoning.len());
                for (i, d) in deltas.into_iter().enumerate() {
                    if i > 0 {
                        tokio::time::sleep(Duration::from_millis(script.chunk_delay_ms)).await;
                    }
                    sock.write_all(sse_event(&chunk(d, None)).as_bytes())
                        .await?;
                    sock.flush().await?;
                }
                let ev = error_body(&e.message, "server_error", json!(e.status));
                sock.write_all(sse_event(&ev).as_bytes()).await?;
                sock.flush().await?;
                let _ = sock.shutdown().await;
                return Ok(());
            }
            for (i, d) in deltas.into_iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(Duration::from_millis(script.chunk_delay_ms)).await;
                }
                sock.write_all(sse_event(&chunk(d, None)).as_bytes())
                    .await?;
                sock.flush().await?;
            }
            sock.write_all(sse_event(&chunk(json!({}), Some(finish))).as_bytes())
                .await?;
            sock.write_all(b"data: [DONE]\n\n").await?;
            sock.flush().await?;
            let _ = sock.shutdown().await;
            Ok(())
        }
        (_, "/models") | (_, "/chat/completions") => {
            entry.status = 405;
            record(entry);
            write_json(
                &mut sock,
                405,
                &error_body("method not allowed", "invalid_request_error", Value::Null),
            )
            .await
        }
        _ => {
            entry.status = 404;
            record(entry);
            write_json(
                &mut sock,
                404,
                &error_body(
                    &format!("no route {path}"),
                    "invalid_request_error",
                    Value::Null,
                ),
            )
            .await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn raw_request(port: u16, req: String) -> (String, String) {
        let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        let out = String::from_utf8(out).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        (head.to_string(), body.to_string())
    }

    fn post(body: &str) -> String {
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    fn fast() -> Script {
        Script {
            delay_s: 0.05,
            chunk_delay_ms: 1,
            ..Script::default()
        }
    }

    #[tokio::test]
    async fn streaming_sse_framing_is_exact() {
        let srv = LlmServer::start(fast(), Instant::now()).await.unwrap();
        let t0 = Instant::now();
        let (head, body) = raw_request(
            srv.port(),
            post(r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#),
        )
        .await;
        assert!(t0.elapsed() >= Duration::from_millis(50));
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(head.contains("Content-Type: text/event-stream"));
        assert!(body.ends_with("\n\ndata: [DONE]\n\n"), "{body:?}");
        let events: Vec<&str> = body.split_terminator("\n\n").collect();
        // every event is exactly one `data: ` line
        for e in &events {
            assert!(e.starts_with("data: "), "{e:?}");
            assert!(!e.contains('\n'), "{e:?}");
        }
        assert_eq!(*events.last().unwrap(), "data: [DONE]");
        let chunks: Vec<Value> = events[..events.len() - 1]
            .iter()
            .map(|e| serde_json::from_str(&e["data: ".len()..]).unwrap())
            .collect();
        let s = Script::default();
        let n_deltas =
            s.reasoning.len() + s.answer.len() + s.trailing_reasoning.len() + s.answer_after.len();
        assert_eq!(chunks.len(), n_deltas + 1);
        for c in &chunks {
            assert_eq!(c["object"], "chat.completion.chunk");
            assert_eq!(c["id"], chunks[0]["id"]);
        }
        let d0 = &chunks[0]["choices"][0]["delta"];
        assert_eq!(d0["role"], "assistant");
        assert_eq!(d0["reasoning_content"], s.reasoning[0]);
        assert_eq!(d0["reasoning"], s.reasoning[0]);
        let kinds: Vec<&str> = chunks[..n_deltas]
            .iter()
            .map(|c| {
                let d = &c["choices"][0]["delta"];
                if d.get("content").is_some() { "a" } else { "r" }
            })
            .collect();
        assert_eq!(kinds, vec!["r", "r", "a", "a", "r", "a"]);
        let last = chunks.last().unwrap();
        assert_eq!(last["choices"][0]["finish_reason"], "stop");
        assert_eq!(last["choices"][0]["delta"], json!({}));
        let reqs = srv.requests();
        assert_eq!(reqs.len(), 1);
        assert!(reqs[0].stream);
        assert_eq!(reqs[0].messages, 1);
    }

    #[tokio::test]
    async fn non_streaming_is_one_completion() {
        let srv = LlmServer::start(fast(), Instant::now()).await.unwrap();
        let (head, body) = raw_request(srv.port(), post(r#"{"model":"m","messages":[]}"#)).await;
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["object"], "chat.completion");
        let m = &v["choices"][0]["message"];
        assert_eq!(m["content"], "Here is the answer: 42.");
        assert_eq!(m["reasoning_content"], m["reasoning"]);
        assert!(m["reasoning"].as_str().unwrap().contains("double-checking"));
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
    }

    #[tokio::test]
    async fn models_and_404() {
        let srv = LlmServer::start(fast(), Instant::now()).await.unwrap();
        let (head, body) = raw_request(
            srv.port(),
            "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n".into(),
        )
        .await;
        assert!(head.starts_with("HTTP/1.1 200 OK"));
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["object"], "list");
        assert_eq!(v["data"][0]["id"], "acp-patch-smoke");
        let (head, _) = raw_request(srv.port(), "GET /nope HTTP/1.1\r\n\r\n".into()).await;
        assert!(head.starts_with("HTTP/1.1 404"));
    }

    #[tokio::test]
    async fn tool_call_then_answer_and_errors() {
        let script = Script {
            tool_call: Some(ScriptToolCall::default()),
            ..fast()
        };
        let srv = LlmServer::start(script, Instant::now()).await.unwrap();
        let (_, body) = raw_request(
            srv.port(),
            post(r#"{"stream":true,"messages":[{"role":"user","content":"x"}]}"#),
        )
        .await;
        assert!(body.contains("\"tool_calls\""));
        assert!(body.contains("\"finish_reason\":\"tool_calls\""));
        assert!(body.ends_with("data: [DONE]\n\n"));
        let (_, body) = raw_request(
            srv.port(),
            post(r#"{"stream":true,"messages":[{"role":"user","content":"x"},{"role":"tool","tool_call_id":"call_smoke_1","content":"ok"}]}"#),
        )
        .await;
        assert!(!body.contains("\"tool_calls\""));
        assert!(body.contains("\"finish_reason\":\"stop\""));

        let script = Script {
            error: Some(ScriptError {
                status: 503,
                message: "overloaded".into(),
                mid_stream: false,
            }),
            ..fast()
        };
        let srv = LlmServer::start(script, Instant::now()).await.unwrap();
        let (head, body) = raw_request(srv.port(), post(r#"{"stream":true,"messages":[]}"#)).await;
        assert!(head.starts_with("HTTP/1.1 503"));
        assert!(body.contains("overloaded"));

        let script = Script {
            error: Some(ScriptError {
                mid_stream: true,
                ..ScriptError::default()
            }),
            ..fast()
        };
        let srv = LlmServer::start(script, Instant::now()).await.unwrap();
        let (head, body) = raw_request(srv.port(), post(r#"{"stream":true,"messages":[]}"#)).await;
        assert!(head.starts_with("HTTP/1.1 200"));
        assert!(body.contains("scripted failure"));
        assert!(!body.contains("[DONE]"));
    }
}
