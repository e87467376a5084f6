//! Locating: pins, candidates, refusals.

use super::*;

#[test]
fn two_connections_on_a_trait_agent_are_listed_and_each_is_pinnable() {
    let c = case("channel_agent");
    let dir = copy_tree(&c.before());
    edit(
        dir.path(),
        "src/agent.rs",
        "    updates: Updates,\n",
        "    updates: Updates,\n    spare: Updates,\n",
    );
    edit(
        dir.path(),
        "src/agent.rs",
        "            updates,\n",
        "            spare: updates.clone(),\n            updates,\n",
    );
    let snap = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("found 2 candidates for the connection for the think card"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("src/agent.rs:15  ChannelAgent::updates"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("src/agent.rs:16  ChannelAgent::spare"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("[rust]\n    connection = \"src/agent.rs:ChannelAgent::updates\""),
        "{}",
        run.stderr
    );
    assert_eq!(snap, snapshot_tree(dir.path()), "nothing may be written");
    for pin in [
        "src/agent.rs:ChannelAgent::updates",
        "src/agent.rs:ChannelAgent::spare",
    ] {
        let d = copy_tree(dir.path());
        add_config(d.path(), &format!("[rust]\nconnection = \"{pin}\"\n"));
        let run = acp_patch(&["apply", path_str(d.path())], None);
        assert_eq!(run.code, 0, "{pin}: {}", run.stderr);
        let field = pin.rsplit("::").next().unwrap();
        let agent = std::fs::read_to_string(d.path().join("src/agent.rs")).unwrap();
        assert!(
            agent.contains(&format!("crate::acp_progress::turn(&self.{field}, ")),
            "{agent}"
        );
        let verify = acp_patch(&["verify", path_str(d.path())], None);
        assert_eq!(verify.code, 0, "{}", verify.stdout);
        assert!(
            verify
                .stdout
                .contains(&format!("the agent's field `ChannelAgent::{field}`")),
            "{}",
            verify.stdout
        );
    }
}

#[test]
fn a_connection_pin_that_matches_nothing_names_it_and_the_candidates() {
    let dir = copy_tree(&case("channel_agent").before());
    add_config(
        dir.path(),
        "[rust]\nconnection = \"src/agent.rs:ChannelAgent::conn\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the pin `connection` names src/agent.rs:ChannelAgent::conn"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("src/agent.rs:15  ChannelAgent::updates"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_trait_agent_without_a_connection_is_told_what_to_keep_and_no_pin_is_invented() {
    let dir = copy_tree(&case("trait_agent").before());
    // the connection moves out of the agent: only a local in main reaches it
    edit(
        dir.path(),
        "src/agent.rs",
        "    conn: Rc<OnceCell<acp::AgentSideConnection>>,\n",
        "    conn: Rc<OnceCell<Box<dyn std::any::Any>>>,\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "could not locate the connection for the think card: no field of StreamAgent"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("pin one"), "{}", run.stderr);
}

#[test]
fn a_prompt_pin_picks_one_handler_and_a_pin_to_nothing_lists_the_handlers() {
    let c = case("v1_agent");
    let dir = copy_tree(&c.before());
    add_config(
        dir.path(),
        "[rust]\nprompt = \"src/main.rs:serve::closure#9\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the pin `prompt` names src/main.rs:serve::closure#9"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("src/main.rs:55  serve::closure#1"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("src/agent.rs:64  StreamAgent::prompt"),
        "{}",
        run.stderr
    );
    // every listed candidate is one the pin takes
    for pin in [
        "src/main.rs:serve::closure#1",
        "src/agent.rs:StreamAgent::prompt",
    ] {
        let d = copy_tree(&c.before());
        add_config(d.path(), &format!("[rust]\nprompt = \"{pin}\"\n"));
        let run = acp_patch(&["apply", path_str(d.path())], None);
        assert_eq!(run.code, 0, "{pin}: {}", run.stderr);
        let verify = acp_patch(&["verify", path_str(d.path())], None);
        assert_eq!(verify.code, 0, "{pin}: {}", verify.stdout);
    }
}

#[test]
fn no_prompt_handler_lists_the_methods_a_pin_takes() {
    let dir = copy_tree(&case("v1_agent").before());
    // the handler's request type is left to inference: not recognisable as the prompt's
    edit(
        dir.path(),
        "src/main.rs",
        "async move |request: PromptRequest,",
        "async move |request,",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("could not locate the ACP prompt handler"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("src/agent.rs:64  StreamAgent::prompt"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("prompt = \"src/agent.rs:StreamAgent::prompt\""),
        "{}",
        run.stderr
    );
}

#[test]
fn an_agent_without_an_sdk_whose_dispatch_is_not_seen_is_told_the_pin_that_works() {
    let c = case("raw_sync_agent");
    let dir = copy_tree(&c.before());
    // the dispatcher compares the method by its suffix: no `"session/prompt"` there to see
    edit(
        dir.path(),
        "src/main.rs",
        "method == protocol::SESSION_PROMPT",
        "method.ends_with(\"/prompt\")",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no dispatcher of `\"session/prompt\"`")
            && run
                .stderr
                .contains("`[rust] prompt = \"src/agent.rs:Agent::prompt\"`"),
        "{}",
        run.stderr
    );
    add_config(
        dir.path(),
        "[rust]\nprompt = \"src/agent.rs:Agent::prompt\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
}

#[test]
fn an_agent_without_an_sdk_or_its_method_name_is_found_by_its_prompt_pin() {
    let c = case("raw_sync_agent");
    let dir = copy_tree(&c.before());
    // nothing names `session/prompt`: detection has only the pin to go by
    edit(
        dir.path(),
        "src/protocol.rs",
        "pub const SESSION_PROMPT: &str = \"session/prompt\";\n",
        "",
    );
    edit(
        dir.path(),
        "src/main.rs",
        "method == protocol::SESSION_PROMPT",
        "method.ends_with(\"/prompt\")",
    );
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("no ACP agent found"), "{}", run.stderr);
    add_config(
        dir.path(),
        "[rust]\nprompt = \"src/agent.rs:Agent::prompt\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        std::fs::read_to_string(dir.path().join("src/agent.rs"))
            .unwrap()
            .contains("crate::acp_progress::begin(&params[\"sessionId\"]"),
        "the pinned handler starts the turn"
    );
}

#[test]
fn a_connection_pin_on_an_agent_without_an_sdk_picks_the_write_the_card_goes_through() {
    let c = case("raw_tokio_agent");
    let dir = copy_tree(&c.before());
    add_config(dir.path(), "[rust]\nconnection = \"src/turn.rs:nothing\"\n");
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the pin `connection` names src/turn.rs:nothing")
            && run.stderr.contains("src/turn.rs:63  run_turn")
            && run.stderr.contains("connection = \"src/turn.rs:run_turn\""),
        "{}",
        run.stderr
    );
    let dir = copy_tree(&c.before());
    add_config(
        dir.path(),
        "[rust]\nconnection = \"src/turn.rs:run_turn\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
    assert!(
        verify
            .stdout
            .contains("as run_turn calls it at src/turn.rs:"),
        "{}",
        verify.stdout
    );
}

#[test]
fn the_old_emitter_and_handoff_pins_are_refused_with_what_to_do() {
    let dir = copy_tree(&case("v1_agent").before());
    add_config(
        dir.path(),
        "[rust]\nemitter = \"src/agent.rs:StreamAgent::send_update\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("no longer used"), "{}", run.stderr);
}

#[test]
fn a_file_of_the_runtime_modules_name_is_never_overwritten() {
    let dir = copy_tree(&case("v1_agent").before());
    std::fs::write(dir.path().join("src/acp_progress.rs"), "// mine\n").unwrap();
    let snap = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("src/acp_progress.rs:1: this file is not acp-patch's runtime module"),
        "{}",
        run.stderr
    );
    assert_eq!(snap, snapshot_tree(dir.path()));
}

/// A crate on the SDK that is a client (it implements `Client` and builds the client-side
/// connection, as acp-cli 0.3.1 does) has no agent to patch, and the error says so, naming
/// where, instead of asking for a prompt handler no pin could name.
#[test]
fn a_client_crate_is_no_agent_and_says_where_it_is_a_client() {
    let dir = tempfile::tempdir().unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "Cargo.toml",
        "[package]\nname = \"bridge\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nagent-client-protocol = \"0.10\"\n",
    );
    write(
        "src/main.rs",
        r#"use agent_client_protocol as acp;

mod client;

fn main() {
    let conn = acp::ClientSideConnection::new(client::Bridged, std::io::stdout(), std::io::stdin(), |f| f);
    drop(conn);
}
"#,
    );
    write(
        "src/client.rs",
        r#"use agent_client_protocol as acp;

pub struct Bridged;

impl acp::Client for Bridged {
    async fn request_permission(
        &self,
        _args: acp::RequestPermissionRequest,
    ) -> acp::Result<acp::RequestPermissionResponse> {
        Err(acp::Error::method_not_found())
    }

    async fn session_notification(&self, _args: acp::SessionNotification) -> acp::Result<()> {
        Ok(())
    }
}
"#,
    );
    for cmd in [&["apply", "--dry-run"][..], &["verify"]] {
        let args: Vec<&str> = cmd.iter().copied().chain([path_str(dir.path())]).collect();
        let run = acp_patch(&args, None);
        assert_eq!(run.code, 1, "{cmd:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("no ACP agent found (the crate is an ACP client, not an agent: src/client.rs:5 implements `acp::Client`, src/main.rs:6 builds a `ClientSideConnection`, and acp-patch patches the agent a client starts)"),
            "{cmd:?}: {}",
            run.stderr
        );
    }
}
