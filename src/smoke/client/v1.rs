//! Protocol v1: the prompt request is the turn; its response (the stop reason) ends it.

use agent_client_protocol::ConnectTo;
use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, Implementation, InitializeRequest, NewSessionRequest,
    PromptRequest, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionNotification, TextContent,
};
use agent_client_protocol::{Agent, Client};
use std::sync::atomic::Ordering;

use super::{Drive, MainResult, Phase, SessionRun, TurnOutcome, VERSION_REFUSED};

pub(super) async fn drive(
    transport: impl ConnectTo<Client> + 'static,
    d: Drive,
) -> Result<MainResult, agent_client_protocol::Error> {
    let permissions = d.permissions.clone();
    Client
        .v1()
        .name("acp-patch-smoke")
        .on_receive_notification(
            async move |_n: SessionNotification, _cx| Ok(()),
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |req: RequestPermissionRequest, responder, _cx| {
                permissions.fetch_add(1, Ordering::SeqCst);
                let outcome = match req.options.first() {
                    Some(o) => RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(
                        o.option_id.clone(),
                    )),
                    None => RequestPermissionOutcome::Cancelled,
                };
                responder.respond(RequestPermissionResponse::new(outcome))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let init = InitializeRequest::new(ProtocolVersion::V1).client_info(
                Implementation::new("acp-patch-smoke", env!("CARGO_PKG_VERSION")),
            );
            match d
                .step(Phase::Initialize, cx.send_request(init).block_task())
                .await
            {
                Ok(_) => {}
                // a v2 agent: the caller starts it again and speaks v2
                Err(MainResult::SetupFailed(_, msg, Some(VERSION_REFUSED))) => {
                    return Ok(MainResult::VersionRefused(msg));
                }
                Err(failed) => return Ok(failed),
            }
            d.set(Phase::SessionNew);
            let mut ids = Vec::new();
            for _ in &d.plan.prompts {
                let req = NewSessionRequest::new(d.plan.session_cwd.clone());
                match d
                    .step(Phase::SessionNew, cx.send_request(req).block_task())
                    .await
                {
                    Ok(r) => ids.push(r.session_id),
                    Err(failed) => return Ok(failed),
                }
            }
            d.set(Phase::Prompt);
            let turns = ids.iter().zip(&d.plan.prompts).map(|(id, text)| {
                let req = PromptRequest::new(
                    id.clone(),
                    vec![ContentBlock::Text(TextContent::new(text.clone()))],
                );
                let cx = cx.clone();
                let (gone, turn) = (d.gone(), d.limits.turn);
                async move {
                    tokio::select! {
                        r = cx.send_request(req).block_task() => match r {
                            Ok(_) => TurnOutcome::Answered,
                            Err(e) => TurnOutcome::Failed(e.to_string()),
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
                            let _ = cx.send_notification(CancelNotification::new(id));
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
