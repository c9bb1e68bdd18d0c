//! The `crawlgate` binary: parses arguments, runs the command, maps the outcome to an exit code.

use clap::Parser;
use crawlgate::cli::{self, Cli, Command};
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = Cli::parse();
    // Only the proxy logs; without it (`--no-default-features --features cli`) there is no logger.
    #[cfg(feature = "proxy")]
    crawlgate::proxy::logging::init();
    let stdout = std::io::stdout();
    let outcome = match &args.command {
        Command::Check(check) => cli::run_check(
            check,
            std::io::stdin().lock(),
            stdout.lock(),
            std::io::stderr().lock(),
        ),
        Command::Lint(lint) => cli::run_lint(lint, stdout.lock()),
        Command::Audit(audit) => cli::run_audit(audit, stdout.lock()),
        #[cfg(feature = "proxy")]
        Command::Serve(serve) => cli::run_serve(serve),
        #[cfg(feature = "proxy")]
        Command::Validate(validate) => cli::run_validate(validate, stdout.lock()),
        #[cfg(feature = "proxy")]
        Command::Explain(explain) => cli::run_explain(explain, stdout.lock()),
        #[cfg(feature = "proxy")]
        Command::Ranges(ranges) => cli::run_ranges(ranges, stdout.lock()),
        #[cfg(feature = "proxy")]
        Command::Robots(robots) => cli::run_robots(robots, stdout.lock()),
    };
    match outcome {
        Ok(status) => ExitCode::from(status.code()),
        Err(error) => {
            let code = error.code();
            let _ = writeln!(
                std::io::stderr(),
                "crawlgate: {}",
                anyhow::Error::new(error)
            );
            ExitCode::from(code)
        }
    }
}
