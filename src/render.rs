//! Templates (embedded, overridable) and rendering in a file's own style.

use crate::error::{Result, io_err};
use std::path::PathBuf;

macro_rules! embedded {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../templates/", $name)))),*]
    };
}

/// Every template shipped in the binary, by path under `templates/`.
const EMBEDDED: &[(&str, &str)] = embedded![
    "python/acp_progress.py",
    "python/hooks_thread.py",
    "python/helpers.py",
    "python/send.py",
    "python/factory.py",
    "python/turn_thread.py",
    "python/text_hold_thread.py",
    "python/sites.py",
    "rust/header_sdk.rs",
    "rust/header_raw.rs",
    "rust/acp_progress.rs",
    "rust/runtime_local.rs",
    "rust/runtime_send.rs",
    "rust/runtime_send_sdk.rs",
    "rust/runtime_raw.rs",
    "rust/timers_tokio.rs",
    "rust/timers_thread.rs",
    "rust/schema_json.rs",
    "rust/wire_serde.rs",
    "rust/schema_v1.rs",
    "rust/schema_v2.rs",
    "rust/channels_tokio.rs",
    "rust/channels_futures.rs",
    "typescript/helpers.ts",
    "typescript/factory_v1.ts",
    "typescript/factory_v2.ts",
    "typescript/factory_callback.ts",
    "typescript/hooks.ts",
    "typescript/text_hold.ts",
    "typescript/sites.ts",
    "typescript/acp-progress.ts",
];

/// Where templates come from: a folder that overrides some (same layout as `templates/`),
/// then the embedded copies.
#[derive(Debug, Clone, Default)]
pub struct Templates {
    pub override_dir: Option<PathBuf>,
}

impl Templates {
    pub fn get(&self, name: &str) -> Result<String> {
        if let Some(dir) = &self.override_dir {
            let path = dir.join(name);
            if path.is_file() {
                return std::fs::read_to_string(&path).map_err(io_err(path));
            }
        }
        let (_, text) = EMBEDDED
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| panic!("template {name} is not embedded"));
        Ok(text.to_string())
    }

    pub fn names() -> impl Iterator<Item = &'static str> {
        EMBEDDED.iter().map(|(n, _)| *n)
    }
}

/// Replaces `{{KEY}}` placeholders.
pub fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{{{k}}}}}"), v);
    }
    out
}

/// Re-indents code written with 4-space levels and LF: each level becomes `unit`, every
/// line gets `base` in front and ends with `eol`; blank lines stay empty.
pub fn reindent(code: &str, base: &str, unit: &str, eol: &str) -> String {
    let mut out = String::with_capacity(code.len() + 64);
    for line in code.trim_end_matches('\n').split('\n') {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            out.push_str(eol);
            continue;
        }
        let spaces = line.len() - line.trim_start_matches(' ').len();
        out.push_str(base);
        for _ in 0..spaces / 4 {
            out.push_str(unit);
        }
        out.push_str(&line[spaces / 4 * 4..]);
        out.push_str(eol);
    }
    out
}

/// Splits a sites template into its sections: a line `<marker>NAME` (e.g. `# site: `) starts
/// section NAME, whose body is every line up to the next marker line.
pub fn sections(raw: &str, marker: &str) -> std::collections::HashMap<String, String> {
    let mut sites = std::collections::HashMap::new();
    let mut current: Option<(String, String)> = None;
    for l in raw.lines() {
        if let Some(name) = l.strip_prefix(marker) {
            if let Some((n, body)) = current.take() {
                sites.insert(n, body);
            }
            current = Some((name.trim().to_string(), String::new()));
        } else if let Some((_, body)) = current.as_mut() {
            body.push_str(l);
            body.push('\n');
        }
    }
    if let Some((n, body)) = current {
        sites.insert(n, body);
    }
    sites
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reindents_to_tabs_and_crlf() {
        let code = "if x:\n    y()\n\n        z()\n";
        assert_eq!(
            reindent(code, "\t", "\t", "\r\n"),
            "\tif x:\r\n\t\ty()\r\n\r\n\t\t\tz()\r\n"
        );
        assert_eq!(fill("A_{{PREFIX}}_B", &[("PREFIX", "ACP")]), "A_ACP_B");
    }
}
