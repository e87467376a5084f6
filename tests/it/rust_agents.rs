//! apply / dry-run / verify on Rust agents built on the `agent-client-protocol` crate: our
//! trait-API fixture (0.10.4, `LocalSet`), builder-API fixture (0.11.1, `Agent.builder()`)
//! and 5.x fixture (`Agent.v1()`), with exact
//! snapshots, `cargo check` of each patched tree, the smoke run unpatched and patched, the
//! error cases (ambiguous, unlocatable, builder API) and the style cases.
//!
//! Fixture crates build in their own target dirs under `target/rust-fixtures/`, offline
//! after the first fetch (their `Cargo.lock` files are committed).

use crate::smoke::{assert_group_gone, smoke};
use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const TRAIT: &str = "rust/trait_agent";
const V1: &str = "rust/v1_agent";
const BUILDER: &str = "rust/builder_agent";

fn before(case: &str) -> PathBuf {
    fixture(case).join("before")
}

fn bin_name(case: &str) -> &'static str {
    match case {
        TRAIT => "trait-agent",
        BUILDER => "builder-agent",
        _ => "v1-agent",
    }
}

/// One target dir per fixture tree: `before` and `after` build the same binary name, and
/// cargo does not re-copy a fresh binary into `debug/` after the other tree was built.
fn target_dir(case: &str, tree: &str) -> PathBuf {
    repo()
        .join("target/rust-fixtures")
        .join(format!("{}-{tree}", case.trim_start_matches("rust/")))
}

/// `cargo <cmd> --locked` on a fixture crate, in its own target dir; panics with cargo's
/// output on failure. Returns the seconds it took.
fn cargo(cmd: &str, dir: &Path, case: &str, tree: &str) -> f64 {
    let _turn = crate::support::cpu_lock();
    let t0 = Instant::now();
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([cmd, "--locked", "--quiet", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", target_dir(case, tree))
        .output()
        .expect("run cargo");
    assert!(
        out.status.success(),
        "cargo {cmd} {} failed:\n{}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let secs = t0.elapsed().as_secs_f64();
    eprintln!("cargo {cmd} {}: {secs:.1} s", dir.display());
    secs
}

/// Builds a fixture tree (`before` or `after`) and returns its binary.
fn build(case: &str, tree: &str) -> PathBuf {
    let dir = fixture(case).join(tree);
    cargo("build", &dir, case, tree);
    target_dir(case, tree).join("debug").join(bin_name(case))
}

fn dry_run_snapshot(case: &str, pieces: &str) {
    let dir = copy_tree(&before(case));
    let snap = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_snapshot(&fixture(case).join("expected.diff"), &run.stdout);
    assert_eq!(snap, snapshot_tree(dir.path()), "a dry run wrote something");
    assert!(run.stderr.contains(pieces), "{}", run.stderr);
}

fn apply_twice(case: &str) {
    let dir = copy_tree(&before(case));
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("  hook start\n"), "{}", run.stderr);
    if std::env::var_os("ACP_PATCH_BLESS").is_some() {
        let after = fixture(case).join("after");
        let _ = std::fs::remove_dir_all(&after);
        copy_into(dir.path(), &after);
    }
    assert_same_tree(dir.path(), &fixture(case).join("after"));
    let again = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(again.code, 0);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    assert_same_tree(dir.path(), &fixture(case).join("after"));
    let dry = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!((dry.code, dry.stdout.as_str()), (0, ""));
}

fn verify_before_after(case: &str) {
    let b = before(case);
    let run = acp_patch(&["verify", path_str(&b)], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_snapshot(
        &fixture(case).join("verify-before.txt"),
        &normalize(&run.stdout, &b),
    );
    let a = fixture(case).join("after");
    let run = acp_patch(&["verify", path_str(&a)], None);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_snapshot(
        &fixture(case).join("verify-after.txt"),
        &normalize(&run.stdout, &a),
    );
}

fn dry_run_is_what_apply_writes(case: &str) {
    let dir = copy_tree(&before(case));
    let dry = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    let diff = dir.path().with_extension("diff");
    std::fs::write(&diff, &dry.stdout).unwrap();
    let pristine = copy_tree(&before(case));
    git(pristine.path(), &["apply", path_str(&diff)]);
    let _ = std::fs::remove_file(&diff);
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0);
    assert_same_tree(dir.path(), pristine.path());
}

fn smoke_unpatched_and_patched(case: &str) {
    let bin = build(case, "before");
    let dir = copy_tree(&before(case));
    let run = smoke(dir.path(), &["--agent-cmd", path_str(&bin)]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    run.assert_failing(&["think_card", "heartbeat", "complete", "one_thought_block"]);
    assert_group_gone(&run);

    let bin = build(case, "after");
    let dir = copy_tree(&fixture(case).join("after"));
    let run = smoke(dir.path(), &["--agent-cmd", path_str(&bin)]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run.assert_failing(&[]);
    assert_group_gone(&run);
}

/// The LLM fails after the wait: the card still completes (the turn guard's drop on the
/// `?` error path); the turn itself fails because the agent reports the error.
fn smoke_llm_error_closes_the_card(case: &str, error: &str) {
    let bin = build(case, "after");
    let dir = copy_tree(&fixture(case).join("after"));
    let config = dir.path().join("acp-patch.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[smoke.script]\ndelay_s = 1.5\n\n[smoke.script.error]\n{error}\n"
    ));
    std::fs::write(&config, text).unwrap();
    let run = smoke(dir.path(), &["--agent-cmd", path_str(&bin)]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    run.assert_failing(&["turn_ends"]);
    assert_group_gone(&run);
}

// ---- trait API (0.10.4, LocalSet) ---------------------------------------------------------

#[test]
fn trait_agent_dry_run_matches_snapshot_and_writes_nothing() {
    dry_run_snapshot(TRAIT, "would insert 11 pieces into 2 files");
}

#[test]
fn trait_agent_apply_gives_the_after_tree_and_a_second_apply_is_a_no_op() {
    apply_twice(TRAIT);
}

#[test]
fn trait_agent_verify_reports_exactly_before_and_after() {
    verify_before_after(TRAIT);
}

#[test]
fn trait_agent_dry_run_diff_applied_with_git_gives_the_applied_tree() {
    dry_run_is_what_apply_writes(TRAIT);
}

#[test]
fn trait_agent_patched_tree_passes_cargo_check() {
    cargo("check", &fixture(TRAIT).join("after"), TRAIT, "after");
}

#[test]
fn trait_agent_smoke_fails_unpatched_and_passes_patched() {
    smoke_unpatched_and_patched(TRAIT);
}

#[test]
fn trait_agent_mid_stream_llm_error_closes_the_card() {
    smoke_llm_error_closes_the_card(TRAIT, "mid_stream = true");
}

// ---- builder API (0.11.1, Agent.builder()) ------------------------------------------------

#[test]
fn builder_agent_dry_run_matches_snapshot_and_writes_nothing() {
    dry_run_snapshot(BUILDER, "would insert 11 pieces into 2 files");
}

#[test]
fn builder_agent_apply_gives_the_after_tree_and_a_second_apply_is_a_no_op() {
    apply_twice(BUILDER);
}

#[test]
fn builder_agent_verify_reports_exactly_before_and_after() {
    verify_before_after(BUILDER);
}

#[test]
fn builder_agent_patched_tree_passes_cargo_check() {
    cargo("check", &fixture(BUILDER).join("after"), BUILDER, "after");
}

#[test]
fn builder_agent_smoke_fails_unpatched_and_passes_patched() {
    smoke_unpatched_and_patched(BUILDER);
}

// ---- 5.x (Agent.v1()) ---------------------------------------------------------------------

#[test]
fn v1_agent_dry_run_matches_snapshot_and_writes_nothing() {
    dry_run_snapshot(V1, "would insert 11 pieces into 2 files");
}

#[test]
fn v1_agent_apply_gives_the_after_tree_and_a_second_apply_is_a_no_op() {
    apply_twice(V1);
}

#[test]
fn v1_agent_verify_reports_exactly_before_and_after() {
    verify_before_after(V1);
}

#[test]
fn v1_agent_dry_run_diff_applied_with_git_gives_the_applied_tree() {
    dry_run_is_what_apply_writes(V1);
}

#[test]
fn v1_agent_patched_tree_passes_cargo_check() {
    cargo("check", &fixture(V1).join("after"), V1, "after");
}

#[test]
fn v1_agent_smoke_fails_unpatched_and_passes_patched() {
    smoke_unpatched_and_patched(V1);
}

#[test]
fn v1_agent_llm_error_closes_the_card() {
    smoke_llm_error_closes_the_card(V1, "status = 500");
}

#[test]
fn env_prefix_renames_every_variable() {
    let dir = copy_tree(&before(V1));
    let run = acp_patch(
        &["apply", "--env-prefix", "STREAM", path_str(dir.path())],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let agent = std::fs::read_to_string(dir.path().join("src/agent.rs")).unwrap();
    for var in [
        "STREAM_HEARTBEAT_S",
        "STREAM_HEARTBEAT_DISABLED",
        "STREAM_THINK_HOLD_MS",
    ] {
        assert!(agent.contains(&format!("\"{var}\"")), "{var} missing");
    }
    assert!(!agent.contains("\"ACP_"), "an ACP_ variable is left");
}

// ---- locating -----------------------------------------------------------------------------

#[test]
fn ambiguous_prompt_handler_lists_candidates_and_a_pin_fixes_it() {
    let dir = copy_tree(&before(V1));
    let path = dir.path().join("src/agent.rs");
    let agent = std::fs::read_to_string(&path).unwrap();
    let extra = "\nimpl StreamAgent {\n    pub async fn prompt_again(&self, request: PromptRequest, cx: ConnectionTo<Client>) -> Result<PromptResponse, Error> {\n        self.prompt(request, cx).await\n    }\n}\n";
    std::fs::write(&path, format!("{agent}{extra}")).unwrap();
    let snap = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("found 2 candidates for the ACP prompt handler"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("StreamAgent::prompt_again"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("[rust]\n    prompt = \"src/agent.rs:StreamAgent::prompt\""),
        "{}",
        run.stderr
    );
    assert_eq!(snap, snapshot_tree(dir.path()), "nothing may be written");

    let cfg = std::fs::read_to_string(dir.path().join("acp-patch.toml")).unwrap();
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        format!("[rust]\nprompt = \"src/agent.rs:StreamAgent::prompt\"\n\n{cfg}"),
    )
    .unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
}

#[test]
fn unlocatable_hand_off_says_what_to_do_and_writes_nothing() {
    let dir = copy_tree(&before(V1));
    let path = dir.path().join("src/agent.rs");
    let agent = std::fs::read_to_string(&path).unwrap();
    // the relay is no longer a loop: the emitter call stands alone
    let start = agent.find("        while let Some(delta)").unwrap();
    let end = agent[start..].find("\n        }\n").unwrap() + start + "\n        }\n".len();
    let replaced = format!(
        "{}        let _ = stream;\n        self.send_update(&cx, &session_id, SessionUpdate::AgentMessageChunk(ContentChunk::new(String::new().into())))?;\n{}",
        &agent[..start],
        &agent[end..]
    );
    std::fs::write(&path, replaced).unwrap();
    let snap = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("could not locate the hand-off to the model"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("[rust]\n    handoff = "),
        "{}",
        run.stderr
    );
    assert_eq!(snap, snapshot_tree(dir.path()));
}

#[test]
fn builder_api_1_to_3_takes_the_types_from_schema_v1() {
    // 1.x-3.x keep the builder API and move the types to `schema::v1`
    let dir = copy_tree(&before(BUILDER));
    let _ = std::fs::remove_file(dir.path().join("Cargo.lock"));
    let manifest = dir.path().join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("\"=0.11.1\"", "\"3.6\"")).unwrap();
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("agent_client_protocol::schema::v1::SessionUpdate::ToolCall("),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("tokio::spawn("), "{}", run.stdout);
}

#[test]
fn builder_api_closure_handler_asks_for_a_method_and_a_pin() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"b\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n[dependencies]\nagent-client-protocol = \"0.11\"\n",
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        "use agent_client_protocol::{Agent, PromptRequest};\n\nfn main() {\n    let _ = Agent.builder().on_receive_request(\n        async move |req: PromptRequest, responder, cx| {\n            let _ = (req, cx);\n            responder.respond(todo!())\n        },\n        agent_client_protocol::on_receive_request!(),\n    );\n}\n",
    )
    .unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("the prompt handler is a closure at src/main.rs:5"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("[rust]\n    prompt = "),
        "{}",
        run.stderr
    );
}

// ---- style and safety ---------------------------------------------------------------------

/// Applies to a variant of the 5.x fixture and checks that every original byte survives,
/// in order, that the result re-parses (verify) and that a second apply is a no-op.
fn style_case(transform: impl Fn(&str) -> String, check: impl Fn(&str)) {
    let dir = copy_tree(&before(V1));
    let path = dir.path().join("src/agent.rs");
    let original = transform(&std::fs::read_to_string(&path).unwrap());
    std::fs::write(&path, &original).unwrap();
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let patched = std::fs::read_to_string(&path).unwrap();
    let mut rest = patched.bytes();
    assert!(
        original.bytes().all(|b| rest.any(|p| p == b)),
        "untouched bytes changed"
    );
    syn::parse_file(&patched).expect("the patched file parses");
    check(&patched);
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
                patched.lines().all(|l| !l.starts_with("  ")),
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
    style_case(
        |s| s.trim_end().to_string(),
        |patched| assert!(!patched.ends_with('\n')),
    );
}

#[test]
fn syntax_error_in_a_file_to_patch_aborts_with_its_location() {
    let dir = copy_tree(&before(V1));
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
    let dir = copy_tree(&before(V1));
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
    assert_same_tree(dir.path(), &fixture(V1).join("after"));
}

#[test]
fn partially_patched_tree_gets_only_the_missing_pieces() {
    let dir = copy_tree(&fixture(V1).join("after"));
    let path = dir.path().join("src/agent.rs");
    let agent = std::fs::read_to_string(&path).unwrap();
    let start = "        acp_progress_start(&self.acp_thinking, &self.agent_progress_callback, &session_id.to_string());\n";
    assert!(agent.contains(start));
    std::fs::write(&path, agent.replacen(start, "", 1)).unwrap();
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 1);
    assert!(
        verify
            .stdout
            .contains("apply inserts the hook start at src/agent.rs:"),
        "{}",
        verify.stdout
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("inserted 1 pieces"), "{}", run.stderr);
    assert_same_tree(dir.path(), &fixture(V1).join("after"));
}

#[test]
fn duplicated_hook_call_is_reported() {
    let dir = copy_tree(&fixture(V1).join("after"));
    let path = dir.path().join("src/agent.rs");
    let agent = std::fs::read_to_string(&path).unwrap();
    let call =
        "    cb(AcpProgressState::Start, \"llm_response\", acp_progress_args(session, None));\n";
    assert!(agent.contains(call));
    std::fs::write(&path, agent.replacen(call, &format!("{call}{call}"), 1)).unwrap();
    let verify = acp_patch(&["verify", path_str(dir.path())], None);
    assert_eq!(verify.code, 1);
    assert!(
        verify.stdout.contains("duplicated hook.start"),
        "{}",
        verify.stdout
    );
}
