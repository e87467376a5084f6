//! The parts of the protocol strategy (each an insertion, present or not) and the placement
//! facts verify proves beyond them: the runtime module, one import per touched file, the
//! cover of every prompt / cancel handler, the emitter around every send; names read by
//! inserted code bound where they are read; the turn opening before the handler's first send.

mod covers;
mod imports;

use covers::{cancel_cover, prompt_cover, value_cover};
use imports::import_part;

use super::locate::{Conn, Cover, Handler, Passed, Role, Send};
use super::placement::*;
use super::runtime::NS;
use crate::error::{Error, Result};
use crate::lang::parts::{Finding, Parsed, Part};
use crate::lang::pieces::{Pieces, PresentAt};
use crate::lang::typescript::style::{CodeStyle, detect, restyle, restyle_inline};
use crate::lang::typescript::syntax::*;
use crate::report::Status;
use crate::source::{indent_at, line_end_after, line_start};
use tree_sitter::Node;

pub(super) const CHECK_IMPORT: &[&str] = &["bound"];
pub(super) const CHECK_OPEN: &[&str] = &["hook.start", "connection"];
pub(super) const CHECK_CLOSE: &[&str] = &["turn_end", "hook.complete"];
pub(super) const CHECK_CANCEL: &[&str] = &["turn_end"];
pub(super) const CHECK_SEND: &[&str] = &["sends"];

pub(super) use crate::lang::tree::line;

/// Where the runtime module is and what apply would write there.
pub struct Module {
    pub file: usize,
    pub text: String,
    /// The file's extension (`ts`, `mts`, `cts`): import specifiers follow it.
    pub ext: String,
}

pub struct Built {
    pub parts: Vec<Part>,
    pub findings: Vec<Finding>,
}

/// TypeScript's builder: the shared one ([`Pieces`]), anchoring every present piece where
/// its text starts, and which files are CommonJS.
pub(super) struct Builder<'a> {
    pieces: Pieces<'a, Parsed>,
    /// Per file: a CommonJS file (`require`) rather than a module.
    commonjs: &'a [bool],
}

crate::lang::pieces::extends_pieces!(Builder);

impl Builder<'_> {
    fn style(&self, file: usize) -> CodeStyle {
        let p = &self.files[file];
        detect(p.tree().root_node(), &p.file.text)
    }

    /// The refusal of a shape apply cannot patch, at a node.
    fn refuse(&self, file: usize, n: Node, message: String) -> Error {
        self.pieces.unsupported(file, line(n), message)
    }
}

/// The runtime module: current, or replaced whole; never written over a file of the agent.
fn module_part(b: &mut Builder, module: &Module) -> Result<()> {
    let m = &b.files[module.file];
    if m.file.exists && !super::runtime::is_runtime_module(&m.file.text) {
        return Err(Error::Unsupported {
            file: m.file.rel.clone(),
            line: 1,
            message: "this file is not acp-patch's runtime module, but apply would write the module here; rename it".into(),
        });
    }
    let current = *m.file.text == *module.text;
    let replaces = if current { 0 } else { m.file.text.len() };
    // an edited module is reported (and refused) by the shared runtime check instead
    let stale = m.file.exists
        && !current
        && !matches!(
            crate::lang::seal::judge(&m.file.text, &module.text),
            crate::lang::seal::OnDisk::Edited { .. }
        );
    b.parts.push(
        Part::runtime(
            module.file,
            crate::lang::parts::CHECK_RUNTIME_MODULE,
            module.text.clone(),
            current,
            replaces,
        )
        .present_at(current.then_some(0)),
    );
    if stale {
        b.finding(
            "runtime",
            Status::Malformed,
            module.file,
            1,
            "out of date (its text is not what this acp-patch writes); apply replaces it".into(),
        );
    }
    Ok(())
}

/// The parts of every module, import, cover and wrap; `module_of[file]` is the index in
/// `modules` of the module a file imports.
pub fn build(
    files: &[Parsed],
    modules: &[Module],
    module_of: &[usize],
    commonjs: &[bool],
    handlers: &[Handler],
    sends: &[Send],
) -> Result<Built> {
    let mut b = Builder {
        pieces: Pieces::new(files, PresentAt::Offset),
        commonjs,
    };
    for module in modules {
        module_part(&mut b, module)?;
    }
    let mut touched: Vec<usize> = handlers
        .iter()
        .map(|h| h.file())
        .chain(sends.iter().map(|s| s.file()))
        .collect();
    touched.sort();
    touched.dedup();
    for f in touched.iter().copied() {
        if !modules.iter().any(|m| m.file == f) {
            import_part(&mut b, f, &modules[module_of[f]])?;
        }
    }
    for h in handlers {
        match (&h.cover, h.role) {
            (
                Cover::Body {
                    func,
                    conn,
                    session_id,
                    passed,
                },
                Role::Prompt,
            ) => prompt_cover(&mut b, h, *func, conn, (session_id, passed))?,
            (
                Cover::Body {
                    func,
                    session_id,
                    passed,
                    ..
                },
                Role::Cancel,
            ) => cancel_cover(&mut b, h, *func, (session_id, passed))?,
            (Cover::Value { expr, wrapped }, _) => value_cover(&mut b, h, *expr, *wrapped),
        }
    }
    for s in sends {
        let open = format!("{NS}.emitter(");
        let present = s.anchor.wrapped.then_some(s.anchor.site.line);
        // present: `acpProgress.emitter(target)` around the target
        let (open_at, close_at) = if s.anchor.wrapped {
            (s.target.start_byte() - open.len(), s.target.end_byte())
        } else {
            (s.target.start_byte(), s.target.end_byte())
        };
        let label = "emitter around the send";
        b.push(CHECK_SEND, label, s.file(), open_at, open, present);
        b.push(CHECK_SEND, label, s.file(), close_at, ")".into(), present);
    }
    Ok(Built {
        parts: b.pieces.parts,
        findings: b.pieces.findings,
    })
}
