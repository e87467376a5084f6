//! The hostile battery: trees a new user really has (odd encodings, links, huge files,
//! vendored copies, read-only folders, no git, a broken git, two runs at once, a killed
//! run, a closed pipe, ...). Every case checks one invariant:
//!
//! - each file is byte-identical, or patched (its bytes kept in order, only code inserted,
//!   its mode and owner kept) and building; a new file is a runtime module, read and built;
//! - on a non-zero exit the tree is byte-identical (links, modes and owners included);
//! - the exit code is the documented one, and the message names the file and what to do;
//! - no panic text, no temporary file left.
//!
//! Each test is named after what it guards. Nothing here runs a real agent; every patched
//! package is built (Python compiled, `tsc`, `node --check`, `cargo check`).

use crate::support::{acp_patch, fixture, git, path_str};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

// ---- the invariant ----------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File { bytes: Vec<u8>, mode: u32, uid: u32 },
    Link(PathBuf),
    Dir(u32),
}

/// Every entry below `root` (links recorded, never followed; `.git` skipped).
fn state(root: &Path) -> BTreeMap<String, Entry> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".git" || rel.ends_with("/.git") {
                continue;
            }
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let entry = if meta.file_type().is_symlink() {
                Entry::Link(std::fs::read_link(&p).unwrap())
            } else if meta.is_dir() {
                stack.push(p.clone());
                Entry::Dir(meta.mode())
            } else {
                Entry::File {
                    bytes: std::fs::read(&p).unwrap_or_default(),
                    mode: meta.mode(),
                    uid: meta.uid(),
                }
            };
            out.insert(rel, entry);
        }
    }
    out
}

/// Whether `patched` is `original` with code inserted and nothing else changed (see
/// [`crate::support::only_insertions`]); a file that is not UTF-8 must be byte-identical.
fn only_insertions(original: &[u8], patched: &[u8]) -> bool {
    match (std::str::from_utf8(original), std::str::from_utf8(patched)) {
        (Ok(a), Ok(b)) => crate::support::only_insertions(a, b),
        _ => original == patched,
    }
}

fn python() -> String {
    std::env::var("ACP_PATCH_TEST_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// CPython compiles each file (no bytecode written); the failure message otherwise.
fn py_compiles(files: &[PathBuf]) -> Result<(), String> {
    if files.is_empty() {
        return Ok(());
    }
    let out = Command::new(python())
        .args([
            "-B",
            "-c",
            "import sys\nfor p in sys.argv[1:]:\n    compile(open(p, 'rb').read(), p, 'exec', dont_inherit=True)",
        ])
        .args(files)
        .output()
        .expect("run python");
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl From<crate::support::Run> for Ran {
    fn from(r: crate::support::Run) -> Ran {
        Ran {
            code: r.code,
            stdout: r.stdout,
            stderr: r.stderr,
        }
    }
}

/// Runs acp-patch with extra environment (and `PATH` replaced when given).
fn run_env(args: &[&str], env: &[(&str, &str)]) -> Ran {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_acp-patch"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run acp-patch");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn run(args: &[&str]) -> Ran {
    acp_patch(args, None).into()
}

/// The invariant, for one run on `dir` whose state was `before`.
fn check(dir: &Path, before: &BTreeMap<String, Entry>, ran: &Ran, code: i32, says: &[&str]) {
    let all = format!("{}\n{}", ran.stdout, ran.stderr);
    for bad in [
        "panicked",
        "RUST_BACKTRACE",
        "stack overflow",
        "fatal runtime error",
    ] {
        assert!(!all.contains(bad), "panic text ({bad}):\n{all}");
    }
    assert_eq!(ran.code, code, "exit code; output:\n{all}");
    for s in says {
        assert!(all.contains(s), "the message should say `{s}`:\n{all}");
    }
    let after = state(dir);
    for name in after.keys() {
        let base = name.rsplit('/').next().unwrap_or(name);
        assert!(
            !base.starts_with(".acp-patch-tmp-"),
            "a temporary file was left: {name}"
        );
    }
    if code != 0 {
        assert!(after == *before, "a refusal changed the tree:\n{all}");
        return;
    }
    let mut compile = Vec::new();
    let mut built: Vec<String> = Vec::new();
    for (name, entry) in &after {
        match (before.get(name), entry) {
            (Some(old), new) if old == new => {}
            (
                Some(Entry::File {
                    bytes: old,
                    mode: old_mode,
                    uid: old_uid,
                }),
                Entry::File { bytes, mode, uid },
            ) => {
                assert!(
                    only_insertions(old, bytes),
                    "{name}: untouched bytes changed"
                );
                assert_eq!(
                    (old_mode, old_uid),
                    (mode, uid),
                    "{name}: mode or owner changed"
                );
                if name.ends_with(".py") {
                    compile.push(dir.join(name));
                }
                built.push(name.clone());
            }
            // a new file is read too: only acp-patch's runtime module (or init's config) is one
            (None, Entry::File { bytes, .. }) => {
                let text = String::from_utf8_lossy(bytes);
                let first = text.split(['\n', '\r']).next().unwrap_or("");
                let base = name.rsplit('/').next().unwrap_or(name);
                assert!(
                    first.contains("acp-patch: runtime module, generated — do not edit; acp-patch apply updates it, acp-patch revert removes it; checksum ")
                        || base == "acp-patch.toml" && text.parse::<toml::Table>().is_ok(),
                    "{name}: a new file that is neither a runtime module nor acp-patch.toml:\n{}",
                    &text[..text.len().min(300)]
                );
                if name.ends_with(".py") {
                    compile.push(dir.join(name));
                }
                built.push(name.clone());
            }
            (old, new) => panic!("{name}: changed from {old:?} to {new:?}"),
        }
    }
    for name in before.keys() {
        assert!(after.contains_key(name), "{name} was removed");
    }
    py_compiles(&compile).unwrap_or_else(|e| panic!("a patched file does not compile: {e}"));
    builds(dir, before, &built);
}

/// Every TypeScript / JavaScript and Rust package apply changed builds: `tsc --noEmit` (the
/// TypeScript fixture's provisioned node_modules), `node --check` for JavaScript, `cargo
/// check` in the Rust fixture's shared target dir. A package that did not build before the
/// patch either (a hostile file tsc cannot take) is not apply's to answer for.
fn builds(dir: &Path, before: &BTreeMap<String, Entry>, changed: &[String]) {
    let mut packages: Vec<(String, &str)> = Vec::new();
    for name in changed {
        let kind = match name.rsplit('.').next() {
            Some("ts" | "mts" | "cts" | "tsx") => "tsc",
            Some("js" | "mjs" | "cjs") => {
                let out = Command::new("node")
                    .arg("--check")
                    .arg(dir.join(name))
                    .output()
                    .expect("node");
                assert!(
                    out.status.success(),
                    "{name}: node --check fails:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                continue;
            }
            Some("rs") | Some("toml") if !name.ends_with("acp-patch.toml") => "cargo",
            _ => continue,
        };
        let manifest = if kind == "tsc" {
            "tsconfig.json"
        } else {
            "Cargo.toml"
        };
        let mut pkg = Path::new(name).parent();
        while let Some(p) = pkg {
            if dir.join(p).join(manifest).is_file() {
                break;
            }
            pkg = p.parent();
        }
        let pkg = pkg.map(|p| p.to_string_lossy().into_owned());
        if let Some(pkg) = pkg
            && !packages.contains(&(pkg.clone(), kind))
        {
            packages.push((pkg, kind));
        }
    }
    for (pkg, kind) in packages {
        if let Err(e) = build(&dir.join(&pkg), kind) {
            // the same package as it was: built from the recorded state
            let was = tempfile::tempdir().unwrap();
            for (name, entry) in before {
                if let Entry::File { bytes, .. } = entry {
                    let p = was.path().join(name);
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(&p, bytes).unwrap();
                }
            }
            assert!(
                build(&was.path().join(&pkg), kind).is_err(),
                "{pkg}: the patched package does not build (it did before):\n{e}"
            );
        }
    }
}

/// One build check of a package folder.
fn build(pkg: &Path, kind: &str) -> Result<(), String> {
    let out = if kind == "tsc" {
        let _turn = crate::support::cpu_lock();
        let deps = "sdk2_agent"; // the TypeScript fixture these trees are copied from
        let copy = crate::support::copy_tree(pkg);
        crate::typescript::link_node_modules(copy.path(), deps);
        let tsc = crate::typescript::node_modules(deps).join("typescript/bin/tsc");
        Command::new("node")
            .arg(tsc)
            .args(["--noEmit", "-p"])
            .arg(copy.path())
            .output()
            .expect("node")
    } else {
        // in the Rust fixtures' target dir: its dependencies are built once
        crate::support::cargo_fixture("check", pkg)
    };
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

// ---- trees --------------------------------------------------------------------------------

const PY: &str = "python/asyncio_agent/before";
const CALLBACK: &str = "python/callback_agent/before";
const TS: &str = "typescript/sdk2_agent/before";
const RS: &str = "rust/trait_agent/before";
const AGENT: &str = "streamy/agent.py";

fn tree(rel: &str) -> tempfile::TempDir {
    crate::support::copy_tree(&fixture(rel))
}

fn edit(dir: &Path, rel: &str, f: impl FnOnce(String) -> String) {
    let p = dir.join(rel);
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, f(text)).unwrap();
}

fn committed(dir: &Path) {
    git(dir, &["init", "-q"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "init"]);
}

/// apply on `dir`, then the invariant.
fn apply_case(dir: &Path, extra: &[&str], code: i32, says: &[&str]) -> Ran {
    let before = state(dir);
    let mut args = vec!["apply"];
    args.extend_from_slice(extra);
    args.push(path_str(dir));
    let ran = run(&args);
    check(dir, &before, &ran, code, says);
    ran
}

fn verify_ok(dir: &Path) {
    let v = run(&["verify", path_str(dir)]);
    assert_eq!(v.code, 0, "verify after apply:\n{}{}", v.stdout, v.stderr);
}

// ---- style and content ----------------------------------------------------------------

#[test]
fn bom_is_kept_on_a_patched_file() {
    let dir = tree(PY);
    edit(dir.path(), AGENT, |t| format!("\u{feff}{t}"));
    apply_case(dir.path(), &[], 0, &["inserted"]);
    assert!(
        std::fs::read(dir.path().join(AGENT))
            .unwrap()
            .starts_with("\u{feff}".as_bytes())
    );
    verify_ok(dir.path());
}

#[test]
fn no_final_newline_is_kept() {
    let dir = tree(PY);
    edit(dir.path(), AGENT, |t| t.trim_end().to_string());
    apply_case(dir.path(), &[], 0, &["inserted"]);
    assert!(
        !std::fs::read_to_string(dir.path().join(AGENT))
            .unwrap()
            .ends_with('\n')
    );
}

#[test]
fn crlf_file_stays_crlf_inserted_lines_too() {
    let dir = tree(PY);
    edit(dir.path(), AGENT, |t| t.replace('\n', "\r\n"));
    apply_case(dir.path(), &[], 0, &["inserted"]);
    let text = std::fs::read_to_string(dir.path().join(AGENT)).unwrap();
    assert_eq!(text.matches('\n').count(), text.matches("\r\n").count());
}

#[test]
fn cr_only_file_is_patched_not_called_invalid_syntax() {
    let dir = tree(PY);
    edit(dir.path(), AGENT, |t| t.replace('\n', "\r"));
    apply_case(dir.path(), &[], 0, &["inserted"]);
    let bytes = std::fs::read(dir.path().join(AGENT)).unwrap();
    assert!(!bytes.contains(&b'\n'), "a CR-only file gained LF endings");
    verify_ok(dir.path());
}

#[test]
fn cr_only_file_gets_a_dry_run_diff_git_apply_and_patch_accept() {
    let pristine = tree(PY);
    edit(pristine.path(), AGENT, |t| t.replace('\n', "\r"));
    let dry = run(&["apply", "--dry-run", path_str(pristine.path())]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    let applied = crate::support::copy_tree(pristine.path());
    apply_case(applied.path(), &[], 0, &["inserted"]);
    // the diff, applied by git and by GNU patch to copies, gives apply's tree byte for byte
    let diff = pristine.path().join("..").join(format!(
        "{}.diff",
        pristine.path().file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&diff, &dry.stdout).unwrap();
    let by_git = crate::support::copy_tree(pristine.path());
    git(by_git.path(), &["apply", path_str(&diff)]);
    assert!(
        state(by_git.path()) == state(applied.path()),
        "git apply's tree differs"
    );
    if Command::new("patch").arg("--version").output().is_ok() {
        let by_patch = crate::support::copy_tree(pristine.path());
        let out = Command::new("patch")
            .args(["-p1", "--binary", "-s", "-i"])
            .arg(&diff)
            .current_dir(by_patch.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(
            state(by_patch.path()) == state(applied.path()),
            "patch's tree differs"
        );
    }
    std::fs::remove_file(diff).unwrap();
}

#[test]
fn tab_indented_file_gets_tab_indented_lines() {
    let dir = tree(PY);
    edit(dir.path(), AGENT, |t| {
        t.lines()
            .map(|l| {
                let n = l.len() - l.trim_start_matches(' ').len();
                format!("{}{}\n", "\t".repeat(n / 4), &l[n / 4 * 4..])
            })
            .collect()
    });
    apply_case(dir.path(), &[], 0, &["inserted"]);
}

#[test]
fn mixed_indentation_file_one_function_in_tabs() {
    let dir = tree(PY);
    // the prompt handler's body indented with 4 spaces and a tab, a helper in tabs, the
    // rest in spaces: legal Python (each block consistent), and where apply inserts
    edit(dir.path(), AGENT, |t| {
        let mut out = String::new();
        let mut section = "";
        for line in t.split_inclusive('\n') {
            if line.starts_with("    async def prompt(") {
                section = "prompt";
            } else if line.starts_with("    async def _run_tool(") {
                section = "";
            } else if line.starts_with("def _prompt_text(") {
                section = "helper";
            }
            match section {
                "prompt" if line.starts_with("        ") => {
                    out.push_str("    \t");
                    out.push_str(&line[8..]);
                }
                "helper" if line.starts_with("    ") => {
                    let n = line.len() - line.trim_start_matches(' ').len();
                    out.push_str(&"\t".repeat(n / 4));
                    out.push_str(&line[n / 4 * 4..]);
                }
                _ => out.push_str(line),
            }
        }
        out
    });
    py_compiles(&[dir.path().join(AGENT)]).expect("the mixed file is legal Python");
    apply_case(dir.path(), &[], 0, &["inserted"]);
    verify_ok(dir.path());
}

#[test]
fn empty_files_in_the_tree_are_left_alone() {
    let dir = tree(PY);
    for f in ["streamy/empty.py", "empty.ts", "src/empty.rs"] {
        let p = dir.path().join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "").unwrap();
    }
    apply_case(dir.path(), &[], 0, &["inserted"]);
}

#[test]
fn non_utf8_and_nul_bytes_in_unrelated_files_are_left_alone() {
    let dir = tree(PY);
    std::fs::write(dir.path().join("streamy/legacy.py"), b"name = 'caf\xe9'\n").unwrap();
    std::fs::write(dir.path().join("streamy/blob.py"), b"x = 1\x00\x00\xff\n").unwrap();
    std::fs::write(dir.path().join("data.bin"), [0u8, 159, 146, 150]).unwrap();
    apply_case(dir.path(), &[], 0, &["inserted"]);
}

#[test]
fn latin1_file_to_patch_is_named_with_its_encoding() {
    let dir = tree(PY);
    let p = dir.path().join(AGENT);
    let mut bytes = std::fs::read(&p).unwrap();
    let at = bytes.windows(7).position(|w| w == b"Streamy").unwrap();
    bytes.splice(at..at + 7, b"Str\xe9amy".iter().copied());
    std::fs::write(&p, bytes).unwrap();
    apply_case(
        dir.path(),
        &[],
        1,
        &[AGENT, "not UTF-8", "Latin-1", "iconv"],
    );
    let v = run(&["verify", path_str(dir.path())]);
    assert_eq!(v.code, 1, "{}", v.stderr);
    assert!(
        v.stderr.contains(AGENT) && v.stderr.contains("Latin-1"),
        "{}",
        v.stderr
    );
}

#[test]
fn a_50_mb_file_and_a_2_mb_one_line_file_in_the_tree() {
    let dir = tree(PY);
    let big = dir.path().join("streamy/generated_table.py");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&big).unwrap());
    let line = format!("TABLE_{:0>40} = {}\n", 0, "1234567890".repeat(5));
    for _ in 0..(50 << 20) / line.len() {
        std::io::Write::write_all(&mut f, line.as_bytes()).unwrap();
    }
    drop(f);
    let one_line = format!("DATA = [\"acp\", {}]\n", "1, ".repeat(700_000)); // parsed: it says acp
    std::fs::write(dir.path().join("streamy/one_line.py"), one_line).unwrap();
    apply_case(
        dir.path(),
        &[],
        0,
        &[
            "streamy/generated_table.py: 50 MiB, more than the 16 MiB",
            "inserted",
        ],
    );
}

#[test]
fn deep_nesting_typescript_file_does_not_overflow_the_stack() {
    let dir = tree(TS);
    let n = 200_000; // the walk must not recurse: a 16 MiB stack would not hold this
    let deep = format!(
        "// sessionUpdate\nexport const x = {}{};\n",
        "[".repeat(n),
        "]".repeat(n)
    );
    std::fs::write(dir.path().join("src/deep.ts"), deep).unwrap();
    apply_case(dir.path(), &["--dry-run"], 0, &["would insert"]);
    apply_case(dir.path(), &[], 0, &["inserted"]);
    verify_ok(dir.path());
}

#[test]
fn deep_nesting_python_and_rust_files_do_not_overflow_the_stack() {
    let dir = tree(PY);
    let n = 100_000;
    let py = format!("# acp\nx = {}{}\n", "(".repeat(n), ")".repeat(n));
    std::fs::write(dir.path().join("streamy/deep.py"), py).unwrap();
    let rs = format!(
        "// agent_client_protocol\nfn f() -> i32 {{ {}1{} }}\n",
        "(".repeat(n),
        ")".repeat(n)
    );
    std::fs::write(dir.path().join("deep.rs"), rs).unwrap();
    apply_case(dir.path(), &[], 0, &["inserted"]);
    // and a Rust agent with one such file: noted as unparsable, the agent still patched
    let dir = tree(RS);
    std::fs::write(
        dir.path().join("src/deep.rs"),
        format!(
            "// acp\npub fn f() -> i32 {{ {}1{} }}\n",
            "(".repeat(n),
            ")".repeat(n)
        ),
    )
    .unwrap();
    apply_case(
        dir.path(),
        &["--dry-run"],
        0,
        &["src/deep.rs:2: does not parse (brackets nested more than 256 deep"],
    );
}

#[test]
fn many_comment_lines_in_the_file_to_patch() {
    let dir = tree(PY);
    edit(dir.path(), AGENT, |t| {
        let comments: String = (0..3000).map(|i| format!("# note {i}\n")).collect();
        t.replacen(
            "class StreamyAgent(acp.Agent):",
            &format!("{comments}class StreamyAgent(acp.Agent):"),
            1,
        )
    });
    apply_case(dir.path(), &[], 0, &["inserted"]);
    verify_ok(dir.path());
}

// ---- what CPython rejects ---------------------------------------------------------------

#[test]
fn kwargs_typed_var_keyword_gets_the_callback_parameter_before_it() {
    let dir = tree(CALLBACK);
    edit(dir.path(), "engine/core.py", |t| {
        t.replacen(
            "        tool_progress_callback=None,\n    ):",
            "        tool_progress_callback=None,\n        **kwargs: object,\n    ):",
            1,
        )
    });
    apply_case(dir.path(), &[], 0, &["inserted"]);
    let core = std::fs::read_to_string(dir.path().join("engine/core.py")).unwrap();
    assert!(
        core.contains("agent_progress_callback=None,\n        **kwargs: object,"),
        "{core}"
    );
    verify_ok(dir.path());
}

#[test]
fn a_bad_template_is_named_as_the_template_with_the_compilers_line() {
    let dir = tree(PY);
    let templates = tempfile::tempdir().unwrap();
    let runtime =
        std::fs::read_to_string(crate::support::repo().join("templates/python/acp_progress.py"))
            .unwrap();
    let template = templates.path().join("python/acp_progress.py");
    std::fs::create_dir_all(template.parent().unwrap()).unwrap();
    let line = runtime.lines().count() + 3;
    // tree-sitter accepts a parameter after **kwargs; CPython does not: CPython's line
    std::fs::write(
        &template,
        format!("{runtime}\n\ndef build_thinking_extra(**kw, extra=None):\n    return kw\n"),
    )
    .unwrap();
    let at = format!("{}:{line}: this template", template.display());
    let args = ["--templates", path_str(templates.path())];
    apply_case(
        dir.path(),
        &args,
        2,
        &[&at, "SyntaxError", "Python", "fix the template"],
    );
    // one the parser rejects already: the parser's line
    std::fs::write(
        &template,
        format!("{runtime}\n\ndef build_thinking_extra(:\n    return 1\n"),
    )
    .unwrap();
    let ran = apply_case(
        dir.path(),
        &args,
        2,
        &[&at, "does not parse", "fix the template"],
    );
    assert!(!ran.stderr.contains("a bug in acp-patch"), "{}", ran.stderr);
}

#[test]
fn verify_reports_a_patched_file_cpython_rejects() {
    let dir = tree(PY);
    apply_case(dir.path(), &[], 0, &["inserted"]);
    edit(dir.path(), "streamy/acp_progress.py", |t| {
        t.replacen("def build_thinking_start(", "def build_thinking_start(**kw, x=None) -> None:\n    pass\n\n\ndef _was_build_thinking_start(", 1)
    });
    let v = run(&["verify", path_str(dir.path())]);
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert!(v.stdout.contains("malformed  parses"), "{}", v.stdout);
    assert!(v.stdout.contains("SyntaxError"), "{}", v.stdout);
}

#[test]
fn hand_renamed_hook_function_reapply_inserts_no_duplicates() {
    // the engine-level shape inserts its hook functions into the agent's own module (the
    // protocol shape's runtime module, edited by hand, is replaced whole instead)
    const HOOKS: &str = "engine/loop.py";
    let dir = tree(CALLBACK);
    apply_case(dir.path(), &[], 0, &["inserted"]);
    let patched = std::fs::read_to_string(dir.path().join(HOOKS)).unwrap();
    // each hook function renamed in turn (definition and calls): re-apply refuses, naming
    // the missing function, instead of inserting the others again or calling the old name
    for name in [
        "_acp_progress_start",
        "_acp_progress_heartbeat",
        "_acp_progress_complete",
    ] {
        std::fs::write(
            dir.path().join(HOOKS),
            patched.replace(name, "_renamed_by_hand"),
        )
        .unwrap();
        let lacks = format!("lacks `{name}`");
        let ran = apply_case(
            dir.path(),
            &[],
            1,
            &["verify fails", &lacks, "fix these by hand"],
        );
        assert!(!ran.stderr.contains("nothing to do"), "{}", ran.stderr);
    }
}

// ---- links ------------------------------------------------------------------------------

#[test]
fn symlinked_file_to_patch_is_reported_never_written_through() {
    let outside = tempfile::tempdir().unwrap();
    let dir = tree(PY);
    let real = outside.path().join("agent.py");
    std::fs::rename(dir.path().join(AGENT), &real).unwrap();
    std::os::unix::fs::symlink(&real, dir.path().join(AGENT)).unwrap();
    let outside_before = std::fs::read(&real).unwrap();
    apply_case(
        dir.path(),
        &[],
        1,
        &[AGENT, "symbolic link", "never writes through a link"],
    );
    apply_case(dir.path(), &["--dry-run"], 1, &[AGENT, "symbolic link"]);
    assert_eq!(std::fs::read(&real).unwrap(), outside_before);
    // verify reads through the link
    let v = run(&["verify", path_str(dir.path())]);
    assert_eq!(v.code, 1, "{}", v.stderr);
    assert!(v.stdout.contains("missing"), "{}", v.stdout);
}

#[test]
fn symlink_to_a_file_outside_path_is_never_written() {
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("shared.py");
    std::fs::write(&target, "import acp\nX = 1\n").unwrap();
    let dir = tree(PY);
    std::os::unix::fs::symlink(&target, dir.path().join("streamy/shared.py")).unwrap();
    apply_case(dir.path(), &[], 0, &["inserted"]);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "import acp\nX = 1\n"
    );
}

#[test]
fn symlink_loops_and_dangling_links_do_not_hang() {
    let dir = tree(PY);
    std::os::unix::fs::symlink(dir.path(), dir.path().join("streamy/loop")).unwrap();
    std::os::unix::fs::symlink("b", dir.path().join("a")).unwrap();
    std::os::unix::fs::symlink("a", dir.path().join("b")).unwrap();
    std::os::unix::fs::symlink("nowhere.py", dir.path().join("dangling.py")).unwrap();
    apply_case(
        dir.path(),
        &[],
        0,
        &[
            "dangling.py: a symbolic link to nowhere.py, which does not exist",
            "inserted",
        ],
    );
}

// ---- permissions, owners --------------------------------------------------------------

#[test]
fn read_only_directory_is_refused_naming_it() {
    let dir = tree(PY);
    let sub = dir.path().join("streamy");
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o555)).unwrap();
    let expect_refusal = unsafe { libc::geteuid() } != 0;
    if expect_refusal {
        apply_case(
            dir.path(),
            &[],
            1,
            &["streamy/ (the folder)", "read-only", "make it writable"],
        );
    } else {
        // root writes anyway (the kernel lets it); the invariant still holds
        apply_case(dir.path(), &[], 0, &["inserted"]);
    }
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn read_only_file_is_refused_naming_it() {
    let dir = tree(PY);
    std::fs::set_permissions(
        dir.path().join(AGENT),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    apply_case(
        dir.path(),
        &[],
        1,
        &[AGENT, "read-only", "make it writable"],
    );
}

#[test]
fn ownership_is_kept_when_root_patches_a_users_file() {
    if unsafe { libc::geteuid() } != 0 {
        return; // only root can hand a file to another user to set the case up
    }
    let dir = tree(PY);
    std::os::unix::fs::chown(dir.path().join(AGENT), Some(4321), Some(4321)).unwrap();
    apply_case(dir.path(), &[], 0, &["inserted"]);
    let meta = std::fs::metadata(dir.path().join(AGENT)).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (4321, 4321));
}

// ---- interrupted and concurrent runs ---------------------------------------------------

#[test]
fn apply_killed_mid_write_leaves_no_truncated_file_and_the_next_run_cleans_up() {
    let dir = tree(PY);
    let before = state(dir.path());
    let killed = run_env(
        &["apply", path_str(dir.path())],
        &[("ACP_PATCH_FAILPOINT", "staged")],
    );
    assert_eq!(killed.code, -1, "SIGKILL ends the process by signal");
    // the originals are untouched; only the staged temporary file is there
    let after = state(dir.path());
    let extra: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    // one per file apply writes: streamy/agent.py and the new streamy/acp_progress.py
    assert_eq!(extra.len(), 2, "{extra:?}");
    assert!(
        extra
            .iter()
            .all(|e| e.starts_with("streamy/.acp-patch-tmp-")),
        "{extra:?}"
    );
    for (k, v) in &before {
        assert_eq!(after.get(k), Some(v), "{k} changed");
    }
    // the next apply removes it (its process is gone) and patches; nothing is left
    let ran = run(&["apply", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("removed 2 temporary files"),
        "{}",
        ran.stderr
    );
    check(dir.path(), &before, &ran, 0, &["inserted"]);
}

#[test]
fn leftovers_of_a_killed_run_do_not_make_a_git_tree_dirty() {
    let dir = tree(PY);
    committed(dir.path());
    let killed = run_env(
        &["apply", path_str(dir.path())],
        &[("ACP_PATCH_FAILPOINT", "staged")],
    );
    assert_eq!(killed.code, -1);
    let before = state(dir.path());
    let ran = run(&["apply", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let after = state(dir.path());
    assert!(after.keys().all(|k| !k.contains(".acp-patch-tmp-")));
    assert_ne!(before.get(AGENT), after.get(AGENT));
}

#[test]
fn apply_interrupted_by_a_signal_writes_nothing_and_leaves_no_temp_file() {
    let dir = tree(PY);
    let before = state(dir.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(["apply", path_str(dir.path())])
        .env("ACP_PATCH_FAILPOINT", "staged-sleep")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // wait until the temporary file is staged, then interrupt
    let staged = |s: &BTreeMap<String, Entry>| s.keys().any(|k| k.contains(".acp-patch-tmp-"));
    let t0 = std::time::Instant::now();
    while !staged(&state(dir.path())) && t0.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGTERM));
    assert!(
        state(dir.path()) == before,
        "an interrupted apply changed the tree"
    );
}

#[test]
fn file_saved_while_apply_runs_is_not_overwritten() {
    let dir = tree(PY);
    let child = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(["apply", path_str(dir.path())])
        .env("ACP_PATCH_FAILPOINT", "staged-sleep")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !state(dir.path())
        .keys()
        .any(|k| k.contains(".acp-patch-tmp-"))
        && t0.elapsed().as_secs() < 30
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // the user saves the file meanwhile
    edit(dir.path(), AGENT, |t| format!("{t}\n# saved by the user\n"));
    let mut before = state(dir.path());
    before.retain(|k, _| !k.contains(".acp-patch-tmp-"));
    let out = child.wait_with_output().unwrap();
    let ran = Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    check(
        dir.path(),
        &before,
        &ran,
        1,
        &[AGENT, "changed on disk while acp-patch ran", "re-run apply"],
    );
}

#[test]
fn two_applies_at_once_patch_exactly_once() {
    let dir = tree(PY);
    let reference = tree(PY);
    apply_case(reference.path(), &[], 0, &["inserted"]);
    let before = state(dir.path());
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_acp-patch"))
            .args(["apply", path_str(dir.path())])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    for out in &outs {
        let ran = Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        // each run either patched, found nothing to do, or refused as locked/changed
        assert!(matches!(ran.code, 0 | 1), "{}", ran.stderr);
        if ran.code == 1 {
            assert!(
                ran.stderr
                    .contains("another acp-patch apply is writing this tree")
                    || ran.stderr.contains("changed on disk"),
                "{}",
                ran.stderr
            );
        }
        assert!(!ran.stderr.contains("panicked"));
    }
    let after = state(dir.path());
    assert_ne!(after, before);
    assert_eq!(
        after.get(AGENT),
        state(reference.path()).get(AGENT),
        "patched exactly once"
    );
}

// ---- what the walk reads ------------------------------------------------------------

#[test]
fn vendored_copies_under_node_modules_venv_and_gitignored_folders_are_ignored() {
    let dir = tree(PY);
    for vendored in [
        "node_modules/streamy-copy",
        ".venv/lib/streamy-copy",
        "third_party/streamy-copy",
    ] {
        crate::support::copy_into(&fixture(PY).join("streamy"), &dir.path().join(vendored));
    }
    std::fs::write(dir.path().join(".gitignore"), "third_party/\n").unwrap();
    let ran = apply_case(
        dir.path(),
        &["--dry-run"],
        0,
        &["would insert 5 pieces into 2 files"],
    );
    assert!(!ran.stdout.contains("streamy-copy"), "{}", ran.stdout);
}

#[test]
fn path_is_a_file() {
    let dir = tree(PY);
    let file = dir.path().join(AGENT);
    let before = state(dir.path());
    for cmd in ["apply", "verify"] {
        let ran = run(&[cmd, path_str(&file)]);
        check(
            dir.path(),
            &before,
            &ran,
            2,
            &["is a file", "point acp-patch at the agent's folder"],
        );
    }
}

#[test]
fn path_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    for cmd in ["apply", "verify", "init"] {
        let ran = run(&[cmd, path_str(&missing)]);
        check(
            dir.path(),
            &state(dir.path()),
            &ran,
            2,
            &["nope: no such file or folder"],
        );
    }
}

#[test]
fn path_is_the_filesystem_root_refused_in_bounded_time() {
    // the default limits (100,000 entries, 128 MiB of sources) hold on any machine; a lower one keeps the test
    // quick where / is small: either way the walk stops and says what to do
    for args in [
        &["apply", "--dry-run", "/"][..],
        &["apply", "/"],
        &["verify", "/"],
    ] {
        let ran = run_env(args, &[("ACP_PATCH_MAX_FILES", "20000")]);
        let all = format!("{}{}", ran.stdout, ran.stderr);
        assert_eq!(ran.code, 2, "{all}");
        assert!(all.contains("too large to read"), "{all}");
        assert!(
            all.contains("point acp-patch at the agent's own folder"),
            "{all}"
        );
        assert!(!all.contains("panicked"));
    }
}

#[test]
fn tree_deeper_than_the_limit_is_refused() {
    let dir = tree(PY);
    let mut deep = dir.path().to_path_buf();
    for i in 0..70 {
        deep.push(format!("d{i}"));
    }
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("x.py"), "x = 1\n").unwrap();
    apply_case(
        dir.path(),
        &[],
        2,
        &[
            "more than 64 folders below it",
            "point acp-patch at the agent's own folder",
        ],
    );
}

#[test]
fn empty_folder_has_no_agent() {
    let dir = tempfile::tempdir().unwrap();
    let before = state(dir.path());
    let ran = run(&["apply", path_str(dir.path())]);
    check(
        dir.path(),
        &before,
        &ran,
        1,
        &[
            "no ACP agent found",
            "point acp-patch at the agent's folder",
        ],
    );
}

// ---- git ------------------------------------------------------------------------------

#[test]
fn subfolder_of_a_git_repo_with_changes_elsewhere() {
    let repo = tempfile::tempdir().unwrap();
    crate::support::copy_into(&fixture(PY), &repo.path().join("services/streamy"));
    std::fs::write(repo.path().join("README.md"), "repo\n").unwrap();
    committed(repo.path());
    std::fs::write(repo.path().join("README.md"), "edited\n").unwrap();
    let agent = repo.path().join("services/streamy");
    apply_case(&agent, &[], 0, &["inserted"]);
}

#[test]
fn dirty_subfolder_of_a_git_repo_is_refused() {
    let repo = tempfile::tempdir().unwrap();
    crate::support::copy_into(&fixture(PY), &repo.path().join("services/streamy"));
    committed(repo.path());
    let agent = repo.path().join("services/streamy");
    std::fs::write(agent.join("streamy/llm.py"), "# edited\n").unwrap();
    apply_case(
        &agent,
        &[],
        1,
        &["uncommitted changes", "streamy/llm.py", "--allow-dirty"],
    );
}

#[test]
fn no_git_repo_at_all() {
    let dir = tree(PY);
    apply_case(dir.path(), &[], 0, &["inserted"]);
}

/// A `PATH` of the test's own tools with `git` replaced (or removed).
fn path_with_git(script: Option<&str>) -> (tempfile::TempDir, String) {
    let bin = tempfile::tempdir().unwrap();
    for tool in ["python3", "node"] {
        if let Some(p) = acp_patch_find(tool) {
            std::os::unix::fs::symlink(p, bin.path().join(tool)).unwrap();
        }
    }
    if let Some(body) = script {
        let git = bin.path().join("git");
        std::fs::write(&git, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&git, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = bin.path().display().to_string();
    (bin, path)
}

fn acp_patch_find(tool: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

#[test]
fn git_missing_from_path_in_a_repo_refuses_not_skips() {
    let dir = tree(PY);
    committed(dir.path());
    std::fs::write(dir.path().join("streamy/llm.py"), "# edited\n").unwrap();
    let (_bin, path) = path_with_git(None);
    let before = state(dir.path());
    let ran = run_env(&["apply", path_str(dir.path())], &[("PATH", &path)]);
    check(
        dir.path(),
        &before,
        &ran,
        1,
        &["`git` is not on PATH", "install git", "--allow-dirty"],
    );
    let ran = run_env(
        &["apply", "--allow-dirty", path_str(dir.path())],
        &[("PATH", &path)],
    );
    check(dir.path(), &before, &ran, 0, &["inserted"]);
}

#[test]
fn git_status_failing_dubious_ownership_refuses_not_skips() {
    let dir = tree(PY);
    committed(dir.path());
    let (_bin, path) = path_with_git(Some(
        "echo \"fatal: detected dubious ownership in repository at '$PWD'\" >&2; exit 128",
    ));
    let before = state(dir.path());
    let ran = run_env(&["apply", path_str(dir.path())], &[("PATH", &path)]);
    check(
        dir.path(),
        &before,
        &ran,
        1,
        &["`git status` failed", "dubious ownership", "--allow-dirty"],
    );
}

// ---- config and templates ---------------------------------------------------------

#[test]
fn missing_templates_folder_is_an_error() {
    let dir = tree(PY);
    apply_case(
        dir.path(),
        &["--templates", "/nonexistent/templates"],
        2,
        &["/nonexistent/templates", "does not exist"],
    );
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[templates]\ndir = \"my-templates\"\n",
    )
    .unwrap();
    apply_case(dir.path(), &[], 2, &["my-templates", "does not exist"]);
}

#[test]
fn misspelt_template_file_is_an_error() {
    let dir = tree(PY);
    let templates = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(templates.path().join("python")).unwrap();
    std::fs::write(templates.path().join("python/factroy.py"), "x = 1\n").unwrap();
    apply_case(
        dir.path(),
        &["--templates", path_str(templates.path())],
        2,
        &[
            "factroy.py",
            "not a template acp-patch knows",
            "python/factory.py",
        ],
    );
}

#[test]
fn config_that_is_a_directory_is_an_error() {
    let dir = tree(PY);
    std::fs::remove_file(dir.path().join("acp-patch.toml")).unwrap();
    std::fs::create_dir(dir.path().join("acp-patch.toml")).unwrap();
    apply_case(
        dir.path(),
        &[],
        2,
        &["acp-patch.toml", "is a folder, not a file"],
    );
    let v = run(&["verify", path_str(dir.path())]);
    assert_eq!(v.code, 2);
}

#[test]
fn pin_to_a_missing_function_names_what_it_looked_for() {
    let dir = tree(PY);
    edit(dir.path(), "acp-patch.toml", |t| {
        format!("[python]\nprompt = \"streamy/agent.py:StreamyAgent.promt\"\n{t}")
    });
    apply_case(
        dir.path(),
        &[],
        1,
        &[
            "matches nothing",
            "`StreamyAgent.promt` in streamy/agent.py",
            "streamy/agent.py:StreamyAgent.prompt",
        ],
    );
}

#[test]
fn pin_to_a_missing_file_names_what_it_looked_for() {
    let dir = tree(CALLBACK);
    std::fs::write(
        dir.path().join("acp-patch.toml"),
        "[python]\nfactories = \"bridge/nope.py\"\n",
    )
    .unwrap();
    apply_case(
        dir.path(),
        &[],
        1,
        &["the pin `factories`", "bridge/nope.py", "path/to/module.py"],
    );
}

#[test]
fn advice_never_suggests_a_factories_pin_apply_would_not_honour() {
    let dir = tree(CALLBACK);
    edit(dir.path(), "bridge/server.py", |t| {
        t.replace(
            "make_reasoning_cb(conn, session_id, loop)",
            "(lambda text: None)",
        )
        .replace(
            "make_message_cb(conn, session_id, loop)",
            "(lambda text: None)",
        )
        .replace("make_tool_cb(conn, session_id, loop)", "(lambda *a: None)")
    });
    // the engine-level refinement does not fit: the protocol strategy patches it, and the
    // note says why, suggesting only the pin apply honours (`strategy`), no `factories =`
    let ran = apply_case(
        dir.path(),
        &[],
        0,
        &[
            "patched with the protocol strategy",
            "bridge/server.py:23",
            "make_*_cb(conn, session_id, loop",
            "no pin replaces that call",
            "`[python] strategy = \"engine\"`",
        ],
    );
    assert!(!ran.stderr.contains("factories ="), "{}", ran.stderr);
}

// ---- several agents, odd names ----------------------------------------------------------

#[test]
fn python_and_typescript_agents_in_one_tree_are_both_patched() {
    let dir = tempfile::tempdir().unwrap();
    crate::support::copy_into(&fixture(PY), &dir.path().join("py"));
    crate::support::copy_into(&fixture(TS), &dir.path().join("ts"));
    let ran = apply_case(dir.path(), &[], 0, &["(python and typescript agent)"]);
    assert!(ran.stderr.contains("py/streamy/agent.py"), "{}", ran.stderr);
    assert!(ran.stderr.contains("ts/src/agent.ts"), "{}", ran.stderr);
    let v = run(&["verify", "--format", "json", path_str(dir.path())]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    let doc: serde_json::Value = serde_json::from_str(&v.stdout).unwrap();
    assert_eq!(doc["agents"].as_array().unwrap().len(), 2);
}

#[test]
fn typescript_file_importing_the_sdk_without_an_agent_is_noted_not_fatal() {
    let dir = tree(PY);
    std::fs::write(
        dir.path().join("client.ts"),
        "import * as acp from \"@agentclientprotocol/sdk\";\n// a client: sessionUpdate is what it receives\nexport const c = acp;\n",
    )
    .unwrap();
    apply_case(
        dir.path(),
        &[],
        0,
        &[
            "typescript files here look like part of an ACP agent (an SDK import, or the `session/prompt` method named) but hold no agent",
            "inserted",
        ],
    );
}

#[test]
fn file_name_with_a_tab_gives_a_diff_git_apply_accepts() {
    let dir = tree(PY);
    std::fs::rename(dir.path().join("streamy"), dir.path().join("stre\tamy")).unwrap();
    edit(dir.path(), "acp-patch.toml", |t| t);
    let pristine = tempfile::tempdir().unwrap();
    crate::support::copy_into(dir.path(), pristine.path());
    let dry = run(&["apply", "--dry-run", path_str(dir.path())]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert!(
        dry.stdout.starts_with(
            "diff --git \"a/stre\\tamy/acp_progress.py\" \"b/stre\\tamy/acp_progress.py\""
        ),
        "{}",
        &dry.stdout[..200]
    );
    let patch = pristine.path().join("p.diff");
    std::fs::write(&patch, &dry.stdout).unwrap();
    git(pristine.path(), &["apply", "p.diff"]);
    std::fs::remove_file(&patch).unwrap();
    apply_case(dir.path(), &[], 0, &["inserted"]);
    assert_eq!(
        std::fs::read(dir.path().join("stre\tamy/agent.py")).unwrap(),
        std::fs::read(pristine.path().join("stre\tamy/agent.py")).unwrap()
    );
}

#[test]
fn non_ascii_file_name_gives_a_diff_git_apply_accepts() {
    let dir = tree(PY);
    std::fs::rename(dir.path().join("streamy"), dir.path().join("strüme")).unwrap();
    let pristine = tempfile::tempdir().unwrap();
    crate::support::copy_into(dir.path(), pristine.path());
    let dry = run(&["apply", "--dry-run", path_str(dir.path())]);
    assert!(
        dry.stdout
            .starts_with("diff --git \"a/str\\303\\274me/acp_progress.py\""),
        "{}",
        &dry.stdout[..100]
    );
    std::fs::write(pristine.path().join("p.diff"), &dry.stdout).unwrap();
    git(pristine.path(), &["apply", "p.diff"]);
}

// ---- output: pipes and machine formats ---------------------------------------------

/// Runs acp-patch with stdout a pipe whose reader is already gone (`| head` that quit).
fn run_closed_stdout(args: &[&str]) -> Ran {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn broken_pipe_on_a_dry_run_ends_quietly_with_exit_0() {
    let dir = tree(PY);
    let before = state(dir.path());
    for format in ["text", "json", "github"] {
        let ran = run_closed_stdout(&[
            "apply",
            "--dry-run",
            "--format",
            format,
            path_str(dir.path()),
        ]);
        check(dir.path(), &before, &ran, 0, &[]);
        assert!(!ran.stderr.contains("Broken pipe"), "{}", ran.stderr);
    }
}

#[test]
fn smoke_on_a_closed_stdout_ends_quietly_with_its_verdict() {
    // a run that cannot happen (no agent command) prints its document in every format but
    // text: the closed pipe ends it quietly, its exit code 2 kept
    let empty = tempfile::tempdir().unwrap();
    for format in ["text", "json", "github", "html"] {
        let ran = run_closed_stdout(&["smoke", "--format", format, path_str(empty.path())]);
        assert_eq!(ran.code, 2, "{format}: {}", ran.stderr);
        assert!(
            !ran.stderr.contains("Broken pipe"),
            "{format}: {}",
            ran.stderr
        );
        assert!(!ran.stderr.contains("writing the output"), "{}", ran.stderr);
        assert!(!ran.stderr.contains("panicked"), "{format}: {}", ran.stderr);
    }
}

#[test]
fn a_closed_stdout_never_turns_a_failure_into_exit_0() {
    // `acp-patch verify | head -1` in a pipeline: the gate must stay failing
    let dir = tree(PY);
    let before = state(dir.path());
    for format in ["text", "json", "github"] {
        let ran = run_closed_stdout(&["verify", "--format", format, path_str(dir.path())]);
        check(dir.path(), &before, &ran, 1, &[]);
        assert!(!ran.stderr.contains("Broken pipe"), "{}", ran.stderr);
    }
    // a verify that holds, and init's survey, still end quietly with 0
    let patched = tree(PY);
    assert_eq!(run(&["apply", path_str(patched.path())]).code, 0);
    let ran = run_closed_stdout(&["verify", path_str(patched.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let ran = run_closed_stdout(&["init", "--dry-run", path_str(dir.path())]);
    check(dir.path(), &before, &ran, 0, &[]);
    // refusals printed on stdout (the JSON document) keep their code: apply on a dirty
    // tree, revert of a hand-edited piece, init with no agent
    committed(dir.path());
    edit(dir.path(), "streamy/llm.py", |t| format!("{t}# edited\n"));
    let before = state(dir.path());
    let ran = run_closed_stdout(&["apply", "--format", "json", path_str(dir.path())]);
    check(dir.path(), &before, &ran, 1, &[]);
    edit(patched.path(), AGENT, |t| {
        t.replace(
            "@acp_progress.cancel_handler",
            "@acp_progress.cancel_handler  # mine",
        )
    });
    let ran = run_closed_stdout(&[
        "revert",
        "--dry-run",
        "--format",
        "json",
        path_str(patched.path()),
    ]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    let empty = tempfile::tempdir().unwrap();
    let ran = run_closed_stdout(&[
        "init",
        "--dry-run",
        "--format",
        "json",
        path_str(empty.path()),
    ]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    // a smoke run that fails (the agent crashes) exits 1 though its report went nowhere
    let ran = run_closed_stdout(&[
        "smoke",
        path_str(&fixture("smoke/crash")),
        "--timeout-s",
        "30",
    ]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
}

#[test]
fn closed_stderr_keeps_the_exit_code() {
    let dir = tree(PY);
    std::fs::set_permissions(
        dir.path().join(AGENT),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(["apply", path_str(dir.path())])
        .stderr(writer)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a refusal stays a refusal");
}

#[test]
fn json_on_every_path_including_refusals() {
    let dir = tree(PY);
    committed(dir.path());
    std::fs::write(dir.path().join("streamy/llm.py"), "# edited\n").unwrap();
    let before = state(dir.path());
    let ran = run(&["apply", "--format", "json", path_str(dir.path())]);
    check(dir.path(), &before, &ran, 1, &["uncommitted changes"]);
    let doc: serde_json::Value =
        serde_json::from_str(&ran.stdout).expect("stdout is one JSON document");
    assert_eq!(doc["ok"], false);
    assert_eq!(doc["error"]["kind"], "dirty_tree");
    assert_eq!(doc["error"]["exit_code"], 1);
    // a dry run: only the document on stdout, the diff in its field
    let ran = run(&[
        "apply",
        "--dry-run",
        "--format",
        "json",
        path_str(dir.path()),
    ]);
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).expect("one document");
    assert!(
        doc["diff"]
            .as_str()
            .unwrap()
            .starts_with("diff --git a/streamy/acp_progress.py")
    );
    // verify and init refusals too
    for cmd in ["verify", "init"] {
        let ran = run(&[cmd, "--format", "json", "/nonexistent/agent"]);
        assert_eq!(ran.code, 2);
        let doc: serde_json::Value = serde_json::from_str(&ran.stdout).expect("one document");
        assert_eq!(
            (doc["ok"].clone(), doc["error"]["kind"].clone()),
            (false.into(), "missing_path".into())
        );
    }
    let ambiguous = tree(PY);
    // a second agent class whose sends go through two connections: which one is the card's?
    edit(ambiguous.path(), AGENT, |t| {
        format!(
            "{t}\n\nclass Other(acp.Agent):\n    async def prompt(self, prompt, session_id, **kwargs):\n        await self._a.session_update(session_id=session_id, update=None)\n        await self._b.session_update(session_id=session_id, update=None)\n"
        )
    });
    let ran = run(&["apply", "--format", "json", path_str(ambiguous.path())]);
    let doc: serde_json::Value = serde_json::from_str(&ran.stdout).expect("one document");
    assert_eq!(doc["error"]["kind"], "ambiguous");
    assert_eq!(doc["error"]["candidates"].as_array().unwrap().len(), 2);
}

#[test]
fn github_format_annotates_an_unlocatable_site_and_keeps_the_report_off_stdout() {
    let dir = tree(PY);
    edit(dir.path(), "acp-patch.toml", |t| {
        format!("[python]\nprompt = \"streamy/agent.py:Nope.prompt\"\n{t}")
    });
    let ran = run(&["verify", "--format", "github", path_str(dir.path())]);
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stdout.starts_with("::error "), "{}", ran.stdout);
    assert!(ran.stdout.contains("matches nothing"), "{}", ran.stdout);
    assert!(
        ran.stdout.lines().all(|l| l.starts_with("::")),
        "{}",
        ran.stdout
    );
    let ok = tree(PY);
    let ran = run(&["verify", "--format", "github", path_str(ok.path())]);
    assert!(
        ran.stdout.lines().all(|l| l.starts_with("::error ")),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stderr.contains("(python agent, protocol shape)"),
        "{}",
        ran.stderr
    );
}

// ---- init -------------------------------------------------------------------------------

#[test]
fn init_pins_are_ones_apply_honours() {
    for case in [PY, CALLBACK, TS, RS] {
        let dir = tree(case);
        let expected = run(&["apply", "--dry-run", path_str(dir.path())]);
        assert_eq!(expected.code, 0, "{case}: {}", expected.stderr);
        let had = std::fs::read_to_string(dir.path().join("acp-patch.toml")).ok();
        let ran = apply_like_init(dir.path());
        assert!(ran.contains("# "), "{case}: {ran}");
        // uncomment every pin line: apply must give the same patch
        let pinned: String = ran
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(pin) if pin.contains(" = \"") => format!("{pin}\n"),
                _ => format!("{l}\n"),
            })
            .collect();
        let pins = pinned
            .lines()
            .filter(|l| l.contains(" = \"") && !l.starts_with('#'))
            .count();
        assert!(pins >= 1, "{case}: no pin in\n{ran}");
        std::fs::write(
            dir.path().join("acp-patch.toml"),
            format!("{}{pinned}", had.unwrap_or_default()),
        )
        .unwrap();
        let pinned_run = run(&["apply", "--dry-run", path_str(dir.path())]);
        assert_eq!(pinned_run.code, 0, "{case}: {}", pinned_run.stderr);
        assert_eq!(
            pinned_run.stdout, expected.stdout,
            "{case}: the pins moved the patch"
        );
    }
}

/// `init` on a copy of the tree: the text it appends (the copy is written, then read).
fn apply_like_init(dir: &Path) -> String {
    let copy = crate::support::copy_tree(dir);
    let had = std::fs::read_to_string(copy.path().join("acp-patch.toml")).unwrap_or_default();
    let before = state(copy.path());
    let ran = run(&["init", path_str(copy.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let after = state(copy.path());
    let changed: Vec<&String> = after
        .iter()
        .filter(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        changed,
        ["acp-patch.toml"],
        "init writes acp-patch.toml only"
    );
    let written = std::fs::read_to_string(copy.path().join("acp-patch.toml")).unwrap();
    assert!(written.starts_with(&had), "init kept the existing config");
    let dry = run(&["init", "--dry-run", path_str(dir)]);
    assert_eq!(
        dry.stdout,
        written[had.len()..],
        "init --dry-run prints what init writes"
    );
    written[had.len()..].to_string()
}

#[test]
fn init_lists_candidates_of_an_ambiguous_site_and_refuses_to_overwrite_pins() {
    let dir = tree(PY);
    edit(dir.path(), AGENT, |t| {
        format!(
            "{t}\n\nclass Other(acp.Agent):\n    async def prompt(self, prompt, session_id, **kwargs):\n        return None\n"
        )
    });
    let ran = run(&["init", "--dry-run", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(ran.stdout.contains("2 candidates"), "{}", ran.stdout);
    assert!(
        ran.stdout
            .contains("# prompt = \"streamy/agent.py:StreamyAgent.prompt\""),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout
            .contains("# prompt = \"streamy/agent.py:Other.prompt\""),
        "{}",
        ran.stdout
    );
    // a config that already has the [python] table is not written over
    edit(dir.path(), "acp-patch.toml", |t| {
        format!("[python]\nprompt = \"streamy/agent.py:StreamyAgent.prompt\"\n{t}")
    });
    let before = state(dir.path());
    let ran = run(&["init", path_str(dir.path())]);
    check(
        dir.path(),
        &before,
        &ran,
        1,
        &["acp-patch.toml: already exists", "init --dry-run"],
    );
}

#[test]
fn legacy_temp_file_names_are_cleaned_too() {
    let dir = tree(PY);
    std::fs::write(dir.path().join("streamy/.acp-patch-a1B2c3"), "half a file").unwrap();
    let ran = run(&["apply", path_str(dir.path())]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert!(!dir.path().join("streamy/.acp-patch-a1B2c3").exists());
}
