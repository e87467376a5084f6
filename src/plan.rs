//! An edit plan: every change computed before anything is written. A change inserts text
//! at a byte offset, replaces a range (a runtime module brought up to date, revert taking
//! an insertion out), creates a file or deletes one.

use crate::source::SourceFile;

/// Text put at a byte offset of a file's (BOM-less) text, replacing the `replaces` bytes
/// that start there (0 for a pure insertion).
#[derive(Debug, Clone)]
pub struct Edit {
    pub offset: usize,
    pub replaces: usize,
    pub text: String,
    /// Which piece this edit belongs to, e.g. `hook start`.
    pub piece: String,
}

#[derive(Debug, Clone)]
pub struct FilePlan {
    /// `file.exists == false`: the plan creates it.
    pub file: SourceFile,
    pub edits: Vec<Edit>,
    /// The plan removes the file (revert of a module apply created).
    pub delete: bool,
}

impl FilePlan {
    /// The file's text with every edit applied. Edits at the same offset keep the order
    /// in which they were planned; ranges never overlap (the planner guarantees it).
    pub fn new_text(&self) -> String {
        if self.delete {
            return String::new();
        }
        let mut edits: Vec<&Edit> = self.edits.iter().collect();
        edits.sort_by_key(|e| e.offset);
        let mut out = String::with_capacity(self.file.text.len() + 4096);
        let mut at = 0;
        for e in edits {
            let start = e.offset.max(at);
            out.push_str(&self.file.text[at..start]);
            out.push_str(&e.text);
            at = (e.offset + e.replaces).max(start);
        }
        out.push_str(&self.file.text[at..]);
        out
    }

    /// The edits as changes of the file's text, in order: (the bytes replaced, what replaces
    /// them), edits that meet merged into one — exactly what [`FilePlan::new_text`] does.
    pub fn changes(&self) -> Vec<(std::ops::Range<usize>, String)> {
        let mut edits: Vec<&Edit> = self.edits.iter().collect();
        edits.sort_by_key(|e| e.offset);
        let mut out: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        let mut at = 0;
        for e in edits {
            let start = e.offset.max(at);
            let end = (e.offset + e.replaces).max(start);
            match out.last_mut() {
                Some((range, text)) if range.end == start => {
                    range.end = end;
                    text.push_str(&e.text);
                }
                _ => out.push((start..end, e.text.clone())),
            }
            at = end;
        }
        out
    }

    /// Whether the plan creates this file.
    pub fn creates(&self) -> bool {
        !self.file.exists && !self.delete
    }
}

/// A line of the apply summary: where a piece went.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Placed {
    pub file: String,
    pub line: usize,
    pub piece: String,
}

#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub files: Vec<FilePlan>,
    /// Things worth saying that are not edits (e.g. a piece already present).
    pub notes: Vec<String>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.files.iter().all(|f| f.edits.is_empty() && !f.delete)
    }

    /// Inserts `text` at `offset` (a file not yet on disk is created by it).
    pub fn add(&mut self, file: &SourceFile, offset: usize, text: String, piece: &str) {
        self.replace(file, offset, 0, text, piece);
    }

    /// Replaces `replaces` bytes at `offset` with `text`.
    pub fn replace(
        &mut self,
        file: &SourceFile,
        offset: usize,
        replaces: usize,
        text: String,
        piece: &str,
    ) {
        let edit = Edit {
            offset,
            replaces,
            text,
            piece: piece.to_string(),
        };
        self.file_plan(file).edits.push(edit);
    }

    /// Removes a file.
    pub fn delete(&mut self, file: &SourceFile) {
        self.file_plan(file).delete = true;
    }

    fn file_plan(&mut self, file: &SourceFile) -> &mut FilePlan {
        match self.files.iter().position(|f| f.file.path == file.path) {
            Some(i) => &mut self.files[i],
            None => {
                self.files.push(FilePlan {
                    file: file.clone(),
                    edits: Vec::new(),
                    delete: false,
                });
                self.files.last_mut().expect("just pushed")
            }
        }
    }

    /// Where each piece lands in the patched files (line of its first inserted line).
    pub fn placed(&self) -> Vec<Placed> {
        let mut out = Vec::new();
        for fp in &self.files {
            let mut edits: Vec<&Edit> = fp.edits.iter().collect();
            edits.sort_by_key(|e| e.offset);
            let (mut shift, mut removed) = (0usize, 0usize);
            for e in edits {
                let before = fp.file.line_of(e.offset);
                let skip = usize::from(e.text.starts_with(['\n', '\r']));
                out.push(Placed {
                    file: fp.file.rel.clone(),
                    line: (before + shift + skip).saturating_sub(removed),
                    piece: e.piece.clone(),
                });
                shift += e.text.matches('\n').count();
                removed += fp.file.text[e.offset..e.offset + e.replaces]
                    .matches('\n')
                    .count();
            }
        }
        out.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        out.dedup(); // a piece made of several insertions on one line (around an expression) lands once
        out
    }

    pub fn sort(&mut self) {
        self.files.sort_by(|a, b| a.file.rel.cmp(&b.file.rel));
    }
}
