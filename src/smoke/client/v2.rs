//! Protocol v2 (the draft the Rust crate 5.2 speaks with `unstable_protocol_v2`): the prompt
//! request is answered once the prompt is accepted (a message id); the turn is the session's
//! foreground work, from `state_update` running to idle (whose stop reason ends it).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v2::{ConnectionTo, schema};
use agent_client_protocol::{Agent, Client, ConnectTo};
use tokio::sync::watch;

use super::{Drive, MainResult, Phase, SessionRun, TurnOutcome};

/// Where each session's foreground work is, as its `state_update`s say.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Work {
    /// It was reported running (or blocked on the user) since the prompt.
    ran: bool,
    /// It went idle after that: the turn is over.
    ended: bool,
}

type States = Arc<Mutex<HashMap<String, Work>>>;

pub(super) async fn drive(
    transport: impl ConnectTo<Client> + 'static,
    d: Drive,
) -> Result<MainResult, agent_client_protocol::Error> {
    let permissions = d.permissions.clone();
    let states: States = Arc::new(Mutex::new(HashMap::new()));
    let (changed_tx, changed_rx) = watch::channel(0u64);
    Client
        .v2()
        .name("acp-patch-smoke")
        .on_receive_notification(
            {
                let states = states.clone();
                async move |n: schema::UpdateSessionNotification, _cx| {
                    if let schema::SessionUpdate::StateUpdate(state) = &n.update
                        && let Ok(mut all) = states.lock()
                    {
                        let w = all.entry(n.session_id.to_string()).or_default();
                        match state {
                            schema::StateUpdate::Idle(_) => w.ended |= w.ran,
                            schema::StateUpdate::Running(_)
                            | schema::StateUpdate::RequiresAction(_) => w.ran = true,
                            _ => {}
                        }
                        changed_tx.send_modify(|n| *n += 1);
                    }
                    Ok(())
                }
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: schema::RequestPermissionRequest, responder, _cx| {
                permissions.fetch_add(1, Ordering::SeqCst);
                let outcome = match req.options.first() {
                    Some(o) => schema::RequestPermissionOutcome::Selected(
                        schema::SelectedPermissionOutcome::new(o.option_id.clone()),
                    ),
                    None => schema::CancelledPermissionOutcome::new().into(),
                };
                responder.respond(schema::RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = schema::InitializeRequest::new(
                ProtocolVersion::V2,
                schema::Implementation::new("acp-patch-smoke", env!("CARGO_PKG_VERSION")),
            );
            if let Err(failed) = d
                .step(Phase::Initialize, cx.send_request(init).block_task())
                .await
            {
                return Ok(failed);
            }
            d.set(Phase::SessionNew);
            let mut ids = Vec::new();
            for _ in &d.plan.prompts {
                let req = schema::NewSessionRequest::new(d.plan.session_cwd.clone());
                match d
                    .step(Phase::SessionNew, cx.send_request(req).block_task())
                    .await
                {
                    Ok(r) => ids.push(r.session_id),
                    Err(failed) => return Ok(failed),
                }
            }
            // the idle after session/new is not the turn's end
            if let Ok(mut all) = states.lock() {
                all.clear();
            }
            d.set(Phase::Prompt);
            let turns = ids.iter().zip(&d.plan.prompts).map(|(id, text)| {
                let req = schema::PromptRequest::new(
                    id.clone(),
                    vec![schema::ContentBlock::Text(schema::TextContent::new(
                        text.clone(),
                    ))],
                );
                let (cx, gone, turn) = (cx.clone(), d.gone(), d.limits.turn);
                let (states, mut changed) = (states.clone(), changed_rx.clone());
                let sid = id.to_string();
                async move {
                    let idle = async {
                        cx.send_request(req)
                            .block_task()
                            .await
                            .map_err(|e| e.to_string())?;
                        let over = |_: &u64| {
                            states
                                .lock()
                                .map(|all| all.get(&sid).is_some_and(|w| w.ended))
                                .unwrap_or(false)
                        };
                        changed
                            .wait_for(over)
                            .await
                            .map(|_| ())
                            .map_err(|e| e.to_string())
                    };
                    tokio::select! {
                        r = idle => match r {
                            Ok(()) => TurnOutcome::Answered,
                            Err(e) => TurnOutcome::Failed(e),
                        },
                        _ = gone => TurnOutcome::AgentGone,
                        _ = tokio::time::sleep(turn) => TurnOutcome::TimedOut(turn),
                    }
                }
            });
            let canceller = {
                let (cx, ids, after) = (cx.clone(), ids.clone(), d.plan.cancel_after);
                async move {
                    if let Some(after) = after {
                        tokio::time::sleep(after).await;
                        for id in ids {
                            let _ =
                                cx.send_notification(schema::CancelSessionNotification::new(id));
                        }
                    }
                }
            };
            let (outcomes, ()) = futures::join!(futures::future::join_all(turns), canceller);
            d.linger().await;
            Ok(MainResult::Turns(
                ids.into_iter()
                    .zip(outcomes)
                    .map(|(id, outcome)| SessionRun {
                        session_id: id.to_string(),
                        outcome,
                    })
                    .collect(),
            ))
        })
        .await
}
