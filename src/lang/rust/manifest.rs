//! The agent's `Cargo.toml`: which `agent-client-protocol` it uses (from `Cargo.lock` when
//! there is one), and the dependencies the inserted code needs (tokio's `time` feature,
//! `serde_json`): a marked table appended to the file, so the agent's own lines stay as they
//! are and revert can take it out again.

use crate::error::{Error, Result};
use crate::project::Project;
use crate::source::SourceFile;
use std::path::Path;
use toml_edit::{DocumentMut, Item, Value};

pub const SDK: &str = "agent-client-protocol";

/// The agent's manifest and what it says about the SDK.
pub struct Manifest {
    pub file: SourceFile,
    /// The name the crate is imported as (`agent_client_protocol`, or a rename).
    pub sdk_ident: String,
    /// `(major, minor)` of the SDK version in use.
    pub sdk_version: (u64, u64),
    pub sdk_version_text: String,
}

impl Manifest {
    /// `None` when the folder has no `Cargo.toml` that depends on the SDK.
    /// (Read through the project, so revert's in-memory re-plan sees its reverted text.)
    pub fn load(project: &Project) -> Result<Option<Manifest>> {
        let root = project.root.as_path();
        let path = root.join("Cargo.toml");
        let Some(file) = project.read_source(&path)? else {
            return Ok(None);
        };
        let doc: DocumentMut =
            file.text
                .parse()
                .map_err(|e: toml_edit::TomlError| Error::Config {
                    path: path.clone(),
                    message: e.to_string(),
                })?;
        let Some((key, req)) = sdk_dependency(&doc) else {
            return Ok(None);
        };
        let locked = locked_version(root);
        let text = locked.unwrap_or(req);
        let Some(version) = parse_version(&text) else {
            return Err(Error::Config {
                path,
                message: format!("cannot read the version of {SDK} (`{text}`)"),
            });
        };
        Ok(Some(Manifest {
            file,
            sdk_ident: key.replace('-', "_"),
            sdk_version: version,
            sdk_version_text: text.trim_start_matches(['=', '^', '~', ' ']).to_string(),
        }))
    }

    /// The dependency lines the inserted code needs beyond the agent's `[dependencies]`
    /// (tokio's `time` feature, serde_json); empty when it has them.
    fn needed_lines(&self) -> Vec<String> {
        let Ok(doc) = self.file.text.parse::<DocumentMut>() else {
            return Vec::new();
        };
        let Some(deps) = doc.get("dependencies").and_then(Item::as_table_like) else {
            return Vec::new();
        };
        let mut lines = Vec::new();
        let has_timer = |item: &Item| {
            item.as_table_like()
                .and_then(|t| t.get("features"))
                .and_then(Item::as_array)
                .is_some_and(|a| {
                    a.iter()
                        .any(|v| matches!(v.as_str(), Some("time" | "full")))
                })
        };
        match deps.get("tokio") {
            None => lines.push(r#"tokio = { version = "1", features = ["rt", "time"] }"#.into()),
            Some(item) if !has_timer(item) => {
                lines.push(r#"tokio = { version = "1", features = ["time"] }"#.into())
            }
            Some(_) => {}
        }
        if deps.get("serde_json").is_none() {
            lines.push(r#"serde_json = "1""#.into());
        }
        lines
    }

    /// The needed dependencies as one insertion `(offset, text)`: a table of their own
    /// appended to the manifest, `[target.'cfg(all())'.dependencies]` (true on every target;
    /// cargo unifies its features with the agent's own tokio), under a comment that names it.
    /// The agent's lines stay as they are, and revert finds the table again by its comment
    /// (a feature added to the agent's own list could not be told from one it had).
    pub fn insertion(&self) -> Result<Option<(usize, String)>> {
        let lines = self.needed_lines();
        if lines.is_empty() {
            return Ok(None);
        }
        let text = &self.file.text;
        let taken = text.parse::<DocumentMut>().ok().is_some_and(|doc| {
            doc.get("target")
                .and_then(Item::as_table_like)
                .is_some_and(|t| t.contains_key("cfg(all())"))
        });
        if taken && self.block_line().is_none() {
            return Err(Error::Unsupported {
                file: self.file.rel.clone(),
                line: 1,
                message: format!(
                    "already has a `{BLOCK_TABLE}` table; add {} to it by hand",
                    lines.join(" and ")
                ),
            });
        }
        let eol = self.file.style.eol;
        let mut block = format!(
            "{eol}{BLOCK_MARKER}; acp-patch revert removes this table{eol}{BLOCK_TABLE}{eol}"
        );
        for l in &lines {
            block.push_str(l);
            block.push_str(eol);
        }
        if !text.is_empty() && !text.ends_with('\n') {
            // keep "no final newline": the new lines go before the end, not after it
            block = format!("{eol}{}", block.trim_end_matches(['\r', '\n']));
        }
        Ok(Some((text.len(), block)))
    }

    /// The line of the dependency table apply appended, if it is there.
    pub fn block_line(&self) -> Option<usize> {
        self.file
            .text
            .lines()
            .position(|l| l.starts_with(BLOCK_MARKER))
            .map(|i| i + 1)
    }
}

/// The comment that opens the dependency table apply appends (and names it for revert).
const BLOCK_MARKER: &str = "# acp-patch: dependencies of the inserted progress code";
const BLOCK_TABLE: &str = "[target.'cfg(all())'.dependencies]";

/// `(dependency key, version requirement)` of the SDK in `[dependencies]`.
fn sdk_dependency(doc: &DocumentMut) -> Option<(String, String)> {
    let deps = doc.get("dependencies")?.as_table_like()?;
    for (key, item) in deps.iter() {
        let (package, version) = match item {
            Item::Value(Value::String(s)) => (key.to_string(), s.value().clone()),
            other => {
                let t = other.as_table_like()?;
                let package = t
                    .get("package")
                    .and_then(|p| p.as_str())
                    .unwrap_or(key)
                    .to_string();
                let version = t
                    .get("version")
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string();
                (package, version)
            }
        };
        if package == SDK {
            return Some((key.to_string(), version));
        }
    }
    None
}

/// The SDK version pinned in `Cargo.lock`, if there is exactly one.
fn locked_version(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("Cargo.lock")).ok()?;
    let doc: DocumentMut = text.parse().ok()?;
    let versions: Vec<String> = doc
        .get("package")?
        .as_array_of_tables()?
        .iter()
        .filter(|p| p.get("name").and_then(|n| n.as_str()) == Some(SDK))
        .filter_map(|p| p.get("version").and_then(|v| v.as_str()).map(String::from))
        .collect();
    (versions.len() == 1).then(|| versions[0].clone())
}

fn parse_version(req: &str) -> Option<(u64, u64)> {
    let v = req
        .trim()
        .trim_start_matches(['=', '^', '~', '>', '<', ' ']);
    let mut parts = v.split(['.', ',', ' ']);
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next().and_then(|m| m.parse().ok()).unwrap_or(0);
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(text: &str) -> Manifest {
        Manifest {
            file: SourceFile::from_text("Cargo.toml".into(), "Cargo.toml".into(), text.into()),
            sdk_ident: "agent_client_protocol".into(),
            sdk_version: (5, 2),
            sdk_version_text: "5.2.0".into(),
        }
    }

    #[test]
    fn adds_a_marked_dependency_table_and_finds_it_again() {
        let m = manifest(
            "[dependencies]\nserde_json = \"1\"\ntokio = { version = \"1\", features = [\"rt\"] } # keep\n",
        );
        let (at, text) = m.insertion().unwrap().unwrap();
        assert_eq!(at, m.file.text.len());
        assert_eq!(
            text,
            "\n# acp-patch: dependencies of the inserted progress code; acp-patch revert removes this table\n[target.'cfg(all())'.dependencies]\ntokio = { version = \"1\", features = [\"time\"] }\n"
        );
        let patched = manifest(&format!("{}{text}", m.file.text));
        assert_eq!(patched.block_line(), Some(5));
        assert_eq!(patched.insertion().unwrap().unwrap().1, text);
        let m = manifest(
            "[dependencies]\nserde_json = \"1\"\ntokio = { version = \"1\", features = [\"full\"] }\n",
        );
        assert!(m.insertion().unwrap().is_none());
        assert_eq!(parse_version("=0.10.4"), Some((0, 10)));
        assert_eq!(parse_version("5"), Some((5, 0)));
    }
}
