
// ---- Messages of the agent's own `Serialize` types (`{{SERDE}}`).

/// A message of the agent's type on its way out, or a card written in its place.
pub enum AcpAny<'a, T: ?Sized> {
    Own(&'a T),
    Card(acp_json::Value),
}

impl<T: {{SERDE}}::Serialize + ?Sized> {{SERDE}}::Serialize for AcpAny<'_, T> {
    fn serialize<S: {{SERDE}}::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AcpAny::Own(message) => message.serialize(serializer),
            AcpAny::Card(card) => card.serialize(serializer),
        }
    }
}

/// `wire` for a message of the agent's own type: `for n in &wire_any(&n) { <its write> }`.
pub fn wire_any<T: {{SERDE}}::Serialize + ?Sized>(message: &T) -> Vec<AcpAny<'_, T>> {
    if ACP_WRITING.with(|w| w.get()) {
        return vec![AcpAny::Own(message)];
    }
    let Ok(value) = acp_json::to_value(message) else {
        return vec![AcpAny::Own(message)];
    };
    ACP_IN_WIRE.with(|w| w.set(true));
    let decided = acp_decide(value);
    ACP_IN_WIRE.with(|w| w.set(false));
    let Some((before, own)) = decided else {
        return vec![AcpAny::Own(message)];
    };
    let mut out: Vec<AcpAny<'_, T>> = before.into_iter().map(AcpAny::Card).collect();
    if own.is_some() {
        out.push(AcpAny::Own(message));
    }
    out
}
