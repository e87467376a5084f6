//! The fixture cases: every fixtures/typescript/<case>/ with a case.toml, run through the steps
//! of the shared design (dry run == expected.diff and writes nothing; verify before; apply;
//! after/ when present; apply again is a no-op; `git apply` of the dry run == the applied tree;
//! verify after; typecheck; smoke runs unpatched and patched). This runner stands in for the
//! table-driven one until that lands; one test per case, listed at the bottom.

use super::*;
use std::collections::BTreeSet;

pub(crate) struct Case {
    pub dir: PathBuf,
    pub summary: Option<String>,
    pub verify_before_exit: i32,
    pub apply_args: Vec<String>,
    pub deps: Option<String>,
    pub smoke: Vec<SmokeRun>,
}

pub(crate) struct SmokeRun {
    pub args: Vec<String>,
    pub unpatched_fails: Vec<String>,
    pub patched_fails: Vec<String>,
}

fn strings(v: Option<&toml::Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().expect("a string").to_string())
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn load(name: &str) -> Case {
    let dir = fixture(&format!("typescript/{name}"));
    let text = std::fs::read_to_string(dir.join("case.toml")).expect("case.toml");
    let v: toml::Value = toml::from_str(&text).expect("case.toml parses");
    let compile = v.get("compile");
    if compile
        .and_then(|c| c.get("skip"))
        .and_then(|s| s.as_bool())
        .unwrap_or(false)
    {
        panic!("{name}: compile.skip is not used by TypeScript cases");
    }
    Case {
        summary: v
            .get("summary")
            .and_then(|s| s.as_str())
            .map(str::to_string),
        verify_before_exit: v
            .get("verify_before_exit")
            .and_then(|s| s.as_integer())
            .unwrap_or(1) as i32,
        apply_args: strings(v.get("apply_args")),
        deps: compile
            .and_then(|c| c.get("deps"))
            .and_then(|d| d.as_str())
            .map(str::to_string),
        smoke: v
            .get("smoke")
            .and_then(|s| s.as_array())
            .map(|runs| {
                runs.iter()
                    .map(|r| SmokeRun {
                        args: strings(r.get("args")),
                        unpatched_fails: strings(r.get("unpatched_fails")),
                        patched_fails: strings(r.get("patched_fails")),
                    })
                    .collect()
            })
            .unwrap_or_default(),
        dir,
    }
}

fn with_args<'a>(case: &'a Case, cmd: &'a [&'a str], root: &'a Path) -> Vec<&'a str> {
    let mut args: Vec<&str> = cmd.to_vec();
    args.extend(case.apply_args.iter().map(String::as_str));
    args.push(path_str(root));
    args
}

/// Every step but the smoke runs.
pub(crate) fn run_static(name: &str) {
    let case = load(name);
    let before = case.dir.join("before");
    if let Some(deps) = &case.deps {
        typecheck_copy(&before, deps); // the unpatched agent typechecks too
    }

    let dir = copy_tree(&before);
    let pristine = snapshot_tree(dir.path());
    let dry = acp_patch(&with_args(&case, &["apply", "--dry-run"], dir.path()), None);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert_snapshot(&case.dir.join("expected.diff"), &dry.stdout);
    assert_eq!(
        pristine,
        snapshot_tree(dir.path()),
        "a dry run wrote something"
    );
    if let Some(summary) = &case.summary {
        assert!(dry.stderr.contains(summary.as_str()), "{}", dry.stderr);
    }

    let v = acp_patch(&with_args(&case, &["verify"], &before), None);
    assert_eq!(v.code, case.verify_before_exit, "{}{}", v.stdout, v.stderr);
    assert_snapshot(
        &case.dir.join("verify-before.txt"),
        &normalize(&v.stdout, &before),
    );

    let run = acp_patch(&with_args(&case, &["apply"], dir.path()), None);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let after = case.dir.join("after");
    if after.is_dir() {
        assert_same_tree(dir.path(), &after);
    }
    let patched = snapshot_tree(dir.path());
    assert!(
        patched.iter().zip(&pristine).all(|((n, x), (m, y))| n != m
            || only_insertions(&String::from_utf8_lossy(y), &String::from_utf8_lossy(x))),
        "apply changed bytes it did not insert"
    );

    // apply twice: nothing to do, nothing changed
    let again = acp_patch(&with_args(&case, &["apply"], dir.path()), None);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stderr.contains("nothing to do"), "{}", again.stderr);
    assert_eq!(patched, snapshot_tree(dir.path()));
    let dry = acp_patch(&with_args(&case, &["apply", "--dry-run"], dir.path()), None);
    assert_eq!((dry.code, dry.stdout.as_str()), (0, ""));

    // the dry-run diff, applied by git to a pristine copy, gives the applied tree
    let fresh = copy_tree(&before);
    let dry = acp_patch(
        &with_args(&case, &["apply", "--dry-run"], fresh.path()),
        None,
    );
    let diff = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(diff.path(), &dry.stdout).unwrap();
    git(fresh.path(), &["apply", path_str(diff.path())]);
    assert_eq!(
        patched,
        snapshot_tree(fresh.path()),
        "git apply of the dry run differs from apply"
    );

    let v = acp_patch(&with_args(&case, &["verify"], dir.path()), None);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    assert_snapshot(
        &case.dir.join("verify-after.txt"),
        &normalize(&v.stdout, dir.path()),
    );

    if let Some(deps) = &case.deps {
        link_node_modules(dir.path(), deps);
        tsc(dir.path(), deps);
    }
}

/// The checks a smoke run failed, from its JSON report.
pub(crate) fn smoke_failing(dir: &Path, args: &[String]) -> (BTreeSet<String>, String) {
    let _turn = cpu_lock();
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("report.json");
    let mut cmd = vec![
        "smoke".to_string(),
        path_str(dir).to_string(),
        "--json".into(),
        path_str(&json).into(),
    ];
    cmd.extend(args.iter().cloned());
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let run = acp_patch(&cmd, None);
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(&json)
            .unwrap_or_else(|_| panic!("no report: {}\n{}", run.stdout, run.stderr)),
    )
    .unwrap();
    let failing = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["passed"] == false)
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    let expected_code = i32::from(
        report["checks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["passed"] == false),
    );
    assert_eq!(run.code, expected_code, "{}\n{}", run.stdout, run.stderr);
    (failing, format!("{}\n{}", run.stdout, run.stderr))
}

/// The smoke runs of a case: unpatched (when it names what fails) and patched.
pub(crate) fn run_smoke(name: &str) {
    let case = load(name);
    let deps = case
        .deps
        .as_deref()
        .expect("a smoke run needs [compile] deps");
    let before = case.dir.join("before");
    for run in &case.smoke {
        if !run.unpatched_fails.is_empty() {
            let dir = copy_tree(&before);
            link_node_modules(dir.path(), deps);
            let (failing, out) = smoke_failing(dir.path(), &run.args);
            let want: BTreeSet<String> = run.unpatched_fails.iter().cloned().collect();
            assert_eq!(failing, want, "{name} unpatched {:?}:\n{out}", run.args);
        }
        let dir = copy_tree(&before);
        let apply = acp_patch(&with_args(&case, &["apply"], dir.path()), None);
        assert_eq!(apply.code, 0, "{}", apply.stderr);
        link_node_modules(dir.path(), deps);
        let (failing, out) = smoke_failing(dir.path(), &run.args);
        let want: BTreeSet<String> = run.patched_fails.iter().cloned().collect();
        assert_eq!(failing, want, "{name} patched {:?}:\n{out}", run.args);
    }
}

macro_rules! cases {
    ($($name:ident),* $(,)?) => {
        mod snapshots {
            $(#[test] fn $name() { super::run_static(stringify!($name)); })*
        }
        mod smoke {
            $(#[test] fn $name() { super::run_smoke(stringify!($name)); })*
        }
        /// Every case folder is listed above (a folder nobody runs is a test that cannot fail).
        #[test]
        fn every_case_folder_is_run() {
            let listed = [$(stringify!($name)),*];
            for e in std::fs::read_dir(fixture("typescript")).unwrap() {
                let p = e.unwrap().path();
                if p.join("case.toml").is_file() {
                    let n = p.file_name().unwrap().to_string_lossy().to_string();
                    assert!(listed.contains(&n.as_str()), "fixtures/typescript/{n} is not run");
                }
            }
        }
    };
}

cases!(
    sdk1_agent,
    sdk2_agent,
    inline_switch,
    sdk2_params_only,
    session_closure,
    per_kind_helpers,
    tsx_agent,
    raw_jsonrpc,
);
