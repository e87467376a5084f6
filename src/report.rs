//! The verify report: one line per piece, text or JSON, with the exit code it implies.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Missing,
    Duplicated,
    Malformed,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Missing => "missing",
            Status::Duplicated => "duplicated",
            Status::Malformed => "malformed",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Stable id, e.g. `hook.start`.
    pub id: String,
    pub status: Status,
    /// Where the piece is (or its parts are), `file:line`.
    pub locations: Vec<String>,
    /// What is wrong and what apply would do; empty when ok.
    pub detail: String,
    /// Where apply would insert the first missing part, `file:line`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert_at: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub root: String,
    pub language: String,
    /// `callback` (engine object with callbacks, e.g. Hermes) or `emitter` (SDK agent).
    pub shape: String,
    pub checks: Vec<Check>,
    /// What is worth a word beside the checks (which strategy patched the agent, and why);
    /// the command prints them as notes.
    #[serde(skip)]
    pub notes: Vec<String>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.checks.iter().all(|c| c.status == Status::Ok)
    }

    pub fn exit_code(&self) -> u8 {
        if self.ok() { 0 } else { 1 }
    }

    pub fn to_text(&self) -> String {
        let mut s = format!(
            "{} ({} agent, {} shape)\n",
            self.root, self.language, self.shape
        );
        let width = self.checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
        for c in &self.checks {
            let pad = " ".repeat(13 + width);
            s.push_str(&format!("  {:<10} {:<width$}", c.status.word(), c.id));
            let mut lines = c.locations.iter().map(String::as_str).collect::<Vec<_>>();
            let detail = c
                .detail
                .split("; ")
                .filter(|d| !d.is_empty())
                .map(|d| format!("- {d}"))
                .collect::<Vec<_>>();
            lines.extend(detail.iter().map(String::as_str));
            for (i, l) in lines.iter().enumerate() {
                if i > 0 {
                    s.push_str(&pad);
                }
                s.push_str(&format!("  {l}\n"));
            }
            if lines.is_empty() {
                s.push('\n');
            }
        }
        let bad = self
            .checks
            .iter()
            .filter(|c| c.status != Status::Ok)
            .count();
        if bad == 0 {
            s.push_str(&format!("all {} checks hold\n", self.checks.len()));
        } else {
            s.push_str(&format!(
                "{bad} of {} checks fail; `acp-patch apply` inserts what is missing\n",
                self.checks.len()
            ));
        }
        s
    }

    pub fn to_json(&self) -> String {
        let mut v = serde_json::to_value(self).expect("report serializes");
        v["ok"] = serde_json::Value::Bool(self.ok());
        serde_json::to_string_pretty(&v).expect("json") + "\n"
    }
}
