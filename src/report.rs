//! The verify report: one row per piece, with the exit code it implies (the printers in
//! `output/` render it).

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
}
