//! An edit plan: every insertion computed before anything is written.

use crate::source::SourceFile;

/// One insertion of text at a byte offset of a file's (BOM-less) text.
#[derive(Debug, Clone)]
pub struct Edit {
    pub offset: usize,
    pub text: String,
    /// Which piece this edit belongs to, e.g. `hook start`.
    pub piece: String,
}

#[derive(Debug, Clone)]
pub struct FilePlan {
    pub file: SourceFile,
    pub edits: Vec<Edit>,
}

impl FilePlan {
    /// The file's text with every edit applied. Edits at the same offset keep the order
    /// in which they were planned.
    pub fn new_text(&self) -> String {
        let mut edits: Vec<&Edit> = self.edits.iter().collect();
        edits.sort_by_key(|e| e.offset);
        let mut out = String::with_capacity(self.file.text.len() + 4096);
        let mut at = 0;
        for e in edits {
            out.push_str(&self.file.text[at..e.offset]);
            out.push_str(&e.text);
            at = e.offset;
        }
        out.push_str(&self.file.text[at..]);
        out
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
        self.files.iter().all(|f| f.edits.is_empty())
    }

    pub fn add(&mut self, file: &SourceFile, offset: usize, text: String, piece: &str) {
        let edit = Edit {
            offset,
            text,
            piece: piece.to_string(),
        };
        match self.files.iter_mut().find(|f| f.file.path == file.path) {
            Some(fp) => fp.edits.push(edit),
            None => self.files.push(FilePlan {
                file: file.clone(),
                edits: vec![edit],
            }),
        }
    }

    /// Where each piece lands in the patched files (line of its first inserted line).
    pub fn placed(&self) -> Vec<Placed> {
        let mut out = Vec::new();
        for fp in &self.files {
            let mut edits: Vec<&Edit> = fp.edits.iter().collect();
            edits.sort_by_key(|e| e.offset);
            let mut shift = 0usize;
            for e in edits {
                let before = fp.file.line_of(e.offset);
                let skip = usize::from(e.text.starts_with(['\n', '\r']));
                out.push(Placed {
                    file: fp.file.rel.clone(),
                    line: before + shift + skip,
                    piece: e.piece.clone(),
                });
                shift += e.text.matches('\n').count();
            }
        }
        out.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
        out
    }

    pub fn sort(&mut self) {
        self.files.sort_by(|a, b| a.file.rel.cmp(&b.file.rel));
    }
}
