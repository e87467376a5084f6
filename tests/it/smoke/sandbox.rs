//! Config, placeholders and the sandbox folder.

use super::*;

#[test]
fn config_file_env_prefix_files_placeholders_and_env_override() {
    let dir = tempfile::tempdir().unwrap();
    let good = fixtures().join("good/agent.py");
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        format!(
            r#"env_prefix = "MYAGENT"
[smoke]
agent_cmd = "{{python}} '{}'"
[smoke.env]
ACP_FIXTURE_PREFIX = "MYAGENT"
LLM_BASE_URL = "http://127.0.0.1:1/wrong"
[smoke.files]
"conf/llm.txt" = "url={{llm_base_url}} root={{llm_root_url}} port={{llm_port}} dir={{agent_dir}} smoke={{smoke_dir}} ws={{workspace}} home={{home}}"
[smoke.script]
delay_s = 1.2
answer = ["Configured ", "answer."]
answer_after = []
"#,
            good.display()
        ),
    )
    .unwrap();
    let r = smoke(
        dir.path(),
        &[
            "--env",
            "LLM_BASE_URL={llm_base_url}",
            "--heartbeat-s",
            "0.5",
            "--keep",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.report["heartbeat_var"], "MYAGENT_HEARTBEAT_S");
    assert_eq!(r.report["gap_var"], "MYAGENT_THINK_GAP_MS");
    assert_eq!(r.report["heartbeat_s"], 0.5);
    assert!(r.fig("heartbeat", "count") >= 1.0);
    assert_eq!(r.report["transcript"]["message_text"], "Configured answer.");
    // [smoke.files] went into the kept temporary folder, not the agent's
    let smoke_dir = PathBuf::from(r.report["smoke_dir"].as_str().unwrap());
    assert_eq!(r.report["smoke_dir_kept"], true);
    assert!(r.stderr.contains("kept"), "{}", r.stderr);
    let written = std::fs::read_to_string(smoke_dir.join("conf/llm.txt")).unwrap();
    let base = r.report["llm_base_url"].as_str().unwrap();
    let root = base.trim_end_matches("/v1");
    let canon = std::fs::canonicalize(dir.path()).unwrap();
    assert_eq!(
        written,
        format!(
            "url={base} root={root} port={} dir={} smoke={} ws={} home={}",
            root.rsplit(':').next().unwrap(),
            canon.display(),
            smoke_dir.display(),
            smoke_dir.join("workspace").display(),
            smoke_dir.join("home").display()
        )
    );
    assert!(!dir.path().join("conf").exists());
    // session/new carried the workspace as cwd; the agent got the smoke folder's home
    let lines = r.report["lines"].to_string();
    let ws = smoke_dir.join("workspace").display().to_string();
    assert!(
        lines.contains(&format!("\\\"cwd\\\":\\\"{ws}\\\"")),
        "{lines}"
    );
    let env = &r.report["env"];
    let get = |k: &str| {
        env.as_array()
            .unwrap()
            .iter()
            .find(|p| p[0] == k)
            .map(|p| p[1].as_str().unwrap().to_string())
    };
    assert_eq!(
        get("HOME").as_deref(),
        Some(smoke_dir.join("home").to_str().unwrap())
    );
    assert_eq!(get("PYTHONDONTWRITEBYTECODE").as_deref(), Some("1"));
    assert_eq!(get("MYAGENT_THINK_GAP_MS").as_deref(), Some("500"));
    std::fs::remove_dir_all(&smoke_dir).unwrap();
    assert_group_gone(&r);
}

#[test]
fn the_temporary_folder_is_removed_and_the_agent_folder_is_read_only() {
    let r = smoke(&fixtures().join("good"), &["--delay-s", "0.3"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let smoke_dir = PathBuf::from(r.report["smoke_dir"].as_str().unwrap());
    assert_eq!(r.report["smoke_dir_kept"], false);
    assert!(
        !smoke_dir.exists(),
        "{} is still there",
        smoke_dir.display()
    );
    assert!(r.stdout.contains("(removed)"), "{}", r.stdout);

    // a file aimed at the agent's folder is refused before anything runs
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[smoke]\nagent_cmd = \"true\"\n[smoke.files]\n\"{agent_dir}/.env\" = \"X=1\"\n",
    )
    .unwrap();
    let r = smoke(dir.path(), &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("read-only"), "{}", r.stderr);
    assert!(!dir.path().join(".env").exists());
}

#[test]
fn an_agent_that_writes_into_its_folder_fails_no_trace() {
    // on a copy: the agent really does litter it
    let root = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixtures().join("acp_min.py"),
        root.path().join("acp_min.py"),
    )
    .unwrap();
    crate::support::copy_into(&fixtures().join("good"), &root.path().join("good"));
    crate::support::copy_into(&fixtures().join("litters"), &root.path().join("litters"));
    let dir = root.path().join("litters");
    let _turn = crate::support::smoke_turn();
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .arg("smoke")
        .arg(&dir)
        .args(["--delay-s", "0.3", "--json"])
        .arg(root.path().join("r.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(root.path().join("r.json")).unwrap())
            .unwrap();
    let failed: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["no_trace"]);
    assert_eq!(
        report["trace"],
        serde_json::json!(["added .agent-state", "added .agent-state/last-session.txt"])
    );
    assert!(dir.join(".agent-state/last-session.txt").is_file());
}
