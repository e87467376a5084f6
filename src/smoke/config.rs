//! Configuration of a smoke run: `acp-patch.toml` in the agent folder, overridden by the CLI.
//!
//! ```toml
//! env_prefix = "ACP"                 # top level, shared with the codemod
//! [smoke]
//! agent_cmd = "{python} agent.py"
//! env_prefix = "ACP"                 # wins over the top-level one
//! heartbeat_s = 1.0
//! timeout_s = 60
//! prompt = "Say hi"
//! [smoke.env]
//! OPENAI_BASE_URL = "{llm_base_url}"
//! [smoke.files]
//! ".env" = "OPENAI_BASE_URL={llm_base_url}\n"
//! [smoke.script]
//! delay_s = 2.5
//! ```
//!
//! Placeholders `{llm_base_url}`, `{llm_port}`, `{agent_dir}` and `{python}` work in the
//! command, env values and file contents (and file paths).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::SmokeError;
use super::llm::Script;

/// Name of the config file in the agent folder.
pub const CONFIG_FILE: &str = "acp-patch.toml";
/// Default heartbeat interval given to the agent.
pub const DEFAULT_HEARTBEAT_S: f64 = 1.0;
/// Default limit for the whole turn.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
/// Default env prefix.
pub const DEFAULT_ENV_PREFIX: &str = "ACP";
/// Default prompt text.
pub const DEFAULT_PROMPT: &str = "Say hello in one short sentence.";

/// `acp-patch.toml`, as far as the smoke run reads it (other sections are ignored).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct FileConfig {
    #[serde(default)]
    pub env_prefix: Option<String>,
    #[serde(default)]
    pub smoke: SmokeSection,
}

/// `[smoke]`
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmokeSection {
    pub agent_cmd: Option<String>,
    pub env_prefix: Option<String>,
    pub heartbeat_s: Option<f64>,
    pub timeout_s: Option<f64>,
    pub prompt: Option<String>,
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
            Ok(text) => Self::parse(&text)
                .map_err(|e| SmokeError::Config(format!("{}: {e}", path.display()))),
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(SmokeError::Config(format!("{}: {e}", path.display()))),
        }
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }
}

/// What the caller overrides (the CLI flags), all optional.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub agent_cmd: Option<String>,
    /// `KEY=VALUE` pairs, applied over `[smoke.env]`.
    pub env: Vec<(String, String)>,
    pub heartbeat_s: Option<f64>,
    pub env_prefix: Option<String>,
    pub timeout_s: Option<f64>,
    /// Overrides `[smoke.script] delay_s`.
    pub delay_s: Option<f64>,
    pub prompt: Option<String>,
    /// Overrides `{python}` (else env `ACP_PATCH_PYTHON`, else `python3`).
    pub python: Option<String>,
    /// Read this file instead of `<agent folder>/acp-patch.toml`.
    pub config_file: Option<PathBuf>,
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

/// The merged configuration (placeholders not yet filled: the port is not known yet).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub agent_dir: PathBuf,
    pub agent_cmd: String,
    pub env: Vec<(String, String)>,
    pub files: Vec<(String, String)>,
    pub heartbeat_s: f64,
    pub env_prefix: String,
    pub timeout_s: f64,
    pub prompt: String,
    pub python: String,
    pub script: Script,
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
        let s = file.smoke;
        let agent_cmd = o.agent_cmd.clone().or(s.agent_cmd).ok_or_else(|| {
            SmokeError::Config(format!(
                "no agent command: pass --agent-cmd or set [smoke] agent_cmd in {}",
                agent_dir.join(CONFIG_FILE).display()
            ))
        })?;
        let mut env: Vec<(String, String)> = s.env.into_iter().collect();
        for (k, v) in &o.env {
            env.retain(|(ek, _)| ek != k);
            env.push((k.clone(), v.clone()));
        }
        let heartbeat_s = o
            .heartbeat_s
            .or(s.heartbeat_s)
            .unwrap_or(DEFAULT_HEARTBEAT_S);
        if !(heartbeat_s.is_finite() && heartbeat_s > 0.0) {
            return Err(SmokeError::Config(format!(
                "heartbeat_s must be > 0, got {heartbeat_s}"
            )));
        }
        let timeout_s = o.timeout_s.or(s.timeout_s).unwrap_or(DEFAULT_TIMEOUT_S);
        if !(timeout_s.is_finite() && timeout_s > 0.0) {
            return Err(SmokeError::Config(format!(
                "timeout_s must be > 0, got {timeout_s}"
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
            env_prefix,
            timeout_s,
            prompt: o
                .prompt
                .clone()
                .or(s.prompt)
                .unwrap_or_else(|| DEFAULT_PROMPT.to_string()),
            python,
            script,
        })
    }

    /// The env var that carries the heartbeat interval.
    pub fn heartbeat_var(&self) -> String {
        format!("{}_HEARTBEAT_S", self.env_prefix)
    }
}

/// Fills `{llm_base_url}`, `{llm_port}`, `{agent_dir}` and `{python}`; other braces stay.
#[derive(Debug, Clone)]
pub struct Placeholders {
    pub llm_base_url: String,
    pub llm_port: u16,
    pub agent_dir: String,
    pub python: String,
}

impl Placeholders {
    pub fn fill(&self, s: &str) -> String {
        s.replace("{llm_base_url}", &self.llm_base_url)
            .replace("{llm_port}", &self.llm_port.to_string())
            .replace("{agent_dir}", &self.agent_dir)
            .replace("{python}", &self.python)
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

/// Writes `[smoke.files]` (paths relative to the agent folder, or absolute).
pub fn write_files(r: &Resolved, ph: &Placeholders) -> Result<Vec<PathBuf>, SmokeError> {
    let mut written = Vec::new();
    for (path, contents) in &r.files {
        let p = PathBuf::from(ph.fill(path));
        let p = if p.is_absolute() {
            p
        } else {
            r.agent_dir.join(p)
        };
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
mod tests {
    use super::*;

    fn ph() -> Placeholders {
        Placeholders {
            llm_base_url: "http://127.0.0.1:9/v1".into(),
            llm_port: 9,
            agent_dir: "/a b".into(),
            python: "/venv/bin/python".into(),
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
            ..Overrides::default()
        };
        let r = Resolved::merge(PathBuf::from("/x"), file, &o).unwrap();
        assert_eq!(r.env_prefix, "TOP");
        assert_eq!(r.heartbeat_var(), "TOP_HEARTBEAT_S");
        assert_eq!(r.heartbeat_s, 0.5);
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
        let argv = agent_argv(&r.agent_cmd, &ph()).unwrap();
        assert_eq!(argv, vec!["/venv/bin/python", "agent.py", "--dir", "/a b"]);
        assert_eq!(
            ph().fill(&r.files[0].1),
            "URL=http://127.0.0.1:9/v1\n{not_a_placeholder}"
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
        assert!(
            Resolved::merge(
                PathBuf::from("/x"),
                FileConfig::default(),
                &Overrides::default()
            )
            .is_err()
        );
        assert!(FileConfig::parse("[smoke]\nagnet_cmd = \"typo\"").is_err());
        assert!(parse_env_pair("NOPE").is_err());
        assert_eq!(parse_env_pair("K=a=b").unwrap(), ("K".into(), "a=b".into()));
        assert!(agent_argv("python 'unclosed", &ph()).is_err());
        assert_eq!(
            agent_argv("./run.sh -x", &ph()).unwrap(),
            vec!["/a b/./run.sh", "-x"]
        );
        assert_eq!(seconds_str(1.0), "1");
        assert_eq!(seconds_str(0.5), "0.5");
    }
}
