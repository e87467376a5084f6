//! `acp-patch.toml`: pins for sites that cannot be found unambiguously, the environment
//! prefix, and a template override folder. Other tables (e.g. `[smoke]`) belong to their
//! subcommands and are ignored here.

use crate::error::{Error, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

pub const FILE_NAME: &str = "acp-patch.toml";

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Config {
    /// Prefix of the environment variables the inserted code reads (`ACP` by default).
    pub env_prefix: Option<String>,
    #[serde(default)]
    pub templates: TemplatesConfig,
    #[serde(default)]
    pub python: PythonPins,
    #[serde(default)]
    pub rust: RustPins,
    #[serde(default)]
    pub typescript: TypeScriptPins,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TemplatesConfig {
    /// A folder laid out like `templates/` whose files replace the embedded ones.
    pub dir: Option<PathBuf>,
}

/// Which strategy patches the agent: the protocol strategy (every agent) or the engine-level
/// refinement (Hermes- and pi-acp-shaped agents). Unpinned, the refinement is used where it
/// fits and the protocol strategy everywhere else.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StrategyPin {
    Protocol,
    Engine,
}

/// Each pin is `path/to/file.py` or `path/to/file.py:Qualified.name`, relative to the agent root.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PythonPins {
    /// `"protocol"` or `"engine"`; the engine-level pins (`llm_call`, `handoff`, `helpers`,
    /// `factories`, `callback_store`) imply `"engine"`.
    pub strategy: Option<StrategyPin>,
    /// The ACP prompt handler, e.g. `acp_adapter/server.py:HermesACPAgent.prompt`.
    pub prompt: Option<String>,
    /// The function holding the LLM call, e.g. `agent/conversation_loop.py:run_conversation._perform_api_call`.
    pub llm_call: Option<String>,
    /// Where the session updates leave: only the SDK sends inside this function are wrapped,
    /// e.g. `streamy/agent.py:StreamyAgent._emit`.
    pub emitter: Option<String>,
    /// Where the card's connection comes from: an attribute of the agent holding it
    /// (`agent.py:MyAgent._conn`) or the method the SDK hands it to (`agent.py:MyAgent.on_connect`).
    pub connection: Option<String>,
    /// The executor call of the prompt handler that hands the turn to the engine
    /// (callback-shaped agents), by its place among them: `server.py:Agent.prompt.run_in_executor#2`.
    pub handoff: Option<String>,
    /// The module with the tool-call builders (thinking helpers go beside them).
    pub helpers: Option<String>,
    /// The module with the callback factories (the progress factory goes beside them).
    pub factories: Option<String>,
    /// The function that stores the agent's callbacks, e.g. `agent/agent_init.py:init_agent`.
    pub callback_store: Option<String>,
}

/// `[typescript]` pins, each `path/to/file.ts:Class.method` relative to the agent root.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TypeScriptPins {
    /// `"protocol"` or `"engine"`; the engine-level pins (`emitter`, `handoff`, `turn_end`)
    /// imply `"engine"`.
    pub strategy: Option<StrategyPin>,
    /// A prompt handler no SDK binding was found for, e.g. `src/agent.ts:MyAgent.prompt`.
    pub prompt: Option<String>,
    /// The field holding the connection the start card goes out on, e.g.
    /// `src/agent.ts:MyAgent.client` (or, for an agent with its own JSON-RPC writer, the
    /// function whose writer call to use).
    pub connection: Option<String>,
    /// Engine-shaped agents only (pins choose that strategy): the method every session update
    /// leaves through, e.g. `src/acp/session.ts:PiAcpSession.emit`.
    pub emitter: Option<String>,
    /// The method holding the hand-off to the model, e.g. `src/acp/session.ts:PiAcpSession.startTurn`.
    pub handoff: Option<String>,
    /// Where a turn ends when the hand-off returns at once, e.g. `src/acp/session.ts:PiAcpSession.settleTurn`.
    pub turn_end: Option<String>,
}

/// `[rust]` pins, each `path/to/file.rs:Name` relative to the agent root, `Name` as the
/// candidate lists of acp-patch's errors spell it.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RustPins {
    /// The one prompt handler to patch, e.g. `src/agent.rs:StreamAgent::prompt` (a method),
    /// `src/main.rs:serve::closure#1` (the first closure `serve` registers for `PromptRequest`).
    pub prompt: Option<String>,
    /// Where the trait API's card goes out, e.g. `src/agent.rs:StreamAgent::conn` (a field of
    /// the agent) or `src/lib.rs:ACP_CLIENT` (a static).
    pub connection: Option<String>,
    /// No longer used: every SDK send of a session update is wrapped (an error says so).
    pub emitter: Option<String>,
    /// No longer used: the card opens at the prompt handler's entry (an error says so).
    pub handoff: Option<String>,
}

/// Whether a `[<language>]` section sets no pin (a pin may name a file no prefilter word is in,
/// so a pinned language keeps every file's text).
macro_rules! no_pin_set {
    ($($pins:ty),*) => {$(
        impl $pins {
            pub fn is_empty(&self) -> bool {
                *self == Self::default()
            }
        }
    )*};
}
no_pin_set!(PythonPins, TypeScriptPins, RustPins);

/// A parsed pin: a file and, optionally, a qualified name in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub file: String,
    pub name: Option<String>,
}

impl Pin {
    pub fn parse(s: &str) -> Pin {
        match s.rsplit_once(':') {
            Some((file, name)) if !name.is_empty() && !name.contains('/') => Pin {
                file: file.trim_start_matches("./").to_string(),
                name: Some(name.to_string()),
            },
            _ => Pin {
                file: s.trim_start_matches("./").to_string(),
                name: None,
            },
        }
    }

    /// A Rust pin, `path/to/file.rs:Name` (the name may hold `::`).
    pub fn parse_rust(s: &str) -> Pin {
        match s.split_once(".rs:") {
            Some((file, name)) => Pin {
                file: format!("{}.rs", file.trim_start_matches("./")),
                name: Some(name.to_string()),
            },
            None => Pin {
                file: s.trim_start_matches("./").to_string(),
                name: None,
            },
        }
    }

    /// Whether the pin names a candidate: its file, and its name when the pin has one.
    pub fn takes(&self, c: &crate::error::Candidate) -> bool {
        c.location.file == self.file && self.name.as_ref().is_none_or(|n| *n == c.name)
    }

    /// The `:Name` a pin ends with (empty for a whole file).
    pub fn name_suffix(&self) -> String {
        self.name
            .as_ref()
            .map(|n| format!(":{n}"))
            .unwrap_or_default()
    }

    pub fn matches(&self, rel: &str, qualified: Option<&str>) -> bool {
        rel == self.file
            && match (&self.name, qualified) {
                (Some(n), Some(q)) => n == q,
                (Some(_), None) => false,
                (None, _) => true,
            }
    }
}

impl PythonPins {
    /// The strategy the config chooses, explicitly or through an engine-level pin.
    pub fn chosen_strategy(&self) -> Option<StrategyPin> {
        let engine_pin = self.llm_call.is_some()
            || self.handoff.is_some()
            || self.helpers.is_some()
            || self.factories.is_some()
            || self.callback_store.is_some();
        self.strategy
            .or_else(|| engine_pin.then_some(StrategyPin::Engine))
    }
}

impl TypeScriptPins {
    /// The strategy the config chooses, explicitly or through an engine-level pin.
    pub fn chosen_strategy(&self) -> Option<StrategyPin> {
        let engine_pin =
            self.emitter.is_some() || self.handoff.is_some() || self.turn_end.is_some();
        self.strategy
            .or_else(|| engine_pin.then_some(StrategyPin::Engine))
    }
}

impl Config {
    /// Reads `path` if given, else `<root>/acp-patch.toml` if it exists.
    pub fn load(root: &Path, path: Option<&Path>) -> Result<Config> {
        let path = match path {
            Some(p) => p.to_path_buf(),
            None => {
                let p = root.join(FILE_NAME);
                if std::fs::symlink_metadata(&p).is_err() {
                    return Ok(Config::default());
                }
                p
            }
        };
        if path.is_dir() {
            return Err(Error::Config {
                path,
                message: "is a folder, not a file; remove it or make it the config file".into(),
            });
        }
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        let mut cfg: Config = toml::from_str(&text).map_err(|e| Error::Config {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if let Some(dir) = &cfg.templates.dir
            && dir.is_relative()
        {
            cfg.templates.dir = Some(path.parent().unwrap_or(root).join(dir));
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse() {
        assert_eq!(
            Pin::parse("a/b.py:C.m"),
            Pin {
                file: "a/b.py".into(),
                name: Some("C.m".into())
            }
        );
        assert_eq!(Pin::parse("./a/b.py").name, None);
        let cfg: Config = toml::from_str(
            "env_prefix = \"PI\"\n[python]\nprompt = \"x.py:A.prompt\"\n[smoke]\nagent_cmd = \"x\"\n",
        )
        .unwrap();
        assert_eq!(cfg.env_prefix.as_deref(), Some("PI"));
        assert!(toml::from_str::<Config>("[python]\npromt = \"x\"\n").is_err());
        let cfg: Config = toml::from_str("[python]\nstrategy = \"protocol\"\n").unwrap();
        assert_eq!(cfg.python.strategy, Some(StrategyPin::Protocol));
        // a section with any pin set is not empty (that language keeps every file's text)
        assert!(!cfg.python.is_empty() && cfg.typescript.is_empty() && cfg.rust.is_empty());
        let cfg: Config = toml::from_str("[rust]\nconnection = \"src/a.rs:A::conn\"\n").unwrap();
        assert!(cfg.python.is_empty() && !cfg.rust.is_empty());
        let bad = toml::from_str::<Config>("[typescript]\nstrategy = \"engin\"\n").unwrap_err();
        assert!(
            bad.to_string().contains("expected `protocol` or `engine`"),
            "{bad}"
        );
    }
}
