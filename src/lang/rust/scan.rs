//! Token-level finds on a file: every SDK send of a session update (`<recv>.send_notification(..)`,
//! `<recv>.session_notification(..)`) and every `<responder>.respond*(..)` call, inside macro
//! bodies too (`tokio::select! { .. }`). An edit there only needs a byte offset: the emitter
//! goes in front of the method's `.`, the turn end around the call's argument.

use proc_macro2::{Delimiter, TokenStream, TokenTree};

/// A call of the SDK's send method name: an SDK send of a session update unless the crate's
/// own method of that name is meant (see `Receiver`, `takes_update`).
#[derive(Debug, Clone)]
pub struct SendSite {
    /// Byte offset of the `.` before the method name.
    pub dot: usize,
    pub line: usize,
    /// `.acp_progress()` already stands before it.
    pub wrapped: bool,
    pub receiver: Receiver,
    /// The argument is a bare `SessionUpdate::..`: no SDK send takes one (the crate's own
    /// `send_notification(update)` helper does).
    pub takes_update: bool,
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
    pub receiver: String,
    /// Byte offset of the receiver's identifier, and just past it (where
    /// `.acp_turn(&acp_turn)` goes).
    pub at: usize,
    pub after: usize,
    pub method: String,
    pub line: usize,
    /// `.acp_turn(..)` already stands between the receiver and the method.
    pub wrapped: bool,
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

/// Every send and respond call in a file's text.
pub fn scan(text: &str, send_method: &str) -> (Vec<SendSite>, Vec<RespondSite>) {
    let mut sends = Vec::new();
    let mut responds = Vec::new();
    if let Ok(stream) = text.parse::<TokenStream>() {
        walk(stream, send_method, &mut sends, &mut responds);
    }
    sends.sort_by_key(|s| s.dot);
    responds.sort_by_key(|r| r.at);
    (sends, responds)
}

fn walk(
    stream: TokenStream,
    send_method: &str,
    sends: &mut Vec<SendSite>,
    responds: &mut Vec<RespondSite>,
) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    for i in 0..tokens.len() {
        if let TokenTree::Group(g) = &tokens[i] {
            walk(g.stream(), send_method, sends, responds);
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
            sends.push(SendSite {
                dot: dot.byte_range().start,
                line: dot.start().line,
                wrapped,
                receiver: receiver_of(&tokens, at),
                takes_update: takes_update(&inner),
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
                receiver: receiver.to_string(),
                at: span.byte_range().start,
                after: span.byte_range().end,
                method,
                line: span.start().line,
                wrapped,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_sends_in_macros_and_skips_other_notifications() {
        let src = "fn f() { tokio::select! { _ = a => { cx.send_notification(SessionNotification::new(s, u))?; } }\n cx.send_notification(CancelNotification::new(x)); cx.acp_progress().send_notification(n); }";
        let (sends, _) = scan(src, "send_notification");
        assert_eq!(sends.len(), 2);
        assert!(!sends[0].wrapped);
        assert!(sends[1].wrapped);
        assert_eq!(&src[sends[0].dot..sends[0].dot + 18], ".send_notification");
        assert_eq!(sends[0].receiver, Receiver::Binding("cx".into()));
        assert_eq!(sends[1].receiver, Receiver::Binding("cx".into()));
    }

    #[test]
    fn tells_the_crates_own_update_helper_by_its_argument_and_receiver() {
        let src = "fn f() { self.client.send_notification(SessionUpdate::Plan(p)); self.send_notification(acp::SessionUpdate::Plan(p)); self.0.send_notification(n); x.y().send_notification(n) }";
        let (sends, _) = scan(src, "send_notification");
        assert_eq!(sends.len(), 4);
        assert_eq!(sends[0].receiver, Receiver::SelfField("client".into()));
        assert!(sends[0].takes_update && sends[1].takes_update);
        assert_eq!(sends[1].receiver, Receiver::SelfValue);
        assert_eq!(sends[2].receiver, Receiver::Other);
        assert!(!sends[2].takes_update);
        assert_eq!(sends[3].receiver, Receiver::Other);
    }

    #[test]
    fn finds_respond_calls_with_their_argument() {
        let src = "fn f() { responder.respond_with_result(x.await); self.r.respond(y); r.acp_turn(&acp_turn).respond(z) }";
        let (_, responds) = scan(src, "send_notification");
        assert_eq!(responds.len(), 2);
        assert_eq!(responds[0].receiver, "responder");
        assert_eq!(&src[responds[0].at..responds[0].after], "responder");
        assert!(!responds[0].wrapped);
        assert!(responds[1].wrapped);
        assert_eq!(responds[1].receiver, "r");
    }
}
