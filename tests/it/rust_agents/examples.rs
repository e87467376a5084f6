//! The crate's own example agents.

use super::*;

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
