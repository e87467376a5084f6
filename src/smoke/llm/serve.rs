//! One connection of the scripted endpoint: the request read, logged, and answered in the
//! dialect of its route (or an error the agent would get from a real provider).

use super::*;

struct Log<'a> {
    log: &'a Mutex<Vec<LlmRequest>>,
    index: usize,
    epoch: Instant,
}

impl<'a> Log<'a> {
    fn push(log: &'a Mutex<Vec<LlmRequest>>, epoch: Instant, e: LlmRequest) -> Self {
        let index = log
            .lock()
            .map(|mut l| {
                l.push(e);
                l.len() - 1
            })
            .unwrap_or(0);
        Self { log, index, epoch }
    }
    fn update(&self, f: impl FnOnce(&mut LlmRequest)) {
        if let Ok(mut l) = self.log.lock()
            && let Some(e) = l.get_mut(self.index)
        {
            f(e);
        }
    }
    fn done(&self, closed_early: bool) {
        let t = self.epoch.elapsed().as_secs_f64() * 1000.0;
        self.update(|e| {
            e.done_ms = Some(t);
            e.closed_early = closed_early;
        });
    }
}

fn auth_of(req: &Request) -> Option<String> {
    if req.header("x-api-key").is_some() {
        Some("x-api-key".into())
    } else if req
        .header("authorization")
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("bearer "))
    {
        Some("bearer".into())
    } else {
        None
    }
}

pub(super) async fn serve(
    mut sock: TcpStream,
    cfg: &ServerConfig,
    log: &Mutex<Vec<LlmRequest>>,
    epoch: Instant,
    n: u64,
) -> std::io::Result<()> {
    let Some(req) = http::read_request(&mut sock).await? else {
        return http::write_json(&mut sock, 400, &openai_chat::error_body(400, "bad request"))
            .await;
    };
    let t_ms = epoch.elapsed().as_secs_f64() * 1000.0;
    let route = req
        .path
        .strip_prefix("/v1")
        .unwrap_or(&req.path)
        .to_string();
    let mut entry = LlmRequest {
        method: req.method.clone(),
        path: req.path.clone(),
        dialect: None,
        kind: "unknown".into(),
        stream: false,
        status: 200,
        messages: 0,
        model: None,
        tools: Vec::new(),
        session: None,
        answer: String::new(),
        auth: auth_of(&req),
        carries_seed: None,
        tool_result: None,
        t_ms,
        done_ms: None,
        closed_early: false,
        text_sent: String::new(),
    };
    let dialect = match (req.method.as_str(), route.as_str()) {
        ("POST", "/chat/completions") => Some(Dialect::Chat),
        ("POST", "/responses") => Some(Dialect::Responses),
        ("POST", "/messages") => Some(Dialect::Anthropic),
        _ => None,
    };
    let Some(dialect) = dialect else {
        return serve_other(&mut sock, &req, &route, cfg, log, epoch, entry).await;
    };
    entry.dialect = Some(dialect.name().into());
    let Ok(body) = serde_json::from_slice::<Value>(&req.body) else {
        entry.status = 400;
        entry.answer = "400: the body is not JSON".into();
        Log::push(log, epoch, entry).done(false);
        return http::write_json(
            &mut sock,
            400,
            &dialect.error_body(400, "request body is not JSON"),
        )
        .await;
    };
    let facts = dialect.facts(&body);
    let reply = plan_reply(cfg, &body, &facts);
    entry.kind = reply.kind.into();
    entry.stream = facts.stream;
    entry.messages = facts.messages;
    entry.model = facts.model.clone();
    entry.tools = facts.tools.clone();
    entry.session = reply.session;
    if reply.kind == "after_tool"
        && let Some(token) = &cfg.seed_token
    {
        entry.carries_seed = Some(answer::any_string_contains(&body, token));
    }
    entry.tool_result = facts
        .last_tool_result
        .as_deref()
        .map(|t| crate::smoke::wire::truncate(t, 300));
    let err = reply.error.clone();
    entry.answer = match (&err, facts.stream) {
        (Some(e), true) if e.mid_stream => {
            format!("reasoning, then a mid-stream error: {}", e.message)
        }
        (Some(e), _) => {
            entry.status = e.status;
            format!("error {}: {}", e.status, e.message)
        }
        (None, _) => describe(&reply.answer),
    };
    if let Some(note) = &reply.note {
        entry.answer = format!("{} ({note})", entry.answer);
    }
    let log = Log::push(log, epoch, entry);
    let ids = Ids {
        n,
        created: now_unix(),
        include_usage: facts.include_usage,
    };
    if let Some(e) = &err
        && !(facts.stream && e.mid_stream)
    {
        if pause(&mut sock, reply.wait).await.is_err() {
            log.done(true);
            return Ok(());
        }
        let r = http::write_json(
            &mut sock,
            e.status,
            &dialect.error_body(e.status, &e.message),
        )
        .await;
        log.done(r.is_err());
        return r;
    }
    if !facts.stream {
        if pause(&mut sock, reply.wait).await.is_err() {
            log.done(true);
            return Ok(());
        }
        let r = http::write_json(&mut sock, 200, &dialect.body(&reply.answer, &ids)).await;
        if r.is_ok() {
            let text = reply.answer.text();
            log.update(|e| e.text_sent = text);
        }
        log.done(r.is_err());
        return r;
    }
    let mut answer = reply.answer.clone();
    if err.is_some() {
        // mid-stream failure: the reasoning, then an error event, no closing frames
        answer.parts.retain(|p| matches!(p, Part::Reasoning(_)));
    }
    let stream = dialect.stream(&answer, &ids);
    let chunk = Duration::from_millis(cfg.script.chunk_delay_ms);
    let result: std::io::Result<()> = async {
        http::write_sse_head(&mut sock).await?;
        for f in &stream.frames {
            match f.pause {
                Pause::None => {}
                Pause::Wait => pause(&mut sock, reply.wait).await?,
                Pause::Chunk => pause(&mut sock, chunk).await?,
            }
            sock.write_all(f.text.as_bytes()).await?;
            sock.flush().await?;
            if let Some(t) = &f.answer_text {
                log.update(|e| e.text_sent.push_str(t));
            }
        }
        if !stream.frames.iter().any(|f| f.pause == Pause::Wait) {
            pause(&mut sock, reply.wait).await?;
        }
        match &err {
            Some(e) => {
                sock.write_all(dialect.stream_error(e.status, &e.message).as_bytes())
                    .await?
            }
            None => {
                for f in &stream.closing {
                    sock.write_all(f.text.as_bytes()).await?;
                }
            }
        }
        sock.flush().await?;
        let _ = sock.shutdown().await;
        Ok(())
    }
    .await;
    log.done(result.is_err());
    result
}

/// Waits, unless the client hangs up first (a cancelled turn abandons its model call): then
/// an error, so the log says when it went away.
async fn pause(sock: &mut TcpStream, d: Duration) -> std::io::Result<()> {
    let hangup = async {
        let mut buf = [0u8; 1024];
        loop {
            match tokio::io::AsyncReadExt::read(sock, &mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {} // nothing more is expected on this connection: drop it
            }
        }
    };
    tokio::select! {
        _ = tokio::time::sleep(d) => Ok(()),
        _ = hangup => Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "the client closed the connection",
        )),
    }
}

/// Routes that are not model calls: the model list, token counts, and the 404.
async fn serve_other(
    sock: &mut TcpStream,
    req: &Request,
    route: &str,
    cfg: &ServerConfig,
    log: &Mutex<Vec<LlmRequest>>,
    epoch: Instant,
    mut entry: LlmRequest,
) -> std::io::Result<()> {
    let (status, body) = match (req.method.as_str(), route) {
        ("GET", "/models") => {
            entry.kind = "models".into();
            entry.answer = "model list".into();
            (200, openai_chat::models(&cfg.script.model))
        }
        ("POST", "/messages/count_tokens") => {
            entry.kind = "count_tokens".into();
            entry.dialect = Some(anthropic::NAME.into());
            let body = serde_json::from_slice::<Value>(&req.body).unwrap_or(Value::Null);
            entry.answer = "token count".into();
            (200, anthropic::count_tokens(&body))
        }
        (_, "/models" | "/chat/completions" | "/responses" | "/messages") => {
            entry.answer = format!("405: {} is not served on {}", req.method, req.path);
            (
                405,
                openai_chat::error_body(405, &format!("method {} not allowed", req.method)),
            )
        }
        _ => {
            let message = format!(
                "acp-patch smoke: the scripted LLM has no route {} {} (it serves {ROUTES})",
                req.method, req.path
            );
            entry.answer = "404: no such route".into();
            (
                404,
                json!({"type": "error", "error": {"type": "not_found_error", "message": message, "code": 404}}),
            )
        }
    };
    entry.status = status;
    let log = Log::push(log, epoch, entry);
    let r = if req.method == "HEAD" {
        http::write_empty(sock, status).await
    } else {
        http::write_json(sock, status, &body).await
    };
    log.done(r.is_err());
    r
}
