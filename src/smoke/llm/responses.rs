//! OpenAI Responses: `POST /v1/responses`, SSE with named events (`response.created`,
//! `response.output_item.added`, `response.reasoning_summary_text.delta`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`,
//! `response.completed`), or one `response` object.

use serde_json::{Value, json};

use super::answer::{Answer, Block, Ids, RequestFacts, Stream, result_text, rough_tokens};
use super::http::sse_event;

pub const NAME: &str = "openai-responses";

pub fn facts(body: &Value) -> RequestFacts {
    let input = body.get("input");
    let items = input.and_then(Value::as_array);
    RequestFacts {
        stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
        model: body
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string),
        messages: match input {
            Some(Value::String(_)) => 1,
            _ => items.map(Vec::len).unwrap_or(0),
        },
        tools: body
            .get("tools")
            .and_then(Value::as_array)
            .map(|ts| {
                ts.iter()
                    .filter_map(|t| {
                        t.get("name")
                            .or_else(|| t.pointer("/function/name"))
                            .and_then(Value::as_str)
                    })
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        tool_results: items
            .map(|m| {
                m.iter()
                    .filter(|x| {
                        matches!(
                            x.get("type").and_then(Value::as_str),
                            Some("function_call_output") | Some("custom_tool_call_output")
                        )
                    })
                    .count()
            })
            .unwrap_or(0),
        include_usage: false,
        last_tool_result: items.and_then(|m| {
            m.iter()
                .rev()
                .find(|x| {
                    matches!(
                        x.get("type").and_then(Value::as_str),
                        Some("function_call_output") | Some("custom_tool_call_output")
                    )
                })
                .map(|x| result_text(x.get("output").unwrap_or(&Value::Null)))
        }),
    }
}

/// The output items of the finished answer, with their ids.
fn items(a: &Answer, ids: &Ids) -> Vec<Value> {
    a.blocks()
        .iter()
        .enumerate()
        .map(|(i, b)| match b {
            Block::Reasoning(d) => json!({"id": format!("rs_smoke_{}_{i}", ids.n), "type": "reasoning",
                "summary": [{"type": "summary_text", "text": d.concat()}]}),
            Block::Text(d) => json!({"id": format!("msg_smoke_{}_{i}", ids.n), "type": "message",
                "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": d.concat(), "annotations": [], "logprobs": []}]}),
            Block::Tool {
                id,
                name,
                arguments,
            } => json!({"id": format!("fc_smoke_{}_{i}", ids.n), "type": "function_call",
                "status": "completed", "call_id": id, "name": name, "arguments": arguments}),
        })
        .collect()
}

fn response(a: &Answer, ids: &Ids, status: &str, output: Vec<Value>) -> Value {
    let out_tokens = rough_tokens(&(a.reasoning_text() + &a.text()));
    json!({
        "id": format!("resp_smoke_{}", ids.n), "object": "response", "created_at": ids.created,
        "status": status, "model": a.model, "output": output,
        "parallel_tool_calls": true, "tool_choice": "auto", "tools": [], "error": null,
        "incomplete_details": null, "instructions": null, "metadata": {},
        "usage": if status == "completed" {
            json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                   "output_tokens": out_tokens, "output_tokens_details": {"reasoning_tokens": 0},
                   "total_tokens": 10 + out_tokens})
        } else { Value::Null }
    })
}

pub fn stream(a: &Answer, ids: &Ids) -> Stream {
    let mut s = Stream::default();
    let mut seq = 0u64;
    let mut ev = |name: &str, mut v: Value| {
        v["type"] = json!(name);
        v["sequence_number"] = json!(seq);
        seq += 1;
        sse_event(name, &v)
    };
    s.push(ev(
        "response.created",
        json!({"response": response(a, ids, "in_progress", vec![])}),
    ));
    s.push(ev(
        "response.in_progress",
        json!({"response": response(a, ids, "in_progress", vec![])}),
    ));
    let done = items(a, ids);
    for (i, (b, item)) in a.blocks().iter().zip(&done).enumerate() {
        let item_id = item["id"].clone();
        match b {
            Block::Reasoning(d) => {
                s.push_start(ev(
                    "response.output_item.added",
                    json!({"output_index": i, "item": {"id": item_id, "type": "reasoning", "summary": []}}),
                ));
                s.push(ev(
                    "response.reasoning_summary_part.added",
                    json!({"item_id": item_id, "output_index": i, "summary_index": 0,
                           "part": {"type": "summary_text", "text": ""}}),
                ));
                for t in d {
                    s.push_delta(ev(
                        "response.reasoning_summary_text.delta",
                        json!({"item_id": item_id, "output_index": i, "summary_index": 0, "delta": t}),
                    ));
                }
                s.push(ev(
                    "response.reasoning_summary_text.done",
                    json!({"item_id": item_id, "output_index": i, "summary_index": 0, "text": d.concat()}),
                ));
                s.push(ev(
                    "response.reasoning_summary_part.done",
                    json!({"item_id": item_id, "output_index": i, "summary_index": 0,
                           "part": {"type": "summary_text", "text": d.concat()}}),
                ));
            }
            Block::Text(d) => {
                s.push_start(ev(
                    "response.output_item.added",
                    json!({"output_index": i, "item": {"id": item_id, "type": "message",
                           "status": "in_progress", "role": "assistant", "content": []}}),
                ));
                s.push(ev(
                    "response.content_part.added",
                    json!({"item_id": item_id, "output_index": i, "content_index": 0,
                           "part": {"type": "output_text", "text": "", "annotations": [], "logprobs": []}}),
                ));
                for t in d {
                    s.push_text_delta(
                        ev(
                            "response.output_text.delta",
                            json!({"item_id": item_id, "output_index": i, "content_index": 0,
                                   "delta": t, "logprobs": []}),
                        ),
                        t,
                    );
                }
                s.push(ev(
                    "response.output_text.done",
                    json!({"item_id": item_id, "output_index": i, "content_index": 0,
                           "text": d.concat(), "logprobs": []}),
                ));
                s.push(ev(
                    "response.content_part.done",
                    json!({"item_id": item_id, "output_index": i, "content_index": 0,
                           "part": item["content"][0].clone()}),
                ));
            }
            Block::Tool {
                id,
                name,
                arguments,
            } => {
                s.push_start(ev(
                    "response.output_item.added",
                    json!({"output_index": i, "item": {"id": item_id, "type": "function_call",
                           "status": "in_progress", "call_id": id, "name": name, "arguments": ""}}),
                ));
                s.push_delta(ev(
                    "response.function_call_arguments.delta",
                    json!({"item_id": item_id, "output_index": i, "delta": arguments}),
                ));
                s.push(ev(
                    "response.function_call_arguments.done",
                    json!({"item_id": item_id, "output_index": i, "arguments": arguments}),
                ));
            }
        }
        s.push(ev(
            "response.output_item.done",
            json!({"output_index": i, "item": item}),
        ));
    }
    s.close(ev(
        "response.completed",
        json!({"response": response(a, ids, "completed", done.clone())}),
    ));
    s
}

pub fn body(a: &Answer, ids: &Ids) -> Value {
    let mut r = response(a, ids, "completed", items(a, ids));
    r["output_text"] = json!(a.text());
    r
}

pub fn error_body(status: u16, message: &str) -> Value {
    let kind = if status < 500 {
        "invalid_request_error"
    } else {
        "server_error"
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": kind}})
}

pub fn stream_error(_status: u16, message: &str) -> String {
    sse_event(
        "error",
        &json!({"type": "error", "code": "server_error", "message": message, "param": null}),
    )
}
