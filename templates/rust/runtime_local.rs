
// ---- The trait API (agent-client-protocol ≤ 0.10): one thread, a `LocalSet`, futures
// that are not `Send`; timers are `spawn_local` tasks.

use {{SDK}} as acp_sdk;

use acp_sdk::Client as _;

/// Where a session's card updates go.
#[derive(Clone)]
pub struct AcpSend {
    send: std::rc::Rc<dyn Fn(AcpNotification) -> AcpReceipt>,
    /// The path comes back through the emitter (a channel the agent drains).
    loops: bool,
}

/// Resolves once a channel's drain task took the update (`None`: nothing to wait for).
pub type AcpReceipt = Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>>;

/// The prompt's response ends the turn (protocol v1).
const ACP_RESPONSE_ENDS_TURN: bool = true;

thread_local! {
    static ACP_STATE: std::cell::RefCell<HashMap<String, AcpSession>> = Default::default();
}

fn acp_with<R>(f: impl FnOnce(&mut HashMap<String, AcpSession>) -> R) -> R {
    ACP_STATE.with(|state| f(&mut state.borrow_mut()))
}

fn acp_runtime_seen() {}

/// A timer task; stopped when its card or turn ends.
pub struct AcpTimer(tokio::task::JoinHandle<()>);

impl AcpTimer {
    fn stop(self) {
        self.0.abort();
    }
}

fn acp_spawn_after(after: Duration, f: impl FnOnce() + 'static) -> AcpTimer {
    AcpTimer(tokio::task::spawn_local(async move {
        tokio::time::sleep(after).await;
        f();
    }))
}

fn acp_spawn_interval(every: Duration, mut tick: impl FnMut() -> bool + 'static) -> AcpTimer {
    AcpTimer(tokio::task::spawn_local(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.tick().await; // the first tick is immediate
        loop {
            ticks.tick().await;
            if !tick() {
                return;
            }
        }
    }))
}

/// Polls a send once: the SDK's notification future is ready at once (it queues the line).
fn acp_poll_now<E: std::fmt::Debug>(future: impl std::future::Future<Output = Result<(), E>>) {
    struct AcpNoWake;
    impl std::task::Wake for AcpNoWake {
        fn wake(self: std::sync::Arc<Self>) {}
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(AcpNoWake));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = Box::pin(future);
    match future.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(Ok(())) => {}
        std::task::Poll::Ready(Err(e)) => acp_debug(&format!("card update failed: {e:?}")),
        std::task::Poll::Pending => acp_debug("card update not sent: the connection is busy"),
    }
}

/// Something that reaches the client now: the connection, or a cell or pointer holding it.
pub trait AcpConn {
    fn acp_notify(&self, update: AcpNotification) -> AcpReceipt;
}

impl AcpConn for acp_sdk::AgentSideConnection {
    fn acp_notify(&self, update: AcpNotification) -> AcpReceipt {
        acp_poll_now(self.session_notification(update));
        None
    }
}

macro_rules! acp_conn_through {
    ($($ty:ty => $get:expr),* $(,)?) => {$(
        impl<T: AcpConn + ?Sized> AcpConn for $ty {
            fn acp_notify(&self, update: AcpNotification) -> AcpReceipt {
                let get: fn(&Self) -> Option<&T> = $get;
                match get(self) {
                    Some(conn) => conn.acp_notify(update),
                    None => {
                        acp_debug("the connection is not set yet: card update dropped");
                        None
                    }
                }
            }
        }
    )*};
}

acp_conn_through! {
    &T => |c| Some(*c),
    std::rc::Rc<T> => |c| Some(&**c),
    std::sync::Arc<T> => |c| Some(&**c),
    Box<T> => |c| Some(&**c),
}

impl<T: AcpConn> AcpConn for Option<T> {
    fn acp_notify(&self, update: AcpNotification) -> AcpReceipt {
        match self {
            Some(conn) => conn.acp_notify(update),
            None => None,
        }
    }
}

impl<T: AcpConn> AcpConn for std::cell::OnceCell<T> {
    fn acp_notify(&self, update: AcpNotification) -> AcpReceipt {
        self.get().and_then(|conn| conn.acp_notify(update))
    }
}

impl<T: AcpConn> AcpConn for std::sync::OnceLock<T> {
    fn acp_notify(&self, update: AcpNotification) -> AcpReceipt {
        self.get().and_then(|conn| conn.acp_notify(update))
    }
}

impl<T: AcpConn> AcpConn for std::cell::RefCell<T> {
    fn acp_notify(&self, update: AcpNotification) -> AcpReceipt {
        match self.try_borrow() {
            Ok(conn) => conn.acp_notify(update),
            Err(_) => None,
        }
    }
}

/// Where a turn's card updates can be sent later (heartbeats, gap cards, held text): a
/// shared pointer to the connection, or a channel the agent drains into the connection.
pub trait AcpSink {
    fn acp_sender(&self) -> Option<AcpSend>;
}

impl<T: AcpConn + 'static> AcpSink for std::rc::Rc<T> {
    fn acp_sender(&self) -> Option<AcpSend> {
        let conn = self.clone();
        Some(AcpSend {
            send: std::rc::Rc::new(move |update| conn.acp_notify(update)),
            loops: false,
        })
    }
}

impl<T: AcpConn + 'static> AcpSink for std::sync::Arc<T> {
    fn acp_sender(&self) -> Option<AcpSend> {
        let conn = self.clone();
        Some(AcpSend {
            send: std::rc::Rc::new(move |update| conn.acp_notify(update)),
            loops: false,
        })
    }
}

impl<T: AcpSink + ?Sized> AcpSink for &T {
    fn acp_sender(&self) -> Option<AcpSend> {
        (**self).acp_sender()
    }
}

impl<T: AcpSink> AcpSink for Option<T> {
    fn acp_sender(&self) -> Option<AcpSend> {
        self.as_ref().and_then(AcpSink::acp_sender)
    }
}

impl<T: AcpSink> AcpSink for std::cell::OnceCell<T> {
    fn acp_sender(&self) -> Option<AcpSend> {
        self.get().and_then(AcpSink::acp_sender)
    }
}

impl<T: AcpSink> AcpSink for std::sync::OnceLock<T> {
    fn acp_sender(&self) -> Option<AcpSend> {
        self.get().and_then(AcpSink::acp_sender)
    }
}

impl<T: AcpSink> AcpSink for std::cell::RefCell<T> {
    fn acp_sender(&self) -> Option<AcpSend> {
        self.try_borrow().ok().and_then(|sink| sink.acp_sender())
    }
}

/// A channel item made from a card update: the agent's drain task sends it on.
pub trait AcpItem: Sized + 'static {
    fn acp_item(update: AcpNotification) -> (Self, AcpReceipt);
}

impl AcpItem for AcpNotification {
    /// No ack to wait for: a yield lets the drain task (queued first) take it.
    fn acp_item(update: AcpNotification) -> (Self, AcpReceipt) {
        (update, Some(Box::pin(tokio::task::yield_now())))
    }
}

impl<I: AcpItem> AcpSink for std::sync::mpsc::Sender<I> {
    fn acp_sender(&self) -> Option<AcpSend> {
        let tx = self.clone();
        Some(AcpSend {
            send: std::rc::Rc::new(move |update| {
                let (item, receipt) = I::acp_item(update);
                tx.send(item).ok().and(receipt)
            }),
            loops: true,
        })
    }
}

/// The trait API's emitter: `conn.acp_progress().session_notification(n).await` sends what
/// `conn.session_notification(n).await` would, with the card and the hold around it. It is
/// itself a `Client`, so the agent's own `Client` import keeps its use.
pub trait AcpEmit {
    fn acp_progress(&self) -> AcpEmitter<'_, Self>;
}

impl<C: acp_sdk::Client + ?Sized> AcpEmit for C {
    fn acp_progress(&self) -> AcpEmitter<'_, Self> {
        AcpEmitter(self)
    }
}

pub struct AcpEmitter<'a, C: ?Sized>(&'a C);

type AcpLocalFuture<'f, T> =
    std::pin::Pin<Box<dyn std::future::Future<Output = acp_sdk::Result<T>> + 'f>>;

impl<C: acp_sdk::Client + ?Sized> acp_sdk::Client for AcpEmitter<'_, C> {
    fn request_permission<'s, 'f>(
        &'s self,
        args: acp_schema::RequestPermissionRequest,
    ) -> AcpLocalFuture<'f, acp_schema::RequestPermissionResponse>
    where
        's: 'f,
        Self: 'f,
    {
        self.0.request_permission(args)
    }

    /// Same result as the SDK's: the agent's own update's (`Ok` while it is held).
    fn session_notification<'s, 'f>(&'s self, update: AcpNotification) -> AcpLocalFuture<'f, ()>
    where
        's: 'f,
        Self: 'f,
    {
        let out = acp_outgoing(update);
        let conn = self.0;
        Box::pin(async move {
            for n in out.before {
                if let Err(e) = conn.session_notification(n).await {
                    acp_debug(&format!("card update failed: {e:?}"));
                }
            }
            match out.own {
                Some(n) => conn.session_notification(n).await,
                None => Ok(()),
            }
        })
    }
}

/// The prompt handler's body, run as one turn:
/// `turn(&self.conn, args.session_id.to_string(), async move { .. }).await`. The card opens
/// after the grace; the turn ends when the body returns (failed on `Err`) or is dropped
/// (cancelled), and the card and held text reach the channel's drain before the response leaves.
pub async fn turn<S: AcpSink + ?Sized, R: AcpOutcome>(
    sink: &S,
    session: impl std::fmt::Display,
    body: impl std::future::Future<Output = R>,
) -> R {
    let turn = acp_begin(sink, session.to_string(), Some(false));
    let response = body.await;
    for receipt in acp_finish(&turn.0.session, turn.0.turn, response.acp_failed()) {
        if let Some(receipt) = receipt {
            receipt.await;
        }
    }
    response
}
