// acp-patch: factory
/// Sends one session update through the agent's own notification path.
pub type AcpSend = {{PTR}}<dyn Fn({{ACP}}::SessionUpdate){{SEND_SYNC}}>;

/// The agent's progress callback: (state, name, args such as `{"session": "..", "elapsed": 12.0}`).
pub type AcpProgressCallback = {{PTR}}<dyn Fn(AcpProgressState, &str, Option<serde_json::Value>){{SEND_SYNC}}>;

/// Build the agent's progress callback: one "Thinking..." tool card per session and name
/// (start/heartbeat/complete), sent through that session's notification path.
pub fn make_agent_progress_cb(thinking: {{PTR}}<AcpThinking>) -> AcpProgressCallback {
    let open_ids: {{CELL}}<std::collections::HashMap<(String, String), String>> = Default::default();
    {{PTR}}::new(move |state: AcpProgressState, name: &str, args: Option<serde_json::Value>| {
        let arg = |key: &str| args.as_ref().and_then(|a| a.get(key).cloned());
        let session = arg("session").and_then(|s| s.as_str().map(String::from)).unwrap_or_default();
        let Some(send) = acp_session_send(&thinking, &session) else {
            return; // no turn of this session was wired
        };
        let key = (session, name.to_string());
        // Sends happen under the lock so a card's updates leave in state order.
        let mut open_ids = open_ids.{{LOCK}};
        match state {
            AcpProgressState::Start => {
                if let Some(previous) = open_ids.remove(&key) {
                    send(build_thinking_complete(&previous));
                }
                let tool_call_id = acp_new_tool_call_id();
                send(build_thinking_start(&tool_call_id));
                open_ids.insert(key, tool_call_id);
            }
            AcpProgressState::Heartbeat => {
                if let Some(tool_call_id) = open_ids.get(&key) {
                    let elapsed = arg("elapsed").and_then(|e| e.as_f64()).unwrap_or(0.0);
                    send(build_thinking_progress(tool_call_id, elapsed));
                }
            }
            AcpProgressState::Complete => {
                if let Some(tool_call_id) = open_ids.remove(&key) {
                    send(build_thinking_complete(&tool_call_id));
                }
            }
        }
    })
}

/// The notification path of a session's current turn.
fn acp_session_send(thinking: &{{PTR}}<AcpThinking>, session: &str) -> Option<AcpSend> {
    thinking.sessions.{{LOCK}}.get(session).and_then(|s| s.send.clone())
}

/// A fresh id for a think card, unique within the process.
fn acp_new_tool_call_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("think-{nanos:08x}{n:04x}")
}

/// Deliver one notification: polled once at once (keeps the order of updates); if the
/// connection needs more time, the rest runs as a task. Errors go to stderr, never stdout.
fn acp_deliver<E: std::fmt::Debug>(
    future: impl std::future::Future<Output = Result<(), E>>{{FUTURE_SEND}} + 'static,
) {
    let mut future = Box::pin(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Ok(())) => {}
        std::task::Poll::Ready(Err(e)) => eprintln!("acp-patch: session update failed: {e:?}"),
        std::task::Poll::Pending => {
            {{SPAWN}}(async move {
                if let Err(e) = future.await {
                    eprintln!("acp-patch: session update failed: {e:?}");
                }
            });
        }
    }
}
