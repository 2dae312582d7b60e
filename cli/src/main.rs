//! `graphfleet`: command-line tools; `graphfleet compose` composes a rover-style config,
//! `graphfleet diff` classifies the changes between two schemas.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use graphfleet_composition::{compose, config::load_config};
use graphfleet_schema_diff::{Change, Severity, api_schema, diff, max_severity, render};

#[derive(Parser)]
#[command(name = "graphfleet", version, about = "graphfleet command-line tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compose subgraphs into an Apollo-format supergraph.
    Compose {
        /// Rover-style supergraph config (YAML).
        #[arg(long)]
        config: PathBuf,
        /// Write the supergraph here instead of stdout.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Classify every change from OLD to NEW as breaking, dangerous or safe.
    ///
    /// Each file is a schema, a subgraph SDL or a supergraph (compared by its API
    /// schema). Exit code: 0 when nothing at or above --fail-on changed, 1 when
    /// something did, 2 when a file cannot be read or is not valid SDL.
    Diff {
        /// The schema clients use now.
        old: PathBuf,
        /// The schema about to replace it.
        new: PathBuf,
        /// How to print the changes.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// The least severe change that fails the command.
        #[arg(long, value_enum, default_value_t = FailOn::Breaking)]
        fail_on: FailOn,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// A table, one change a row, and a count line.
    Text,
    /// A JSON array of {kind, coordinate, severity, message}.
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum FailOn {
    /// Exit 1 on a breaking change.
    Breaking,
    /// Exit 1 on a breaking or dangerous change.
    Dangerous,
    /// Exit 0 whatever changed (report only).
    Never,
}

impl FailOn {
    fn threshold(self) -> Option<Severity> {
        match self {
            Self::Breaking => Some(Severity::Breaking),
            Self::Dangerous => Some(Severity::Dangerous),
            Self::Never => None,
        }
    }
}

/// `graphfleet diff`'s exit code for input it cannot diff; clap's usage errors are 2 too.
const BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<ExitCode> {
    match Cli::parse().command {
        Command::Compose { config, output } => run_compose(&config, output.as_deref()),
        Command::Diff {
            old,
            new,
            format,
            fail_on,
        } => Ok(run_diff(&old, &new, format, fail_on)),
    }
}

/// Supergraph to stdout or `output`, hints on stderr; errors one per line on stderr, exit 1.
fn run_compose(config: &Path, output: Option<&Path>) -> Result<ExitCode> {
    let subgraphs = load_config(config)?;
    match compose(&subgraphs) {
        Ok(composed) => {
            for hint in &composed.hints {
                eprintln!("hint: {hint}");
            }
            match output {
                Some(path) => std::fs::write(path, &composed.supergraph_sdl)
                    .with_context(|| format!("writing {}", path.display()))?,
                None => print!("{}", composed.supergraph_sdl),
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(errors) => {
            for e in &errors.0 {
                eprintln!("{e}");
            }
            Ok(ExitCode::FAILURE)
        }
    }
}

/// Changes to stdout; 1 when one reaches `fail_on`, 2 (message on stderr) on bad input.
fn run_diff(old: &Path, new: &Path, format: Format, fail_on: FailOn) -> ExitCode {
    let changes = match diff_files(old, new) {
        Ok(changes) => changes,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(BAD_INPUT);
        }
    };
    match format {
        Format::Text => print!("{}", render(&changes)),
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(&changes).expect("changes serialize to JSON")
        ),
    }
    let failed = fail_on
        .threshold()
        .zip(max_severity(&changes))
        .is_some_and(|(threshold, worst)| worst >= threshold);
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn diff_files(old: &Path, new: &Path) -> Result<Vec<Change>> {
    let old = api_schema(&read(old)?, &old.display().to_string())?;
    let new = api_schema(&read(new)?, &new.display().to_string())?;
    Ok(diff(&old, &new))
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}
