//! Token-level finds on a file: every SDK send of a session update (`<recv>.send_notification(..)`,
//! `<recv>.session_notification(..)`) and every `<responder>.respond*(..)` call, inside macro
//! bodies too (`tokio::select! { .. }`). An edit there only needs a byte offset: the emitter
//! goes in front of the method's `.`, the turn end around the call's argument.

use crate::lang::anchors::{SendSite, Site, TurnEnd};
use crate::source::SourceFile;
use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// A call of the SDK's send method name: an SDK send of a session update unless the crate's
/// own method of that name is meant (see `Receiver`, `takes_update`).
#[derive(Debug, Clone)]
pub struct Send {
    /// From the `.` before the method name through the name (the name alone for a fully
    /// qualified send); `wrapped`: `.acp_progress()` already stands before it.
    pub anchor: SendSite,
    pub receiver: Receiver,
    /// The argument is a bare `SessionUpdate::..`: no SDK send takes one (the crate's own
    /// `send_notification(update)` helper does).
    pub takes_update: bool,
    /// A send in fully qualified form (`Client::session_notification(&conn, n)`,
    /// `<C as Client>::session_notification(&conn, n)`): where its pieces go instead of the
    /// method call's `.acp_progress()`.
    pub ufcs: Option<Ufcs>,
}

/// Where the pieces of a fully qualified send go (byte offsets of the file's text). Unpatched:
/// at the ends of the connection argument (and of the qualified self type); patched: where
/// they stand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ufcs {
    /// Before and after the connection argument.
    pub arg: (usize, usize),
    /// The argument's pieces stand there.
    pub arg_wrapped: bool,
    /// `<T as Client>::..`: before and after `T`, `T`'s text (the argument's emitter is
    /// built for that type, as the call coerces its argument to `&T`), and whether its pieces
    /// stand there.
    pub qself: Option<(usize, usize, String, bool)>,
}

impl Send {
    /// Byte offset of the `.` before the method name (of the name, fully qualified).
    pub fn dot(&self) -> usize {
        self.anchor.site.range.start
    }
}

/// What stands before the `.`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Receiver {
    /// `self.send_notification(..)`
    SelfValue,
    /// `self.field.send_notification(..)`
    SelfField(String),
    /// `name.send_notification(..)`
    Binding(String),
    /// anything else (a call, an index, a tuple field)
    Other,
}

fn receiver_of(tokens: &[TokenTree], dot: usize) -> Receiver {
    let ident = |k: usize| match tokens.get(k) {
        Some(TokenTree::Ident(i)) => Some(i.to_string()),
        _ => None,
    };
    let Some(last) = dot.checked_sub(1).and_then(ident) else {
        return Receiver::Other;
    };
    let dotted = |k: usize| k < tokens.len() && punct_is(&tokens[k], '.');
    if dot >= 2 && dotted(dot - 2) {
        if dot >= 3 && ident(dot - 3).as_deref() == Some("self") && !(dot >= 4 && dotted(dot - 4)) {
            return Receiver::SelfField(last);
        }
        return Receiver::Other;
    }
    if last == "self" {
        Receiver::SelfValue
    } else {
        Receiver::Binding(last)
    }
}

/// Whether a call's argument starts with a path through `SessionUpdate::`.
fn takes_update(args: &[TokenTree]) -> bool {
    let mut prev_update = false;
    for t in args {
        match t {
            TokenTree::Ident(i) => prev_update = i == "SessionUpdate",
            TokenTree::Punct(p) if p.as_char() == ':' => {
                if prev_update {
                    return true;
                }
            }
            _ => return false,
        }
    }
    false
}

/// `<receiver>.respond*(<argument>)`, the receiver a binding.
#[derive(Debug, Clone)]
pub struct RespondSite {
    /// The receiver's identifier (`.acp_turn(&acp_turn)` goes just past it); `wrapped`:
    /// `.acp_turn(..)` already stands between the receiver and the method.
    pub anchor: TurnEnd,
    pub receiver: String,
    pub method: String,
}

pub const RESPOND_METHODS: &[&str] = &[
    "respond",
    "respond_with_result",
    "respond_with_error",
    "respond_with_internal_error",
];

/// Notification types that are not session updates (`cx.send_notification(CancelNotification ..)`).
fn other_notification(args: &[TokenTree]) -> bool {
    // the last identifier of the leading path, before `::new(`, `{` or `(`
    let mut last: Option<String> = None;
    for t in args {
        match t {
            TokenTree::Ident(i) => last = Some(i.to_string()),
            TokenTree::Punct(p) if p.as_char() == ':' => {}
            _ => break,
        }
    }
    let mut idents: Vec<String> = Vec::new();
    for t in args {
        match t {
            TokenTree::Ident(i) => idents.push(i.to_string()),
            TokenTree::Punct(p) if p.as_char() == ':' => {}
            _ => break,
        }
    }
    let ty = match idents.as_slice() {
        [.., ty, new] if new == "new" => Some(ty.clone()),
        _ => last,
    };
    ty.is_some_and(|t| {
        t.ends_with("Notification")
            && t != "SessionNotification"
            && t != "UpdateSessionNotification"
    })
}

fn is_empty_paren(t: &TokenTree) -> bool {
    matches!(t, TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis && g.stream().is_empty())
}

fn ident_is(t: &TokenTree, name: &str) -> bool {
    matches!(t, TokenTree::Ident(i) if i == name)
}

fn punct_is(t: &TokenTree, c: char) -> bool {
    matches!(t, TokenTree::Punct(p) if p.as_char() == c)
}

/// Skips a turbofish `::<..>` starting at `i`; returns the index after it.
fn skip_turbofish(tokens: &[TokenTree], mut i: usize) -> usize {
    if i + 2 < tokens.len()
        && punct_is(&tokens[i], ':')
        && punct_is(&tokens[i + 1], ':')
        && punct_is(&tokens[i + 2], '<')
    {
        let mut depth = 0i32;
        i += 2;
        while i < tokens.len() {
            if punct_is(&tokens[i], '<') {
                depth += 1;
            } else if punct_is(&tokens[i], '>') {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            i += 1;
        }
    }
    i
}

/// Every send and respond call in the text of `source`, file `file` of the crate.
pub fn scan(file: usize, source: &SourceFile, send_method: &str) -> (Vec<Send>, Vec<RespondSite>) {
    let text = source.text.as_ref();
    let mut sends = Vec::new();
    let mut responds = Vec::new();
    if let Ok(stream) = text.parse::<TokenStream>() {
        // the names the SDK's `Client` trait goes by in this file (`Client as AcpClient`)
        let mut traits = vec!["Client".to_string()];
        aliases(stream.clone(), "Client", &mut traits);
        let cx = Cx {
            file,
            source,
            text,
            send_method,
            traits: &traits,
        };
        walk(stream, &cx, &mut sends, &mut responds);
    }
    sends.sort_by_key(|s| s.dot());
    responds.sort_by_key(|r| r.anchor.site.range.start);
    (sends, responds)
}

struct Cx<'a> {
    file: usize,
    source: &'a SourceFile,
    text: &'a str,
    send_method: &'a str,
    traits: &'a [String],
}

/// `<name> as <alias>` anywhere in a stream (a `use` renaming the trait).
fn aliases(stream: TokenStream, name: &str, out: &mut Vec<String>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    for (i, t) in tokens.iter().enumerate() {
        if let TokenTree::Group(g) = t {
            aliases(g.stream(), name, out);
        }
        if ident_is(t, name)
            && tokens.get(i + 1).is_some_and(|t| ident_is(t, "as"))
            && let Some(TokenTree::Ident(alias)) = tokens.get(i + 2)
            && alias != "_"
        {
            out.push(alias.to_string());
        }
    }
}

fn start_of(t: &TokenTree) -> usize {
    t.span().byte_range().start
}

fn end_of(t: &TokenTree) -> usize {
    t.span().byte_range().end
}

/// The tokens of a call's first argument (up to its first top-level `,`).
fn first_arg(inner: &[TokenTree]) -> &[TokenTree] {
    let end = inner
        .iter()
        .position(|t| punct_is(t, ','))
        .unwrap_or(inner.len());
    &inner[..end]
}

/// `<path>::acp_progress::<name>` at the start of `tokens`: the index after `<name>`.
fn runtime_path(tokens: &[TokenTree], name: &str) -> Option<usize> {
    let k = tokens.iter().position(|t| ident_is(t, name))?;
    (k >= 3
        && punct_is(&tokens[k - 1], ':')
        && punct_is(&tokens[k - 2], ':')
        && ident_is(&tokens[k - 3], "acp_progress")
        && tokens[..k]
            .iter()
            .all(|t| matches!(t, TokenTree::Ident(_) | TokenTree::Punct(_))))
    .then_some(k + 1)
}

/// A fully qualified send: `<Trait>::<method>(<arg>, ..)` with the trait one of the file's
/// names of the SDK's `Client`, or `<T as Trait>::<method>(..)`. `i` is the method's index.
fn ufcs_site(tokens: &[TokenTree], i: usize, inner: &[TokenTree], cx: &Cx) -> Option<Ufcs> {
    if i < 3 || !punct_is(&tokens[i - 1], ':') || !punct_is(&tokens[i - 2], ':') {
        return None;
    }
    let is_trait =
        |t: &TokenTree| matches!(t, TokenTree::Ident(id) if cx.traits.iter().any(|n| id == n));
    let arg = first_arg(inner);
    let (first, last) = (arg.first()?, arg.last()?);
    // the argument, or where the pieces stand once patched:
    // `&<path>::AcpEmit::acp_progress(<arg>)`, `&<T as <path>::AcpEmit>::acp_progress(<arg>)`
    let arg_at = |qualified: bool| -> (usize, usize, bool) {
        let close = match last {
            TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis => {
                Some(g.span_close().byte_range().start)
            }
            _ => None,
        };
        let path_end = if qualified {
            (arg.len() >= 2 && punct_is(&arg[1], '<'))
                .then(|| runtime_path(&arg[2..], "AcpEmit").map(|k| k + 2))
                .flatten()
                .filter(|&k| k < arg.len() && punct_is(&arg[k], '>'))
                .map(|k| k + 1)
        } else {
            runtime_path(&arg[1..], "AcpEmit").map(|k| k + 1)
        };
        if punct_is(first, '&')
            && let Some(k) = path_end
            && arg.len() == k + 4
            && punct_is(&arg[k], ':')
            && punct_is(&arg[k + 1], ':')
            && ident_is(&arg[k + 2], "acp_progress")
            && let Some(c) = close
        {
            return (start_of(first), c, true);
        }
        (start_of(first), end_of(last), false)
    };
    if is_trait(&tokens[i - 3]) {
        if i >= 4 && punct_is(&tokens[i - 4], '>') {
            // `<T as Client>` ends here: handled below
        } else {
            let (a, b, w) = arg_at(false);
            return Some(Ufcs {
                arg: (a, b),
                arg_wrapped: w,
                qself: None,
            });
        }
    }
    // `<T as Trait>::`: back to the matching `<`
    if !punct_is(&tokens[i - 3], '>') {
        return None;
    }
    let close = i - 3;
    let mut depth = 0i32;
    let mut open = None;
    for k in (0..=close).rev() {
        if punct_is(&tokens[k], '>') && !(k > 0 && punct_is(&tokens[k - 1], '-')) {
            depth += 1;
        } else if punct_is(&tokens[k], '<') {
            depth -= 1;
            if depth == 0 {
                open = Some(k);
                break;
            }
        }
    }
    let open = open?;
    let inside = &tokens[open + 1..close];
    let as_at = inside.iter().rposition(|t| ident_is(t, "as"))?;
    if as_at == 0 || !inside.last().is_some_and(is_trait) {
        return None;
    }
    let ty = &inside[..as_at];
    // patched: `<path>::AcpEmitter<'_, T>`
    let qself = match runtime_path(ty, "AcpEmitter") {
        Some(k)
            if ty.len() > k + 4
                && punct_is(&ty[k], '<')
                && punct_is(&ty[k + 1], '\'')
                && ident_is(&ty[k + 2], "_")
                && punct_is(&ty[k + 3], ',')
                && punct_is(ty.last()?, '>') =>
        {
            let t = &ty[k + 4..ty.len() - 1];
            let text = cx.text[start_of(t.first()?)..end_of(t.last()?)].to_string();
            (start_of(&ty[0]), start_of(ty.last()?), text, true)
        }
        _ => {
            let (a, b) = (start_of(&ty[0]), end_of(ty.last()?));
            (a, b, cx.text[a..b].to_string(), false)
        }
    };
    let (a, b, w) = arg_at(true);
    Some(Ufcs {
        arg: (a, b),
        arg_wrapped: w,
        qself: Some(qself),
    })
}

fn walk(stream: TokenStream, cx: &Cx, sends: &mut Vec<Send>, responds: &mut Vec<RespondSite>) {
    let send_method = cx.send_method;
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    for i in 0..tokens.len() {
        if let TokenTree::Group(g) = &tokens[i] {
            walk(g.stream(), cx, sends, responds);
        }
        // a fully qualified send (the trait API's `Client` trait)
        if send_method == "session_notification"
            && ident_is(&tokens[i], send_method)
            && let Some(TokenTree::Group(args)) = tokens.get(skip_turbofish(&tokens, i + 1))
            && args.delimiter() == Delimiter::Parenthesis
        {
            let inner: Vec<TokenTree> = args.stream().into_iter().collect();
            if let Some(u) = ufcs_site(&tokens, i, &inner, cx) {
                let span = tokens[i].span();
                sends.push(Send {
                    anchor: SendSite {
                        site: Site::new(cx.file, cx.source, span.byte_range()),
                        wrapped: u.arg_wrapped && u.qself.as_ref().is_none_or(|q| q.3),
                    },
                    receiver: Receiver::Other,
                    takes_update: false,
                    ufcs: Some(u),
                });
                continue;
            }
        }
        if !punct_is(&tokens[i], '.') || i + 2 >= tokens.len() {
            continue;
        }
        let TokenTree::Ident(method) = &tokens[i + 1] else {
            continue;
        };
        let after = skip_turbofish(&tokens, i + 2);
        let Some(TokenTree::Group(args)) = tokens.get(after) else {
            continue;
        };
        if args.delimiter() != Delimiter::Parenthesis {
            continue;
        }
        let inner: Vec<TokenTree> = args.stream().into_iter().collect();
        let method = method.to_string();
        if method == send_method {
            if send_method == "send_notification" && other_notification(&inner) {
                continue;
            }
            let dot = tokens[i].span();
            let wrapped = i >= 3
                && is_empty_paren(&tokens[i - 1])
                && ident_is(&tokens[i - 2], "acp_progress")
                && punct_is(&tokens[i - 3], '.');
            // the receiver before `.acp_progress()` when already wrapped
            let at = if wrapped { i - 3 } else { i };
            let range = dot.byte_range().start..tokens[i + 1].span().byte_range().end;
            sends.push(Send {
                anchor: SendSite {
                    site: Site::new(cx.file, cx.source, range),
                    wrapped,
                },
                receiver: receiver_of(&tokens, at),
                takes_update: takes_update(&inner),
                ufcs: None,
            });
        } else if RESPOND_METHODS.contains(&method.as_str()) {
            // `r.respond(..)`, or `r.acp_turn(&acp_turn).respond(..)` once patched
            let wrapped = i >= 3
                && matches!(&tokens[i - 1], TokenTree::Group(g) if g.delimiter() == Delimiter::Parenthesis)
                && ident_is(&tokens[i - 2], "acp_turn")
                && punct_is(&tokens[i - 3], '.');
            if i == 0 {
                continue;
            }
            let r = if wrapped { i - 4 } else { i - 1 };
            let TokenTree::Ident(receiver) = &tokens[r] else {
                continue;
            };
            // `a.b.respond(..)`: a field, not a binding
            if r >= 1 && punct_is(&tokens[r - 1], '.') {
                continue;
            }
            let span = receiver.span();
            responds.push(RespondSite {
                anchor: TurnEnd {
                    site: Site::new(cx.file, cx.source, span.byte_range()),
                    wrapped,
                },
                receiver: receiver.to_string(),
                method,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> SourceFile {
        SourceFile::decode("a.rs".into(), "a.rs".into(), text.as_bytes().to_vec()).unwrap()
    }

    #[test]
    fn finds_sends_in_macros_and_skips_other_notifications() {
        let src = "fn f() { tokio::select! { _ = a => { cx.send_notification(SessionNotification::new(s, u))?; } }\n cx.send_notification(CancelNotification::new(x)); cx.acp_progress().send_notification(n); }";
        let (sends, _) = scan(0, &source(src), "send_notification");
        assert_eq!(sends.len(), 2);
        assert!(!sends[0].anchor.wrapped);
        assert!(sends[1].anchor.wrapped);
        assert_eq!(
            &src[sends[0].anchor.site.range.clone()],
            ".send_notification"
        );
        assert_eq!(
            (sends[0].anchor.site.line, sends[1].anchor.site.line),
            (1, 2)
        );
        assert_eq!(sends[0].receiver, Receiver::Binding("cx".into()));
        assert_eq!(sends[1].receiver, Receiver::Binding("cx".into()));
    }

    #[test]
    fn tells_the_crates_own_update_helper_by_its_argument_and_receiver() {
        let src = "fn f() { self.client.send_notification(SessionUpdate::Plan(p)); self.send_notification(acp::SessionUpdate::Plan(p)); self.0.send_notification(n); x.y().send_notification(n) }";
        let (sends, _) = scan(0, &source(src), "send_notification");
        assert_eq!(sends.len(), 4);
        assert_eq!(sends[0].receiver, Receiver::SelfField("client".into()));
        assert!(sends[0].takes_update && sends[1].takes_update);
        assert_eq!(sends[1].receiver, Receiver::SelfValue);
        assert_eq!(sends[2].receiver, Receiver::Other);
        assert!(!sends[2].takes_update);
        assert_eq!(sends[3].receiver, Receiver::Other);
    }

    #[test]
    fn finds_fully_qualified_sends_and_their_patched_form() {
        let src = "use agent_client_protocol::{self as acp, Client as AcpClient};\nfn f() { let r = AcpClient::session_notification(&*conn, n).await; acp::Client::session_notification(&c, n); <C as acp::Client>::session_notification(&self.conn, n); Other::session_notification(&c, n); }";
        let (sends, _) = scan(0, &source(src), "session_notification");
        assert_eq!(sends.len(), 3);
        let u = sends[0].ufcs.clone().unwrap();
        assert_eq!(&src[u.arg.0..u.arg.1], "&*conn");
        assert!(!sends[0].anchor.wrapped && u.qself.is_none());
        let u = sends[2].ufcs.clone().unwrap();
        assert_eq!(&src[u.arg.0..u.arg.1], "&self.conn");
        let q = u.qself.unwrap();
        assert_eq!((&src[q.0..q.1], q.2.as_str(), q.3), ("C", "C", false));

        let patched = "use acp::Client as AcpClient;\nfn f() { AcpClient::session_notification(&crate::acp_progress::AcpEmit::acp_progress(&*conn), n); <crate::acp_progress::AcpEmitter<'_, Rc<C>> as Client>::session_notification(&<Rc<C> as crate::acp_progress::AcpEmit>::acp_progress(&self.conn), n); }";
        let (sends, _) = scan(0, &source(patched), "session_notification");
        assert_eq!(sends.len(), 2);
        assert!(sends.iter().all(|s| s.anchor.wrapped));
        let u = sends[0].ufcs.clone().unwrap();
        assert!(
            patched[u.arg.0..].starts_with("&crate::acp_progress::AcpEmit::acp_progress(&*conn")
        );
        assert!(patched[u.arg.1..].starts_with("), n)"));
        let u = sends[1].ufcs.clone().unwrap();
        let q = u.qself.unwrap();
        assert_eq!(q.2, "Rc<C>");
        assert!(patched[q.0..].starts_with("crate::acp_progress::AcpEmitter<'_, "));
        assert!(patched[q.1..].starts_with("> as Client"));
        assert!(
            patched[u.arg.0..]
                .starts_with("&<Rc<C> as crate::acp_progress::AcpEmit>::acp_progress(")
        );
        assert!(patched[u.arg.1..].starts_with("), n)"));
    }

    #[test]
    fn finds_respond_calls_with_their_argument() {
        let src = "fn f() { responder.respond_with_result(x.await); self.r.respond(y); r.acp_turn(&acp_turn).respond(z) }";
        let (_, responds) = scan(0, &source(src), "send_notification");
        assert_eq!(responds.len(), 2);
        assert_eq!(responds[0].receiver, "responder");
        assert_eq!(&src[responds[0].anchor.site.range.clone()], "responder");
        assert!(!responds[0].anchor.wrapped);
        assert!(responds[1].anchor.wrapped);
        assert_eq!(responds[1].receiver, "r");
    }
}
