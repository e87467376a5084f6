//! The Responses dialect (`POST /v1/responses`).

use super::*;

fn responses_kinds(evs: &[(String, String)]) -> Vec<&'static str> {
    evs.iter()
        .filter_map(|(n, _)| match n.as_str() {
            "response.reasoning_summary_text.delta" => Some("r"),
            "response.output_text.delta" => Some("a"),
            "response.function_call_arguments.delta" => Some("t"),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn responses_stream_plays_the_script_with_named_events() {
    let srv = server(fast()).await;
    let (head, body) = raw_request(
        srv.port(),
        post_to(
            "/v1/responses",
            "Authorization: Bearer sk\r\n",
            r#"{"model":"m","stream":true,"input":[{"role":"user","content":"hi"}]}"#,
        ),
    )
    .await;
    assert!(head.contains("text/event-stream"));
    let evs = events(&body);
    assert_eq!(evs[0].0, "response.created");
    assert_eq!(evs[1].0, "response.in_progress");
    assert_eq!(evs.last().unwrap().0, "response.completed");
    for (i, (name, data)) in evs.iter().enumerate() {
        let v = json_of(data);
        assert_eq!(&v["type"], name);
        assert_eq!(v["sequence_number"], i as u64);
    }
    assert_eq!(responses_kinds(&evs), vec!["r", "r", "a", "a", "r", "a"]);
    let done = json_of(&evs.last().unwrap().1);
    let out = &done["response"]["output"];
    let types: Vec<&str> = out
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, vec!["reasoning", "message", "reasoning", "message"]);
    assert_eq!(out[1]["content"][0]["text"], "Here is the answer");
    assert_eq!(done["response"]["status"], "completed");
    let r = &srv.requests()[0];
    assert_eq!(r.dialect.as_deref(), Some("openai-responses"));
    assert_eq!(r.auth.as_deref(), Some("bearer"));
}

#[tokio::test]
async fn responses_tool_call_then_answer_and_non_streaming() {
    let srv = server(Script {
        tool_call: Some(ScriptToolCall::default()),
        ..fast()
    })
    .await;
    let tools = r#""tools":[{"type":"function","name":"read_file","parameters":{}}]"#;
    let (_, body) = raw_request(
        srv.port(),
        post_to(
            "/v1/responses",
            "",
            &format!(r#"{{"stream":true,{tools},"input":"hi"}}"#),
        ),
    )
    .await;
    let evs = events(&body);
    assert_eq!(responses_kinds(&evs), vec!["r", "r", "t"]);
    let done = json_of(&evs.last().unwrap().1);
    let call = &done["response"]["output"][1];
    assert_eq!(call["type"], "function_call");
    assert_eq!(call["call_id"], "call_smoke_1");
    assert_eq!(call["arguments"], r#"{"path":"{workspace}/notes.txt"}"#);
    let (_, body) = raw_request(
        srv.port(),
        post_to(
            "/v1/responses",
            "",
            &format!(
                r#"{{{tools},"input":[{{"role":"user","content":"hi"}},{{"type":"function_call","call_id":"call_smoke_1","name":"read_file","arguments":"{{}}"}},{{"type":"function_call_output","call_id":"call_smoke_1","output":"x"}}]}}"#
            ),
        ),
    )
    .await;
    let v = json_of(&body);
    assert_eq!(v["object"], "response");
    assert_eq!(v["output_text"], "Here is the answer: 42.");
    let reqs = srv.requests();
    assert_eq!(reqs[1].kind, "after_tool");
    assert_eq!(reqs[1].carries_seed, Some(false));
    assert_eq!(reqs[1].messages, 3);
}
