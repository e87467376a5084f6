//! What a message is on its way to the writer: a JSON value, its text (with what follows
//! the JSON when the code shows it), bytes, or a struct of the agent's own.

use super::index::{At, Index};
use super::tree::{Id, Kind, Role};

/// What a value on the way to the writer is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// A `serde_json::Value`.
    Value,
    /// JSON text, with what follows the JSON (`Some("\n")`) when the code shows it.
    Text(Option<String>),
    Bytes(Option<String>),
    /// A value of a `Serialize` type of the crate.
    Struct(String),
}

/// Text whose binding is appended to later (`line.push('\n')`) ends in what the code does
/// not show: its tail is unknown.
pub fn untailed_if_mutated(ix: &Index, file: usize, reads: &[Id], form: Form) -> Form {
    let t = ix.tree(file);
    let mutated = reads.iter().any(|r| {
        t.nodes[*r].role == Role::Receiver
            && t.parent(*r).is_some_and(|p| {
                matches!(&t.nodes[p].kind, Kind::Method(m) if ["push", "push_str", "insert", "insert_str", "extend"].contains(&m.as_str()))
            })
    });
    match form {
        Form::Text(_) if mutated => Form::Text(None),
        Form::Bytes(_) if mutated => Form::Bytes(None),
        f => f,
    }
}

/// What `format!` puts after the JSON: `format!("{}\n", x)` → `"\n"`; unknown otherwise.
pub fn format_tail(ix: &Index, mac: At, arg: Id) -> Option<String> {
    let t = ix.tree(mac.0);
    let fmt = t.nodes[mac.1]
        .children
        .iter()
        .find_map(|c| match &t.nodes[*c].kind {
            Kind::Lit(Some(s)) => Some(s.clone()),
            _ => None,
        })?;
    let placeholders = fmt.matches('{').count() - 2 * fmt.matches("{{").count();
    if placeholders != 1 {
        return None;
    }
    let inline = match &t.nodes[arg].kind {
        Kind::Ident(n) if t.nodes[arg].role == Role::Other => Some(n.clone()),
        _ => None,
    };
    let head = match inline {
        Some(n) => format!("{{{n}}}"),
        None => "{}".to_string(),
    };
    fmt.strip_prefix(&head).map(str::to_string)
}
