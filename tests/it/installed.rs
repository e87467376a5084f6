//! `--installed NAME`: real agents installed from the registries into a temporary Python
//! environment (mistral-vibe from PyPI, with uv) and a temporary npm prefix (Zed's
//! claude-agent-acp): apply, verify, revert, apply again after the package manager
//! reinstalled the package; the manifest beside the package is the record, and nothing
//! outside the package changes but that manifest.

use crate::support::{path_str, py_compile, repo, snapshot_tree};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn acp_patch_in(args: &[&str], env: &[(&str, String)], cwd: &Path) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_acp-patch"))
        .args(args)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .current_dir(cwd)
        .output()
        .expect("run acp-patch");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn run_ok(cmd: &mut Command) {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// PATH with `dir` first.
fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Every file below `root` except those under `package` and the manifest folder.
fn outside(root: &Path, package: &Path) -> Vec<(String, Vec<u8>)> {
    let skip = package
        .strip_prefix(root)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    snapshot_tree(root)
        .into_iter()
        .filter(|(rel, _)| !rel.starts_with(&format!("{skip}/")) && !rel.contains(".acp-patch/"))
        .collect()
}

const VIBE: &str = "mistral-vibe==3.0.3";

fn uv() -> PathBuf {
    let out = Command::new("bash")
        .arg(repo().join("scripts/provision/uv.sh"))
        .output()
        .expect("uv.sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

fn uv_install(uv: &Path, python: &Path, reinstall: bool) {
    let mut cmd = Command::new(uv);
    cmd.args(["pip", "install", "-q", "--no-deps", "--python"])
        .arg(python)
        .env("UV_CACHE_DIR", repo().join("target/uv-cache"))
        .env("UV_PYTHON_DOWNLOADS", "never");
    if reinstall {
        cmd.arg("--reinstall");
    }
    run_ok(cmd.arg(VIBE));
}

/// The Python the agent needs (>= 3.12), as scripts/provision/python-agent.sh finds it.
fn python312() -> PathBuf {
    let versions = dirs_home().join(".pyenv/versions");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&versions)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    found.sort();
    found
        .into_iter()
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            ["3.12", "3.13", "3.14"].iter().any(|v| n.starts_with(v))
        })
        .map(|p| p.join("bin/python"))
        .find(|p| p.is_file())
        .expect("a Python >= 3.12 under ~/.pyenv/versions")
}

fn dirs_home() -> PathBuf {
    PathBuf::from(std::env::var("HOME").expect("HOME"))
}

/// mistral-vibe from PyPI in a temporary venv (the wheel only: acp-patch reads its files,
/// the agent is not run): found by its console script's shebang and by `--python`.
#[test]
fn python_environment_apply_verify_reinstall_revert() {
    let uv = uv();
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    run_ok(
        Command::new(&uv)
            .args(["venv", "-q", "--python"])
            .arg(python312())
            .arg(&venv)
            .env("UV_CACHE_DIR", repo().join("target/uv-cache"))
            .env("UV_PYTHON_DOWNLOADS", "never"),
    );
    let python = venv.join("bin/python");
    uv_install(&uv, &python, false);
    let site = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages");
    let package = site.join("vibe");
    let manifest = site.join(".acp-patch/mistral-vibe.json");
    let pristine = snapshot_tree(&package);
    let around = outside(&venv, &package);
    let on_path = [("PATH", path_with(&venv.join("bin")))];
    let elsewhere = dir.path();

    // the console script `vibe-acp` names the venv's interpreter in its shebang
    let run = acp_patch_in(&["apply", "--installed", "vibe-acp"], &on_path, elsewhere);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "acp-patch: mistral-vibe 3.0.3 (Python) installed at {}",
            package.canonicalize().unwrap().display()
        )),
        "{}",
        run.stderr
    );
    let agent = std::fs::read_to_string(package.join("acp/agent.py")).unwrap();
    assert!(
        agent.contains("\nfrom vibe import acp_progress\n"),
        "the import names the installed package (its runtime module in the top-level package)"
    );
    py_compile(
        path_str(&python),
        &package,
        &["acp/agent.py".into(), "acp_progress.py".into()],
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(record["package"], "mistral-vibe");
    assert_eq!(record["version"], "3.0.3");
    assert_eq!(record["ecosystem"], "python");
    let files: Vec<(String, String)> = record["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().into(),
                f["change"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        files.contains(&("acp_progress.py".into(), "created".into())),
        "{files:?}"
    );
    assert!(
        files.contains(&("acp/agent.py".into(), "modified".into())),
        "{files:?}"
    );
    assert_eq!(
        outside(&venv, &package),
        around,
        "only the package and its manifest change"
    );

    // the same place by --python and the distribution's name
    let by_python = ["--python", path_str(&python), "--installed", "mistral-vibe"];
    let verify = [&["verify"][..], &by_python].concat();
    let run = acp_patch_in(&verify, &[], elsewhere);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("mistral-vibe 3.0.3 is as acp-patch patched it"),
        "{}",
        run.stderr
    );
    let apply = [&["apply"][..], &by_python].concat();
    let run = acp_patch_in(&apply, &[], elsewhere);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stderr.contains("nothing to do"), "{}", run.stderr);

    // the package manager puts its files back (acp_progress.py, which it does not know, stays)
    uv_install(&uv, &python, true);
    let run = acp_patch_in(&verify, &[], elsewhere);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("was reinstalled or edited since acp-patch patched it"),
        "{}",
        run.stderr
    );
    let run = acp_patch_in(&apply, &[], elsewhere);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("was reinstalled or edited since acp-patch patched it"),
        "{}",
        run.stderr
    );
    assert_eq!(acp_patch_in(&verify, &[], elsewhere).code, 0);

    let revert = [&["revert"][..], &by_python].concat();
    let run = acp_patch_in(&revert, &[], elsewhere);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!manifest.exists() && !manifest.parent().unwrap().exists());
    assert_eq!(
        snapshot_tree(&package),
        pristine,
        "reverted to the wheel's files"
    );
    assert_eq!(outside(&venv, &package), around);
    assert_eq!(
        snapshot_tree(&venv).len(),
        around.len() + pristine.len(),
        "no manifest left behind"
    );
}

/// Zed's Claude adapter installed with `npm install -g` into a temporary prefix: found by its
/// bin on PATH (a link into the package), by `npm root -g` and in `./node_modules`; refused
/// for a user who cannot write there.
#[test]
fn npm_prefix_apply_verify_reinstall_revert() {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("prefix");
    let npm_install = |force: bool| {
        let mut cmd = Command::new("npm");
        cmd.args(["install", "-g", "--prefix"])
            .arg(&prefix)
            .args([
                "--prefer-offline",
                "--ignore-scripts",
                "--no-audit",
                "--no-fund",
            ])
            .args([
                "--loglevel=error",
                "@zed-industries/claude-agent-acp@0.23.1",
            ]);
        if force {
            cmd.arg("--force");
        }
        run_ok(&mut cmd);
    };
    npm_install(false);
    let modules = prefix.join("lib/node_modules");
    let package = modules.join("@zed-industries/claude-agent-acp");
    let manifest = modules.join(".acp-patch/@zed-industries+claude-agent-acp.json");
    let pristine = snapshot_tree(&package);
    let around = outside(&prefix, &package);
    let elsewhere = dir.path();
    let on_path = [("PATH", path_with(&prefix.join("bin")))];

    // refused, with nothing written, for a user who cannot write the package's folder
    if unsafe { libc::geteuid() } == 0 && Path::new("/usr/bin/setpriv").is_file() {
        let mut perms = std::fs::metadata(dir.path()).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(dir.path(), perms).unwrap();
        let out = Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_acp-patch"))
            .args(["apply", "--installed", "claude-agent-acp"])
            .env("PATH", path_with(&prefix.join("bin")))
            .current_dir("/")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "{}: not writable by this user, so the installed @zed-industries/claude-agent-acp cannot be patched there (nothing was written)",
                package.canonicalize().unwrap().display()
            )),
            "{stderr}"
        );
        assert_eq!(snapshot_tree(&package), pristine);
    }

    let run = acp_patch_in(
        &["apply", "--installed", "claude-agent-acp"],
        &on_path,
        elsewhere,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("acp-patch: @zed-industries/claude-agent-acp 0.23.1 (npm) installed at"),
        "{}",
        run.stderr
    );
    assert!(package.join("dist/acp-progress.js").is_file());
    assert!(manifest.is_file());
    assert_eq!(
        outside(&prefix, &package),
        around,
        "only the package and its manifest change"
    );

    // npm's global root, as NPM_CONFIG_PREFIX sets it, by the package's name
    let global = [("NPM_CONFIG_PREFIX", path_str(&prefix).to_string())];
    let by_name = ["--installed", "@zed-industries/claude-agent-acp"];
    let verify = [&["verify"][..], &by_name].concat();
    let run = acp_patch_in(&verify, &global, elsewhere);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("0.23.1 is as acp-patch patched it"),
        "{}",
        run.stderr
    );

    npm_install(true);
    let run = acp_patch_in(&verify, &global, elsewhere);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("was reinstalled or edited since acp-patch patched it"),
        "{}",
        run.stderr
    );
    // ./node_modules, from the prefix's lib folder
    let local = prefix.join("lib");
    let run = acp_patch_in(&[&["apply"][..], &by_name].concat(), &[], &local);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("was reinstalled or edited"),
        "{}",
        run.stderr
    );
    assert_eq!(acp_patch_in(&verify, &global, elsewhere).code, 0);

    let run = acp_patch_in(&[&["revert"][..], &by_name].concat(), &global, elsewhere);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!manifest.exists());
    assert_eq!(snapshot_tree(&package), pristine, "reverted to npm's files");
    assert_eq!(outside(&prefix, &package), around);
}

/// A venv (no pip, nothing downloaded) holding two hand-made distributions, as gptme-acp
/// and gptme are built: `realagent` 0.1 (package `realagent`, an ACP agent without SDK) and
/// the launcher `agent-launcher` 0.1 (a stub package `agent_launcher` and the console script
/// `agent-launcher = realagent.__main__:main`, a module the other distribution installs).
/// Returns the venv and its site-packages.
fn launcher_venv(dir: &Path) -> (PathBuf, PathBuf) {
    let venv = dir.join("venv");
    run_ok(
        Command::new("python3")
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv),
    );
    let python = venv.join("bin/python");
    let out = Command::new(&python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ])
        .output()
        .expect("venv python");
    let site = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    let write = |rel: &str, text: &str| {
        let path = site.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("realagent/__init__.py", "");
    write(
        "realagent/__main__.py",
        r#"import json
import sys


def write(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def handle_prompt(params):
    write({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": params["sessionId"],
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}}})
    return {"stopReason": "end_turn"}


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        method, params = msg.get("method"), msg.get("params") or {}
        if method == "initialize":
            result = {"protocolVersion": 1, "agentCapabilities": {}}
        elif method == "session/new":
            result = {"sessionId": "s1"}
        elif method == "session/prompt":
            result = handle_prompt(params)
        else:
            continue
        write({"jsonrpc": "2.0", "id": msg["id"], "result": result})


if __name__ == "__main__":
    main()
"#,
    );
    let info = "realagent-0.1.dist-info";
    write(
        &format!("{info}/METADATA"),
        "Metadata-Version: 2.1\nName: realagent\nVersion: 0.1\n",
    );
    write(&format!("{info}/top_level.txt"), "realagent\n");
    write(
        &format!("{info}/RECORD"),
        &format!(
            "realagent/__init__.py,,\nrealagent/__main__.py,,\n{info}/METADATA,,\n{info}/top_level.txt,,\n{info}/RECORD,,\n"
        ),
    );
    write("agent_launcher/__init__.py", "");
    let info = "agent_launcher-0.1.dist-info";
    write(
        &format!("{info}/METADATA"),
        "Metadata-Version: 2.1\nName: agent-launcher\nVersion: 0.1\nRequires-Dist: realagent\n",
    );
    write(
        &format!("{info}/entry_points.txt"),
        "[console_scripts]\nagent-launcher = realagent.__main__:main\n",
    );
    write(&format!("{info}/top_level.txt"), "agent_launcher\n");
    write(
        &format!("{info}/RECORD"),
        &format!(
            "agent_launcher/__init__.py,,\n../../../bin/agent-launcher,,\n{info}/METADATA,,\n{info}/entry_points.txt,,\n{info}/top_level.txt,,\n{info}/RECORD,,\n"
        ),
    );
    let script = venv.join("bin/agent-launcher");
    std::fs::write(
        &script,
        format!(
            "#!{}\nimport sys\nfrom realagent.__main__ import main\nif __name__ == '__main__':\n    sys.exit(main())\n",
            python.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    (venv, site)
}

/// The console script of a launcher distribution (its own package a stub; the script starts
/// in a module another distribution installs, as gptme-acp's runs gptme.acp.__main__:main):
/// the package patched is the one the script starts in, said with the distribution that
/// installs it, whose manifest it is; with that distribution gone, an error naming the
/// entry point and the distribution to install (exit 2).
#[test]
fn launcher_console_script_patches_the_distribution_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (venv, site) = launcher_venv(dir.path());
    let python = venv.join("bin/python");
    let package = site.join("realagent");
    let stub = site.join("agent_launcher");
    let pristine = snapshot_tree(&package);
    let stub_pristine = snapshot_tree(&stub);
    let manifest = site.join(".acp-patch/realagent.json");
    let elsewhere = dir.path();
    let says = |verb: &str, note: &str| {
        format!(
            "acp-patch: agent-launcher 0.1's console script agent-launcher runs realagent.__main__:main, from distribution realagent 0.1: patching that\n\
             acp-patch: realagent 0.1 (Python) installed at {}\n\
             {note}\
             \x20 __main__.py:3  import of the runtime module\n\
             \x20 __main__.py:11  prompt handler: start and turn end\n\
             \x20 __main__.py:13  send wrapped\n\
             \x20 acp_progress.py:1  runtime module\n\
             acp-patch: {verb} 4 pieces into 2 files (python agent)\n",
            package.display()
        )
    };

    // by --python, and by the console script on PATH (its shebang names the interpreter)
    let by_python = [
        "--python",
        path_str(&python),
        "--installed",
        "agent-launcher",
    ];
    let on_path = [("PATH", path_with(&venv.join("bin")))];
    for (args, env) in [(&by_python[..], &[][..]), (&by_python[2..], &on_path[..])] {
        let run = acp_patch_in(
            &[&["apply", "--dry-run"][..], args].concat(),
            env,
            elsewhere,
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stderr, says("would insert", ""));
        assert!(
            run.stdout
                .starts_with("diff --git a/__main__.py b/__main__.py\n"),
            "{}",
            run.stdout
        );
        assert!(
            run.stdout
                .contains("\n+from realagent import acp_progress\n"),
            "{}",
            run.stdout
        );
    }
    assert_eq!(
        snapshot_tree(&package),
        pristine,
        "a dry run writes nothing"
    );

    let run = acp_patch_in(&[&["apply"][..], &by_python].concat(), &[], elsewhere);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        says(
            "inserted",
            &format!("note: recorded what changed in {}\n", manifest.display())
        )
    );
    py_compile(
        path_str(&python),
        &package,
        &["__main__.py".into(), "acp_progress.py".into()],
    );
    assert_eq!(
        snapshot_tree(&stub),
        stub_pristine,
        "the stub is left alone"
    );
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    assert_eq!(record["package"], "realagent");
    assert_eq!(record["version"], "0.1");
    assert_eq!(record["root"], path_str(&package));

    // the launcher and the distribution name one place, one manifest
    for name in ["agent-launcher", "realagent"] {
        let run = acp_patch_in(
            &["verify", "--python", path_str(&python), "--installed", name],
            &[],
            elsewhere,
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(
            run.stderr.contains(&format!(
                "note: realagent 0.1 is as acp-patch patched it (recorded by acp-patch {} in {})",
                record["acp_patch"].as_str().unwrap(),
                manifest.display()
            )),
            "{}",
            run.stderr
        );
    }
    let run = acp_patch_in(&[&["revert"][..], &by_python].concat(), &[], elsewhere);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!manifest.exists() && !manifest.parent().unwrap().exists());
    assert_eq!(snapshot_tree(&package), pristine, "reverted");

    // realagent uninstalled: the error names the entry point and what to install
    std::fs::remove_dir_all(&package).unwrap();
    std::fs::remove_dir_all(site.join("realagent-0.1.dist-info")).unwrap();
    let run = acp_patch_in(
        &[&["apply", "--dry-run"][..], &by_python].concat(),
        &[],
        elsewhere,
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        format!(
            "acp-patch: error: agent-launcher: agent-launcher 0.1's console script agent-launcher runs realagent.__main__:main, but no distribution in the environment of {} installs realagent.__main__; agent-launcher requires realagent, which is not installed there: install it, then run `acp-patch apply --installed realagent`\n",
            python.display()
        )
    );
    assert_eq!(run.stdout, "");
    assert_eq!(snapshot_tree(&stub), stub_pristine);
}

/// A name installed nowhere: said with where acp-patch looked (exit 2), nothing written.
#[test]
fn not_installed_says_where_it_looked() {
    let dir = tempfile::tempdir().unwrap();
    let run = acp_patch_in(
        &["apply", "--installed", "no-such-acp-agent-xyz"],
        &[("NPM_CONFIG_PREFIX", path_str(dir.path()).to_string())],
        dir.path(),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.starts_with("acp-patch: error: no-such-acp-agent-xyz: no installed agent by that name; looked PATH (no `no-such-acp-agent-xyz`), node_modules, "),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("pass --python PY"), "{}", run.stderr);
    // a folder and --installed at once is a usage error
    let run = acp_patch_in(&["apply", "--installed", "x", "."], &[], dir.path());
    assert_eq!(run.code, 2);
    assert!(run.stderr.starts_with("error:"), "{}", run.stderr);
}
