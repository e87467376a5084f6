//! The checks on each agent in a generated style: apply, parse, compile (CPython; `tsc` and
//! `cargo check` on one sample per fixture), verify, a second apply that changes nothing, and
//! revert back to the generated agent byte for byte.

use super::*;

/// A CPython that compiles files without writing bytecode: one per run, fed paths on
/// stdin, answering `ok` or the error per file.
struct Compiler {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

const COMPILE_LOOP: &str = r#"
import sys
for line in sys.stdin:
    path = line.rstrip("\n")
    try:
        with open(path, "rb") as f:
            compile(f.read(), path, "exec", dont_inherit=True)
        print("ok", flush=True)
    except SyntaxError as e:
        print(f"{path}:{e.lineno}: {e.msg}", flush=True)
"#;

fn python_compile(paths: &[PathBuf]) -> Result<(), String> {
    static COMPILER: Mutex<Option<Compiler>> = Mutex::new(None);
    let mut guard = COMPILER.lock().unwrap_or_else(|p| p.into_inner());
    let c = guard.get_or_insert_with(|| {
        let mut child = Command::new(test_python())
            .args(["-c", COMPILE_LOOP])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start python");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Compiler {
            _child: child,
            stdin,
            stdout,
        }
    });
    for p in paths {
        writeln!(c.stdin, "{}", p.display()).unwrap();
        let mut answer = String::new();
        c.stdout.read_line(&mut answer).unwrap();
        if answer.trim_end() != "ok" {
            return Err(answer.trim_end().to_string());
        }
    }
    Ok(())
}

fn parse_error(lang: Lang, text: &str) -> Option<String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match lang {
        Lang::Rust => syn::parse_file(text).err().map(|e| e.to_string()),
        _ => {
            let mut parser = tree_sitter::Parser::new();
            let language: tree_sitter::Language = if lang == Lang::Python {
                tree_sitter_python::LANGUAGE.into()
            } else {
                tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into()
            };
            parser.set_language(&language).unwrap();
            let tree = parser.parse(text, None).unwrap();
            tree.root_node()
                .has_error()
                .then(|| "tree-sitter finds an error".to_string())
        }
    }
}

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(TestCaseError::fail(format!($($msg)+)));
        }
    };
}

/// One generated agent through apply, checks, apply again, revert.
fn check_case(lang: Lang, case: &str, m: &Mutation, dir: &Path) -> Result<(), TestCaseError> {
    generate(lang, case, m, dir);
    let generated = snapshot_tree(dir);
    let opts = ApplyOptions {
        allow_dirty: true,
        ..Default::default()
    };
    let applied =
        commands::apply(dir, &opts).map_err(|e| TestCaseError::fail(format!("apply: {e}")))?;
    ensure!(!applied.nothing_to_do(), "apply found nothing to do");
    let mut compile = Vec::new();
    for path in walk(dir) {
        let rel = path
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let new = std::fs::read(&path).unwrap();
        let old = generated.iter().find(|(g, _)| *g == rel).map(|(_, b)| b);
        if old == Some(&new) {
            continue;
        }
        let new = String::from_utf8_lossy(&new);
        if !rel.ends_with(".toml")
            && let Some(e) = parse_error(lang, &new)
        {
            return Err(TestCaseError::fail(format!("{rel} does not parse: {e}")));
        }
        if rel.ends_with(".py") {
            compile.push(path.clone());
        }
        let Some(old) = old else {
            continue; // a file apply created (a runtime module)
        };
        let old = String::from_utf8_lossy(old);
        ensure!(
            only_insertions(&old, &new),
            "{rel}: an original byte changed"
        );
        if old.contains("\r\n") {
            ensure!(
                new.matches('\n').count() == new.matches("\r\n").count(),
                "{rel}: a line without CR in a CRLF file"
            );
        } else {
            ensure!(!new.contains('\r'), "{rel}: CR in an LF file");
        }
        ensure!(
            old.starts_with('\u{feff}') == new.starts_with('\u{feff}'),
            "{rel}: BOM changed"
        );
        ensure!(
            old.ends_with('\n') == new.ends_with('\n'),
            "{rel}: final newline changed"
        );
    }
    python_compile(&compile).map_err(TestCaseError::fail)?;
    let report = commands::verify(dir, &Default::default())
        .map_err(|e| TestCaseError::fail(format!("verify: {e}")))?;
    ensure!(
        report.exit_code() == 0,
        "verify after apply:\n{}",
        report
            .reports
            .iter()
            .map(acp_patch::output::report_text)
            .collect::<String>()
    );
    let again = commands::apply(
        dir,
        &ApplyOptions {
            dry_run: true,
            ..opts.clone()
        },
    )
    .map_err(|e| TestCaseError::fail(format!("second apply: {e}")))?;
    ensure!(
        again.nothing_to_do(),
        "second apply is not a no-op:\n{}",
        again.diff
    );
    let reverted = commands::revert(
        dir,
        &RevertOptions {
            allow_dirty: true,
            ..Default::default()
        },
    )
    .map_err(|e| TestCaseError::fail(format!("revert: {e}")))?;
    ensure!(reverted.written, "revert wrote nothing");
    let back = snapshot_tree(dir);
    for ((rel, want), (_, got)) in generated.iter().zip(back.iter()) {
        ensure!(want == got, "revert did not restore {rel}");
    }
    ensure!(
        generated.len() == back.len(),
        "revert left a different file list"
    );
    Ok(())
}

/// `ACP_PATCH_PROPTEST_CASES` (default 48) cases per language.
fn cases() -> u32 {
    std::env::var("ACP_PATCH_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

fn run(lang: Lang) {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let fixtures = lang.fixtures();
    let strategy = (0..fixtures.len(), mutation(lang));
    let result = runner.run(&strategy, |(i, m)| {
        let dir = tempfile::tempdir().unwrap();
        check_case(lang, fixtures[i], &m, dir.path())
    });
    if let Err(e) = result {
        panic!("{lang:?}: {e}");
    }
}

#[test]
fn python_agents_in_any_style_patch_compile_and_revert() {
    run(Lang::Python);
}

#[test]
fn typescript_agents_in_any_style_patch_and_revert() {
    run(Lang::TypeScript);
}

#[test]
fn rust_agents_in_any_style_patch_and_revert() {
    run(Lang::Rust);
}

/// Every mutation at once, from a fixed seed: the sample the slow compilers check.
fn kitchen_sink(lang: Lang) -> Mutation {
    Mutation {
        indent: None,
        crlf: true,
        bom: lang != Lang::Rust,
        final_newline: false,
        quotes: (lang != Lang::Rust).then_some(true),
        blank: 150,
        comments: 150,
        decorators: if lang == Lang::TypeScript { 0 } else { 300 },
        extra_methods: 2,
        seed: 0x5eed,
    }
}

#[test]
fn typescript_sample_in_a_generated_style_typechecks() {
    for case in Lang::TypeScript.fixtures() {
        let dir = tempfile::tempdir().unwrap();
        check_case(
            Lang::TypeScript,
            case,
            &kitchen_sink(Lang::TypeScript),
            dir.path(),
        )
        .unwrap();
        commands::apply(
            dir.path(),
            &ApplyOptions {
                allow_dirty: true,
                ..Default::default()
            },
        )
        .unwrap();
        let deps = case.trim_start_matches("typescript/");
        crate::typescript::link_node_modules(dir.path(), deps);
        crate::typescript::tsc(dir.path(), deps);
    }
}

#[test]
fn rust_sample_in_a_generated_style_passes_cargo_check() {
    for case in Lang::Rust.fixtures() {
        let dir = tempfile::tempdir().unwrap();
        check_case(Lang::Rust, case, &kitchen_sink(Lang::Rust), dir.path()).unwrap();
        commands::apply(
            dir.path(),
            &ApplyOptions {
                allow_dirty: true,
                ..Default::default()
            },
        )
        .unwrap();
        let name = case.trim_start_matches("rust/");
        // the fixtures' target dir: the dependencies are built already
        let out = cargo_fixture("check", dir.path());
        assert!(
            out.status.success(),
            "cargo check of a generated {name}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn decorated_methods_are_patched_and_reverted_like_plain_ones() {
    // every `def` decorated, the SDK-called `prompt` included
    for case in Lang::Python.fixtures() {
        let m = Mutation {
            indent: Some(4),
            crlf: false,
            bom: false,
            final_newline: true,
            quotes: None,
            blank: 0,
            comments: 0,
            decorators: 1000,
            extra_methods: 0,
            seed: 1,
        };
        let dir = tempfile::tempdir().unwrap();
        check_case(Lang::Python, case, &m, dir.path()).unwrap();
        generate(Lang::Python, case, &m, dir.path());
        let agent = std::fs::read_to_string(dir.path().join(match *case {
            "python/asyncio_agent" => "streamy/agent.py",
            _ => "bridge/server.py",
        }))
        .unwrap();
        assert!(
            agent.contains("@(lambda f: f)\n    async def prompt("),
            "{agent}"
        );
    }
}
