//! The embedded ACP smoke run: `acp-patch smoke [PATH]`.
//!
//! Starts a scripted OpenAI-compatible LLM on 127.0.0.1 ([`llm`]), spawns the agent in its
//! folder and process group and drives one ACP turn as a client ([`client`]), merges what a
//! client would show ([`transcript`]), judges the raw lines ([`checks`]) and reports
//! ([`report`]). Exit codes: 0 all checks pass, 1 a check failed, 2 could not run.

pub mod checks;
pub mod client;
pub mod config;
pub mod llm;
pub mod report;
pub mod transcript;
pub mod wire;

use std::path::PathBuf;
use std::time::{Duration, Instant};

pub use report::SmokeReport;

use checks::CheckContext;
use client::{Limits, SpawnSpec, TurnOutcome};
use config::{Overrides, Placeholders, Resolved};
use transcript::Transcript;

/// Arguments of `acp-patch smoke` (and `verify --smoke`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SmokeArgs {
    /// The agent's folder (holds acp-patch.toml; the agent runs there).
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// Command that starts the agent (shell words; placeholders {python}, {agent_dir}, {llm_base_url}, {llm_port}). Overrides [smoke] agent_cmd.
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
    /// Extra environment for the agent, repeatable; overrides [smoke.env]. Placeholders allowed.
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Heartbeat interval given to the agent as <PREFIX>_HEARTBEAT_S [default: 1].
    #[arg(long, value_name = "SECONDS")]
    pub heartbeat_s: Option<f64>,
    /// Prefix of the agent's env vars [default: ACP, or env_prefix in acp-patch.toml].
    #[arg(long, value_name = "PREFIX")]
    pub env_prefix: Option<String>,
    /// Limit for the prompt turn [default: 60].
    #[arg(long, value_name = "SECONDS")]
    pub timeout_s: Option<f64>,
    /// Scripted LLM wait before its first delta [default: 2.5, or [smoke.script] delay_s].
    #[arg(long, value_name = "SECONDS")]
    pub delay_s: Option<f64>,
    /// The prompt text.
    #[arg(long)]
    pub prompt: Option<String>,
    /// The interpreter for {python} [default: $ACP_PATCH_PYTHON, else python3].
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
    /// Read this file instead of PATH/acp-patch.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Write the transcript (raw lines with times) and checks as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write one self-contained HTML page of the turn and checks.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// Why a smoke run could not happen (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum SmokeError {
    #[error("bad configuration: {0}")]
    Config(String),
    #[error("could not start the scripted LLM: {0}")]
    Llm(#[source] std::io::Error),
    #[error("could not spawn the agent `{cmd}`: {source}")]
    Spawn {
        cmd: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "initialize failed: {message}; agent {exit}{}",
        tail_suffix(stderr_tail)
    )]
    Initialize {
        message: String,
        exit: String,
        stderr_tail: String,
    },
    #[error(
        "session/new failed: {message}; agent {exit}{}",
        tail_suffix(stderr_tail)
    )]
    SessionNew {
        message: String,
        exit: String,
        stderr_tail: String,
    },
    #[error("interrupted")]
    Interrupted,
    #[error("{0}")]
    Runtime(#[source] std::io::Error),
}

fn tail_suffix(tail: &str) -> String {
    if tail.is_empty() {
        "; no stderr".to_string()
    } else {
        format!("\nagent stderr (tail):\n{tail}")
    }
}

/// A smoke run's inputs: the folder and the overrides of its acp-patch.toml.
#[derive(Debug, Clone)]
pub struct SmokeOptions {
    pub path: PathBuf,
    pub overrides: Overrides,
}

impl SmokeOptions {
    pub fn from_args(a: &SmokeArgs) -> Result<Self, SmokeError> {
        let env = a
            .env
            .iter()
            .map(|s| config::parse_env_pair(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            path: a.path.clone(),
            overrides: Overrides {
                agent_cmd: a.agent_cmd.clone(),
                env,
                heartbeat_s: a.heartbeat_s,
                env_prefix: a.env_prefix.clone(),
                timeout_s: a.timeout_s,
                delay_s: a.delay_s,
                prompt: a.prompt.clone(),
                python: a.python.clone(),
                config_file: a.config.clone(),
            },
        })
    }
}

/// Runs the smoke test (builds its own tokio runtime; use [`run_async`] inside one).
pub fn run(opts: &SmokeOptions) -> Result<SmokeReport, SmokeError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(SmokeError::Runtime)?;
    rt.block_on(async {
        let sigterm = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        // On Ctrl-C / SIGTERM the run future is dropped, which kills the agent's group.
        tokio::select! {
            r = run_async(opts) => r,
            _ = tokio::signal::ctrl_c() => Err(SmokeError::Interrupted),
            _ = sigterm => Err(SmokeError::Interrupted),
        }
    })
}

/// Runs the smoke test on the current tokio runtime.
pub async fn run_async(opts: &SmokeOptions) -> Result<SmokeReport, SmokeError> {
    let cfg = Resolved::new(&opts.path, &opts.overrides)?;
    let epoch = Instant::now();
    let server = llm::LlmServer::start(cfg.script.clone(), epoch)
        .await
        .map_err(SmokeError::Llm)?;
    let ph = Placeholders {
        llm_base_url: server.base_url(),
        llm_port: server.port(),
        agent_dir: cfg.agent_dir.display().to_string(),
        python: cfg.python.clone(),
    };
    config::write_files(&cfg, &ph)?;
    let argv = config::agent_argv(&cfg.agent_cmd, &ph)?;
    let mut env: Vec<(String, String)> = cfg
        .env
        .iter()
        .map(|(k, v)| (k.clone(), ph.fill(v)))
        .collect();
    let hb_var = cfg.heartbeat_var();
    env.retain(|(k, _)| *k != hb_var);
    env.push((hb_var.clone(), config::seconds_str(cfg.heartbeat_s)));
    let spec = SpawnSpec {
        argv: argv.clone(),
        cwd: cfg.agent_dir.clone(),
        env: env.clone(),
    };
    let turn = Duration::from_secs_f64(cfg.timeout_s);
    let limits = Limits {
        setup: turn.min(Duration::from_secs(30)),
        turn,
    };
    let run = client::run_turn(&spec, &cfg.prompt, &limits, epoch).await?;

    let no_response_note = match &run.outcome {
        TurnOutcome::Answered => None,
        TurnOutcome::Failed(e) => Some(format!("the prompt request failed: {e} ({})", run.exit)),
        TurnOutcome::AgentGone => {
            Some(format!("the agent stopped before answering ({})", run.exit))
        }
        TurnOutcome::TimedOut(d) => Some(format!(
            "no answer within the {} s timeout",
            d.as_secs_f64()
        )),
    };
    let ctx = CheckContext {
        heartbeat_s: cfg.heartbeat_s,
        no_response_note: no_response_note.clone(),
        ..CheckContext::default()
    };
    let checks = checks::run_all(&run.lines, &ctx);
    let transcript = Transcript::from_lines(&run.lines);
    let frame = wire::TurnFrame::find(&run.lines);
    let prompt_offset_ms = run.prompt_at.saturating_duration_since(epoch).as_secs_f64() * 1000.0;
    let llm_requests = server
        .requests()
        .into_iter()
        .map(|mut q| {
            q.t_ms = ((q.t_ms - prompt_offset_ms) * 10.0).round() / 10.0;
            q
        })
        .collect();
    let outcome = match &run.outcome {
        TurnOutcome::Answered => match frame.stop_reason() {
            Some(s) => format!("answered, stopReason {s}"),
            None => "answered with an error".to_string(),
        },
        _ => no_response_note.unwrap_or_default(),
    };
    Ok(SmokeReport {
        passed: checks.iter().all(|c| c.passed),
        agent_dir: cfg.agent_dir.display().to_string(),
        agent_cmd: argv,
        env: report::mask_env(&env),
        heartbeat_var: hb_var,
        heartbeat_s: cfg.heartbeat_s,
        timeout_s: cfg.timeout_s,
        prompt: cfg.prompt.clone(),
        llm_base_url: server.base_url(),
        script: cfg.script.clone(),
        llm_requests,
        outcome,
        stop_reason: frame.stop_reason().map(str::to_string),
        agent_pid: run.pid,
        agent_exit: run.exit,
        permission_requests: run.permission_requests,
        stderr_tail: run.stderr,
        transcript,
        checks,
        lines: run.lines,
    })
}

fn write_out(path: &std::path::Path, contents: &str) -> bool {
    match std::fs::write(path, contents) {
        Ok(()) => true,
        Err(e) => {
            eprintln!("acp-patch smoke: cannot write {}: {e}", path.display());
            false
        }
    }
}

/// Runs the smoke test from the command line; returns the process exit code (0, 1 or 2).
pub fn run_cli(args: &SmokeArgs) -> i32 {
    let result = SmokeOptions::from_args(args).and_then(|o| run(&o));
    match result {
        Ok(r) => {
            print!("{}", report::text(&r));
            let mut ok = true;
            if let Some(p) = &args.json {
                ok &= write_out(p, &report::json(&r));
            }
            if let Some(p) = &args.html {
                ok &= write_out(p, &report::html(&r));
            }
            if !ok {
                2
            } else if r.passed {
                0
            } else {
                1
            }
        }
        Err(e) => {
            eprintln!("acp-patch smoke: {e}");
            if let Some(p) = &args.json {
                write_out(p, &report::error_json(&e.to_string()));
            }
            2
        }
    }
}
