//! Anthropic Messages: `POST /v1/messages` (any `x-api-key`), SSE `message_start`,
//! `content_block_start` / `content_block_delta` (`thinking_delta`, `text_delta`,
//! `input_json_delta`) / `content_block_stop`, `message_delta`, `message_stop`; or one
//! `message` object. `POST /v1/messages/count_tokens` answers a rough count.

use serde_json::{Value, json};

use super::answer::{Answer, Block, Ids, RequestFacts, Stream, result_text, rough_tokens};
use super::http::sse_event;

pub const NAME: &str = "anthropic-messages";

/// The signature every scripted thinking block carries (clients send it back unchecked).
const SIGNATURE: &str = "YWNwLXBhdGNoIHNtb2tl";

pub fn facts(body: &Value) -> RequestFacts {
    let messages = body.get("messages").and_then(Value::as_array);
    RequestFacts {
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        model: body
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
        messages: messages.map(Vec::len).unwrap_or(0),
        tools: body
            .get("tools")
            .and_then(Value::as_array)
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| t.get("name").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        tool_results: messages
            .map(|m| {
                m.iter()
                    .filter_map(|x| x.get("content").and_then(Value::as_array))
                    .flatten()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                    .count()
            })
            .unwrap_or(0),
        include_usage: false,
        last_tool_result: messages.and_then(|m| {
            m.iter()
                .filter_map(|x| x.get("content").and_then(Value::as_array))
                .flatten()
                .rfind(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                .map(|b| result_text(b.get("content").unwrap_or(&Value::Null)))
        }),
    }
}

fn id(ids: &Ids) -> String {
    format!("msg_smoke_{}", ids.n)
}

fn stop_reason(a: &Answer) -> &'static str {
    if a.calls_tool() {
        "tool_use"
    } else {
        "end_turn"
    }
}

fn usage(a: &Answer) -> Value {
    json!({"input_tokens": 10, "output_tokens": rough_tokens(&(a.reasoning_text() + &a.text())),
           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0})
}

fn content(a: &Answer) -> Vec<Value> {
    a.blocks()
        .iter()
        .map(|b| match b {
            Block::Reasoning(d) => {
                json!({"type": "thinking", "thinking": d.concat(), "signature": SIGNATURE})
            }
            Block::Text(d) => json!({"type": "text", "text": d.concat()}),
            Block::Tool {
                id,
                name,
                arguments,
            } => json!({"type": "tool_use", "id": id, "name": name,
                "input": serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| json!({}))}),
        })
        .collect()
}

pub fn stream(a: &Answer, ids: &Ids) -> Stream {
    let mut s = Stream::default();
    let ev = |name: &str, mut v: Value| {
        v["type"] = json!(name);
        sse_event(name, &v)
    };
    s.push(ev(
        "message_start",
        json!({"message": {"id": id(ids), "type": "message", "role": "assistant", "model": a.model,
               "content": [], "stop_reason": null, "stop_sequence": null,
               "usage": {"input_tokens": 10, "output_tokens": 1,
                         "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    ));
    s.push(ev("ping", json!({})));
    for (i, b) in a.blocks().iter().enumerate() {
        match b {
            Block::Reasoning(d) => {
                s.push_start(ev(
                    "content_block_start",
                    json!({"index": i, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                ));
                for t in d {
                    s.push_delta(ev(
                        "content_block_delta",
                        json!({"index": i, "delta": {"type": "thinking_delta", "thinking": t}}),
                    ));
                }
                s.push(ev(
                    "content_block_delta",
                    json!({"index": i, "delta": {"type": "signature_delta", "signature": SIGNATURE}}),
                ));
            }
            Block::Text(d) => {
                s.push_start(ev(
                    "content_block_start",
                    json!({"index": i, "content_block": {"type": "text", "text": ""}}),
                ));
                for t in d {
                    s.push_text_delta(
                        ev(
                            "content_block_delta",
                            json!({"index": i, "delta": {"type": "text_delta", "text": t}}),
                        ),
                        t,
                    );
                }
            }
            Block::Tool {
                id,
                name,
                arguments,
            } => {
                s.push_start(ev(
                    "content_block_start",
                    json!({"index": i, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
                ));
                s.push_delta(ev(
                    "content_block_delta",
                    json!({"index": i, "delta": {"type": "input_json_delta", "partial_json": arguments}}),
                ));
            }
        }
        s.push(ev("content_block_stop", json!({"index": i})));
    }
    s.close(ev(
        "message_delta",
        json!({"delta": {"stop_reason": stop_reason(a), "stop_sequence": null},
               "usage": {"output_tokens": usage(a)["output_tokens"]}}),
    ));
    s.close(ev("message_stop", json!({})));
    s
}

pub fn body(a: &Answer, ids: &Ids) -> Value {
    json!({"id": id(ids), "type": "message", "role": "assistant", "model": a.model,
           "content": content(a), "stop_reason": stop_reason(a), "stop_sequence": null,
           "usage": usage(a)})
}

/// `POST /v1/messages/count_tokens`
pub fn count_tokens(body: &Value) -> Value {
    json!({"input_tokens": rough_tokens(&body.to_string())})
}

pub fn error_kind(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

pub fn error_body(status: u16, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_kind(status), "message": message}})
}

pub fn stream_error(status: u16, message: &str) -> String {
    sse_event("error", &error_body(status, message))
}
