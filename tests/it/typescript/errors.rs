//! What apply and verify say when a site cannot be decided or a pin is wrong: a clear error
//! with file:line, nothing written, a pin that works.

use super::*;

#[test]
fn env_prefix_renames_every_variable() {
    let dir = copy_tree(&before("sdk2_agent"));
    let run = acp_patch(
        &[
            "apply",
            "--dry-run",
            "--env-prefix",
            "LUMEN",
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // the module reads every variable as `${PREFIX}_${name}`
    assert!(run.stdout.contains("LUMEN_${name}"), "{}", run.stdout);
    assert!(
        !run.stdout.contains("ACP_${name}"),
        "an ACP_ variable was left unprefixed"
    );
    assert!(
        run.stdout.contains("LUMEN_THINK_GAP_MS"),
        "the gap's variable is named in its doc"
    );
}

#[test]
fn inserted_code_never_writes_to_stdout() {
    for e in std::fs::read_dir(fixture("typescript")).unwrap() {
        let diff = e.unwrap().path().join("expected.diff");
        let Ok(diff) = std::fs::read_to_string(&diff) else {
            continue;
        };
        for l in diff.lines().filter(|l| l.starts_with('+')) {
            assert!(
                !l.contains("console.log") && !l.contains("console.info"),
                "{l}"
            );
            // the only stdout an insertion names is the agent's own JSON-RPC writer (the start
            // card of an agent without an SDK goes out the way its updates do)
            if l.contains("process.stdout") {
                assert!(
                    l.contains("acpProgress.") && l.contains("\"session/update\""),
                    "{l}"
                );
            }
        }
    }
}

#[test]
fn test_files_are_neither_patched_nor_counted() {
    let dir = copy_tree(&before("sdk1_agent"));
    let double = "import { EchoAgent } from '../src/agent.js'\n\nconst client = { sessionUpdate: async (_n: unknown) => {} }\nvoid client.sessionUpdate({ sessionId: 's', update: {} })\nexport const agent = new EchoAgent(client as never)\n";
    write(dir.path(), "test/agent.test.ts", double);
    write(dir.path(), "src/agent.spec.ts", double);
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(read(dir.path(), "test/agent.test.ts"), double);
    assert_eq!(read(dir.path(), "src/agent.spec.ts"), double);
    assert_eq!(verify(dir.path()).code, 0);
}

#[test]
fn every_sdk_bound_class_is_covered() {
    // two agent classes, each built by its own AgentSideConnection factory (say, two binaries)
    let dir = copy_tree(&before("sdk1_agent"));
    let agent = read(dir.path(), "src/agent.ts");
    write(
        dir.path(),
        "src/other.ts",
        &agent.replace("EchoAgent", "OtherAgent"),
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for rel in ["src/agent.ts", "src/other.ts"] {
        let text = read(dir.path(), rel);
        assert!(
            text.contains("return acpProgress.turn(this.conn, params.sessionId, async () => {"),
            "{rel}"
        );
        assert!(
            text.contains("acpProgress.cancel(params.sessionId)"),
            "{rel}"
        );
        assert!(
            text.contains("acpProgress.emitter(this.conn).sessionUpdate("),
            "{rel}"
        );
    }
    let v = verify(dir.path());
    assert_eq!(v.code, 0, "{}", v.stdout);
    link_node_modules(dir.path(), "sdk1_agent");
    tsc(dir.path(), "sdk1_agent");
}

#[test]
fn a_factory_function_of_the_file_is_followed() {
    let dir = copy_tree(&before("sdk1_agent"));
    edit(
        dir.path(),
        "src/agent.ts",
        "new acp.AgentSideConnection(conn => new EchoAgent(conn), stream)",
        "new acp.AgentSideConnection(makeAgent, stream)\nfunction makeAgent(conn: acp.AgentSideConnection): acp.Agent {\n  return new EchoAgent(conn)\n}",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        read(dir.path(), "src/agent.ts")
            .contains("acpProgress.turn(this.conn, params.sessionId, async () => {")
    );
}

#[test]
fn a_prompt_handler_no_sdk_binding_names_is_listed_and_pinnable() {
    // the factory hides the class behind an object acp-patch does not follow
    let dir = copy_tree(&before("sdk1_agent"));
    edit(
        dir.path(),
        "src/agent.ts",
        "new acp.AgentSideConnection(conn => new EchoAgent(conn), stream)",
        "new acp.AgentSideConnection(conn => registry.create(conn), stream)",
    );
    edit(
        dir.path(),
        "src/agent.ts",
        "const stream = ",
        "const registry = { create: (conn: acp.AgentSideConnection): acp.Agent => new EchoAgent(conn) }\nconst stream = ",
    );
    let pristine = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("found 1 candidates for the prompt handler"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("src/agent.ts:24  EchoAgent.prompt"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("prompt = \"src/agent.ts:EchoAgent.prompt\""),
        "{}",
        run.stderr
    );
    assert_eq!(
        pristine,
        snapshot_tree(dir.path()),
        "nothing may be written"
    );

    // the pin it suggests is accepted; the connection is the field its sends use
    let config = read(dir.path(), "acp-patch.toml");
    write(
        dir.path(),
        "acp-patch.toml",
        &format!("{config}\n[typescript]\nprompt = \"src/agent.ts:EchoAgent.prompt\"\n"),
    );
    let run = acp_patch(&["apply", "--allow-dirty", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        read(dir.path(), "src/agent.ts")
            .contains("acpProgress.turn(this.conn, params.sessionId, async () => {")
    );
    assert_eq!(verify(dir.path()).code, 0);
}

#[test]
fn two_agents_of_a_monorepo_get_a_runtime_module_each() {
    let root = tempfile::tempdir().unwrap();
    copy_into(&before("sdk1_agent"), &root.path().join("services/echo"));
    copy_into(
        &before("per_kind_helpers"),
        &root.path().join("services/pike"),
    );
    let run = acp_patch(&["apply", path_str(root.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for (agent, module, import) in [
        (
            "services/echo/src/agent.ts",
            "services/echo/src/acp-progress.ts",
            "import * as acpProgress from './acp-progress.js'\n",
        ),
        (
            "services/pike/src/agent.mts",
            "services/pike/src/acp-progress.mts",
            "import * as acpProgress from './acp-progress.mjs'\n",
        ),
    ] {
        assert!(read(root.path(), agent).contains(import), "{agent}");
        assert!(root.path().join(module).is_file(), "{module}");
    }
    assert_eq!(verify(root.path()).code, 0);
    for (dir, deps) in [
        ("services/echo", "sdk1_agent"),
        ("services/pike", "sdk1_agent"),
    ] {
        let d = root.path().join(dir);
        link_node_modules(&d, deps);
        tsc(&d, deps);
    }
}

#[test]
fn a_prompt_pin_that_matches_nothing_names_what_it_looked_for() {
    let dir = copy_tree(&before("sdk1_agent"));
    write(
        dir.path(),
        "acp-patch.toml",
        "[typescript]\nprompt = \"src/agent.ts:EchoAgent.run\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("the pin `prompt = \"src/agent.ts:EchoAgent.run\"` matches nothing: no prompt handler named `EchoAgent.run` in src/agent.ts; candidates seen: src/agent.ts:EchoAgent.prompt (24)"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_unknown_connection_lists_only_the_fields_that_may_be_the_connection() {
    // the factory's argument reaches the fields through calls acp-patch does not follow
    let dir = copy_tree(&before("sdk1_agent"));
    edit(
        dir.path(),
        "src/agent.ts",
        "  constructor(private readonly conn: acp.AgentSideConnection, llm?: ChatClient) {\n    this.llm = llm ?? new ChatClient()\n  }",
        "  private conn!: acp.AgentSideConnection\n  private readonly link: acp.AgentSideConnection\n\n  constructor(conn: acp.AgentSideConnection, llm?: ChatClient) {\n    this.llm = llm ?? new ChatClient()\n    this.link = keep(conn)\n    this.attach(conn)\n  }\n\n  private attach(conn: acp.AgentSideConnection): void {\n    this.conn = conn\n  }",
    );
    edit(
        dir.path(),
        "src/agent.ts",
        "export class EchoAgent",
        "function keep<T>(value: T): T {\n  return value\n}\n\nexport class EchoAgent",
    );
    typecheck_copy(dir.path(), "sdk1_agent");
    let pristine = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("could not locate the connection: `EchoAgent.prompt` at src/agent.ts:"),
        "{}",
        run.stderr
    );
    // only what may be the connection: `link` is made of the factory's argument; `turns` and
    // `llm` are set before a prompt too, but a card sent through them would fail at run time
    assert!(
        run.stderr
            .contains("candidates a pin accepts:\n    src/agent.ts:"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("  EchoAgent.link\n"), "{}", run.stderr);
    assert!(
        !run.stderr.contains("EchoAgent.turns") && !run.stderr.contains("EchoAgent.llm"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("[typescript]\n    connection = \"src/agent.ts:EchoAgent.link\""),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("path/to/file"), "{}", run.stderr);
    assert_eq!(pristine, snapshot_tree(dir.path()));

    // a pin naming a field set only later is refused, with the fields it may name
    let config = read(dir.path(), "acp-patch.toml");
    write(
        dir.path(),
        "acp-patch.toml",
        &format!("{config}\n[typescript]\nconnection = \"src/agent.ts:EchoAgent.conn\"\n"),
    );
    let run = acp_patch(&["apply", "--allow-dirty", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("names a field that EchoAgent never sets before a prompt"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("[typescript]\n    connection = \"src/agent.ts:EchoAgent.link\""),
        "{}",
        run.stderr
    );

    // one it lists is accepted
    write(
        dir.path(),
        "acp-patch.toml",
        &format!("{config}\n[typescript]\nconnection = \"src/agent.ts:EchoAgent.link\"\n"),
    );
    let run = acp_patch(&["apply", "--allow-dirty", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        read(dir.path(), "src/agent.ts").contains("acpProgress.turn(this.link, params.sessionId")
    );
    let v = verify(dir.path());
    assert_eq!(v.code, 0, "{}", v.stdout);
    assert!(
        v.stdout
            .contains("`this.link`: pinned in acp-patch.toml (assigned in the constructor)"),
        "{}",
        v.stdout
    );
    link_node_modules(dir.path(), "sdk1_agent");
    tsc(dir.path(), "sdk1_agent");
}

#[test]
fn syntax_error_in_the_agent_aborts_with_its_location() {
    let dir = copy_tree(&before("sdk2_agent"));
    let mut agent = read(dir.path(), "src/agent.ts");
    agent.push_str("\nfunction broken( {\n");
    write(dir.path(), "src/agent.ts", &agent);
    let pristine = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("src/agent.ts:"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(pristine, snapshot_tree(dir.path()));
    assert_eq!(verify(dir.path()).code, 2);
}

#[test]
fn a_tsx_file_parses_with_the_tsx_grammar() {
    // JSX would be a syntax error to the TypeScript grammar: the agent file must still be patched
    let dir = applied("tsx_agent");
    let agent = read(dir.path(), "src/agent.tsx");
    assert!(agent.contains("return acpProgress.turn(this.client, params.sessionId, async () => {"));
    let v = verify(dir.path());
    assert!(
        v.stdout
            .contains("ok         parses          src/acp-progress.ts, src/agent.tsx"),
        "{}",
        v.stdout
    );
    // and a real syntax error in a .tsx file is still one
    let broken = copy_tree(&before("tsx_agent"));
    edit(
        broken.path(),
        "src/agent.tsx",
        "<b>{props.name}</b>",
        "<b>{props.name</b>",
    );
    let run = acp_patch(&["apply", path_str(broken.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stderr.contains("src/agent.tsx:"), "{}", run.stderr);
}

#[test]
fn duplicated_hook_call_is_reported() {
    let dir = applied("sdk2_agent");
    let extra = "\nexport function stray(owner: { agentProgressCallback?: AcpProgressCallback }): void {\n  owner.agentProgressCallback?.(\"start\", \"llm_response\", {});\n}\n";
    write(
        dir.path(),
        "src/acp-progress.ts",
        &format!("{}{extra}", read(dir.path(), "src/acp-progress.ts")),
    );
    let v = verify(dir.path());
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("duplicated hook.start"), "{}", v.stdout);
    assert!(v.stdout.contains("2 calls with \"start\""), "{}", v.stdout);
}

#[test]
fn engine_pins_keep_the_engine_strategy() {
    // pins of the engine sites choose the engine strategy even for an agent it does not detect
    let dir = copy_tree(&before("sdk1_agent"));
    write(
        dir.path(),
        "acp-patch.toml",
        "[typescript]\nemitter = \"src/agent.ts:EchoAgent.update\"\n",
    );
    let v = verify(dir.path());
    assert!(
        v.stdout.contains("engine shape") || v.stderr.contains("hand-off"),
        "{}{}",
        v.stdout,
        v.stderr
    );
}

#[test]
fn compiled_javascript_beside_typescript_sources_is_left_alone() {
    // a built dist/ next to the sources: only the sources are the agent's code
    let dir = copy_tree(&before("sdk1_agent"));
    let js = "import * as acp from '@agentclientprotocol/sdk'\nexport class EchoAgent {\n  constructor(conn) { this.conn = conn }\n  async prompt(params) { await this.conn.sessionUpdate({ sessionId: params.sessionId, update: {} }); return { stopReason: 'end_turn' } }\n}\nnew acp.AgentSideConnection((conn) => new EchoAgent(conn), null)\n";
    write(dir.path(), "dist/agent.js", js);
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(read(dir.path(), "dist/agent.js"), js);
    assert!(!run.stderr.contains("dist/"), "{}", run.stderr);
    // without the sources, the JavaScript is the agent (an installed package)
    let only_js = tempfile::tempdir().unwrap();
    write(only_js.path(), "package.json", "{ \"type\": \"module\" }\n");
    write(only_js.path(), "dist/agent.js", js);
    let run = acp_patch(&["apply", path_str(only_js.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let patched = read(only_js.path(), "dist/agent.js");
    assert!(
        patched.contains("import * as acpProgress from './acp-progress.js'\n"),
        "{patched}"
    );
    assert!(
        patched.contains("return acpProgress.turn(this.conn, params.sessionId, async () => {"),
        "{patched}"
    );
    let module = read(only_js.path(), "dist/acp-progress.js");
    assert!(
        module.contains("export function turn(conn, sessionId, body) {"),
        "{module}"
    );
    assert_eq!(verify(only_js.path()).code, 0);
}

#[test]
fn a_connection_pin_that_matches_nothing_names_what_it_looked_for() {
    let dir = copy_tree(&before("sdk1_agent"));
    write(
        dir.path(),
        "acp-patch.toml",
        "[typescript]\nconnection = \"src/agent.ts:Nobody.conn\"\n",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("the pin `connection = \"src/agent.ts:Nobody.conn\"` matches nothing")
            // the connection only: `turns` and `llm` are set before a prompt but hold no connection
            && run.stderr.contains("candidates a pin accepts:\n    src/agent.ts:10  EchoAgent.conn\n")
            && !run.stderr.contains("EchoAgent.turns")
            && !run.stderr.contains("EchoAgent.llm"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_agent_class_imported_under_another_name_is_found() {
    let dir = copy_tree(&before("sdk1_agent"));
    edit(
        dir.path(),
        "src/agent.ts",
        "const stream = acp.ndJsonStream(",
        "export const unused = 0\nconst stream = acp.ndJsonStream(",
    );
    let agent = read(dir.path(), "src/agent.ts");
    let (class_part, main_part) = agent.split_at(agent.find("export const unused").unwrap());
    write(dir.path(), "src/agent.ts", class_part);
    write(
        dir.path(),
        "src/main.ts",
        &format!(
            "import * as acp from '@agentclientprotocol/sdk'\nimport {{ Readable, Writable }} from 'node:stream'\nimport {{ EchoAgent as Agent }} from './agent.js'\n{}",
            main_part.replace("new EchoAgent(conn)", "new Agent(conn)")
        ),
    );
    edit(dir.path(), "acp-patch.toml", "src/agent.ts", "src/main.ts");
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        read(dir.path(), "src/agent.ts")
            .contains("acpProgress.turn(this.conn, params.sessionId, async () => {")
    );
    link_node_modules(dir.path(), "sdk1_agent");
    tsc(dir.path(), "sdk1_agent");
    assert_eq!(verify(dir.path()).code, 0);
}

#[test]
fn a_bound_send_goes_through_the_emitter_too() {
    let dir = copy_tree(&before("sdk1_agent"));
    edit(
        dir.path(),
        "src/agent.ts",
        "    await this.conn.sessionUpdate({ sessionId, update })",
        "    const send = this.conn.sessionUpdate.bind(this.conn)\n    await send({ sessionId, update })",
    );
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        read(dir.path(), "src/agent.ts")
            .contains("const send = acpProgress.emitter(this.conn).sessionUpdate.bind(this.conn)"),
        "{}",
        read(dir.path(), "src/agent.ts")
    );
    assert_eq!(verify(dir.path()).code, 0);
    link_node_modules(dir.path(), "sdk1_agent");
    tsc(dir.path(), "sdk1_agent");
    let run = crate::smoke::smoke(dir.path(), &[]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    run.assert_failing(&[]);
}

#[test]
fn a_name_of_the_agent_that_the_import_would_shadow_is_refused() {
    let dir = copy_tree(&before("sdk1_agent"));
    edit(
        dir.path(),
        "src/agent.ts",
        "export class EchoAgent",
        "const acpProgress = 0\nvoid acpProgress\n\nexport class EchoAgent",
    );
    let pristine = snapshot_tree(dir.path());
    let run = acp_patch(&["apply", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("src/agent.ts:6: the file already has a module-level `acpProgress`"),
        "{}",
        run.stderr
    );
    assert_eq!(pristine, snapshot_tree(dir.path()));
}

#[test]
fn a_bundles_client_side_classes_are_no_prompt_handler_to_list_or_pin() {
    // the bundle's copy of the SDK's ClientSideConnection sends session/prompt; its service's
    // `prompt` is a generator: a pin on either is refused with why, nothing written
    for (pin, why) in [
        (
            "agent.js:Qs.prompt",
            "names no prompt handler: it sends `session/prompt` itself (line 73): the client side of the protocol",
        ),
        (
            "agent.js:Zs.prompt",
            "names no prompt handler: a generator, which the SDK cannot await a prompt response from",
        ),
    ] {
        let dir = copy_tree(&before("bundle_renamed_sdk"));
        write(
            dir.path(),
            "acp-patch.toml",
            &format!("[typescript]\nprompt = \"{pin}\"\n"),
        );
        let run = acp_patch(&["apply", path_str(dir.path())], None);
        assert_eq!(run.code, 1, "{}", run.stderr);
        assert!(
            run.stderr
                .contains(&format!("the pin `prompt = \"{pin}\"` {why}")),
            "{}",
            run.stderr
        );
        assert!(!dir.path().join("acp-progress.js").exists());
    }
    // with the SDK's connection class not recognised (its factory called another way), the
    // candidates are what a pin accepts: the agent's `prompt` only
    let dir = copy_tree(&before("bundle_renamed_sdk"));
    let agent = std::fs::read_to_string(dir.path().join("agent.js")).unwrap();
    let agent = agent.replacen("let r = e(this), i", "let r = e.call(void 0, this), i", 1);
    write(dir.path(), "agent.js", &agent);
    let run = acp_patch(&["apply", "--dry-run", path_str(dir.path())], None);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("agent.js:175  KiteAgent.prompt"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("Qs.prompt") && !run.stderr.contains("Zs.prompt"),
        "{}",
        run.stderr
    );
}
