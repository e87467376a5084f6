use super::*;
use tokio::io::AsyncReadExt;

mod anthropic;
mod responses;

async fn raw_request(port: u16, req: String) -> (String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    let out = String::from_utf8(out).unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (head.to_string(), body.to_string())
}

fn post_to(path: &str, extra_headers: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra_headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn post(body: &str) -> String {
    post_to("/v1/chat/completions", "", body)
}

fn fast() -> Script {
    Script {
        delay_s: 0.05,
        after_tool_delay_s: 0.02,
        chunk_delay_ms: 1,
        ..Script::default()
    }
}

async fn server(script: Script) -> LlmServer {
    LlmServer::start_with(
        ServerConfig {
            script,
            prompt: "hi".into(),
            seed_token: Some("SEED-123".into()),
        },
        Instant::now(),
    )
    .await
    .unwrap()
}

/// The SSE events of a body: (event name or "", data JSON or the raw data).
fn events(body: &str) -> Vec<(String, String)> {
    body.split_terminator("\n\n")
        .map(|e| {
            let mut name = String::new();
            let mut data = String::new();
            for l in e.lines() {
                if let Some(n) = l.strip_prefix("event: ") {
                    name = n.to_string();
                } else if let Some(d) = l.strip_prefix("data: ") {
                    data = d.to_string();
                } else {
                    panic!("unexpected SSE line {l:?} in {e:?}");
                }
            }
            (name, data)
        })
        .collect()
}

fn json_of(data: &str) -> Value {
    serde_json::from_str(data).unwrap()
}

#[tokio::test]
async fn chat_streaming_sse_framing_is_exact() {
    let srv = server(fast()).await;
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
    let evs = events(&body);
    for (name, _) in &evs {
        assert_eq!(name, "");
    }
    assert_eq!(evs.last().unwrap().1, "[DONE]");
    let chunks: Vec<Value> = evs[..evs.len() - 1].iter().map(|e| json_of(&e.1)).collect();
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
    assert_eq!(reqs[0].kind, "turn");
    assert_eq!(reqs[0].dialect.as_deref(), Some("openai-chat"));
    assert_eq!(reqs[0].answer, "reasoning + text + reasoning + text");
    assert!(reqs[0].done_ms.is_some());
    assert!(!reqs[0].closed_early);
}

#[tokio::test]
async fn chat_usage_chunk_when_asked() {
    let srv = server(fast()).await;
    let (_, body) = raw_request(
        srv.port(),
        post(r#"{"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}"#),
    )
    .await;
    let evs = events(&body);
    let last = json_of(&evs[evs.len() - 2].1);
    assert_eq!(last["choices"], json!([]));
    assert!(last["usage"]["completion_tokens"].as_u64().unwrap() > 0);
    let (_, body) = raw_request(
        srv.port(),
        post(r#"{"stream":true,"messages":[{"role":"user","content":"hi"}]}"#),
    )
    .await;
    assert!(!body.contains("\"usage\""));
}

#[tokio::test]
async fn chat_non_streaming_is_one_completion() {
    let srv = server(fast()).await;
    let (head, body) = raw_request(
        srv.port(),
        post(r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#),
    )
    .await;
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
async fn requests_without_the_prompt_are_side_calls_answered_at_once() {
    let srv = server(Script {
        delay_s: 5.0,
        ..fast()
    })
    .await;
    let t0 = Instant::now();
    let (_, body) = raw_request(
        srv.port(),
        post_to(
            "/v1/messages?beta=true",
            "x-api-key: sk-ant\r\n",
            r#"{"model":"haiku","max_tokens":1,"messages":[{"role":"user","content":"quota"}]}"#,
        ),
    )
    .await;
    assert!(t0.elapsed() < Duration::from_secs(2));
    let v = json_of(&body);
    assert_eq!(v["content"][0]["text"], "OK");
    let r = &srv.requests()[0];
    assert_eq!(r.kind, "side");
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.auth.as_deref(), Some("x-api-key"));
}

#[tokio::test]
async fn models_count_tokens_and_a_clear_404() {
    let srv = server(fast()).await;
    let (head, body) = raw_request(
        srv.port(),
        "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n".into(),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200 OK"));
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], "acp-patch-smoke");
    let (head, body) = raw_request(
        srv.port(),
        post_to("/v1/messages/count_tokens", "", r#"{"messages":[]}"#),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"));
    assert!(json_of(&body)["input_tokens"].as_u64().unwrap() > 0);
    let (head, body) = raw_request(srv.port(), "GET /nope HTTP/1.1\r\n\r\n".into()).await;
    assert!(head.starts_with("HTTP/1.1 404"));
    let msg = json_of(&body)["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(msg.contains("no route GET /nope"), "{msg}");
    assert!(msg.contains("POST /v1/responses"), "{msg}");
    let (head, body) = raw_request(srv.port(), "HEAD / HTTP/1.1\r\n\r\n".into()).await;
    assert!(head.starts_with("HTTP/1.1 404"));
    assert!(body.is_empty());
    let kinds: Vec<(String, u16)> = srv
        .requests()
        .iter()
        .map(|r| (r.kind.clone(), r.status))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("models".into(), 200),
            ("count_tokens".into(), 200),
            ("unknown".into(), 404),
            ("unknown".into(), 404)
        ]
    );
}

#[tokio::test]
async fn chunked_request_bodies_are_read() {
    let srv = server(fast()).await;
    let body = r#"{"messages":[{"role":"user","content":"hi"}]}"#;
    let (a, b) = body.split_at(10);
    let req = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    let (head, body) = raw_request(srv.port(), req).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(
        json_of(&body)["choices"][0]["message"]["content"],
        "Here is the answer: 42."
    );
}

#[tokio::test]
async fn chat_tool_call_then_answer_and_errors() {
    let script = Script {
        tool_call: Some(ScriptToolCall::default()),
        ..fast()
    };
    let srv = server(script).await;
    // the tool is offered: the first call asks for it
    let tools = r#""tools":[{"type":"function","function":{"name":"read_file","parameters":{}}}]"#;
    let (_, body) = raw_request(
        srv.port(),
        post(&format!(
            r#"{{"stream":true,{tools},"messages":[{{"role":"user","content":"hi"}}]}}"#
        )),
    )
    .await;
    assert!(body.contains("\"tool_calls\""));
    assert!(body.contains("\"finish_reason\":\"tool_calls\""));
    assert!(body.ends_with("data: [DONE]\n\n"));
    let (_, body) = raw_request(
        srv.port(),
        post(&format!(
            r#"{{"stream":true,{tools},"messages":[{{"role":"user","content":"hi"}},{{"role":"tool","tool_call_id":"call_smoke_1","content":"SEED-123"}}]}}"#
        )),
    )
    .await;
    assert!(!body.contains("\"tool_calls\""));
    assert!(body.contains("\"finish_reason\":\"stop\""));
    // not offered: a plain answer, and the log says why
    let (_, body) = raw_request(
        srv.port(),
        post(r#"{"stream":true,"messages":[{"role":"user","content":"hi"}]}"#),
    )
    .await;
    assert!(!body.contains("\"tool_calls\""));
    let reqs = srv.requests();
    assert_eq!(reqs[0].answer, "reasoning + tool call read_file");
    assert_eq!(reqs[0].tools, vec!["read_file"]);
    assert_eq!(reqs[1].kind, "after_tool");
    assert_eq!(reqs[1].carries_seed, Some(true));
    assert!(
        reqs[2].answer.contains("does not offer (offered: none)"),
        "{}",
        reqs[2].answer
    );

    let script = Script {
        error: Some(ScriptError {
            status: 503,
            message: "overloaded".into(),
            mid_stream: false,
        }),
        ..fast()
    };
    let srv = server(script).await;
    let (head, body) = raw_request(
        srv.port(),
        post(r#"{"stream":true,"messages":[{"role":"user","content":"hi"}]}"#),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 503"));
    assert!(body.contains("overloaded"));

    let script = Script {
        error: Some(ScriptError {
            mid_stream: true,
            ..ScriptError::default()
        }),
        ..fast()
    };
    let srv = server(script).await;
    let (head, body) = raw_request(
        srv.port(),
        post(r#"{"stream":true,"messages":[{"role":"user","content":"hi"}]}"#),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"));
    assert!(body.contains("scripted failure"));
    assert!(!body.contains("[DONE]"));
}

/// The kinds of deltas in order: r(easoning), a(nswer), t(ool).
#[test]
fn sessions_get_tagged_answers_and_tool_ids() {
    let cfg = ServerConfig {
        script: Script {
            tool_call: Some(ScriptToolCall::default()),
            ..Script::default()
        },
        prompt: "hi".into(),
        seed_token: None,
    };
    let body = json!({"messages": [{"role": "user", "content": "hi [smoke session 2]"}]});
    let facts = RequestFacts {
        tools: vec!["read_file".into()],
        ..RequestFacts::default()
    };
    let r = plan_reply(&cfg, &body, &facts);
    assert_eq!(r.session, Some(2));
    assert!(
        r.answer
            .parts
            .iter()
            .any(|p| matches!(p, Part::Tool { id, .. } if id == "call_smoke_1_s2"))
    );
    let after = RequestFacts {
        tool_results: 1,
        ..facts
    };
    let r = plan_reply(&cfg, &body, &after);
    assert_eq!(r.kind, "after_tool");
    assert!(
        r.answer.text().ends_with(": 42. [session 2]"),
        "{:?}",
        r.answer
    );
    assert!(r.answer.reasoning_text().ends_with("[session 2]"));
    assert_eq!(r.wait, Duration::from_secs(2));
}

#[test]
fn the_wait_comes_before_the_first_content_not_before_the_framing() {
    let a = plan_reply(
        &ServerConfig {
            script: Script::default(),
            prompt: "hi".into(),
            seed_token: None,
        },
        &json!({"messages": [{"role": "user", "content": "hi"}]}),
        &RequestFacts::default(),
    )
    .answer;
    let ids = Ids {
        n: 1,
        created: 0,
        include_usage: false,
    };
    for (d, first_content) in [
        (Dialect::Anthropic, "event: content_block_start"),
        (Dialect::Responses, "event: response.output_item.added"),
        (Dialect::Chat, "data: "),
    ] {
        let s = d.stream(&a, &ids);
        let waits: Vec<&answer::Frame> =
            s.frames.iter().filter(|f| f.pause == Pause::Wait).collect();
        assert_eq!(waits.len(), 1, "{d:?}");
        assert!(
            waits[0].text.starts_with(first_content),
            "{d:?}: {}",
            waits[0].text
        );
        let before: Vec<&answer::Frame> = s
            .frames
            .iter()
            .take_while(|f| f.pause != Pause::Wait)
            .collect();
        for f in before {
            assert!(
                !f.text.contains("delta") && !f.text.contains("content_block_start"),
                "{d:?}: {}",
                f.text
            );
        }
    }
}

#[tokio::test]
async fn a_client_that_hangs_up_during_the_wait_is_logged_at_once() {
    let srv = server(Script {
        delay_s: 5.0,
        ..fast()
    })
    .await;
    let body = r#"{"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let mut s = TcpStream::connect(("127.0.0.1", srv.port())).await.unwrap();
    s.write_all(post(body).as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(s);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = &srv.requests()[0];
    assert!(r.closed_early, "{r:?}");
    let gone = r.done_ms.unwrap() - r.t_ms;
    assert!(gone < 1000.0, "{gone}");
}

#[tokio::test]
async fn the_answer_text_written_is_logged_in_every_dialect_streaming_or_not() {
    let srv = server(fast()).await;
    for (path, headers, body) in [
        (
            "/v1/chat/completions",
            "",
            r#"{"stream":true,"messages":[{"role":"user","content":"hi"}]}"#,
        ),
        (
            "/v1/chat/completions",
            "",
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
        ),
        ("/v1/responses", "", r#"{"stream":true,"input":"hi"}"#),
        ("/v1/responses", "", r#"{"input":"hi"}"#),
        (
            "/v1/messages",
            "x-api-key: k\r\n",
            r#"{"stream":true,"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}"#,
        ),
        (
            "/v1/messages",
            "x-api-key: k\r\n",
            r#"{"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}"#,
        ),
    ] {
        raw_request(srv.port(), post_to(path, headers, body)).await;
    }
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 6);
    for r in &reqs {
        assert_eq!(r.kind, "turn", "{r:?}");
        assert_eq!(r.text_sent, "Here is the answer: 42.", "{r:?}");
    }
}

#[tokio::test]
async fn a_stream_cut_short_logs_only_the_text_that_went_out() {
    // the text's first delta comes after the wait, the next one only after a long delay
    let srv = server(Script {
        reasoning: vec![],
        chunk_delay_ms: 30_000,
        ..fast()
    })
    .await;
    let body = r#"{"stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let mut s = TcpStream::connect(("127.0.0.1", srv.port())).await.unwrap();
    s.write_all(post(body).as_bytes()).await.unwrap();
    // "Here is ", then the client goes away
    let mut got = String::new();
    let mut buf = [0u8; 4096];
    while !got.contains("Here is ") {
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0);
        got.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    drop(s);
    let r = loop {
        let r = srv.requests()[0].clone();
        if r.done_ms.is_some() {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(r.closed_early, "{r:?}");
    assert_eq!(r.text_sent, "Here is ");
}
