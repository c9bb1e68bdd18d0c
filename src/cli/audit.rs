//! `crawlgate audit`: what crawlers did in existing access logs, replayed against a robots.txt.

use super::{read_input, CliError, ExitStatus};
use crate::audit::{
    html, input, report, robots_options, Audit, AuditError, Format, JsonFields, Progress, Role,
};
use crate::catalog::Catalog;
use crate::robots::{Robots, DEFAULT_MAX_BYTES};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Arguments of `crawlgate audit`.
#[derive(Debug, clap::Args)]
pub struct AuditArgs {
    /// The robots.txt to replay the logs against.
    #[arg(long, value_name = "FILE")]
    pub robots: PathBuf,
    /// A crawler catalog (the schema of conf/bots.yaml) instead of the embedded one.
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// The log format; `auto` decides per file by its first line (JSON when it starts with `{`).
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    pub format: FormatArg,
    /// Which JSON field holds what, as ROLE=NAME (repeatable). Roles: path, query, request
    /// (`GET /x HTTP/1.1`, used when there is no path), ua, time.
    #[arg(long = "field", value_name = "ROLE=NAME", value_parser = parse_field)]
    pub fields: Vec<(Role, String)>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write a self-contained HTML report (charts included) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Fail (exit status 2) on the first malformed line instead of skipping it.
    #[arg(long)]
    pub strict: bool,
    /// How many disallowed paths to list per crawler (the table shows at most 5).
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// The robots.txt parse limit in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_BYTES)]
    pub max_bytes: usize,
    /// Access logs: files (gzip-compressed or not), or `-` for standard input.
    #[arg(value_name = "ACCESS_LOG", required = true)]
    pub logs: Vec<PathBuf>,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Combined or JSON, by the first line of each file.
    Auto,
    /// nginx/Apache combined, common, or vhost-prefixed.
    Combined,
    /// JSON lines.
    Json,
}

fn parse_field(text: &str) -> Result<(Role, String), String> {
    let (role, name) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not ROLE=NAME"))?;
    let role = Role::from_name(role).ok_or_else(|| {
        let roles: Vec<&str> = Role::ALL.iter().map(|r| r.name()).collect();
        format!("unknown role `{role}`: use one of {}", roles.join(", "))
    })?;
    if name.is_empty() {
        return Err(format!("no field name for `{}`", role.name()));
    }
    Ok((role, name.to_owned()))
}

/// Progress on standard error, when it is a terminal: lines, megabytes, lines per second.
struct Meter {
    started: Instant,
    last: Instant,
    shown: bool,
}

impl Meter {
    const EVERY: Duration = Duration::from_millis(500);

    fn new() -> Meter {
        let now = Instant::now();
        Meter {
            started: now,
            last: now,
            shown: false,
        }
    }

    fn tick(&mut self, progress: Progress) {
        if self.last.elapsed() < Self::EVERY {
            return;
        }
        self.last = Instant::now();
        let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
        #[allow(clippy::cast_precision_loss)] // a rate for people to read
        let (megabytes, rate) = (progress.bytes as f64 / 1e6, progress.lines as f64 / seconds);
        let _ = write!(
            std::io::stderr(),
            "\r{} lines, {megabytes:.1} MB, {} lines/s   ",
            report::thousands(progress.lines),
            report::thousands(rate as u64)
        );
        self.shown = true;
    }

    fn clear(&mut self) {
        if self.shown {
            let _ = write!(std::io::stderr(), "\r{:60}\r", "");
            self.shown = false;
        }
    }
}

/// Runs `audit`: the table (or `--json`) on `out`, the page in `--html`'s file.
pub fn run_audit(args: &AuditArgs, mut out: impl Write) -> Result<ExitStatus, CliError> {
    let stdin = Path::new("-");
    if args.robots == stdin && args.logs.iter().any(|log| log == stdin) {
        return Err(CliError::Usage(
            "robots.txt and an access log cannot both be standard input".into(),
        ));
    }
    if args.format == FormatArg::Combined && !args.fields.is_empty() {
        return Err(CliError::Usage(
            "--field names JSON fields: it does not apply to --format combined".into(),
        ));
    }
    let robots = Robots::parse_with(&read_input(&args.robots)?, robots_options(args.max_bytes));
    let catalog = match &args.catalog {
        Some(path) => Catalog::from_file(path),
        None => Catalog::embedded(),
    }
    .map_err(AuditError::from)?;
    let audit = Audit::new(robots, &catalog)
        .map_err(AuditError::from)?
        .named(&args.robots.display().to_string());
    let mut fields = JsonFields::default();
    for (role, name) in &args.fields {
        fields.set(*role, name);
    }
    let format = match args.format {
        FormatArg::Auto => Format::Auto,
        FormatArg::Combined => Format::Combined,
        FormatArg::Json => Format::Json,
    };
    let mut replay = audit.replay(format, fields).strict(args.strict);
    let mut meter = std::io::stderr().is_terminal().then(Meter::new);
    let mut on_progress = |progress: Progress| {
        if let Some(meter) = &mut meter {
            meter.tick(progress);
        }
    };
    let mut outcome = Ok(());
    for log in &args.logs {
        let name = log.display().to_string();
        outcome = input::open(log)
            .map_err(|source| AuditError::Read {
                input: name.clone(),
                source,
            })
            .and_then(|mut reader| replay.read(&mut reader, &name, &mut on_progress));
        if outcome.is_err() {
            break;
        }
    }
    if let Some(meter) = &mut meter {
        meter.clear();
    }
    outcome?;
    let report = replay.finish(args.top);
    if let Some(path) = &args.html {
        std::fs::write(path, html::render(&report)).map_err(|source| AuditError::Write {
            output: path.display().to_string(),
            source,
        })?;
    }
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)
            .map_err(|e| CliError::Write(std::io::Error::other(e)))?;
        writeln!(out)?;
    } else {
        report::write_table(&report, args.top, &mut out)?;
    }
    if report.skipped > 0 {
        let _ = writeln!(
            std::io::stderr(),
            "crawlgate: skipped {} malformed line(s) (--strict makes them an error)",
            report.skipped
        );
    }
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_role_equals_name() {
        assert_eq!(
            parse_field("ua=http_user_agent"),
            Ok((Role::UserAgent, "http_user_agent".into()))
        );
        assert!(parse_field("who=x").unwrap_err().contains("path, query"));
        assert!(parse_field("path").is_err());
        assert!(parse_field("path=").is_err());
    }
}
