//! One smoke run, start to finish: the temporary folder, the scripted LLM, the agent and its
//! sessions, then the checks per session and for the whole run, and the report.

use std::time::{Duration, Instant};

use super::checks::{self, CheckContext, SentText, SessionText, ToolExpectation};
use super::client::{self, Limits, SpawnSpec, TurnOutcome, TurnPlan};
use super::config::{self, Network, Placeholders, Resolved};
use super::llm::{self, LlmRequest, SESSION_MARKER, ServerConfig};
use super::report::{SessionReport, SmokeReport};
use super::sandbox::{self, SmokeDir};
use super::timeline::Timeline;
use super::trace::TreeState;
use super::transcript::Transcript;
use super::wire::{self, Direction, TurnFrame};
use super::{SmokeError, SmokeOptions};

/// How the run's network was set up, for the report.
#[derive(Debug, Clone)]
pub struct NetworkNote(pub String);

/// Runs the smoke test (builds its own tokio runtime on a thread of its own, which moves into
/// a loopback-only network namespace when asked and allowed; use [`run_async`] inside a runtime).
pub fn run(opts: &SmokeOptions) -> Result<SmokeReport, SmokeError> {
    let cfg = Resolved::new(&opts.path, &opts.overrides)?;
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let note = match cfg.network {
                    Network::Host => NetworkNote("the host's network (network = \"host\")".into()),
                    Network::Loopback => match sandbox::enter_loopback_namespace() {
                        Ok(()) => NetworkNote(
                            "a network namespace with only loopback: the agent reaches the scripted LLM and nothing else".into(),
                        ),
                        Err(e) => NetworkNote(format!(
                            "the host's network: no namespace with only loopback could be made ({e}; it needs root or CAP_SYS_ADMIN)"
                        )),
                    },
                };
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .map_err(SmokeError::Runtime)?;
                rt.block_on(async {
                    let sigterm = async {
                        match tokio::signal::unix::signal(
                            tokio::signal::unix::SignalKind::terminate(),
                        ) {
                            Ok(mut s) => {
                                s.recv().await;
                            }
                            Err(_) => std::future::pending::<()>().await,
                        }
                    };
                    // On Ctrl-C / SIGTERM the run future is dropped, which kills the agent's
                    // group and removes the temporary folder.
                    tokio::select! {
                        r = execute(cfg, note) => r,
                        _ = tokio::signal::ctrl_c() => Err(SmokeError::Interrupted),
                        _ = sigterm => Err(SmokeError::Interrupted),
                    }
                })
            })
            .join()
            .unwrap_or_else(|_| Err(SmokeError::Runtime(std::io::Error::other("the smoke run panicked"))))
    })
}

/// Runs the smoke test on the current tokio runtime (in the caller's network namespace).
pub async fn run_async(opts: &SmokeOptions) -> Result<SmokeReport, SmokeError> {
    let cfg = Resolved::new(&opts.path, &opts.overrides)?;
    execute(
        cfg,
        NetworkNote("the caller's network (run_async does not switch namespaces)".into()),
    )
    .await
}

/// The prompt of session `k` of `n` (marked when there are several, so answers can be told apart).
pub fn session_prompt(prompt: &str, k: u32, n: u32) -> String {
    if n > 1 {
        format!("{prompt} {SESSION_MARKER}{k}]")
    } else {
        prompt.to_string()
    }
}

async fn execute(cfg: Resolved, network: NetworkNote) -> Result<SmokeReport, SmokeError> {
    let smoke_dir = SmokeDir::create()
        .map_err(|e| SmokeError::Config(format!("cannot create the temporary folder: {e}")))?;
    let before = TreeState::capture(&cfg.agent_dir);
    let result = drive(&cfg, &smoke_dir, &before, network).await;
    let strays = smoke_dir.end_strays();
    let kept = smoke_dir.finish(cfg.keep);
    result.map(|mut r| {
        r.smoke_dir_kept = kept.is_some();
        if !strays.is_empty() {
            r.notes.push(format!(
                "the agent left {} running in the smoke folder after its process group was ended (started in a session of its own); ended: {}",
                match strays.len() {
                    1 => "a process".to_string(),
                    n => format!("{n} processes"),
                },
                strays.join(", ")
            ));
        }
        r
    })
}

async fn drive(
    cfg: &Resolved,
    smoke_dir: &SmokeDir,
    before: &TreeState,
    network: NetworkNote,
) -> Result<SmokeReport, SmokeError> {
    let epoch = Instant::now();
    let mut ph = Placeholders {
        agent_dir: cfg.agent_dir.display().to_string(),
        python: cfg.python.clone(),
        smoke_dir: smoke_dir.path().display().to_string(),
        workspace: smoke_dir.workspace().display().to_string(),
        home: smoke_dir.home().display().to_string(),
        ..Placeholders::default()
    };
    let script = cfg.script.clone().filled(|s| ph.fill(s));
    let server = llm::LlmServer::start_with(
        ServerConfig {
            script: script.clone(),
            prompt: cfg.prompt.clone(),
            seed_token: Some(smoke_dir.token.clone()),
        },
        epoch,
    )
    .await
    .map_err(SmokeError::Llm)?;
    ph.llm_base_url = server.base_url();
    ph.llm_root_url = server.root_url();
    ph.llm_port = server.port();
    config::write_files(cfg, &ph, smoke_dir.path())?;
    let argv = config::agent_argv(&cfg.agent_cmd, &ph)?;
    // the smoke folder's home first, then [smoke.env] (which may override it), then the
    // intervals the run is judged by
    let mut env = sandbox::home_env(smoke_dir, cfg.isolate_home);
    for (k, v) in &cfg.env {
        env.retain(|(ek, _)| ek != k);
        env.push((k.clone(), ph.fill(v)));
    }
    let (hb_var, gap_var) = (cfg.heartbeat_var(), cfg.gap_var());
    env.retain(|(k, _)| *k != hb_var && *k != gap_var);
    env.push((hb_var.clone(), config::seconds_str(cfg.heartbeat_s)));
    env.push((gap_var.clone(), format!("{}", cfg.gap_ms)));
    let spec = SpawnSpec {
        argv: argv.clone(),
        cwd: cfg.agent_dir.clone(),
        env: env.clone(),
    };
    let n = cfg.sessions;
    let prompts: Vec<String> = (1..=n).map(|k| session_prompt(&cfg.prompt, k, n)).collect();
    let cancel_after = cfg
        .cancel_after_ms
        .map(|ms| Duration::from_secs_f64(ms / 1000.0));
    // after a cancel, listen until the scripted answer would have finished, and a second more
    let linger = match cancel_after {
        Some(c) => {
            let answer_end =
                Duration::from_secs_f64(script.delay_s.max(0.0)) + script.stream_duration();
            answer_end
                .saturating_sub(c)
                .max(Duration::from_millis(500))
                .min(Duration::from_secs(8))
                + Duration::from_secs(1)
        }
        None => Duration::ZERO,
    };
    let plan = TurnPlan {
        session_cwd: smoke_dir.workspace(),
        prompts: prompts.clone(),
        cancel_after,
        linger,
    };
    let turn = Duration::from_secs_f64(cfg.timeout_s);
    let limits = Limits {
        setup: turn.min(Duration::from_secs(30)),
        turn,
    };
    let run = client::run(&spec, &plan, &limits, epoch).await?;
    let after = TreeState::capture(&cfg.agent_dir);
    let trace = before.changes(&after);

    let prompt_offset_ms = run.prompt_at.saturating_duration_since(epoch).as_secs_f64() * 1000.0;
    let llm_requests: Vec<LlmRequest> = server
        .requests()
        .into_iter()
        .map(|mut q| {
            q.t_ms = rel_ms(q.t_ms, prompt_offset_ms);
            q.done_ms = q.done_ms.map(|t| rel_ms(t, prompt_offset_ms));
            q
        })
        .collect();

    // what the checks read: v1 as it is, v2 read the way v1 reads (the report keeps the raw lines)
    let judged = if run.protocol == 2 {
        super::wire_v2::as_v1(&run.lines)
    } else {
        run.lines.clone()
    };
    let mut sessions: Vec<SessionReport> = Vec::new();
    let mut per_session_checks = Vec::new();
    let mut texts: Vec<SessionText> = Vec::new();
    for (k, s) in run.sessions.iter().enumerate() {
        let number = k as u32 + 1;
        let view = wire::session_view(&judged, &s.session_id);
        let frame = TurnFrame::find(&view);
        // the session's prompt, on the run's clock (for its model calls)
        let offset = judged
            .iter()
            .find(|l| {
                l.dir == Direction::Out
                    && l.json().is_some_and(|v| {
                        v.get("method").and_then(|m| m.as_str()) == Some("session/prompt")
                            && wire::line_session(&v) == Some(s.session_id.as_str())
                    })
            })
            .map(|l| l.t_ms)
            .unwrap_or(0.0);
        let mine: Vec<LlmRequest> = llm_requests
            .iter()
            .filter(|q| {
                matches!(q.kind.as_str(), "turn" | "after_tool")
                    && (n == 1 || q.session == Some(number))
            })
            .cloned()
            .map(|mut q| {
                q.t_ms -= offset;
                q.done_ms = q.done_ms.map(|d| d - offset);
                q
            })
            .collect();
        let note = outcome_note(&s.outcome, &run.exit);
        let cancel_at_ms = cancel_after.map(|c| {
            view.iter()
                .find(|l| {
                    l.dir == Direction::Out
                        && l.json().is_some_and(|v| {
                            v.get("method").and_then(|m| m.as_str()) == Some("session/cancel")
                        })
                })
                .map(|l| l.t_ms)
                .unwrap_or(c.as_secs_f64() * 1000.0)
        });
        let tool = script.tool_call.as_ref().map(|tc| {
            let after_tool: Vec<&LlmRequest> =
                mine.iter().filter(|q| q.kind == "after_tool").collect();
            ToolExpectation {
                name: tc.name.clone(),
                call_id: if n > 1 {
                    format!("{}_s{number}", tc.id)
                } else {
                    tc.id.clone()
                },
                result_carries_seed: if after_tool.is_empty() {
                    None
                } else {
                    Some(after_tool.iter().any(|q| q.carries_seed == Some(true)))
                },
                tool_result: after_tool.iter().find_map(|q| q.tool_result.clone()),
                results_at_ms: after_tool.iter().map(|q| q.t_ms).collect(),
                not_asked: if mine.iter().any(|q| q.answer.contains("tool call")) {
                    None
                } else {
                    mine.iter()
                        .find(|q| q.answer.contains("does not offer"))
                        .map(|q| q.answer.clone())
                },
            }
        });
        let ctx = CheckContext {
            heartbeat_s: cfg.heartbeat_s,
            think_card_max_ms: cfg.think_card_max_ms,
            gap_ms: cfg.gap_ms,
            no_response_note: note.clone(),
            expected_stop: if cancel_after.is_some() {
                "cancelled".into()
            } else {
                "end_turn".into()
            },
            cancel_at_ms,
            tool,
            // nothing to compare when the script fails the model calls or none carried the prompt
            answer: (script.error.is_none() && !mine.is_empty()).then(|| {
                mine.iter()
                    .map(|q| SentText {
                        t_ms: q.t_ms,
                        text: q.text_sent.clone(),
                    })
                    .collect()
            }),
        };
        let checks = checks::run_session(&view, &ctx);
        let transcript = Transcript::from_lines(&view);
        texts.push(SessionText {
            session_id: s.session_id.clone(),
            number,
            message_text: transcript.message_text.clone(),
            thought_text: transcript.thought_text.clone(),
        });
        let timeline = Timeline::from_lines(&view, &mine);
        sessions.push(SessionReport {
            number,
            session_id: s.session_id.clone(),
            prompt: prompts[k].clone(),
            prompt_offset_ms: offset,
            outcome: match &s.outcome {
                TurnOutcome::Answered => match frame.stop_reason() {
                    Some(r) => format!("answered, stopReason {r}"),
                    None => "answered with an error".to_string(),
                },
                _ => note.unwrap_or_default(),
            },
            stop_reason: frame.stop_reason().map(str::to_string),
            transcript,
            timeline,
            checks: checks.clone(),
        });
        per_session_checks.push(checks);
    }
    let mut all = checks::merge_sessions(&per_session_checks);
    all.push(checks::clean_stdout(&run.lines));
    if n > 1 {
        all.push(checks::sessions_isolated(&judged, &texts));
    }
    all.push(checks::no_trace(
        &trace,
        after.files(),
        after.in_git(),
        after.truncated,
    ));
    checks::order(&mut all);

    let mut notes: Vec<String> = run.negotiation.iter().cloned().collect();
    if !llm_requests
        .iter()
        .any(|q| matches!(q.kind.as_str(), "turn" | "after_tool"))
    {
        notes.push(format!(
            "no model call carried the prompt text {:?}: every request was answered as a side call (a short \"OK\" at once), so the scripted wait never happened",
            cfg.prompt
        ));
    }
    let unknown: Vec<String> = llm_requests
        .iter()
        .filter(|q| q.status == 404)
        .map(|q| format!("{} {}", q.method, q.path))
        .collect();
    if !unknown.is_empty() {
        notes.push(format!(
            "requests the scripted LLM does not know (answered 404): {}",
            unknown.join(", ")
        ));
    }
    let first = sessions.first();
    Ok(SmokeReport {
        passed: checks::verdict(&all, cfg.strict),
        protocol: run.protocol,
        strict: cfg.strict,
        agent_dir: cfg.agent_dir.display().to_string(),
        agent_cmd: argv,
        env: super::report::mask_env(&env),
        preset: cfg.preset.clone(),
        heartbeat_var: hb_var,
        heartbeat_s: cfg.heartbeat_s,
        gap_var,
        gap_ms: cfg.gap_ms,
        timeout_s: cfg.timeout_s,
        think_card_max_ms: cfg.think_card_max_ms,
        prompt: cfg.prompt.clone(),
        sessions_requested: n,
        cancel_after_ms: cfg.cancel_after_ms,
        llm_base_url: server.base_url(),
        script,
        llm_requests,
        network: network.0,
        smoke_dir: smoke_dir.path().display().to_string(),
        smoke_dir_kept: false,
        outcome: first.map(|s| s.outcome.clone()).unwrap_or_default(),
        stop_reason: first.and_then(|s| s.stop_reason.clone()),
        agent_pid: run.pid,
        agent_exit: run.exit,
        permission_requests: run.permission_requests,
        stderr_tail: run.stderr,
        transcript: first.map(|s| s.transcript.clone()).unwrap_or_default(),
        sessions,
        trace,
        notes,
        checks: all,
        lines: run.lines,
    })
}

/// A time on the server's clock, relative to the prompt, to 0.1 ms.
fn rel_ms(t: f64, prompt_ms: f64) -> f64 {
    ((t - prompt_ms) * 10.0).round() / 10.0
}

fn outcome_note(outcome: &TurnOutcome, exit: &str) -> Option<String> {
    match outcome {
        TurnOutcome::Answered => None,
        TurnOutcome::Failed(e) => Some(format!("the prompt request failed: {e} ({exit})")),
        TurnOutcome::AgentGone => Some(format!("the agent stopped before answering ({exit})")),
        TurnOutcome::TimedOut(d) => Some(format!(
            "no answer within the {} s timeout",
            d.as_secs_f64()
        )),
    }
}
