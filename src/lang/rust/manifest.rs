//! The agent's `Cargo.toml`: which `agent-client-protocol` it uses (from `Cargo.lock` when
//! there is one), and the dependency edit the inserted code needs (tokio's `rt` and
//! `time` features), made with `toml_edit` so the rest of the file stays as it is.

use crate::error::{Error, Result};
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
    pub fn load(root: &Path) -> Result<Option<Manifest>> {
        let path = root.join("Cargo.toml");
        if !path.is_file() {
            return Ok(None);
        }
        let Some(file) = SourceFile::read(root, &path)? else {
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

    /// tokio's features as the manifest lists them (`None`: no tokio dependency).
    fn tokio_features(&self) -> Option<Vec<String>> {
        let doc: DocumentMut = self.file.text.parse().ok()?;
        let tokio = doc.get("dependencies")?.as_table_like()?.get("tokio")?;
        Some(match tokio {
            Item::Value(Value::String(_)) => Vec::new(),
            other => other
                .as_table_like()
                .and_then(|t| t.get("features"))
                .and_then(|f| f.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }

    /// Whether `[dependencies]` names a crate (under its own name, not renamed).
    pub fn depends_on(&self, name: &str) -> bool {
        let Ok(doc) = self.file.text.parse::<DocumentMut>() else {
            return false;
        };
        doc.get("dependencies")
            .and_then(|d| d.as_table_like())
            .and_then(|d| d.get(name))
            .is_some_and(|item| {
                item.as_table_like()
                    .and_then(|t| t.get("package"))
                    .is_none()
            })
    }

    /// Whether tokio is there with a feature (or `full`).
    pub fn tokio_has(&self, feature: &str) -> bool {
        self.tokio_features()
            .is_some_and(|f| f.iter().any(|x| x == feature || x == "full"))
    }

    /// The manifest text with tokio's `rt` and `time` features (the runtime's timers);
    /// `None` when it has them.
    pub fn with_needed_deps(&self) -> Option<String> {
        let mut doc: DocumentMut = self.file.text.parse().ok()?;
        let has = |f: &[String], x: &str| f.iter().any(|v| v == x || v == "full");
        let mut missing: Vec<&str> = Vec::new();
        match self.tokio_features() {
            None => missing.extend(["rt", "time"]),
            Some(f) => {
                if !has(&f, "rt") && !has(&f, "rt-multi-thread") {
                    missing.push("rt");
                }
                if !has(&f, "time") {
                    missing.push("time");
                }
            }
        }
        if missing.is_empty() {
            return None;
        }
        let deps = doc.get_mut("dependencies")?.as_table_like_mut()?;
        match deps.get_mut("tokio") {
            None => {
                let mut t = toml_edit::InlineTable::new();
                t.insert("version", "1".into());
                t.insert("features", Value::Array(missing.iter().copied().collect()));
                deps.insert("tokio", Item::Value(Value::InlineTable(t)));
            }
            Some(Item::Value(v @ Value::String(_))) => {
                let version = v.as_str().unwrap_or("1").to_string();
                let mut t = toml_edit::InlineTable::new();
                t.insert("version", version.as_str().into());
                t.insert("features", Value::Array(missing.iter().copied().collect()));
                *v = Value::InlineTable(t);
            }
            Some(item) => {
                let t = item.as_table_like_mut()?;
                match t.get_mut("features").and_then(|f| f.as_array_mut()) {
                    Some(arr) => {
                        for m in &missing {
                            arr.push(*m);
                        }
                    }
                    None => {
                        t.insert(
                            "features",
                            Item::Value(Value::Array(missing.iter().copied().collect())),
                        );
                    }
                }
            }
        }
        Some(doc.to_string())
    }

    /// The needed dependency edits as one insertion `(offset, text)`, or an error when
    /// `toml_edit` would change more than it adds.
    pub fn insertion(&self) -> Result<Option<(usize, String)>> {
        let Some(new) = self.with_needed_deps() else {
            return Ok(None);
        };
        let old = &self.file.text;
        let prefix = old
            .bytes()
            .zip(new.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let max_suffix = old.len().min(new.len()) - prefix;
        let suffix = old
            .bytes()
            .rev()
            .zip(new.bytes().rev())
            .take(max_suffix)
            .take_while(|(a, b)| a == b)
            .count();
        if prefix + suffix != old.len() {
            return Err(Error::Unsupported {
                file: self.file.rel.clone(),
                line: self.file.line_of(prefix),
                message: "cannot add tokio's `rt` and `time` features without rewriting other lines; add them by hand".into(),
            });
        }
        let mut at = prefix;
        while !old.is_char_boundary(at) {
            at -= 1;
        }
        let text = new[at..new.len() - (old.len() - at)].to_string();
        let text = if self.file.style.eol == "\r\n" {
            text.replace("\r\n", "\n").replace('\n', "\r\n")
        } else {
            text
        };
        Ok(Some((at, text)))
    }
}

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
    fn adds_time_feature_as_one_insertion() {
        let m =
            manifest("[dependencies]\ntokio = { version = \"1\", features = [\"rt\"] } # keep\n");
        let (at, text) = m.insertion().unwrap().unwrap();
        assert_eq!(text, ", \"time\"");
        assert_eq!(&m.file.text[at - 4..at], "\"rt\"");
        let m = manifest("[dependencies]\ntokio = { version = \"1\", features = [\"full\"] }\n");
        assert!(m.insertion().unwrap().is_none());
        assert_eq!(parse_version("=0.10.4"), Some((0, 10)));
        assert_eq!(parse_version("5"), Some((5, 0)));
    }
}
