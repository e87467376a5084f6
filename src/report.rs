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
    /// Runtime modules edited by hand since acp-patch wrote them (`file:line` of the first
    /// edited line): apply and revert refuse the tree until each is restored or removed.
    #[serde(skip)]
    pub edited_runtime: Vec<String>,
    /// Revert refuses the tree as it is (a duplicated piece, one edited or moved by hand):
    /// apply cannot mend it either.
    #[serde(skip)]
    pub refused: bool,
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
            s.push_str(&format!("{bad} of {} checks fail; ", self.checks.len()));
            s.push_str(&self.advice());
            s.push('\n');
        }
        s
    }

    /// What to do about the failing checks: apply mends only what is missing.
    fn advice(&self) -> String {
        if !self.edited_runtime.is_empty() {
            let (one, it) = if self.edited_runtime.len() == 1 {
                ("the runtime module was", "it")
            } else {
                ("runtime modules were", "each")
            };
            format!(
                "{one} edited by hand ({}), so `acp-patch apply` and `acp-patch revert` refuse the tree: restore {it} (undo the edit) or remove {it}, then `acp-patch apply` writes this version's module and inserts what is missing",
                self.edited_runtime.join(", ")
            )
        } else if self.refused {
            "`acp-patch revert` refuses the tree as it is and `acp-patch apply` cannot mend it: fix the rows named above by hand (or restore the files from git), then re-run".into()
        } else {
            "`acp-patch apply` inserts what is missing".into()
        }
    }

    pub fn to_json(&self) -> String {
        let mut v = serde_json::to_value(self).expect("report serializes");
        v["ok"] = serde_json::Value::Bool(self.ok());
        serde_json::to_string_pretty(&v).expect("json") + "\n"
    }
}
