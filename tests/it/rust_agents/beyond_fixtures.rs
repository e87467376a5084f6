//! Beyond the fixture runner (tests/it/fixtures.rs runs every case's steps).

use super::*;

#[test]
fn every_case_changes_the_agents_own_files_by_insertions_only() {
    for c in cases() {
        let dir = applied(&c);
        for (rel, before) in snapshot_tree(&c.before()) {
            let after = std::fs::read(dir.path().join(&rel)).unwrap();
            let after = String::from_utf8_lossy(&after);
            assert!(
                only_insertions(&String::from_utf8_lossy(&before), &unmoved(&after)),
                "{}: {rel} changed other than by insertions",
                c.name
            );
        }
    }
}

/// The one edit of an agent's own code that is no insertion, undone: a message built inline
/// in a write moves into the loop apply wraps the write in (an agent without an SDK),
/// `for acp_message in crate::acp_progress::wire(<message>) { <write with acp_message> }`;
/// the message is put back in the write and the loop taken out.
fn unmoved(text: &str) -> String {
    const HEAD: &str = "for acp_message in ";
    let mut out = text.to_string();
    while let Some(at) = out.find(HEAD) {
        let rest = &out[at + HEAD.len()..];
        let call =
            rest.find("acp_progress::wire(").expect("a wire call") + "acp_progress::wire(".len();
        let arg_end = call + closing(&rest[call..]);
        let arg = rest[call..arg_end].to_string();
        let body_start = arg_end + ") { ".len();
        let body_end = body_start + closing(&rest[body_start..]) - 1; // ` }`
        let body = &rest[body_start..body_end];
        let k = body.find("acp_message").expect("the message's place");
        let write = format!("{}{arg}{}", &body[..k], &body[k + "acp_message".len()..]);
        let end = at + HEAD.len() + body_end + 2;
        out.replace_range(at..end, &write);
    }
    out
}

/// The length of text up to the bracket that closes one already open (string literals
/// skipped).
fn closing(s: &str) -> usize {
    let (mut depth, mut in_str, mut escaped) = (0i32, false, false);
    for (i, c) in s.char_indices() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' if depth == 0 => return i,
            ')' | '}' | ']' => depth -= 1,
            _ => {}
        }
    }
    s.len()
}
