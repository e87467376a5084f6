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
    /// Not (all) run here: the start-up check of a module the interpreter at hand cannot
    /// import, unpatched too (a dependency it lacks). Neither holds nor fails: the exit code
    /// is the other rows'.
    Unchecked,
}

impl Status {
    pub fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Missing => "missing",
            Status::Duplicated => "duplicated",
            Status::Malformed => "malformed",
            Status::Unchecked => "unchecked",
        }
    }

    /// A row that fails verify (not ok, and not merely unchecked).
    pub fn fails(self) -> bool {
        !matches!(self, Status::Ok | Status::Unchecked)
    }
}

/// How the patch meets the agent: on the protocol's anchors (with the SDK's API generation
/// where the language tells them apart, e.g. `trait API ≤ 0.10`), or on an engine's callbacks
/// (the engine-level refinement, `strategy = "engine"` in `acp-patch.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Protocol(Option<&'static str>),
    Engine,
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Protocol(None) => f.write_str("protocol"),
            Shape::Protocol(Some(api)) => write!(f, "protocol ({api})"),
            Shape::Engine => f.write_str("engine"),
        }
    }
}

impl Serialize for Shape {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Stable id, e.g. `hook.start`.
    pub id: String,
    pub status: Status,
    /// Where the piece is (or its parts are).
    pub locations: Vec<Location>,
    /// What is wrong and what apply would do, one item per problem; empty when ok. Serialized
    /// as one string, the items joined by `; ` (the JSON document's `detail`).
    #[serde(rename = "detail", serialize_with = "joined")]
    pub details: Vec<String>,
    /// Where apply would insert the first missing part (a line, no label).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub insert_at: Option<Location>,
}

impl Check {
    /// The details as one line (`a; b`), as the JSON document, annotations and apply's
    /// refusal say them.
    pub fn detail(&self) -> String {
        self.details.join("; ")
    }
}

fn joined<S: serde::Serializer>(details: &[String], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&details.join("; "))
}

/// A place a check row points at. Printed (and serialized) as `file:line (label)`; the
/// GitHub printer takes its file and line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A line of a file (relative to the agent's folder), with what is there.
    At {
        file: String,
        line: usize,
        label: Option<String>,
    },
    /// The files or modules a row covers as a whole (`parses`, `starts`), printed joined
    /// with `, `.
    Many(Vec<String>),
}

impl Location {
    /// A line of a file, with no label.
    pub fn at(file: impl Into<String>, line: usize) -> Location {
        Location::At {
            file: file.into(),
            line,
            label: None,
        }
    }

    /// A line of a file, with what is there.
    pub fn labelled(file: impl Into<String>, line: usize, label: impl Into<String>) -> Location {
        Location::At {
            file: file.into(),
            line,
            label: Some(label.into()),
        }
    }

    /// The file and line, when it is one place.
    pub fn line(&self) -> Option<(&str, usize)> {
        match self {
            Location::At { file, line, .. } => Some((file, *line)),
            Location::Many(_) => None,
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::At { file, line, label } => {
                write!(f, "{file}:{line}")?;
                match label {
                    Some(l) => write!(f, " ({l})"),
                    None => Ok(()),
                }
            }
            Location::Many(items) => f.write_str(&items.join(", ")),
        }
    }
}

impl Serialize for Location {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub root: String,
    pub language: String,
    pub shape: Shape,
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
        self.checks.iter().all(|c| !c.status.fails())
    }

    pub fn exit_code(&self) -> u8 {
        if self.ok() { 0 } else { 1 }
    }

    /// What to do about the failing checks: apply mends only what is missing.
    pub fn advice(&self) -> String {
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
}
