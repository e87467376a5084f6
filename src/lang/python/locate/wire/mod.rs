//! Python agents without the SDK: a JSON-RPC loop of their own over stdio. What the protocol
//! fixes is found on the tree instead of the SDK's names, each in its own module: where the
//! method names are ([`methods`]: strings, constants, imported constants), the handler a
//! dispatcher calls for `"session/prompt"` and `"session/cancel"` ([`dispatch`]: a dict of
//! handlers, `if`/`elif`, `match`, a registration call or decorator naming the method, a handler
//! table), every call that writes a `session/update` message ([`follow`]), and the card's writer
//! made from one of them ([`writer`]): `@acp_progress.prompt_handler(wire=lambda acp_params,
//! <handler's params>: ...)`. The handler may be `async def` (the card runs on the agent's loop)
//! or a plain function its loop runs on a worker thread (the card runs on timer threads).

mod by_name;
mod dispatch;
mod follow;
mod methods;
mod resolve;
pub(in crate::lang::python) use resolve::annotated_classes;
#[cfg(test)]
pub(in crate::lang::python) use resolve::tree as parsed_tree;
mod writer;

use super::At;
use super::found::{Anchors, Conn, Handler, Send, is_agent_file};
use crate::config::PythonPins;
use crate::error::{Error, Result};
use crate::lang::anchors::{PromptHandler, Site};
use crate::lang::parts::Parsed;
use crate::lang::python::syntax::*;
use dispatch::dispatched;
use follow::{Sink, follow, origins, serialised, value_dropped};
use methods::Method;
use resolve::class_of;
use writer::{card_built_by, card_writer, receiver, template};

use crate::lang::tree::flow::lost_text;
use crate::lang::tree::line;

/// Whether a file imports the ACP SDK (`import acp`, `from acp...`).
pub fn imports_sdk(p: &Parsed) -> bool {
    let src = p.file.text.as_ref();
    if !mentions_sdk(src) {
        return false;
    }
    let root = p.tree().root_node();
    descendants(root, "import_statement")
        .into_iter()
        .chain(descendants(root, "import_from_statement"))
        .any(|n| {
            let t = text(n, src);
            t.starts_with("import acp") || t.starts_with("from acp")
        })
}

/// The first `session/update` message an agent file of the tree builds by hand (its file's
/// index, its line): an agent that writes its updates itself, whatever SDK it imports.
pub fn hand_built_update(files: &[Parsed]) -> Option<(usize, usize)> {
    let update = Method::of(files, "session/update");
    (0..files.len())
        .filter(|i| is_agent_file(&files[*i]))
        .find_map(|i| {
            origins(files, i, &update)
                .first()
                .map(|o| (i, line(o.node)))
        })
}

/// Where a dispatcher handles `session/prompt` inline (file index, line), when one does.
pub fn inline_prompt(files: &[Parsed]) -> Option<(usize, usize)> {
    dispatch::inline(files, &Method::of(files, "session/prompt")).map(|at| (at.file, line(at.node)))
}

/// The anchors of an agent with its own JSON-RPC loop, or `None` when the tree has no
/// dispatcher of `session/prompt` (and no `prompt` pin names a function).
pub fn locate<'a>(
    decisions: &crate::lang::survey::Decisions,
    files: &'a [Parsed],
    pins: &PythonPins,
) -> Result<Option<Anchors<'a>>> {
    let mut prompts = dispatched(files, &Method::of(files, "session/prompt"));
    if let Some(pin) = &pins.prompt {
        let pin = crate::config::Pin::parse(pin);
        let mut all = prompts.clone();
        for (i, p) in files.iter().enumerate() {
            if p.file.rel == pin.file {
                for d in descendants(p.tree().root_node(), "function_definition") {
                    // (a dispatched handler in the pinned file is a candidate once)
                    if !prompts.iter().any(|a| a.file == i && a.node.id() == d.id()) {
                        all.push(At { file: i, node: d });
                    }
                }
            }
        }
        let found: Vec<(At, String)> = all
            .into_iter()
            .map(|a| (a, qualified_name(a.node, &files[a.file].file.text)))
            .collect();
        let chosen = super::choose(
            decisions,
            files,
            found,
            pins.prompt.as_ref(),
            "ACP prompt handler",
            "prompt",
            || "no dispatcher of `\"session/prompt\"` and no function in the pinned file".into(),
        )?;
        prompts = vec![chosen];
    }
    if prompts.is_empty() {
        return Ok(None);
    }
    let cancels = dispatched(files, &Method::of(files, "session/cancel"));
    let update = Method::of(files, "session/update");
    // the writes of session/update messages
    let mut sinks: Vec<(Sink, String)> = Vec::new();
    let mut sends: Vec<Send> = Vec::new();
    for (i, p) in files.iter().enumerate() {
        if !is_agent_file(p) {
            continue;
        }
        for origin in origins(files, i, &update) {
            let (mut found, lost) = match &origin.writer {
                Some(_) if value_dropped(origin.node) => (Vec::new(), Vec::new()),
                _ => follow(files, i, origin.node),
            };
            // a message object built by a call taking the method, serialised where it is
            // written: the card's message is built by the same call
            if let Some(builder) = &origin.writer {
                for sink in found.iter_mut().filter(|s| serialised(s.carried)) {
                    sink.built = card_built_by(&p.file.text, builder);
                }
            }
            if found.is_empty()
                && let Some(writer) = origin.writer
            {
                found.push(writer); // the call that takes the method and the params writes it
            }
            if found.is_empty() {
                return Err(Error::Unsupported {
                    file: p.file.rel.clone(),
                    line: line(origin.node),
                    message: format!(
                        "acp-patch followed this `session/update` message (through variables, return values, lists and loops, `json.dumps`) to no call that writes it{}",
                        if lost.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", lost_text(files, &lost))
                        }
                    ),
                });
            }
            for sink in found {
                let ssrc = files[sink.file].file.text.as_ref();
                let Some((recv, wrapped)) = receiver(sink.call, ssrc) else {
                    continue;
                };
                if sends
                    .iter()
                    .any(|s| s.anchor.site.file == sink.file && s.call.id() == sink.call.id())
                {
                    continue;
                }
                let t = template(ssrc, &sink, recv, wrapped);
                sends.push(Send::new(
                    At {
                        file: sink.file,
                        node: sink.call,
                    },
                    recv,
                    wrapped,
                    true,
                ));
                sinks.push((sink, t));
            }
        }
    }
    sends.sort_by_key(|s| (s.anchor.site.file, s.anchor.site.range.start));
    sinks.sort_by_key(|(s, _)| (s.file, s.call.start_byte()));
    let mut handlers = Vec::new();
    for prompt in prompts {
        let name = qualified_name(prompt.node, &files[prompt.file].file.text);
        // (a handler an earlier apply patched stays found: revert takes its pieces out)
        let patched = decorators(prompt.node)
            .iter()
            .any(|d| text(*d, &files[prompt.file].file.text).contains("acp_progress."));
        if !patched && let Some((f, l)) = v2_turn_end(files) {
            return Err(Error::Unsupported {
                file: files[prompt.file].file.rel.clone(),
                line: line(prompt.node),
                message: format!(
                    "`{name}` handles session/prompt in the draft protocol v2: the agent writes a `state_update` ({}:{l}), and a v2 turn ends when its session goes idle, after the prompt has been answered; the card opens and closes with the handler, so it would never show. acp-patch does not follow a Python turn past its handler's return yet",
                    files[f].file.rel
                ),
            });
        }
        if !patched && let Some(later) = answered_later(prompt.node, &files[prompt.file].file.text)
        {
            return Err(Error::Unsupported {
                file: files[prompt.file].file.rel.clone(),
                line: line(prompt.node),
                message: format!(
                    "`{name}` handles session/prompt but answers it later: its stop reason is written from a callback it leaves behind (line {}, in `{}`), after the handler has returned; the card opens and closes with the handler, so it would never show. acp-patch does not follow a turn past its handler's return yet",
                    line(later.0),
                    later.1
                ),
            });
        }
        let (lambda, at) = card_writer(decisions, files, prompt, &sinks, pins)?;
        let cancel = cancels
            .iter()
            .find(|c| {
                class_of(c.node).map(|x| x.id()) == class_of(prompt.node).map(|x| x.id())
                    && (c.file == prompt.file || class_of(c.node).is_none())
            })
            .or(cancels.first())
            .copied();
        handlers.push(Handler {
            class: prompt,
            anchor: PromptHandler {
                site: Site::of_node(prompt.file, prompt.node),
                name: name.clone(),
            },
            class_name: name,
            prompt: prompt.node,
            cancel,
            connection: Conn::wire(at, lambda),
            send_kwargs: Vec::new(),
        });
    }
    Ok(Some(Anchors { handlers, sends }))
}

/// A `{"stopReason": ...}` the handler's nested function or lambda writes (an argument of a
/// call, not a value it returns), and that function's name: the handler leaves the answer to a
/// callback (`def finish(stop_reason): self.transport.send(result(request_id, {"stopReason":
/// stop_reason}))`, queued with the turn) and returns before the turn ends.
/// Where an agent file writes a session update of the draft protocol v2's own kind,
/// `{"sessionUpdate": "state_update", ...}` (file index, line): v1 has none, and in v2 the
/// prompt is answered at once (a message id) while the turn goes on until the session goes
/// idle (tantra-harness 2.2.0's own loop).
fn v2_turn_end(files: &[Parsed]) -> Option<(usize, usize)> {
    let unquote = |n: tree_sitter::Node, src: &str| {
        (n.kind() == "string").then(|| text(n, src).trim_matches(['"', '\'']).to_string())
    };
    files.iter().enumerate().find_map(|(i, p)| {
        let src = p.file.text.as_ref();
        if !is_agent_file(p) || !crate::needles::contains(src, "state_update") {
            return None;
        }
        descendants(p.tree().root_node(), "pair")
            .into_iter()
            .find(|pair| {
                pair.child_by_field_name("key")
                    .and_then(|k| unquote(k, src))
                    .is_some_and(|k| k == "sessionUpdate")
                    && pair
                        .child_by_field_name("value")
                        .and_then(|v| unquote(v, src))
                        .is_some_and(|v| v == "state_update")
            })
            .map(|pair| (i, line(pair)))
    })
}

fn answered_later<'a>(
    handler: tree_sitter::Node<'a>,
    src: &'a str,
) -> Option<(tree_sitter::Node<'a>, &'a str)> {
    let body = handler.child_by_field_name("body")?;
    descendants(body, "pair").into_iter().find_map(|pair| {
        let key = pair.child_by_field_name("key")?;
        if text(key, src).trim_matches(['"', '\'']) != "stopReason" {
            return None;
        }
        let mut written = false;
        let mut cur = pair.parent();
        while let Some(n) = cur {
            match n.kind() {
                "argument_list" => written = true,
                "return_statement" => return None,
                "function_definition" | "lambda" if n.id() != handler.id() => {
                    let name = n
                        .child_by_field_name("name")
                        .map_or("lambda", |x| text(x, src));
                    return written.then_some((pair, name));
                }
                _ if n.id() == handler.id() => return None,
                _ => {}
            }
            cur = n.parent();
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::locate;
    use super::resolve::tree;
    use crate::config::PythonPins;

    const SERVER: &str = "import json, sys, threading\n\nPROMPT = \"session/prompt\"\nUPDATE = \"session/update\"\n\n\
        class Out:\n    def __init__(self):\n        self.stream = sys.stdout\n\n    def send(self, sid, update):\n        self.stream.write(json.dumps({\"jsonrpc\": \"2.0\", \"method\": UPDATE, \"params\": {\"sessionId\": sid, \"update\": update}}))\n\n\
        class Agent:\n    def __init__(self, server, out):\n        self.out = out\n        server.register(PROMPT, self.prompt)\n\n    def prompt(self, params):\n        self.out.send(params[\"sessionId\"], {})\n";

    #[test]
    fn a_writer_the_handler_cannot_call_is_refused_naming_what_it_reads() {
        let files = tree(&[("pkg/server.py", SERVER)]);
        let err = match locate(&Default::default(), &files, &PythonPins::default()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a writer reading another class's `self` was taken"),
        };
        assert!(err.contains("pkg/server.py:18"), "{err}");
        assert!(
            err.contains("`Agent.prompt` handles session/prompt"),
            "{err}"
        );
        assert!(err.contains("pkg/server.py:11 reads `self`"), "{err}");
        assert!(err.contains("acp-patch.toml cannot supply"), "{err}");
    }

    #[test]
    fn a_pin_naming_the_dispatched_handler_in_its_own_file_chooses_it() {
        let text = SERVER.replace("self.stream.write(", "sys.stdout.write(");
        let files = tree(&[("pkg/server.py", &text)]);
        let pins = PythonPins {
            prompt: Some("pkg/server.py:Agent.prompt".into()),
            ..Default::default()
        };
        let found = locate(&Default::default(), &files, &pins).unwrap().unwrap();
        let [handler] = &found.handlers[..] else {
            panic!("one handler")
        };
        assert_eq!(handler.class_name, "Agent.prompt");
    }

    #[test]
    fn a_handler_that_answers_from_a_callback_it_leaves_behind_is_refused() {
        let text = SERVER
            .replace("self.stream.write(", "sys.stdout.write(")
            .replace(
                "        self.out.send(params[\"sessionId\"], {})\n",
                "        def finish(reason):\n            sys.stdout.write(json.dumps({\"id\": 1, \"result\": {\"stopReason\": reason}}))\n\n        self.queue.append((params, finish))\n        return None\n",
            );
        let files = tree(&[("pkg/server.py", &text)]);
        let err = match locate(&Default::default(), &files, &PythonPins::default()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a handler answering after its return was patched"),
        };
        assert!(err.contains("pkg/server.py:18"), "{err}");
        assert!(err.contains("answers it later"), "{err}");
        assert!(err.contains("in `finish`"), "{err}");
        // a nested function whose stop reason the handler awaits and returns is no callback
        let awaited = SERVER.replace("self.stream.write(", "sys.stdout.write(").replace(
            "        self.out.send(params[\"sessionId\"], {})\n",
            "        def run():\n            return {\"stopReason\": \"end_turn\"}\n\n        return run()\n",
        );
        let files = tree(&[("pkg/server.py", &awaited)]);
        assert!(locate(&Default::default(), &files, &PythonPins::default()).is_ok());
    }

    #[test]
    fn an_agent_on_the_draft_protocol_v2_is_refused_at_its_handler() {
        // v2 answers the prompt at once and ends the turn with `state_update` idle, after the
        // handler returned (tantra-harness 2.2.0)
        let text = SERVER.replace("self.stream.write(", "sys.stdout.write(").replace(
            "self.out.send(params[\"sessionId\"], {})",
            "self.out.send(params[\"sessionId\"], {\"sessionUpdate\": \"state_update\", \"state\": \"running\"})\n        return {\"messageId\": \"m1\"}",
        );
        let files = tree(&[("pkg/server.py", &text)]);
        let err = match locate(&Default::default(), &files, &PythonPins::default()) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a v2 agent was patched as v1"),
        };
        assert!(err.contains("pkg/server.py:18"), "{err}");
        assert!(err.contains("draft protocol v2"), "{err}");
        assert!(err.contains("`state_update` (pkg/server.py:19)"), "{err}");
    }

    #[test]
    fn a_synchronous_handler_gets_the_writer_it_can_call() {
        let text = SERVER.replace("self.stream.write(", "sys.stdout.write(");
        let files = tree(&[("pkg/server.py", &text)]);
        let found = locate(&Default::default(), &files, &PythonPins::default())
            .unwrap()
            .unwrap();
        let [handler] = &found.handlers[..] else {
            panic!("one handler")
        };
        assert_eq!(handler.class_name, "Agent.prompt");
        match &handler.connection.reach {
            crate::lang::python::locate::found::Reach::Wire => assert_eq!(
                handler.connection.anchor.text,
                "lambda acp_params, *_, **__: sys.stdout.write(json.dumps({\"jsonrpc\": \"2.0\", \"method\": \"session/update\", \"params\": acp_params}))"
            ),
            _ => panic!("the agent's own writer"),
        }
        assert_eq!(found.sends.len(), 1);
    }
}
