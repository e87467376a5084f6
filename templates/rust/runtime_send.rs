
// ---- The builder API (agent-client-protocol ≥ 0.11): handlers on any thread; the state is
// behind one lock, timers are tokio tasks (or a thread outside a tokio runtime).

use {{SDK}} as acp_sdk;

type AcpConnection = {{CONNECTION}};

/// Where a session's card updates go.
#[derive(Clone)]
pub struct AcpSend {
    send: std::sync::Arc<dyn Fn(AcpNotification) -> AcpReceipt + Send + Sync>,
    /// The path comes back through the emitter (never, for a connection).
    loops: bool,
}

/// Sends on a connection are queued at once: nothing to wait for.
pub type AcpReceipt = ();

/// Whether the prompt's response ends the turn ({{RESPONSE_ENDS_TURN_DOC}}).
const ACP_RESPONSE_ENDS_TURN: bool = {{RESPONSE_ENDS_TURN}};

static ACP_STATE: std::sync::Mutex<Option<HashMap<String, AcpSession>>> =
    std::sync::Mutex::new(None);

fn acp_with<R>(f: impl FnOnce(&mut HashMap<String, AcpSession>) -> R) -> R {
    let mut state = ACP_STATE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    f(state.get_or_insert_with(HashMap::new))
}

