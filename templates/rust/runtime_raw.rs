
// ---- An agent without an SDK: its own JSON-RPC loop writes its messages (`serde_json`
// values, or their text) through a writer of its own; the card goes out through it too.

use {{JSON}} as acp_json;

type AcpNotification = acp_json::Value;
type AcpWriterFn = std::sync::Arc<dyn Fn(AcpNotification) + Send + Sync>;

/// Where a session's card updates go: they are queued, and written in order through the
/// agent's own writer by whoever drains the queue (never under the state's lock, so a
/// writer that waits for a lock the agent holds cannot stall the runtime).
#[derive(Clone)]
pub struct AcpSend {
    send: std::sync::Arc<dyn Fn(AcpNotification) -> AcpReceipt + Send + Sync>,
    /// The path never comes back through the emitter as a new update.
    loops: bool,
}

/// Queued: nothing to wait for.
pub type AcpReceipt = ();

static ACP_STATE: std::sync::Mutex<Option<HashMap<String, AcpSession>>> =
    std::sync::Mutex::new(None);

/// Updates decided but not yet written, in order, each with the writer it goes through.
static ACP_QUEUE: std::sync::Mutex<VecDeque<(AcpWriterFn, AcpNotification)>> =
    std::sync::Mutex::new(VecDeque::new());
/// A thread is writing the queue out.
static ACP_DRAINING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static ACP_DRAINED: std::sync::Condvar = std::sync::Condvar::new();

thread_local! {
    /// Set while this thread writes through the agent's writer: a `wire` it reaches there
    /// passes the message on as it is.
    static ACP_WRITING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Set while `wire` decides: the agent may hold its writer's lock, so it never waits.
    static ACP_IN_WIRE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn acp_lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Runs `f` on the sessions under the state's lock, then writes what it queued and waits
/// until another thread writing the queue is done (a turn's last updates go out before its
/// response). Inside `wire` the agent may hold a lock its writer takes: the queue is then
/// written by a thread of its own.
fn acp_with<R>(f: impl FnOnce(&mut HashMap<String, AcpSession>) -> R) -> R {
    let r = {
        let mut state = acp_lock(&ACP_STATE);
        f(state.get_or_insert_with(HashMap::new))
    };
    if ACP_IN_WIRE.with(|w| w.get()) {
        acp_drain_elsewhere();
    } else {
        acp_drain();
        acp_wait_drained(Duration::from_secs(2));
    }
    r
}

/// The queue written out by a thread of its own, when it holds updates nobody writes.
fn acp_drain_elsewhere() {
    if !ACP_DRAINING.load(std::sync::atomic::Ordering::SeqCst) && !acp_lock(&ACP_QUEUE).is_empty() {
        std::thread::spawn(acp_drain);
    }
}

/// Writes the queue out unless another thread is doing so (it writes ours too, in order).
fn acp_drain() {
    use std::sync::atomic::Ordering::SeqCst;
    loop {
        if ACP_WRITING.with(|w| w.get()) || ACP_DRAINING.swap(true, SeqCst) {
            return;
        }
        loop {
            let next = acp_lock(&ACP_QUEUE).pop_front();
            let Some((writer, n)) = next else { break };
            ACP_WRITING.with(|w| w.set(true));
            writer(n);
            ACP_WRITING.with(|w| w.set(false));
        }
        let queue = acp_lock(&ACP_QUEUE);
        ACP_DRAINING.store(false, SeqCst);
        ACP_DRAINED.notify_all();
        if queue.is_empty() {
            return;
        }
    }
}

/// Whether updates are waiting to be written (then the agent's own go behind them).
fn acp_queue_busy() -> bool {
    ACP_DRAINING.load(std::sync::atomic::Ordering::SeqCst) || !acp_lock(&ACP_QUEUE).is_empty()
}

/// Waits (at most `limit`) until the queue is written out: a turn's last updates before
/// its response.
fn acp_wait_drained(limit: Duration) {
    let deadline = Instant::now() + limit;
    let mut queue = acp_lock(&ACP_QUEUE);
    while ACP_DRAINING.load(std::sync::atomic::Ordering::SeqCst) || !queue.is_empty() {
        let now = Instant::now();
        if now >= deadline || ACP_WRITING.with(|w| w.get()) {
            return;
        }
        queue = match ACP_DRAINED.wait_timeout(queue, deadline - now) {
            Ok((q, _)) => q,
            Err(e) => e.into_inner().0,
        };
    }
}

/// The agent's writer, as the prompt handler builds it from one of its own writes.
pub struct AcpWriter(AcpWriterFn);

/// Where a turn's card updates go.
pub trait AcpSink {
    fn acp_sender(&self) -> Option<AcpSend>;
}

impl AcpSink for AcpWriter {
    fn acp_sender(&self) -> Option<AcpSend> {
        let writer = self.0.clone();
        Some(AcpSend {
            send: std::sync::Arc::new(move |n| {
                acp_lock(&ACP_QUEUE).push_back((writer.clone(), n));
            }),
            loops: false,
        })
    }
}

/// What the agent's writer returns: an error is logged (with `{{PREFIX}}_PROGRESS_DEBUG`).
pub trait AcpWritten {
    fn acp_check(self);
}

impl AcpWritten for () {
    fn acp_check(self) {}
}

impl<T, E: std::fmt::Debug> AcpWritten for Result<T, E> {
    fn acp_check(self) {
        if let Err(e) = self {
            acp_debug(&format!("card update failed: {e:?}"));
        }
    }
}

/// A session id where the handler has one: the id itself, or the request's params (or
/// the whole request) holding `sessionId`.
pub trait AcpSessionKey {
    fn acp_session(&self) -> Option<String>;
}

impl AcpSessionKey for acp_json::Value {
    fn acp_session(&self) -> Option<String> {
        match self {
            acp_json::Value::String(s) => Some(s.clone()),
            acp_json::Value::Object(o) => ["sessionId", "session_id"]
                .iter()
                .find_map(|k| o.get(*k).and_then(|v| v.as_str()).map(str::to_string))
                .or_else(|| o.get("params").and_then(AcpSessionKey::acp_session)),
            _ => None,
        }
    }
}

impl AcpSessionKey for str {
    fn acp_session(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl AcpSessionKey for String {
    fn acp_session(&self) -> Option<String> {
        Some(self.clone())
    }
}

impl AcpSessionKey for std::sync::Arc<str> {
    fn acp_session(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl AcpSessionKey for Box<str> {
    fn acp_session(&self) -> Option<String> {
        Some(self.to_string())
    }
}

impl<T: AcpSessionKey + ?Sized> AcpSessionKey for &T {
    fn acp_session(&self) -> Option<String> {
        (**self).acp_session()
    }
}

impl<T: AcpSessionKey> AcpSessionKey for Option<T> {
    fn acp_session(&self) -> Option<String> {
        self.as_ref().and_then(AcpSessionKey::acp_session)
    }
}

/// Who runs a prompt handler: the thread, and the tokio task where there is one (a task
/// may move between threads).
#[derive(Clone, Debug)]
struct AcpOwner(std::thread::ThreadId, Option<String>);

impl PartialEq for AcpOwner {
    fn eq(&self, other: &Self) -> bool {
        match (&self.1, &other.1) {
            (Some(a), Some(b)) => a == b,
            (None, None) => self.0 == other.0,
            _ => false,
        }
    }
}

fn acp_owner() -> AcpOwner {
    let task: Option<String> = {{TASK_ID}};
    AcpOwner(std::thread::current().id(), task)
}

/// Whose turn is whose: a response to a prompt written by its handler ends its turn.
static ACP_OWNERS: std::sync::Mutex<Vec<(AcpOwner, String, u64)>> =
    std::sync::Mutex::new(Vec::new());

/// At the entry of a prompt handler: `let _acp_turn = begin(&params, <the agent's writer>);`.
/// The card opens after the grace, through the writer; the turn ends when the guard is
/// dropped (the handler returns), or before a response to the prompt written here.
pub fn begin<K: AcpSessionKey + ?Sized, R: AcpWritten>(
    session: &K,
    writer: impl Fn(AcpNotification) -> R + Send + Sync + 'static,
) -> AcpTurn {
    let Some(id) = session.acp_session() else {
        acp_debug("a prompt without a session id: no card");
        return AcpTurn({{PTR}}::new(AcpTurnInner {
            session: String::new(),
            turn: 0,
            on_drop: None,
        }));
    };
    let sink = AcpWriter(std::sync::Arc::new(move |n| writer(n).acp_check()));
    let turn = acp_begin(&sink, id.clone(), Some(false));
    let owner = acp_owner();
    let mut owners = acp_lock(&ACP_OWNERS);
    owners.retain(|(o, _, _)| *o != owner);
    owners.push((owner, id, turn.0.turn));
    turn
}

/// At the entry of a `session/cancel` handler: the turn ends now (card closed, held text
/// out); what the agent still writes for it passes as it is.
pub fn cancel<K: AcpSessionKey + ?Sized>(session: &K) {
    let Some(id) = session.acp_session() else {
        return;
    };
    acp_with(|sessions| {
        if let Some(s) = sessions.get_mut(&id) {
            if s.active {
                let out = acp_end_turn(s, &id, false);
                acp_send_out(s, out);
            }
        }
    });
}

/// A JSON-RPC response to a prompt: it carries a stop reason, or an error.
fn acp_is_prompt_response(v: &acp_json::Value) -> bool {
    v.get("method").is_none()
        && v.get("id").is_some()
        && (v.get("error").is_some() || v.pointer("/result/stopReason").is_some())
}

/// What one message on its way out means: (updates to write before it, itself or `None`
/// while it is held). `None` when the runtime leaves it alone.
fn acp_decide(v: acp_json::Value) -> Option<(Vec<AcpNotification>, Option<AcpNotification>)> {
    if v.get("method").and_then(|m| m.as_str()) == Some("session/update") {
        let has_session = v
            .pointer("/params/sessionId")
            .is_some_and(|s| s.is_string());
        if !has_session {
            return None;
        }
        let session = acp_session_of(&v);
        let out = acp_outgoing(v);
        let (mut before, mut own) = (out.before, out.own);
        // behind updates still queued: everything goes through the queue, in order
        if acp_queue_busy() {
            let send = acp_with(|sessions| sessions.get(&session).and_then(|s| s.send.clone()));
            if let Some(send) = send {
                for n in before.drain(..).chain(own.take()) {
                    (send.send)(n);
                }
                acp_drain_elsewhere();
            }
        }
        return Some((before, own));
    }
    if !acp_is_prompt_response(&v) {
        return None;
    }
    let owner = acp_owner();
    let (session, turn) = acp_lock(&ACP_OWNERS)
        .iter()
        .rev()
        .find(|(o, _, _)| *o == owner)
        .map(|(_, s, t)| (s.clone(), *t))?;
    let failed = v.get("error").is_some();
    let before = acp_with(|sessions| match sessions.get_mut(&session) {
        Some(s) if s.active && s.turn == turn => acp_end_turn(s, &session, failed),
        _ => Vec::new(),
    });
    // what is queued for the turn goes out first (unless it waits for a lock held here)
    acp_wait_drained(Duration::from_millis(500));
    Some((before, Some(v)))
}

/// A message the agent writes, as it writes it: a `serde_json::Value` or its JSON text
/// (owned or borrowed); cards come out in the same form.
pub trait AcpWire {
    type Owned;
    fn acp_json(&self) -> Option<(acp_json::Value, String)>;
    fn acp_clone(&self) -> Self::Owned;
    fn acp_own(self) -> Self::Owned
    where
        Self: Sized,
    {
        self.acp_clone()
    }
    fn acp_card(card: &acp_json::Value, tail: &str) -> Self::Owned;
}

impl AcpWire for acp_json::Value {
    type Owned = acp_json::Value;
    fn acp_json(&self) -> Option<(acp_json::Value, String)> {
        Some((self.clone(), String::new()))
    }
    fn acp_clone(&self) -> Self::Owned {
        self.clone()
    }
    fn acp_own(self) -> Self::Owned {
        self
    }
    fn acp_card(card: &acp_json::Value, _tail: &str) -> Self::Owned {
        card.clone()
    }
}

impl AcpWire for str {
    type Owned = String;
    fn acp_json(&self) -> Option<(acp_json::Value, String)> {
        let json = self.trim_end();
        let v = acp_json::from_str(json).ok()?;
        Some((v, self[json.len()..].to_string()))
    }
    fn acp_clone(&self) -> Self::Owned {
        self.to_string()
    }
    fn acp_card(card: &acp_json::Value, tail: &str) -> Self::Owned {
        format!("{card}{tail}")
    }
}

impl AcpWire for String {
    type Owned = String;
    fn acp_json(&self) -> Option<(acp_json::Value, String)> {
        self.as_str().acp_json()
    }
    fn acp_clone(&self) -> Self::Owned {
        self.clone()
    }
    fn acp_own(self) -> Self::Owned {
        self
    }
    fn acp_card(card: &acp_json::Value, tail: &str) -> Self::Owned {
        str::acp_card(card, tail)
    }
}

impl AcpWire for [u8] {
    type Owned = Vec<u8>;
    fn acp_json(&self) -> Option<(acp_json::Value, String)> {
        std::str::from_utf8(self).ok()?.acp_json()
    }
    fn acp_clone(&self) -> Self::Owned {
        self.to_vec()
    }
    fn acp_card(card: &acp_json::Value, tail: &str) -> Self::Owned {
        str::acp_card(card, tail).into_bytes()
    }
}

impl AcpWire for Vec<u8> {
    type Owned = Vec<u8>;
    fn acp_json(&self) -> Option<(acp_json::Value, String)> {
        self.as_slice().acp_json()
    }
    fn acp_clone(&self) -> Self::Owned {
        self.clone()
    }
    fn acp_own(self) -> Self::Owned {
        self
    }
    fn acp_card(card: &acp_json::Value, tail: &str) -> Self::Owned {
        <[u8]>::acp_card(card, tail)
    }
}

impl<T: AcpWire + ?Sized> AcpWire for &T {
    type Owned = T::Owned;
    fn acp_json(&self) -> Option<(acp_json::Value, String)> {
        (**self).acp_json()
    }
    fn acp_clone(&self) -> Self::Owned {
        (**self).acp_clone()
    }
    fn acp_card(card: &acp_json::Value, tail: &str) -> Self::Owned {
        T::acp_card(card, tail)
    }
}

/// The emitter around one of the agent's writes: `for msg in wire(msg) { <its write> }`
/// writes what the agent would, with the card closed before its first real update, text
/// held after reasoning (nothing to write while held), and the turn ended before the
/// prompt's response.
pub fn wire<M: AcpWire>(message: M) -> Vec<M::Owned> {
    if ACP_WRITING.with(|w| w.get()) {
        return vec![message.acp_own()];
    }
    let Some((value, tail)) = message.acp_json() else {
        return vec![message.acp_own()];
    };
    ACP_IN_WIRE.with(|w| w.set(true));
    let decided = acp_decide(value);
    ACP_IN_WIRE.with(|w| w.set(false));
    let Some((before, own)) = decided else {
        return vec![message.acp_own()];
    };
    let mut out: Vec<M::Owned> = before.iter().map(|n| M::acp_card(n, &tail)).collect();
    if own.is_some() {
        out.push(message.acp_own());
    }
    out
}

/// What a wrapped write whose value is used gives while its message is held.
pub trait AcpHeld {
    fn acp_held() -> Self;
}

impl AcpHeld for () {
    fn acp_held() -> Self {}
}

impl AcpHeld for bool {
    fn acp_held() -> Self {
        true
    }
}

impl AcpHeld for usize {
    fn acp_held() -> Self {
        0
    }
}

impl<T: AcpHeld, E> AcpHeld for Result<T, E> {
    fn acp_held() -> Self {
        Ok(T::acp_held())
    }
}

impl<T: AcpHeld> AcpHeld for Option<T> {
    fn acp_held() -> Self {
        Some(T::acp_held())
    }
}

/// The value of a wrapped write that wrote nothing (its message held).
pub fn held<R: AcpHeld>() -> R {
    R::acp_held()
}
