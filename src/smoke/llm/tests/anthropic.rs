//! The Anthropic dialect (`POST /v1/messages`).

use super::*;

/// (block type, delta kinds) per content block of an Anthropic stream.
fn anthropic_blocks(evs: &[(String, String)]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for (name, data) in evs {
        let v = json_of(data);
        assert_eq!(&v["type"], name);
        match name.as_str() {
            "content_block_start" => out.push((
                v["content_block"]["type"].as_str().unwrap().to_string(),
                vec![],
            )),
            "content_block_delta" => {
                assert_eq!(v["index"], out.len() as u64 - 1);
                out.last_mut()
                    .unwrap()
                    .1
                    .push(v["delta"]["type"].as_str().unwrap().to_string())
            }
            _ => {}
        }
    }
    out
}

#[tokio::test]
async fn anthropic_stream_has_thinking_and_text_blocks() {
    let srv = server(fast()).await;
    let (head, body) = raw_request(
        srv.port(),
        post_to(
            "/v1/messages?beta=true",
            "x-api-key: anything\r\nanthropic-version: 2023-06-01\r\n",
            r#"{"model":"claude","stream":true,"max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}"#,
        ),
    )
    .await;
    assert!(head.contains("text/event-stream"), "{head}");
    let evs = events(&body);
    let names: Vec<&str> = evs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names[..2], ["message_start", "ping"]);
    assert_eq!(names[names.len() - 2..], ["message_delta", "message_stop"]);
    let blocks = anthropic_blocks(&evs);
    let thinking = vec![
        "thinking_delta".to_string(),
        "thinking_delta".into(),
        "signature_delta".into(),
    ];
    assert_eq!(
        blocks,
        vec![
            ("thinking".to_string(), thinking),
            (
                "text".into(),
                vec!["text_delta".into(), "text_delta".into()]
            ),
            (
                "thinking".into(),
                vec!["thinking_delta".into(), "signature_delta".into()]
            ),
            ("text".into(), vec!["text_delta".into()]),
        ]
    );
    assert_eq!(
        names.iter().filter(|n| **n == "content_block_stop").count(),
        4
    );
    let delta = json_of(&evs[evs.len() - 2].1);
    assert_eq!(delta["delta"]["stop_reason"], "end_turn");
    assert_eq!(srv.requests()[0].path, "/v1/messages");
}

#[tokio::test]
async fn anthropic_tool_use_then_answer_and_non_streaming() {
    let srv = server(Script {
        tool_call: Some(ScriptToolCall {
            id: "toolu_1".into(),
            name: "Read".into(),
            arguments: r#"{"file_path":"/w/notes.txt"}"#.into(),
        }),
        ..fast()
    })
    .await;
    let tools = r#""tools":[{"name":"Read","input_schema":{}},{"name":"Bash","input_schema":{}}]"#;
    let (_, body) = raw_request(
        srv.port(),
        post_to(
            "/v1/messages",
            "",
            &format!(r#"{{"stream":true,{tools},"messages":[{{"role":"user","content":"hi"}}]}}"#),
        ),
    )
    .await;
    let evs = events(&body);
    let blocks = anthropic_blocks(&evs);
    assert_eq!(
        blocks[1],
        ("tool_use".into(), vec!["input_json_delta".into()])
    );
    let start = evs
        .iter()
        .map(|(_, d)| json_of(d))
        .find(|v| v["content_block"]["type"] == "tool_use")
        .unwrap();
    assert_eq!(start["content_block"]["id"], "toolu_1");
    assert_eq!(start["content_block"]["name"], "Read");
    assert_eq!(
        json_of(&evs[evs.len() - 2].1)["delta"]["stop_reason"],
        "tool_use"
    );
    // the tool result comes back: the answer, not streamed
    let (_, body) = raw_request(
        srv.port(),
        post_to(
            "/v1/messages",
            "",
            &format!(
                r#"{{{tools},"messages":[{{"role":"user","content":"hi"}},{{"role":"assistant","content":[{{"type":"tool_use","id":"toolu_1","name":"Read","input":{{}}}}]}},{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"toolu_1","content":"SEED-123"}}]}}]}}"#
            ),
        ),
    )
    .await;
    let v = json_of(&body);
    assert_eq!(v["type"], "message");
    assert_eq!(v["stop_reason"], "end_turn");
    let types: Vec<&str> = v["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, vec!["thinking", "text", "thinking", "text"]);
    assert_eq!(srv.requests()[1].carries_seed, Some(true));
}

#[tokio::test]
async fn anthropic_errors_use_its_error_shape() {
    let srv = server(Script {
        error: Some(ScriptError {
            status: 529,
            message: "overloaded".into(),
            mid_stream: false,
        }),
        ..fast()
    })
    .await;
    let (head, body) = raw_request(
        srv.port(),
        post_to(
            "/v1/messages",
            "",
            r#"{"messages":[{"role":"user","content":"hi"}]}"#,
        ),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 529"), "{head}");
    let v = json_of(&body);
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "overloaded_error");
}
