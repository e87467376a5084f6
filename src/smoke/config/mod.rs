//! Configuration of a smoke run: a preset (named or detected), `acp-patch.toml` in the agent
//! folder over it, the CLI over both.
//!
//! ```toml
//! env_prefix = "ACP"                 # top level, shared with the codemod
//! [smoke]
//! preset = "hermes"                  # start from a preset (see `acp-patch smoke --preset help`)
//! agent_cmd = "{python} agent.py"
//! env_prefix = "ACP"                 # wins over the top-level one
//! heartbeat_s = 1.0                  # given to the agent as <PREFIX>_HEARTBEAT_S
//! gap_ms = 500                       # given to the agent as <PREFIX>_THINK_GAP_MS
//! timeout_s = 60
//! think_card_max_ms = 250
//! prompt = "Say hi"
//! sessions = 1                       # sessions prompted at once
//! cancel_after_ms = 400              # send session/cancel this long after the prompt
//! network = "loopback"               # or "host"
//! isolate_home = true                # HOME and XDG dirs inside {smoke_dir}
//! [smoke.env]
//! OPENAI_BASE_URL = "{llm_base_url}"
//! [smoke.files]                      # written below {smoke_dir}, never into the agent's folder
//! "home/.config/agent.toml" = "base_url = \"{llm_base_url}\"\n"
//! [smoke.script]
//! delay_s = 2.5
//! tool_call = { name = "read_file", arguments = '{"path":"{workspace}/notes.txt"}' }
//! ```
//!
//! Placeholders work in the command, env values, file paths and contents, and the tool
//! call's arguments: `{llm_base_url}` (`http://127.0.0.1:PORT/v1`), `{llm_root_url}` (without
//! `/v1`), `{llm_port}`, `{agent_dir}` (read-only), `{smoke_dir}` (the run's temporary
//! folder), `{workspace}` (the session's cwd, inside it), `{home}` and `{python}`.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SmokeError;
use super::llm::{Script, ScriptToolCall};
use super::presets::{self, Preset};

/// Name of the config file in the agent folder.
pub const CONFIG_FILE: &str = "acp-patch.toml";
/// Default heartbeat interval given to the agent.
pub const DEFAULT_HEARTBEAT_S: f64 = 1.0;
/// Default silence after a tool call before a new card (the runtime's own default).
pub const DEFAULT_GAP_MS: f64 = 500.0;
/// Default limit for the whole turn.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
/// Default limit for the card after the prompt.
pub const DEFAULT_THINK_CARD_MAX_MS: f64 = 250.0;
/// Default env prefix.
pub const DEFAULT_ENV_PREFIX: &str = "ACP";
/// Default prompt text.
pub const DEFAULT_PROMPT: &str = "Say hello in one short sentence.";
/// The most sessions a run opens.
pub const MAX_SESSIONS: u32 = 16;

/// Where the agent's network goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// A network namespace with only loopback (when the system allows one; else the host's).
    Loopback,
    /// The host's network.
    Host,
}

/// `acp-patch.toml`, as far as the smoke run reads it (other sections are ignored).
#[derive(Debug, Clone, Default)]
pub struct FileConfig {
    pub env_prefix: Option<String>,
    /// The `[smoke]` table as written (merged over a preset before it is read).
    pub smoke: toml::Table,
    /// Where it came from, for messages.
    pub origin: String,
}

/// `[smoke]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmokeSection {
    pub preset: Option<String>,
    pub agent_cmd: Option<String>,
    pub env_prefix: Option<String>,
    pub heartbeat_s: Option<f64>,
    pub gap_ms: Option<f64>,
    pub timeout_s: Option<f64>,
    pub think_card_max_ms: Option<f64>,
    pub prompt: Option<String>,
    pub sessions: Option<u32>,
    pub cancel_after_ms: Option<f64>,
    pub network: Option<Network>,
    pub isolate_home: Option<bool>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub script: Option<Script>,
}

impl FileConfig {
    /// Reads `acp-patch.toml` from `dir` (an absent file is an empty config).
    pub fn load(dir: &Path) -> Result<Self, SmokeError> {
        Self::load_file(&dir.join(CONFIG_FILE), false)
    }

    /// Reads a config file; when `required`, a missing file is an error.
    pub fn load_file(path: &Path, required: bool) -> Result<Self, SmokeError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::parse_from(&text, &path.display().to_string())
                .map_err(|e| SmokeError::Config(format!("{}: {e}", path.display()))),
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Ok(Self {
                origin: path.display().to_string(),
                ..Self::default()
            }),
            Err(e) => Err(SmokeError::Config(format!("{}: {e}", path.display()))),
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        Self::parse_from(text, CONFIG_FILE)
    }

    fn parse_from(text: &str, origin: &str) -> Result<Self, String> {
        let mut doc: toml::Table = toml::from_str(text).map_err(|e| e.to_string())?;
        let env_prefix = match doc.remove("env_prefix") {
            Some(toml::Value::String(s)) => Some(s),
            Some(_) => return Err("env_prefix must be a string".into()),
            None => None,
        };
        let smoke = match doc.remove("smoke") {
            Some(toml::Value::Table(t)) => t,
            Some(_) => return Err("[smoke] must be a table".into()),
            None => toml::Table::new(),
        };
        // unknown keys are reported against this file, before any preset is merged in
        section_of(&smoke).map_err(|e| format!("[smoke]: {e}"))?;
        Ok(Self {
            env_prefix,
            smoke,
            origin: origin.to_string(),
        })
    }
}

fn section_of(t: &toml::Table) -> Result<SmokeSection, String> {
    toml::Value::Table(t.clone())
        .try_into()
        .map_err(|e: toml::de::Error| e.message().to_string())
}

/// Merges `over` into `base`: tables key by key, everything else replaced.
pub fn merge_tables(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_tables(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// What the caller overrides (the CLI flags), all optional.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub agent_cmd: Option<String>,
    /// `KEY=VALUE` pairs, applied over `[smoke.env]`.
    pub env: Vec<(String, String)>,
    pub heartbeat_s: Option<f64>,
    pub gap_ms: Option<f64>,
    pub env_prefix: Option<String>,
    pub timeout_s: Option<f64>,
    pub think_card_max_ms: Option<f64>,
    /// Overrides `[smoke.script] delay_s`.
    pub delay_s: Option<f64>,
    pub prompt: Option<String>,
    /// Overrides `{python}` (else env `ACP_PATCH_PYTHON`, else `python3`).
    pub python: Option<String>,
    /// Read this file instead of `<agent folder>/acp-patch.toml`.
    pub config_file: Option<PathBuf>,
    pub preset: Option<String>,
    pub sessions: Option<u32>,
    pub cancel_after_ms: Option<f64>,
    pub network: Option<Network>,
    /// `Some(true)`: add the scripted tool call; `Some(false)`: drop it.
    pub tool_call: Option<bool>,
    /// Keep `{smoke_dir}` afterwards.
    pub keep: bool,
    /// The findings about the agent fail the run too.
    pub strict: bool,
}

/// Splits `KEY=VALUE`.
pub fn parse_env_pair(s: &str) -> Result<(String, String), SmokeError> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(SmokeError::Config(format!(
            "--env expects KEY=VALUE, got {s:?}"
        ))),
    }
}

/// Which preset a run uses, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PresetUse {
    pub name: String,
    /// `--preset`, `[smoke] preset`, or what the detection found.
    pub why: String,
}

/// The merged configuration (placeholders not yet filled: the port is not known yet).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub agent_dir: PathBuf,
    pub agent_cmd: String,
    pub env: Vec<(String, String)>,
    pub files: Vec<(String, String)>,
    pub heartbeat_s: f64,
    pub gap_ms: f64,
    pub env_prefix: String,
    pub timeout_s: f64,
    pub think_card_max_ms: f64,
    pub prompt: String,
    pub python: String,
    pub script: Script,
    pub sessions: u32,
    pub cancel_after_ms: Option<f64>,
    pub network: Network,
    pub isolate_home: bool,
    pub keep: bool,
    /// The findings about the agent decide the verdict too.
    pub strict: bool,
    pub preset: Option<PresetUse>,
}

fn positive(name: &str, v: f64) -> Result<f64, SmokeError> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(SmokeError::Config(format!("{name} must be > 0, got {v}")))
    }
}

impl Resolved {
    /// Merges the file in `agent_dir` with the overrides.
    pub fn new(agent_dir: &Path, o: &Overrides) -> Result<Self, SmokeError> {
        let agent_dir = std::fs::canonicalize(agent_dir).map_err(|e| {
            SmokeError::Config(format!("agent folder {}: {e}", agent_dir.display()))
        })?;
        if !agent_dir.is_dir() {
            return Err(SmokeError::Config(format!(
                "{} is not a folder",
                agent_dir.display()
            )));
        }
        let file = match &o.config_file {
            Some(p) => FileConfig::load_file(p, true)?,
            None => FileConfig::load(&agent_dir)?,
        };
        Self::merge(agent_dir, file, o)
    }

    pub fn merge(agent_dir: PathBuf, file: FileConfig, o: &Overrides) -> Result<Self, SmokeError> {
        let file_section = section_of(&file.smoke)
            .map_err(|e| SmokeError::Config(format!("{} [smoke]: {e}", file.origin)))?;
        // the preset: named on the command line or in the file, else detected when nothing
        // says how to start the agent
        let preset: Option<(&'static Preset, PresetUse)> =
            match o.preset.as_deref().or(file_section.preset.as_deref()) {
                Some(name) => {
                    let p = presets::by_name(name).ok_or_else(|| {
                        SmokeError::Config(format!(
                            "no preset {name:?}; presets: {}",
                            presets::names().join(", ")
                        ))
                    })?;
                    let why = if o.preset.is_some() {
                        "--preset".to_string()
                    } else {
                        format!("[smoke] preset in {}", file.origin)
                    };
                    Some((
                        p,
                        PresetUse {
                            name: p.name.to_string(),
                            why,
                        },
                    ))
                }
                None if o.agent_cmd.is_none() && file_section.agent_cmd.is_none() => {
                    presets::detect(&agent_dir).map(|(p, why)| {
                        (
                            p,
                            PresetUse {
                                name: p.name.to_string(),
                                why,
                            },
                        )
                    })
                }
                None => None,
            };
        let s = match &preset {
            Some((p, _)) => {
                let mut t = p.smoke.clone();
                merge_tables(&mut t, &file.smoke);
                section_of(&t).map_err(|e| {
                    SmokeError::Config(format!("preset {} with {}: {e}", p.name, file.origin))
                })?
            }
            None => file_section,
        };
        let agent_cmd = o.agent_cmd.clone().or(s.agent_cmd).ok_or_else(|| {
            SmokeError::Config(format!(
                "no agent command: pass --agent-cmd or --preset ({}), or set [smoke] agent_cmd in {}",
                presets::names().join(", "),
                agent_dir.join(CONFIG_FILE).display()
            ))
        })?;
        let mut env: Vec<(String, String)> = s.env.into_iter().collect();
        for (k, v) in &o.env {
            env.retain(|(ek, _)| ek != k);
            env.push((k.clone(), v.clone()));
        }
        let heartbeat_s = positive(
            "heartbeat_s",
            o.heartbeat_s
                .or(s.heartbeat_s)
                .unwrap_or(DEFAULT_HEARTBEAT_S),
        )?;
        let gap_ms = o.gap_ms.or(s.gap_ms).unwrap_or(DEFAULT_GAP_MS);
        if !(gap_ms.is_finite() && gap_ms >= 0.0) {
            return Err(SmokeError::Config(format!(
                "gap_ms must be >= 0, got {gap_ms}"
            )));
        }
        let timeout_s = positive(
            "timeout_s",
            o.timeout_s.or(s.timeout_s).unwrap_or(DEFAULT_TIMEOUT_S),
        )?;
        let think_card_max_ms = positive(
            "think_card_max_ms",
            o.think_card_max_ms
                .or(s.think_card_max_ms)
                .unwrap_or(DEFAULT_THINK_CARD_MAX_MS),
        )?;
        let sessions = o.sessions.or(s.sessions).unwrap_or(1);
        if !(1..=MAX_SESSIONS).contains(&sessions) {
            return Err(SmokeError::Config(format!(
                "sessions must be 1 to {MAX_SESSIONS}, got {sessions}"
            )));
        }
        let cancel_after_ms = o.cancel_after_ms.or(s.cancel_after_ms);
        if let Some(c) = cancel_after_ms
            && !(c.is_finite() && c >= 0.0)
        {
            return Err(SmokeError::Config(format!(
                "cancel_after_ms must be >= 0, got {c}"
            )));
        }
        let env_prefix = o
            .env_prefix
            .clone()
            .or(s.env_prefix)
            .or(file.env_prefix)
            .unwrap_or_else(|| DEFAULT_ENV_PREFIX.to_string());
        let mut script = s.script.unwrap_or_default();
        if let Some(d) = o.delay_s {
            script.delay_s = d;
        }
        match o.tool_call {
            Some(true) if script.tool_call.is_none() => {
                script.tool_call = Some(ScriptToolCall::default());
            }
            Some(false) => script.tool_call = None,
            _ => {}
        }
        let python = o
            .python
            .clone()
            .or_else(|| {
                std::env::var("ACP_PATCH_PYTHON")
                    .ok()
                    .filter(|p| !p.is_empty())
            })
            .unwrap_or_else(|| "python3".to_string());
        // a relative interpreter path (`target/py/venv/bin/python`) means from where we run
        let python = if python.contains('/') && Path::new(&python).is_relative() {
            std::env::current_dir()
                .map(|d| d.join(&python).display().to_string())
                .unwrap_or(python)
        } else {
            python
        };
        Ok(Self {
            agent_dir,
            agent_cmd,
            env,
            files: s.files.into_iter().collect(),
            heartbeat_s,
            gap_ms,
            env_prefix,
            timeout_s,
            think_card_max_ms,
            prompt: o
                .prompt
                .clone()
                .or(s.prompt)
                .unwrap_or_else(|| DEFAULT_PROMPT.to_string()),
            python,
            script,
            sessions,
            cancel_after_ms,
            network: o.network.or(s.network).unwrap_or(Network::Loopback),
            isolate_home: s.isolate_home.unwrap_or(true),
            keep: o.keep,
            strict: o.strict,
            preset: preset.map(|(_, u)| u),
        })
    }

    /// The env var that carries the heartbeat interval.
    pub fn heartbeat_var(&self) -> String {
        format!("{}_HEARTBEAT_S", self.env_prefix)
    }

    /// The env var that carries the gap before a new card after a tool call.
    pub fn gap_var(&self) -> String {
        format!("{}_THINK_GAP_MS", self.env_prefix)
    }
}

/// Fills the placeholders; other braces stay.
#[derive(Debug, Clone, Default)]
pub struct Placeholders {
    pub llm_base_url: String,
    pub llm_root_url: String,
    pub llm_port: u16,
    pub agent_dir: String,
    pub python: String,
    pub smoke_dir: String,
    pub workspace: String,
    pub home: String,
}

impl Placeholders {
    pub fn fill(&self, s: &str) -> String {
        s.replace("{llm_base_url}", &self.llm_base_url)
            .replace("{llm_root_url}", &self.llm_root_url)
            .replace("{llm_port}", &self.llm_port.to_string())
            .replace("{agent_dir}", &self.agent_dir)
            .replace("{python}", &self.python)
            .replace("{smoke_dir}", &self.smoke_dir)
            .replace("{workspace}", &self.workspace)
            .replace("{home}", &self.home)
    }
}

/// The agent command as argv: split shell-words style, then each word filled.
pub fn agent_argv(cmd: &str, ph: &Placeholders) -> Result<Vec<String>, SmokeError> {
    let words = shell_words::split(cmd)
        .map_err(|e| SmokeError::Config(format!("agent_cmd {cmd:?}: {e}")))?;
    if words.is_empty() {
        return Err(SmokeError::Config("agent_cmd is empty".into()));
    }
    let mut argv: Vec<String> = words.iter().map(|w| ph.fill(w)).collect();
    // a relative program path (`./run.sh`) is relative to the agent folder
    if argv[0].contains('/') && Path::new(&argv[0]).is_relative() {
        argv[0] = Path::new(&ph.agent_dir)
            .join(&argv[0])
            .display()
            .to_string();
    }
    Ok(argv)
}

/// Where a `[smoke.files]` entry goes: below `smoke_dir` (relative paths are relative to it),
/// never outside it (the agent's folder stays as it is).
pub fn file_target(path: &str, smoke_dir: &Path, agent_dir: &Path) -> Result<PathBuf, SmokeError> {
    let p = PathBuf::from(path);
    let p = if p.is_absolute() {
        p
    } else {
        smoke_dir.join(p)
    };
    // lexical: no `..` may climb out
    let mut clean = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                if !clean.pop() {
                    break;
                }
            }
            Component::CurDir => {}
            other => clean.push(other),
        }
    }
    if !clean.starts_with(smoke_dir) || clean == smoke_dir {
        let hint = if clean.starts_with(agent_dir) {
            "the agent's folder is read-only during a smoke run"
        } else {
            "files go into the run's temporary folder"
        };
        return Err(SmokeError::Config(format!(
            "[smoke.files] {path:?} is outside {{smoke_dir}}: {hint}; use a path relative to {{smoke_dir}} (e.g. \"home/.config/x\") and point the agent there with [smoke.env]"
        )));
    }
    Ok(clean)
}

/// Writes `[smoke.files]` below `smoke_dir`.
pub fn write_files(
    r: &Resolved,
    ph: &Placeholders,
    smoke_dir: &Path,
) -> Result<Vec<PathBuf>, SmokeError> {
    let mut written = Vec::new();
    for (path, contents) in &r.files {
        let p = file_target(&ph.fill(path), smoke_dir, &r.agent_dir)?;
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| SmokeError::Config(format!("{}: {e}", parent.display())))?;
        }
        std::fs::write(&p, ph.fill(contents))
            .map_err(|e| SmokeError::Config(format!("{}: {e}", p.display())))?;
        written.push(p);
    }
    Ok(written)
}

/// Formats seconds for an env var: `1`, `0.5`.
pub fn seconds_str(s: f64) -> String {
    format!("{s}")
}

#[cfg(test)]
mod tests;
