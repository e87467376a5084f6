//! The thin binary: arguments in, exit code out. Everything else is in the library.

use acp_patch::commands::{self, ApplyOptions};
use acp_patch::error::Error;
use acp_patch::output::{Context, Format, Formats, Printer, SmokeResult, Streams};
use acp_patch::project::Options;
use clap::{Args, CommandFactory, Parser, Subcommand};
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "acp-patch",
    version = acp_patch::VERSION,
    about = "Give ACP agents a Thinking... card (start, heartbeat, complete) and one thought block"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Insert the progress hooks, helpers, factory, wiring and text-hold coalescing.
    Apply(ApplyArgs),
    /// Check that every piece is present and well-formed (for CI).
    Verify(VerifyArgs),
    /// Take out everything apply inserted: the tree as it was before apply, byte for byte.
    Revert(RevertArgs),
    /// Drive the agent through a real ACP turn against a scripted LLM and check what a user sees.
    Smoke(Box<acp_patch::output::smoke::SmokeArgs>),
    /// Write acp-patch.toml with the sites apply finds, each pin commented out, so a team can pin them.
    Init(InitArgs),
    /// Print the completion script for a shell (e.g. `acp-patch completions bash > ~/.local/share/bash-completion/completions/acp-patch`).
    Completions(CompletionsArgs),
    /// Print the man page (roff) to stdout, or write one page per command into a folder.
    Man(ManArgs),
}

#[derive(Args)]
struct CompletionsArgs {
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(Args)]
struct ManArgs {
    /// Write acp-patch.1 and acp-patch-<command>.1 for every command into this folder.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

#[derive(Args)]
struct Common {
    /// The agent's folder.
    #[arg(default_value = ".")]
    path: PathBuf,
    /// Config file (default: PATH/acp-patch.toml when present).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Prefix of the environment variables the inserted code reads (default ACP).
    #[arg(long)]
    env_prefix: Option<String>,
    /// A folder laid out like templates/ whose files replace the embedded templates.
    #[arg(long)]
    templates: Option<PathBuf>,
}

impl Common {
    fn options(&self) -> Options {
        Options {
            config: self.config.clone(),
            env_prefix: self.env_prefix.clone(),
            templates: self.templates.clone(),
            python: None,
        }
    }
}

#[derive(Args)]
struct ApplyArgs {
    #[command(flatten)]
    common: Common,
    /// Print the unified diff to stdout and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Write even when the git tree has uncommitted changes (or git cannot tell).
    #[arg(long)]
    allow_dirty: bool,
    /// Before writing, run `tsc --noEmit` (TypeScript) or `cargo check` (Rust) on a
    /// temporary copy of the patched tree.
    #[arg(long)]
    check_build: bool,
    /// An agent installed with pip/uv/pipx or npm instead of a folder: its console script,
    /// distribution or npm package name (found through PATH, --python, ./node_modules,
    /// `npm root -g`); patched where it is installed, with a manifest beside it.
    #[arg(long, value_name = "NAME", conflicts_with = "path")]
    installed: Option<String>,
    /// The agent's Python interpreter: for the compile and start-up checks (default:
    /// $ACP_PATCH_PYTHON, the agent's virtual environment, else one that satisfies its
    /// requires-python), and the environment --installed looks in.
    #[arg(long, value_name = "PY", value_parser = interpreter_path)]
    python: Option<PathBuf>,
    /// Output: text (diff on stdout, summary on stderr), json (one document on stdout,
    /// the diff in its `diff` field), github (refusals as annotations) or patch (a `git
    /// format-patch` series on stdout for `git am`: the runtime, then the call edits).
    #[arg(long, value_parser = Formats::APPLY, default_value_t = Format::Text)]
    format: Format,
    /// With --format patch: run the smoke test before writing and after, and put both
    /// runs' figures into the series' message.
    #[arg(long)]
    smoke: bool,
}

#[derive(Args)]
struct VerifyArgs {
    #[command(flatten)]
    common: Common,
    /// Output: text, json (one document on stdout) or github (annotations on stdout, the
    /// text report on stderr).
    #[arg(long, value_parser = Formats::VERIFY, default_value_t = Format::Text)]
    format: Format,
    /// Also run the smoke test (acp-patch.toml [smoke] must say how to start the agent).
    #[arg(long)]
    smoke: bool,
    /// An agent installed with pip/uv/pipx or npm instead of a folder: its console script,
    /// distribution or npm package name (found through PATH, --python, ./node_modules,
    /// `npm root -g`); verified where it is installed.
    #[arg(long, value_name = "NAME", conflicts_with = "path")]
    installed: Option<String>,
    /// The agent's Python interpreter (as for apply).
    #[arg(long, value_name = "PY", value_parser = interpreter_path)]
    python: Option<PathBuf>,
}

#[derive(Args)]
struct InitArgs {
    #[command(flatten)]
    common: Common,
    /// Print the pins to stdout instead of writing acp-patch.toml.
    #[arg(long)]
    dry_run: bool,
    #[arg(long, value_parser = Formats::INIT, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Args)]
struct RevertArgs {
    #[command(flatten)]
    common: Common,
    /// Print the unified diff to stdout and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Write even when the git tree has uncommitted changes.
    #[arg(long)]
    allow_dirty: bool,
    /// An agent installed with pip/uv/pipx or npm instead of a folder: its console script,
    /// distribution or npm package name (found through PATH, --python, ./node_modules,
    /// `npm root -g`); patched where it is installed, with a manifest beside it.
    #[arg(long, value_name = "NAME", conflicts_with = "path")]
    installed: Option<String>,
    /// The agent's Python interpreter: the environment --installed looks in.
    #[arg(long, value_name = "PY", value_parser = interpreter_path)]
    python: Option<PathBuf>,
    /// Summary format on stderr (text) or one JSON document on stdout (json; the diff is
    /// its `diff` field).
    #[arg(long, value_parser = Formats::REVERT, default_value_t = Format::Text)]
    format: Format,
}

/// Signals that end a run by request. The main thread blocks them for good, so they reach
/// the worker thread, which defers them while it writes files (see `apply::write_plan`).
const TERMINATING: [i32; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

fn set_mask(how: i32) {
    // SAFETY: sigset manipulation and pthread_sigmask on the calling thread.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in TERMINATING {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(how, &set, std::ptr::null_mut());
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    set_mask(libc::SIG_BLOCK);
    // a big stack: parsers recurse, and a hostile file may nest deep
    let worker = std::thread::Builder::new()
        .name("acp-patch".into())
        .stack_size(16 << 20)
        .spawn(move || {
            set_mask(libc::SIG_UNBLOCK);
            run(&cli)
        })
        .expect("spawn the worker thread");
    ExitCode::from(worker.join().unwrap_or(101))
}

fn run(cli: &Cli) -> u8 {
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut err = io::stderr();
    let mut streams = Streams {
        out: &mut out,
        err: &mut err,
    };
    let result = match &cli.command {
        Command::Apply(args) => run_apply(args, &mut streams),
        Command::Verify(args) => run_verify(args, &mut streams),
        Command::Init(args) => run_init(args, &mut streams),
        Command::Revert(args) => run_revert(args, &mut streams),
        Command::Completions(args) => printed_only(run_completions(args, &mut streams)),
        Command::Man(args) => printed_only(run_man(args, &mut streams)),
        Command::Smoke(args) => {
            if let Err(message) = args.stdout_format() {
                usage_error(message);
            }
            acp_patch::output::smoke::run_cli(args, &mut streams)
        }
    };
    let (code, printed) = result;
    match printed.and_then(|()| streams.out.flush()) {
        Ok(()) => code,
        // the reader closed the pipe (`| head`): it has what it wanted, as ripgrep does — but
        // the exit code still states the verdict (a failing gate in a pipeline stays failing)
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => code,
        Err(e) => {
            let _ = writeln!(io::stderr(), "acp-patch: error: writing the output: {e}");
            code.max(2)
        }
    }
}

/// A command's verdict (its exit code, known before anything is printed) and how printing
/// it went: a failed write never changes the verdict into a success.
type Verdict = (u8, io::Result<()>);

/// A command whose only failure is writing its output (completions, man pages): on a write
/// error the verdict is the error's (a closed pipe ends quietly with 0).
fn printed_only(result: io::Result<u8>) -> Verdict {
    match result {
        Ok(code) => (code, Ok(())),
        Err(e) => (0, Err(e)),
    }
}

fn refuse(p: &dyn Printer, s: &mut Streams, cx: &Context, e: &Error) -> Verdict {
    (e.exit_code(), p.error(s, cx, e))
}

fn run_apply(args: &ApplyArgs, s: &mut Streams) -> Verdict {
    let printer = args.format.printer();
    let cx = Context {
        command: "apply",
        root: &args.common.path,
    };
    let opts = ApplyOptions {
        common: Options {
            python: args.python.clone(),
            ..args.common.options()
        },
        dry_run: args.dry_run,
        allow_dirty: args.allow_dirty,
        check_build: args.check_build,
    };
    if args.format == Format::Patch {
        if args.installed.is_some() {
            usage_error(
                "--format patch is for the agent's repository (a maintainer `git am`s it): run it on a clone",
            );
        }
        return run_apply_series(args, &opts, printer.as_ref(), &cx, s);
    }
    if args.smoke {
        usage_error("--smoke goes with --format patch (its figures go into the series)");
    }
    if let Some(name) = &args.installed {
        let found = match locate(name, args.python.as_deref(), s) {
            Ok(found) => found,
            Err(e) => return refuse(printer.as_ref(), s, &cx, &e),
        };
        let cx = Context {
            command: "apply",
            root: &found.root,
        };
        return match acp_patch::installed::apply(&found, &opts) {
            Ok(outcome) => (0, printer.apply(s, &outcome, args.dry_run)),
            Err(e) => refuse(printer.as_ref(), s, &cx, &e),
        };
    }
    match commands::apply(&args.common.path, &opts) {
        Ok(outcome) => (0, printer.apply(s, &outcome, args.dry_run)),
        Err(e) => refuse(printer.as_ref(), s, &cx, &e),
    }
}

/// A usage error as clap reports one (exit 2).
fn usage_error(message: &str) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ArgumentConflict, message)
        .exit()
}

/// `apply --format patch`: the summary on stderr as for text, the series on stdout.
fn run_apply_series(
    args: &ApplyArgs,
    opts: &ApplyOptions,
    printer: &dyn Printer,
    cx: &Context,
    s: &mut Streams,
) -> Verdict {
    use acp_patch::series;
    if args.smoke && args.dry_run {
        usage_error(
            "--smoke runs the patched agent, so it needs apply to write: drop --dry-run (`acp-patch revert` undoes it)",
        );
    }
    let result = if args.smoke {
        series::apply_with_smoke(&args.common.path, opts)
    } else {
        commands::apply(&args.common.path, opts).map(|o| (o, None))
    };
    let (outcome, smoke) = match result {
        Ok(r) => r,
        Err(e) => return refuse(printer, s, cx, &e),
    };
    // the smoke run on the patched tree decides, as `smoke` would exit
    let code = match smoke.as_ref().map(|c| &c.after) {
        Some(Ok(r)) if !r.passed => 1,
        Some(Err(_)) => 2,
        _ => 0,
    };
    let series = acp_patch::output::Patch {
        root: &args.common.path,
        smoke: smoke.as_ref(),
    };
    (code, series.apply(s, &outcome, false))
}

fn run_verify(args: &VerifyArgs, s: &mut Streams) -> Verdict {
    let printer = args.format.printer();
    let cx = Context {
        command: "verify",
        root: &args.common.path,
    };
    let found = match &args.installed {
        Some(name) => match locate(name, args.python.as_deref(), s) {
            Ok(found) => Some(found),
            Err(e) => return refuse(printer.as_ref(), s, &cx, &e),
        },
        None => None,
    };
    let root = found
        .as_ref()
        .map_or(args.common.path.as_path(), |f| &f.root);
    let cx = Context {
        command: "verify",
        root,
    };
    let verify_opts = Options {
        python: args.python.clone(),
        ..args.common.options()
    };
    let verified = match &found {
        Some(found) => acp_patch::installed::verify(found, &verify_opts),
        None => commands::verify(root, &verify_opts),
    };
    let outcome = match verified {
        Ok(o) => o,
        // verify's contract: 2 for usage, I/O and parse errors; 1 when a site cannot be found
        Err(e @ Error::Parse { .. }) => return (2, printer.error(s, &cx, &e)),
        Err(e) => return refuse(printer.as_ref(), s, &cx, &e),
    };
    let mut code = outcome.exit_code();
    // the smoke run with its defaults, reading [smoke] from the agent's acp-patch.toml
    let smoke: Option<SmokeResult> = args
        .smoke
        .then(|| acp_patch::smoke::run(&acp_patch::smoke::SmokeOptions::for_folder(root)));
    if let Some(r) = &smoke {
        code = code.max(acp_patch::smoke::exit_code(r));
    }
    (code, printer.verify(s, &outcome, smoke.as_ref()))
}

fn run_init(args: &InitArgs, s: &mut Streams) -> Verdict {
    let printer = args.format.printer();
    let cx = Context {
        command: "init",
        root: &args.common.path,
    };
    match acp_patch::commands::init::init(&args.common.path, &args.common.options(), args.dry_run) {
        Ok(outcome) => (0, printer.init(s, &outcome, args.dry_run)),
        Err(e) => refuse(printer.as_ref(), s, &cx, &e),
    }
}

fn run_revert(args: &RevertArgs, s: &mut Streams) -> Verdict {
    let printer = args.format.printer();
    let cx = Context {
        command: "revert",
        root: &args.common.path,
    };
    let opts = commands::RevertOptions {
        common: args.common.options(),
        dry_run: args.dry_run,
        allow_dirty: args.allow_dirty,
    };
    if let Some(name) = &args.installed {
        let found = match locate(name, args.python.as_deref(), s) {
            Ok(found) => found,
            Err(e) => return refuse(printer.as_ref(), s, &cx, &e),
        };
        let cx = Context {
            command: "revert",
            root: &found.root,
        };
        return match acp_patch::installed::revert(&found, &opts) {
            Ok(outcome) => (0, printer.revert(s, &outcome, args.dry_run)),
            Err(e) => refuse(printer.as_ref(), s, &cx, &e),
        };
    }
    match commands::revert(&args.common.path, &opts) {
        Ok(outcome) => (0, printer.revert(s, &outcome, args.dry_run)),
        Err(e) => refuse(printer.as_ref(), s, &cx, &e),
    }
}

/// `--installed NAME`: where it is, said on stderr.
fn locate(
    name: &str,
    python: Option<&std::path::Path>,
    s: &mut Streams,
) -> Result<acp_patch::installed::Installed, Error> {
    let found = acp_patch::installed::locate(name, python)?;
    if let Some(via) = &found.via {
        s.say(&format!("acp-patch: {via}"));
    }
    s.say(&format!(
        "acp-patch: {} {} ({}) installed at {}",
        found.package,
        found.version,
        match found.ecosystem {
            acp_patch::installed::Ecosystem::Python => "Python",
            acp_patch::installed::Ecosystem::Npm => "npm",
        },
        found.root.display()
    ));
    Ok(found)
}

fn run_completions(args: &CompletionsArgs, s: &mut Streams) -> io::Result<u8> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "acp-patch", &mut script);
    let mut script = String::from_utf8(script).expect("clap_complete writes UTF-8");
    if args.shell == clap_complete::Shell::Bash {
        // clap_complete 4.6 spells a hyphenated name's states two ways (clap-rs/clap#6421):
        // the loop sets `acp__patch__subcmd__apply`, the arms match
        // `acp__subcmd__patch__subcmd__apply`, so no subcommand's options would complete
        script = script.replace("acp__subcmd__patch", "acp__patch");
    }
    s.out.write_all(script.as_bytes())?;
    Ok(0)
}

fn run_man(args: &ManArgs, s: &mut Streams) -> io::Result<u8> {
    let cmd = Cli::command();
    let Some(dir) = &args.dir else {
        clap_mangen::Man::new(cmd).render(s.out)?;
        return Ok(0);
    };
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(cmd, dir)) {
        s.say(&format!(
            "acp-patch: error: writing the man pages into {}: {e}",
            dir.display()
        ));
        return Ok(2);
    }
    s.say(&format!(
        "acp-patch: man pages written to {}",
        dir.display()
    ));
    Ok(0)
}

/// `--python`: a path (it has a `/`) is taken from the current directory, whatever folder the
/// checks later run the interpreter in; a bare name is looked up on PATH then.
fn interpreter_path(value: &str) -> Result<PathBuf, String> {
    if value.contains(std::path::MAIN_SEPARATOR) || value.contains('/') {
        std::path::absolute(value).map_err(|e| format!("{value}: {e}"))
    } else {
        Ok(PathBuf::from(value))
    }
}
