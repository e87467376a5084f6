//! The command line as a user meets it: which flag combinations are accepted, the CI
//! surfaces (pre-commit hook, GitHub annotations), and `--check-build`, which runs the real
//! `tsc` / `cargo check` (so its cases take the CPU lock).

use crate::support::{acp_patch, copy_tree, cpu_lock, fixture, path_str, repo, snapshot_tree};
use std::path::Path;

#[test]
fn flag_combinations_accepted_and_refused() {
    let dir = copy_tree(&fixture("python/asyncio_agent/before"));
    let p = path_str(dir.path());
    // (arguments, accepted by the parser)
    let table: &[(&[&str], bool)] = &[
        (&["apply", "--dry-run", p], true),
        (&["apply", "--dry-run", "--format", "json", p], true),
        (&["apply", "--dry-run", "--format", "github", p], true),
        (&["apply", "--dry-run", "--check-build", p], true),
        (
            &[
                "apply",
                "--dry-run",
                "--allow-dirty",
                "--env-prefix",
                "X",
                p,
            ],
            true,
        ),
        (&["verify", "--format", "github", p], true),
        (&["init", "--dry-run", "--format", "json", p], true),
        (&["apply", "--format", "yaml", p], false),
        (&["verify", "--dry-run", p], false),
        (&["verify", "--allow-dirty", p], false),
        (&["apply", "--smoke", p], false),
        (&["apply", "--dry-run", "--format", "patch", p], true),
        (&["verify", "--format", "patch", p], false),
        (&["verify", "--format", "html", p], false),
        (&["init", "--dry-run", "--format", "html", p], false),
        (&["smoke", "--format", "patch", p], false),
        (&["smoke", "--format", "yaml", p], false),
        (&["init", "--allow-dirty", p], false),
        (&["init", "--check-build", p], false),
        (&["apply", p, p], false),
    ];
    for (args, accepted) in table {
        let run = acp_patch(args, None);
        // clap refuses with `error: ...` (exit 2); acp-patch's own messages start `acp-patch:`
        let usage = run.code == 2 && run.stderr.starts_with("error:");
        assert_eq!(!usage, *accepted, "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"), "{args:?}");
    }
}

/// One `--format` for every command, each taking the formats it can print: a format it
/// cannot is clap's usage error naming the ones it takes (exit 2), before anything runs.
#[test]
fn a_format_a_command_cannot_print_is_refused_naming_the_ones_it_takes() {
    let empty = tempfile::tempdir().unwrap();
    let p = path_str(empty.path());
    for (args, takes) in [
        (&["verify", "--format", "html", p][..], "text, json, github"),
        (
            &["init", "--dry-run", "--format", "html", p],
            "text, json, github",
        ),
        (&["revert", "--format", "patch", p], "text, json, github"),
        (
            &["apply", "--format", "html", p],
            "text, json, github, patch",
        ),
        (
            &["smoke", "--format", "patch", p],
            "text, json, github, html",
        ),
    ] {
        let run = acp_patch(args, None);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{args:?}");
        let value = args[args.iter().position(|a| *a == "--format").unwrap() + 1];
        assert_eq!(
            run.stderr,
            format!(
                "error: invalid value '{value}' for '--format <FORMAT>'\n  [possible values: {takes}]\n\nFor more information, try '--help'.\n"
            ),
            "{args:?}"
        );
    }
}

#[test]
fn pre_commit_hook_runs_verify() {
    let hooks = std::fs::read_to_string(repo().join(".pre-commit-hooks.yaml")).unwrap();
    assert!(hooks.contains("- id: acp-patch-verify"), "{hooks}");
    assert!(hooks.contains("entry: acp-patch verify\n"), "{hooks}");
    assert!(hooks.contains("pass_filenames: false"), "{hooks}");
    // what the hook runs: verify exits 1 on an unpatched agent, 0 on a patched one
    let before = fixture("python/asyncio_agent/before");
    assert_eq!(acp_patch(&["verify", path_str(&before)], None).code, 1);
    let dir = copy_tree(&before);
    assert_eq!(acp_patch(&["apply", path_str(dir.path())], None).code, 0);
    assert_eq!(acp_patch(&["verify", path_str(dir.path())], None).code, 0);
}

#[test]
fn readme_github_actions_example_uses_verify_format_github() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    assert!(
        readme.contains("- run: acp-patch verify --format github"),
        "the README's workflow example"
    );
}

#[test]
fn github_annotation_paths_are_relative_to_the_working_directory() {
    let work = tempfile::tempdir().unwrap();
    crate::support::copy_into(
        &fixture("python/asyncio_agent/before"),
        &work.path().join("services/streamy"),
    );
    let run = acp_patch(
        &["verify", "--format", "github", "services/streamy"],
        Some(work.path()),
    );
    assert_eq!(run.code, 1);
    let first = run.stdout.lines().next().unwrap();
    assert!(
        first.starts_with("::error file=services/streamy/streamy/acp_progress.py,line=1,"),
        "{first}"
    );
}

// ---- --check-build --------------------------------------------------------------------

fn ts_agent() -> tempfile::TempDir {
    let dir = copy_tree(&fixture("typescript/sdk2_agent/before"));
    crate::typescript::link_node_modules(dir.path(), "sdk2_agent");
    dir
}

#[test]
fn check_build_typescript_passes_on_a_good_patch() {
    let dir = ts_agent();
    let _turn = cpu_lock();
    let run = acp_patch(
        &["apply", "--dry-run", "--check-build", path_str(dir.path())],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("--check-build: `") && run.stderr.contains("--noEmit -p"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("passes on the patched tree"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_build_typescript_refuses_a_template_tsc_rejects() {
    let dir = ts_agent();
    let templates = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(templates.path().join("typescript")).unwrap();
    // the runtime module of the protocol strategy (what a TypeScript SDK agent gets)
    let helpers =
        std::fs::read_to_string(repo().join("templates/typescript/acp-progress.ts")).unwrap();
    // parses (tree-sitter is happy), but does not typecheck
    std::fs::write(
        templates.path().join("typescript/acp-progress.ts"),
        format!("{helpers}\nconst acpWrong: number = \"not a number\";\n"),
    )
    .unwrap();
    let pristine = snapshot_tree(dir.path());
    let _turn = cpu_lock();
    let run = acp_patch(
        &[
            "apply",
            "--check-build",
            "--templates",
            path_str(templates.path()),
            path_str(dir.path()),
        ],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("fails on the patched tree but passes on it unpatched"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("TS2322"), "{}", run.stderr);
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(pristine, snapshot_tree(dir.path()));
}

#[test]
fn check_build_says_what_is_missing_and_what_to_do() {
    let dir = copy_tree(&fixture("typescript/sdk2_agent/before"));
    std::fs::remove_file(dir.path().join("tsconfig.json")).unwrap();
    let run = acp_patch(
        &["apply", "--dry-run", "--check-build", path_str(dir.path())],
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no tsconfig.json") && run.stderr.contains("leave out --check-build"),
        "{}",
        run.stderr
    );
    // a Python agent has nothing to build: apply compiles each patched file instead
    let py = copy_tree(&fixture("python/asyncio_agent/before"));
    let run = acp_patch(
        &["apply", "--dry-run", "--check-build", path_str(py.path())],
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("nothing to build for a python agent"),
        "{}",
        run.stderr
    );
}

#[test]
fn check_build_rust_runs_cargo_check_outside_the_agents_target() {
    let dir = copy_tree(&fixture("rust/trait_agent/before"));
    let target = repo().join("target/check-build/trait_agent");
    let _turn = cpu_lock();
    let run = acp_patch_env(
        &["apply", "--dry-run", "--check-build", path_str(dir.path())],
        &[("CARGO_TARGET_DIR", &target)],
    );
    assert_eq!(run.1, 0, "{}", run.0);
    assert!(run.0.contains("cargo check"), "{}", run.0);
    assert!(run.0.contains("passes on the patched tree"), "{}", run.0);
    assert!(
        !dir.path().join("target").exists(),
        "the agent's folder got a target/"
    );
}

/// (stderr, exit code) of a run with extra environment.
fn acp_patch_env(args: &[&str], env: &[(&str, &Path)]) -> (String, i32) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_acp-patch"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn completions_for_every_shell_name_the_commands() {
    for (shell, marker) in [
        ("bash", "complete -F _acp__patch"),
        ("zsh", "#compdef acp-patch"),
        ("fish", "complete -c acp-patch"),
        ("powershell", "Register-ArgumentCompleter"),
        ("elvish", "edit:completion:arg-completer[acp-patch]"),
    ] {
        let run = acp_patch(&["completions", shell], None);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert!(run.stdout.contains(marker), "{shell}: {}", run.stdout);
        for word in [
            "apply", "verify", "revert", "smoke", "init", "dry-run", "github",
        ] {
            assert!(run.stdout.contains(word), "{shell} lacks {word}");
        }
    }
    assert_eq!(acp_patch(&["completions", "tcsh"], None).code, 2);
}

/// What bash offers at a tab, by running the generated script (a subcommand's options and a
/// flag's values too: clap_complete's own script misses them for a hyphenated name).
#[test]
fn bash_completes_subcommands_options_and_values() {
    let script = acp_patch(&["completions", "bash"], None).stdout;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("acp-patch.bash");
    std::fs::write(&file, script).unwrap();
    let complete = |words: &[&str]| -> String {
        let line = words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let body = format!(
            "source '{}'; COMP_WORDS=({line}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             _acp__patch acp-patch \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             echo \"${{COMPREPLY[*]}}\"",
            file.display()
        );
        let out = std::process::Command::new("bash")
            .args(["-c", &body])
            .output()
            .expect("bash");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    assert_eq!(complete(&["acp-patch", "ap"]), "apply");
    assert_eq!(complete(&["acp-patch", "apply", "--dry"]), "--dry-run");
    assert_eq!(
        complete(&["acp-patch", "verify", "--format", ""]),
        "text json github"
    );
    // one `--format`, each command offering the formats it takes
    assert_eq!(
        complete(&["acp-patch", "apply", "--format", ""]),
        "text json github patch"
    );
    assert_eq!(
        complete(&["acp-patch", "smoke", "--format", ""]),
        "text json github html"
    );
    assert_eq!(
        complete(&["acp-patch", "completions", "z"]),
        "zsh",
        "the shells are offered"
    );
}

#[test]
fn man_page_on_stdout_and_one_page_per_command() {
    let run = acp_patch(&["man"], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with(".ie"), "{}", run.stdout);
    assert!(run.stdout.contains(".TH acp-patch 1"), "{}", run.stdout);
    assert!(
        run.stdout.contains("acp\\-patch\\-apply(1)"),
        "{}",
        run.stdout
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let run = acp_patch(&["man", "--dir", path_str(&out)], None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut pages: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    for page in [
        "acp-patch.1",
        "acp-patch-apply.1",
        "acp-patch-completions.1",
        "acp-patch-init.1",
        "acp-patch-man.1",
        "acp-patch-revert.1",
        "acp-patch-smoke.1",
        "acp-patch-verify.1",
    ] {
        assert!(pages.contains(&page.to_string()), "{page} not in {pages:?}");
    }
    let apply = std::fs::read_to_string(out.join("acp-patch-apply.1")).unwrap();
    assert!(apply.contains("\\-\\-dry\\-run"), "{apply}");
    // a folder that cannot be made is an I/O error, said on stderr
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let run = acp_patch(&["man", "--dir", path_str(&file.join("sub"))], None);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .starts_with("acp-patch: error: writing the man pages"),
        "{}",
        run.stderr
    );
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let run = acp_patch(&["--version"], None);
    assert_eq!(run.code, 0);
    let version = env!("CARGO_PKG_VERSION");
    let line = run.stdout.trim_end();
    let rest = line
        .strip_prefix(&format!("acp-patch {version} ("))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{line}"));
    // this test runs in the project's checkout: the commit and its date
    let head = std::process::Command::new("git")
        .args(["log", "-1", "--format=%h %cs", "--abbrev=12"])
        .current_dir(repo())
        .output()
        .unwrap();
    let head = String::from_utf8(head.stdout).unwrap();
    if head.trim().is_empty() {
        return; // not a git checkout (a packaged crate): scripts/package.sh checks that case
    }
    assert_eq!(rest, head.trim());
}

/// A monorepo-shaped root: the agent two folders down, unrelated trees beside it in the
/// three languages (texts that pass each language's first literal test but hold no agent).
/// What apply and verify say from the root is what they say on the agent's folder alone.
#[test]
fn a_monorepo_root_gives_the_result_of_the_agents_folder() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    let agent = root.join("services/streamy");
    crate::support::copy_into(&fixture("python/asyncio_agent/before"), &agent);
    let unrelated: &[(&str, &str)] = &[
        (
            "libs/events/callbacks.py",
            "\"\"\"Callbacks, not ACP.\"\"\"\n\n\nclass Registry:\n    def on(self, name, step_callback):\n        self.step_callback = step_callback\n",
        ),
        (
            "libs/events/acpx_compat.py",
            "import acpx\n\n\nclass Agent(acpx.Base):\n    async def prompt(self, text):\n        return text\n",
        ),
        (
            "web/src/session.ts",
            "export const sessionPath = \"session/\" + \"list\";\nexport function acpLike(cb: () => void) { cb(); }\n",
        ),
        (
            "tools/cli/Cargo.toml",
            "[package]\nname = \"cli\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "tools/cli/src/main.rs",
            "fn main() {\n    eprintln!(\"acp session_update\");\n}\n",
        ),
    ];
    for (rel, text) in unrelated {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let prefix = "services/streamy/";
    for cmd in [&["apply", "--dry-run"][..], &["verify", "--format", "json"]] {
        let alone = acp_patch(&[cmd, &[path_str(&agent)]].concat(), None);
        let from_root = acp_patch(&[cmd, &["."]].concat(), Some(root));
        assert_eq!(from_root.code, alone.code, "{cmd:?}: {}", from_root.stderr);
        let normal = |s: &str| {
            s.replace(&format!("{}/", agent.display()), "")
                .replace(&agent.display().to_string(), "<agent>")
                .replace(&root.display().to_string(), "<agent>")
                .replace(prefix, "")
        };
        assert_eq!(normal(&from_root.stdout), normal(&alone.stdout), "{cmd:?}");
        assert!(!alone.stdout.is_empty(), "{cmd:?}");
    }
}

/// `smoke --json -` / `--html -`: the document goes to stdout, written by the same printer as
/// `--format json` / `--format html` (byte for byte), and no file named `-` appears; two
/// documents for stdout is a usage error before anything runs.
#[test]
fn smoke_json_or_html_dash_prints_the_format_s_document_on_stdout() {
    let empty = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let p = path_str(empty.path());
    let error = format!(
        "bad configuration: no agent command: pass --agent-cmd or --preset (hermes, mistral-vibe, claude-agent-acp, pi-acp), or set [smoke] agent_cmd in {p}/acp-patch.toml"
    );
    let json =
        format!("{{\n  \"passed\": false,\n  \"error\": \"{error}\",\n  \"checks\": []\n}}\n");
    let html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>acp-patch smoke</title></head><body>\n<h1>acp-patch smoke: could not run</h1>\n<p>{error}</p>\n</body></html>\n"
    );
    for (dash, format, expected) in [
        (&["--json", "-"][..], "json", &json),
        (&["--json", "-", "--format", "json"], "json", &json),
        (&["--html", "-"], "html", &html),
    ] {
        let formatted = acp_patch(&["smoke", "--format", format, p], Some(cwd.path()));
        let run = acp_patch(&[&["smoke", p][..], dash].concat(), Some(cwd.path()));
        assert_eq!(run.code, 2, "{dash:?}: {}", run.stderr);
        assert_eq!(&run.stdout, expected, "{dash:?}");
        assert_eq!(run.stdout, formatted.stdout, "{dash:?}");
        assert_eq!(run.stderr, formatted.stderr, "{dash:?}");
    }
    assert!(!cwd.path().join("-").exists());

    for args in [
        &["smoke", "--json", "-", "--html", "-", p][..],
        &["smoke", "--json", "-", "--format", "github", p],
    ] {
        let run = acp_patch(args, Some(cwd.path()));
        assert_eq!(run.code, 2, "{args:?}");
        assert_eq!(run.stdout, "", "{args:?}");
        assert!(
            run.stderr.starts_with("error: "),
            "{args:?}: {}",
            run.stderr
        );
    }
}
