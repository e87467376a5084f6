//! The agent's `Cargo.toml`: which ACP SDK it uses (`agent-client-protocol` or `sacp`, see
//! [`Package`]) and which version (from `Cargo.lock` when there is one), and the dependency the inserted code needs (tokio with its `rt` and `time`
//! features, for the runtime's timers): a marked table appended to the file, so the agent's
//! own lines stay as they are and revert can take it out again.

use super::sdk::Package;
use crate::error::{Error, Result};
use crate::project::Project;
use crate::source::SourceFile;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use toml_edit::{DocumentMut, Item, Value};

/// The agent's manifest and what it says about the SDK.
pub struct Manifest {
    pub file: SourceFile,
    /// The SDK crate it depends on.
    pub sdk: Package,
    /// The name the crate is imported as (`agent_client_protocol`, `sacp`, or a rename).
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
        let Some(SdkDependency {
            sdk,
            key,
            package,
            version: req,
        }) = sdk_dependency(&doc)
        else {
            return Ok(None);
        };
        let locked = locked_version_of(root, &package);
        let text = locked.unwrap_or(req);
        let Some(version) = parse_version(&text) else {
            return Err(Error::Config {
                path,
                message: format!("cannot read the version of {package} (`{text}`)"),
            });
        };
        Ok(Some(Manifest {
            file,
            sdk,
            sdk_ident: key.replace('-', "_"),
            sdk_version: version,
            sdk_version_text: text.trim_start_matches(['=', '^', '~', ' ']).to_string(),
        }))
    }

    /// A `Cargo.toml` that does not depend on the SDK (an agent with a JSON-RPC loop of its
    /// own); `None` when the folder has none.
    pub fn without_sdk(project: &Project) -> Result<Option<Manifest>> {
        let path = project.root.join("Cargo.toml");
        let Some(file) = project.read_source(&path)? else {
            return Ok(None);
        };
        file.text
            .parse::<DocumentMut>()
            .map_err(|e: toml_edit::TomlError| Error::Config {
                path: path.clone(),
                message: e.to_string(),
            })?;
        Ok(Some(Manifest {
            file,
            sdk: Package::Acp,
            sdk_ident: String::new(),
            sdk_version: (0, 0),
            sdk_version_text: String::new(),
        }))
    }

    /// The name a crate is imported as (`serde_json`, or the key of a renamed dependency).
    pub fn import_name(&self, package: &str) -> Option<String> {
        let doc: DocumentMut = self.file.text.parse().ok()?;
        let deps = doc.get("dependencies")?.as_table_like()?;
        deps.iter().find_map(|(key, item)| {
            let named = item
                .as_table_like()
                .and_then(|t| t.get("package"))
                .and_then(|p| p.as_str())
                .unwrap_or(key);
            (named == package).then(|| key.replace('-', "_"))
        })
    }

    /// Whether tokio is a dependency at all.
    pub fn has_tokio(&self) -> bool {
        self.tokio_features().is_some()
    }

    /// tokio's version in `Cargo.lock`, as (major, minor), when one is locked.
    pub fn locked_tokio(&self, root: &Path) -> Option<(u64, u64)> {
        parse_version(&locked_version_of(root, "tokio")?)
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

    /// Whether tokio is there with a feature (or `full`).
    pub fn tokio_has(&self, feature: &str) -> bool {
        self.tokio_features()
            .is_some_and(|f| f.iter().any(|x| x == feature || x == "full"))
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

    /// The dependency lines the inserted code needs beyond the agent's `[dependencies]`:
    /// tokio's `rt` (spawning) and `time` (the timers); empty when it has them.
    fn needed_lines(&self) -> Vec<String> {
        let missing: Vec<&str> = match self.tokio_features() {
            None => vec!["rt", "time"],
            Some(f) => {
                let has = |x: &str| f.iter().any(|v| v == x || v == "full");
                let mut m = Vec::new();
                if !has("rt") && !has("rt-multi-thread") {
                    m.push("rt");
                }
                if !has("time") {
                    m.push("time");
                }
                m
            }
        };
        if missing.is_empty() {
            return Vec::new();
        }
        let features: Vec<String> = missing.iter().map(|f| format!("\"{f}\"")).collect();
        vec![format!(
            "tokio = {{ version = \"1\", features = [{}] }}",
            features.join(", ")
        )]
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
        let eol = self.file.style().eol;
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

/// Whether a manifest's text depends on an SDK (in `[dependencies]`, under its name or renamed).
pub fn names_sdk(text: &str) -> Option<(Package, String)> {
    let doc: DocumentMut = text.parse().ok()?;
    sdk_dependency(&doc).map(|d| (d.sdk, d.key.replace('-', "_")))
}

/// The SDK dependency of a manifest.
struct SdkDependency {
    sdk: Package,
    /// The dependency's key: the name the crate is imported as (with `-`).
    key: String,
    /// The package on crates.io: the SDK's, or a fork's (its `Cargo.lock` entry).
    package: String,
    /// The version requirement.
    version: String,
}

/// The SDK in `[dependencies]` (the first of [`Package::ALL`] there, when it has several),
/// under its own package name (renamed or not), or a fork of it published under another
/// package and imported under the SDK's name (`agent-client-protocol = { package =
/// "agentkit-acp-sdk", version = "=3.6.0" }`): its version is the SDK's it follows, and the
/// code names it as the SDK.
fn sdk_dependency(doc: &DocumentMut) -> Option<SdkDependency> {
    let deps = doc.get("dependencies")?.as_table_like()?;
    let mut found: Vec<SdkDependency> = Vec::new();
    for (key, item) in deps.iter() {
        let (package, version) = match item {
            Item::Value(Value::String(s)) => (key.to_string(), s.value().clone()),
            other => {
                let Some(t) = other.as_table_like() else {
                    continue;
                };
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
        if let Some(sdk) = Package::of_name(&package).or_else(|| Package::of_name(key)) {
            found.push(SdkDependency {
                sdk,
                key: key.to_string(),
                package,
                version,
            });
        }
    }
    // the SDK itself before a fork imported under its name, then in the order of ALL
    found.sort_by_key(|d| {
        (
            d.package != d.sdk.name(),
            Package::ALL.iter().position(|q| *q == d.sdk),
        )
    });
    found.into_iter().next()
}

/// A package's version pinned in `Cargo.lock`, if there is exactly one.
fn locked_version_of(root: &Path, package: &str) -> Option<String> {
    let text = std::fs::read_to_string(root.join("Cargo.lock")).ok()?;
    let locked = locked_packages(text)?;
    let mut versions = locked.iter().filter(|(n, _)| n == package).map(|(_, v)| v);
    match (versions.next(), versions.next()) {
        (Some(v), None) => Some(v.clone()),
        _ => None,
    }
}

/// Every `[[package]]` of a `Cargo.lock` with a name and a version (`None`: the file does
/// not parse, or has no package table). Parsing the lock file is a large part of a small
/// agent's run and one run asks for it several times (the SDK, tokio; per tree state), so
/// the result is kept per text: the same text always gives the same packages.
fn locked_packages(text: String) -> Option<Arc<Vec<(String, String)>>> {
    type Kept = HashMap<String, Option<Arc<Vec<(String, String)>>>>;
    static KEPT: Mutex<Option<Kept>> = Mutex::new(None);
    if let Some(hit) = KEPT
        .lock()
        .expect("no poison")
        .as_ref()
        .and_then(|k| k.get(&text))
    {
        return hit.clone();
    }
    let packages = (|| {
        let doc: DocumentMut = text.parse().ok()?;
        let packages: Vec<(String, String)> = doc
            .get("package")?
            .as_array_of_tables()?
            .iter()
            .filter_map(|p| {
                let name = p.get("name").and_then(|n| n.as_str())?;
                let version = p.get("version").and_then(|v| v.as_str())?;
                Some((name.to_string(), version.to_string()))
            })
            .collect();
        Some(Arc::new(packages))
    })();
    let mut kept = KEPT.lock().expect("no poison");
    let kept = kept.get_or_insert_with(HashMap::new);
    if kept.len() >= 16 {
        kept.clear(); // a long-lived process (the tests) sees many trees: keep it small
    }
    kept.insert(text, packages.clone());
    packages
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
            sdk: Package::Acp,
            sdk_ident: "agent_client_protocol".into(),
            sdk_version: (5, 2),
            sdk_version_text: "5.2.0".into(),
        }
    }

    #[test]
    fn adds_a_marked_dependency_table_and_finds_it_again() {
        let m =
            manifest("[dependencies]\ntokio = { version = \"1\", features = [\"rt\"] } # keep\n");
        let (at, text) = m.insertion().unwrap().unwrap();
        assert_eq!(at, m.file.text.len());
        assert_eq!(
            text,
            "\n# acp-patch: dependencies of the inserted progress code; acp-patch revert removes this table\n[target.'cfg(all())'.dependencies]\ntokio = { version = \"1\", features = [\"time\"] }\n"
        );
        let patched = manifest(&format!("{}{text}", m.file.text));
        assert_eq!(patched.block_line(), Some(4));
        assert_eq!(patched.insertion().unwrap().unwrap().1, text);
        let m = manifest("[dependencies]\ntokio = { version = \"1\", features = [\"full\"] }\n");
        assert!(m.insertion().unwrap().is_none());
        assert_eq!(parse_version("=0.10.4"), Some((0, 10)));
        assert_eq!(parse_version("5"), Some((5, 0)));
    }

    #[test]
    fn finds_the_sdk_by_package_under_any_key() {
        let sdk = |text: &str| names_sdk(text).map(|(p, k)| (p.name(), k));
        assert_eq!(
            sdk("[dependencies]\nsacp = \"10.1.0\"\nagent-client-protocol-schema = \"0.10\"\n"),
            Some(("sacp", "sacp".into()))
        );
        assert_eq!(
            sdk("[dependencies.proto]\npackage = \"sacp\"\nversion = \"10\"\n"),
            Some(("sacp", "proto".into()))
        );
        assert_eq!(
            sdk("[dependencies]\nsacp = \"10\"\nagent-client-protocol = \"0.11\"\n"),
            Some(("agent-client-protocol", "agent_client_protocol".into()))
        );
        // a fork published under another package, imported under the SDK's name
        assert_eq!(
            sdk(
                "[dependencies.agent-client-protocol]\nversion = \"=3.6.0\"\npackage = \"agentkit-acp-sdk\"\n"
            ),
            Some(("agent-client-protocol", "agent_client_protocol".into()))
        );
        // other crates of the family, or crates whose names hold it, are no SDK
        assert_eq!(
            sdk("[dependencies]\nsacp-tokio = \"10\"\nsacp-cbor = \"1\"\n"),
            None
        );
        assert_eq!(sdk("[dependencies]\nfoo = { workspace = true }\n"), None);
    }
}
