use super::*;

fn ph() -> Placeholders {
    Placeholders {
        llm_base_url: "http://127.0.0.1:9/v1".into(),
        llm_root_url: "http://127.0.0.1:9".into(),
        llm_port: 9,
        agent_dir: "/a b".into(),
        python: "/venv/bin/python".into(),
        smoke_dir: "/tmp/s".into(),
        workspace: "/tmp/s/workspace".into(),
        home: "/tmp/s/home".into(),
    }
}

#[test]
fn file_and_overrides_merge() {
    let file = FileConfig::parse(
        r#"
env_prefix = "TOP"
[other]
x = 1
[smoke]
agent_cmd = "{python} agent.py --dir {agent_dir}"
heartbeat_s = 0.5
sessions = 2
[smoke.env]
A = "1"
B = "{llm_base_url}"
[smoke.files]
".env" = "URL={llm_base_url}\n{not_a_placeholder}"
[smoke.script]
delay_s = 3.0
reasoning = ["r"]
"#,
    )
    .unwrap();
    let o = Overrides {
        env: vec![("A".into(), "2".into())],
        delay_s: Some(0.1),
        cancel_after_ms: Some(300.0),
        ..Overrides::default()
    };
    let r = Resolved::merge(PathBuf::from("/x"), file, &o).unwrap();
    assert_eq!(r.env_prefix, "TOP");
    assert_eq!(r.heartbeat_var(), "TOP_HEARTBEAT_S");
    assert_eq!(r.gap_var(), "TOP_THINK_GAP_MS");
    assert_eq!(r.heartbeat_s, 0.5);
    assert_eq!(r.gap_ms, 500.0);
    assert_eq!(r.sessions, 2);
    assert_eq!(r.cancel_after_ms, Some(300.0));
    assert_eq!(r.network, Network::Loopback);
    assert!(r.isolate_home);
    assert_eq!(
        r.env,
        vec![
            ("B".into(), "{llm_base_url}".into()),
            ("A".into(), "2".into())
        ]
    );
    assert_eq!(r.script.delay_s, 0.1);
    assert_eq!(r.script.reasoning, vec!["r"]);
    assert_eq!(r.script.answer, Script::default().answer);
    assert!(r.preset.is_none());
    let argv = agent_argv(&r.agent_cmd, &ph()).unwrap();
    assert_eq!(argv, vec!["/venv/bin/python", "agent.py", "--dir", "/a b"]);
    assert_eq!(
        ph().fill(&r.files[0].1),
        "URL=http://127.0.0.1:9/v1\n{not_a_placeholder}"
    );
    assert_eq!(
        ph().fill("{smoke_dir}|{workspace}|{home}|{llm_root_url}"),
        "/tmp/s|/tmp/s/workspace|/tmp/s/home|http://127.0.0.1:9"
    );
}

#[test]
fn smoke_prefix_wins_and_errors_are_config_errors() {
    let file = FileConfig::parse(
        "env_prefix = \"TOP\"\n[smoke]\nenv_prefix = \"HERMES\"\nagent_cmd = \"x\"",
    )
    .unwrap();
    let r = Resolved::merge(PathBuf::from("/x"), file, &Overrides::default()).unwrap();
    assert_eq!(r.env_prefix, "HERMES");
    let r = Resolved::merge(
        PathBuf::from("/x"),
        FileConfig::default(),
        &Overrides {
            agent_cmd: Some("y".into()),
            env_prefix: Some("CLI".into()),
            ..Overrides::default()
        },
    )
    .unwrap();
    assert_eq!(r.env_prefix, "CLI");
    let err = Resolved::merge(
        PathBuf::from("/x"),
        FileConfig::default(),
        &Overrides::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("--preset (hermes"), "{err}");
    let err = FileConfig::parse("[smoke]\nagnet_cmd = \"typo\"").unwrap_err();
    assert!(err.contains("agnet_cmd"), "{err}");
    assert!(parse_env_pair("NOPE").is_err());
    assert_eq!(parse_env_pair("K=a=b").unwrap(), ("K".into(), "a=b".into()));
    assert!(agent_argv("python 'unclosed", &ph()).is_err());
    assert_eq!(
        agent_argv("./run.sh -x", &ph()).unwrap(),
        vec!["/a b/./run.sh", "-x"]
    );
    assert_eq!(seconds_str(1.0), "1");
    assert_eq!(seconds_str(0.5), "0.5");
    for bad in [
        "[smoke]\nagent_cmd = \"x\"\nsessions = 0",
        "[smoke]\nagent_cmd = \"x\"\nsessions = 99",
        "[smoke]\nagent_cmd = \"x\"\nheartbeat_s = 0",
        "[smoke]\nagent_cmd = \"x\"\ngap_ms = -1",
        "[smoke]\nagent_cmd = \"x\"\nnetwork = \"wifi\"",
    ] {
        let r = FileConfig::parse(bad)
            .map_err(SmokeError::Config)
            .and_then(|f| Resolved::merge(PathBuf::from("/x"), f, &Overrides::default()));
        assert!(r.is_err(), "{bad}");
    }
}

#[test]
fn files_stay_inside_the_smoke_dir() {
    let (s, a) = (Path::new("/tmp/s"), Path::new("/agent"));
    assert_eq!(
        file_target("home/x.yaml", s, a).unwrap(),
        Path::new("/tmp/s/home/x.yaml")
    );
    assert_eq!(
        file_target("/tmp/s/workspace/./a", s, a).unwrap(),
        Path::new("/tmp/s/workspace/a")
    );
    let e = file_target("/agent/.env", s, a).unwrap_err().to_string();
    assert!(e.contains("read-only"), "{e}");
    assert!(file_target("../escape", s, a).is_err());
    assert!(file_target("home/../../etc/x", s, a).is_err());
    assert!(file_target("/etc/passwd", s, a).is_err());
    assert!(file_target(".", s, a).is_err());
}

#[test]
fn presets_layer_under_the_file_and_the_cli() {
    let file = FileConfig::parse(
        "[smoke]\npreset = \"hermes\"\ntimeout_s = 7\n[smoke.env]\nEXTRA = \"1\"\n",
    )
    .unwrap();
    let r = Resolved::merge(PathBuf::from("/x"), file, &Overrides::default()).unwrap();
    assert_eq!(r.preset.as_ref().unwrap().name, "hermes");
    assert_eq!(r.timeout_s, 7.0);
    assert!(r.env.iter().any(|(k, _)| k == "EXTRA"));
    assert!(r.env.iter().any(|(k, _)| k == "HERMES_HOME"));
    assert!(r.agent_cmd.contains("acp_adapter"));
    let err = Resolved::merge(
        PathBuf::from("/x"),
        FileConfig::default(),
        &Overrides {
            preset: Some("nope".into()),
            ..Overrides::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("no preset \"nope\""), "{err}");
    // presets read a workspace file; --no-tool-call drops that, --tool-call adds the default
    let r = Resolved::merge(
        PathBuf::from("/x"),
        FileConfig::default(),
        &Overrides {
            preset: Some("claude-agent-acp".into()),
            tool_call: Some(false),
            ..Overrides::default()
        },
    )
    .unwrap();
    assert!(r.script.tool_call.is_none());
    let r = Resolved::merge(
        PathBuf::from("/x"),
        FileConfig::parse("[smoke]\nagent_cmd = \"x\"\n").unwrap(),
        &Overrides {
            tool_call: Some(true),
            ..Overrides::default()
        },
    )
    .unwrap();
    assert_eq!(r.script.tool_call, Some(ScriptToolCall::default()));
}
