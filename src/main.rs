use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "acp-patch", version, about = "Give ACP agents a Thinking... card and one thought block")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Drive the agent through a real ACP turn against a scripted LLM and check what a user sees.
    Smoke(acp_patch::smoke::SmokeArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match &cli.command {
        Command::Smoke(args) => acp_patch::smoke::run_cli(args),
    };
    ExitCode::from(code as u8)
}
