/// Where a turn's card updates go: the connection the SDK handed the prompt handler.
pub trait AcpSink {
    fn acp_sender(&self) -> Option<AcpSend>;
}

impl AcpSink for AcpConnection {
    fn acp_sender(&self) -> Option<AcpSend> {
        let conn = self.clone();
        Some(AcpSend {
            send: std::sync::Arc::new(move |update| {
                if let Err(e) = conn.send_notification(update) {
                    acp_debug(&format!("card update failed: {e:?}"));
                }
            }),
            loops: false,
        })
    }
}

impl<T: AcpSink + ?Sized> AcpSink for &T {
    fn acp_sender(&self) -> Option<AcpSend> {
        (**self).acp_sender()
    }
}

impl<T: AcpSink + ?Sized> AcpSink for std::sync::Arc<T> {
    fn acp_sender(&self) -> Option<AcpSend> {
        (**self).acp_sender()
    }
}

impl<T: AcpSink> AcpSink for Option<T> {
    fn acp_sender(&self) -> Option<AcpSend> {
        self.as_ref().and_then(AcpSink::acp_sender)
    }
}

impl<T: AcpSink> AcpSink for std::sync::OnceLock<T> {
    fn acp_sender(&self) -> Option<AcpSend> {
        self.get().and_then(AcpSink::acp_sender)
    }
}

/// The turn end at a response: `responder.acp_turn(&acp_turn).respond(x)` answers as
/// `responder.respond(x)` would, and ends the turn first (failed on an error): after `x` is
/// computed, before the response leaves.
pub trait AcpRespond: Sized {
    fn acp_turn(self, turn: &AcpTurn) -> AcpResponder<Self>;
}

impl<{{RESPONDER_PARAMS}}> AcpRespond for {{RESPONDER}} {
    fn acp_turn(self, turn: &AcpTurn) -> AcpResponder<Self> {
        AcpResponder {
            responder: self,
            turn: turn.clone(),
        }
    }
}

/// A responder whose response ends its turn.
pub struct AcpResponder<R> {
    responder: R,
    turn: AcpTurn,
}

impl<R> AcpResponder<R> {
    fn end(&self, failed: bool) {
        if ACP_RESPONSE_ENDS_TURN || failed {
            acp_finish(&self.turn.0.session, self.turn.0.turn, failed);
        }
    }
}

impl<{{RESPONDER_PARAMS}}> AcpResponder<{{RESPONDER}}> {
    pub fn respond(self, response: T) -> Result<(), acp_sdk::Error> {
        self.end(false);
        self.responder.respond(response)
    }

    pub fn respond_with_result(
        self,
        response: Result<T, acp_sdk::Error>,
    ) -> Result<(), acp_sdk::Error> {
        self.end(response.is_err());
        self.responder.respond_with_result(response)
    }

    pub fn respond_with_error(self, error: acp_sdk::Error) -> Result<(), acp_sdk::Error> {
        self.end(true);
        self.responder.respond_with_error(error)
    }

    pub fn respond_with_internal_error(self, message: impl ToString) -> Result<(), acp_sdk::Error> {
        self.end(true);
        self.responder.respond_with_internal_error(message)
    }
}

/// The builder API's emitter: `cx.acp_progress().send_notification(n)` sends what
/// `cx.send_notification(n)` would, with the card and the hold around session updates.
pub trait AcpEmit {
    fn acp_progress(&self) -> AcpEmitter<'_>;
}

impl AcpEmit for AcpConnection {
    fn acp_progress(&self) -> AcpEmitter<'_> {
        AcpEmitter(self)
    }
}

pub struct AcpEmitter<'a>(&'a AcpConnection);

impl AcpEmitter<'_> {
    /// Same result as the SDK's: the agent's own update's (`Ok` while it is held); any other
    /// notification is sent as it is.
    pub fn send_notification<N: {{NOTIFICATION}}>(
        self,
        notification: N,
    ) -> Result<(), acp_sdk::Error> {
        let mut slot = Some(notification);
        let update = (&mut slot as &mut dyn std::any::Any)
            .downcast_mut::<Option<AcpNotification>>()
            .and_then(Option::take);
        let Some(update) = update else {
            return match slot {
                Some(notification) => self.0.send_notification(notification),
                None => Ok(()),
            };
        };
        let out = acp_outgoing(update);
        for n in out.before {
            if let Err(e) = self.0.send_notification(n) {
                acp_debug(&format!("card update failed: {e:?}"));
            }
        }
        match out.own {
            Some(n) => self.0.send_notification(n),
            None => Ok(()),
        }
    }
}

/// At the entry of a prompt handler: `let acp_turn = begin(&cx, &request.session_id);`. The
/// card opens after the grace; the turn ends at the response given through `.acp_turn(&acp_turn)`,
/// or (failed) when the last copy of the guard is dropped without one.
pub fn begin<S: AcpSink + ?Sized>(cx: &S, session: &impl std::fmt::Display) -> AcpTurn {
    acp_begin(cx, session.to_string(), {{ON_DROP}})
}

/// Like `begin` where the response is given elsewhere (another method, an actor): the turn
/// ends only at the response given there.
pub fn open<S: AcpSink + ?Sized>(cx: &S, session: &impl std::fmt::Display) -> AcpTurn {
    acp_begin(cx, session.to_string(), None)
}

/// A prompt method's body, run as one turn (a method that returns the prompt's response):
/// `turn(&cx, request.session_id.to_string(), async move { .. }).await`. The card opens after
/// the grace; the turn ends when the body returns (failed on `Err`) or is dropped (cancelled).
pub async fn turn<S: AcpSink + ?Sized, R: AcpOutcome>(
    sink: &S,
    session: impl std::fmt::Display,
    body: impl std::future::Future<Output = R>,
) -> R {
    let ends = ACP_RESPONSE_ENDS_TURN;
    let on_drop = if ends { Some(false) } else { None };
    let turn = acp_begin(sink, session.to_string(), on_drop);
    let response = body.await;
    if ends || response.acp_failed() {
        acp_finish(&turn.0.session, turn.0.turn, response.acp_failed());
    }
    response
}
