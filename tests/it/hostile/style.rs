//! Style and content.

use super::*;

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
