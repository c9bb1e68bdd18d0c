//! The `crawlgate` binary: parses arguments, runs the command, maps the outcome to an exit code.

use clap::Parser;
use crawlgate::cli::{self, Cli, Command};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = Cli::parse();
    let stdout = std::io::stdout();
    let outcome = match &args.command {
        Command::Check(check) => cli::run_check(check, std::io::stdin().lock(), stdout.lock()),
        Command::Lint(lint) => cli::run_lint(lint, stdout.lock()),
    };
    match outcome {
        Ok(status) => ExitCode::from(status.code()),
        Err(error) => {
            let _ = writeln!(
                std::io::stderr(),
                "crawlgate: {}",
                anyhow::Error::new(error)
            );
            ExitCode::from(2)
        }
    }
}
