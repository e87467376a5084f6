//! The command line of `acp-patch smoke` (here, beside its printing, since its `--format`
//! is every command's `Format`; `crate::smoke` runs what it asks for).

use std::path::PathBuf;

use crate::output::{Format, Formats};
use crate::smoke::config::{self, Network, Overrides};
use crate::smoke::{SmokeError, SmokeOptions};

/// Arguments of `acp-patch smoke`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SmokeArgs {
    /// The agent's folder (holds acp-patch.toml; the agent runs there, and it is left as it is).
    #[arg(default_value = ".")]
    pub path: PathBuf,
    /// Start from a preset for a known agent: hermes, mistral-vibe, claude-agent-acp, pi-acp
    /// [default: detected from the folder when nothing else says how to start the agent].
    #[arg(long, value_name = "NAME")]
    pub preset: Option<String>,
    /// Command that starts the agent (shell words; placeholders {python}, {agent_dir}, {smoke_dir}, {workspace}, {home}, {llm_base_url}, {llm_root_url}, {llm_port}). Overrides [smoke] agent_cmd.
    #[arg(long, value_name = "CMD")]
    pub agent_cmd: Option<String>,
    /// Extra environment for the agent, repeatable; overrides [smoke.env]. Placeholders allowed.
    #[arg(long = "env", value_name = "KEY=VALUE")]
    pub env: Vec<String>,
    /// Open N sessions and prompt them all at once [default: 1].
    #[arg(long, value_name = "N")]
    pub sessions: Option<u32>,
    /// Send session/cancel this long after the prompt; the turn must end `cancelled`.
    #[arg(long, value_name = "MS")]
    pub cancel_after: Option<f64>,
    /// Make the model's first answer a tool call that reads a file in the workspace.
    #[arg(long, conflicts_with = "no_tool_call")]
    pub tool_call: bool,
    /// No tool call, even where the preset or [smoke.script] has one.
    #[arg(long)]
    pub no_tool_call: bool,
    /// Heartbeat interval given to the agent as <PREFIX>_HEARTBEAT_S [default: 1].
    #[arg(long, value_name = "SECONDS")]
    pub heartbeat_s: Option<f64>,
    /// Silence after a tool call before a new card, given as <PREFIX>_THINK_GAP_MS [default: 500;
    /// 0 turns gap cards off, and the gap_card check with them].
    #[arg(long, value_name = "MS")]
    pub gap_ms: Option<f64>,
    /// Prefix of the agent's env vars [default: ACP, or env_prefix in acp-patch.toml].
    #[arg(long, value_name = "PREFIX")]
    pub env_prefix: Option<String>,
    /// Limit for the prompt turn [default: 60].
    #[arg(long, value_name = "SECONDS")]
    pub timeout_s: Option<f64>,
    /// The think card must arrive this soon after the prompt [default: 250].
    #[arg(long, value_name = "MS")]
    pub think_card_max_ms: Option<f64>,
    /// Scripted LLM wait before its first delta [default: 2.5, or [smoke.script] delay_s].
    #[arg(long, value_name = "SECONDS")]
    pub delay_s: Option<f64>,
    /// The prompt text.
    #[arg(long)]
    pub prompt: Option<String>,
    /// The interpreter for {python} [default: $ACP_PATCH_PYTHON, else python3].
    #[arg(long, value_name = "PATH")]
    pub python: Option<String>,
    /// Where the agent's network goes: a namespace with only loopback (when the system
    /// allows one) or the host's [default: loopback].
    #[arg(long, value_enum)]
    pub network: Option<Network>,
    /// Keep the temporary folder (the agent's home, config, workspace) and print where it is.
    #[arg(long)]
    pub keep: bool,
    /// Fail on the findings about the agent too (its own tool calls' lifecycle), not only on
    /// the checks of the patch.
    #[arg(long)]
    pub strict: bool,
    /// Read this file instead of PATH/acp-patch.toml.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// What to print on stdout.
    #[arg(long, value_parser = Formats::SMOKE, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write the JSON document (`--format json`: every raw line with its time, check
    /// and figure) into FILE; `-` prints it on stdout instead (as `--format json`).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also write the HTML page (`--format html`: a timeline per session, the checks) into
    /// FILE; `-` prints it on stdout instead (as `--format html`).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// The file name that means stdout (`--json -`, `--html -`).
const STDOUT: &str = "-";

impl SmokeArgs {
    /// What stdout gets: `--format`, or the document a `--json -` / `--html -` sends there.
    /// Two documents for stdout is a usage error (its message).
    pub fn stdout_format(&self) -> Result<Format, &'static str> {
        let dashed = [(&self.json, Format::Json), (&self.html, Format::Html)]
            .into_iter()
            .filter(|(path, _)| path.as_deref().is_some_and(|p| p.as_os_str() == STDOUT))
            .map(|(_, format)| format)
            .collect::<Vec<_>>();
        match dashed[..] {
            [] => Ok(self.format),
            [one] if self.format == Format::Text || self.format == one => Ok(one),
            [_] => Err("--json - / --html - print on stdout, as --format does: give one of them"),
            _ => Err("--json - and --html - would both print on stdout: give one a file"),
        }
    }

    /// The files `--json FILE` / `--html FILE` write (not `-`), with their format.
    pub fn files(&self) -> impl Iterator<Item = (&std::path::Path, Format)> {
        [(&self.json, Format::Json), (&self.html, Format::Html)]
            .into_iter()
            .filter_map(|(path, format)| Some((path.as_deref()?, format)))
            .filter(|(path, _)| path.as_os_str() != STDOUT)
    }

    /// The run these flags ask for.
    pub fn options(&self) -> Result<SmokeOptions, SmokeError> {
        let a = self;
        let env = a
            .env
            .iter()
            .map(|s| config::parse_env_pair(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SmokeOptions {
            path: a.path.clone(),
            overrides: Overrides {
                agent_cmd: a.agent_cmd.clone(),
                env,
                heartbeat_s: a.heartbeat_s,
                gap_ms: a.gap_ms,
                env_prefix: a.env_prefix.clone(),
                timeout_s: a.timeout_s,
                think_card_max_ms: a.think_card_max_ms,
                delay_s: a.delay_s,
                prompt: a.prompt.clone(),
                python: a.python.clone(),
                config_file: a.config.clone(),
                preset: a.preset.clone(),
                sessions: a.sessions,
                cancel_after_ms: a.cancel_after,
                network: a.network,
                tool_call: match (a.tool_call, a.no_tool_call) {
                    (true, _) => Some(true),
                    (_, true) => Some(false),
                    _ => None,
                },
                keep: a.keep,
                strict: a.strict,
            },
        })
    }
}
