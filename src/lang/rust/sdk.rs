//! The Rust ACP SDKs acp-patch knows (the crates an agent depends on for the protocol), their
//! generations, and where each keeps the things the inserted code names: the message types,
//! the connection, the responder, the send of a session update.

use crate::report::Shape;

/// A crate that provides the agent side of ACP: the builder (or trait) API, the connection
/// whose `send_notification` / `session_notification` puts a session update on the wire, and
/// the message types of `agent-client-protocol-schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Package {
    /// `agent-client-protocol`: every generation (trait ≤ 0.10, builder 0.11–3.x, 5.x).
    Acp,
    /// `sacp` (Symposium's ACP SDK): the builder API that became agent-client-protocol 0.11
    /// (10.x with its earlier names `JrConnectionCx` / `JrRequestCx`; 11.x the same crate as
    /// agent-client-protocol 0.11 under its old name); the types under `sacp::schema`.
    Sacp,
}

impl Package {
    /// Every SDK, in the order a manifest is searched.
    pub const ALL: [Package; 2] = [Package::Acp, Package::Sacp];

    /// The crate's name on crates.io.
    pub fn name(self) -> &'static str {
        match self {
            Package::Acp => "agent-client-protocol",
            Package::Sacp => "sacp",
        }
    }

    /// Their names, for a message: `agent-client-protocol or sacp`.
    pub fn names() -> String {
        Package::ALL.map(Package::name).join(" or ")
    }

    /// The SDK of a dependency's package name.
    pub fn of_name(name: &str) -> Option<Package> {
        Package::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The dialect a version of this SDK speaks (`version_text`: as the manifest or lock
    /// spells it; `texts`: the crate's sources, for 5.x's protocol version); why not, for a
    /// version whose messages the inserted code cannot build.
    pub fn dialect(
        self,
        version: (u64, u64),
        version_text: &str,
        texts: &[&str],
    ) -> std::result::Result<Dialect, String> {
        match self {
            Package::Acp if version < (0, 8) => Err(format!(
                "{} {version_text} builds messages with struct literals (before 0.8); acp-patch inserts code for 0.8 and later",
                self.name(),
            )),
            Package::Acp => Dialect::of(version, texts),
            // 0.1 – 9.x (and 10.0's alphas): agent-client-protocol-schema 0.6, struct literals
            Package::Sacp if version.0 < 10 => Err(format!(
                "{} {version_text} builds messages with struct literals (agent-client-protocol-schema 0.6); acp-patch inserts code for sacp 10 and later",
                self.name(),
            )),
            Package::Sacp if version.0 == 10 => Ok(Dialect::Builder {
                schema_v1: false,
                jr: true,
            }),
            Package::Sacp => Ok(Dialect::Builder {
                schema_v1: false,
                jr: false,
            }),
        }
    }
}

/// Whether a module of a 1.x–3.x agent names the SDK's draft protocol v2 (an unstable
/// feature there, with its own builder, connection and message types).
/// A name in a line comment (a doc line mentioning v2) does not count.
pub fn uses_builder_v2(text: &str) -> bool {
    text.lines()
        .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
        .any(|code| {
            ["V2ConnectionTo", "V2Builder", "schema::v2", ".v2()"]
                .iter()
                .any(|m| code.contains(m))
        })
}

/// One API generation (and, for 5.x, protocol version) of the SDK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// ≤ 0.10: `impl Agent for X`, `AgentSideConnection`, a `LocalSet` (futures are `!Send`).
    Trait,
    /// 0.11 – 3.x: `Agent.builder().on_receive_request(..)`; the types in `schema` (0.11) or
    /// `schema::v1` (1.x – 3.x). `jr`: the names of sacp 10 (`AgentToClient::builder()`,
    /// `JrConnectionCx<AgentToClient>`, `JrRequestCx<T>`, `JrNotification`, `JrResponsePayload`).
    Builder { schema_v1: bool, jr: bool },
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
            (0, _) => Dialect::Builder {
                schema_v1: false,
                jr: false,
            },
            (1..=3, _) => {
                // the draft protocol v2 of 1.x–3.x (`Agent.v2()` behind a feature): a crate on
                // it alone is refused; beside v1, its modules are left as they are
                if texts.iter().any(|t| uses_builder_v2(t))
                    && !texts
                        .iter()
                        .any(|t| t.contains("schema::v1") || t.contains("Agent.builder()"))
                {
                    return Err(format!(
                        "the code uses the draft protocol v2 of agent-client-protocol {}.x (`Agent.v2()`, `V2ConnectionTo`, `schema::v2`); acp-patch patches protocol v1 of 1.x–3.x, and protocol v2 from 5.x on",
                        version.0
                    ));
                }
                Dialect::Builder {
                    schema_v1: true,
                    jr: false,
                }
            }
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
            Dialect::Builder {
                schema_v1: false, ..
            } => format!("{sdk}::schema"),
            Dialect::Builder {
                schema_v1: true, ..
            } => format!("{sdk}::schema::v1"),
            Dialect::V1 => format!("{sdk}::v1::schema"),
            Dialect::V2 => format!("{sdk}::v2::schema"),
        }
    }

    /// The agent's connection to the client (builder generations).
    pub fn connection(self, sdk: &str) -> String {
        match self {
            Dialect::Trait => format!("{sdk}::AgentSideConnection"),
            Dialect::Builder { jr: true, .. } => {
                format!("{sdk}::JrConnectionCx<{sdk}::AgentToClient>")
            }
            Dialect::Builder { .. } => format!("{sdk}::ConnectionTo<{sdk}::Client>"),
            Dialect::V1 => format!("{sdk}::v1::ConnectionTo<{sdk}::Client>"),
            Dialect::V2 => format!("{sdk}::v2::ConnectionTo<{sdk}::Client>"),
        }
    }

    /// The responder of a request, generic over the response `T` (and, 5.x, the protocol `P`).
    pub fn responder(self) -> &'static str {
        match self {
            Dialect::Builder { jr: true, .. } => "acp_sdk::JrRequestCx<T>",
            Dialect::V1 | Dialect::V2 => "acp_sdk::Responder<T, P>",
            _ => "acp_sdk::Responder<T>",
        }
    }

    /// The SDK's trait of a response (`T` of the responder).
    pub fn response_trait(self) -> &'static str {
        match self {
            Dialect::Builder { jr: true, .. } => "acp_sdk::JrResponsePayload",
            _ => "acp_sdk::JsonRpcResponse",
        }
    }

    /// The SDK's trait of a notification (what `send_notification` takes).
    pub fn notification_trait(self) -> &'static str {
        match self {
            Dialect::Builder { jr: true, .. } => "acp_sdk::JrNotification",
            _ => "acp_sdk::JsonRpcNotification",
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
            Dialect::Builder { jr: true, .. } => "builder API of sacp 10",
            Dialect::Builder {
                schema_v1: false, ..
            } => "builder API 0.11",
            Dialect::Builder {
                schema_v1: true, ..
            } => "builder API 1.x–3.x",
            Dialect::V1 => "Agent.v1(), 5.x",
            Dialect::V2 => "Agent.v2(), 5.x, protocol v2",
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_on_protocol_v2_is_known_by_its_code_not_its_comments() {
        assert!(uses_builder_v2("let cx = Agent.v2().connect_to(t);\n"));
        assert!(uses_builder_v2(
            "use agent_client_protocol::schema::v2::PromptRequest;\n"
        ));
        assert!(!uses_builder_v2(
            "// the draft protocol (`Agent.v2()`, `V2ConnectionTo`) is not used here\nlet cx = Agent.builder();\n"
        ));
    }

    #[test]
    fn each_sdk_version_speaks_its_dialect_or_says_why_not() {
        let builder = |schema_v1, jr| Dialect::Builder { schema_v1, jr };
        assert_eq!(Package::of_name("sacp"), Some(Package::Sacp));
        assert_eq!(Package::of_name("sacp-tokio"), None);
        assert_eq!(Package::names(), "agent-client-protocol or sacp");
        let sacp = |v, t| Package::Sacp.dialect(v, t, &[]);
        assert_eq!(sacp((10, 1), "10.1.0"), Ok(builder(false, true)));
        assert_eq!(sacp((11, 0), "11.0.0"), Ok(builder(false, false)));
        assert!(
            sacp((9, 0), "9.0.0")
                .unwrap_err()
                .contains("sacp 9.0.0 builds messages with struct literals")
        );
        let acp = |v, t| Package::Acp.dialect(v, t, &[]);
        assert_eq!(acp((0, 10), "0.10.4"), Ok(Dialect::Trait));
        assert_eq!(acp((0, 11), "0.11.1"), Ok(builder(false, false)));
        assert_eq!(acp((3, 6), "3.6.0"), Ok(builder(true, false)));
        // 1.x–3.x's draft protocol v2: alone refused, beside v1 the crate is a v1 agent
        let v2 = "let a = agent_client_protocol::Agent.v2(); fn f(cx: V2ConnectionTo<Client>) {}";
        let v1 = "use agent_client_protocol::schema::v1::PromptRequest;";
        let acp3 = |texts: &[&str]| Package::Acp.dialect((3, 2), "3.2.0", texts);
        assert!(
            acp3(&[v2])
                .unwrap_err()
                .contains("draft protocol v2 of agent-client-protocol 3.x")
        );
        assert_eq!(acp3(&[v1, v2]), Ok(builder(true, false)));
        assert!(
            acp((0, 7), "0.7.0")
                .unwrap_err()
                .contains("agent-client-protocol 0.7.0")
        );
        // what the runtime module names: sacp 10's names, agent-client-protocol 0.11's otherwise
        let jr = builder(false, true);
        assert_eq!(
            jr.connection("sacp"),
            "sacp::JrConnectionCx<sacp::AgentToClient>"
        );
        assert_eq!(jr.schema("sacp"), "sacp::schema");
        assert_eq!(jr.responder(), "acp_sdk::JrRequestCx<T>");
        assert_eq!(jr.notification_trait(), "acp_sdk::JrNotification");
        assert_eq!(jr.response_trait(), "acp_sdk::JrResponsePayload");
        let v11 = sacp((11, 0), "11.0.0").unwrap();
        assert_eq!(v11.connection("sacp"), "sacp::ConnectionTo<sacp::Client>");
        assert_eq!(v11.responder(), "acp_sdk::Responder<T>");
        assert_eq!(Dialect::V1.responder(), "acp_sdk::Responder<T, P>");
    }
}
