//! Presets: how to run the agents we know under `acp-patch smoke`, as data. Each is a TOML
//! file in this folder (embedded in the binary) with a `[smoke]` table laid out like
//! `acp-patch.toml`'s, and a `[detect]` table saying how to recognise the agent's folder:
//!
//! ```toml
//! name = "hermes"
//! description = "..."
//! [detect]
//! packages = ["hermes-agent"]                  # package.json / pyproject.toml / *.dist-info name
//! files = ["acp_adapter/__main__.py", "run_agent.py"]   # or: all of these exist
//! [smoke]
//! agent_cmd = "..."
//! ```
//!
//! A preset sits under `acp-patch.toml` and the command line: both override it key by key.

use std::path::Path;
use std::sync::OnceLock;

use serde::Deserialize;

/// The embedded preset files.
const SOURCES: &[(&str, &str)] = &[
    ("hermes.toml", include_str!("hermes.toml")),
    ("mistral-vibe.toml", include_str!("mistral-vibe.toml")),
    (
        "claude-agent-acp.toml",
        include_str!("claude-agent-acp.toml"),
    ),
    ("pi-acp.toml", include_str!("pi-acp.toml")),
];

/// One preset.
#[derive(Debug, Clone)]
pub struct Preset {
    pub name: &'static str,
    pub description: String,
    pub detect: Detect,
    /// The `[smoke]` table.
    pub smoke: toml::Table,
}

/// How a preset recognises its agent's folder.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Detect {
    /// Package names: `package.json` `name`, `pyproject.toml` `[project] name`, or the
    /// `Name:` of a `*.dist-info/METADATA`.
    #[serde(default)]
    pub packages: Vec<String>,
    /// Paths that all exist in the folder (for trees without a manifest, e.g. an unpacked wheel).
    #[serde(default)]
    pub files: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PresetFile {
    name: String,
    description: String,
    #[serde(default)]
    detect: Detect,
    smoke: toml::Table,
}

fn all() -> &'static [Preset] {
    static ALL: OnceLock<Vec<Preset>> = OnceLock::new();
    ALL.get_or_init(|| {
        SOURCES
            .iter()
            .map(|(file, text)| {
                let p: PresetFile =
                    toml::from_str(text).unwrap_or_else(|e| panic!("embedded preset {file}: {e}"));
                Preset {
                    name: Box::leak(p.name.into_boxed_str()),
                    description: p.description,
                    detect: p.detect,
                    smoke: p.smoke,
                }
            })
            .collect()
    })
}

/// Every preset name.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|p| p.name).collect()
}

/// Every preset.
pub fn list() -> &'static [Preset] {
    all()
}

pub fn by_name(name: &str) -> Option<&'static Preset> {
    all().iter().find(|p| p.name == name)
}

/// The names the folder's manifests give its package, with where each was found.
pub fn package_names(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Ok(text) = std::fs::read_to_string(dir.join("package.json"))
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && let Some(n) = v.get("name").and_then(|n| n.as_str())
    {
        out.push((n.to_string(), "package.json".to_string()));
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("pyproject.toml"))
        && let Ok(t) = toml::from_str::<toml::Table>(&text)
        && let Some(n) = t
            .get("project")
            .and_then(|p| p.get("name"))
            .and_then(|n| n.as_str())
    {
        out.push((n.to_string(), "pyproject.toml".to_string()));
    }
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut infos: Vec<_> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.extension().is_some_and(|x| x == "dist-info") && p.join("METADATA").is_file()
            })
            .collect();
        infos.sort();
        for info in infos {
            if let Ok(meta) = std::fs::read_to_string(info.join("METADATA"))
                && let Some(n) = meta.lines().find_map(|l| l.strip_prefix("Name: "))
            {
                let file = info.file_name().unwrap_or_default().to_string_lossy();
                out.push((n.trim().to_string(), format!("{file}/METADATA")));
            }
        }
    }
    out
}

/// Python package names compare case-insensitively with `-`, `_` and `.` alike.
fn same_package(a: &str, b: &str) -> bool {
    let norm = |s: &str| s.to_ascii_lowercase().replace(['_', '.'], "-");
    norm(a) == norm(b)
}

/// The preset whose agent the folder holds, and why it was chosen.
pub fn detect(dir: &Path) -> Option<(&'static Preset, String)> {
    let names = package_names(dir);
    for p in all() {
        for (n, from) in &names {
            if p.detect.packages.iter().any(|want| same_package(want, n)) {
                return Some((p, format!("detected: {from} names {n}")));
            }
        }
    }
    all().iter().find_map(|p| {
        (!p.detect.files.is_empty() && p.detect.files.iter().all(|f| dir.join(f).exists())).then(
            || {
                (
                    p,
                    format!("detected: the folder has {}", p.detect.files.join(", ")),
                )
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smoke::config::SmokeSection;

    #[test]
    fn every_preset_parses_and_reads_as_a_smoke_section() {
        assert_eq!(
            names(),
            vec!["hermes", "mistral-vibe", "claude-agent-acp", "pi-acp"]
        );
        for p in list() {
            let s: SmokeSection = toml::Value::Table(p.smoke.clone())
                .try_into()
                .unwrap_or_else(|e| panic!("preset {}: {e}", p.name));
            assert!(s.agent_cmd.is_some(), "{}", p.name);
            assert!(!p.description.is_empty());
            assert!(
                !p.detect.packages.is_empty() || !p.detect.files.is_empty(),
                "{}",
                p.name
            );
            // nothing is written outside {smoke_dir}
            for path in s.files.keys() {
                assert!(!path.starts_with('/') && !path.contains(".."), "{path}");
            }
        }
    }

    #[test]
    fn detection_by_manifest_and_by_files() {
        let d = tempfile::tempdir().unwrap();
        assert!(detect(d.path()).is_none());
        std::fs::write(
            d.path().join("package.json"),
            r#"{"name":"@zed-industries/claude-agent-acp","version":"0.23.1"}"#,
        )
        .unwrap();
        let (p, why) = detect(d.path()).unwrap();
        assert_eq!(p.name, "claude-agent-acp");
        assert_eq!(
            why,
            "detected: package.json names @zed-industries/claude-agent-acp"
        );
        std::fs::write(
            d.path().join("package.json"),
            r#"{"name":"@agentclientprotocol/claude-agent-acp","version":"0.101.0"}"#,
        )
        .unwrap();
        assert_eq!(detect(d.path()).unwrap().0.name, "claude-agent-acp");

        let d = tempfile::tempdir().unwrap();
        let info = d.path().join("mistral_vibe-3.0.3.dist-info");
        std::fs::create_dir(&info).unwrap();
        std::fs::write(
            info.join("METADATA"),
            "Metadata-Version: 2.4\nName: mistral-vibe\n",
        )
        .unwrap();
        assert_eq!(detect(d.path()).unwrap().0.name, "mistral-vibe");

        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("pyproject.toml"),
            "[project]\nname = \"Hermes_Agent\"\n",
        )
        .unwrap();
        assert_eq!(detect(d.path()).unwrap().0.name, "hermes");

        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("acp_adapter")).unwrap();
        std::fs::write(d.path().join("acp_adapter/__main__.py"), "").unwrap();
        assert!(detect(d.path()).is_none());
        std::fs::write(d.path().join("run_agent.py"), "").unwrap();
        let (p, why) = detect(d.path()).unwrap();
        assert_eq!(p.name, "hermes");
        assert!(why.contains("acp_adapter/__main__.py"), "{why}");
    }
}
