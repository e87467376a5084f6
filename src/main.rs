//! The thin binary: arguments in, exit code out. Everything else is in the library.

use acp_patch::error::Error;
use acp_patch::ops::{self, ApplyOptions};
use acp_patch::project::Options;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "acp-patch",
    version,
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
    Smoke(acp_patch::smoke::SmokeArgs),
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
    /// Write even when the git tree has uncommitted changes.
    #[arg(long)]
    allow_dirty: bool,
    /// Summary format on stderr (text) or stdout (json).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Args)]
struct VerifyArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Also run the smoke test (acp-patch.toml [smoke] must say how to start the agent).
    #[arg(long)]
    smoke: bool,
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
    /// Summary format on stderr (text) or one JSON document on stdout (json; the diff is
    /// its `diff` field).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
}

#[derive(Parser)]
struct SmokeOnly {
    #[command(flatten)]
    args: acp_patch::smoke::SmokeArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
    /// GitHub Actions annotations (verify only; text elsewhere).
    Github,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match &cli.command {
        Command::Apply(args) => run_apply(args),
        Command::Verify(args) => run_verify(args),
        Command::Revert(args) => run_revert(args),
        Command::Smoke(args) => acp_patch::smoke::run_cli(args) as u8,
    };
    ExitCode::from(code)
}

fn fail(e: &Error, format: Format) -> u8 {
    if format == Format::Github
        && let Some(loc) = e.location()
    {
        println!(
            "::error file={},line={}::{}",
            loc.file,
            loc.line,
            e.to_string().replace('\n', "%0A")
        );
    }
    eprintln!("acp-patch: error: {e}");
    e.exit_code()
}

fn run_apply(args: &ApplyArgs) -> u8 {
    let opts = ApplyOptions {
        common: args.common.options(),
        dry_run: args.dry_run,
        allow_dirty: args.allow_dirty,
    };
    let outcome = match ops::apply(&args.common.path, &opts) {
        Ok(o) => o,
        Err(e) => return fail(&e, args.format),
    };
    if args.dry_run {
        print!("{}", outcome.diff);
    }
    if args.format == Format::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome).expect("outcome serializes")
        );
    }
    for note in &outcome.notes {
        eprintln!("note: {note}");
    }
    if outcome.nothing_to_do() {
        eprintln!("acp-patch: nothing to do: every piece is already in place");
        return 0;
    }
    let verb = if outcome.written {
        "inserted"
    } else {
        "would insert"
    };
    for p in &outcome.placed {
        eprintln!("  {}:{}  {}", p.file, p.line, p.piece);
    }
    eprintln!(
        "acp-patch: {verb} {} pieces into {} files ({} agent)",
        outcome.placed.len(),
        outcome.files.len(),
        outcome.language
    );
    0
}

fn run_verify(args: &VerifyArgs) -> u8 {
    let report = match ops::verify(&args.common.path, &args.common.options()) {
        Ok(r) => r,
        // verify's contract: 2 for usage, I/O and parse errors; 1 when a site cannot be found
        Err(e @ Error::Parse { .. }) => {
            fail(&e, args.format);
            return 2;
        }
        Err(e) => return fail(&e, args.format),
    };
    // the smoke run with its defaults, reading [smoke] from the agent's acp-patch.toml
    let smoke = args.smoke.then(|| {
        SmokeOnly::parse_from([std::ffi::OsStr::new("smoke"), args.common.path.as_os_str()]).args
    });
    let mut code = report.exit_code();
    match args.format {
        Format::Json => {
            // one JSON document on stdout: the verify report, or {verify, smoke} with --smoke
            let Some(smoke) = &smoke else {
                print!("{}", report.to_json());
                return code;
            };
            let mut doc = serde_json::json!({ "verify": serde_json::from_str::<serde_json::Value>(&report.to_json()).expect("json") });
            {
                let result = acp_patch::smoke::SmokeOptions::from_args(smoke)
                    .and_then(|o| acp_patch::smoke::run(&o));
                let (value, smoke_code) = match result {
                    Ok(r) => (
                        serde_json::to_value(&r).expect("smoke report serializes"),
                        if r.passed { 0 } else { 1 },
                    ),
                    Err(e) => (
                        serde_json::json!({ "passed": false, "error": e.to_string() }),
                        2,
                    ),
                };
                doc["smoke"] = value;
                code = code.max(smoke_code);
            }
            println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
        }
        Format::Text | Format::Github => {
            if args.format == Format::Github {
                print!("{}", report.to_github());
            }
            print!("{}", report.to_text());
            if let Some(smoke) = &smoke {
                println!();
                code = code.max(acp_patch::smoke::run_cli(smoke) as u8);
            }
        }
    }
    code
}

fn run_revert(args: &RevertArgs) -> u8 {
    let opts = ops::RevertOptions {
        common: args.common.options(),
        dry_run: args.dry_run,
        allow_dirty: args.allow_dirty,
    };
    let json = args.format == Format::Json;
    let outcome = match ops::revert(&args.common.path, &opts) {
        Ok(o) => o,
        Err(e) => {
            if json {
                let doc = serde_json::json!({ "error": e.to_string(), "location": e.location() });
                println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
            }
            return fail(&e, args.format);
        }
    };
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome).expect("outcome serializes")
        );
    } else if args.dry_run {
        print!("{}", outcome.diff);
    }
    if outcome.nothing_to_revert() {
        eprintln!("acp-patch: nothing to revert: no piece acp-patch inserts is in place");
        return 0;
    }
    for p in &outcome.removed {
        eprintln!("  {}:{}  {}", p.file, p.line, p.piece);
    }
    let verb = if outcome.written {
        "removed"
    } else {
        "would remove"
    };
    eprintln!(
        "acp-patch: {verb} {} pieces from {} files ({} deleted; {} agent)",
        outcome.removed.len(),
        outcome.files.len(),
        outcome.deleted.len(),
        outcome.language
    );
    0
}
