//! The generations of the `agent-client-protocol` crate, and where each keeps the things the
//! inserted code names: the message types, the connection, the send of a session update.

use crate::report::Shape;

/// One API generation (and, for 5.x, protocol version) of the SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// ≤ 0.10: `impl Agent for X`, `AgentSideConnection`, a `LocalSet` (futures are `!Send`).
    Trait,
    /// 0.11 – 3.x: `Agent.builder().on_receive_request(..)`; the types in `schema` (0.11) or
    /// `schema::v1` (1.x – 3.x).
    Builder { schema_v1: bool },
    /// ≥ 5: `Agent.v1()`, types under `v1::schema`.
    V1,
    /// ≥ 5: `Agent.v2()` (draft protocol v2): a turn ends when its session goes idle.
    V2,
}

impl Dialect {
    /// The dialect of an SDK version; for 5.x, protocol v2 when the code uses `v2` and not `v1`.
    pub fn of(version: (u64, u64), texts: &[&str]) -> std::result::Result<Dialect, String> {
        Ok(match version {
            (0, minor) if minor <= 10 => Dialect::Trait,
            (0, _) => Dialect::Builder { schema_v1: false },
            (1..=3, _) => Dialect::Builder { schema_v1: true },
            _ => {
                let uses = |m: &str| {
                    texts
                        .iter()
                        .any(|t| t.contains(&format!("::{m}::")) || t.contains(&format!(".{m}()")))
                };
                match (uses("v1"), uses("v2")) {
                    (_, false) => Dialect::V1,
                    (false, true) => Dialect::V2,
                    (true, true) => {
                        return Err(
                            "the code uses both protocol v1 and v2 of the SDK; acp-patch patches one of them"
                                .into(),
                        );
                    }
                }
            }
        })
    }

    /// The `!Send` runtime of the trait API (a `LocalSet`).
    pub fn local(self) -> bool {
        self == Dialect::Trait
    }

    /// Where the message types are.
    pub fn schema(self, sdk: &str) -> String {
        match self {
            Dialect::Trait => sdk.to_string(),
            Dialect::Builder { schema_v1: false } => format!("{sdk}::schema"),
            Dialect::Builder { schema_v1: true } => format!("{sdk}::schema::v1"),
            Dialect::V1 => format!("{sdk}::v1::schema"),
            Dialect::V2 => format!("{sdk}::v2::schema"),
        }
    }

    /// The agent's connection to the client (builder generations).
    pub fn connection(self, sdk: &str) -> String {
        match self {
            Dialect::Trait => format!("{sdk}::AgentSideConnection"),
            Dialect::Builder { .. } => format!("{sdk}::ConnectionTo<{sdk}::Client>"),
            Dialect::V1 => format!("{sdk}::v1::ConnectionTo<{sdk}::Client>"),
            Dialect::V2 => format!("{sdk}::v2::ConnectionTo<{sdk}::Client>"),
        }
    }

    /// Whether the SDK's `Responder` carries a protocol parameter (`Responder<T, P>`, 5.x).
    pub fn protocol_generic(self) -> bool {
        matches!(self, Dialect::V1 | Dialect::V2)
    }

    /// The SDK method that puts a session update on the wire.
    pub fn send_method(self) -> &'static str {
        match self {
            Dialect::Trait => "session_notification",
            _ => "send_notification",
        }
    }

    /// Whether the prompt's response ends the turn (protocol v1), or only an error does
    /// (protocol v2, where the session going idle ends it).
    pub fn response_ends_turn(self) -> bool {
        self != Dialect::V2
    }

    /// The shape named in verify's report.
    pub fn shape(self) -> Shape {
        Shape::Protocol(Some(match self {
            Dialect::Trait => "trait API ≤ 0.10",
            Dialect::Builder { schema_v1: false } => "builder API 0.11",
            Dialect::Builder { schema_v1: true } => "builder API 1.x–3.x",
            Dialect::V1 => "Agent.v1(), 5.x",
            Dialect::V2 => "Agent.v2(), 5.x, protocol v2",
        }))
    }
}
