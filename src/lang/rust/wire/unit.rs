//! What apply wraps around a write: the statement (or the expression whose value is used)
//! that holds it within its fn or closure, through the statement that ends its line when
//! the write leaves that to a later one.

use super::form::Form;
use super::index::Index;
use super::tree::{Id, Kind, Role};

/// A write of the message alone into a stream (`write_all`, `serde_json::to_writer`,
/// `write!`, `print!`), no line end in it: a later statement ends the line.
pub fn unframed(t: &super::tree::Tree, call: Id, written: &Form) -> bool {
    let stream = match &t.nodes[call].kind {
        Kind::Method(m) => ["write_all", "write", "write_str"].contains(&m.as_str()),
        Kind::Macro { name } => name == "write" || name == "print",
        Kind::Call => t.child(call, Role::Callee).is_some_and(|c| {
            matches!(&t.nodes[c].kind, Kind::Path(p) if p.last().is_some_and(|l| l.starts_with("to_writer")))
        }),
        _ => false,
    };
    let bare = match written {
        Form::Text(Some(tail)) | Form::Bytes(Some(tail)) => !tail.contains('\n'),
        Form::Value | Form::Struct(_) => true,
        _ => false,
    };
    stream && bare
}

/// The statement after `unit` in its block that writes the line's end (`b"\n"`, `"\n"`,
/// `writeln!`): a wrapped write covers it too, so each message gets its line.
pub fn line_end(ix: &Index, file: usize, unit: Id) -> Option<Id> {
    let t = ix.tree(file);
    let block = t.parent(unit)?;
    let siblings = &t.nodes[block].children;
    let at = siblings.iter().position(|c| *c == unit)?;
    siblings[at + 1..].iter().copied().find(|s| {
        let text = ix.text((file, *s));
        text.contains("\\n") || text.contains("writeln!") || text.contains("println!")
    })
}

/// The statement (or expression) that holds a write, within its fn or closure: a `;`
/// statement or `let _ = ..;` is wrapped as a statement; a value used (a tail, a `let` with
/// a name, a closure's or arm's body) as an expression.
pub fn unit_of(ix: &Index, file: usize, call: Id) -> Option<(Id, bool)> {
    let t = ix.tree(file);
    let mut cur = call;
    loop {
        let p = t.parent(cur)?;
        let role = t.nodes[cur].role;
        match (&t.nodes[p].kind, role) {
            (Kind::Block, Role::Stmt) => {
                return match &t.nodes[cur].kind {
                    Kind::Local {
                        wildcard: false, ..
                    } => t.child(cur, Role::Init).map(|i| (i, true)),
                    _ => Some((cur, false)),
                };
            }
            (Kind::Block, Role::Tail) => {
                let unit_fn = t
                    .parent(p)
                    .and_then(|f| t.fn_info(f))
                    .is_some_and(|f| f.ret.as_deref().is_none_or(|r| r == "()"));
                return Some((cur, !unit_fn));
            }
            (Kind::Closure(_) | Kind::Arm { .. }, Role::Body) => return Some((cur, true)),
            (Kind::Fn(_), _) => return None,
            _ => cur = p,
        }
    }
}
