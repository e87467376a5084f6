//! What verify proves about placement (names bound where read, the turn opened before the
//! handler's work, every send wrapped) and what apply mends in a tree patched before or edited
//! by hand: only the missing pieces, a runtime module refused when edited, replaced when out
//! of date.

use super::*;

#[test]
fn verify_reports_a_turn_that_reads_a_name_before_it_is_bound() {
    // the Hermes-fork trap in TypeScript: a patch that reads `conn` where nothing binds it yet
    let dir = applied("sdk1_agent");
    edit(
        dir.path(),
        "src/agent.ts",
        "return acpProgress.turn(this.conn, params.sessionId, async () => {",
        "return acpProgress.turn(conn, params.sessionId, async () => {\n    const conn = this.conn",
    );
    let v = verify(dir.path());
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  bound"), "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "src/agent.ts:26: the turn start reads `conn`, which is not bound where it runs"
        ),
        "{}",
        v.stdout
    );
}

#[test]
fn verify_reports_a_turn_that_opens_after_the_handler_began() {
    let dir = applied("sdk1_agent");
    edit(
        dir.path(),
        "src/agent.ts",
        "    return acpProgress.turn(this.conn, params.sessionId, async () => {\n",
        "    await this.update(params.sessionId, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '...' } })\n    return acpProgress.turn(this.conn, params.sessionId, async () => {\n",
    );
    let v = verify(dir.path());
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "src/agent.ts:27: `EchoAgent.prompt` runs 1 statement(s) before the turn opens"
        ),
        "{}",
        v.stdout
    );
}

#[test]
fn verify_reports_an_unwrapped_send_with_its_place_and_apply_wraps_it() {
    let dir = applied("inline_switch");
    edit(
        dir.path(),
        "src/agent.ts",
        "  async authenticate(",
        "  async notice(sessionId: string): Promise<void> {\n    await this.client.sessionUpdate({ sessionId, update: { sessionUpdate: \"agent_message_chunk\", content: { type: \"text\", text: \"hi\" } } });\n  }\n\n  async authenticate(",
    );
    let v = verify(dir.path());
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  sends"), "{}", v.stdout);
    assert!(
        v.stdout
            .contains("apply inserts the emitter around the send at src/agent.ts:63"),
        "{}",
        v.stdout
    );
    let run = acp_patch(&["apply", "--allow-dirty", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("src/agent.ts:63  emitter around the send"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("inserted 1 pieces into 1 files"),
        "{}",
        run.stderr
    );
    assert_eq!(verify(dir.path()).code, 0);
}

#[test]
fn partially_patched_tree_gets_only_the_missing_pieces() {
    let full = applied("sdk2_agent");
    let patched = read(full.path(), "src/main.ts");
    let dir = copy_tree(full.path());
    edit(
        dir.path(),
        "src/main.ts",
        "acpProgress.cancelHandler(({ params }) => lumen.cancel(params))",
        "({ params }) => lumen.cancel(params)",
    );
    let v = verify(dir.path());
    assert_eq!(v.code, 1);
    assert!(v.stdout.contains("malformed  turn_end"), "{}", v.stdout);
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("inserted 1 pieces"), "{}", run.stderr);
    assert_eq!(read(dir.path(), "src/main.ts"), patched);
}

#[test]
fn a_hand_edited_runtime_module_is_refused_by_apply_verify_and_revert() {
    let dir = applied("sdk1_agent");
    let current = read(dir.path(), "src/acp-progress.ts");
    let edited = current.replace(
        "export function buildThinkingProgress",
        "function mine(): void {}\n\nexport function buildThinkingProgress",
    );
    write(dir.path(), "src/acp-progress.ts", &edited);
    let line = edited
        .lines()
        .position(|l| l.contains("function mine"))
        .unwrap()
        + 1;
    let at = format!("src/acp-progress.ts:{line}");
    let v = verify(dir.path());
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  runtime"), "{}", v.stdout);
    assert!(
        v.stdout.contains(&format!(
            "{at}: the runtime module was edited by hand since acp-patch wrote it"
        )) && !v.stdout.contains("out of date"),
        "{}",
        v.stdout
    );
    assert!(
        v.stdout.contains(&format!("the runtime module was edited by hand ({at}), so `acp-patch apply` and `acp-patch revert` refuse the tree: restore it (undo the edit) or remove it"))
            && !v.stdout.contains("apply` inserts what is missing"),
        "{}",
        v.stdout
    );
    refused_by_every_writer(
        dir.path(),
        &[&format!("{at}: the runtime module was edited by hand")],
    );
}

#[test]
fn an_out_of_date_runtime_module_is_replaced_whole() {
    let dir = applied("sdk1_agent");
    let current = read(dir.path(), "src/acp-progress.ts");
    let old = current.replace(
        "export function buildThinkingProgress",
        "function unused(): void {}\n\nexport function buildThinkingProgress",
    );
    // as an earlier release wrote it: its checksum matches its text
    write(dir.path(), "src/acp-progress.ts", &resealed(&old));
    let v = verify(dir.path());
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  runtime"), "{}", v.stdout);
    assert!(
        v.stdout.contains("src/acp-progress.ts:1: out of date"),
        "{}",
        v.stdout
    );
    let dry = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert!(
        dry.stdout.contains("-function unused(): void {}"),
        "{}",
        dry.stdout
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(read(dir.path(), "src/acp-progress.ts"), current);
    assert_eq!(verify(dir.path()).code, 0);
}

#[test]
fn a_file_of_the_agent_where_the_module_goes_is_never_overwritten() {
    let dir = copy_tree(&before("sdk1_agent"));
    write(dir.path(), "src/acp-progress.ts", "export const mine = 1\n");
    let pristine = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("src/acp-progress.ts:1: this file is not acp-patch's runtime module"),
        "{}",
        run.stderr
    );
    assert_eq!(pristine, snapshot_tree(dir.path()));
}

#[test]
fn apply_at_a_monorepo_root_spells_imports_from_the_agent() {
    let root = tempfile::tempdir().unwrap();
    copy_into(
        &before("per_kind_helpers"),
        &root.path().join("services/pike"),
    );
    write(root.path(), "README.md", "# monorepo\n");
    let run = acp_patch(&["apply", path_str(root.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let agent = read(root.path(), "services/pike/src/agent.mts");
    assert!(
        agent.contains("import * as acpProgress from './acp-progress.mjs'\n"),
        "{agent}"
    );
    assert!(
        root.path()
            .join("services/pike/src/acp-progress.mts")
            .is_file()
    );
    assert_eq!(verify(root.path()).code, 0);
    let pike = root.path().join("services/pike");
    link_node_modules(&pike, "sdk1_agent");
    tsc(&pike, "sdk1_agent");
}

#[test]
fn verify_reports_a_session_id_read_from_the_wrong_object() {
    // the handlers are handed the whole JSON-RPC request: a turn or cancel reading
    // `request.sessionId` (undefined: the card would go out on no session) is malformed
    let dir = applied("raw_envelope");
    edit(
        dir.path(),
        "src/server.ts",
        "request.params.sessionId, async () => {",
        "request.sessionId, async () => {",
    );
    edit(
        dir.path(),
        "src/server.ts",
        "acpProgress.cancel(request.params.sessionId);",
        "acpProgress.cancel(request.sessionId);",
    );
    let v = verify(dir.path());
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  bound"), "{}", v.stdout);
    for what in ["turn start", "cancel"] {
        assert!(
            v.stdout.contains(&format!(
                "the {what} reads the session id as `request.sessionId`, but"
            )) && v.stdout.contains("is handed the whole JSON-RPC message"),
            "{what}: {}",
            v.stdout
        );
    }
    assert!(!v.stdout.contains("checks hold"), "{}", v.stdout);
}

/// A package whose program runs a JavaScript build of the agent beside the TypeScript sources
/// the patch goes into (oh-my-pi 18.3.4: `bin` runs `dist/cli.js`, a bundle; `src/` is shipped
/// for its library exports): apply and verify say the build is not patched. A package whose
/// program is the patched file itself says nothing of the kind.
#[test]
fn a_bin_build_beside_the_patched_sources_is_noted() {
    let dir = copy_tree(&before("sdk_subpath_import"));
    for args in [&["apply", "--dry-run"][..], &["verify"][..]] {
        let run = acp_patch(&[args, &[path_str(dir.path())]].concat(), None);
        assert!(
            run.stderr.contains(
                "note: dist/cli.js: the package's program `echo` runs this JavaScript build"
            ),
            "{args:?}: {}",
            run.stderr
        );
    }
    let dir = copy_tree(&before("js_commonjs"));
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stderr.contains("program"), "{}", run.stderr);
}

/// A package whose program is a small launcher in the build (deepseek-acp 0.9.0: `bin` runs
/// lib/bin.js, which imports lib/launcher/boot.js, which imports lib/index.js, the agent; the
/// sources in src/): the note names the build the launcher's imports reach and the way there,
/// followed through `import()`, `export ... from`, `require()` and a folder's index. A launcher
/// that runs the sources, or reaches no agent, says nothing of the kind.
#[test]
fn a_bin_launcher_importing_the_build_beside_the_patched_sources_is_noted() {
    let dir = copy_tree(&before("sdk_subpath_import"));
    edit(
        dir.path(),
        "package.json",
        "\"dist/cli.js\"",
        "\"dist/bin.js\"",
    );
    write(
        dir.path(),
        "dist/bin.js",
        "#!/usr/bin/env node\n// the launcher: what the bin runs\nimport(\"./launcher/boot.js\");\n",
    );
    write(
        dir.path(),
        "dist/launcher/boot.js",
        "import { argv } from \"node:process\";\nexport * from \"../cli.js\";\n",
    );
    for args in [&["apply", "--dry-run"][..], &["verify"][..]] {
        let run = acp_patch(&[args, &[path_str(dir.path())]].concat(), None);
        assert!(
            run.stderr.contains(
                "note: dist/cli.js: the package's program `echo` runs this JavaScript build (its bin's imports lead there: dist/bin.js -> dist/launcher/boot.js -> dist/cli.js), which holds the agent too and is not patched"
            ),
            "{args:?}: {}",
            run.stderr
        );
    }
    // CommonJS: `require()` of a folder, its index loading the build
    write(
        dir.path(),
        "dist/bin.cjs",
        "#!/usr/bin/env node\nrequire(\"./launcher\");\n",
    );
    write(
        dir.path(),
        "dist/launcher/index.js",
        "require(\"./boot.js\");\n",
    );
    edit(
        dir.path(),
        "package.json",
        "\"dist/bin.js\"",
        "\"dist/bin.cjs\"",
    );
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert!(
        run.stderr.contains(
            "note: dist/cli.js: the package's program `echo` runs this JavaScript build (its bin's imports lead there: dist/bin.cjs -> dist/launcher/index.js -> dist/launcher/boot.js -> dist/cli.js), which holds the agent too and is not patched"
        ),
        "{}",
        run.stderr
    );
    // a launcher running the sources (the patch), or a module holding no agent: no note
    for launcher in [
        "import \"../src/agent.ts\";\n",
        "import { argv } from \"./launcher/args.js\";\nconsole.log(argv);\n",
    ] {
        write(
            dir.path(),
            "dist/launcher/args.js",
            "export const argv = [];\n",
        );
        write(dir.path(), "dist/bin.cjs", launcher);
        let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            !run.stderr.contains("program"),
            "{launcher}: {}",
            run.stderr
        );
    }
}

/// A client of agents beside none (acpx 0.1.15): its class builds the SDK's
/// `ClientSideConnection` and its `prompt` calls that connection's. No agent: nothing listed to
/// pin, and a pin on it is refused with why.
#[test]
fn a_class_driving_an_agent_through_a_client_side_connection_is_no_prompt_handler() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "package.json",
        r#"{ "name": "driver", "type": "module" }"#,
    );
    write(
        dir.path(),
        "cli.js",
        "import { ClientSideConnection, ndJsonStream } from \"@agentclientprotocol/sdk\";\n\
         export class Driver {\n\
         \x20 start(input, output) {\n\
         \x20   this.connection = new ClientSideConnection(() => ({ sessionUpdate: async () => {} }), ndJsonStream(input, output));\n\
         \x20 }\n\
         \x20 async prompt(sessionId, text) {\n\
         \x20   return this.connection.prompt({ sessionId, prompt: [{ type: \"text\", text }] });\n\
         \x20 }\n\
         }\n",
    );
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("no ACP agent found"), "{}", run.stderr);
    assert!(!run.stderr.contains("Driver.prompt"), "{}", run.stderr);
    write(
        dir.path(),
        "acp-patch.toml",
        "[typescript]\nprompt = \"cli.js:Driver.prompt\"\n",
    );
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "names no prompt handler: its class builds a `ClientSideConnection` (line 4): the client side of the protocol"
        ),
        "{}",
        run.stderr
    );
}

/// A client library's wrapper (acp-http-client 0.4.2, use-acp 0.2.6): a class that answers
/// `initialize`, `newSession`, `prompt`, `cancel` by handing each on to a
/// `ClientSideConnection`, built in the class or handed to its constructor by another module.
/// It was offered as a pin, and that pin then refused for want of a connection; it holds no
/// agent, and a pin on it is refused with why.
#[test]
fn a_wrapper_handing_the_prompt_on_to_a_client_side_connection_is_no_prompt_handler() {
    // the tree's files, the pin on the wrapper's `prompt`, why the pin is refused
    type Case = (
        &'static [(&'static str, &'static str)],
        &'static str,
        &'static str,
    );
    let cases: [Case; 2] = [
        (
            &[(
                "dist/index.js",
                "import { ClientSideConnection } from \"@agentclientprotocol/sdk\";\n\
                 export class TinyClient {\n\
                 \x20 constructor(stream, handlers) {\n\
                 \x20   this.connection = new ClientSideConnection(() => handlers, stream);\n\
                 \x20 }\n\
                 \x20 async initialize(request) { return this.connection.initialize(request); }\n\
                 \x20 async newSession(request) { return this.connection.newSession(request); }\n\
                 \x20 async prompt(request) { return this.connection.prompt(request); }\n\
                 \x20 async cancel(n) { return this.connection.cancel(n); }\n\
                 }\n",
            )],
            "dist/index.js:TinyClient.prompt",
            "names no prompt handler: it hands the prompt on to `this.connection` (line 8), a `ClientSideConnection`: the client side of the protocol",
        ),
        (
            &[
                (
                    "dist/wrapper.js",
                    "export class ListeningAgent {\n\
                     \x20 constructor(agent, callbacks) {\n\
                     \x20   this.agent = agent;\n\
                     \x20   this.callbacks = callbacks;\n\
                     \x20 }\n\
                     \x20 async newSession(params) { return this.agent.newSession(params); }\n\
                     \x20 async prompt(params) {\n\
                     \x20   const response = await this.agent.prompt(params);\n\
                     \x20   this.callbacks.onPromptEnd?.(response);\n\
                     \x20   return response;\n\
                     \x20 }\n\
                     }\n",
                ),
                (
                    "dist/hook.js",
                    "import { ClientSideConnection } from \"@agentclientprotocol/sdk\";\n\
                     import { ListeningAgent } from \"./wrapper.js\";\n\
                     export function connect(stream, handlers, callbacks) {\n\
                     \x20 const conn = new ClientSideConnection(() => handlers, stream);\n\
                     \x20 return new ListeningAgent(conn, callbacks);\n\
                     }\n",
                ),
            ],
            "dist/wrapper.js:ListeningAgent.prompt",
            "names no prompt handler: it hands the prompt on to `this.agent` (line 8), a `ClientSideConnection`: the client side of the protocol",
        ),
    ];
    for (files, pin, why) in cases {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "package.json",
            r#"{ "name": "client", "type": "module" }"#,
        );
        for (rel, text) in files {
            write(dir.path(), rel, text);
        }
        let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(run.stderr.contains("no ACP agent found"), "{}", run.stderr);
        assert!(!run.stderr.contains("pin one"), "{}", run.stderr);
        write(
            dir.path(),
            "acp-patch.toml",
            &format!("[typescript]\nprompt = \"{pin}\"\n"),
        );
        let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(run.stderr.contains(why), "{}", run.stderr);
    }
}

/// sandbox-agent 0.4.2's shape: a client routes its outgoing requests by method, and its
/// `"session/prompt"` branch rewrites the prompt with a helper under an `if` before a client
/// library sends it on. The helper was taken for the handler ("could not locate the connection:
/// `injectReplayPrompt` … handles session/prompt"); a call under an `if` is a path the branch
/// may take, and what the branch hands the request to here is no function of the tree.
#[test]
fn a_client_routing_its_outgoing_prompt_holds_no_agent() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "package.json",
        r#"{ "name": "router", "type": "module" }"#,
    );
    write(
        dir.path(),
        "dist/index.js",
        "import { AcpHttpClient } from \"acp-http-client\";\n\
         export class LiveConnection {\n\
         \x20 constructor(baseUrl) { this.acp = new AcpHttpClient({ baseUrl }); this.replays = new Map(); }\n\
         \x20 async sendSessionMethod(sessionId, method, params) {\n\
         \x20   if (method === \"session/prompt\") {\n\
         \x20     const replay = this.replays.get(sessionId);\n\
         \x20     if (replay) {\n\
         \x20       injectReplayPrompt(params, replay);\n\
         \x20     }\n\
         \x20     return this.acp.prompt(params);\n\
         \x20   }\n\
         \x20   throw new Error(`unsupported method ${method}`);\n\
         \x20 }\n\
         }\n\
         function injectReplayPrompt(params, text) {\n\
         \x20 params.prompt = [{ type: \"text\", text }, ...(params.prompt ?? [])];\n\
         }\n",
    );
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("no ACP agent found"), "{}", run.stderr);
    assert!(!run.stderr.contains("injectReplayPrompt"), "{}", run.stderr);
}

/// The class the connection's factory builds extends an installed base and inherits its
/// `prompt`: the error names the class, the base and the override that gives the tree a
/// handler; with that override the agent is patched, its connection the one the base keeps.
#[test]
fn a_built_class_inheriting_prompt_from_outside_is_named_with_the_override_to_add() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "package.json",
        r#"{ "name": "mine", "type": "module" }"#,
    );
    let agent = "import { AgentSideConnection, ndJsonStream } from \"@agentclientprotocol/sdk\";\n\
                 import { ChatAgent } from \"chatkit\";\n\
                 \n\
                 class Mine extends ChatAgent {\n\
                 \x20 async newSession(params: any): Promise<any> {\n\
                 \x20   return super.newSession(params);\n\
                 \x20 }\n\
                 }\n\
                 \n\
                 new AgentSideConnection((conn) => new Mine(conn), ndJsonStream(process.stdout as any, process.stdin as any));\n";
    write(dir.path(), "src/index.ts", agent);
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("`Mine` (src/index.ts:4) is what the connection's factory builds, but it inherits `prompt` from `ChatAgent`, outside the tree")
            && run.stderr.contains("`async prompt(params) { return super.prompt(params) }`"),
        "{}",
        run.stderr
    );
    let overridden = agent.replace(
        "  async newSession",
        "  async prompt(params: any): Promise<any> {\n    return super.prompt(params);\n  }\n  async newSession",
    );
    write(dir.path(), "src/index.ts", &overridden);
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "+    return acpProgress.turn(acpProgress.held(this), params.sessionId, async () => {"
        ),
        "{}",
        run.stdout
    );
}
