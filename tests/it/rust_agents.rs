//! Rust agents on the `agent-client-protocol` crate, patched by the protocol strategy.
//!
//! Every `fixtures/rust/<case>/` with a `case.toml` is run by the fixture runner
//! (tests/it/fixtures.rs: dry run, verify before/after, apply twice, `git apply`, cargo, smoke).
//! Here: what lies beyond those steps — the crate's own example agents checked byte for byte
//! against the crates.io package, the protocol v2 example driven by a v2 client, the runtime
//! module's formatting, pins and candidate lists, verify's placement findings, file styles.
//!
//! Fixture crates of every SDK generation build in one `CARGO_TARGET_DIR`
//! (`target/rust-fixtures/shared`, see `support::rust_fixtures_target`), the trees these tests
//! build kept under `target/rust-fixtures/trees/` so a warm run rebuilds nothing.

use crate::support::*;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What these tests read of a `case.toml` (the fixture runner checks the rest).
#[derive(Debug, Deserialize)]
struct CaseToml {
    #[serde(default)]
    apply_args: Vec<String>,
}

struct Case {
    name: String,
    dir: PathBuf,
    toml: CaseToml,
}

impl Case {
    fn before(&self) -> PathBuf {
        self.dir.join("before")
    }
}

fn cases() -> Vec<Case> {
    let root = fixture("rust");
    let mut out: Vec<Case> = std::fs::read_dir(&root)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("case.toml").is_file())
        .map(|dir| {
            let text = std::fs::read_to_string(dir.join("case.toml")).unwrap();
            let toml: CaseToml = toml::from_str(&text)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.join("case.toml").display()));
            Case {
                name: dir.file_name().unwrap().to_string_lossy().into(),
                dir,
                toml,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(out.len() >= 16, "the Rust fixtures are missing");
    out
}

fn case(name: &str) -> Case {
    cases()
        .into_iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no fixture {name}"))
}

fn args_with<'a>(c: &'a Case, cmd: &'a [&'a str], dir: &'a Path) -> Vec<&'a str> {
    let mut v: Vec<&str> = cmd.to_vec();
    v.extend(c.toml.apply_args.iter().map(String::as_str));
    v.push(path_str(dir));
    v
}

/// The case applied in a fresh temporary copy.
fn applied(c: &Case) -> tempfile::TempDir {
    let dir = copy_tree(&c.before());
    let run = acp_patch(&args_with(c, &["apply"], dir.path()), None);
    assert_eq!(run.code, 0, "{}: {}", c.name, run.stderr);
    dir
}

// ---- beyond the fixture runner (tests/it/fixtures.rs runs every case's steps) ----------

#[test]
fn every_case_changes_the_agents_own_files_by_insertions_only() {
    for c in cases() {
        let dir = applied(&c);
        for (rel, before) in snapshot_tree(&c.before()) {
            let after = std::fs::read(dir.path().join(&rel)).unwrap();
            let after = String::from_utf8_lossy(&after);
            assert!(
                only_insertions(&String::from_utf8_lossy(&before), &unmoved(&after)),
                "{}: {rel} changed other than by insertions",
                c.name
            );
        }
    }
}

/// The one edit of an agent's own code that is no insertion, undone: a message built inline
/// in a write moves into the loop apply wraps the write in (an agent without an SDK),
/// `for acp_message in crate::acp_progress::wire(<message>) { <write with acp_message> }`;
/// the message is put back in the write and the loop taken out.
fn unmoved(text: &str) -> String {
    const HEAD: &str = "for acp_message in ";
    let mut out = text.to_string();
    while let Some(at) = out.find(HEAD) {
        let rest = &out[at + HEAD.len()..];
        let call =
            rest.find("acp_progress::wire(").expect("a wire call") + "acp_progress::wire(".len();
        let arg_end = call + closing(&rest[call..]);
        let arg = rest[call..arg_end].to_string();
        let body_start = arg_end + ") { ".len();
        let body_end = body_start + closing(&rest[body_start..]) - 1; // ` }`
        let body = &rest[body_start..body_end];
        let k = body.find("acp_message").expect("the message's place");
        let write = format!("{}{arg}{}", &body[..k], &body[k + "acp_message".len()..]);
        let end = at + HEAD.len() + body_end + 2;
        out.replace_range(at..end, &write);
    }
    out
}

/// The length of text up to the bracket that closes one already open (string literals
/// skipped).
fn closing(s: &str) -> usize {
    let (mut depth, mut in_str, mut escaped) = (0i32, false, false);
    for (i, c) in s.char_indices() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' if depth == 0 => return i,
            ')' | '}' | ']' => depth -= 1,
            _ => {}
        }
    }
    s.len()
}

// ---- building the fixture crates and running them ------------------------------------

/// Writes `from` into `to`, touching only files whose bytes differ (a warm build stays warm).
fn sync_tree(from: &Path, to: &Path) {
    let want: BTreeMap<String, Vec<u8>> = snapshot_tree(from).into_iter().collect();
    if to.is_dir() {
        for (rel, _) in snapshot_tree(to) {
            if !want.contains_key(&rel) && !rel.starts_with("target/") {
                let _ = std::fs::remove_file(to.join(&rel));
            }
        }
    }
    for (rel, bytes) in &want {
        let dest = to.join(rel);
        if std::fs::read(&dest).ok().as_ref() != Some(bytes) {
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            std::fs::write(&dest, bytes).unwrap();
        }
    }
}

/// `before/` at a stable path, its package renamed `<name>-unpatched`: cargo names a local
/// package's artifacts by name and version only, so two trees of one name would overwrite
/// each other's binary in the shared target dir (and look fresh to cargo).
fn unpatched_tree(c: &Case) -> PathBuf {
    let tmp = copy_tree(&c.before());
    let manifest = tmp.path().join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let name = doc["package"]["name"].as_str().unwrap().to_string();
    let from = format!("name = \"{name}\"");
    let to = format!("name = \"{name}-unpatched\"");
    std::fs::write(&manifest, text.replacen(&from, &to, 1)).unwrap();
    let lock = tmp.path().join("Cargo.lock");
    let text = std::fs::read_to_string(&lock).unwrap();
    std::fs::write(&lock, text.replace(&from, &to)).unwrap();
    let dir = repo()
        .join("target/rust-fixtures/trees")
        .join(format!("{}-unpatched", c.name));
    sync_tree(tmp.path(), &dir);
    dir
}

/// The patched tree of a case, at a stable path.
fn patched_tree(c: &Case) -> PathBuf {
    let tmp = applied(c);
    let dir = repo().join("target/rust-fixtures/trees").join(&c.name);
    sync_tree(tmp.path(), &dir);
    dir
}

/// `cargo build --locked` of a fixture crate in the fixtures' target dir; its binary.
fn build(c: &Case, dir: &Path) -> PathBuf {
    let manifest: toml::Value =
        toml::from_str(&std::fs::read_to_string(dir.join("Cargo.toml")).unwrap()).unwrap();
    let name = manifest["package"]["name"].as_str().unwrap().to_string();
    let linked = rust_fixtures_target().join("debug").join(&name);
    let t0 = Instant::now();
    let out = cargo_fixture("build", dir);
    assert!(
        out.status.success(),
        "{}: cargo build {} failed:\n{}",
        c.name,
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "cargo build {}: {:.1} s",
        dir.display(),
        t0.elapsed().as_secs_f64()
    );
    linked
}

// ---- the crate's own example agents --------------------------------------------------

/// A file of a crates.io package as published: from the unpacked registry source, else from
/// the downloaded `.crate` (fetched with `cargo fetch` when missing).
fn registry_file(manifest_dir: &Path, package: &str, file: &str) -> Vec<u8> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cargo"));
    let find = |sub: &str, name: &str| -> Option<PathBuf> {
        std::fs::read_dir(home.join("registry").join(sub))
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join(name)))
            .find(|p| p.exists())
    };
    if let Some(src) = find("src", package) {
        return std::fs::read(src.join(file)).unwrap();
    }
    if find("cache", &format!("{package}.crate")).is_none() {
        let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["fetch", "--locked", "--manifest-path"])
            .arg(manifest_dir.join("Cargo.toml"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let archive =
        find("cache", &format!("{package}.crate")).expect("the package after cargo fetch");
    let out = Command::new("tar")
        .arg("-xzOf")
        .arg(archive)
        .arg(format!("{package}/{file}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn the_example_fixtures_are_the_crates_own_examples_unchanged() {
    for (fixture, package, file) in [
        (
            "example_agent_0_10",
            "agent-client-protocol-0.10.4",
            "examples/agent.rs",
        ),
        (
            "example_agent_v2",
            "agent-client-protocol-5.2.0",
            "examples/simple_agent_v2.rs",
        ),
    ] {
        let before = case(fixture).before();
        let published = registry_file(&before, package, file);
        let ours = std::fs::read(before.join("src/main.rs")).unwrap();
        assert!(
            ours == published,
            "{fixture}: src/main.rs is not {package}'s {file}"
        );
    }
}

/// A protocol v2 client over the agent's pipes: initialize, one session, one prompt; every
/// `session/update` of the session until it goes idle after running, with times.
fn drive_v2(bin: &Path) -> Vec<(f64, serde_json::Value)> {
    use std::io::{BufRead, BufReader, Write};
    let _turn = cpu_lock();
    let mut child = Command::new(bin)
        .env("ACP_HEARTBEAT_S", "0.3")
        // an echo answers within the grace, which shows no card: no grace, so the card shows
        .env("ACP_THINK_AFTER_MS", "0")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<serde_json::Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut send = |v: serde_json::Value| writeln!(stdin, "{v}").unwrap();
    let wait = |id: i64| loop {
        let v = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("an answer");
        if v["id"] == id {
            return v;
        }
    };
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": 2, "info": {"name": "acp-patch-test", "version": "0"}, "capabilities": {}}}),
    );
    assert_eq!(wait(1)["result"]["protocolVersion"], 2);
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params":
        {"cwd": "/tmp", "mcpServers": []}}),
    );
    let session = wait(2)["result"]["sessionId"].as_str().unwrap().to_string();
    // the idle that follows session/new
    let idle = |v: &serde_json::Value| v["params"]["update"]["state"] == "idle";
    loop {
        let v = rx.recv_timeout(std::time::Duration::from_secs(20)).unwrap();
        if idle(&v) {
            break;
        }
    }
    let t0 = Instant::now();
    send(
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params":
        {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}}),
    );
    let mut updates = Vec::new();
    let mut running = false;
    while let Ok(v) = rx.recv_timeout(std::time::Duration::from_secs(20)) {
        if v["method"] != "session/update" {
            continue;
        }
        assert_eq!(v["params"]["sessionId"], session.as_str());
        let u = v["params"]["update"].clone();
        running |= u["state"] == "running";
        let done = running && idle(&v);
        updates.push((t0.elapsed().as_secs_f64() * 1000.0, u));
        if done {
            break;
        }
    }
    // nothing of the card may follow the idle (no heartbeat left running)
    std::thread::sleep(std::time::Duration::from_millis(700));
    while let Ok(v) = rx.try_recv() {
        assert_ne!(
            v["method"], "session/update",
            "an update after the turn ended: {v}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    updates
}

#[test]
fn the_v2_example_patched_shows_a_v2_client_the_card_before_its_answer() {
    let c = case("example_agent_v2");
    let bin = build(&c, &patched_tree(&c));
    let updates = drive_v2(&bin);
    let kind = |u: &serde_json::Value| u["sessionUpdate"].as_str().unwrap_or("").to_string();
    let first_chunk = updates
        .iter()
        .position(|(_, u)| kind(u) == "agent_message_chunk")
        .expect("the echo");
    let card = updates
        .iter()
        .position(|(_, u)| kind(u) == "tool_call_update" && u["kind"] == "think")
        .expect("a think card");
    let id = &updates[card].1["toolCallId"];
    assert_eq!(updates[card].1["status"], "in_progress");
    assert!(updates[card].0 < 250.0, "card at {} ms", updates[card].0);
    let done = updates
        .iter()
        .position(|(_, u)| u["toolCallId"] == *id && u["status"] == "completed")
        .expect("the card completes");
    assert!(card < done && done < first_chunk, "{updates:#?}");

    let unpatched = build(&c, &unpatched_tree(&c));
    let updates = drive_v2(&unpatched);
    assert!(
        !updates.iter().any(|(_, u)| u["kind"] == "think"),
        "a card unpatched: {updates:#?}"
    );
}

#[test]
fn the_runtime_module_is_rustfmt_clean_as_written() {
    if Command::new("rustfmt").arg("--version").output().is_err() {
        eprintln!("skipped: no rustfmt on PATH");
        return;
    }
    for name in [
        "trait_agent",
        "channel_agent",
        "builder_agent",
        "closure_agent_3",
        "v1_agent",
        "example_agent_v2",
        "raw_tokio_agent",
        "raw_sync_agent",
    ] {
        let dir = applied(&case(name));
        for edition in ["2021", "2024"] {
            let out = Command::new("rustfmt")
                .args(["--check", "--edition", edition])
                .arg(dir.path().join("src/acp_progress.rs"))
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name} ({edition}): {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
}

// ---- locating: pins, candidates, refusals ------------------------------------------------

fn add_config(dir: &Path, text: &str) {
    let path = dir.join("acp-patch.toml");
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, format!("{text}\n{old}")).unwrap();
}

fn edit(dir: &Path, rel: &str, from: &str, to: &str) {
    let path = dir.join(rel);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{rel} lacks {from:?}");
    std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
}

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

// ---- verify proves placement -----------------------------------------------------------------

#[test]
fn verify_reports_an_unwrapped_send_with_its_location() {
    let dir = applied(&case("free_fn_agent"));
    edit(
        dir.path(),
        "src/main.rs",
        "connection.acp_progress().send_notification(",
        "connection.send_notification(",
    );
    let run = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("malformed  sends"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("apply inserts the emitter at src/main.rs:"),
        "{}",
        run.stdout
    );
}

#[test]
fn verify_reports_a_start_that_is_not_the_handlers_first_statement() {
    let dir = applied(&case("closure_agent_5"));
    let start = "                    let acp_turn = crate::acp_progress::begin(&cx, &request.session_id);\n";
    edit(dir.path(), "src/main.rs", start, "");
    edit(
        dir.path(),
        "src/main.rs",
        "                    cx.clone().spawn(async move {\n",
        &format!("{start}                    cx.clone().spawn(async move {{\n"),
    );
    let run = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("malformed  hook.start"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("is not its first statement"),
        "{}",
        run.stdout
    );
}

#[test]
fn verify_reports_a_turn_end_that_reads_an_unbound_turn() {
    let dir = applied(&case("free_fn_agent"));
    edit(
        dir.path(),
        "src/main.rs",
        "    let acp_turn = crate::acp_progress::turn_of(&request.session_id);\n",
        "",
    );
    let run = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("malformed  bound"), "{}", run.stdout);
    assert!(
        run.stdout.contains("which no statement before it binds"),
        "{}",
        run.stdout
    );
    // apply puts the lookup back, and all holds again
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
}

#[test]
fn an_edited_runtime_module_is_refused_and_an_earlier_releases_is_written_again() {
    let c = case("v1_agent");
    let dir = applied(&c);
    let module = dir.path().join("src/acp_progress.rs");
    let text = std::fs::read_to_string(&module).unwrap();
    let call = "    out.push(cb(AcpProgressState::Start, &card));\n";
    assert!(text.contains(call));
    let edited = text.replacen(call, &format!("{call}{call}"), 1);
    std::fs::write(&module, &edited).unwrap();
    let line = edited[..edited.find(call).unwrap() + call.len()]
        .lines()
        .count()
        + 1;
    let at = format!("src/acp_progress.rs:{line}: the runtime module was edited by hand");
    let run = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("malformed  runtime"), "{}", run.stdout);
    assert!(run.stdout.contains(&at), "{}", run.stdout);
    assert!(
        run.stdout.contains("duplicated hook.start"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!("the runtime module was edited by hand (src/acp_progress.rs:{line}), so `acp-patch apply` and `acp-patch revert` refuse the tree: restore it (undo the edit) or remove it")),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("apply` inserts what is missing"),
        "{}",
        run.stdout
    );
    refused_by_every_writer(dir.path(), &[&at]);
    // the same text as an earlier release wrote it (its checksum matching): replaced whole
    std::fs::write(&module, resealed(&edited)).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_same_tree(dir.path(), applied(&c).path());
}

#[test]
fn env_prefix_renames_every_variable() {
    let dir = copy_tree(&case("v1_agent").before());
    let run = acp_patch(
        &["apply", "--env-prefix", "STREAM", path_str(dir.path())],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let module = std::fs::read_to_string(dir.path().join("src/acp_progress.rs")).unwrap();
    for var in [
        "STREAM_HEARTBEAT_S",
        "STREAM_HEARTBEAT_DISABLED",
        "STREAM_THINK_HOLD_MS",
        "STREAM_THINK_GAP_MS",
    ] {
        assert!(module.contains(&format!("\"{var}\"")), "{var} missing");
    }
    assert!(!module.contains("\"ACP_"), "an ACP_ variable is left");
}

// ---- style and safety ---------------------------------------------------------------------

/// Applies to a variant of a fixture and checks that every original byte survives, in order,
/// that the result re-parses (verify) and that a second apply is a no-op.
fn style_case(transform: impl Fn(&str) -> String, check: impl Fn(&str)) {
    let dir = copy_tree(&case("v1_agent").before());
    for rel in ["src/agent.rs", "src/main.rs"] {
        let path = dir.path().join(rel);
        std::fs::write(&path, transform(&std::fs::read_to_string(&path).unwrap())).unwrap();
    }
    let originals: Vec<String> = ["src/agent.rs", "src/main.rs"]
        .iter()
        .map(|r| std::fs::read_to_string(dir.path().join(r)).unwrap())
        .collect();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for (rel, original) in ["src/agent.rs", "src/main.rs"].iter().zip(&originals) {
        let patched = std::fs::read_to_string(dir.path().join(rel)).unwrap();
        assert!(
            only_insertions(original, &patched),
            "{rel}: untouched bytes changed"
        );
        syn::parse_file(&patched).expect("the patched file parses");
        check(&patched);
    }
    check(&std::fs::read_to_string(dir.path().join("src/acp_progress.rs")).unwrap());
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 0, "{}", verify.stdout);
}

#[test]
fn style_tabs_are_kept_for_inserted_lines() {
    style_case(
        |s| {
            s.lines()
                .map(|l| {
                    let n = l.len() - l.trim_start_matches(' ').len();
                    format!("{}{}\n", "\t".repeat(n / 4), &l[n / 4 * 4..])
                })
                .collect()
        },
        |patched| {
            assert!(
                patched.lines().all(|l| !l.starts_with("    ")),
                "a space-indented line was inserted"
            )
        },
    );
}

#[test]
fn style_crlf_is_kept_for_inserted_lines() {
    style_case(
        |s| s.replace('\n', "\r\n"),
        |patched| {
            assert_eq!(
                patched.matches('\n').count(),
                patched.matches("\r\n").count(),
                "a bare LF was inserted"
            )
        },
    );
}

#[test]
fn style_no_final_newline_is_kept() {
    let dir = copy_tree(&case("v1_agent").before());
    let path = dir.path().join("src/agent.rs");
    let original = std::fs::read_to_string(&path)
        .unwrap()
        .trim_end()
        .to_string();
    std::fs::write(&path, &original).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let patched = std::fs::read_to_string(&path).unwrap();
    assert!(!patched.ends_with('\n'));
    assert!(only_insertions(&original, &patched));
}

#[test]
fn syntax_error_in_a_file_to_patch_aborts_with_its_location() {
    let dir = copy_tree(&case("v1_agent").before());
    let path = dir.path().join("src/agent.rs");
    let mut agent = std::fs::read_to_string(&path).unwrap();
    agent.push_str("\nfn broken( {\n}\n");
    std::fs::write(&path, &agent).unwrap();
    let snap = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("src/agent.rs:"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(snap, snapshot_tree(dir.path()));
}

#[test]
fn syntax_error_elsewhere_is_reported_and_left_alone() {
    let c = case("v1_agent");
    let dir = copy_tree(&c.before());
    let broken = "use agent_client_protocol as acp;\n\nfn oops( {\n}\n";
    std::fs::write(dir.path().join("src/scratch.rs"), broken).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("src/scratch.rs:3: does not parse"),
        "{}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/scratch.rs")).unwrap(),
        broken
    );
    let _ = std::fs::remove_file(dir.path().join("src/scratch.rs"));
    assert_same_tree(dir.path(), applied(&c).path());
}

#[test]
fn partially_patched_tree_gets_only_the_missing_pieces() {
    let c = case("v1_agent");
    let dir = applied(&c);
    let start = "                    let acp_turn = crate::acp_progress::begin(&connection, &request.session_id);\n";
    edit(dir.path(), "src/main.rs", start, "");
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 1);
    assert!(
        verify
            .stdout
            .contains("apply inserts the hook start at src/main.rs:"),
        "{}",
        verify.stdout
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("inserted 1 pieces"), "{}", run.stderr);
    assert_same_tree(dir.path(), applied(&c).path());
}
