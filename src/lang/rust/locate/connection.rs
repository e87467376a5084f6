//! The connection anchor of an SDK agent: the field or static the card goes out on when the
//! handler holds no connection of its own (the trait API), and the fields the agent's own
//! sends go through (preferred among several).

use super::handlers::Handler;
use crate::config::Pin;
use crate::error::{Candidate, Error, Result};
use crate::lang::anchors::{Connection, Site};
use crate::lang::parts;
use crate::lang::rust::Parsed;
use crate::lang::rust::modules::Modules;
use crate::lang::rust::sdk::Dialect;
use crate::lang::rust::syntax::{Collected, is_connection, span_text, type_text};
use syn::spanned::Spanned;

/// The site of a name's span in file `file`.
fn site_of(file: usize, span: proc_macro2::Span) -> Site {
    Site {
        file,
        range: span.byte_range(),
        line: span.start().line,
    }
}

/// A candidate for a sink (the trait API's connection for the card): the connection anchor
/// (the field or static, the expression the turn reads it with — `&self.field`,
/// `&crate::STATIC` — and its pin name, `Type::field` or `STATIC`).
#[derive(Debug, Clone)]
pub struct SinkCandidate {
    pub anchor: Connection,
    /// The agent's own sends go through it.
    pub used_by_sends: bool,
}

/// Types that carry session updates to the client: the connection, a channel of them.
/// Types that carry session updates to the client and can be kept for later (the card's
/// heartbeats and held text): the connection behind a shared pointer (`Rc`/`Arc`, in a cell
/// or not), or a channel sender of session notifications the agent drains into it.
fn is_sink_type(ty: &str) -> bool {
    (ty.contains("AgentSideConnection") && (ty.contains("Rc<") || ty.contains("Arc<")))
        || (ty.contains("Sender<") && ty.contains("SessionNotification"))
}

/// Every field of `self_ty` and every reachable static that can carry the card (the same
/// list the `connection` pin picks from).
pub fn sink_candidates(
    c: &Collected,
    self_ty: &str,
    module_path: &dyn Fn(usize) -> Option<Vec<String>>,
    used_fields: &[String],
) -> Vec<SinkCandidate> {
    let mut out = Vec::new();
    for (file, s) in &c.structs {
        if s.ident != self_ty {
            continue;
        }
        for f in &s.fields {
            let Some(name) = &f.ident else { continue };
            if is_sink_type(&c.expand(&type_text(&f.ty))) {
                out.push(SinkCandidate {
                    anchor: Connection {
                        site: site_of(*file, name.span()),
                        text: format!("&self.{name}"),
                        pin: Some(format!("{self_ty}::{name}")),
                    },
                    used_by_sends: used_fields.contains(&name.to_string()),
                });
            }
        }
    }
    for (file, s) in &c.statics {
        if !is_sink_type(&c.expand(&type_text(&s.ty))) {
            continue;
        }
        let Some(path) = module_path(*file) else {
            continue;
        };
        let public = !matches!(s.vis, syn::Visibility::Inherited);
        if !public && !path.is_empty() {
            continue; // private to a module the handler may not be in
        }
        let mut full = vec!["crate".to_string()];
        full.extend(path);
        full.push(s.ident.to_string());
        out.push(SinkCandidate {
            anchor: Connection {
                site: site_of(*file, s.ident.span()),
                text: format!("&{}", full.join("::")),
                pin: Some(s.ident.to_string()),
            },
            used_by_sends: used_fields.contains(&s.ident.to_string()),
        });
    }
    out
}

impl SinkCandidate {
    /// The pin name: every candidate has one.
    fn name(&self) -> &str {
        self.anchor.pin.as_deref().unwrap_or_default()
    }

    pub fn candidate(&self, files: &[Parsed]) -> Candidate {
        Candidate {
            location: self
                .anchor
                .site
                .location(&files[self.anchor.site.file].file.rel),
            name: self.name().to_string(),
        }
    }
}

/// `self.<field>` receivers of the SDK sends in methods of `ty`: the fields the agent's own
/// sends go through.
pub fn fields_used_by_sends(
    files: &[Parsed],
    c: &Collected,
    ty: &str,
    send_method: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for (file, mty, f) in &c.methods {
        if mty != ty {
            continue;
        }
        let text = span_text(&files[*file].file.text, f.block.span());
        let mut rest = text.as_str();
        while let Some(i) = rest.find("self.") {
            rest = &rest[i + 5..];
            let field: String = rest
                .chars()
                .take_while(|ch| ch.is_alphanumeric() || *ch == '_')
                .collect();
            // a field read in a method that sends
            if !field.is_empty()
                && text.contains(&format!(".{send_method}"))
                && !out.contains(&field)
            {
                out.push(field);
            }
        }
    }
    out
}

/// The trait API's card path for a wrapped handler: a pin, the field (or static) the agent's
/// own sends use, or the one candidate.
pub(super) fn wrap_sink(
    decisions: &crate::lang::survey::Decisions,
    files: &[Parsed],
    c: &Collected,
    modules: &Modules,
    dialect: Dialect,
    h: &Handler,
    pin: Option<&str>,
) -> Result<(Connection, String)> {
    let ty = h.self_ty.clone().unwrap_or_default();
    if !dialect.local() {
        // a builder-API method: its connection parameter
        let method = c
            .methods
            .iter()
            .find(|(file, mty, f)| {
                *file == h.anchor.site.file
                    && *mty == ty
                    && format!("{ty}::{}", f.sig.ident) == h.anchor.name
            })
            .map(|(_, _, f)| f);
        if let Some(f) = method {
            for i in &f.sig.inputs {
                if let syn::FnArg::Typed(t) = i
                    && is_connection(&type_text(&t.ty))
                    && let syn::Pat::Ident(id) = &*t.pat
                {
                    // a clone: the body moves the parameter into its `async move` block
                    let param = Connection {
                        site: site_of(h.anchor.site.file, id.ident.span()),
                        text: format!("&{}.clone()", id.ident),
                        pin: None,
                    };
                    return Ok((param, format!("the handler's connection `{}`", id.ident)));
                }
            }
        }
        return Err(Error::Unsupported {
            file: files[h.anchor.site.file].file.rel.clone(),
            line: h.anchor.site.line,
            message: format!(
                "{} takes no connection (`ConnectionTo<Client>`, `JrConnectionCx<AgentToClient>`) for the card; pin the closure that calls it instead",
                h.anchor.name
            ),
        });
    }
    let used = fields_used_by_sends(files, c, &ty, dialect.send_method());
    let path_of = |f: usize| modules.path_of(f).map(<[String]>::to_vec);
    let mut found = sink_candidates(c, &ty, &path_of, &used);
    let listed: Vec<Candidate> = found.iter().map(|s| s.candidate(files)).collect();
    let describe = |s: &SinkCandidate| {
        if s.anchor.text.starts_with("&self.") {
            format!("the agent's field `{}`", s.name())
        } else {
            format!("the static `{}`", s.name())
        }
    };
    if let Some(pin) = pin {
        let pin = Pin::parse_rust(pin);
        return match found.iter().find(|s| pin.takes(&s.candidate(files))) {
            Some(s) => Ok((s.anchor.clone(), describe(s))),
            None => Err(Error::NotFound {
                site: "connection for the think card",
                detail: format!(
                    "the pin `connection` names {}{}, which is no field of {ty} or static holding the connection or a channel of session updates",
                    pin.file,
                    pin.name_suffix()
                ),
                pin_key: "rust.connection",
                candidates: listed,
            }),
        };
    }
    let preferred: Vec<&SinkCandidate> = found.iter().filter(|s| s.used_by_sends).collect();
    let pick = match (found.as_slice(), preferred.as_slice()) {
        ([one], _) => Some(one),
        (_, [one]) => Some(*one),
        _ => None,
    };
    if let Some(s) = pick {
        let all: Vec<&Candidate> = listed.iter().collect();
        decisions.record(
            "connection for the think card",
            "rust.connection",
            &all,
            Some(&s.candidate(files)),
        );
        return Ok((s.anchor.clone(), describe(s)));
    }
    if found.is_empty() {
        return Err(Error::NotFound {
            site: "connection for the think card",
            detail: format!(
                "no field of {ty} (nor a static) holds the `AgentSideConnection` behind an `Rc`/`Arc` (e.g. `Rc<OnceCell<AgentSideConnection>>`) or a channel `Sender` of session notifications; keep one on the agent so {} can reach the client",
                h.anchor.name
            ),
            pin_key: "rust.connection",
            candidates: Vec::new(),
        });
    }
    // several, none preferred: the choice refuses, listing them
    let found: Vec<(SinkCandidate, Candidate)> = found
        .drain(..)
        .map(|s| {
            let c = s.candidate(files);
            (s, c)
        })
        .collect();
    let s = parts::choose(
        decisions,
        found,
        None,
        "connection for the think card",
        "rust.connection",
        String::new,
    )?;
    let from = describe(&s);
    Ok((s.anchor, from))
}
