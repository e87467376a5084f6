//! The runtime module `acp_progress.rs`, rendered from `templates/rust/` for the crate's SDK
//! generation: the core (cards, heartbeats, gap cards, the text hold, per session), the
//! runtime glue (`LocalSet` or `Send`), the message builders (protocol v1 or v2), and the
//! tokio channels as card paths where the crate has tokio's `sync`.

use super::sdk::Dialect;
use crate::error::Result;
use crate::project::Project;
use crate::render::fill;

/// The module's file name, beside the crate root that declares it.
pub const FILE: &str = "acp_progress.rs";
/// The module's name in `mod acp_progress;`.
pub const MODULE: &str = "acp_progress";
/// The marker every rendered module starts with.
pub const MARKER: &str = "// acp-patch: runtime module";

/// `tokio_sync` / `futures`: the crate has tokio's `sync` / depends on `futures` (their
/// channels can then carry the trait API's card).
pub fn render(
    project: &Project,
    dialect: Dialect,
    sdk: &str,
    tokio_sync: bool,
    futures: bool,
) -> Result<String> {
    let local = dialect.local();
    let mut names = vec!["rust/header_sdk.rs", "rust/acp_progress.rs"];
    if local {
        names.push("rust/runtime_local.rs");
    } else {
        names.extend([
            "rust/runtime_send.rs",
            "rust/timers_tokio.rs",
            "rust/runtime_send_sdk.rs",
        ]);
    }
    names.push(if dialect == Dialect::V2 {
        "rust/schema_v2.rs"
    } else {
        "rust/schema_v1.rs"
    });
    if local && tokio_sync {
        names.push("rust/channels_tokio.rs");
    }
    if local && futures {
        names.push("rust/channels_futures.rs");
    }
    let mut text = String::new();
    for name in names {
        text.push_str(&project.templates.get(name)?);
    }
    let ends = dialect.response_ends_turn();
    let vars: Vec<(&str, String)> = vec![
        ("PREFIX", project.env_prefix.clone()),
        (
            "PTR",
            if local {
                "std::rc::Rc"
            } else {
                "std::sync::Arc"
            }
            .into(),
        ),
        (
            "SEND_SYNC",
            if local { "" } else { " + Send + Sync" }.into(),
        ),
        ("SDK", sdk.to_string()),
        ("ACP", dialect.schema(sdk)),
        ("CONNECTION", dialect.connection(sdk)),
        ("RESPONSE_ENDS_TURN", ends.to_string()),
        (
            "RESPONSE_ENDS_TURN_DOC",
            if ends {
                "protocol v1: yes".into()
            } else {
                "protocol v2: only an error does; the session going idle ends it".into()
            },
        ),
        ("ON_DROP", if ends { "Some(true)" } else { "None" }.into()),
        (
            "RESPONDER_PARAMS",
            if dialect.protocol_generic() {
                format!("T: {}, P: acp_sdk::Protocol", dialect.response_trait())
            } else {
                format!("T: {}", dialect.response_trait())
            },
        ),
        ("RESPONDER", dialect.responder().into()),
        ("NOTIFICATION", dialect.notification_trait().into()),
    ];
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Ok(fill(&text, &vars))
}

/// The runtime module of an agent without an SDK: its messages are `serde_json` values (the
/// crate's `json` name for it) or, with `serde` (the crate's name for it), values of its own
/// `Serialize` types; its timers tokio tasks (`tokio`, with a task id from tokio 1.41 on:
/// `task_ids`) or threads.
pub fn render_raw(
    project: &Project,
    json: &str,
    serde: Option<&str>,
    tokio: bool,
    task_ids: bool,
) -> Result<String> {
    let mut names = vec![
        "rust/header_raw.rs",
        "rust/acp_progress.rs",
        "rust/runtime_raw.rs",
        if tokio {
            "rust/timers_tokio.rs"
        } else {
            "rust/timers_thread.rs"
        },
        "rust/schema_json.rs",
    ];
    if serde.is_some() {
        names.push("rust/wire_serde.rs");
    }
    let mut text = String::new();
    for name in names {
        text.push_str(&project.templates.get(name)?);
    }
    let task_id = if task_ids {
        "tokio::task::try_id().map(|id| id.to_string())"
    } else {
        "None"
    };
    let vars: [(&str, &str); 6] = [
        ("PREFIX", &project.env_prefix),
        ("PTR", "std::sync::Arc"),
        ("SEND_SYNC", " + Send + Sync"),
        ("JSON", json),
        ("SERDE", serde.unwrap_or("serde")),
        ("TASK_ID", task_id),
    ];
    Ok(fill(&text, &vars))
}
