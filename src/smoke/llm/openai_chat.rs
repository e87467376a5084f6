//! OpenAI chat completions: `POST /v1/chat/completions`, SSE `data:` chunks ending in
//! `data: [DONE]`, or one `chat.completion` object. Reasoning goes out in both
//! `reasoning_content` and `reasoning` (the two spellings OpenAI-compatible servers use).

use serde_json::{Value, json};

use super::answer::{Answer, Ids, Part, RequestFacts, Stream, result_text, rough_tokens};
use super::http::sse_data;

pub const NAME: &str = "openai-chat";

pub fn facts(body: &Value) -> RequestFacts {
    let messages = body.get("messages").and_then(Value::as_array);
    let mut tools: Vec<String> = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t.pointer("/function/name").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    // the legacy `functions` list
    if let Some(fs) = body.get("functions").and_then(Value::as_array) {
        tools.extend(
            fs.iter()
                .filter_map(|f| f.get("name").and_then(Value::as_str))
                .map(str::to_string),
        );
    }
    RequestFacts {
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        model: body
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
        messages: messages.map(Vec::len).unwrap_or(0),
        tools,
        tool_results: messages
            .map(|m| {
                m.iter()
                    .filter(|x| {
                        matches!(
                            x.get("role").and_then(Value::as_str),
                            Some("tool") | Some("function")
                        )
                    })
                    .count()
            })
            .unwrap_or(0),
        include_usage: body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        last_tool_result: messages.and_then(|m| {
            m.iter()
                .rev()
                .find(|x| x.get("role").and_then(Value::as_str) == Some("tool"))
                .map(|x| result_text(x.get("content").unwrap_or(&Value::Null)))
        }),
    }
}

fn id(ids: &Ids) -> String {
    format!("chatcmpl-smoke-{}", ids.n)
}

fn finish(a: &Answer) -> &'static str {
    if a.calls_tool() { "tool_calls" } else { "stop" }
}

/// The deltas of a streamed answer, in order (the first carries the role).
pub fn deltas(a: &Answer) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut tool_index = 0;
    for p in &a.parts {
        match p {
            Part::Reasoning(t) => out.push(json!({"reasoning_content": t, "reasoning": t})),
            Part::Text(t) => out.push(json!({"content": t})),
            Part::Tool {
                id,
                name,
                arguments,
            } => {
                out.push(
                    json!({"tool_calls": [{"index": tool_index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                );
                out.push(
                    json!({"tool_calls": [{"index": tool_index, "function": {"arguments": arguments}}]}),
                );
                tool_index += 1;
            }
        }
    }
    if let Some(Value::Object(first)) = out.first_mut() {
        first.insert("role".into(), json!("assistant"));
    }
    out
}

pub fn stream(a: &Answer, ids: &Ids) -> Stream {
    let id = id(ids);
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({"id": id, "object": "chat.completion.chunk", "created": ids.created, "model": a.model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut s = Stream::default();
    for d in deltas(a) {
        match d.get("content").and_then(Value::as_str).map(str::to_string) {
            Some(text) => s.push_text_delta(sse_data(&chunk(d, None)), &text),
            None => s.push_delta(sse_data(&chunk(d, None))),
        }
    }
    s.close(sse_data(&chunk(json!({}), Some(finish(a)))));
    if ids.include_usage {
        // as OpenAI sends it: a last chunk with no choices
        s.close(sse_data(
            &json!({"id": id, "object": "chat.completion.chunk", "created": ids.created,
            "model": a.model, "choices": [], "usage": usage(a)}),
        ));
    }
    s.close("data: [DONE]\n\n".to_string());
    s
}

pub fn body(a: &Answer, ids: &Ids) -> Value {
    let reasoning = a.reasoning_text();
    let mut message =
        json!({"role": "assistant", "reasoning_content": reasoning, "reasoning": reasoning});
    let calls: Vec<Value> = a
        .parts
        .iter()
        .filter_map(|p| match p {
            Part::Tool {
                id,
                name,
                arguments,
            } => Some(
                json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}),
            ),
            _ => None,
        })
        .collect();
    if calls.is_empty() {
        message["content"] = json!(a.text());
    } else {
        let text = a.text();
        message["content"] = if text.is_empty() {
            Value::Null
        } else {
            json!(text)
        };
        message["tool_calls"] = json!(calls);
    }
    json!({
        "id": id(ids), "object": "chat.completion", "created": ids.created, "model": a.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish(a)}],
        "usage": usage(a)
    })
}

fn usage(a: &Answer) -> Value {
    let out = rough_tokens(&(a.reasoning_text() + &a.text()));
    json!({"prompt_tokens": 10, "completion_tokens": out, "total_tokens": 10 + out})
}

pub fn error_body(status: u16, message: &str) -> Value {
    let kind = if status < 500 {
        "invalid_request_error"
    } else {
        "server_error"
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": status}})
}

pub fn stream_error(status: u16, message: &str) -> String {
    sse_data(&error_body(status, message))
}

/// `GET /v1/models` (answered in a shape both OpenAI and Anthropic clients read).
pub fn models(model: &str) -> Value {
    json!({"object": "list", "has_more": false, "first_id": model, "last_id": model, "data": [
        {"id": model, "object": "model", "created": 0, "owned_by": "acp-patch",
         "type": "model", "display_name": model, "created_at": "2025-01-01T00:00:00Z"}]})
}
