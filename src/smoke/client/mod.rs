//! Spawns the agent in its own folder and process group, and drives its ACP turns with the
//! `agent-client-protocol` SDK over the child's pipes, tapping every raw line on the way:
//! one session per prompt, every prompt sent at once, `session/cancel` when planned.
//!
//! The protocol version is negotiated from `initialize`: protocol v1 first ([`v1`]); an agent
//! that answers it with -32022 (it supports no version at or below 1: the draft v2) is started
//! again and driven as v2 ([`v2`]).

mod v1;
mod v2;

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::Lines;
use agent_client_protocol::schema::ProtocolVersion;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;

use super::SmokeError;
use super::wire::{Direction, RawLine};

/// How many stderr lines are kept.
const STDERR_KEEP: usize = 200;

/// What to spawn.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    /// Set on top of the inherited environment.
    pub env: Vec<(String, String)>,
}

/// Limits of a run.
#[derive(Debug, Clone)]
pub struct Limits {
    /// For `initialize` and for each `session/new`.
    pub setup: Duration,
    /// For the prompt turn.
    pub turn: Duration,
}

/// What the client does once the agent is up.
#[derive(Debug, Clone)]
pub struct TurnPlan {
    /// The `cwd` of every `session/new` (absolute).
    pub session_cwd: PathBuf,
    /// One prompt per session, all sent at once.
    pub prompts: Vec<String>,
    /// Send `session/cancel` to every session this long after the prompts.
    pub cancel_after: Option<Duration>,
    /// Keep listening this long after the last answer (to see updates that come too late).
    pub linger: Duration,
}

/// How one prompt turn went, as seen by the client.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnOutcome {
    /// The agent answered the prompt (any stop reason, judged by the checks).
    Answered,
    /// The prompt request failed (error response, connection error).
    Failed(String),
    /// The agent closed its stdout (exited) without answering.
    AgentGone,
    /// No answer within the limit.
    TimedOut(Duration),
}

/// One session of the run.
#[derive(Debug, Clone)]
pub struct SessionRun {
    pub session_id: String,
    pub outcome: TurnOutcome,
}

/// A finished run of the agent.
#[derive(Debug, Clone)]
pub struct ClientRun {
    /// Every raw line, times relative to the first `session/prompt` send.
    pub lines: Vec<RawLine>,
    pub sessions: Vec<SessionRun>,
    /// The agent's process id (= its process group id).
    pub pid: i32,
    /// How the agent ended: "exit code 3 (on its own)", "killed by signal 9".
    pub exit: String,
    /// Whether it exited by itself before being killed.
    pub exited_on_its_own: bool,
    pub stderr: Vec<String>,
    pub permission_requests: usize,
    /// When the first prompt was sent, on the caller's clock.
    pub prompt_at: Instant,
    /// The protocol version spoken (1, or 2 for a draft-v2 agent).
    pub protocol: u16,
    /// How the version was agreed on, when it was not v1 at the first try.
    pub negotiation: Option<String>,
}

/// Kills the whole process group with SIGKILL when dropped (every exit path, panics included).
#[derive(Debug)]
pub struct GroupGuard {
    pgid: i32,
}

impl GroupGuard {
    pub fn new(pgid: i32) -> Self {
        Self { pgid }
    }
    pub fn kill(&self) {
        if self.pgid > 1 {
            // SAFETY: killpg has no memory-safety preconditions.
            unsafe {
                libc::killpg(self.pgid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

type Recording = Arc<Mutex<Vec<(Direction, Instant, String)>>>;

fn record(rec: &Recording, dir: Direction, text: &str) {
    if let Ok(mut r) = rec.lock() {
        r.push((dir, Instant::now(), text.to_string()));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    Initialize,
    SessionNew,
    Prompt,
}

enum MainResult {
    /// The phase, what failed, and the JSON-RPC error code when the agent answered one.
    SetupFailed(Phase, String, Option<i32>),
    Turns(Vec<SessionRun>),
    /// The agent refused protocol v1 at `initialize` with -32022 (what it said).
    VersionRefused(String),
}

/// The JSON-RPC error an agent answers an `initialize` of a version it does not support with.
const VERSION_REFUSED: i32 = -32022;

/// What a protocol's driver needs: the plan, the limits, and how to tell the agent is gone.
struct Drive {
    plan: TurnPlan,
    limits: Limits,
    eof: watch::Receiver<bool>,
    exited: watch::Receiver<bool>,
    phase: Arc<Mutex<Phase>>,
    permissions: Arc<AtomicUsize>,
}

impl Drive {
    fn set(&self, p: Phase) {
        if let Ok(mut g) = self.phase.lock() {
            *g = p;
        }
    }

    /// Resolves when stdout closed or the agent exited (a grandchild may hold stdout open),
    /// plus a grace period for the SDK to process what was read.
    fn gone(&self) -> impl Future<Output = ()> + use<> {
        let (mut eof, mut exited) = (self.eof.clone(), self.exited.clone());
        async move {
            tokio::select! {
                _ = eof.wait_for(|e| *e) => {}
                _ = exited.wait_for(|e| *e) => {}
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// A set-up request within the set-up limit; a failure as the run's result.
    async fn step<T>(
        &self,
        phase: Phase,
        request: impl Future<Output = Result<T, agent_client_protocol::Error>>,
    ) -> Result<T, MainResult> {
        tokio::select! {
            r = request => r.map_err(|e| {
                // one line: the code, the message and the data as compact JSON
                let data = e.data.as_ref().map(|d| format!(" {d}")).unwrap_or_default();
                let said = format!("error {}: {}{data}", i32::from(e.code), e.message);
                MainResult::SetupFailed(phase, said, Some(i32::from(e.code)))
            }),
            _ = self.gone() => Err(MainResult::SetupFailed(
                phase,
                "the agent stopped before answering".into(),
                None,
            )),
            _ = tokio::time::sleep(self.limits.setup) => Err(MainResult::SetupFailed(
                phase,
                format!("no answer within {:?}", self.limits.setup),
                None,
            )),
        }
    }

    /// After the turns: listen on after a cancel (or when asked) for what comes too late.
    async fn linger(&self) {
        if self.plan.cancel_after.is_some() || !self.plan.linger.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(self.plan.linger) => {}
                _ = self.gone() => {}
            }
        }
    }
}

/// Runs the turns: spawn, initialize, one session/new per prompt, every session/prompt at
/// once (and session/cancel when planned); then kills the group. An agent that refuses
/// protocol v1 is run again with v2 (the run says so in `negotiation`).
pub async fn run(
    spec: &SpawnSpec,
    plan: &TurnPlan,
    limits: &Limits,
    epoch: Instant,
) -> Result<ClientRun, SmokeError> {
    match attempt(spec, plan, limits, epoch, ProtocolVersion::V1).await? {
        Attempt::Done(run) => Ok(run),
        Attempt::Refused(why) => {
            match attempt(spec, plan, limits, epoch, ProtocolVersion::V2).await? {
                Attempt::Done(mut run) => {
                    run.negotiation = Some(format!(
                        "the agent answered a protocol v1 initialize with {why}; started again and driven with protocol v2"
                    ));
                    Ok(run)
                }
                Attempt::Refused(again) => Err(SmokeError::Initialize {
                    message: format!("the agent refused protocol v1 ({why}) and v2 ({again})"),
                    exit: String::new(),
                    stderr_tail: String::new(),
                }),
            }
        }
    }
}

/// One run of the agent with one protocol version.
enum Attempt {
    Done(ClientRun),
    /// It refused the version at `initialize` (what it said).
    Refused(String),
}

async fn attempt(
    spec: &SpawnSpec,
    plan: &TurnPlan,
    limits: &Limits,
    epoch: Instant,
    version: ProtocolVersion,
) -> Result<Attempt, SmokeError> {
    let (program, args) = spec
        .argv
        .split_first()
        .ok_or_else(|| SmokeError::Config("empty agent command".into()))?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(&spec.cwd)
        .envs(spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|source| SmokeError::Spawn {
        cmd: shell_words::join(&spec.argv),
        source,
    })?;
    let pid = child.id().map(|p| p as i32).unwrap_or(0);
    let guard = GroupGuard::new(pid);
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(SmokeError::Spawn {
            cmd: shell_words::join(&spec.argv),
            source: std::io::Error::other("missing pipes"),
        });
    };

    // the child is reaped by its own task, which also says when it exited
    let (exit_tx, exit_rx) = watch::channel(false);
    let wait_task = tokio::spawn(async move {
        let status = child.wait().await;
        let _ = exit_tx.send(true);
        status
    });

    let rec: Recording = Arc::new(Mutex::new(Vec::new()));
    let stderr_tail: Arc<Mutex<VecDeque<String>>> = Arc::new(Mutex::new(VecDeque::new()));
    let (eof_tx, eof_rx) = watch::channel(false);

    // stdout: tap every line, then hand it to the SDK
    let (line_tx, line_rx) = futures::channel::mpsc::unbounded::<std::io::Result<String>>();
    let stdout_task = tokio::spawn({
        let rec = rec.clone();
        async move {
            let mut reader = BufReader::new(stdout);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf).await {
                    Ok(0) => break,
                    Ok(_) => {
                        while matches!(buf.last(), Some(b'\n') | Some(b'\r')) {
                            buf.pop();
                        }
                        let line = String::from_utf8_lossy(&buf).into_owned();
                        record(&rec, Direction::In, &line);
                        let _ = line_tx.unbounded_send(Ok(line));
                    }
                    Err(e) => {
                        let _ = line_tx.unbounded_send(Err(e));
                        break;
                    }
                }
            }
            let _ = eof_tx.send(true);
        }
    });
    let stderr_task = tokio::spawn({
        let tail = stderr_tail.clone();
        async move {
            let mut reader = BufReader::new(stderr);
            let mut buf = Vec::new();
            while let Ok(n) = reader.read_until(b'\n', &mut buf).await {
                if n == 0 {
                    break;
                }
                let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                buf.clear();
                if let Ok(mut t) = tail.lock() {
                    t.push_back(line);
                    while t.len() > STDERR_KEEP {
                        t.pop_front();
                    }
                }
            }
        }
    });

    // stdin: tap every line the SDK writes
    let sink = futures::sink::unfold(
        (stdin, rec.clone()),
        |(mut stdin, rec), line: String| async move {
            record(&rec, Direction::Out, &line);
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await?;
            Ok::<_, std::io::Error>((stdin, rec))
        },
    );
    let transport = Lines::new(sink, line_rx);

    let phase = Arc::new(Mutex::new(Phase::Initialize));
    let permissions = Arc::new(AtomicUsize::new(0));
    let drive = Drive {
        plan: plan.clone(),
        limits: limits.clone(),
        eof: eof_rx,
        exited: exit_rx.clone(),
        phase: phase.clone(),
        permissions: permissions.clone(),
    };
    let conn = async move {
        match version {
            ProtocolVersion::V1 => v1::drive(transport, drive).await,
            _ => v2::drive(transport, drive).await,
        }
    };
    let (setup, turn, linger) = (limits.setup, limits.turn, plan.linger);
    let overall = setup * (1 + plan.prompts.len() as u32) + turn + linger + Duration::from_secs(5);
    let result = tokio::time::timeout(overall, conn).await;
    let phase_reached = phase.lock().map(|p| *p).unwrap_or(Phase::Initialize);

    // finish: note whether it exited by itself, then kill the whole group and reap
    let exited_on_its_own = *exit_rx.borrow();
    guard.kill();
    let status = match tokio::time::timeout(Duration::from_secs(3), wait_task).await {
        Ok(Ok(Ok(s))) => Some(s),
        _ => None,
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), stdout_task).await;
    let _ = tokio::time::timeout(Duration::from_secs(2), stderr_task).await;
    drop(guard);

    let exit = describe_exit(status, exited_on_its_own);
    let stderr: Vec<String> = stderr_tail
        .lock()
        .map(|t| t.iter().cloned().collect())
        .unwrap_or_default();

    let timed_out = || {
        plan.prompts
            .iter()
            .map(|_| SessionRun {
                session_id: String::new(),
                outcome: TurnOutcome::TimedOut(turn),
            })
            .collect::<Vec<_>>()
    };
    let sessions = match result {
        Ok(Ok(MainResult::Turns(s))) => s,
        Ok(Ok(MainResult::VersionRefused(why))) => return Ok(Attempt::Refused(why)),
        Ok(Ok(MainResult::SetupFailed(p, msg, _))) => {
            return Err(setup_error(p, msg, &exit, &stderr));
        }
        Ok(Err(e)) if phase_reached < Phase::Prompt => {
            return Err(setup_error(phase_reached, e.to_string(), &exit, &stderr));
        }
        Ok(Err(e)) => plan
            .prompts
            .iter()
            .map(|_| SessionRun {
                session_id: String::new(),
                outcome: TurnOutcome::Failed(e.to_string()),
            })
            .collect(),
        Err(_) if phase_reached < Phase::Prompt => {
            return Err(setup_error(
                phase_reached,
                format!("no answer within {overall:?}"),
                &exit,
                &stderr,
            ));
        }
        Err(_) => timed_out(),
    };

    // times relative to the session/prompt send
    let raw = rec.lock().map(|r| r.clone()).unwrap_or_default();
    let prompt_at = raw
        .iter()
        .find(|(d, _, t)| *d == Direction::Out && t.contains("\"session/prompt\""))
        .map(|(_, at, _)| *at)
        .unwrap_or(epoch);
    let rel = |at: Instant| -> f64 {
        if at >= prompt_at {
            at.duration_since(prompt_at).as_secs_f64() * 1000.0
        } else {
            -(prompt_at.duration_since(at).as_secs_f64() * 1000.0)
        }
    };
    let lines = raw
        .into_iter()
        .map(|(d, at, t)| RawLine::new(d, (rel(at) * 10.0).round() / 10.0, t))
        .collect();
    Ok(Attempt::Done(ClientRun {
        lines,
        sessions,
        pid,
        exited_on_its_own,
        exit,
        stderr,
        permission_requests: permissions.load(Ordering::SeqCst),
        prompt_at,
        protocol: if version == ProtocolVersion::V1 { 1 } else { 2 },
        negotiation: None,
    }))
}

fn describe_exit(status: Option<std::process::ExitStatus>, own: bool) -> String {
    use std::os::unix::process::ExitStatusExt;
    let how = match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exit code {c}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => "ended".to_string(),
        },
        None => "did not end".to_string(),
    };
    if own {
        format!("{how} (exited on its own)")
    } else {
        format!("{how} (stopped by acp-patch)")
    }
}

fn setup_error(phase: Phase, msg: String, exit: &str, stderr: &[String]) -> SmokeError {
    let tail = stderr_tail_text(stderr, 20);
    match phase {
        Phase::Initialize => SmokeError::Initialize {
            message: msg,
            exit: exit.to_string(),
            stderr_tail: tail,
        },
        _ => SmokeError::SessionNew {
            message: msg,
            exit: exit.to_string(),
            stderr_tail: tail,
        },
    }
}

/// The last `n` stderr lines, joined.
pub fn stderr_tail_text(stderr: &[String], n: usize) -> String {
    let start = stderr.len().saturating_sub(n);
    stderr[start..].join("\n")
}
